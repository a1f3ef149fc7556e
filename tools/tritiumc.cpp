// tritiumc: tritium's command-line compiler. Compiles a built-in kernel for given compile-time
// parameters and prints (or writes) any stage of the pipeline, as MLIR's toyc -emit= does.
#include "compiler/Targets.h"
#include "kernels/SoftmaxPlan.h"
#include "frontend/Kernel.h"
#include "tools/CommandLine.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <string>

using namespace tritium;

namespace {

const char *kUsage = R"(usage: tritiumc [options]

Compiles a built-in tritium kernel and prints one stage of the pipeline:
  tir   block-level IR after tracing and simplification
  gir   TIR with layouts and shared-memory buffers
  llvm  LLVM IR for nvptx64 after O3
  ptx   PTX from LLVM's NVPTX backend

options:
  --kernel=NAME        built-in kernel: softmax (default) or softmax_backward; the row length
                       picks the kernel (registers, cluster or online) as at run time
  --online             use the online (two-pass, any length) kernel whatever the row length
  --cluster-size=C     split the row over a thread-block cluster of C programs (1 to 16), each
                       holding a power-of-two slice of ceil(n-cols / C) columns (with --online:
                       streaming its slice); the planner already does this for rows longer
                       than 32768 (16384 backward)
  --prefetch           load each program's next row into registers before reducing this one
                       (forward, registers or cluster kernel) instead of a cp.async ring
  --no-bulk-copies     cp.async rings copy 16 bytes per thread even where one bulk copy (TMA)
                       per row would do
  --emit=STAGE         tir | gir | llvm | ptx (default: ptx)
  -o FILE              write to FILE instead of standard output
  --n-cols=N           softmax row length; picks the kernel, BLOCK_SIZE, num_warps and
                       num_stages as the planner does at run time (default 1024)
  --block-size=N       override BLOCK_SIZE (a power of two, or a multiple of 32 x num_warps)
  --num-warps=N        override num_warps (1, 2, 4, 8, 16 or 32); the planner's register cap
                       for several CTAs per SM is dropped when N differs from its num_warps
  --num-stages=N       override num_stages
  --programs-per-cta=P run P warp-sized programs (num_warps 1) side by side in each CTA
  --dtype=T            element type of the pointers: fp32 (default), fp16, bf16
  --signature=LIST     the runtime arguments' types, comma separated, with ":16" on those
                       specialized as divisible by 16 (16-byte vectors), e.g.
                       *fp32:16,*fp32:16,i32:16,i32:16,i32,i32:16
  --arch=sm_XX         target architecture (default sm_90)
  --ptx-version=N      PTX ISA version x 10 (default 81)
  --no-locations       leave source locations out of tir/gir
  --help               show this help
)";

[[noreturn]] void usageError(const std::string &msg) { tools::usageError("tritiumc", msg); }

int64_t parseInt(const std::string &flag, const std::string &v) {
  return tools::parseInt("tritiumc", flag, v);
}

int parseInt32(const std::string &flag, const std::string &v) {
  return tools::parseInt32("tritiumc", flag, v);
}

} // namespace

