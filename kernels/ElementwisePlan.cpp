#include "kernels/ElementwisePlan.h"

#include <algorithm>
#include <bit>

namespace tritium::kernels {

ElementwisePlan planElementwise(int64_t n, Dtype dtype, ElementwiseKind kind) {
  (void)n;
  // Dropout: 8 elements per thread over 4 warps, registers capped at 64 (launch bounds of 8
  // CTAs per SM). Each element is a Philox chain of 10 rounds whose integer multiplies bound the
  // kernel; 32 warps per SM, each with 8 chains to interleave, kept the multiplier busiest: on
  // the H200 at 2^28 fp32, 660.9 us against 675.8 for the tuner's former best (16 elements per
  // thread, 152 registers, 12 warps) and 717.8 for the same plan uncapped
  // (docs/notes/elementwise.md, "Kept"). The elements per thread set the compile time (Philox is
  // unrolled per element): with 8, the first call on an empty cache took 33.5 ms on the H200's
  // host, the driver's JIT included.
  if (kind == ElementwiseKind::Dropout)
    return ElementwisePlan{.block = 8 * 32 * 4, .numWarps = 4, .minBlocksPerSM = 8};
  // Four 16-byte vectors per thread and tensor keep enough loads in flight to cover DRAM's
  // latency; 16-bit types take twice the elements per vector.
  int64_t perThread = dtype == Dtype::fp32 ? 16 : 32;
  return ElementwisePlan{.block = perThread * 32 * 4, .numWarps = 4};
}

std::vector<ElementwisePlan> elementwiseCandidates(int64_t n, Dtype dtype, ElementwiseKind kind) {
  std::vector<ElementwisePlan> out{planElementwise(n, dtype, kind)};
  auto add = [&](const ElementwisePlan &p) {
    if (std::none_of(out.begin(), out.end(),
                     [&](const ElementwisePlan &q) { return q.fields() == p.fields(); }))
      out.push_back(p);
  };
  for (int64_t block : {512, 1024, 2048, 4096, 8192, 16384})
    for (int warps : {4, 8})
      add(ElementwisePlan{.block = block, .numWarps = warps});
  // Dropout's registers capped so that more CTAs share an SM: 8 elements per thread at 64
  // registers (32 warps per SM), 16 at 128 or 102 (16 or 20 warps).
  if (kind == ElementwiseKind::Dropout)
    for (ElementwisePlan p : {ElementwisePlan{.block = 2048, .numWarps = 8, .minBlocksPerSM = 4},
                              ElementwisePlan{.block = 2048, .numWarps = 4, .minBlocksPerSM = 4},
                              ElementwisePlan{.block = 2048, .numWarps = 4, .minBlocksPerSM = 5},
                              ElementwisePlan{.block = 4096, .numWarps = 8, .minBlocksPerSM = 2}})
      add(p);
  return out;
}

std::string elementwiseBucket(Dtype dtype, int64_t n, bool aligned) {
  return dtypeName(dtype) + "-n" +
         std::to_string(std::bit_ceil(uint64_t(std::max<int64_t>(n, 1)))) +
         (aligned ? "" : "-unaligned");
}

} // namespace tritium::kernels
