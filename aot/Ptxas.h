// Assembling PTX into a cubin with the CUDA toolkit's ptxas, for ahead-of-time kernels: no GPU
// and no driver needed, and ptxas' verbose report gives the registers, spills and shared memory
// that the JIT path reads from the driver.
#pragma once

#include <string>

namespace tritium::aot {

struct PtxasResult {
  std::string cubin;
  int registers = 0;
  int spillStoreBytes = 0;
  int spillLoadBytes = 0;
  int stackBytes = 0;        // stack frame per thread (local memory)
  int staticSharedBytes = 0; // "bytes smem" (the kernel's dynamic shared memory is extra)
  std::string log;           // ptxas' verbose report
};

// The ptxas to run: $TRITIUM_PTXAS when set (it must exist), else `ptxas` on PATH, else
// /usr/local/cuda/bin/ptxas (the toolkit's default place, as CUDA_TOOLKIT_ROOT in CMake).
// Throws UserError naming every place searched when none is there.
std::string findPtxas();

// The last line of `ptxas --version` ("Cuda compilation tools, release 13.0, V13.0.48"): part
// of an AOT file's provenance.
std::string ptxasVersion(const std::string &ptxasPath);

// Assembles `ptx` for `arch` (sm_80 ... sm_90a; the PTX's .target must be that arch) with
// `ptxas -arch=<arch> -v`. `entry` names the input file, so the log reads like the JIT's. Throws
// UserError with ptxas' output when it fails.
PtxasResult assemble(const std::string &ptx, const std::string &arch, const std::string &entry,
                     const std::string &ptxasPath);

// The numbers in a ptxas -v report (registers, spills, stack, smem) for the entry `entry`.
void parseReport(const std::string &log, const std::string &entry, PtxasResult &out);

} // namespace tritium::aot
