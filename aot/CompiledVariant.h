// One ahead-of-time variant after compiling: everything the generated files say about it.
// Internal to aot/ (Generate.cpp makes it, EmitFiles.cpp writes it out).
#pragma once

#include "aot/Aot.h"
#include "aot/Ptxas.h"
#include "compiler/ir/TensorMap.h"

#include <string>
#include <utility>
#include <vector>

namespace tritium::aot {

// A runtime parameter of the launcher.
struct LauncherParam {
  std::string name;
  std::string type;  // the signature's entry: "*fp32:16", "i32"
  std::string cType; // CUdeviceptr, int32_t, int64_t, uint32_t, uint64_t, float
  bool pointer = false;
  bool integer = false;
  int divisibility = 1; // 16 when marked ":16"
};

struct CompiledVariant {
  Variant variant;
  std::string entry; // the kernel's name: the PTX entry point
  std::vector<LauncherParam> params;
  std::vector<std::pair<std::string, int64_t>> constexprs;
  std::string specialization; // Specialization::str()
  int64_t sharedBytes = 0;    // dynamic shared memory per CTA
  int threads = 0;
  bool waitsOnPriorKernel = false; // griddep_wait: launched with programmatic serialization
  bool syncsGrid = false;          // grid_sync: launched cooperatively
  std::string ptx;
  PtxasResult ptxas;
  std::string cacheKey;   // tritium's disk-cache key of this compiled kernel
  std::string kernelHash; // the hash of its TIR without source locations
  std::string dtype;      // the pointers' element types, distinct, comma separated: "fp32"
  // The CUtensorMaps the launchers encode from the arguments and pass after them (TMA copies
  // and stores; compiler/ir/TensorMap.h), in the kernel's order.
  std::vector<ir::TensorMapRecipe> tensorMaps;
};

// Compiles `v` through its kernel's cache and assembles it with `ptxasPath`. Throws UserError
// prefixed with the variant's name.
CompiledVariant compileVariant(const Variant &v, const std::string &ptxasPath);

// The two files' text for variants already checked to share their parameters.
GeneratedFiles emitFiles(const std::vector<CompiledVariant> &variants, const Options &options,
                         const std::string &ptxasVersion);

} // namespace tritium::aot
