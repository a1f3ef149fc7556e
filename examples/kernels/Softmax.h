// The fused softmax of Triton's tutorial, written in tritium's DSL; shared by the example, the
// command-line compiler, the benchmark and the tests.
#pragma once

#include "frontend/Kernel.h"

#include <cstdint>

namespace tritium::kernels {

// softmax(out, in, in_row_stride, out_row_stride, n_rows, n_cols; BLOCK_SIZE, num_stages)
Kernel &softmaxKernel();

// The tutorial's choices for a row of n_cols elements: BLOCK_SIZE = next power of two,
// num_warps by block size, num_stages 4 when shared memory is plentiful.
struct SoftmaxConfig {
  int64_t blockSize;
  int numWarps;
  int numStages;
};
SoftmaxConfig softmaxConfig(int64_t nCols);
Specialization softmaxSpecialization(int64_t nCols, const std::string &dtype = "fp32");

} // namespace tritium::kernels
