// See MatmulPlan.h.
#include "kernels/MatmulPlan.h"

#include <bit>

namespace tritium::kernels {

MatmulPlan planMatmul(int64_t M, int64_t N, int64_t K, int smCount) {
  (void)K;
  if (M <= 32)
    return {16, 64, 256, 4, 3};
  MatmulPlan wide;
  if (wide.grid(M, N) < smCount)
    return {64, 128, 64, 4, 4};
  return wide;
}

std::vector<MatmulPlan> matmulCandidates(int64_t M, int64_t N, int64_t K, int smCount) {
  if (M <= 32)
    return {{16, 64, 256, 4, 3}, {16, 64, 128, 4, 4}, {32, 64, 128, 4, 4}};
  std::vector<MatmulPlan> all = {{128, 256, 64, 8, 4}, {256, 128, 64, 8, 4},
                                 {128, 128, 64, 8, 4}, {128, 128, 64, 4, 3},
                                 {64, 128, 64, 4, 4},  {64, 64, 64, 4, 4}};
  MatmulPlan planned = planMatmul(M, N, K, smCount);
  std::vector<MatmulPlan> out = {planned};
  for (const MatmulPlan &p : all)
    if (p.fields() != planned.fields())
      out.push_back(p);
  return out;
}

std::string matmulBucket(Dtype in, Dtype out, bool bTransposed, int64_t M, int64_t N, int64_t K) {
  auto up = [](int64_t v) { return std::to_string(std::bit_ceil(uint64_t(std::max<int64_t>(v, 1)))); };
  return dtypeName(in) + "-" + dtypeName(out) + (bTransposed ? "-bNK" : "-bKN") + "-m" + up(M) +
         "-n" + up(N) + "-k" + up(K);
}

} // namespace tritium::kernels
