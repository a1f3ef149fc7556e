// Launch choices of the library's matmul: tiles, warps, the depth of the K loop's ring and
// whether the tiles are read through tensor descriptors (TMA) or pointers (the planner's
// defaults, measured on the H200 with examples/matmul; the autotuner may replace them).
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
  // Tiles through tensor descriptors (TMA copies on Hopper) where the tensors allow it; else,
  // and with false, through pointers (cp.async copies).
  bool descriptors = true;
  // With descriptors: a producer warp group issues the TMA copies (range(...).warp_specialize()).
  bool warpSpecialize = false;
  // With descriptors: one program per SM walks tiles, each with its own K loop and epilogue;
  // with warpSpecialize the producer warp group walks them too, loading the next tile's first
  // steps under this tile's epilogue. C's staging buffer then sits beside the ring: 128 x 256
  // tiles of 16-bit operands fit 3 stages.
  bool persistent = false;
  // Programs per tile, each summing a slice of the K range (split-K, for shapes with fewer
  // tiles than SMs); the slices' partial products meet in the call's workspace, and a second
  // kernel adds them and runs the epilogue. Not with `persistent`.
  int splitK = 1;
  // With persistent: stream-K. The programs (one per SM) share the tiles' K steps evenly
  // instead of taking whole tiles, so that no SM idles in a last wave that the tiles fill
  // partly; a tile split between programs meets in the call's workspace (a partial product
  // slot and a flag per program), summed in a fixed order by the program that ends it.
  bool streamK = false;
  // With descriptors: C's tile leaves through a tensor descriptor, one TMA store from shared
  // memory where C's base and ldc allow it (element stores otherwise, or with false).
  bool tmaStore = true;
  // With descriptors and warpSpecialize, 2: programs in thread-block clusters of two on
  // neighbouring row tiles, B's tile multicast to both by TMA (each program reads half of it),
  // so that B's tiles are read from L2 once per pair. Not with split-K or stream-K.
  int cluster = 1;
  // With persistent and warpSpecialize, numWarps 4: two compute warp groups, each a program
  // of its own with its own accumulator, take alternate tiles of the walk from the one
  // producer's ring ("ping-pong", CUTLASS's name), so that one group's epilogue runs while the
  // other's products do. Not with clusters or stream-K.
  bool pingPong = false;
  PlanFields fields() const {
    PlanFields f = {{"block_m", blockM}, {"block_n", blockN}, {"block_k", blockK},
                    {"warps", numWarps}, {"stages", numStages}, {"descriptors", descriptors}};
    if (warpSpecialize) // (only where set, so that the records of other plans stay as they are)
      f.emplace_back("warp_specialize", 1);
    if (persistent)
      f.emplace_back("persistent", 1);
    if (splitK > 1)
      f.emplace_back("split_k", splitK);
    if (streamK)
      f.emplace_back("stream_k", 1);
    if (!tmaStore)
      f.emplace_back("tma_store", 0);
    if (cluster > 1)
      f.emplace_back("cluster", cluster);
    if (pingPong)
      f.emplace_back("ping_pong", 1);
    return f;
  }
  int64_t tiles(int64_t M, int64_t N) const {
    return ((M + blockM - 1) / blockM) * ((N + blockN - 1) / blockN);
  }
};

// What a plan depends on besides M, N and K: the operands' bytes (a K step covers 128 bytes of
// each row: 64 16-bit elements, 128 8-bit ones, 32 fp32 ones) and whether fp32 operands take
// more than one tf32 product (tf32x3, ieee: smaller tiles, their operands take more room).
struct MatmulTypes {
  Dtype in = Dtype::bf16;
  bool exactFp32 = false;
  // Two products per tile (SwiGLU's gate and up): two accumulators, so tiles of half the
  // columns.
  bool twoProducts = false;
  // The call has a workspace: plans may split K.
  bool canSplitK = false;
  // C's element size: a persistent plan stages C's tile beside its ring, which 4-byte
  // elements leave too little room for.
  int64_t outBytes = 2;
};

// The slices of K that fill the SMs with p's tiles: the largest power of two, at most 16, whose
// programs fit in one wave and whose slices keep at least 4 K steps each; 1 where the tiles
// alone fill half the SMs.
int splitKFor(const MatmulPlan &p, int64_t M, int64_t N, int64_t K, int smCount);

// 128 x 256 x (128 bytes) tiles on two warp groups with 4 stages through descriptors; for at
// most 16 K steps over at least two such tiles a SM, 128 x 128 tiles persistent with a
// producer warp group; 64 x 128 with the producer where fewer 128 x 256 tiles than SMs would
// leave SMs idle (split K where the call has a workspace and K is long); 16 x 64 x (512 bytes)
// on 4 warps for a few rows (decode: the weights' bytes).
MatmulPlan planMatmul(int64_t M, int64_t N, int64_t K, int smCount, MatmulTypes types = {});
// What the autotuner times: the planner's plan and its neighbours (those through descriptors
// only when `descriptorsUsable`).
std::vector<MatmulPlan> matmulCandidates(int64_t M, int64_t N, int64_t K, int smCount,
                                         MatmulTypes types, bool descriptorsUsable);
// Every plan that the planner or the autotuner may take for a shape, duplicates kept (cheaper
// than matmulCandidates' comparisons): what a call's workspace must serve.
std::vector<MatmulPlan> possibleMatmulPlans(int64_t M, int64_t N, int64_t K, int smCount,
                                            MatmulTypes types);
// The most slices of K that the planner's plan or a candidate takes (1: none splits K).
int maxSplitK(int64_t M, int64_t N, int64_t K, int smCount, MatmulTypes types);
// The autotuner's shape bucket: dtypes, B's layout and M, N, K rounded up to powers of two.
std::string matmulBucket(Dtype in, Dtype out, bool bTransposed, int64_t M, int64_t N, int64_t K);

} // namespace tritium::kernels
