// tritium-opt: runs tritium's passes on TIR/GIR text, as mlir-opt does. Reads a kernel from a
// file or standard input, verifies it, runs the named passes in order (verifying after each) or
// the pipeline up to a stage, and prints the result: the tool behind the lit tests of each pass.
#include "compiler/Pipeline.h"
#include "compiler/gpu/GpuPasses.h"
#include "compiler/ir/Parser.h"
#include "compiler/ir/Printer.h"
#include "compiler/ir/Verifier.h"
#include "compiler/transforms/Passes.h"
#include "tools/CommandLine.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using namespace tritium;

namespace {

const char *kUsage = R"(usage: tritium-opt [options] [FILE]

Reads a TIR or GIR kernel (tritiumc --emit=tir/gir prints one) from FILE, or standard input when
FILE is '-' or missing, verifies it, transforms it and prints it.

options:
  --pass=LIST          run passes in order, comma separated, verifying after each:
                         cse        common subexpression elimination (TIR)
                         dce        dead code elimination (TIR)
                         layouts    blocked layouts on every block value (TIR -> GIR)
                         shared     shared-memory slots for cross-warp reductions (GIR)
                         vectorize  vector widths of loads and stores (GIR, needs layouts)
                         runs       constant runs of elementwise values, computed once per
                                    run (GIR, needs layouts)
                         pipeline   software pipelining plan of loops with num_stages >= 2:
                                    bulk copies (TMA) or cp.async per thread (GIR)
  --emit=STAGE         then run the pipeline: tir (verify, cse, dce) | gir | llvm | ptx
  --num-warps=N        warps per program for the GPU passes (default: the kernel's num_warps
                       attribute, else 4)
  --arch=sm_XX         target architecture (default sm_90); bulk copies need sm_90
  --no-bulk-copies     pipeline with cp.async per thread even where a bulk copy would do
  --ptx-version=N      PTX ISA version x 10 (default 81)
  --no-locations       print without loc(...)
  -o FILE              write to FILE instead of standard output
  --help               show this help
)";

[[noreturn]] void usageError(const std::string &msg) { tools::usageError("tritium-opt", msg); }

int64_t parseInt(const std::string &flag, const std::string &v) {
  return tools::parseInt("tritium-opt", flag, v);
}

std::vector<std::string> splitList(const std::string &list) {
  std::vector<std::string> out;
  std::stringstream ss(list);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty())
      out.push_back(item);
  return out;
}

struct Pass {
  bool gir; // runs on GIR: verify with layouts afterwards
  std::function<void(ir::Function &, const CompileOptions &)> run;
};

const std::map<std::string, Pass> &passes() {
  static const std::map<std::string, Pass> table = {
      {"cse",
       {false, [](ir::Function &f, const CompileOptions &) { eliminateCommonSubexpressions(f); }}},
      {"dce", {false, [](ir::Function &f, const CompileOptions &) { eliminateDeadCode(f); }}},
      {"layouts",
       {true, [](ir::Function &f, const CompileOptions &o) { assignLayouts(f, o.numWarps); }}},
      {"shared",
       {true,
        [](ir::Function &f, const CompileOptions &o) { allocateSharedMemory(f, o.numWarps); }}},
      {"vectorize", {true, [](ir::Function &f, const CompileOptions &) { chooseVectorWidths(f); }}},
      {"runs", {true, [](ir::Function &f, const CompileOptions &) { markConstantRuns(f); }}},
      {"pipeline",
       {true,
        [](ir::Function &f, const CompileOptions &o) {
          pipelineLoads(f, o.numWarps,
                        o.maxSharedBytes ? o.maxSharedBytes : maxSharedBytesFor(o.arch),
                        bulkCopiesAllowed(o));
        }}},
  };
  return table;
}

// Passes that read layouts must not run on values without them: a user mistake, not a crash.
bool hasLayouts(const ir::Function &fn) {
  bool all = true;
  ir::walk(const_cast<ir::Block &>(fn.body()), [&](ir::Op &op) {
    for (auto &r : op.results())
      all = all && (!r->type().isBlock() || r->layout());
  });
  return all;
}

