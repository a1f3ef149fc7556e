// The LLVM IR optimization between the lowering and the NVPTX back end: tritium's own short
// pipeline by default, or LLVM's O3 (TRITIUM_LLVM_PIPELINE=O3) to compare against.
#pragma once

#include <optional>
#include <string_view>

// No LLVM header: CompileOptions (compiler/Pipeline.h) names the pipeline, and public headers
// must not pull in LLVM.
namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace tritium::codegen {

enum class LLVMPipeline {
  Lean, // the passes the lowering's IR needs (OptimizeLLVM.cpp says which and why)
  O3,   // LLVM's default O3 module pipeline, as tritium ran it before 2026-11-27
};

// "lean" or "O3": what TRITIUM_LLVM_PIPELINE takes, and what the cache key records.
const char *llvmPipelineName(LLVMPipeline pipeline);
// The pipeline of that name, or none for any other text (TRITIUM_LLVM_PIPELINE and
// tritium-opt's --llvm-pipeline both take these names).
std::optional<LLVMPipeline> parseLLVMPipeline(std::string_view name);
// TRITIUM_LLVM_PIPELINE, read once per process; Lean when unset. A UserError names the
// variable and the accepted values when it holds anything else.
LLVMPipeline llvmPipelineFromEnvironment();

// Runs `pipeline` on `mod`, whose triple and data layout are `tm`'s.
void optimizeLLVM(llvm::Module &mod, llvm::TargetMachine &tm, LLVMPipeline pipeline);

} // namespace tritium::codegen
