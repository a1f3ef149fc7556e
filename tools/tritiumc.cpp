// tritiumc: tritium's command-line compiler. Compiles a built-in kernel for given compile-time
// parameters and prints (or writes) any stage of the pipeline, as MLIR's toyc -emit= does, or
// writes ahead-of-time launchers (--emit=aot, aot/Aot.h) of one or several specializations.
#include "aot/Aot.h"
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
#include <vector>

using namespace tritium;

namespace {

const char *kUsage = R"(usage: tritiumc [options]

Compiles a built-in tritium kernel and prints one stage of the pipeline:
  tir   block-level IR after tracing and simplification
  gir   TIR with layouts and shared-memory buffers
  llvm  LLVM IR for nvptx64, optimized
  ptx   PTX from LLVM's NVPTX backend
  aot   ahead-of-time launchers: <name>.h and <name>.cpp in the folder given by -o (default:
        the current folder), embedding the cubin (from ptxas) and the PTX, needing only the
        CUDA driver to build and run (docs/AOT.md)

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
  --no-await-previous  a plain launch: the kernel does not start with griddep_wait() (the
                       library's kernels do, so that they may launch while the stream's
                       previous kernel finishes)
  --emit=STAGE         tir | gir | llvm | ptx | aot (default: ptx)
  -o FILE              write to FILE instead of standard output (--emit=aot: a folder)
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

ahead-of-time options (--emit=aot; ptxas from $TRITIUM_PTXAS, PATH or /usr/local/cuda/bin):
  --aot-name=NAME      the files' base name and the launcher's name (default:
                       <kernel>_<dtype>_<n-cols>); with --aot-variant, the dispatcher's name
  --aot-variant='VNAME: FLAGS'
                       one specialization named VNAME (repeat for several): FLAGS are the
                       options above (--n-cols, --dtype, --signature, --arch, --when, ...),
                       applied over the ones given outside. The dispatcher NAME launches the
                       first variant, in the order given, whose ':16' marks and --when
                       conditions hold for the arguments (and whose dtype is the dtype
                       argument, when the variants' dtypes differ)
  --when=CONDS         conditions on integer arguments, comma separated: n_cols<=1024,n_rows>0
                       (the softmax kernels always add n_cols <= the longest row they run)
  --grid=RULE          the grid of the launcher that takes a program count: persistent (the
                       default; SMs x CTAs per SM, as at run time) or per_program; the
                       planner's one-program-per-row plans get per_program
  --help               show this help
)";

// Names the --aot-variant whose flags are being read, for its usage errors.
std::string gVariantContext;

[[noreturn]] void usageError(const std::string &msg) {
  tools::usageError("tritiumc", gVariantContext + msg);
}

int64_t parseInt(const std::string &flag, const std::string &v) {
  return tools::parseInt("tritiumc", flag, v);
}

int parseInt32(const std::string &flag, const std::string &v) {
  return tools::parseInt32("tritiumc", flag, v);
}

using Flags = std::map<std::string, std::string>;

// Reads one "--key=value" or switch into `opts`; false when `a` is not one of the kernel's
// options (the caller decides what else it may be).
bool readKernelFlag(const std::string &a, Flags &opts) {
  if (a == "--online" || a == "--prefetch" || a == "--no-bulk-copies" ||
      a == "--no-await-previous") {
    opts[a.substr(2)] = "1";
    return true;
  }
  auto eq = a.find('=');
  if (a.rfind("--", 0) != 0 || eq == std::string::npos)
    return false;
  std::string key = a.substr(2, eq - 2);
  static const char *known[] = {"kernel",     "emit",        "n-cols",       "block-size",
                                "num-warps",  "dtype",       "num-stages",   "arch",
                                "signature",  "ptx-version", "cluster-size", "programs-per-cta",
                                "when",       "grid"};
  if (std::find(std::begin(known), std::end(known), key) == std::end(known))
    return false;
  opts[key] = a.substr(eq + 1);
  return true;
}

// What the kernel flags choose: the kernel, its specialization and how the AOT launcher uses it.
struct Choice {
  std::string kernelName, dtype;
  int64_t nCols = 0;
  kernels::SoftmaxPlan plan;
  Specialization spec;
};

Choice choose(Flags &opts) {
  Choice c;
  c.kernelName = opts.count("kernel") ? opts["kernel"] : "softmax";
  if (c.kernelName != "softmax" && c.kernelName != "softmax_backward")
    usageError("unknown kernel '" + c.kernelName +
               "' (built-in kernels: softmax, softmax_backward)");
  int64_t nCols = opts.count("n-cols") ? parseInt("--n-cols", opts["n-cols"]) : 1024;
  if (nCols < 1 || nCols > INT32_MAX) // the kernels take n_cols as an i32
    usageError("--n-cols must be from 1 to 2147483647, got " + std::to_string(nCols));
  c.nCols = nCols;
  std::string dtype = opts.count("dtype") ? opts["dtype"] : "fp32";
  if (dtype != "fp32" && dtype != "fp16" && dtype != "bf16")
    usageError("--dtype must be fp32, fp16 or bf16, got '" + dtype + "'");
  c.dtype = dtype;
  kernels::SoftmaxPlan plan = c.kernelName == "softmax" ? kernels::planSoftmax(nCols, dtype)
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
  if (opts.count("block-size")) // also bounds the rows the AOT launcher accepts (maxCols)
    plan.blockSize = parseInt("--block-size", opts["block-size"]);
  Specialization spec = plan.specialization(dtype, 1, nCols);
  if (opts.count("no-await-previous"))
    spec.awaitPreviousKernel = false;
  if (opts.count("block-size"))
    spec.constexprs[0] = plan.blockSize;
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
  c.plan = plan;
  c.spec = spec;
  return c;
}

// An AOT variant from the kernel flags: the softmax kernels also refuse rows longer than the
// plan runs, as kernels::softmaxForward does.
aot::Variant variantOf(const std::string &name, Flags &opts) {
  Choice c = choose(opts);
  aot::Variant v;
  v.name = name;
  v.kernel = &c.plan.kernel();
  v.spec = c.spec;
  v.grid = c.plan.programPerRow ? aot::GridRule::PerProgram : aot::GridRule::Persistent;
  if (opts.count("grid")) {
    if (opts["grid"] == "persistent")
      v.grid = aot::GridRule::Persistent;
    else if (opts["grid"] == "per_program")
      v.grid = aot::GridRule::PerProgram;
    else
      usageError("--grid must be persistent or per_program, got '" + opts["grid"] + "'");
  }
  if (opts.count("when")) {
    std::string list = opts["when"];
    for (size_t pos = 0; pos <= list.size();) {
      size_t comma = list.find(',', pos);
      if (comma == std::string::npos)
        comma = list.size();
      try {
        v.when.push_back(aot::Condition::parse(list.substr(pos, comma - pos)));
      } catch (const std::exception &e) {
        std::string what = e.what();
        if (what.rfind("error: ", 0) == 0) // the usage error says it is one
          what = what.substr(7);
        usageError("--when: " + what);
      }
      pos = comma + 1;
    }
  }
  if (!c.plan.online)
    v.when.push_back({.arg = "n_cols", .op = "<=", .value = c.plan.maxCols()});
  return v;
}

// "NAME: --flag=value --flag ...": the name and the flags, split at spaces.
std::pair<std::string, std::vector<std::string>> splitVariant(const std::string &text) {
  size_t colon = text.find(':');
  if (colon == std::string::npos)
    usageError("--aot-variant='" + text + "': write 'NAME: --flag=value ...'");
  std::string name = text.substr(0, colon);
  name.erase(0, name.find_first_not_of(' '));
  name.erase(name.find_last_not_of(' ') + 1);
  std::vector<std::string> flags;
  std::string rest = text.substr(colon + 1);
  for (size_t pos = 0; pos < rest.size();) {
    size_t b = rest.find_first_not_of(' ', pos);
    if (b == std::string::npos)
      break;
    size_t e = rest.find(' ', b);
    if (e == std::string::npos)
      e = rest.size();
    flags.push_back(rest.substr(b, e - b));
    pos = e;
  }
  return {name, flags};
}

int emitAot(Flags &opts, const std::vector<std::string> &variantTexts, const std::string &aotName,
            const std::string &output, const std::string &commandLine) {
  std::vector<aot::Variant> variants;
  if (variantTexts.empty()) {
    std::string name = aotName;
    if (name.empty()) {
      Choice c = choose(opts);
      name = c.kernelName + "_" + c.dtype + "_" + std::to_string(c.nCols);
    }
    variants.push_back(variantOf(name, opts));
  } else {
    for (const std::string &text : variantTexts) {
      auto [name, flags] = splitVariant(text);
      gVariantContext = "--aot-variant '" + name + "': ";
      Flags merged = opts;
      merged.erase("when"); // conditions belong to each variant
      for (const std::string &f : flags)
        if (!readKernelFlag(f, merged) || f.rfind("--emit=", 0) == 0)
          usageError("'" + f + "' is not a kernel option");
      variants.push_back(variantOf(name, merged));
      gVariantContext.clear();
    }
  }
  std::string base = aotName.empty() ? variants[0].name : aotName;
  if (variantTexts.size() > 0 && aotName.empty())
    usageError("--aot-variant needs --aot-name=NAME for the dispatcher and the files");
  try {
    aot::GeneratedFiles files =
        aot::generate(variants, {.name = base, .generatedBy = commandLine});
    aot::writeFiles(files, output.empty() ? "." : output);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "tritiumc: %s\n", e.what());
    return 1;
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Flags opts;
  std::string output, aotName;
  std::vector<std::string> variantTexts;
  bool locations = true;
  // The command line as the generated files record it: the flags, without -o's folder.
  std::string commandLine = "tritiumc";
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
    commandLine += a.find(' ') == std::string::npos ? " " + a : " '" + a + "'";
    if (a == "--no-locations") {
      locations = false;
      continue;
    }
    if (a.rfind("--aot-name=", 0) == 0) {
      aotName = a.substr(11);
      continue;
    }
    if (a.rfind("--aot-variant=", 0) == 0) {
      variantTexts.push_back(a.substr(14));
      continue;
    }
    if (readKernelFlag(a, opts))
      continue;
    if (a.rfind("--", 0) == 0 && a.find('=') != std::string::npos)
      usageError("unknown option '" + a.substr(0, a.find('=')) + "'");
    usageError("unknown argument '" + a + "'");
  }

  std::string emit = opts.count("emit") ? opts["emit"] : "ptx";
  if (emit == "aot")
    return emitAot(opts, variantTexts, aotName, output, commandLine);
  if (!aotName.empty() || !variantTexts.empty() || opts.count("when") || opts.count("grid"))
    usageError("--aot-name, --aot-variant, --when and --grid go with --emit=aot");
  std::optional<Stage> stage = parseStage(emit);
  if (!stage)
    usageError("--emit must be tir, gir, llvm, ptx or aot, got '" + emit + "'");
  Choice c = choose(opts);

  try {
    Artifacts a = c.plan.kernel().compileTo(c.spec, *stage, {.locations = locations});
    const std::string &text = a.text(*stage);
    if (!tools::writeOutput("tritiumc", output, text))
      return 1;
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "tritiumc: %s\n", e.what());
    return 1;
  }
}
