// Launch choices of the elementwise kernels: elements per program and warps (the planner's
// defaults, measured on the H200; the autotuner may replace them).
#pragma once

#include "kernels/Dtype.h"

#include <cstdint>
#include <limits>

namespace tritium::kernels {

enum class ElementwiseKind { Add, Dropout };

struct ElementwisePlan {
  int64_t block = 2048; // elements per program, a power of two
  int numWarps = 4;
  int64_t grid(int64_t n) const { return (n + block - 1) / block; }
  // 64-bit offsets once an offset (up to the last program's last lane) can pass 2^31 - 1.
  bool wide(int64_t n) const {
    return grid(n) * block > int64_t(std::numeric_limits<int32_t>::max());
  }
};

ElementwisePlan planElementwise(int64_t n, Dtype dtype, ElementwiseKind kind);

} // namespace tritium::kernels
