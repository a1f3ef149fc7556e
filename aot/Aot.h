// Ahead-of-time kernels: compiles specializations of tritium kernels into a C++ source and
// header pair that embeds each kernel's cubin (and its PTX as a fallback for newer GPUs) with
// typed launchers, so a program that ships them needs only the CUDA driver (libcuda): no LLVM,
// no libtritium, no cache folder. docs/AOT.md describes the generated files.
//
//   auto softmax = tritium::kernel("softmax_kernel", softmax_kernel, {...});
//   tritium::aot::Variant v{.name = "softmax_fp32_1024", .kernel = &softmax,
//                           .spec = {.signature = {...}, .constexprs = {1024, 4}}};
//   tritium::aot::writeFiles(tritium::aot::generate({v}, {.name = "softmax_fp32_1024"}), dir);
//
// With several variants the files also hold a dispatcher named Options::name that launches the
// first variant whose divisibility marks, conditions and dtype fit the arguments (Triton's link).
#pragma once

#include "frontend/Kernel.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace tritium::aot {

// A bound on an integer runtime argument that a variant needs, such as n_cols <= 1024 (a size
// bucket): the launcher refuses other values, the dispatcher passes over the variant.
struct Condition {
  std::string arg;
  std::string op; // <=, <, >=, >, ==, !=
  int64_t value = 0;
  // "n_cols<=1024"; throws UserError naming the text when it is not ARG OP INTEGER.
  static Condition parse(const std::string &text);
  std::string str() const; // "n_cols <= 1024"
};

// How the launcher that takes a program count turns it into a grid of CTAs.
enum class GridRule {
  // tritium's persistent grid (CompiledKernel::persistentGrid): SMs x CTAs per SM by
  // occupancy, or the resident clusters, capped at the CTAs the programs fill.
  Persistent,
  // One program per count: ceil(programs / programsPerCTA) CTAs, times the cluster size.
  PerProgram,
};
const char *gridRuleName(GridRule rule); // "persistent", "per_program"

struct Variant {
  std::string name;         // the launcher's name, a C identifier: softmax_fp32_1024
  Kernel *kernel = nullptr; // the variants of one file must agree on the runtime parameters
  Specialization spec;      // arch, signature (":16" marks), constexprs, num_warps, ...
  std::vector<Condition> when;
  GridRule grid = GridRule::Persistent;
};

struct Options {
  // The files' base name (<name>.h, <name>.cpp) and the prefix of <name>_last_error(); with
  // several variants, or one named otherwise, also the dispatcher's name. A C identifier.
  std::string name;
  std::string ptxas; // empty: findPtxas() ($TRITIUM_PTXAS, PATH, /usr/local/cuda/bin)
  // How the files were made, recorded in them ("tritiumc --emit=aot --n-cols=1024 ..."); no
  // paths, so that the text is the same on every machine.
  std::string generatedBy;
};

struct GeneratedFiles {
  std::string headerName, header; // <name>.h
  std::string sourceName, source; // <name>.cpp
};

// Compiles every variant (through the kernel cache), assembles it with ptxas and returns the
// two files' text: the same inputs give the same bytes. Throws UserError naming the variant
// and what is wrong with it.
GeneratedFiles generate(const std::vector<Variant> &variants, const Options &options);

// Writes both files into `dir` (made if missing); a file whose text is unchanged is left alone,
// so that a build does not recompile it. Throws UserError when a file cannot be written.
void writeFiles(const GeneratedFiles &files, const std::filesystem::path &dir);

} // namespace tritium::aot
