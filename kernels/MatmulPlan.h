// Launch choices of the library's matmul: tiles, warps and the depth of the cp.async ring (the
// planner's defaults, measured on the H200 with examples/matmul; the autotuner may replace
// them).
#pragma once

#include "kernels/Autotuner.h"
#include "kernels/Dtype.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tritium::kernels {

struct MatmulPlan {
  int blockM = 128, blockN = 256, blockK = 64;
  int numWarps = 8;
  int numStages = 4;
  PlanFields fields() const {
    return {{"block_m", blockM}, {"block_n", blockN}, {"block_k", blockK},
            {"warps", numWarps}, {"stages", numStages}};
  }
  int64_t grid(int64_t M, int64_t N) const {
    return ((M + blockM - 1) / blockM) * ((N + blockN - 1) / blockN);
  }
};

// 128 x 256 x 64 tiles on two warp groups with 4 stages (0.91-0.93 of cuBLAS at 4096^3 and
// 8192^3 bf16 on the H200); 64 x 128 x 64 on 4 warps where fewer 128 x 256 tiles than SMs
// would leave SMs idle; 16 x 64 x 256 on 4 warps for a few rows (decode: the weights' bytes).
MatmulPlan planMatmul(int64_t M, int64_t N, int64_t K, int smCount);
// What the autotuner times: the planner's plan and its neighbours.
std::vector<MatmulPlan> matmulCandidates(int64_t M, int64_t N, int64_t K, int smCount);
// The autotuner's shape bucket: dtypes, B's layout and M, N, K rounded up to powers of two.
std::string matmulBucket(Dtype in, Dtype out, bool bTransposed, int64_t M, int64_t N, int64_t K);

} // namespace tritium::kernels
