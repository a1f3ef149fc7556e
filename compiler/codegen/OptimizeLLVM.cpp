// Why a pipeline of tritium's own: the lowering hands LLVM one straight-line kernel per
// program body (every element of a thread's blocks unrolled, loops only where the kernel has
// them), and O3 spends most of its time on what such code never has (calls between functions,
// loops to vectorize or unroll, interprocedural facts). On the library's kernels O3 took 40-50%
// of a cold compile. The passes below run in about half of O3's time and give the same PTX
// instructions, by kind and count, on 32 of the 61 kernels compared (the library's at 512 to
// 256000 columns); the others are within 1% (ring loops rotated differently, an index kept in
// 64 bits), but for column_sum at 4096 columns (+7 of 80) and libdevice's sin and cos (+2%).
// docs/PERF.md has the comparison.
#include "compiler/codegen/OptimizeLLVM.h"

#include "compiler/support/Error.h"

#include <llvm/IR/Module.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Target/TargetMachine.h>

#include <cstdlib>
#include <cstring>

namespace tritium::codegen {

namespace {

// In order; a module pass list in LLVM's textual form (`opt -passes=...` runs the same).
const char *kLeanPipeline =
    // libdevice's tables (sin's and cos's range reduction) are never written: as constants,
    // their loads take the read-only path (ld.global.nc).
    "globalopt,"
    // libdevice's functions into the kernel (linked only when a math op needs one).
    "cgscc(inline),"
    "function("
    // Allocas (a reduction's bank counter, printf's arguments) to registers, then the
    // duplicates the lowering makes element by element (every element's address and mask).
    "sroa,early-cse<memssa>,instcombine<no-verify-fixpoint>,simplifycfg,"
    // Address arithmetic in one order, so that GVN finds the shared parts.
    "reassociate,"
    // Ring loops: invariant loads and addresses out, the exit test at the bottom. A loop of a
    // few constant iterations is unrolled whole, as O3 does (the library's have none).
    "loop-mssa(licm,loop-rotate<header-duplication>,licm<allowspeculation>),"
    "loop(indvars,loop-unroll-full),"
    "gvn,sccp,instcombine<no-verify-fixpoint>,correlated-propagation,adce,"
    // Small loop bodies of a dynamic trip count unrolled by NVPTX's factor with a remainder
    // loop, as O3 does: more loads in flight per iteration. Kernels whose bodies are whole
    // blocks (the library's) are left as they are.
    "loop-unroll<O3>,"
    // Alignment known from the addresses lets the back end's vectorizer pair shared-memory
    // loads (ld.shared.v2).
    "infer-alignment,simplifycfg),"
    // libdevice functions left with no caller.
    "globaldce";

} // namespace

const char *llvmPipelineName(LLVMPipeline pipeline) {
  return pipeline == LLVMPipeline::O3 ? "O3" : "lean";
}

LLVMPipeline llvmPipelineFromEnvironment() {
  static const LLVMPipeline chosen = [] {
    const char *v = std::getenv("TRITIUM_LLVM_PIPELINE");
    if (!v || !*v || std::strcmp(v, "lean") == 0)
      return LLVMPipeline::Lean;
    if (std::strcmp(v, "O3") == 0)
      return LLVMPipeline::O3;
    throw UserError(std::string("TRITIUM_LLVM_PIPELINE='") + v +
                    "': expected 'lean' (the default) or 'O3'");
  }();
  return chosen;
}

void optimizeLLVM(llvm::Module &mod, llvm::TargetMachine &tm, LLVMPipeline pipeline) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm;
  if (pipeline == LLVMPipeline::O3) {
    mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  } else {
    // What NVPTX adds at the start of any pipeline: libdevice's __nvvm_reflect answered for
    // this architecture, and the ranges of the special registers (tid.x < 1024, ...).
    pb.invokePipelineStartEPCallbacks(mpm, llvm::OptimizationLevel::O2);
    if (llvm::Error e = pb.parsePassPipeline(mpm, kLeanPipeline))
      internalError("tritium's LLVM pipeline does not parse: " + llvm::toString(std::move(e)));
  }
  mpm.run(mod, mam);
}

} // namespace tritium::codegen
