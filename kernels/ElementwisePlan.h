// Launch choices of the elementwise kernels: elements per program and warps (the planner's
// defaults, measured on the H200; the autotuner may replace them), and for dropout whether
// programs are persistent.
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
  // Dropout only: a persistent grid (SMs x resident programs) whose programs walk the blocks,
  // each loading its next block before the current one's Philox rounds; else one program per
  // block, as Triton's tutorials launch them.
  bool persistent = false;
  PlanFields fields() const {
    return {{"block", block}, {"warps", numWarps}, {"persistent", persistent ? 1 : 0}};
  }
  // The blocks of n elements (a persistent launch runs at most this many programs).
  int64_t grid(int64_t n) const { return (n + block - 1) / block; }
  // 64-bit offsets once an offset can pass 2^31 - 1: the last program's last lane, or for a
  // persistent plan the block a program loads ahead (at most one grid further, so below 2 n).
  bool wide(int64_t n) const {
    return grid(n) * block * (persistent ? 2 : 1) > int64_t(std::numeric_limits<int32_t>::max());
  }
};

ElementwisePlan planElementwise(int64_t n, Dtype dtype, ElementwiseKind kind);
// What the autotuner times: 512 to 16384 elements per program, 4 or 8 warps; for dropout also
// persistent programs of 512 to 2048 elements.
std::vector<ElementwisePlan> elementwiseCandidates(int64_t n, Dtype dtype, ElementwiseKind kind);
// The autotuner's shape bucket: the dtype and n rounded up to a power of two.
std::string elementwiseBucket(Dtype dtype, int64_t n);

} // namespace tritium::kernels
