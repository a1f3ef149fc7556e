#include "kernels/ElementwisePlan.h"

namespace tritium::kernels {

ElementwisePlan planElementwise(int64_t n, Dtype dtype, ElementwiseKind kind) {
  // Four 16-byte vectors per thread and tensor keep enough loads in flight to cover DRAM's
  // latency; 16-bit types take twice the elements per vector. (A first choice, to be replaced
  // by measured ones: docs/PERF.md.)
  (void)n, (void)kind;
  int64_t perThread = dtype == Dtype::fp32 ? 16 : 32;
  return ElementwisePlan{.block = perThread * 32 * 4, .numWarps = 4};
}

} // namespace tritium::kernels