int main(int argc, char **argv) {
  std::map<std::string, std::string> opts;
  std::string output;
  bool locations = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a == "-o") {
      if (i + 1 >= argc)
        usageError("-o needs a file name");
      output = argv[++i];
      continue;
    }
    if (a == "--no-locations") {
      locations = false;
      continue;
    }
    if (a == "--online" || a == "--prefetch" || a == "--no-bulk-copies") {
      opts[a.substr(2)] = "1";
      continue;
    }
    auto eq = a.find('=');
    if (a.rfind("--", 0) != 0 || eq == std::string::npos)
      usageError("unknown argument '" + a + "'");
    std::string key = a.substr(2, eq - 2);
    static const char *known[] = {"kernel",     "emit",  "n-cols",      "block-size",
                                  "num-warps",  "dtype", "num-stages",  "arch",
                                  "signature",  "ptx-version", "cluster-size",
                                  "programs-per-cta"};
    if (std::find(std::begin(known), std::end(known), key) == std::end(known))
      usageError("unknown option '--" + key + "'");
    opts[key] = a.substr(eq + 1);
  }

  std::string kernelName = opts.count("kernel") ? opts["kernel"] : "softmax";
  if (kernelName != "softmax" && kernelName != "softmax_backward")
    usageError("unknown kernel '" + kernelName +
               "' (built-in kernels: softmax, softmax_backward)");
  std::string emit = opts.count("emit") ? opts["emit"] : "ptx";
  std::optional<Stage> stage = parseStage(emit);
  if (!stage)
    usageError("--emit must be tir, gir, llvm or ptx, got '" + emit + "'");

  int64_t nCols = opts.count("n-cols") ? parseInt("--n-cols", opts["n-cols"]) : 1024;
  if (nCols < 1 || nCols > INT32_MAX) // the kernels take n_cols as an i32
    usageError("--n-cols must be from 1 to 2147483647, got " + std::to_string(nCols));
  std::string dtype = opts.count("dtype") ? opts["dtype"] : "fp32";
  if (dtype != "fp32" && dtype != "fp16" && dtype != "bf16")
    usageError("--dtype must be fp32, fp16 or bf16, got '" + dtype + "'");
  kernels::SoftmaxPlan plan = kernelName == "softmax" ? kernels::planSoftmax(nCols, dtype)
                                                      : kernels::planSoftmaxBackward(nCols, dtype);
  if (opts.count("online"))
    plan = kernels::planOnline(plan.direction);
  if (opts.count("cluster-size")) {
    int64_t cluster = parseInt("--cluster-size", opts["cluster-size"]);
    if (cluster < 1 || cluster > 16)
      usageError("--cluster-size must be from 1 to 16");
    plan.prefetch = false; // the plain cluster kernel unless --prefetch says otherwise
    plan.splitOver(int(cluster), nCols);
  }
  if (opts.count("num-stages")) {
    plan.numStages = parseInt32("--num-stages", opts["num-stages"]);
    if (plan.numStages < 1)
      usageError("--num-stages must be at least 1, got " + std::to_string(plan.numStages));
    // A cp.async ring asked for replaces the planner's register prefetch (which has none).
    if (plan.numStages > 1) {
      plan.prefetch = false;
      plan.programsPerCTA = 1; // a ring's shared memory is the CTA's
    }
  }
  if (opts.count("no-bulk-copies"))
    plan.bulkCopies = false;
  if (opts.count("prefetch")) {
    if (plan.online || plan.direction != kernels::SoftmaxDirection::Forward)
      usageError("--prefetch applies to the one-pass forward kernels only");
    if (plan.numStages > 1)
      usageError("--prefetch replaces the cp.async ring: it takes --num-stages=1");
    plan.prefetch = true;
  }
  if (opts.count("num-warps")) {
    int warps = parseInt32("--num-warps", opts["num-warps"]);
    if (warps < 1 || warps > 32 || !std::has_single_bit(unsigned(warps)))
      usageError("--num-warps must be a power of two from 1 to 32, got " +
                 std::to_string(warps));
    // The planner's block and its CTAs-per-SM register cap were chosen for its own num_warps:
    // a cap meant for 8 warps would make 16 spill.
    if (warps != plan.numWarps)
      plan.minBlocksPerSM = 1;
    if (warps != 1) // the planner's programs per CTA are for its warp-sized programs
      plan.programsPerCTA = 1;
    plan.numWarps = warps;
    if (!plan.online && plan.clusterSize == 1)
      plan.fitBlock(nCols, dtype);
  }
  if (opts.count("programs-per-cta")) {
    plan.programsPerCTA = parseInt32("--programs-per-cta", opts["programs-per-cta"]);
    if (plan.programsPerCTA < 1 || plan.programsPerCTA > 32)
      usageError("--programs-per-cta must be from 1 to 32, got " +
                 std::to_string(plan.programsPerCTA));
  }
  Specialization spec = plan.specialization(dtype, 1, nCols);
  if (opts.count("block-size"))
    spec.constexprs[0] = parseInt("--block-size", opts["block-size"]);
  if (opts.count("signature")) {
    spec.signature.clear();
    std::string list = opts["signature"];
    for (size_t pos = 0; pos <= list.size();) {
      size_t comma = list.find(',', pos);
      if (comma == std::string::npos)
        comma = list.size();
      spec.signature.push_back(list.substr(pos, comma - pos));
      pos = comma + 1;
    }
  }
  // The kernel checks every field again (frontend/Limits.h); here the flag is named.
  if (opts.count("arch")) {
    spec.arch = opts["arch"];
    if (std::string bad = checkArch(spec.arch); !bad.empty())
      usageError("--arch: " + bad);
  }
  if (opts.count("ptx-version")) {
    spec.ptxVersion = parseInt32("--ptx-version", opts["ptx-version"]);
    if (std::string bad = checkPtxVersion(spec.ptxVersion, spec.arch); !bad.empty())
      usageError("--ptx-version: " + bad);
  }

  try {
    Artifacts a = plan.kernel().compileTo(spec, *stage, {.locations = locations});
    const std::string &text = a.text(*stage);
    if (!tools::writeOutput("tritiumc", output, text))
      return 1;
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "tritiumc: %s\n", e.what());
    return 1;
  }
}
