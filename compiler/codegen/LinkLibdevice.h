// Links the libdevice functions (__nv_sinf, ...) a module calls into it (LinkLibdevice.cpp).
#pragma once

#include <llvm/IR/Module.h>

namespace tritium::codegen {

// Call after the target triple and data layout are set and before optimisation.
void linkLibdevice(llvm::Module &mod);

} // namespace tritium::codegen
