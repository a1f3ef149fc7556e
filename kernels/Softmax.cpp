// Fused softmax, line for line the kernel of Triton's tutorial (03-fused-softmax): each
// program walks rows with a persistent-grid stride, holds one row in registers, and writes
// exp(x - max) / sum(exp(x - max)). fp16 and bf16 rows are computed in fp32 and stored back in
// the output's type.
#include "kernels/Softmax.h"

#include "frontend/DSL.h"

#include <bit>
#include <cmath>

namespace tritium::kernels {

using namespace tritium::dsl;

static void softmax_kernel(Ptr output_ptr, Ptr input_ptr, Int input_row_stride,
                           Int output_row_stride, Int n_rows, Int n_cols, int BLOCK_SIZE,
                           int num_stages) {
  // Rows of the softmax are independent, so we parallelize across them.
  auto row_start = program_id(0);
  auto row_step = num_programs(0);
  for (auto row_idx : range(row_start, n_rows, row_step, num_stages)) {
    // The stride is how much the pointer must advance to reach the next row.
    auto row_start_ptr = input_ptr + row_idx * input_row_stride;
    // The block size is the next power of two above n_cols, so a row fits in one block.
    auto col_offsets = arange(0, BLOCK_SIZE);
    auto input_ptrs = row_start_ptr + col_offsets;
    // Load the row, masking the columns past n_cols with -inf so they do not change the max.
    auto mask = col_offsets < n_cols;
    auto row = cast(load(input_ptrs, mask, -INFINITY), "fp32");
    // Subtract the maximum for numerical stability.
    auto row_minus_max = row - max(row, 0);
    // exp is fast but approximate (like __expf in CUDA).
    auto numerator = exp(row_minus_max);
    auto denominator = sum(numerator, 0);
    auto softmax_output = numerator / denominator;
    // Write the row back.
    auto output_row_start_ptr = output_ptr + row_idx * output_row_stride;
    auto output_ptrs = output_row_start_ptr + col_offsets;
    store(output_ptrs, cast(softmax_output, output_ptr.dtype()), mask);
  }
}

Kernel &softmaxKernel() {
  static auto k = kernel("softmax_kernel", softmax_kernel,
                         kSoftmaxParams);
  return k;
}

SoftmaxConfig softmaxConfig(int64_t nCols) {
  int64_t block = int64_t(std::bit_ceil(uint64_t(std::max<int64_t>(1, nCols))));
  // Measured on the H200 (docs/notes/softmax.md, "Warps and stages"): short rows
  // want a warp or two per row so that many rows are in flight per SM; long rows want many
  // warps (few registers per thread) and a cp.async ring two or three rows deep.
  if (block <= 512)
    return {block, 1, 1};
  if (block <= 1024)
    return {block, 2, 1};
  if (block <= 2048)
    return {block, 1, 2};
  // From here rows that are not a power of two matter (the tail of the block is masked): the
  // choices below are the best on average over N = 2176 ... 12544 (docs/notes/softmax.md,
  // "Rows that are not a power of two").
  if (block <= 4096)
    return {block, 4, 2};
  if (block <= 8192)
    return {block, 8, 2};
  if (nCols < block * 3 / 4)
    return {block, 16, 2};
  return {block, 32, 3}; // nearly full 16k blocks: fewer registers per thread, a deeper ring
}

Specialization softmaxSpecialization(int64_t nCols, const std::string &dtype) {
  SoftmaxConfig c = softmaxConfig(nCols);
  return Specialization{.signature = {"*" + dtype, "*" + dtype, "i32", "i32", "i32", "i32"},
                        .constexprs = {c.blockSize, c.numStages},
                        .numWarps = c.numWarps,
                        .numStages = c.numStages};
}

} // namespace tritium::kernels
