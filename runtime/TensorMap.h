// Encoding a kernel's CUtensorMaps at launch (cuTensorMapEncodeTiled) from the recipes the
// compiler recorded (ir::TensorMapRecipe) and the launch's arguments.
#pragma once

#include "compiler/ir/TensorMap.h"

#include <cuda.h>

#include <functional>
#include <string>

namespace tritium::rt {

// Why the map cannot be encoded (naming the argument at fault through `argName`), or "" once
// `out` holds it. `arg(i)` is the launch's i-th argument: a pointer's address or an integer.
std::string encodeTensorMap(const ir::TensorMapRecipe &recipe,
                            const std::function<int64_t(int)> &arg,
                            const std::function<std::string(int)> &argName, CUtensorMap *out);

} // namespace tritium::rt