std::string readInput(const std::string &file) {
  if (file.empty() || file == "-")
    return std::string(std::istreambuf_iterator<char>(std::cin), {});
  std::ifstream in(file, std::ios::binary);
  if (!in)
    usageError("cannot read '" + file + "'");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

} // namespace

int main(int argc, char **argv) {
  std::string input, output, emit;
  std::vector<std::string> passList;
  std::optional<int> numWarps;
  CompileOptions options;
  bool locations = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const std::string &flag) -> std::optional<std::string> {
      if (a.rfind(flag + "=", 0) == 0)
        return a.substr(flag.size() + 1);
      return std::nullopt;
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a == "-o") {
      if (i + 1 >= argc)
        usageError("-o needs a file name");
      output = argv[++i];
    } else if (a == "--no-locations") {
      locations = false;
    } else if (a == "--no-bulk-copies") {
      options.bulkCopies = false;
    } else if (auto v = value("--pass")) {
      for (const std::string &p : splitList(*v)) {
        if (!passes().count(p))
          usageError("unknown pass '" + p +
                     "' (passes: cse, dce, layouts, shared, vectorize, "
                     "runs, pipeline)");
        passList.push_back(p);
      }
    } else if (auto v = value("--emit")) {
      emit = *v;
      if (!parseStage(emit))
        usageError("--emit must be tir, gir, llvm or ptx, got '" + emit + "'");
    } else if (auto v = value("--num-warps")) {
      numWarps = tools::parseInt32("tritium-opt", "--num-warps", *v);
    } else if (auto v = value("--arch")) {
      options.arch = *v;
    } else if (auto v = value("--ptx-version")) {
      options.ptxVersion = tools::parseInt32("tritium-opt", "--ptx-version", *v);
    } else if (a.rfind("--", 0) == 0) {
      usageError("unknown option '" + a.substr(0, a.find('=')) + "'");
    } else if (input.empty()) {
      input = a;
    } else {
      usageError("more than one input file ('" + input + "' and '" + a + "')");
    }
  }

  std::string name = input.empty() || input == "-" ? "<stdin>" : input;
  std::string text = readInput(input);
  try {
    std::unique_ptr<ir::Function> fn = ir::parseTIR(text, name);
    bool isGir = hasLayouts(*fn);
    try {
      ir::verify(*fn, "parsing", {.requireLayouts = false});
    } catch (const InternalError &e) {
      throw UserError(name + " does not verify: " + std::string(e.what()));
    }
    options.numWarps = numWarps.value_or(int(fn->intAttr("num_warps").value_or(4)));
    options.clusterSize = int(fn->intAttr("cluster_size").value_or(1));
    options.numStages = int(fn->intAttr("num_stages").value_or(1));
    if (options.numWarps < 1 || options.numWarps > 32 ||
        (options.numWarps & (options.numWarps - 1)))
      throw UserError("num_warps must be a power of two from 1 to 32, got " +
                      std::to_string(options.numWarps));
    for (const std::string &p : passList) {
      const Pass &pass = passes().at(p);
      if ((p == "vectorize" || p == "runs" || p == "pipeline") && !isGir)
        throw UserError("pass '" + p + "' needs layouts: run 'layouts' before it");
      pass.run(*fn, options);
      isGir = isGir || p == "layouts";
      ir::verify(*fn, "pass '" + p + "'", {.requireLayouts = isGir});
    }
    std::string result;
    if (emit.empty()) {
      result = ir::print(*fn, {.locations = locations});
    } else {
      optimizeTIR(*fn);
      Stage last = *parseStage(emit); // checked with the options
      result = compileTIR(*fn, options, last, {.locations = locations}).text(last);
    }
    if (!tools::writeOutput("tritium-opt", output, result))
      return 1;
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "tritium-opt: %s\n", e.what());
    return 1;
  }
}
