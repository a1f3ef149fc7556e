// Runs a kernel's TIR on the CPU over host memory instead of compiling it: one program instance
// (or one cluster of them) at a time over the same grid, with the same masks, so that kernels can
// be run, checked and debugged on machines without a GPU. Switched on by TRITIUM_INTERPRET=1 or
// setInterpret(true); CompiledKernel::launch then interprets instead of loading and launching.
// docs/INTERPRETER.md gives the semantics and the tolerance against the GPU.
#pragma once

#include "compiler/ir/IR.h"
#include "interpreter/Memory.h"

#include <cstdint>
#include <array>
#include <cstdio>
#include <vector>

namespace tritium {

// Interpret mode for launches: setInterpret() wins over TRITIUM_INTERPRET (1/true/on).
void setInterpret(bool on);
void resetInterpret(); // back to following TRITIUM_INTERPRET (read again on the next query)
bool interpreting();

namespace interpreter {

// One runtime argument: pointers and integers in `i` (pointers are host addresses), floats in `f`.
struct Arg {
  int64_t i = 0;
  double f = 0;
};

struct Options {
  std::FILE *printTo = stdout; // where print() ops write
};

// Interprets `fn` (TIR or GIR; layouts are ignored) for programs 0..grid-1 in order. A load or
// store outside the registered memory that no mask switches off is a UserError naming the op's
// source location; nothing is touched by the failing access. With fn's cluster_size C > 1 the
// grid must be a multiple of C, and the C programs of each cluster run at once, one thread each,
// clusters in order; the first error of a cluster's programs is rethrown here, and programs that
// reach different cluster reductions (which would hang a GPU) are a UserError.
void run(const ir::Function &fn, int64_t grid, const std::vector<Arg> &args,
         const Options &options = {});
// A 2-D or 3-D grid {x, y, z}: programs in order of x, then y, then z (program_id(1) and (2)
// count along y and z; clusters run along x).
void run(const ir::Function &fn, std::array<int64_t, 3> grid, const std::vector<Arg> &args,
         const Options &options = {});

// The persistent grid in interpret mode: min(rows, 4 x CPU threads), at least 1.
int64_t defaultGrid(int64_t rows);

} // namespace interpreter
} // namespace tritium
