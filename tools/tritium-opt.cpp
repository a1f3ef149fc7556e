// tritium-opt: runs tritium's passes on TIR/GIR text, as mlir-opt does. Reads a kernel from a
// file or standard input, verifies it, runs the named passes in order (verifying after each) or
// the pipeline up to a stage, and prints the result: the tool behind the lit tests of each pass.
#include "tools/CommandLine.h"
#include "tools/OptDriver.h"

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
                         accumulator-resets
                                    a loop's reset of a dot's accumulator to zeros made the
                                    dot's accumulate flag (TIR)
                         dot-instructions
                                    wgmma or mma.sync for each dot (TIR)
                         byte-fragment-columns
                                    wgmma dots whose result becomes an 8-bit a: columns
                                    computed in that fragment's order (TIR)
                         layouts    blocked layouts on every block value (TIR -> GIR)
                         shared     shared-memory slots for cross-warp reductions (GIR)
                         hoist      loop-invariant pure ops moved before their loop (GIR)
                         vectorize  vector widths of loads and stores (GIR, needs layouts)
                         runs       constant runs of elementwise values, computed once per
                                    run (GIR, needs layouts)
                         pipeline   software pipelining plan of loops with num_stages >= 2:
                                    bulk copies (TMA) or cp.async per thread (GIR)
                         dot-rings  dots reading their tiles in place from the rings (GIR)
  --emit=STAGE         then run the pipeline: tir (verify, cse, accumulator-resets,
                       dce) | gir | llvm | ptx
  --num-warps=N        warps per program for the GPU passes (default: the kernel's num_warps
                       attribute, else 4)
  --arch=sm_XX         target architecture (default sm_90); bulk copies need sm_90
  --no-bulk-copies     pipeline with cp.async per thread even where a bulk copy would do
  --ptx-version=N      PTX ISA version x 10 (default 81)
  --llvm-pipeline=P    the LLVM passes before code generation: lean (tritium's, the default)
                       or O3 (LLVM's); TRITIUM_LLVM_PIPELINE sets the default, as at run time
  --no-locations       print without loc(...)
  -o FILE              write to FILE instead of standard output
  --help               show this help
)";

[[noreturn]] void usageError(const std::string &msg) { tools::usageError("tritium-opt", msg); }

std::vector<std::string> splitList(const std::string &list) {
  std::vector<std::string> out;
  std::stringstream ss(list);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty())
      out.push_back(item);
  return out;
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
  std::string input, output;
  tools::OptRequest request;
  std::optional<codegen::LLVMPipeline> pipeline;
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
      request.locations = false;
    } else if (a == "--no-bulk-copies") {
      request.options.bulkCopies = false;
    } else if (auto v = value("--pass")) {
      for (const std::string &p : splitList(*v)) {
        if (!tools::optPasses().count(p)) {
          std::string known;
          for (const auto &entry : tools::optPasses())
            known += (known.empty() ? "" : ", ") + entry.first;
          usageError("unknown pass '" + p + "' (passes: " + known + ")");
        }
        request.passes.push_back(p);
      }
    } else if (auto v = value("--emit")) {
      request.emit = parseStage(*v);
      if (!request.emit)
        usageError("--emit must be tir, gir, llvm or ptx, got '" + *v + "'");
    } else if (auto v = value("--num-warps")) {
      request.numWarps = tools::parseInt32("tritium-opt", "--num-warps", *v);
    } else if (auto v = value("--arch")) {
      request.options.arch = *v;
    } else if (auto v = value("--ptx-version")) {
      request.options.ptxVersion = tools::parseInt32("tritium-opt", "--ptx-version", *v);
    } else if (auto v = value("--llvm-pipeline")) {
      pipeline = codegen::parseLLVMPipeline(*v);
      if (!pipeline)
        usageError("--llvm-pipeline must be lean or O3, got '" + *v + "'");
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
    request.options.llvmPipeline = pipeline ? *pipeline : codegen::llvmPipelineFromEnvironment();
    std::string result = tools::runOpt(text, name, request);
    if (!tools::writeOutput("tritium-opt", output, result))
      return 1;
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "tritium-opt: %s\n", e.what());
    return 1;
  }
}
