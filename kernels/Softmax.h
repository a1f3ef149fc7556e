// The softmax kernels written in tritium's DSL, shared by the example, the command-line
// compiler, the benchmark and the tests: the fused softmax of Triton's tutorial (the row in
// registers), the online softmax for rows of any length, and the two backward kernels.
// SoftmaxPlan.h picks among them by row length.
#pragma once

#include "frontend/Kernel.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tritium::kernels {

// softmax(out, in, in_row_stride, out_row_stride, n_rows, n_cols; BLOCK_SIZE, num_stages)
inline const std::vector<std::string> kSoftmaxParams = {
    "output_ptr", "input_ptr", "input_row_stride", "output_row_stride",
    "n_rows",     "n_cols",    "BLOCK_SIZE",       "num_stages"};
Kernel &softmaxKernel();       // the row in registers: n_cols <= BLOCK_SIZE
Kernel &softmaxOnlineKernel(); // any n_cols, in blocks of BLOCK_SIZE, two passes
// A thread-block cluster per row (Specialization::clusterSize = C): n_cols <= C x BLOCK_SIZE,
// each program holds one BLOCK_SIZE slice, the row is read once.
Kernel &softmaxClusterKernel();
// Any n_cols: a cluster per row, each program streaming its slice in blocks (two passes).
Kernel &softmaxClusterOnlineKernel();
// The registers and cluster kernels with each program's next row loaded into registers before
// this row is reduced (SoftmaxPlan::prefetch): the same arguments, num_stages ignored.
Kernel &softmaxPrefetchKernel();
Kernel &softmaxClusterPrefetchKernel();
// softmax_backward(dx, o, dout, dx_row_stride, o_row_stride, dout_row_stride, n_rows, n_cols;
//                  BLOCK_SIZE, num_stages)
inline const std::vector<std::string> kSoftmaxBackwardParams = {
    "dx_ptr", "o_ptr",  "dout_ptr",   "dx_row_stride", "o_row_stride", "dout_row_stride",
    "n_rows", "n_cols", "BLOCK_SIZE", "num_stages"};
Kernel &softmaxBackwardKernel();       // the row in registers: n_cols <= BLOCK_SIZE
Kernel &softmaxBackwardOnlineKernel(); // any n_cols, two passes
Kernel &softmaxBackwardClusterKernel(); // n_cols <= C x BLOCK_SIZE, one cluster per row
Kernel &softmaxBackwardClusterOnlineKernel(); // any n_cols, a cluster per row, two passes

// The launch configuration for a row of n_cols elements: BLOCK_SIZE = next power of two (as in
// the tutorial); num_warps and num_stages as measured best on the H200 for that block size.
struct SoftmaxConfig {
  int64_t blockSize;
  int numWarps;
  int numStages;
};
SoftmaxConfig softmaxConfig(int64_t nCols);
Specialization softmaxSpecialization(int64_t nCols, const std::string &dtype = "fp32");

} // namespace tritium::kernels
