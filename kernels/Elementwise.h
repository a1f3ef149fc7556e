// Elementwise kernels over n contiguous elements: vector add (Triton's tutorial 01) and seeded
// dropout (tutorial 04). Pointers are device addresses (host addresses under
// TRITIUM_INTERPRET=1); every launch is asynchronous on `stream`.
#pragma once

#include "kernels/Dtype.h"
#include "kernels/ElementwisePlan.h"

#include <cuda.h>

#include <cstdint>

namespace tritium::kernels {

// out = a + b (computed in fp32, stored in `dtype`).
// Each takes the autotuner's (or the planner's) choice unless a plan is given.
void vectorAdd(Dtype dtype, void *out, const void *a, const void *b, int64_t n, CUstream stream,
               const ElementwisePlan *plan = nullptr);

// Seeded dropout: out[i] = x[i] / (1 - p) where tl.rand(seed, i) > p, else 0. The mask is never
// stored: it is Philox 4x32 of (seed, i), bit for bit Triton 3.6's tl.rand for the same seed
// (typed i32 when it fits, else i64, as Triton types a Python int) and offsets i. The backward
// is the same call on the output's gradient with the same seed and p. `out` may equal `x`.
void dropout(Dtype dtype, void *out, const void *x, int64_t n, double p, int64_t seed,
             CUstream stream, const ElementwisePlan *plan = nullptr);
// The dropout kernel's test on the integers: tl.rand(seed, i) > p exactly when the random word,
// folded onto [0, 2^31) as tl.rand folds it, is above dropoutLastDropped(p).
int32_t dropoutLastDropped(double p);
inline void dropoutBackward(Dtype dtype, void *dx, const void *dy, int64_t n, double p,
                            int64_t seed, CUstream stream, const ElementwisePlan *plan = nullptr) {
  dropout(dtype, dx, dy, n, p, seed, stream, plan);
}

} // namespace tritium::kernels
