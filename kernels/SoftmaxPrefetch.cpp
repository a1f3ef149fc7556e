// Fused softmax with the next row prefetched into registers: each program loads its next row
// before it reduces the current one, so that row's DRAM reads are in flight during this row's
// reductions and barriers. It does with a loop-carried value what cp.async pipelining
// (num_stages > 1) does through a shared-memory ring, without the trip through shared memory
// (whose load/store queue limits the ring at long rows, docs/notes/softmax.md, "The next row
// prefetched into registers"), at the price of a second row's worth of registers.
#include "kernels/Softmax.h"

#include "frontend/DSL.h"

#include <cmath>

namespace tritium::kernels {

using namespace tritium::dsl;

static void softmax_prefetch_kernel(Ptr output_ptr, Ptr input_ptr, Int input_row_stride,
                                    Int output_row_stride, Int n_rows, Int n_cols,
                                    int BLOCK_SIZE, int num_stages) {
  (void)num_stages; // the prefetch replaces the cp.async ring: always 1
  auto row_start = program_id(0);
  auto row_step = num_programs(0);
  auto cols = arange(0, BLOCK_SIZE);
  auto mask = cols < n_cols;
  // Kept in the input's type: 16-bit rows take half the registers until they are used.
  // A program with no next row loads nothing (the mask is off).
  auto next = load(input_ptr + row_start * input_row_stride + cols, mask & (row_start < n_rows),
                   -INFINITY);
  for (auto row_idx : range(row_start, n_rows, row_step).carry(next)) {
    auto row = cast(next, "fp32");
    auto next_idx = row_idx + row_step;
    next = load(input_ptr + next_idx * input_row_stride + cols, mask & (next_idx < n_rows),
                -INFINITY);
    auto numerator = exp(row - max(row, 0));
    auto softmax_output = numerator / sum(numerator, 0);
    store(output_ptr + row_idx * output_row_stride + cols,
          cast(softmax_output, output_ptr.dtype()), mask);
  }
}

Kernel &softmaxPrefetchKernel() {
  static auto k = kernel("softmax_prefetch_kernel", softmax_prefetch_kernel,
                         kSoftmaxParams);
  return k;
}

} // namespace tritium::kernels
