// Why a pipeline of tritium's own: the lowering hands LLVM one straight-line kernel per
// program body (every element of a thread's blocks unrolled, loops only where the kernel has
// them), and O3 spends most of its time on what such code never has (calls between functions,
// loops to vectorize, interprocedural facts). On the library's kernels O3 took 40-55% of a cold
// compile. The passes below take about half of O3's time there and give the same PTX
// instructions, by kind and count, on 36 of the 61 library kernels compared (512 to 256000
// columns), the others within 1% but libdevice's sin and cos (+2%); on 300 random programs
// (tests/RandomPrograms.h) the same instructions in all, summed, as O3's, 31 programs with up
// to 8 more. docs/notes/compile-time.md, "tritium's LLVM pipeline", has the comparisons;
// TRITIUM_LLVM_PIPELINE=O3 runs O3 instead.
#include "compiler/codegen/OptimizeLLVM.h"

#include "compiler/support/Error.h"

#include <llvm/IR/Module.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Target/TargetMachine.h>

#include <cstdlib>

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
    // Without partial redundancy elimination: it would merge an address computed on both sides
    // of a branch (a reduction's shared-memory slot, written under a condition and read after
    // the barrier) into a phi, which hides the address's alignment, and the back end then loads
    // the slots one by one instead of as one vector.
    "gvn<no-pre>,sccp,instcombine<no-verify-fixpoint>,correlated-propagation,adce,"
    // Small loop bodies of a dynamic trip count unrolled by NVPTX's factor with a remainder
    // loop, as O3 does: more loads in flight per iteration. Kernels whose bodies are whole
    // blocks (the library's) are left as they are. InstCombine then folds what unrolling and
    // correlated propagation left (a conversion of a value known to fit 16 bits, say).
    "loop-unroll<O3>,instcombine<no-verify-fixpoint>,"
    // Alignment known from the addresses lets the back end's vectorizer pair shared-memory
    // loads (ld.shared.v2, v4).
    "infer-alignment,"
    // Both arms of an if that compute the same thing with different operands compute it once
    // after a select (O3's last SimplifyCFG does the same).
    "simplifycfg<hoist-common-insts;sink-common-insts>),"
    // libdevice functions left with no caller.
    "globaldce";

} // namespace

const char *llvmPipelineName(LLVMPipeline pipeline) {
  return pipeline == LLVMPipeline::O3 ? "O3" : "lean";
}

std::optional<LLVMPipeline> parseLLVMPipeline(std::string_view name) {
  for (LLVMPipeline p : {LLVMPipeline::Lean, LLVMPipeline::O3})
    if (name == llvmPipelineName(p))
      return p;
  return std::nullopt;
}

LLVMPipeline llvmPipelineFromEnvironment() {
  static const LLVMPipeline chosen = [] {
    const char *v = std::getenv("TRITIUM_LLVM_PIPELINE");
    if (!v || !*v)
      return LLVMPipeline::Lean;
    if (std::optional<LLVMPipeline> p = parseLLVMPipeline(v))
      return *p;
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
