// Softmax for rows of any length: the online normalizer (Milakov and Gimelshein, 2018). The row
// streams through in blocks; each lane keeps a running maximum m and a running sum d of
// exp(x - m), rescaling d whenever m grows, so one pass finds both. A second pass reads the row
// again (mostly from L2, which the first pass just filled) and writes exp(x - max) / sum. Both
// passes are range loops, so their loads are cp.async-pipelined num_stages deep.
#include "kernels/Softmax.h"

#include "frontend/DSL.h"

#include <cmath>

namespace tritium::kernels {

using namespace tritium::dsl;

static void softmax_online_kernel(Ptr output_ptr, Ptr input_ptr, Int input_row_stride,
                                  Int output_row_stride, Int n_rows, Int n_cols, int BLOCK_SIZE,
                                  int num_stages) {
  auto cols = arange(0, BLOCK_SIZE);
  for (auto row_idx : range(program_id(0), n_rows, num_programs(0), 1)) {
    auto in_row = input_ptr + row_idx * input_row_stride;
    // Per-lane running max and sum: no block-wide reduction inside the loop.
    auto m = full(BLOCK_SIZE, -INFINITY);
    auto d = full(BLOCK_SIZE, 0.0);
    for (auto start : range(0, n_cols, BLOCK_SIZE, num_stages).carry(m, d)) {
      auto offsets = start + cols;
      auto x = cast(load(in_row + offsets, offsets < n_cols, -INFINITY), "fp32");
      auto m_new = maximum(m, x);
      // A lane that has seen only -inf (a masked attention prefix, the masked tail) keeps d = 0;
      // without the guard, exp(-inf - -inf) would make it NaN.
      d = where(m_new > -INFINITY, d * exp(m - m_new) + exp(x - m_new), 0.0);
      m = m_new;
    }
    auto row_max = max(m, 0);
    // Lanes still at -inf add exp(-inf) * 0 = 0; a row of only -inf gives NaN, as torch does.
    auto row_sum = sum(d * exp(m - row_max), 0);
    auto inv_sum = 1.0 / row_sum;
    auto out_row = output_ptr + row_idx * output_row_stride;
    for (auto start : range(0, n_cols, BLOCK_SIZE, num_stages)) {
      auto offsets = start + cols;
      auto mask = offsets < n_cols;
      auto x = cast(load(in_row + offsets, mask, -INFINITY), "fp32");
      auto y = exp(x - row_max) * inv_sum;
      store(out_row + offsets, cast(y, output_ptr.dtype()), mask);
    }
  }
}

Kernel &softmaxOnlineKernel() {
  static auto k = kernel("softmax_online_kernel", softmax_online_kernel,
                         kSoftmaxParams);
  return k;
}

} // namespace tritium::kernels
