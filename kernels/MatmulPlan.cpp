// See MatmulPlan.h.
#include "kernels/MatmulPlan.h"

#include <algorithm>
#include <bit>

namespace tritium::kernels {

namespace {
// Elements of K in `bytes` bytes of a row of the operands.
int kOf(int bytes, MatmulTypes t) { return bytes / int(dtypeBytes(t.in)); }
} // namespace

namespace {
// Two accumulators per tile hold twice the registers: halve the columns of the wide tiles (and
// of a ping-pong plan's, whose one warp group holds a whole tile).
MatmulPlan forProducts(MatmulPlan p, MatmulTypes t) {
  if (t.twoProducts && (p.blockM * p.blockN > 128 * 128 || (p.pingPong && p.blockM * p.blockN > 128 * 64)))
    p.blockN /= 2;
  if (t.twoProducts && p.persistent) // the second B tile: C's staging leaves 3 stages
    p.numStages = std::min(p.numStages, 3);
  if (t.twoProducts && p.blockM >= 64) // K steps of 128 bytes: a stage holds two B tiles
    p.blockK = std::min(p.blockK, kOf(128, t));
  return p;
}
} // namespace

namespace {
// One program per SM walking 128 x 128 tiles, a producer warp group filling the ring across
// them: 4 stages beside C's staging (forProducts: 3 with SwiGLU's second B tile).
MatmulPlan persistentPlan(MatmulTypes t) {
  MatmulPlan p{128, 128, kOf(128, t), 8, 4, true, true};
  p.persistent = true;
  return p;
}

// Two warp groups taking alternate 128 x 128 tiles from one producer warp group, 5 stages
// beside their two C staging buffers (MatmulPlan::pingPong).
MatmulPlan pingPongPlan(MatmulTypes t) {
  MatmulPlan p{128, 128, kOf(128, t), 4, 5, true, true};
  p.persistent = p.pingPong = true;
  return p;
}
} // namespace

int splitKFor(const MatmulPlan &p, int64_t M, int64_t N, int64_t K, int smCount) {
  int64_t tiles = p.tiles(M, N), steps = (K + p.blockK - 1) / p.blockK;
  int s = 1;
  while (s < 16 && tiles * s * 2 <= smCount && steps / (s * 2) >= 4)
    s *= 2;
  return s;
}

MatmulPlan planMatmul(int64_t M, int64_t N, int64_t K, int smCount, MatmulTypes t) {
  (void)K;
  if (t.twoProducts) {
    MatmulTypes one = t;
    one.twoProducts = false;
    MatmulPlan p = planMatmul(M, 2 * N, K, smCount, one);
    // Not ping-pong: a warp group's two 128 x 64 accumulators ran 19-24% below the 128 x 128
    // pair on both groups at short K (457.8 against 565.0 TFLOP/s at 8192 x 8192 x 512 on an
    // H200, 496.3 against 653.1 at 4096 x 4096 x 1024).
    if (p.pingPong)
      p = persistentPlan(one);
    // At long K, a program per tile (the plan of before the persistent wide one, not measured
    // with SwiGLU's two products).
    if (p.persistent && K > 16 * p.blockK)
      p = MatmulPlan{128, 256, kOf(128, one), 8, 4, true};
    return forProducts(p, t);
  }
  if (M <= 32) {
    MatmulPlan few{16, 64, kOf(512, t), 4, 3, false};
    if (t.canSplitK)
      few.splitK = splitKFor(few, M, N, K, smCount);
    return few;
  }
  if (t.exactFp32)
    return {128, 128, 32, 8, 3, true};
  MatmulPlan wide{128, 256, kOf(128, t), 8, 4, true};
  // Short K over many tiles: one program per SM walks its tiles, a producer warp group filling
  // the ring with the next tiles' first steps, and two warp groups take alternate tiles, so
  // that one's epilogue runs under the other's products (ping-pong). On an H200, bf16,
  // TFLOP/s: 591.8-595.2 at 8192 x 8192 x 512 against 581.7 for persistent 128 x 256 tiles on
  // both groups and 523.8-525.3 for 128 x 128 ones; 644.5-647.6 at 4096 x 4096 x 1024 against
  // 651.5-655.9 and 609.0-612.5; 655.9-661.9 against 703.4-706.4 at 4096^3, so long K keeps
  // the wide plan (docs/notes/tensor-cores.md, "Two warp groups over tiles").
  if (wide.tiles(M, N) >= 2 * smCount && K <= 16 * wide.blockK && t.outBytes <= 2)
    return pingPongPlan(t);
  // Long K over many tiles: the same walk on the wide tiles, both warp groups on each, 3 stages
  // beside C's staging; on an H200, bf16, 684.0 and 684.1 TFLOP/s at 4096^3 against 656.8 and
  // 654.3 for a program per tile with 4 stages, 670.0 and 674.4 against 668.0 and 659.1 at
  // 8192^3 (one call; docs/perf/matmul-multicast-h200-2026-11-30.txt); in another, 695.2 and
  // 699.3 against 678.1 and 681.3, and 683.2 and 684.2 against 683.4 and 697.2
  // (docs/perf/matmul-ping-pong-planner-h200-2026-11-30.txt).
  if (wide.tiles(M, N) >= 2 * smCount && t.outBytes <= 2) {
    MatmulPlan walk{128, 256, kOf(128, t), 8, 3, true, true};
    walk.persistent = true;
    return walk;
  }
  // Fewer tiles than SMs: 64 x 128 tiles, copied by a producer warp group (at 1024^3 on an
  // H200: 11.2 us, against 12.5 without it and 13.1 through pointers), each K step 256 bytes
  // of a row, which halves the steps' waits and releases (233.8-239.7 against 212.4-214.4
  // TFLOP/s at 1024^3, 437.2-451.2 against 338.5-346.8 at 1024 x 1024 x 4096). Where 128 x 256
  // tiles fill half the SMs or more and K is short, the wide tiles (2048 x 2048 x 1024, 128
  // of them: 460.4 TFLOP/s autotuned on them against 343.7 on 64 x 128 tiles).
  bool halfWave = wide.tiles(M, N) * 2 >= smCount && K <= 16 * wide.blockK;
  if (wide.tiles(M, N) < smCount && !halfWave) {
    MatmulPlan small{64, 128, kOf(256, t), 4, 4, true, true};
    // With a workspace and K of 32 steps of 128 bytes or more, K split over enough programs to fill
    // the SMs where its tiles leave most of them idle (splitKFor): on an H200, 311.4 TFLOP/s
    // split 4 ways at 512 x 512 x 16384 (the 128 x 128 tiles split 8 ways: 311.8), and where
    // its tiles fill a wave, unsplit: 433.0 at 1024 x 1024 x 4096, 495.3 at 1024 x 1024 x 8192
    // and 367.5 at 128 x 8192 x 8192 against 368.2, 471.4 and 344.8 for 128 x 128 tiles split
    // 2 ways (517.6 against 526.3 at 256 x 4096 x 14336; docs/perf/matmul-small-plans-h200-2026-11-30.txt).
    if (t.canSplitK && K >= 32 * kOf(128, t)) {
      MatmulPlan split = small;
      split.splitK = splitKFor(split, M, N, K, smCount);
      if (split.splitK > 1)
        return split;
    }
    return small;
  }
  return wide;
}

namespace {
// The autotuner's plans before the planner's joins them and duplicates go.
std::vector<MatmulPlan> candidatePlans(int64_t M, int64_t N, int64_t K, int smCount,
                                       MatmulTypes t) {
  std::vector<MatmulPlan> all;
  if (M <= 32) {
    all = {{16, 64, kOf(512, t), 4, 3, false}, {16, 64, kOf(256, t), 4, 4, false},
           {32, 64, kOf(256, t), 4, 4, false}, {16, 64, kOf(512, t), 4, 3, true}};
  } else {
    int k = kOf(128, t);
    all = {{128, 256, k, 8, 4, true},  {128, 256, k, 8, 4, false}, {256, 128, k, 8, 4, true},
           {128, 128, k, 8, 4, true},  {128, 128, k, 4, 3, false}, {64, 128, k, 4, 4, false},
           {64, 128, k, 4, 4, true},   {64, 64, k, 4, 4, false},
           // A producer warp group for the copies: 195-197 against 172 TFLOP/s for the
           // descriptor tutorial's 128 x 256 tiles at 1024^3 on an H200, 0.99 of it at 4096^3
           // (docs/notes/tensor-cores.md, "Warp specialization").
           {128, 256, k, 8, 4, true, true}, {128, 128, k, 8, 4, true, true},
           {64, 128, k, 4, 4, true, true},
           // Steps of 256 bytes of K for the one warp group's 64 x 128 tiles: half the steps'
           // waits and releases. On an H200, bf16: 233.8-239.7 against 212.4-214.4 TFLOP/s at
           // 1024^3 (cuBLAS 231.4-237.1), 437.2-451.2 against 338.5-346.8 at 1024 x 1024 x
           // 4096 (docs/notes/tensor-cores.md, "Warp specialization").
           {64, 128, 2 * k, 4, 4, true, true}};
    // Persistent, where programs walk several tiles (see planMatmul).
    if (all[0].tiles(M, N) >= 2 * smCount && t.outBytes <= 2) {
      MatmulPlan wider{128, 256, k, 8, 3, true, true}; // (C's staging leaves 3 stages)
      wider.persistent = true;
      all.push_back(wider);
      all.push_back(persistentPlan(t));
      if (!t.twoProducts) // (see planMatmul)
        all.push_back(pingPongPlan(t));
    }
  }
  for (MatmulPlan &p : all)
    p = forProducts(p, t);
  // A stream-K variant of the persistent 128 x 128 plan where its tiles fill the last wave of
  // SMs less than 90% (3072^2: 576 tiles, 4.36 waves of 132), with a workspace. (On 128 x 256
  // tiles ptxas spills: the partial product's store converts 128 accumulators a thread through
  // shared memory; SwiGLU's two accumulators likewise.)
  if (t.canSplitK && M > 32 && !t.exactFp32 && !t.twoProducts && t.outBytes <= 2) {
    MatmulPlan p = forProducts(persistentPlan(t), t);
    p.streamK = true;
    int64_t tiles = p.tiles(M, N), waves = (tiles + smCount - 1) / smCount;
    if (tiles * 10 < waves * smCount * 9)
      all.push_back(p);
  }
  // Split-K variants of the plans whose tiles leave most SMs idle: of those with the producer
  // warp group (or, for a few rows, of every one), where the autotuner's winners were at six
  // skinny shapes on an H200 (docs/perf/matmul-split-k-h200-2026-11-29.txt); fewer candidates
  // keep the search short.
  if (t.canSplitK)
    for (size_t i = 0, n = all.size(); i < n; ++i)
      if (int s = splitKFor(all[i], M, N, K, smCount);
          s > 1 && (all[i].warpSpecialize || M <= 32)) {
        MatmulPlan split = all[i];
        split.splitK = s;
        all.push_back(split);
      }
  return all;
}
} // namespace

std::vector<MatmulPlan> possibleMatmulPlans(int64_t M, int64_t N, int64_t K, int smCount,
                                            MatmulTypes t) {
  std::vector<MatmulPlan> all = candidatePlans(M, N, K, smCount, t);
  all.push_back(planMatmul(M, N, K, smCount, t));
  return all;
}

int maxSplitK(int64_t M, int64_t N, int64_t K, int smCount, MatmulTypes t) {
  int most = 1;
  for (const MatmulPlan &p : possibleMatmulPlans(M, N, K, smCount, t))
    most = std::max(most, p.splitK);
  return most;
}

std::vector<MatmulPlan> matmulCandidates(int64_t M, int64_t N, int64_t K, int smCount,
                                         MatmulTypes t, bool descriptorsUsable) {
  std::vector<MatmulPlan> all = candidatePlans(M, N, K, smCount, t);
  MatmulPlan planned = planMatmul(M, N, K, smCount, t);
  std::vector<MatmulPlan> out = {planned};
  for (const MatmulPlan &p : all)
    if (p.fields() != planned.fields() && (descriptorsUsable || !p.descriptors) &&
        std::ranges::none_of(out, [&](const MatmulPlan &q) { return q.fields() == p.fields(); }))
      out.push_back(p);
  return out;
}

std::string matmulBucket(Dtype in, Dtype out, bool bTransposed, int64_t M, int64_t N, int64_t K) {
  auto up = [](int64_t v) { return std::to_string(std::bit_ceil(uint64_t(std::max<int64_t>(v, 1)))); };
  return dtypeName(in) + "-" + dtypeName(out) + (bTransposed ? "-bNK" : "-bKN") + "-m" + up(M) +
         "-n" + up(N) + "-k" + up(K);
}

} // namespace tritium::kernels
