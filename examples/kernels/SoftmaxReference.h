// The CPU reference every softmax check compares with: one row in double precision.
#pragma once

#include <cstdint>

namespace tritium::kernels {

// out[c] = exp(in[c] - max) / sum_c exp(in[c] - max), computed in double.
void softmaxRowReference(const float *in, int64_t cols, double *out);

} // namespace tritium::kernels
