// The backward of softmax, fused: from the forward's output o and the gradient dout,
// dx = o * (dout - sum(o * dout)). Two kernels, as for the forward: the row in registers, or
// two passes over the row (the first sums o * dout per lane, the second writes dx).
#include "kernels/Softmax.h"

#include "frontend/DSL.h"

namespace tritium::kernels {

using namespace tritium::dsl;

static void softmax_backward_kernel(Ptr dx_ptr, Ptr o_ptr, Ptr dout_ptr, Int dx_row_stride,
                                    Int o_row_stride, Int dout_row_stride, Int n_rows,
                                    Int n_cols, int BLOCK_SIZE, int num_stages) {
  auto cols = arange(0, BLOCK_SIZE);
  for (auto row_idx : range(program_id(0), n_rows, num_programs(0), num_stages)) {
    auto mask = cols < n_cols;
    auto o = cast(load(o_ptr + row_idx * o_row_stride + cols, mask, 0.0), "fp32");
    auto g = cast(load(dout_ptr + row_idx * dout_row_stride + cols, mask, 0.0), "fp32");
    auto dot = sum(o * g, 0);
    auto dx = o * (g - dot);
    store(dx_ptr + row_idx * dx_row_stride + cols, cast(dx, dx_ptr.dtype()), mask);
  }
}

static void softmax_backward_online_kernel(Ptr dx_ptr, Ptr o_ptr, Ptr dout_ptr,
                                           Int dx_row_stride, Int o_row_stride,
                                           Int dout_row_stride, Int n_rows, Int n_cols,
                                           int BLOCK_SIZE, int num_stages) {
  auto cols = arange(0, BLOCK_SIZE);
  for (auto row_idx : range(program_id(0), n_rows, num_programs(0), 1)) {
    auto o_row = o_ptr + row_idx * o_row_stride;
    auto g_row = dout_ptr + row_idx * dout_row_stride;
    auto acc = full(BLOCK_SIZE, 0.0); // per-lane partial sums of o * dout
    for (auto start : range(0, n_cols, BLOCK_SIZE, num_stages).carry(acc)) {
      auto offsets = start + cols;
      auto mask = offsets < n_cols;
      auto o = cast(load(o_row + offsets, mask, 0.0), "fp32");
      auto g = cast(load(g_row + offsets, mask, 0.0), "fp32");
      acc = acc + o * g;
    }
    auto dot = sum(acc, 0);
    auto dx_row = dx_ptr + row_idx * dx_row_stride;
    for (auto start : range(0, n_cols, BLOCK_SIZE, num_stages)) {
      auto offsets = start + cols;
      auto mask = offsets < n_cols;
      auto o = cast(load(o_row + offsets, mask, 0.0), "fp32");
      auto g = cast(load(g_row + offsets, mask, 0.0), "fp32");
      store(dx_row + offsets, cast(o * (g - dot), dx_ptr.dtype()), mask);
    }
  }
}

Kernel &softmaxBackwardKernel() {
  static auto k = kernel("softmax_backward_kernel", softmax_backward_kernel, kSoftmaxBackwardParams);
  return k;
}

Kernel &softmaxBackwardOnlineKernel() {
  static auto k = kernel("softmax_backward_online_kernel", softmax_backward_online_kernel,
                         kSoftmaxBackwardParams);
  return k;
}

} // namespace tritium::kernels
