// The pipeline driver: runs passes in order, verifies between them, keeps and dumps each stage.
#include "compiler/ir/TensorMap.h"
#include "compiler/Pipeline.h"

#include "compiler/Targets.h"
#include "compiler/codegen/EmitPTX.h"
#include "compiler/codegen/Lowering.h"
#include "compiler/gpu/GpuPasses.h"
#include "compiler/ir/Parser.h"
#include "compiler/ir/Printer.h"
#include "compiler/ir/Verifier.h"
#include "compiler/support/Log.h"
#include "compiler/transforms/Passes.h"

#include <llvm/IR/LLVMContext.h>

#include <bit>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace tritium {

const char *stageName(Stage s) {
  switch (s) {
  case Stage::TIR: return "tir";
  case Stage::GIR: return "gir";
  case Stage::LLVM: return "llvm";
  case Stage::PTX: return "ptx";
  }
  return "?";
}

std::optional<Stage> parseStage(const std::string &name) {
  for (Stage s : {Stage::TIR, Stage::GIR, Stage::LLVM, Stage::PTX})
    if (name == stageName(s))
      return s;
  return std::nullopt;
}

namespace {

// $TRITIUM_DUMP_DIR, or null when it is unset or empty.
const char *dumpDir() {
  const char *dir = std::getenv("TRITIUM_DUMP_DIR");
  return dir && *dir ? dir : nullptr;
}

// Writes a stage to $TRITIUM_DUMP_DIR/<kernel>.<ext> when the variable is set.
void dump(const std::string &kernel, const char *ext, const std::string &text) {
  const char *dir = dumpDir();
  if (!dir)
    return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::filesystem::path path = std::filesystem::path(dir) / (kernel + "." + ext);
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out)
    log().warn("could not write dump {}", path.string());
  else
    log().debug("dumped {}", path.string());
}

class StageTimer {
public:
  explicit StageTimer(const char *name) : name_(name), start_(Clock::now()) {}
  ~StageTimer() {
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start_);
    log().debug("stage {}: {} us", name_, us.count());
  }

private:
  using Clock = std::chrono::steady_clock;
  const char *name_;
  Clock::time_point start_;
};

// The first `for` nested deeper than kMaxLoopNesting, if any. LLVM's loop passes (LoopSimplify,
// LCSSA, the exit-block queries) visit every block of a loop for each loop around it, so they take
// time quadratic in the depth (docs/LIMITS.md): the text parser and the DSL share one limit.
const ir::Op *tooDeepLoop(const ir::Block &block, int depth = 0) {
  for (const auto &op : block.ops())
    if (op->body()) {
      if (depth + 1 > ir::kMaxLoopNesting)
        return op.get();
      if (const ir::Op *deeper = tooDeepLoop(*op->body(), depth + 1))
        return deeper;
    }
  return nullptr;
}

// Whether the kernel calls griddep_wait on an architecture that has it (sm_90 and later), so
// that its launch may overlap the kernel before it (LowerGridDependency.cpp drops the wait below).
bool waitsOnPriorKernel(const ir::Function &fn, const std::string &arch) {
  return ir::findFirst(fn.body(), ir::OpKind::GridDepWait) && smNumber(arch) >= 90;
}

} // namespace

int64_t maxSharedBytesFor(const std::string &arch) {
  int sm = smNumber(arch);
  if (sm >= 90)
    return 232448;
  if (sm == 80 || sm == 87)
    return 166912;
  if (sm >= 86)
    return 101376;
  return 49152;
}

bool bulkCopiesAllowed(const CompileOptions &options) {
  // cp.async.bulk and the async-proxy fences are sm_90 instructions of PTX ISA 8.0.
  return options.bulkCopies && options.ptxVersion >= 80 && smNumber(options.arch) >= 90;
}

void optimizeTIR(ir::Function &fn) {
  StageTimer timer("tir");
  ir::verify(fn, "tracing");
  eliminateCommonSubexpressions(fn);
  foldAccumulatorResets(fn);
  eliminateDeadCode(fn);
  ir::verify(fn, "TIR simplification");
}

