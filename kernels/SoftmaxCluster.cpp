// Softmax over rows too long for one CTA's registers, read once from DRAM: a thread-block
// cluster of C programs owns one row at a time, each program holds one BLOCK_SIZE slice of it
// in registers, and the row's maximum and sum are combined across the cluster through
// distributed shared memory (cluster_max / cluster_sum), as Quack does on Hopper. The online
// kernel reads such rows twice; this one reads them once, like a copy.
//
// The online variants split the row the same way but stream each program's slice in blocks,
// as the online kernel does (running max and sum per lane, then a second pass that writes), so
// a slice need not fit in registers. The second pass re-reads the slice from L2: the rows in
// flight are only those of the clusters resident at once.
#include "kernels/Softmax.h"

#include "frontend/DSL.h"

#include <cmath>
#include <string>
#include <utility>

namespace tritium::kernels {

using namespace tritium::dsl;

// Clusters walk the rows with a persistent-grid stride: this program's cluster's first row, and
// the number of clusters. Each program of a cluster keeps the same slice of every row.
static std::pair<Value, Value> clusterRows() {
  return {program_id(0) / cluster_size(), num_programs(0) / cluster_size()};
}

// Softmax of one row slice held in registers (fp32), stored through `out_ptrs`. The slice's own
// max and sum come first, so that the cluster exchanges once per row (the two gathers share one
// barrier) instead of once for the max and once for the sum. A slice of only -inf (past the end
// of the row, or masked attention) has no max: it adds 0.
static void storeSoftmaxSlice(const Value &row, const Value &out_ptrs, const Value &mask,
                              const std::string &out_dtype) {
  auto slice_max = max(row, 0);
  auto has_max = slice_max > -INFINITY;
  auto numerator = exp(row - where(has_max, slice_max, 0.0));
  auto slice_sum = sum(numerator, 0);
  auto maxes = cluster_gather(slice_max, -INFINITY);
  auto sums = cluster_gather(slice_sum, 0.0);
  auto row_max = max(maxes, 0);
  // A row of only -inf gives 0 / 0 = NaN, as torch does.
  auto row_sum = sum(where(maxes > -INFINITY, sums * exp(maxes - row_max), 0.0), 0);
  auto scale = where(has_max, exp(slice_max - row_max), 0.0) / row_sum;
  store(out_ptrs, cast(numerator * scale, out_dtype), mask);
}

static void softmax_cluster_kernel(Ptr output_ptr, Ptr input_ptr, Int input_row_stride,
                                   Int output_row_stride, Int n_rows, Int n_cols,
                                   int BLOCK_SIZE, int num_stages) {
  auto [cluster, clusters] = clusterRows();
  for (auto row_idx : range(cluster, n_rows, clusters, num_stages)) {
    auto cols = cluster_rank() * BLOCK_SIZE + arange(0, BLOCK_SIZE);
    auto mask = cols < n_cols;
    auto row = cast(load(input_ptr + row_idx * input_row_stride + cols, mask, -INFINITY), "fp32");
    storeSoftmaxSlice(row, output_ptr + row_idx * output_row_stride + cols, mask,
                      output_ptr.dtype());
  }
}

// The same with each program's slice of the cluster's next row loaded into registers before
// this row's exchange (SoftmaxPlan::prefetch; SoftmaxPrefetch.cpp explains the idea).
static void softmax_cluster_prefetch_kernel(Ptr output_ptr, Ptr input_ptr, Int input_row_stride,
                                            Int output_row_stride, Int n_rows, Int n_cols,
                                            int BLOCK_SIZE, int num_stages) {
  (void)num_stages; // the prefetch replaces the cp.async ring: always 1
  auto [cluster, clusters] = clusterRows();
  auto cols = cluster_rank() * BLOCK_SIZE + arange(0, BLOCK_SIZE);
  auto mask = cols < n_cols;
  auto next = load(input_ptr + cluster * input_row_stride + cols, mask & (cluster < n_rows),
                   -INFINITY);
  for (auto row_idx : range(cluster, n_rows, clusters).carry(next)) {
    auto row = cast(next, "fp32");
    auto next_idx = row_idx + clusters;
    next = load(input_ptr + next_idx * input_row_stride + cols, mask & (next_idx < n_rows),
                -INFINITY);
    storeSoftmaxSlice(row, output_ptr + row_idx * output_row_stride + cols, mask,
                      output_ptr.dtype());
  }
}

static void softmax_backward_cluster_kernel(Ptr dx_ptr, Ptr o_ptr, Ptr dout_ptr,
                                            Int dx_row_stride, Int o_row_stride,
                                            Int dout_row_stride, Int n_rows, Int n_cols,
                                            int BLOCK_SIZE, int num_stages) {
  auto [cluster, clusters] = clusterRows();
  for (auto row_idx : range(cluster, n_rows, clusters, num_stages)) {
    auto cols = cluster_rank() * BLOCK_SIZE + arange(0, BLOCK_SIZE);
    auto mask = cols < n_cols;
    auto o = cast(load(o_ptr + row_idx * o_row_stride + cols, mask, 0.0), "fp32");
    auto g = cast(load(dout_ptr + row_idx * dout_row_stride + cols, mask, 0.0), "fp32");
    auto dot = cluster_sum(sum(o * g, 0));
    store(dx_ptr + row_idx * dx_row_stride + cols, cast(o * (g - dot), dx_ptr.dtype()), mask);
  }
}

// The part of a row that a program of the cluster owns: [begin, end), a whole number of blocks.
struct Slice {
  Value begin, end;
};
static Slice sliceOf(const Int &n_cols, int BLOCK_SIZE) {
  auto blocks_per_program =
      (n_cols + cluster_size() * BLOCK_SIZE - 1) / (cluster_size() * BLOCK_SIZE);
  auto length = blocks_per_program * BLOCK_SIZE;
  auto begin = cluster_rank() * length;
  return {begin, minimum(begin + length, n_cols)};
}

static void softmax_cluster_online_kernel(Ptr output_ptr, Ptr input_ptr, Int input_row_stride,
                                          Int output_row_stride, Int n_rows, Int n_cols,
                                          int BLOCK_SIZE, int num_stages) {
  auto [cluster, clusters] = clusterRows();
  auto slice = sliceOf(n_cols, BLOCK_SIZE);
  auto cols = arange(0, BLOCK_SIZE);
  for (auto row_idx : range(cluster, n_rows, clusters, 1)) {
    auto in_row = input_ptr + row_idx * input_row_stride;
    auto m = full(BLOCK_SIZE, -INFINITY);
    auto d = full(BLOCK_SIZE, 0.0);
    // Blocks never straddle the end of a slice, only the end of the row.
    for (auto start : range(slice.begin, slice.end, BLOCK_SIZE, num_stages).carry(m, d)) {
      auto offsets = start + cols;
      auto x = cast(load(in_row + offsets, offsets < n_cols, -INFINITY), "fp32");
      auto m_new = maximum(m, x);
      d = where(m_new > -INFINITY, d * exp(m - m_new) + exp(x - m_new), 0.0);
      m = m_new;
    }
    // This slice's max and sum, then the row's. A slice that saw only -inf (or no column at
    // all) adds 0; a row of only -inf still gives 0 / 0 = NaN, as torch does.
    auto slice_max = max(m, 0);
    auto slice_sum = sum(where(m > -INFINITY, d * exp(m - slice_max), 0.0), 0);
    auto row_max = cluster_max(slice_max);
    auto row_sum =
        cluster_sum(where(slice_max > -INFINITY, slice_sum * exp(slice_max - row_max), 0.0));
    auto inv_sum = 1.0 / row_sum;
    auto out_row = output_ptr + row_idx * output_row_stride;
    for (auto start : range(slice.begin, slice.end, BLOCK_SIZE, num_stages)) {
      auto offsets = start + cols;
      auto mask = offsets < n_cols;
      auto x = cast(load(in_row + offsets, mask, -INFINITY), "fp32");
      store(out_row + offsets, cast(exp(x - row_max) * inv_sum, output_ptr.dtype()), mask);
    }
  }
}

static void softmax_backward_cluster_online_kernel(Ptr dx_ptr, Ptr o_ptr, Ptr dout_ptr,
                                                   Int dx_row_stride, Int o_row_stride,
                                                   Int dout_row_stride, Int n_rows, Int n_cols,
                                                   int BLOCK_SIZE, int num_stages) {
  auto [cluster, clusters] = clusterRows();
  auto slice = sliceOf(n_cols, BLOCK_SIZE);
  auto cols = arange(0, BLOCK_SIZE);
  for (auto row_idx : range(cluster, n_rows, clusters, 1)) {
    auto o_row = o_ptr + row_idx * o_row_stride;
    auto g_row = dout_ptr + row_idx * dout_row_stride;
    auto acc = full(BLOCK_SIZE, 0.0);
    for (auto start : range(slice.begin, slice.end, BLOCK_SIZE, num_stages).carry(acc)) {
      auto offsets = start + cols;
      auto mask = offsets < n_cols;
      acc = acc + cast(load(o_row + offsets, mask, 0.0), "fp32") *
                      cast(load(g_row + offsets, mask, 0.0), "fp32");
    }
    auto dot = cluster_sum(sum(acc, 0));
    auto dx_row = dx_ptr + row_idx * dx_row_stride;
    for (auto start : range(slice.begin, slice.end, BLOCK_SIZE, num_stages)) {
      auto offsets = start + cols;
      auto mask = offsets < n_cols;
      auto o = cast(load(o_row + offsets, mask, 0.0), "fp32");
      auto g = cast(load(g_row + offsets, mask, 0.0), "fp32");
      store(dx_row + offsets, cast(o * (g - dot), dx_ptr.dtype()), mask);
    }
  }
}

Kernel &softmaxClusterOnlineKernel() {
  static auto k = kernel("softmax_cluster_online_kernel", softmax_cluster_online_kernel,
                         kSoftmaxParams);
  return k;
}

Kernel &softmaxBackwardClusterOnlineKernel() {
  static auto k =
      kernel("softmax_backward_cluster_online_kernel", softmax_backward_cluster_online_kernel,
             kSoftmaxBackwardParams);
  return k;
}

Kernel &softmaxClusterPrefetchKernel() {
  static auto k =
      kernel("softmax_cluster_prefetch_kernel", softmax_cluster_prefetch_kernel, kSoftmaxParams);
  return k;
}

Kernel &softmaxClusterKernel() {
  static auto k = kernel("softmax_cluster_kernel", softmax_cluster_kernel,
                         kSoftmaxParams);
  return k;
}

Kernel &softmaxBackwardClusterKernel() {
  static auto k = kernel("softmax_backward_cluster_kernel", softmax_backward_cluster_kernel,
                         kSoftmaxBackwardParams);
  return k;
}

} // namespace tritium::kernels
