// Softmax over rows too long for one CTA's registers, read once from DRAM: a thread-block
// cluster of C programs owns one row at a time, each program holds one BLOCK_SIZE slice of it
// in registers, and the row's maximum and sum are combined across the cluster through
// distributed shared memory (cluster_max / cluster_sum), as Quack does on Hopper. The online
// kernel reads such rows twice; this one reads them once, like a copy.
#include "examples/kernels/Softmax.h"

#include "frontend/DSL.h"

#include <cmath>

namespace tritium::kernels {

using namespace tritium::dsl;

static void softmax_cluster_kernel(Ptr output_ptr, Ptr input_ptr, Int input_row_stride,
                                   Int output_row_stride, Int n_rows, Int n_cols,
                                   int BLOCK_SIZE, int num_stages) {
  // Clusters walk the rows with a persistent-grid stride; each program of a cluster keeps the
  // same slice of every row it visits.
  auto cluster = program_id(0) / cluster_size();
  auto clusters = num_programs(0) / cluster_size();
  for (auto row_idx : range(cluster, n_rows, clusters, num_stages)) {
    auto cols = cluster_rank() * BLOCK_SIZE + arange(0, BLOCK_SIZE);
    auto mask = cols < n_cols;
    auto row = cast(load(input_ptr + row_idx * input_row_stride + cols, mask, -INFINITY), "fp32");
    // Slices past the end of the row are all -inf: they do not change the maximum, and their
    // exp is 0.
    auto row_max = cluster_max(max(row, 0));
    auto numerator = exp(row - row_max);
    auto denominator = cluster_sum(sum(numerator, 0));
    store(output_ptr + row_idx * output_row_stride + cols,
          cast(numerator / denominator, output_ptr.dtype()), mask);
  }
}

static void softmax_backward_cluster_kernel(Ptr dx_ptr, Ptr o_ptr, Ptr dout_ptr,
                                            Int dx_row_stride, Int o_row_stride,
                                            Int dout_row_stride, Int n_rows, Int n_cols,
                                            int BLOCK_SIZE, int num_stages) {
  auto cluster = program_id(0) / cluster_size();
  auto clusters = num_programs(0) / cluster_size();
  for (auto row_idx : range(cluster, n_rows, clusters, num_stages)) {
    auto cols = cluster_rank() * BLOCK_SIZE + arange(0, BLOCK_SIZE);
    auto mask = cols < n_cols;
    auto o = cast(load(o_ptr + row_idx * o_row_stride + cols, mask, 0.0), "fp32");
    auto g = cast(load(dout_ptr + row_idx * dout_row_stride + cols, mask, 0.0), "fp32");
    auto dot = cluster_sum(sum(o * g, 0));
    store(dx_ptr + row_idx * dx_row_stride + cols, cast(o * (g - dot), dx_ptr.dtype()), mask);
  }
}

Kernel &softmaxClusterKernel() {
  static auto k = kernel("softmax_cluster_kernel", softmax_cluster_kernel,
                         {"output_ptr", "input_ptr", "input_row_stride", "output_row_stride",
                          "n_rows", "n_cols", "BLOCK_SIZE", "num_stages"});
  return k;
}

Kernel &softmaxBackwardClusterKernel() {
  static auto k = kernel("softmax_backward_cluster_kernel", softmax_backward_cluster_kernel,
                         {"dx_ptr", "o_ptr", "dout_ptr", "dx_row_stride", "o_row_stride",
                          "dout_row_stride", "n_rows", "n_cols", "BLOCK_SIZE", "num_stages"});
  return k;
}

} // namespace tritium::kernels
