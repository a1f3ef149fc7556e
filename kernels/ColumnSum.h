// Sums the rows of an fp32 matrix of partial sums into one row, stored in the output's type:
// the second step of the norms' weight gradients (internal to the library).
#pragma once

#include "kernels/Dtype.h"

#include <cuda.h>

#include <cstdint>

namespace tritium::kernels {

// out[c] = sum over p < parts of partial[p * cols + c], in a fixed order.
void columnSum(Dtype outType, void *out, const float *partial, int64_t parts, int64_t cols,
               CUstream stream);

} // namespace tritium::kernels
