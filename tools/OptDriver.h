// What tritium-opt does to one kernel's text, apart from reading flags and files: parse, verify,
// run the named passes (verifying after each) or the pipeline up to a stage, and print. Shared
// with the fuzz target (tests/fuzz), so that the fuzzer exercises exactly the tool's path.
#pragma once

#include "compiler/Pipeline.h"
#include "compiler/gpu/GpuPasses.h"
#include "compiler/ir/Parser.h"
#include "compiler/ir/Printer.h"
#include "compiler/ir/Verifier.h"
#include "compiler/transforms/Passes.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tritium::tools {

struct OptPass {
  bool needsLayouts; // runs on GIR only: 'layouts' must have run before it
  std::function<void(ir::Function &, const CompileOptions &)> run;
};

inline const std::map<std::string, OptPass> &optPasses() {
  static const std::map<std::string, OptPass> table = {
      {"cse",
       {false, [](ir::Function &f, const CompileOptions &) { eliminateCommonSubexpressions(f); }}},
      {"dce", {false, [](ir::Function &f, const CompileOptions &) { eliminateDeadCode(f); }}},
      {"accumulator-resets",
       {false, [](ir::Function &f, const CompileOptions &) { foldAccumulatorResets(f); }}},
      {"dot-instructions",
       {false,
        [](ir::Function &f, const CompileOptions &o) {
          chooseDotInstructions(f, o.arch, o.numWarps);
        }}},
      {"byte-fragment-columns",
       {false, [](ir::Function &f, const CompileOptions &) { chooseByteFragmentColumns(f); }}},
      {"layouts",
       {false, [](ir::Function &f, const CompileOptions &o) { assignLayouts(f, o.numWarps); }}},
      {"shared",
       {false,
        [](ir::Function &f, const CompileOptions &o) {
          allocateSharedMemory(f, o.numWarps,
                               o.maxSharedBytes ? o.maxSharedBytes : maxSharedBytesFor(o.arch));
        }}},
      {"hoist", {true, [](ir::Function &f, const CompileOptions &) { hoistLoopInvariants(f); }}},
      {"vectorize", {true, [](ir::Function &f, const CompileOptions &) { chooseVectorWidths(f); }}},
      {"runs", {true, [](ir::Function &f, const CompileOptions &) { markConstantRuns(f); }}},
      {"pipeline",
       {true,
        [](ir::Function &f, const CompileOptions &o) {
          pipelineLoads(f, o.numWarps,
                        o.maxSharedBytes ? o.maxSharedBytes : maxSharedBytesFor(o.arch),
                        bulkCopiesAllowed(o));
        }}},
      {"dot-rings", {true, [](ir::Function &f, const CompileOptions &) { feedDotsFromRings(f); }}},
  };
  return table;
}

// Passes that read layouts must not run on values without them: a user mistake, not a crash.
inline bool hasLayouts(const ir::Function &fn) {
  bool all = true;
  ir::walk(const_cast<ir::Block &>(fn.body()), [&](ir::Op &op) {
    for (auto &r : op.results())
      all = all && (!r->type().isBlock() || r->layout());
  });
  return all;
}

inline bool hasBlocks(const ir::Function &fn) {
  bool any = false;
  for (auto &a : fn.body().arguments())
    any = any || a->type().isBlock();
  ir::walk(const_cast<ir::Block &>(fn.body()), [&](ir::Op &op) {
    for (auto &r : op.results())
      any = any || r->type().isBlock();
  });
  return any;
}

struct OptRequest {
  std::vector<std::string> passes; // names in optPasses(), run in order
  std::optional<Stage> emit;       // then the pipeline up to this stage
  std::optional<int> numWarps;     // else the kernel's num_warps attribute, else 4
  CompileOptions options;          // arch, PTX version, bulk copies
  bool locations = true;
};

// The printed result. Mistakes in the text are UserErrors; IR that does not verify is one too.
inline std::string runOpt(const std::string &text, const std::string &name, OptRequest req) {
  CompileOptions &options = req.options;
  std::unique_ptr<ir::Function> fn = ir::parseTIR(text, name);
  bool isGir = hasLayouts(*fn);
  std::optional<int64_t> written = fn->intAttr("num_warps");
  options.numWarps = req.numWarps.value_or(int(written.value_or(4)));
  options.clusterSize = int(fn->intAttr("cluster_size").value_or(1));
  options.numStages = int(fn->intAttr("num_stages").value_or(1));
  if (options.numWarps < 1 || options.numWarps > 32 || (options.numWarps & (options.numWarps - 1)))
    throw UserError("num_warps must be a power of two from 1 to 32, got " +
                    std::to_string(options.numWarps));
  // GIR's layouts place blocks on a number of warps: the one it is compiled for.
  if (isGir && written && *written != options.numWarps)
    throw UserError(name + " has layouts for num_warps = " + std::to_string(*written) +
                    ", not " + std::to_string(options.numWarps));
  if (isGir && !written && hasBlocks(*fn))
    fn->setAttr("num_warps", int64_t(options.numWarps));
  try {
    ir::verify(*fn, "parsing", {.requireLayouts = false});
  } catch (const InternalError &e) {
    throw UserError(name + " does not verify: " + std::string(e.what()));
  }
  for (const std::string &p : req.passes) {
    const OptPass &pass = optPasses().at(p);
    if (pass.needsLayouts && !isGir)
      throw UserError("pass '" + p + "' needs layouts: run 'layouts' before it");
    pass.run(*fn, options);
    isGir = isGir || p == "layouts";
    ir::verify(*fn, "pass '" + p + "'", {.requireLayouts = isGir});
  }
  if (!req.emit)
    return ir::print(*fn, {.locations = req.locations});
  optimizeTIR(*fn);
  return compileTIR(*fn, options, *req.emit, {.locations = req.locations}).text(*req.emit);
}

} // namespace tritium::tools
