// The double-precision softmax references.
#include "kernels/SoftmaxReference.h"

#include <cmath>

namespace tritium::kernels {

void softmaxRowReference(const float *in, int64_t cols, double *out) {
  // A NaN-propagating maximum, as torch's (std::max would drop a NaN).
  double m = -INFINITY, sum = 0;
  for (int64_t c = 0; c < cols; ++c)
    m = std::isnan(m) || std::isnan(double(in[c])) ? NAN : std::fmax(m, double(in[c]));
  for (int64_t c = 0; c < cols; ++c)
    sum += out[c] = std::exp(double(in[c]) - m);
  for (int64_t c = 0; c < cols; ++c)
    out[c] /= sum;
}

void softmaxBackwardRowReference(const float *o, const float *dout, int64_t cols, double *dx) {
  double dot = 0;
  for (int64_t c = 0; c < cols; ++c)
    dot += double(o[c]) * double(dout[c]);
  for (int64_t c = 0; c < cols; ++c)
    dx[c] = double(o[c]) * (double(dout[c]) - dot);
}

} // namespace tritium::kernels
