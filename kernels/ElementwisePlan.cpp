#include "kernels/ElementwisePlan.h"

#include <algorithm>
#include <bit>

namespace tritium::kernels {

ElementwisePlan planElementwise(int64_t n, Dtype dtype, ElementwiseKind kind) {
  (void)n;
  // Dropout: 4 elements per thread over 8 warps. Each element is a Philox chain of 10 rounds,
  // so the elements per thread set the kernel's size: 16 took 150 ms to compile (32 for 16-bit
  // types, 310 ms), 4 about 35 ms; and the autotuner's best plan on the H100 was the smallest
  // block it had at every n (docs/PERF.md, thirteenth session).
  if (kind == ElementwiseKind::Dropout)
    return ElementwisePlan{.block = 4 * 32 * 8, .numWarps = 8};
  // Four 16-byte vectors per thread and tensor keep enough loads in flight to cover DRAM's
  // latency; 16-bit types take twice the elements per vector.
  int64_t perThread = dtype == Dtype::fp32 ? 16 : 32;
  return ElementwisePlan{.block = perThread * 32 * 4, .numWarps = 4};
}

std::vector<ElementwisePlan> elementwiseCandidates(int64_t n, Dtype dtype, ElementwiseKind kind) {
  std::vector<ElementwisePlan> out{planElementwise(n, dtype, kind)};
  for (int64_t block : {512, 1024, 2048, 4096, 8192, 16384})
    for (int warps : {4, 8}) {
      ElementwisePlan p{.block = block, .numWarps = warps};
      if (std::none_of(out.begin(), out.end(),
                       [&](const ElementwisePlan &q) { return q.fields() == p.fields(); }))
        out.push_back(p);
    }
  return out;
}

std::string elementwiseBucket(Dtype dtype, int64_t n, bool aligned) {
  return dtypeName(dtype) + "-n" +
         std::to_string(std::bit_ceil(uint64_t(std::max<int64_t>(n, 1)))) +
         (aligned ? "" : "-unaligned");
}

} // namespace tritium::kernels