Artifacts compileTIR(ir::Function &fn, const CompileOptions &options, Stage last,
                     const ir::PrintOptions &print) {
  if (std::string bad = checkArch(options.arch); !bad.empty())
    throw UserError(bad);
  if (std::string bad = checkPtxVersion(options.ptxVersion, options.arch); !bad.empty())
    throw UserError(bad);
  if (options.numWarps < 1 || options.numWarps > 32 ||
      !std::has_single_bit(unsigned(options.numWarps)))
    throw UserError("num_warps must be a power of two from 1 to 32, got " +
                    std::to_string(options.numWarps));
  int64_t traced = fn.intAttr("cluster_size").value_or(1);
  // 8 is the portable limit; Hopper also runs 16 once the kernel opts in (CompiledKernel::load).
  if (options.clusterSize < 1 || options.clusterSize > 16)
    throw UserError("cluster size must be from 1 to 16 (8 is the portable limit of "
                    "thread-block clusters, 16 the limit on Hopper), got " +
                    std::to_string(options.clusterSize));
  if (options.clusterSize != traced)
    throw UserError("kernel '" + fn.name() + "' was traced for cluster size " +
                    std::to_string(traced) + " but is compiled for " +
                    std::to_string(options.clusterSize));
  if (options.clusterSize > 1 && smNumber(options.arch) < 90)
    throw UserError("thread-block clusters (cluster size " + std::to_string(options.clusterSize) +
                    ") need sm_90 or later, not " + options.arch);
  int64_t programs = fn.intAttr("programs_per_cta").value_or(1);
  if (options.programsPerCTA != programs)
    throw UserError("kernel '" + fn.name() + "' was traced for " + std::to_string(programs) +
                    " programs per CTA but is compiled for " +
                    std::to_string(options.programsPerCTA));
  if (programs < 1 || programs > 32)
    userError("kernel '" + fn.name() + "': programsPerCTA must be from 1 to 32, got " +
                  std::to_string(programs),
              fn.loc());
  if (programs > 1 && (options.numWarps != 1 || options.clusterSize != 1))
    userError("kernel '" + fn.name() + "': " + std::to_string(programs) +
                  " programs per CTA need warp-sized programs (num_warps 1, no cluster), not "
                  "num_warps " + std::to_string(options.numWarps) + " and cluster size " +
                  std::to_string(options.clusterSize),
              fn.loc());
  // Where the kernel calls grid_sync: the runtime then launches it cooperatively.
  const ir::Op *gridSync = ir::findFirst(fn.body(), ir::OpKind::GridSync);
  // Warp-sized programs share a CTA, and the grid-wide barrier counts CTAs: a CTA whose last
  // programs lie past the grid would never arrive.
  if (gridSync && programs > 1)
    userError("kernel '" + fn.name() +
                  "' calls grid_sync, which needs one program per CTA, "
                  "not " +
                  std::to_string(programs),
              gridSync->loc());
  if (const ir::Op *loop = tooDeepLoop(fn.body()))
    userError("kernel '" + fn.name() + "': loops nest more than " +
                  std::to_string(ir::kMaxLoopNesting) + " deep",
              loop->loc());
  Artifacts out;
  out.syncsGrid = gridSync != nullptr;
  out.tir = ir::print(fn, print);
  dump(fn.name(), "tir", out.tir);
  if (last == Stage::TIR)
    return out;

  {
    StageTimer timer("gir");
    chooseDotInstructions(fn, options.arch, options.numWarps);
    chooseByteFragmentColumns(fn);
    chooseTensorStores(fn, bulkCopiesAllowed(options));
    assignLayouts(fn, options.numWarps);
    keepDotOperandsInRegisters(fn, options.numWarps);
    allocateSharedMemory(fn, options.numWarps,
                         options.maxSharedBytes ? options.maxSharedBytes
                                                : maxSharedBytesFor(options.arch));
    hoistLoopInvariants(fn);
    chooseVectorWidths(fn);
    markConstantRuns(fn);
    pipelineLoads(fn, options.numWarps,
                  options.maxSharedBytes ? options.maxSharedBytes : maxSharedBytesFor(options.arch),
                  bulkCopiesAllowed(options));
    feedDotsFromRings(fn);
    chooseTensorMaps(fn, bulkCopiesAllowed(options),
                     options.maxSharedBytes ? options.maxSharedBytes
                                            : maxSharedBytesFor(options.arch));
    specializeWarps(fn, options.arch, options.numWarps,
                    options.maxSharedBytes ? options.maxSharedBytes
                                           : maxSharedBytesFor(options.arch));
    chooseMulticastCopies(fn);
    ir::verify(fn, "layout assignment", {.requireLayouts = true});
    // The rings and the staging added for operands no ring brought in come after
    // allocateSharedMemory's own check: the whole must fit too.
    checkSharedMemoryFits(fn, options.maxSharedBytes ? options.maxSharedBytes
                                                     : maxSharedBytesFor(options.arch));
    out.gir = ir::print(fn, print);
    out.sharedBytes = fn.intAttr("shared_bytes").value_or(0);
    out.waitsOnPriorKernel = waitsOnPriorKernel(fn, options.arch);
    out.producerWarps = int(fn.intAttr("producer_warps").value_or(0));
    out.computeGroups = int(fn.intAttr("compute_groups").value_or(1));
    out.tensorMaps = ir::printTensorMaps(ir::tensorMapsOf(fn));
    dump(fn.name(), "gir", out.gir);
    // Programs that share a CTA would share its shared memory and barriers too. With one
    // warp per program only a cp.async ring uses shared memory: point at its loop.
    if (programs > 1 && out.sharedBytes > 0) {
      SourceLoc where = fn.loc();
      ir::walk(fn.body(), [&](ir::Op &op) {
        if (op.hasAttr("pipeline_stages"))
          where = op.loc();
      });
      userError("kernel '" + fn.name() + "' needs " + std::to_string(out.sharedBytes) +
                    " bytes of shared memory for the cp.async ring of this loop, which " +
                    std::to_string(programs) + " programs per CTA cannot share: use 1 "
                    "program per CTA or num_stages 1",
                where);
    }
  }
  if (last == Stage::GIR)
    return out;

  StageTimer timer("llvm+ptx");
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> mod =
      codegen::lowerToLLVM(fn, ctx, options.numWarps, options.ptxVersion, smNumber(options.arch));
  if (dumpDir()) { // the lowering's own LLVM IR: what the optimizer was given
    std::string lowered;
    llvm::raw_string_ostream os(lowered);
    mod->print(os, nullptr);
    dump(fn.name(), "lowered.ll", lowered);
  }
  codegen::TargetOptions target{options.arch, options.ptxVersion, options.llvmPipeline,
                                options.strengthReduction};
  std::string ptx = codegen::emitPTX(*mod, target, &out.llvm);
  dump(fn.name(), "ll", out.llvm);
  if (last == Stage::LLVM)
    return out;
  out.ptx = std::move(ptx);
  dump(fn.name(), "ptx", out.ptx);
  return out;
}

} // namespace tritium
