// Sums the rows of an fp32 matrix of partial sums into one row, stored in the output's type:
// the second step of the norms' weight gradients (internal to the library).
#pragma once

#include "kernels/Dtype.h"

#include <cuda.h>

#include <cstdint>

namespace tritium::kernels {

// out0[c] = sum over p < parts of partial[p * cols + c], in a fixed order; when out1 is given,
// out1[c] is the same sum over the next parts x cols values (a second array right after the
// first), in the same launch.
void columnSums(Dtype outType, void *out0, void *out1, const float *partial, int64_t parts,
                int64_t cols, CUstream stream);

// The tile each column_sum program adds per step: `parts` rows (BLOCK_P) of `cols` columns
// (BLOCK_C), for `arrays` arrays of partial sums. At most 4096 values; up to 512 parts in one
// step.
struct ColumnSumTile {
  int64_t parts, cols;
};
ColumnSumTile columnSumTile(int64_t parts, int64_t cols, int64_t arrays);

} // namespace tritium::kernels
