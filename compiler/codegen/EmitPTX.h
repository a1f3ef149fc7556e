// LLVM's O3 pipeline and the NVPTX backend: LLVM IR in, optimized IR text and PTX out.
#pragma once

#include <llvm/IR/Module.h>

#include <string>

namespace tritium::codegen {

struct TargetOptions {
  std::string arch = "sm_90"; // any sm_XX the NVPTX backend knows
  int ptxVersion = 81;        // PTX ISA version x 10 (81 = 8.1)
};

// Sets the module's triple and data layout, runs O3, and returns the PTX. `optimizedIR`
// receives the IR after O3 (the `.ll` stage).
std::string emitPTX(llvm::Module &mod, const TargetOptions &target, std::string *optimizedIR);

} // namespace tritium::codegen
