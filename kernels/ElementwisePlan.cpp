#include "kernels/ElementwisePlan.h"

#include <algorithm>
#include <bit>

namespace tritium::kernels {

ElementwisePlan planElementwise(int64_t n, Dtype dtype, ElementwiseKind kind) {
  // Four 16-byte vectors per thread and tensor keep enough loads in flight to cover DRAM's
  // latency; 16-bit types take twice the elements per vector. (A first choice, to be replaced
  // by measured ones: docs/PERF.md.)
  (void)n, (void)kind;
  int64_t perThread = dtype == Dtype::fp32 ? 16 : 32;
  return ElementwisePlan{.block = perThread * 32 * 4, .numWarps = 4};
}

std::vector<ElementwisePlan> elementwiseCandidates(int64_t n, Dtype dtype, ElementwiseKind kind) {
  std::vector<ElementwisePlan> out{planElementwise(n, dtype, kind)};
  for (int64_t block : {1024, 2048, 4096, 8192, 16384})
    for (int warps : {4, 8}) {
      ElementwisePlan p{.block = block, .numWarps = warps};
      if (std::none_of(out.begin(), out.end(),
                       [&](const ElementwisePlan &q) { return q.fields() == p.fields(); }))
        out.push_back(p);
    }
  return out;
}

std::string elementwiseBucket(Dtype dtype, int64_t n) {
  return dtypeName(dtype) + "-n" + std::to_string(std::bit_ceil(uint64_t(std::max<int64_t>(n, 1))));
}

} // namespace tritium::kernels
