// Fused softmax with the next row prefetched into registers: each program loads its next row
// before it reduces the current one, so that row's DRAM reads are in flight during this row's
// reductions and barriers. It does with a loop-carried value what cp.async pipelining
// (num_stages > 1) does through a shared-memory ring, without the trip through shared memory
// (whose load/store queue limits the ring at long rows, docs/PERF.md), at the price of a
// second row's worth of registers.
#include "examples/kernels/Softmax.h"

#include "frontend/DSL.h"

#include <cmath>

namespace tritium::kernels {

using namespace tritium::dsl;

// The row `row_idx` of this slice, or nothing (masked off) when the program has no such row.
static Value loadRow(const Ptr &input_ptr, const Value &row_idx, const Int &input_row_stride,
                     const Value &cols, const Value &mask, const Int &n_rows) {
  return load(input_ptr + row_idx * input_row_stride + cols, mask & (row_idx < n_rows),
              -INFINITY);
}

static void softmax_prefetch_kernel(Ptr output_ptr, Ptr input_ptr, Int input_row_stride,
                                    Int output_row_stride, Int n_rows, Int n_cols,
                                    int BLOCK_SIZE, int num_stages) {
  (void)num_stages; // the prefetch replaces the cp.async ring: always 1
  auto row_start = program_id(0);
  auto row_step = num_programs(0);
  auto cols = arange(0, BLOCK_SIZE);
  auto mask = cols < n_cols;
  // Kept in the input's type: 16-bit rows take half the registers until they are used.
  auto next = loadRow(input_ptr, row_start, input_row_stride, cols, mask, n_rows);
  for (auto row_idx : range(row_start, n_rows, row_step).carry(next)) {
    auto row = cast(next, "fp32");
    next = loadRow(input_ptr, row_idx + row_step, input_row_stride, cols, mask, n_rows);
    auto numerator = exp(row - max(row, 0));
    auto softmax_output = numerator / sum(numerator, 0);
    store(output_ptr + row_idx * output_row_stride + cols,
          cast(softmax_output, output_ptr.dtype()), mask);
  }
}

// The cluster kernel of SoftmaxCluster.cpp with the same prefetch: each program loads its
// slice of the cluster's next row before the cluster exchange of this one.
static void softmax_cluster_prefetch_kernel(Ptr output_ptr, Ptr input_ptr, Int input_row_stride,
                                            Int output_row_stride, Int n_rows, Int n_cols,
                                            int BLOCK_SIZE, int num_stages) {
  (void)num_stages;
  auto cluster = program_id(0) / cluster_size();
  auto clusters = num_programs(0) / cluster_size();
  auto cols = cluster_rank() * BLOCK_SIZE + arange(0, BLOCK_SIZE);
  auto mask = cols < n_cols;
  auto next = loadRow(input_ptr, cluster, input_row_stride, cols, mask, n_rows);
  for (auto row_idx : range(cluster, n_rows, clusters).carry(next)) {
    auto row = cast(next, "fp32");
    next = loadRow(input_ptr, row_idx + clusters, input_row_stride, cols, mask, n_rows);
    // As in softmax_cluster_kernel: the slice's max and sum, one exchange per row.
    auto slice_max = max(row, 0);
    auto has_max = slice_max > -INFINITY;
    auto numerator = exp(row - where(has_max, slice_max, 0.0));
    auto maxes = cluster_gather(slice_max, -INFINITY);
    auto sums = cluster_gather(sum(numerator, 0), 0.0);
    auto row_max = max(maxes, 0);
    auto row_sum = sum(where(maxes > -INFINITY, sums * exp(maxes - row_max), 0.0), 0);
    auto scale = where(has_max, exp(slice_max - row_max), 0.0) / row_sum;
    store(output_ptr + row_idx * output_row_stride + cols,
          cast(numerator * scale, output_ptr.dtype()), mask);
  }
}

Kernel &softmaxPrefetchKernel() {
  static auto k = kernel("softmax_prefetch_kernel", softmax_prefetch_kernel,
                         {"output_ptr", "input_ptr", "input_row_stride", "output_row_stride",
                          "n_rows", "n_cols", "BLOCK_SIZE", "num_stages"});
  return k;
}

Kernel &softmaxClusterPrefetchKernel() {
  static auto k = kernel("softmax_cluster_prefetch_kernel", softmax_cluster_prefetch_kernel,
                         {"output_ptr", "input_ptr", "input_row_stride", "output_row_stride",
                          "n_rows", "n_cols", "BLOCK_SIZE", "num_stages"});
  return k;
}

} // namespace tritium::kernels
