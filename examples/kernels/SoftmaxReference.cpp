// The double-precision softmax reference.
#include "examples/kernels/SoftmaxReference.h"

#include <algorithm>
#include <cmath>

namespace tritium::kernels {

void softmaxRowReference(const float *in, int64_t cols, double *out) {
  double m = -INFINITY, sum = 0;
  for (int64_t c = 0; c < cols; ++c)
    m = std::max(m, double(in[c]));
  for (int64_t c = 0; c < cols; ++c)
    sum += out[c] = std::exp(double(in[c]) - m);
  for (int64_t c = 0; c < cols; ++c)
    out[c] /= sum;
}

} // namespace tritium::kernels
