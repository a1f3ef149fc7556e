// Encoding a kernel's CUtensorMaps at launch (cuTensorMapEncodeTiled) from the recipes the
// compiler recorded (ir::TensorMapRecipe) and the launch's arguments.
#pragma once

#include "compiler/ir/TensorMap.h"

#include <cuda.h>

#include <functional>
#include <optional>
#include <string>

namespace tritium::rt {

// The TMA element type of a tile of `k` elements and the driver's name for it (which the
// ahead-of-time launchers write out), or nullopt where TMA has none; 8-bit kinds move as bytes.
struct TensorMapType {
  CUtensorMapDataType type;
  const char *name; // "CU_TENSOR_MAP_DATA_TYPE_FLOAT32"
};
std::optional<TensorMapType> tensorMapType(ir::ScalarKind k);

// Why the map cannot be encoded (naming the argument at fault through `argName`), or "" once
// `out` holds it. `arg(i)` is the launch's i-th argument: a pointer's address or an integer.
std::string encodeTensorMap(const ir::TensorMapRecipe &recipe,
                            const std::function<int64_t(int)> &arg,
                            const std::function<std::string(int)> &argName, CUtensorMap *out);

} // namespace tritium::rt
