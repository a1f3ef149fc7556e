// Launch choices of the elementwise kernels: elements per program and warps (the planner's
// defaults, measured on the H200; the autotuner may replace them).
#pragma once

#include "kernels/Autotuner.h"
#include "kernels/Dtype.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace tritium::kernels {

enum class ElementwiseKind { Add, Dropout };

struct ElementwisePlan {
  int64_t block = 2048; // elements per program, a power of two
  int numWarps = 4;
  // CUDA's __launch_bounds__ minimum (Specialization::minBlocksPerSM): ptxas keeps registers
  // low enough for this many CTAs per SM.
  int minBlocksPerSM = 1;
  PlanFields fields() const {
    return {{"block", block}, {"warps", numWarps}, {"min_blocks_per_sm", minBlocksPerSM}};
  }
  int64_t grid(int64_t n) const { return (n + block - 1) / block; }
  // 64-bit offsets once an offset (up to the last program's last lane) can pass 2^31 - 1.
  bool wide(int64_t n) const {
    return grid(n) * block > int64_t(std::numeric_limits<int32_t>::max());
  }
};

ElementwisePlan planElementwise(int64_t n, Dtype dtype, ElementwiseKind kind);
// What the autotuner times: 512 to 16384 elements per program, 4 or 8 warps; for dropout also
// plans with registers capped for more CTAs per SM.
std::vector<ElementwisePlan> elementwiseCandidates(int64_t n, Dtype dtype, ElementwiseKind kind);
// The autotuner's shape bucket: the dtype and n rounded up to a power of two, and "-unaligned"
// when a tensor starts off a 16-byte boundary (its kernel moves narrower vectors).
std::string elementwiseBucket(Dtype dtype, int64_t n, bool aligned = true);

} // namespace tritium::kernels
