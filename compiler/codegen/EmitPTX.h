// The IR optimization and the NVPTX backend: LLVM IR in, optimized IR text and PTX out.
#pragma once

#include "compiler/codegen/OptimizeLLVM.h"

#include <llvm/IR/Module.h>

#include <string>

namespace tritium::codegen {

struct TargetOptions {
  std::string arch = "sm_90"; // any sm_XX the NVPTX backend knows
  int ptxVersion = 81;        // PTX ISA version x 10 (81 = 8.1)
  LLVMPipeline pipeline = LLVMPipeline::Lean;
  // NVPTX's straight-line strength reduction, a pass of the back end's own pipeline; false
  // leaves it out (CompileOptions::strengthReduction says when that pays).
  bool strengthReduction = true;
};

// Sets the module's triple and data layout, optimizes it, and returns the PTX. `optimizedIR`
// receives the optimized IR (the `.ll` stage).
std::string emitPTX(llvm::Module &mod, const TargetOptions &target, std::string *optimizedIR);

} // namespace tritium::codegen
