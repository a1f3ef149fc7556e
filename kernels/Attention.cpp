// The library's attention forward: Triton's tutorial 06 with grouped-query heads, strides for
// either memory layout, causal masking aligned bottom-right and the log-sum-exp for a backward
// pass. Scores are scaled by scale x log2(e) so that the running softmax uses exp2.
#include "kernels/Attention.h"

#include "frontend/DSL.h"
#include "frontend/Kernel.h"
#include "interpreter/Interpreter.h"
#include "kernels/Arguments.h"
#include "kernels/AttentionArguments.h"
#include "kernels/AttentionKeyRange.h"
#include "kernels/PaddedColumns.h"
#include "runtime/Device.h"

#include <cmath>
#include <optional>
#include <string>

namespace tritium::kernels {

using namespace tritium::dsl;

// One program: BM query rows of one (batch, head). GROUPS query heads share a K/V head.
// KV_DESC: K and V are dense and their tiles are read through tensor descriptors (TMA copies on
// Hopper). 1: [batch, kv_heads, seq_kv, D], one matrix of kv_rows = batch x kv_heads x seq_kv
// rows; 2: [batch, seq_kv, kv_heads, D] (FlashAttention's layout), one matrix of kv_rows =
// batch x seq_kv rows (varlen: the packed total_kv) of kv_cols = kv_heads x HD columns, a
// head's tile at column kvh x HD.
// Rows past a head's (or sequence's) end belong to the next (or lie past the tensor, read as
// zeros), and the mask of the scores keeps them out; with 2, the columns of a padded head dim
// past HD are the next head's (or zeros), which Q's zero columns cancel in the scores and
// which no store of O reads.
// VARLEN: sequences packed one after another; cu_q / cu_kv ([batch + 1] i32) give where each
// starts, seq_q is the total of the query rows (the LSE's stride) and seq_kv unused.
// SCALE_IN_EXP: qk_scale is positive, so each score's scale and shift is one fused multiply-add
// inside exp2. EVEN_KV: seq_kv is a multiple of BN (and not varlen), so no step reads past the
// keys and only causal or window steps mask their scores. Together they halved the softmax's
// instructions per score (notes/attention.md, "The softmax's instructions").
// V_T: V is stored transposed, each head's [D, seq_kv] with the keys contiguous (svs the
// stride of its rows), so that P V reads each [D, BN] tile under a trans: K-major, as fp8
// products need it, in place where the other form is transposed through shared memory every
// step. With KV_DESC its tiles come through a descriptor over all v_rows = batch x kv_heads x
// HD rows. With VARLEN, V^T and K are the forward's workspace (KV_DESC = 2: V^T [kv_heads,
// HD, svs] of v_rows = kv_heads x HD rows, K [kv_rows, kv_heads, HD]), sequence b's keys from
// column (row) 16 x (ceil(cu_kv[b] / 16) + b) and zeros after them
// (varlenTransposedValuesWidth): the 8-bit scores' product reads K's rows permuted within
// each 16 (ByteFragmentColumns.cpp), a TMA box that starts on a multiple of 16 rows.
// HD: the head dim, where D is it rounded up to a power of two (blocks' extents are): columns
// from HD on are masked off the loads of Q (and of K and V through pointers) and the store of
// O, and lie past the tensors' width for descriptors, which read them as zeros.
static void attention_fwd_kernel(Ptr o, Ptr lse, Ptr q, Ptr k, Ptr v, Ptr cu_q, Ptr cu_kv,
                                 Float qk_scale, Float o_scale, Int seq_q,
                                 Int seq_kv, Int heads, Int groups, Int sqb, Int sqh, Int sqs,
                                 Int skb, Int skh, Int sks, Int svb, Int svh, Int svs, Int sob,
                                 Int soh, Int sos, Int kv_rows, Int kv_cols, Int v_rows,
                                 Int win_left,
                                 Int win_right, Int batch, int BM,
                                 int BN, int D, int STAGES, int CAUSAL, int HAS_LSE, int KV_DESC,
                                 int WINDOW, int VARLEN, int WARP_SPECIALIZE,
                                 int PING_PONG, int SCALE_IN_EXP, int EVEN_KV, int OVERLAP,
                                 int V_T, int HD, int PERSISTENT) {
  // One (query block, batch x head) tile: the kernel's body, run once per program or, with
  // PERSISTENT, for each tile of the program's walk.
  auto tile = [&](Value pid_m, Value bh) {
    auto b = bh / heads, h = bh % heads;
    auto kvh = h / groups;
    auto rm = pid_m * BM + arange(0, BM);
    auto rd = arange(0, D);
    auto rn0 = arange(0, BN);
    auto cols = [&](Value rows_ok) { return paddedColumns(rows_ok, rd, D, HD); };
    Value seqQ = seq_q, seqKV = seq_kv, q0, kv0;
    if (VARLEN) { // this sequence's rows
      q0 = cast(load(cu_q + b), int64);
      kv0 = cast(load(cu_kv + b), int64);
      seqQ = cast(load(cu_q + b + 1), int64) - q0;
      seqKV = cast(load(cu_kv + b + 1), int64) - kv0;
    }
    // (Each form written whole, so that the fixed-length one compiles as it always has.)
    auto q_rows = VARLEN ? q + h * sqh + (q0 + rm(_, None)) * sqs + rd(None, _)
                         : q + b * sqb + h * sqh + rm(_, None) * sqs + rd(None, _);
    auto k_base = VARLEN ? k + kvh * skh + kv0 * sks : k + b * skb + kvh * skh;
    auto v_base = VARLEN ? v + kvh * svh + kv0 * svs : v + b * svb + kvh * svh;
    std::optional<TensorDescriptor> k_desc, v_desc;
    Value kv_row0, v_row0, v_col0;
    if (KV_DESC == 2) {
      // (Varlen V^T: the workspace's, whose K rows and V^T columns of sequence b start at
      // 16 x (ceil(kv0 / 16) + b): varlenTransposedValuesWidth.)
      if (VARLEN && V_T)
        kv_row0 = v_col0 = (cdiv(kv0, 16) + b) * 16;
      else
        kv_row0 = VARLEN ? kv0 : b * seq_kv;
      k_desc = make_tensor_descriptor(k, {kv_rows, kv_cols}, {sks, 1}, {BN, D});
      if (!V_T)
        v_desc = make_tensor_descriptor(v, {kv_rows, kv_cols}, {svs, 1}, {BN, D});
      else if (VARLEN) // [kv_heads x HD, width]
        v_desc = make_tensor_descriptor(v, {v_rows, svs}, {svs, 1}, {D, BN}), v_row0 = kvh * HD;
    } else if (KV_DESC) {
      k_desc = make_tensor_descriptor(k, {kv_rows, HD}, {HD, 1}, {BN, D});
      if (!V_T)
        v_desc = make_tensor_descriptor(v, {kv_rows, HD}, {HD, 1}, {BN, D});
      kv_row0 = (b * (heads / groups) + kvh) * seq_kv;
    }
    if (KV_DESC && V_T && !VARLEN) { // [batch x kv_heads x HD, seq_kv]
      v_desc = make_tensor_descriptor(v, {v_rows, seq_kv}, {seq_kv, 1}, {D, BN});
      v_row0 = (b * (heads / groups) + kvh) * HD; // (V^T's rows past HD: the next head's, unused)
    }
    // The [BN, D] tiles of K and V from key `start` (V^T's [D, BN] tile transposed).
    auto kv_desc_tile = [&](TensorDescriptor &d, Value start) {
      return KV_DESC == 2 ? d.load({kv_row0 + start, kvh * HD}) : d.load({kv_row0 + start, 0});
    };
    auto v_desc_tile = [&](Value start) {
      if (!V_T)
        return kv_desc_tile(*v_desc, start);
      return trans(v_desc->load({v_row0, VARLEN ? v_col0 + start : start}));
    };
    auto m_i = full({BM}, -INFINITY, float32);
    auto l_i = zeros({BM}, float32);
    auto acc = zeros({BM, D}, float32);
    // Causal: query row i sees keys up to i + (seq_kv - seq_q); a sliding window also bounds
    // the first step (AttentionKeyRange.h).
    auto shift = seqKV - seqQ;
    auto [lo, hi] = keysSeen(pid_m, BM, BN, seqQ, seqKV, shift, win_left, win_right, CAUSAL,
                             WINDOW, VARLEN);
    // The online softmax of one step's scores `s` (unscaled) of keys rn: updates m_i and l_i
    // and returns the probabilities and the factor that rescales the sums so far.
    auto softmax = [&](Value s, Value start, Value rn) {
      if (!SCALE_IN_EXP)
        s = s * qk_scale;
      auto mask = [&] {
        std::optional<Value> valid;
        auto both = [&](Value c) { valid = valid ? *valid & c : c; };
        if (!EVEN_KV)
          both(rn(None, _) < seqKV);
        if (CAUSAL)
          both(rn(None, _) <= rm(_, None) + shift);
        if (WINDOW)
          both((rn(None, _) >= rm(_, None) + (shift - win_left)) &
               (rn(None, _) <= rm(_, None) + (shift + win_right)));
        if (valid)
          s = where(*valid, s, -INFINITY);
      };
      // Only the steps that reach past the keys or the first row's last key mask their scores.
      maskWhereNeeded(WINDOW, CAUSAL,
                      EVEN_KV ? std::nullopt : std::optional<Value>(start + BN > seqKV),
                      start + (BN - 1) > pid_m * BM + shift, mask);
      // With a positive scale the row maximum of the raw scores, scaled, is that of the scaled
      // ones, and each score's scale and shift is one fused multiply-add.
      auto m_new = maximum(m_i, SCALE_IN_EXP ? max(s, 1) * qk_scale : max(s, 1));
      // A row that has seen no key yet keeps -inf: subtract 0 from it instead (no NaN).
      auto m_use = where(m_new == -INFINITY, 0.0, m_new);
      auto p = exp2((SCALE_IN_EXP ? s * qk_scale : s) - m_use(_, None));
      auto alpha = exp2(m_i - m_use);
      return std::tuple{p, alpha, m_new, l_i * alpha + sum(p, 1)};
    };
    if (OVERLAP) {
      // FlashAttention-3's order within a warp group: each step issues its scores' product and
      // the previous step's P V product together, then runs its softmax while the tensor cores
      // work on P V (the scores' wait leaves P V in flight: wgmma.wait_group 1). The
      // accumulator takes the previous step's rescale before P V is issued, so that nothing
      // after the softmax reads it: the product's wait has no work to be hoisted for. So the
      // loop runs one step more: the first adds no P V (P is zero; V is the first step's
      // tile), the last's scores (keys from `hi`: zeros past the tensor, or the next head's)
      // are not used.
      auto p_prev = zeros({BM, BN}, q.dtype());
      auto alpha_prev = full({BM}, 1.0, float32);
      for (auto start :
           range(lo, hi + BN, BN, STAGES).warp_specialize(WARP_SPECIALIZE).ping_pong(PING_PONG)) {
        auto q_tile = load(q_rows, cols(rm(_, None) < seqQ), 0);
        auto k_tile = kv_desc_tile(*k_desc, start);
        auto v_tile = v_desc_tile(maximum(start - BN, lo));
        auto rescaled = acc * alpha_prev(_, None); // (before the scores' product is in flight)
        auto s = dot(q_tile, trans(k_tile));
        acc = dot(p_prev, v_tile, rescaled);
        auto [p, alpha, m_new, l_new] = softmax(s, start, start + rn0);
        auto used = start < hi; // not the step past the last
        alpha_prev = alpha; // (the step past the last: unused)
        m_i = where(used, m_new, m_i);
        l_i = where(used, l_new, l_i);
        p_prev = cast(p, q.dtype());
      }
    } else {
      for (auto start :
           range(lo, hi, BN, STAGES).warp_specialize(WARP_SPECIALIZE).ping_pong(PING_PONG)) {
        // The query tile, loaded in the loop that does not change it: copied once into shared
        // memory before the loop, where both products read it in place, instead of held in
        // registers across the loop.
        auto q_tile = load(q_rows, cols(rm(_, None) < seqQ), 0);
        auto rn = start + rn0;
        Value k_tile, v_tile;
        if (KV_DESC) {
          k_tile = kv_desc_tile(*k_desc, start);
          v_tile = v_desc_tile(start);
        } else {
          k_tile = load(k_base + rn(_, None) * sks + rd(None, _), cols(rn(_, None) < seqKV), 0);
          if (V_T) { // (fixed-length: varlen V^T, the workspace's, comes with KV_DESC = 2)
            auto ok = rn(None, _) < seqKV;
            if (HD < D)
              ok = ok & (rd < HD)(_, None);
            v_tile = trans(load(v_base + rd(_, None) * svs + rn(None, _), ok, 0));
          } else {
            v_tile = load(v_base + rn(_, None) * svs + rd(None, _), cols(rn(_, None) < seqKV), 0);
          }
        }
        auto [p, alpha, m_new, l_new] = softmax(dot(q_tile, trans(k_tile)), start, rn);
        acc = dot(cast(p, q.dtype()), v_tile, acc * alpha(_, None));
        m_i = m_new;
        l_i = l_new;
      }
    }
    // Rows without any key (causal, seq_q > seq_kv) give zeros.
    auto l_safe = where(l_i == 0.0, 1.0, l_i);
    auto out = acc / l_safe(_, None);
    if (q.dtype() == "fp8e4m3") // V's descale (P was quantized as it is, in [0, 1])
      out = out * o_scale;
    auto o_rows = VARLEN ? o + h * soh + (q0 + rm(_, None)) * sos + rd(None, _)
                         : o + b * sob + h * soh + rm(_, None) * sos + rd(None, _);
    store(o_rows, cast(out, o.dtype()), cols(rm(_, None) < seqQ));
    if (HAS_LSE) { // natural log: (m + log2(l)) x ln 2, in the scaled scores' units
      auto lse_rows = VARLEN ? lse + h * seq_q + q0 + rm : lse + bh * seq_q + rm;
      store(lse_rows, (m_i + log2(l_safe)) * 0.6931471805599453, rm < seqQ);
    }
  };
  // Causal programs of the last query blocks see the most keys: they start first, so that the
  // grid's tail is made of short programs (507.7 against 492.6 TFLOP/s at 1 x 32 x 16384 x
  // 128 on an H200; docs/notes/attention.md, "Causal programs heaviest first").
  if (!PERSISTENT) {
    tile(CAUSAL ? num_programs(0) - 1 - program_id(0) : program_id(0), program_id(1));
    return;
  }
  // Persistent (fixed-length batches): each program walks tiles t = pid, pid + programs, ...,
  // a head's query blocks one after another (the last blocks first when causal), so that the
  // programs at work at once share few heads' keys and values in L2. Walked head by head
  // within each query block, every tile read its head's keys and values from DRAM again:
  // 406.8 against 496.0 TFLOP/s at 4 x 32 x 4096 x 128 on an H200 (docs/notes/attention.md,
  // "Persistent forward"). With a producer warp group the warps split before this loop, and
  // the producer loads the next tile's first keys and values while this tile's output is
  // stored. What a tile computes stays in the walk (hoist_invariants(false)): hoisted, its rows
  // and addresses took registers across the K loop, and ptxas spilled 156 bytes at head_dim
  // 128 (448 against 395 TFLOP/s at 16 x 16 x 1024 x 128 on an H200).
  auto blocks = cdiv(seq_q, BM), bhs = batch * heads;
  for (auto t :
       range(program_id(0), blocks * bhs, num_programs(0)).hoist_invariants(false)) {
    auto m = t % blocks;
    tile(CAUSAL ? blocks - 1 - m : m, t / blocks);
  }
}

Kernel &attentionForwardKernel() {
  static auto k = kernel("attention_fwd", attention_fwd_kernel,
                         {"o", "lse", "q", "k", "v", "cu_q", "cu_kv", "qk_scale", "o_scale",
                          "seq_q",
                          "seq_kv", "heads",
                          "groups", "sqb", "sqh", "sqs", "skb", "skh", "sks", "svb", "svh", "svs",
                          "sob", "soh", "sos", "kv_rows", "kv_cols", "v_rows", "win_left",
                          "win_right",
                          "batch", "BM", "BN",
                          "D", "STAGES", "CAUSAL", "HAS_LSE", "KV_DESC", "WINDOW", "VARLEN",
                          "WARP_SPECIALIZE", "PING_PONG", "SCALE_IN_EXP", "EVEN_KV", "OVERLAP",
                          "V_T", "HD", "PERSISTENT"});
  return k;
}

AttentionPlan planAttention(int64_t headDim, Dtype dtype, bool warpGroups, bool vTransposed) {
  // Without wgmma (mma.sync stages both operands of every product), 128 x 64 tiles at
  // head_dim 256 need 272 KB of shared memory on sm_90; 64 x 64 on one warp group fit.
  if (headDim > 128 && !warpGroups)
    return {.blockM = 64, .blockN = 64, .numWarps = 4, .numStages = 2};
  // 16-bit head_dim 64 on warp groups: 64 queries on one warp group, 128 keys a step, 2 stages,
  // so that two or three programs share a SM and one's softmax runs under another's products:
  // 469.2 TFLOP/s at 4 x 32 x 4096 on an H200 against 378.4 for 128 queries on two warp groups
  // with a producer, 374.3 against 286.0 at 16 x 16 x 1024 (docs/notes/attention.md, "Head
  // dim 64: programs side by side"). Without wgmma, 128 x 128 on 8 warps.
  if (headDim <= 64 && dtype != Dtype::fp8e4m3)
    return warpGroups ? AttentionPlan{.blockM = 64, .blockN = 128, .numWarps = 4, .numStages = 2}
                      : AttentionPlan{.blockM = 128, .blockN = 128, .numWarps = 8, .numStages = 2};
  // Head_dim 256: 128 queries on two warp groups. In 16 bits the [128, 256] query tile takes
  // 64 KiB of shared memory, and two stages of 64 keys the rest. fp8 with V transposed fits
  // 128 keys a step (160 KiB): 905.0 against 778.9 TFLOP/s at 4 x 32 x 4096 on an H200, 767.8-
  // 773.7 against 659.9-664.2 causal (docs/notes/attention.md, "fp8").
  if (headDim > 128) {
    if (dtype == Dtype::fp8e4m3 && vTransposed && warpGroups)
      return {.blockM = 128, .blockN = 128, .numWarps = 8, .numStages = 2};
    return {.blockM = 128, .blockN = 64, .numWarps = 8, .numStages = 2};
  }
  // 16-bit head_dim 128: 128 keys a step halve the steps' fixed costs (326 against 276
  // TFLOP/s at 4 x 32 x 4096 on an H200, docs/notes/attention.md); 2 stages leave shared
  // memory for them (3 took all 232,448 bytes and spilled when causal).
  // A producer warp group: 517.9 TFLOP/s against 503.7 without. The compute groups take
  // turns at the scores' product alone (ping-pong, FlashAttention-3's scheduler barrier), so
  // that one group's softmax runs while the other's scores are computed: 530.2-530.4 against
  // 514.0-521.6 without turns, 450.8-455.9 against 434.6-435.7 causal (docs/notes/attention.md,
  // "Turns at the scores' product").
  if (dtype != Dtype::fp8e4m3)
    return {.blockM = 128, .blockN = 128, .numWarps = 8, .numStages = 2,
            .warpSpecialize = warpGroups, .pingPong = warpGroups};
  // fp8 (docs/notes/attention.md, "fp8"; H200, 4 x 32 x 4096, TFLOP/s). Head_dim 128: 128
  // keys a step, so that P V reads 128 bytes of K a row: 560.2 with V transposed
  // (AttentionArgs::vTransposed), 234.6 with V as stored (transposed through shared memory
  // every step), against 124.8 on 64 keys; the producer warp group lost (510.3), 3 stages
  // gave the same within noise (564.0). Head_dim 64 with V transposed: 128 keys and the
  // producer, 375.0 (363.4 without it, 278.4 on 64 keys); V as stored keeps 64 keys (128
  // spilled 748 bytes).
  // With V transposed on warp groups, 64 queries on one warp group (as 16-bit head_dim 64):
  // two programs share a SM; 627.6 against 564.2 at head_dim 128, 412.9 against 377.7 at 64
  // (docs/perf/attention-one-group-h200-2026-11-30.txt). At head_dim 128, ptxas told of the
  // three programs a SM: 799.4-814.3 against 721.0-726.6 without a mask, causal within 0.3%;
  // at head_dim 64 of four (the registers' limit already): 597.2-597.4 against 575.3-575.7,
  // 517.1-521.4 against 502.6-503.6 causal (docs/notes/attention.md, "fp8").
  if (vTransposed && warpGroups)
    return {.blockM = 64, .blockN = 128, .numWarps = 4, .numStages = 2,
            .minProgramsPerSM = headDim > 64 ? 3 : 4};
  if (headDim > 64)
    return {.blockM = 128, .blockN = 128, .numWarps = 8, .numStages = 2};
  if (vTransposed)
    return {.blockM = 128, .blockN = 128, .numWarps = 8, .numStages = 2,
            .warpSpecialize = warpGroups};
  return {.blockM = 128, .blockN = 64, .numWarps = 8, .numStages = 3};
}

// How dense K and V are laid out, the forward's KV_DESC: 1 for K [batch, kv_heads, seq_kv,
// head_dim] and V so, or transposed [batch, kv_heads, head_dim, seq_kv] (no strides given, or
// the dense ones); 2 for both [batch, seq_kv, kv_heads, head_dim] (FlashAttention's layout),
// or packed [total_kv, kv_heads, head_dim] for varlen batches that give totalKV (a descriptor
// needs the rows it may read); 0 otherwise. Their tiles then come through tensor descriptors:
// TMA copies on Hopper.
static int denseKVLayout(const AttentionArgs &a) {
  int64_t h = a.kvHeads ? a.kvHeads : a.heads, s = a.seqKV ? a.seqKV : a.seqQ, d = a.headDim;
  if (a.cuSeqlensQ) // (a varlen V^T is the workspace's, with K there: always 2)
    return a.totalKV > 0 && packedStrides(a.kStrides, h, d) &&
                   (a.vTransposed || packedStrides(a.vStrides, h, d))
               ? 2
               : 0;
  bool denseV = a.vTransposed ? denseTransposedStrides(a.vStrides, h, s, d)
                              : denseStrides(a.vStrides, h, s, d);
  if (denseStrides(a.kStrides, h, s, d) && denseV)
    return 1;
  bool seqMajorV = a.vTransposed ? denseTransposedStrides(a.vStrides, h, s, d)
                                 : seqMajorStrides(a.vStrides, h, s, d);
  return seqMajorStrides(a.kStrides, h, s, d) && seqMajorV ? 2 : 0;
}
static bool denseKV(const AttentionArgs &a) { return denseKVLayout(a) != 0; }

// A sliding window limits the keys on either side (causal attention with a left limit is one).
static bool windowed(const AttentionArgs &a) { return a.windowLeft >= 0 || a.windowRight >= 0; }

AttentionPlan planAttention(const AttentionArgs &a, bool warpGroups) {
  AttentionPlan plan = planAttention(a.headDim, a.dtype, warpGroups, a.vTransposed);
  // Short sequences without masks walk their tiles persistently, each tile's first keys and
  // values loaded under the previous one's epilogue: a tile of 4-8 steps pays its start and
  // end as a larger share. On an H200, 334.6-335.0 against 314.0-315.6 TFLOP/s at 16 x 16 x
  // 512 x 128, 447.8-448.6 against 435.8-436.8 at 16 x 16 x 1024; at 2048 keys the same
  // within 1% (docs/notes/attention.md, "Persistent forward"). Causal walks are not balanced
  // yet (20% slower).
  int64_t seqKV = a.seqKV ? a.seqKV : a.seqQ;
  bool shortFixed = !windowed(a) && !a.cuSeqlensQ && seqKV <= 1024; // (no window, not varlen)
  if (plan.warpSpecialize && !a.causal && shortFixed && denseKV(a))
    plan.persistent = true;
  // Short causal sequences without the producer warp group and its turns (each program's steps
  // then share the CTA barrier): 204.5-205.2 against 192.5-192.8 TFLOP/s at 32 x 16 x 512 x
  // 128 on an H200, 298.8-299.1 against 289.4-289.5 at 16 x 16 x 1024; at 2048 keys 1-2% slower
  // (docs/notes/attention.md, "Short causal sequences").
  if (plan.warpSpecialize && plan.pingPong && a.causal && shortFixed)
    plan.warpSpecialize = plan.pingPong = false;
  return plan;
}

// The scores' scale in log2 units: softmax(s x scale) = 2^(s x scale x log2(e)) / sum.
static float log2ScoreScale(const AttentionArgs &a) {
  float scale = a.scale != 0 ? a.scale : float(1.0 / std::sqrt(double(a.headDim)));
  return scale * a.descaleQ * a.descaleK * 1.4426950408889634f;
}

Specialization attentionForwardSpecialization(const AttentionArgs &a, const AttentionPlan &plan,
                                              const std::string &arch) {
  bool scaleInExp = log2ScoreScale(a) > 0;
  int64_t seqKV = a.seqKV ? a.seqKV : a.seqQ;
  std::string t = "*" + dtypeName(a.dtype);
  bool varlen = a.cuSeqlensQ != nullptr;
  int kvLayout = denseKVLayout(a); // K and V through descriptors: TMA copies on Hopper
  bool tma = kvLayout != 0;
  // fp8 e4m3 operands write a bf16 output.
  std::string out = a.dtype == Dtype::fp8e4m3 ? "*bf16" : t;
  Specialization spec{.signature = {out, "*fp32", t, t, t, "*i32", "*i32", "fp32", "fp32", "i64",
                                    "i64",
                                    "i64", "i64",
                                    "i64", "i64", "i64", "i64", "i64", "i64", "i64", "i64", "i64",
                                    "i64", "i64", "i64", "i64", "i64", "i64", "i64", "i64",
                                    "i64"},
                      .constexprs = {plan.blockM, plan.blockN, paddedHeadDim(a.headDim),
                                     plan.numStages,
                                     a.causal && !windowed(a) ? 1 : 0, a.lse ? 1 : 0,
                                     kvLayout, windowed(a) ? 1 : 0, varlen ? 1 : 0,
                                     plan.warpSpecialize && tma ? 1 : 0,
                                     plan.pingPong && tma ? 1 : 0,
                                     scaleInExp ? 1 : 0,
                                     !varlen && seqKV % plan.blockN == 0 ? 1 : 0,
                                     plan.overlapSoftmax && tma ? 1 : 0,
                                     a.vTransposed ? 1 : 0, a.headDim,
                                     plan.persistent && !varlen ? 1 : 0},
                      .numWarps = plan.numWarps};
  if (!arch.empty())
    spec.arch = arch;
  if (plan.minProgramsPerSM > 0)
    spec.minBlocksPerSM = plan.minProgramsPerSM;
  if (a.dtype == Dtype::fp8e4m3)
    spec.ptxVersion = 84; // fp8 on mma.sync (Ada), where wgmma does not take the tiles
  return spec;
}

// The forward; `valuesInWorkspace`: a varlen call's V^T is the workspace's form (from
// attentionTransposeValues), which callers cannot pass as vTransposed themselves.
static void forward(const AttentionArgs &a, CUstream stream, const AttentionPlan *given,
                    bool valuesInWorkspace) {
  Arguments args("attentionForward");
  if (a.dtype != Dtype::fp16 && a.dtype != Dtype::bf16 && a.dtype != Dtype::fp8e4m3)
    args.fail("dtype must be fp16, bf16 or fp8e4m3, got " + dtypeName(a.dtype));
  if (a.dtype != Dtype::fp8e4m3 && (a.descaleQ != 1 || a.descaleK != 1 || a.descaleV != 1))
    args.fail("descales apply to fp8e4m3 operands only (dtype is " + dtypeName(a.dtype) + ")");
  checkHeadDim(args, a.headDim);
  args.atLeast("batch", a.batch, 1);
  int64_t kvHeads = args.kvHeads(a.heads, a.kvHeads);
  args.atLeast("seq_q", a.seqQ, 0);
  args.atLeast("window_left", a.windowLeft, -1);
  args.atLeast("window_right", a.windowRight, -1);
  int64_t seqKV = a.seqKV ? a.seqKV : a.seqQ;
  args.atLeast("seq_kv", seqKV, 0);
  int64_t D = a.headDim;
  bool varlen = checkVarlen(args, a.cuSeqlensQ, a.cuSeqlensKV, a.totalQ, a.seqQ);
  args.atLeast("totalKV", a.totalKV, 0);
  if (varlen && a.totalKV > 0 && a.totalKV < seqKV)
    args.fail("totalKV (" + std::to_string(a.totalKV) + ", the packed key rows) must be at least "
              "seq_kv (" + std::to_string(seqKV) + ", the longest sequence)");
  if (a.vTransposed && varlen && !valuesInWorkspace)
    args.fail("vTransposed takes fixed-length batches, not varlen ones (cuSeqlensQ given); "
              "varlen fp8 transposes V into the workspace (attentionForwardWorkspaceBytes)");
  AttentionStrides qs = attentionStrides(args, a.qStrides, a.heads, a.seqQ, D, varlen, "q"),
                   ks = attentionStrides(args, a.kStrides, kvHeads, seqKV, D, varlen, "k"),
                   vs = valuesInWorkspace ? a.vStrides
                        : a.vTransposed
                            ? transposedStrides(args, a.vStrides, kvHeads, seqKV, D, "v")
                            : attentionStrides(args, a.vStrides, kvHeads, seqKV, D, varlen, "v"),
                   os = attentionStrides(args, a.oStrides, a.heads, a.seqQ, D, varlen, "o");
  KernelArg o = args.pointer("o", a.o), q = args.pointer("q", a.q), k = args.pointer("k", a.k),
            v = args.pointer("v", a.v);
  KernelArg lse = a.lse ? args.pointer("lse", a.lse) : o;
  KernelArg cuQ = varlen ? args.pointer("cuSeqlensQ", a.cuSeqlensQ) : o,
            cuKV = varlen ? args.pointer("cuSeqlensKV", a.cuSeqlensKV) : o;
  if (a.batch * a.heads > 65535)
    args.fail("batch x heads must be at most 65535, got " + std::to_string(a.batch * a.heads));
  int64_t need = a.workspace ? attentionForwardWorkspaceBytes(a) : 0;
  if (need > a.workspaceBytes)
    args.fail("workspace holds " + std::to_string(a.workspaceBytes) + " bytes, " +
              std::to_string(need) + " needed (attentionForwardWorkspaceBytes)");
  if (a.seqQ == 0)
    return;
  // fp8 with V as stored: transposed once into the workspace, then read in place.
  if (need > 0 && seqKV > 0) {
    attentionTransposeValues(a.workspace, a, stream);
    AttentionArgs t = a;
    t.v = a.workspace;
    t.vStrides = {};
    if (varlen) { // V^T, then K (AttentionArguments.h)
      int64_t width = varlenTransposedValuesWidth(a.batch, seqKV);
      t.vStrides = {0, D * width, width};
      t.k = static_cast<char *>(a.workspace) + kvHeads * D * width;
      varlenAlignKeys(const_cast<void *>(t.k), a, stream);
      t.kStrides = {0, D, kvHeads * D};
      t.totalKV = width;
    }
    t.vTransposed = true;
    t.workspace = nullptr;
    forward(t, stream, given, varlen);
    return;
  }
  bool gpu = !tritium::interpreting();
  // Hopper's wgmma needs the architecture-specific target (its code runs on sm_90 only).
  std::string arch = gpu && rt::Context::current().props().arch() == "sm_90" ? "sm_90a" : "";
  AttentionPlan plan = given ? *given : planAttention(a, arch == "sm_90a");
  args.planBlock(plan.blockM);
  args.planBlock(plan.blockN);
  WindowReach window = windowReach(a.windowLeft, a.windowRight, a.causal, a.seqQ + seqKV);
  // The rows of K and V's descriptors (KV_DESC): per head, or per position with every head's
  // columns, or the packed rows of a varlen batch.
  int64_t kvRows = varlen                     ? a.totalKV
                   : denseKVLayout(a) == 2 ? a.batch * seqKV
                                           : a.batch * kvHeads * seqKV;
  std::initializer_list<KernelArg> launchArgs = {
      o,       lse,      q,        k,        v,        cuQ,      cuKV,
      log2ScoreScale(a), a.descaleV,
      varlen ? a.totalQ : a.seqQ,
      seqKV,    a.heads,  a.heads / kvHeads, qs.batch, qs.head, qs.seq, ks.batch,
      ks.head, ks.seq,   vs.batch, vs.head,  vs.seq,   os.batch, os.head, os.seq,
      kvRows, kvHeads * D,
      varlen ? kvHeads * D : a.batch * kvHeads * D, window.left, window.right, a.batch};
  int64_t blocks = (a.seqQ + plan.blockM - 1) / plan.blockM;
  CompiledKernel &c = attentionForwardKernel().compile(
      attentionForwardSpecialization(a, plan, arch).specializedFor(launchArgs));
  if (plan.persistent && !varlen) // as many programs as fit the SMs at once, at most a tile each
    c.launch(Grid3{c.persistentGrid(blocks * a.batch * a.heads), 1, 1}, stream, launchArgs);
  else
    c.launch(Grid3{blocks, a.batch * a.heads, 1}, stream, launchArgs);
}

void attentionForward(const AttentionArgs &a, CUstream stream, const AttentionPlan *given) {
  forward(a, stream, given, false);
}

} // namespace tritium::kernels
