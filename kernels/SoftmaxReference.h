// The CPU references every softmax check compares with: one row in double precision, with
// torch's behaviour on special values (a NaN anywhere gives a NaN row; a row that is all -inf
// gives NaN, since exp(-inf - -inf) is NaN; +inf gives NaN through inf - inf).
#pragma once

#include <cstdint>

namespace tritium::kernels {

// out[c] = exp(in[c] - max) / sum_c exp(in[c] - max), computed in double.
void softmaxRowReference(const float *in, int64_t cols, double *out);

// The backward of softmax from its output o and the output's gradient dout:
// dx[c] = o[c] * (dout[c] - sum_c o[c] * dout[c]), computed in double.
void softmaxBackwardRowReference(const float *o, const float *dout, int64_t cols, double *dx);

} // namespace tritium::kernels
