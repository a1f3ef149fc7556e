// See AttentionBackward.h. With the scores s = scale q k^T and P = exp(s - lse) (the forward's
// softmax, recomputed from its log-sum-exp), the gradients are dV = P^T dO, dP = dO V^T,
// dS = P (dP - delta) with delta = rowsum(dO O), dQ = scale dS K and dK = scale dS^T Q.
// Scores are taken in base 2 (scale x log2 e) so that P is one exp2.
#include "kernels/AttentionBackward.h"

#include "frontend/DSL.h"
#include "frontend/Kernel.h"
#include "interpreter/Interpreter.h"
#include "kernels/Arguments.h"
#include "kernels/AttentionArguments.h"
#include "kernels/AttentionKeyRange.h"
#include "kernels/PaddedColumns.h"
#include "runtime/Device.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace tritium::kernels {

using namespace tritium::dsl;

namespace {

constexpr double kLog2e = 1.4426950408889634;

// delta[r] = sum_d dO[r, d] O[r, d] over the rows r = (b x heads + h) x seq_q + s of every
// (batch, head); O and dO share their strides.
void attention_bwd_delta(Ptr delta, Ptr o, Ptr dout, Int rows, Int heads, Int seq_q, Int sob,
                         Int soh, Int sos, int BM, int D, int HD) {
  auto r = cast(program_id(0), int64) * BM + arange(0, BM);
  auto d = arange(0, D);
  auto in = paddedColumns(r(_, None) < rows, d, D, HD);
  auto s = r % seq_q, bh = r / seq_q;
  auto at = (bh / heads * sob + bh % heads * soh + s * sos)(_, None) + d(None, _);
  auto x = cast(load(o + at, in, 0), float32) * cast(load(dout + at, in, 0), float32);
  store(delta + r, sum(x, 1), r < rows);
}

// Whether query rows rm (1-D) see keys rn (1-D), as a [rows of `rowsFirst` ? rm : rn, ...]
// mask: keys past seq_kv and queries past seq_q never; CAUSAL: key j <= i + shift; WINDOW:
// i + shift - win_left <= j <= i + shift + win_right.
Value visible(Value rm, Value rn, bool rowsFirst, Value seq_q, Value seq_kv, Value shift,
              Value win_left, Value win_right, int CAUSAL, int WINDOW) {
  Value i = rowsFirst ? rm(_, None) : rm(None, _);
  Value j = rowsFirst ? rn(None, _) : rn(_, None);
  Value valid = (i < seq_q) & (j < seq_kv);
  if (CAUSAL)
    valid = valid & (j <= i + shift);
  if (WINDOW)
    valid = valid & (j >= i + (shift - win_left)) & (j <= i + (shift + win_right));
  return valid;
}

// Sequence b's lengths and, for VARLEN batches (cu_q / cu_kv, [batch + 1] i32, where each
// packed sequence starts), its first query and key rows; else the batch's lengths.
struct Sequence {
  Value seqQ, seqKV, q0, kv0;
};
Sequence sequenceOf(Ptr cu_q, Ptr cu_kv, Value b, Value seq_q, Value seq_kv, int VARLEN) {
  if (!VARLEN)
    return {seq_q, seq_kv, Value(), Value()};
  Sequence s;
  s.q0 = cast(load(cu_q + b), int64);
  s.kv0 = cast(load(cu_kv + b), int64);
  s.seqQ = cast(load(cu_q + b + 1), int64) - s.q0;
  s.seqKV = cast(load(cu_kv + b + 1), int64) - s.kv0;
  return s;
}

// The element offsets of rows r (1-D) of head h, batch b, in a tensor of strides (sb, sh, ss)
// with head_dim columns rd: [rows, head_dim]; VARLEN rows count from the sequence's `first`.
Value rowsAt(Value b, Value h, Value r, Value first, Value sb, Value sh, Value ss, Value rd,
             int VARLEN) {
  return VARLEN ? h * sh + (first + r(_, None)) * ss + rd(None, _)
                : b * sb + h * sh + r(_, None) * ss + rd(None, _);
}

// One program: BN keys of one (batch, K/V head); every query block of every query head of
// its group. The scores are computed transposed (keys x queries), so that dV and dK are
// products of the tiles as they are. dK and dV are laid out as K and V, dO as O.
// VARLEN: sequences packed one after another, cu_q / cu_kv ([batch + 1] i32) give where each
// starts; seq_q is the total of the query rows (the LSE's and delta's stride). PART: 0 both
// gradients, 1 dV alone, 2 dK alone (head_dim 256: two [BN, 256] fp32 accumulators are 256
// registers a thread on one warp group). BLOCK_STORE (AttentionBackwardPlan::blockStore): K
// and V (so dK and dV) are dense and seq_kv is a multiple of BN, so that each program's dK and
// dV rows are one [BN, D] tile of the [kv_rows, D] matrix, stored through tensor descriptors
// (a TMA store on Hopper): no per-element addresses live across the loop (316 -> 188 bytes of
// spills in dK/dV at head_dim 128 on sm_90a, 44 -> 0 in dK at 256) or weigh on the compile.
void attention_bwd_dkdv(Ptr dk, Ptr dv, Ptr q, Ptr k, Ptr v, Ptr dout, Ptr lse, Ptr delta,
                        Ptr cu_q, Ptr cu_kv, Float qk_scale, Float scale, Int seq_q, Int seq_kv,
                        Int heads, Int groups, Int sqb, Int sqh, Int sqs, Int skb, Int skh,
                        Int sks, Int svb, Int svh, Int svs, Int sob, Int soh, Int sos,
                        Int q_rows, Int kv_rows, Int q_cols, Int kv_cols, Int win_left,
                        Int win_right, int BM, int BN, int D, int STAGES, int CAUSAL,
                        int WINDOW, int VARLEN, int DESC, int WS, int PART, int BLOCK_STORE,
                        int HD) {
  const bool wantDV = PART != 2, wantDK = PART != 1;
  auto pid_n = program_id(0), bkh = program_id(1);
  auto kv_heads = heads / groups;
  auto b = bkh / kv_heads, kvh = bkh % kv_heads;
  auto rn = pid_n * BN + arange(0, BN);
  auto rd = arange(0, D), rm0 = arange(0, BM);
  auto [seqQ, seqKV, q0, kv0] = sequenceOf(cu_q, cu_kv, b, seq_q, seq_kv, VARLEN);
  auto k_at = rowsAt(b, kvh, rn, kv0, skb, skh, sks, rd, VARLEN);
  auto v_at = rowsAt(b, kvh, rn, kv0, svb, svh, svs, rd, VARLEN);
  auto in_kv = paddedColumns(rn(_, None) < seqKV, rd, D, HD);
  Value dk_acc = wantDK ? zeros({BN, D}, float32) : Value();
  Value dv_acc = wantDV ? zeros({BN, D}, float32) : Value();
  auto shift = seqKV - seqQ;
  // The queries that see a key of this block: causal, from the block's first key on; a
  // window, from its first key's leftmost viewer to its last key's rightmost.
  Operand lo = 0;
  Value hi = seqQ;
  if (CAUSAL)
    lo = maximum(pid_n * BN - shift, 0) / BM * BM;
  if (WINDOW) {
    lo = maximum(pid_n * BN - shift - win_right, 0) / BM * BM;
    hi = maximum(minimum(seqQ, (pid_n + 1) * BN - shift + win_left), 0);
  }
  if (VARLEN) // programs past a shorter sequence's keys walk no queries
    hi = where(pid_n * BN < seqKV, hi, 0);
  // DESC: Q and dO are dense, their tiles read through tensor descriptors over all q_rows rows
  // (TMA copies on Hopper, no per-thread addresses): 1, [batch, heads, seq_q, D]; 2, [batch,
  // seq_q, heads, D], rows of q_cols = heads x HD columns, a head's tile at column h x HD (as
  // the forward's KV_DESC); VARLEN batches' packed [total_q, heads, D] so too, a sequence's
  // rows from q0. Rows past a head's (or sequence's) end belong to the next (or lie
  // past the tensor, read as zeros), and the mask keeps them out of P^T and so of both
  // products. BLOCK_STORE takes K's layout the same way (dK and dV are laid out as K and V).
  std::optional<TensorDescriptor> q_desc, do_desc, lse_desc, delta_desc;
  if (DESC == 2) {
    q_desc = make_tensor_descriptor(q, {q_rows, q_cols}, {sqs, 1}, {BM, D});
    do_desc = make_tensor_descriptor(dout, {q_rows, q_cols}, {sos, 1}, {BM, D});
  } else if (DESC) {
    q_desc = make_tensor_descriptor(q, {q_rows, HD}, {HD, 1}, {BM, D});
    do_desc = make_tensor_descriptor(dout, {q_rows, HD}, {HD, 1}, {BM, D});
  }
  // One step: the queries [start, start + BM) of query head h (bh: its batch and head).
  auto step = [&](Value h, Value bh, Value start) {
    // K and V, loaded in the loop that does not change them: copied once into shared
    // memory, where the products read them, instead of held in registers across the loop.
    auto k_tile = load(k + k_at, in_kv, 0);
    Value v_tile = wantDK ? load(v + v_at, in_kv, 0) : Value();
    auto rm = start + rm0;
    auto in_q = paddedColumns(rm(_, None) < seqQ, rd, D, HD);
    auto q_at = rowsAt(b, h, rm, q0, sqb, sqh, sqs, rd, VARLEN);
    auto do_at = rowsAt(b, h, rm, q0, sob, soh, sos, rd, VARLEN);
    Value q_tile, do_tile;
    if (DESC == 2) {
      Value first = VARLEN ? Value(q0 + start) : Value(b * seq_q + start);
      q_tile = q_desc->load({first, h * HD});
      do_tile = do_desc->load({first, h * HD});
    } else if (DESC) {
      q_tile = q_desc->load({bh * seq_q + start, 0});
      do_tile = do_desc->load({bh * seq_q + start, 0});
    } else {
      q_tile = load(q + q_at, in_q, 0);
      do_tile = load(dout + do_at, in_q, 0);
    }
    auto row = VARLEN ? h * seq_q + q0 + rm : bh * seq_q + rm;
    // The LSE and delta of the step's queries: [BM], or with WS rows [1, BM] already.
    Value l, dl;
    if (WS) {
      Value first = VARLEN ? Value(h * seq_q + q0 + start) : Value(bh * seq_q + start);
      l = lse_desc->load({0, first});
      if (wantDK)
        dl = delta_desc->load({0, first});
    } else {
      l = load(lse + row, rm < seqQ, 0);
      if (wantDK)
        dl = load(delta + row, rm < seqQ, 0);
    }
    auto asRow = [&](Value x) { return WS ? x : x(None, _); }; // against the scores' columns
    // The scores transposed (keys x queries): P^T and dS^T are then in the accumulator's
    // layout, which the dV and dK products take from registers.
    auto st = dot(k_tile, trans(q_tile)) * qk_scale; // [BN, BM]
    // A row that saw no key has lse -inf: its probabilities are the mask's zeros.
    auto pt = exp2(st - asRow(l * kLog2e));
    maskWhereNeeded(WINDOW, CAUSAL, (start + BM > seqQ) | (pid_n * BN + BN > seqKV),
                    pid_n * BN + (BN - 1) > start + shift, [&] {
                      pt = where(visible(rm, rn, false, seqQ, seqKV, shift, win_left,
                                         win_right, CAUSAL, WINDOW),
                                 pt, 0.0);
                    });
    if (wantDV)
      dv_acc = dot(cast(pt, q.dtype()), do_tile, dv_acc);
    if (wantDK) {
      auto dpt = dot(v_tile, trans(do_tile)); // [BN, BM]
      auto dst = pt * (dpt - asRow(dl));
      dk_acc = dot(cast(dst, q.dtype()), q_tile, dk_acc);
    }
  };
  if (WS) {
    // WS (with DESC): the group's query heads and their query blocks walked by one loop at the
    // kernel's top level, whose Q and dO tiles a producer warp group copies. The LSE and
    // delta are [1, BM] rows of descriptors over [1, batch x heads x seq_q]; their row stride
    // is computed here, so they load element by element, not as TMA copies
    // (notes/attention.md).
    Value steps = maximum(cdiv(hi - lo, BM), 0);
    Value rows = DESC == 2 ? q_rows * cast(heads, int64) : Value(q_rows); // (2: [batch x seq_q])
    Value padded = (rows + 3) / 4 * 4; // a row stride on 16 bytes; the one row never uses it
    lse_desc = make_tensor_descriptor(lse, {1, rows}, {padded, 1}, {1, BM});
    delta_desc = make_tensor_descriptor(delta, {1, rows}, {padded, 1}, {1, BM});
    for (auto it : range(0, groups * steps, 1, STAGES).warp_specialize()) {
      auto h = kvh * groups + it / steps;
      step(h, cast(b * heads + h, int64), lo + it % steps * BM);
    }
  } else {
    for (auto g : range(0, groups)) {
      auto h = kvh * groups + g;
      auto bh = cast(b * heads + h, int64);
      for (auto start : range(lo, hi, BM, STAGES))
        step(h, bh, start);
    }
  }
  if (BLOCK_STORE == 2) { // [batch x seq_kv, kv_heads x HD]
    Value row0 = b * seq_kv + pid_n * BN;
    if (wantDK)
      make_tensor_descriptor(dk, {kv_rows, kv_cols}, {sks, 1}, {BN, D})
          .store({row0, kvh * HD}, cast(dk_acc * scale, dk.dtype()));
    if (wantDV)
      make_tensor_descriptor(dv, {kv_rows, kv_cols}, {svs, 1}, {BN, D})
          .store({row0, kvh * HD}, cast(dv_acc, dv.dtype()));
    return;
  }
  if (BLOCK_STORE) {
    Value row0 = (b * kv_heads + kvh) * seq_kv + pid_n * BN;
    if (wantDK)
      make_tensor_descriptor(dk, {kv_rows, HD}, {HD, 1}, {BN, D})
          .store({row0, 0}, cast(dk_acc * scale, dk.dtype()));
    if (wantDV)
      make_tensor_descriptor(dv, {kv_rows, HD}, {HD, 1}, {BN, D})
          .store({row0, 0}, cast(dv_acc, dv.dtype()));
    return;
  }
  if (wantDK)
    store(dk + k_at, cast(dk_acc * scale, dk.dtype()), in_kv);
  if (wantDV)
    store(dv + v_at, cast(dv_acc, dv.dtype()), in_kv);
}

// One program: BM queries of one (batch, head), every key block they see. dQ is laid out as Q.
// VARLEN as attention_bwd_dkdv's.
void attention_bwd_dq(Ptr dq, Ptr q, Ptr k, Ptr v, Ptr dout, Ptr lse, Ptr delta, Ptr cu_q,
                      Ptr cu_kv, Float qk_scale, Float scale, Int seq_q, Int seq_kv, Int heads,
                      Int groups, Int sqb, Int sqh, Int sqs, Int skb, Int skh, Int sks, Int svb,
                      Int svh, Int svs, Int sob, Int soh, Int sos, Int q_rows, Int kv_rows,
                      Int q_cols, Int kv_cols, Int win_left, Int win_right, int BM, int BN, int D,
                      int STAGES, int CAUSAL, int WINDOW, int VARLEN, int DESC, int WS, int HD) {
  auto pid_m = program_id(0), bh = program_id(1);
  auto b = bh / heads, h = bh % heads;
  auto kvh = h / groups;
  auto rm = pid_m * BM + arange(0, BM);
  auto rd = arange(0, D), rn0 = arange(0, BN);
  auto [seqQ, seqKV, q0, kv0] = sequenceOf(cu_q, cu_kv, b, seq_q, seq_kv, VARLEN);
  auto in_q = paddedColumns(rm(_, None) < seqQ, rd, D, HD);
  auto q_at = rowsAt(b, h, rm, q0, sqb, sqh, sqs, rd, VARLEN);
  auto do_at = rowsAt(b, h, rm, q0, sob, soh, sos, rd, VARLEN);
  auto row = VARLEN ? h * seq_q + q0 + rm : cast(bh, int64) * seq_q + rm;
  auto l = load(lse + row, rm < seqQ, 0);
  auto dl = load(delta + row, rm < seqQ, 0);
  auto dq_acc = zeros({BM, D}, float32);
  auto shift = seqKV - seqQ;
  // The keys this block's queries see, as the forward walks them.
  auto [lo, hi] = keysSeen(pid_m, BM, BN, seqQ, seqKV, shift, win_left, win_right, CAUSAL,
                           WINDOW, VARLEN);
  // DESC: K and V dense, read through tensor descriptors over all kv_rows rows, as
  // attention_bwd_dkdv's Q and dO (2: rows of kv_cols = kv_heads x HD columns; VARLEN: packed,
  // a sequence's keys from row kv0).
  std::optional<TensorDescriptor> k_desc, v_desc;
  Value kv_row0;
  if (DESC == 2) {
    k_desc = make_tensor_descriptor(k, {kv_rows, kv_cols}, {sks, 1}, {BN, D});
    v_desc = make_tensor_descriptor(v, {kv_rows, kv_cols}, {svs, 1}, {BN, D});
    kv_row0 = VARLEN ? cast(kv0, int64) : cast(b, int64) * seq_kv;
  } else if (DESC) {
    k_desc = make_tensor_descriptor(k, {kv_rows, HD}, {HD, 1}, {BN, D});
    v_desc = make_tensor_descriptor(v, {kv_rows, HD}, {HD, 1}, {BN, D});
    kv_row0 = cast(b * (heads / groups) + kvh, int64) * seq_kv;
  }
  // WS (with DESC): a producer warp group copies the K and V tiles.
  for (auto start : range(lo, hi, BN, STAGES).warp_specialize(WS != 0)) {
    // Q and dO, loaded in the loop that does not change them: read in place from shared
    // memory by the products.
    auto q_tile = load(q + q_at, in_q, 0);
    auto do_tile = load(dout + do_at, in_q, 0);
    auto rn = start + rn0;
    auto in_kv = paddedColumns(rn(_, None) < seqKV, rd, D, HD);
    auto k_at = rowsAt(b, kvh, rn, kv0, skb, skh, sks, rd, VARLEN);
    auto v_at = rowsAt(b, kvh, rn, kv0, svb, svh, svs, rd, VARLEN);
    Value k_tile, v_tile;
    if (DESC == 2) { // (a head's columns)
      k_tile = k_desc->load({kv_row0 + start, kvh * HD});
      v_tile = v_desc->load({kv_row0 + start, kvh * HD});
    } else if (DESC) {
      k_tile = k_desc->load({kv_row0 + start, 0});
      v_tile = v_desc->load({kv_row0 + start, 0});
    } else {
      k_tile = load(k + k_at, in_kv, 0);
      v_tile = load(v + v_at, in_kv, 0);
    }
    auto s = dot(q_tile, trans(k_tile)) * qk_scale; // [BM, BN]
    auto p = exp2(s - (l * kLog2e)(_, None));
    maskWhereNeeded(WINDOW, CAUSAL, (start + BN > seqKV) | (pid_m * BM + BM > seqQ),
                    start + (BN - 1) > pid_m * BM + shift, [&] {
                      p = where(visible(rm, rn, true, seqQ, seqKV, shift, win_left, win_right,
                                        CAUSAL, WINDOW),
                                p, 0.0);
                    });
    auto dp = dot(do_tile, trans(v_tile)); // [BM, BN]
    auto ds = p * (dp - dl(_, None));
    dq_acc = dot(cast(ds, q.dtype()), k_tile, dq_acc);
  }
  store(dq + q_at, cast(dq_acc * scale, dq.dtype()), in_q);
}

Kernel &deltaKernel() {
  static auto k = kernel("attention_bwd_delta", attention_bwd_delta,
                         {"delta", "o", "dout", "rows", "heads", "seq_q", "sob", "soh", "sos",
                          "BM", "D", "HD"});
  return k;
}
} // namespace

Kernel &attentionBackwardDkDvKernel() {
  static auto k = kernel("attention_bwd_dkdv", attention_bwd_dkdv,
                         {"dk", "dv", "q", "k", "v", "dout", "lse", "delta", "cu_q", "cu_kv",
                          "qk_scale", "scale", "seq_q", "seq_kv", "heads", "groups", "sqb", "sqh",
                          "sqs", "skb", "skh", "sks", "svb", "svh", "svs", "sob", "soh", "sos",
                          "q_rows", "kv_rows", "q_cols", "kv_cols", "win_left", "win_right", "BM",
                          "BN", "D", "STAGES",
                          "CAUSAL", "WINDOW", "VARLEN", "DESC", "WS", "PART", "BLOCK_STORE", "HD"});
  return k;
}
Kernel &attentionBackwardDqKernel() {
  static auto k = kernel("attention_bwd_dq", attention_bwd_dq,
                         {"dq", "q", "k", "v", "dout", "lse", "delta", "cu_q", "cu_kv",
                          "qk_scale", "scale", "seq_q", "seq_kv", "heads", "groups", "sqb", "sqh",
                          "sqs", "skb", "skh", "sks", "svb", "svh", "svs", "sob", "soh", "sos",
                          "q_rows", "kv_rows", "q_cols", "kv_cols", "win_left", "win_right", "BM",
                          "BN", "D", "STAGES",
                          "CAUSAL", "WINDOW", "VARLEN", "DESC", "WS", "HD"});
  return k;
}

// The plan of dQ's kernel: dK/dV's with dQ's own rows, step and warps where given.
static AttentionBackwardPlan dqPlanOf(AttentionBackwardPlan p) {
  p.ownRows = p.dqOwnRows ? p.dqOwnRows : p.ownRows;
  p.stepRows = p.dqStepRows ? p.dqStepRows : p.stepRows;
  p.numWarps = p.dqNumWarps ? p.dqNumWarps : p.numWarps;
  return p;
}

// With the scores transposed in dK/dV, P^T and dS^T feed their products from registers.
// At head_dim 64 and 128, 64 own rows on one warp group and 64 rows a step: at 128 the kernels
// compile to 255 registers and 99 KB of shared memory, so two programs share a SM, 396.8-399.0
// TFLOP/s against 367.6 for 128 own rows on two warp groups (4 x 32 x 4096 bf16, H200,
// docs/notes/attention.md, "Backward").
// At head_dim 256, dK and dV take two programs of 64 keys on one warp group, each with one
// [64, 256] fp32 accumulator (128 registers a thread), and dQ 64 queries on one: ptxas for
// sm_90a spills none of the three kernels but 12 bytes. A producer warp group copies their
// walked tiles: 321.6 TFLOP/s against 301.7 without (4 x 32 x 4096, H200; 235.1 on 32 rows a
// step; docs/notes/attention.md, "Head dim 256"). Where the keys allow it, dK and dV leave as
// whole tiles (blockStore): 324.7-327.0 against 318.1-320.4, and no spills in dK; at head_dim
// 64 and 128 it measured 0-2% slower and stays off.
AttentionBackwardPlan planAttentionBackward(int64_t headDim) {
  if (headDim > 128)
    return AttentionBackwardPlan{.ownRows = 64,
                                 .stepRows = 64,
                                 .numWarps = 4,
                                 .numStages = 2,
                                 .splitDkDv = true,
                                 .warpSpecialize = true,
                                 .blockStore = true};
  // dQ's kernel at head_dim 128 (and the padded 96): 128 queries on two warp groups, 128 keys a
  // step, where dK/dV keeps 64 x 64 on one: 413.6 TFLOP/s against 400.6-403.0 at 4 x 32 x 4096
  // on an H200 (403.1-407.0 in a second call: 0-3%), 371.7 against 368.2 causal; at head_dim 64
  // it lost (317.1 against 339.4) (docs/notes/attention.md, "dQ's own plan").
  if (headDim > 64)
    return AttentionBackwardPlan{.ownRows = 64, .stepRows = 64, .numWarps = 4, .numStages = 2,
                                 .dqOwnRows = 128, .dqStepRows = 128, .dqNumWarps = 8};
  return AttentionBackwardPlan{.ownRows = 64, .stepRows = 64, .numWarps = 4, .numStages = 2};
}

// How two tensors of `heads` heads and `seq` positions (Q and O, or K and V) are laid out, as
// the kernels' DESC: 1, both dense [batch, heads, seq, head_dim], which tensor descriptors read
// as one [rows, head_dim] matrix; 2, both dense [batch, seq, heads, head_dim], one [batch x
// seq, heads x head_dim] matrix whose head_dim columns of a head make its tiles; else 0.
static int denseLayout(const AttentionStrides &x, const AttentionStrides &y, int64_t heads,
                       int64_t seq, int64_t d) {
  if (denseStrides(x, heads, seq, d) && denseStrides(y, heads, seq, d))
    return 1;
  return seqMajorStrides(x, heads, seq, d) && seqMajorStrides(y, heads, seq, d) ? 2 : 0;
}
static int qoLayout(const AttentionBackwardArgs &a) {
  return denseLayout(a.qStrides, a.oStrides, a.heads, a.seqQ, a.headDim);
}
static int kvLayout(const AttentionBackwardArgs &a) {
  int64_t kvHeads = a.kvHeads ? a.kvHeads : a.heads, seqKV = a.seqKV ? a.seqKV : a.seqQ;
  return denseLayout(a.kStrides, a.vStrides, kvHeads, seqKV, a.headDim);
}

// The layout in which a kernel reads the tiles it walks through descriptors (Q and dO for
// dK/dV, K and V for dQ; dO as O), or 0: pointers. `plan`: the kernel's.
static int backwardDescriptors(const AttentionBackwardArgs &a, bool dkdv,
                               const AttentionBackwardPlan &plan) {
  int64_t seqKV = a.seqKV ? a.seqKV : a.seqQ;
  if (a.seqQ == 0 || seqKV == 0)
    return 0;
  // Varlen batches: dK/dV's Q and dO packed [total_q, heads, head_dim], one [total_q, heads x
  // head_dim] matrix of totalQ rows; dQ's K and V so where the call gives their total. Not
  // dV's and dK's split kernels (head_dim 256), whose form with descriptors (and a producer)
  // ran 216.7-217.2 TFLOP/s against 246.4-247.9 through pointers at 4 x 32 x (3075, 5117) on
  // an H200 (docs/notes/attention.md, "Layouts through descriptors").
  if (a.cuSeqlensQ) {
    int64_t kvHeads = a.kvHeads ? a.kvHeads : a.heads;
    bool packed = dkdv ? !plan.splitDkDv && packedStrides(a.qStrides, a.heads, a.headDim) &&
                             packedStrides(a.oStrides, a.heads, a.headDim)
                       : a.totalKV > 0 && packedStrides(a.kStrides, kvHeads, a.headDim) &&
                             packedStrides(a.vStrides, kvHeads, a.headDim);
    return packed ? 2 : 0;
  }
  return dkdv ? qoLayout(a) : kvLayout(a);
}

// The layout (as backwardDescriptors') in which each dK/dV program's rows of K and V (so of dK
// and dV) are one [ownRows, head_dim] tile of their dense matrix, none of them the next
// head's or sequence's (BLOCK_STORE), or 0. [batch, seq, heads, head_dim] tiles of a padded
// head dim (96 as 128) would reach into the next head's columns, so those store through
// pointers.
static int wholeKeyBlocks(const AttentionBackwardArgs &a, int ownRows) {
  int64_t seqKV = a.seqKV ? a.seqKV : a.seqQ;
  int layout = !a.cuSeqlensQ && seqKV > 0 && seqKV % ownRows == 0 ? kvLayout(a) : 0;
  return layout == 2 && paddedHeadDim(a.headDim) != a.headDim ? 0 : layout;
}

Specialization attentionBackwardSpecialization(const AttentionBackwardArgs &a, bool dkdv,
                                               const AttentionBackwardPlan &given,
                                               const std::string &arch, BackwardPart part) {
  const AttentionBackwardPlan plan = dkdv ? given : dqPlanOf(given);
  std::string t = "*" + dtypeName(a.dtype);
  // Lengths and head counts in 32 bits (the masks compare them with the tiles' rows); the
  // offsets are computed in 64.
  // Strides in 64 bits; the window's reach in 32, as the lengths.
  bool window = a.windowLeft >= 0 || a.windowRight >= 0;
  bool varlen = a.cuSeqlensQ != nullptr;
  int descriptors = backwardDescriptors(a, dkdv, plan);
  // The producer form also reads dK/dV's LSE and delta through descriptors.
  bool producer = plan.warpSpecialize && descriptors &&
                  (!dkdv || on16ByteBoundaries({a.lse, a.workspace}));
  Specialization s{.signature = {t, t, t, t, t, "*fp32", "*fp32", "*i32", "*i32", "fp32", "fp32",
                                 "i32", "i32", "i32", "i32", "i64", "i64", "i64", "i64", "i64",
                                 "i64", "i64", "i64", "i64", "i64", "i64", "i64", "i64", "i64",
                                 "i64", "i64", "i32", "i32"},
                   .constexprs = {dkdv ? plan.stepRows : plan.ownRows,
                                  dkdv ? plan.ownRows : plan.stepRows, paddedHeadDim(a.headDim),
                                  plan.numStages, a.causal && !window ? 1 : 0, window ? 1 : 0,
                                  varlen ? 1 : 0, descriptors, producer ? 1 : 0},
                   .numWarps = plan.numWarps,
                   .awaitPreviousKernel = true};
  if (dkdv) {
    s.signature.insert(s.signature.begin(), t); // dk and dv
    s.constexprs.push_back(int(part));
    s.constexprs.push_back(plan.blockStore ? wholeKeyBlocks(a, plan.ownRows) : 0);
  }
  s.constexprs.push_back(a.headDim);
  if (!arch.empty())
    s.arch = arch;
  return s;
}

int64_t attentionBackwardWorkspaceBytes(const AttentionBackwardArgs &a) {
  return (a.cuSeqlensQ ? a.totalQ : a.batch * a.seqQ) * a.heads * 4;
}

void attentionBackward(const AttentionBackwardArgs &a, CUstream stream,
                       const AttentionBackwardPlan *givenPlan) {
  Arguments args("attentionBackward");
  if (a.dtype != Dtype::fp16 && a.dtype != Dtype::bf16)
    args.fail("dtype must be fp16 or bf16, got " + dtypeName(a.dtype));
  checkHeadDim(args, a.headDim);
  args.atLeast("batch", a.batch, 1);
  int64_t kvHeads = args.kvHeads(a.heads, a.kvHeads);
  args.atLeast("seq_q", a.seqQ, 0);
  int64_t seqKV = a.seqKV ? a.seqKV : a.seqQ;
  args.atLeast("seq_kv", seqKV, 0);
  if (a.seqQ + seqKV > std::numeric_limits<int32_t>::max())
    args.fail("seq_q + seq_kv must be below 2^31, got " + std::to_string(a.seqQ + seqKV));
  args.atLeast("window_left", a.windowLeft, -1);
  args.atLeast("window_right", a.windowRight, -1);
  int64_t D = a.headDim;
  bool varlen = checkVarlen(args, a.cuSeqlensQ, a.cuSeqlensKV, a.totalQ, a.seqQ);
  if (varlen && a.totalQ > std::numeric_limits<int32_t>::max())
    args.fail("totalQ must be below 2^31, got " + std::to_string(a.totalQ));
  args.atLeast("totalKV", a.totalKV, 0);
  if (varlen && a.totalKV > 0 && a.totalKV < seqKV)
    args.fail("totalKV (" + std::to_string(a.totalKV) + ", the packed key rows) must be at least "
              "seq_kv (" + std::to_string(seqKV) + ", the longest sequence)");
  // The gradients are laid out as their inputs (dQ as Q, dK as K, dV as V) and dO as O.
  AttentionStrides qs = attentionStrides(args, a.qStrides, a.heads, a.seqQ, D, varlen, "q"),
                   ks = attentionStrides(args, a.kStrides, kvHeads, seqKV, D, varlen, "k"),
                   vs = attentionStrides(args, a.vStrides, kvHeads, seqKV, D, varlen, "v"),
                   os = attentionStrides(args, a.oStrides, a.heads, a.seqQ, D, varlen, "o");
  KernelArg dq = args.pointer("dq", a.dq), dk = args.pointer("dk", a.dk),
            dv = args.pointer("dv", a.dv), q = args.pointer("q", a.q), k = args.pointer("k", a.k),
            v = args.pointer("v", a.v), o = args.pointer("o", a.o),
            dout = args.pointer("dout", a.dout), lse = args.pointer("lse", a.lse),
            delta = args.pointer("workspace", a.workspace);
  KernelArg cuQ = varlen ? args.pointer("cuSeqlensQ", a.cuSeqlensQ) : o,
            cuKV = varlen ? args.pointer("cuSeqlensKV", a.cuSeqlensKV) : o;
  if (a.batch * a.heads > 65535)
    args.fail("batch x heads must be at most 65535, got " + std::to_string(a.batch * a.heads));
  AttentionBackwardPlan plan = givenPlan ? *givenPlan : planAttentionBackward(a.headDim);
  AttentionBackwardPlan dqPlan = dqPlanOf(plan); // (attentionBackwardSpecialization's for dQ)
  for (const AttentionBackwardPlan &p : {plan, dqPlan}) {
    for (int rows : {p.ownRows, p.stepRows})
      if (rows < 16 || (rows & (rows - 1)) != 0)
        args.fail("plan: rows must be powers of two of at least 16, got " + std::to_string(rows));
    if (p.numWarps < 4 || (p.numWarps & (p.numWarps - 1)) != 0 || p.numStages < 1)
      args.fail("plan: warps must be a power of two of at least 4 and stages at least 1, got " +
                std::to_string(p.numWarps) + " warps, " + std::to_string(p.numStages) +
                " stages");
  }
  if (a.seqQ == 0)
    return;
  float scale = a.scale != 0 ? a.scale : float(1.0 / std::sqrt(double(D)));
  float qkScale = scale * float(kLog2e);
  std::string t = "*" + dtypeName(a.dtype);
  bool gpu = !tritium::interpreting();
  // Hopper's wgmma needs the architecture-specific target (its code runs on sm_90 only).
  std::string arch = gpu && rt::Context::current().props().arch() == "sm_90" ? "sm_90a" : "";
  // The LSE's and delta's rows: [batch, heads, seq_q], or [heads, total_q] for varlen batches
  // (as one batch of total_q rows).
  int32_t lseStride = int32_t(varlen ? a.totalQ : a.seqQ);
  int64_t rows = (varlen ? 1 : a.batch) * a.heads * lseStride;
  {
    std::initializer_list<KernelArg> launchArgs = {delta,           o,         dout,   rows,
                                                   int32_t(a.heads), lseStride, os.batch,
                                                   os.head,         os.seq};
    Specialization s{.signature = {"*fp32", t, t, "i64", "i32", "i32", "i64", "i64", "i64"},
                     .constexprs = {64, paddedHeadDim(D), D}, .numWarps = 4,
                     .awaitPreviousKernel = true};
    if (!arch.empty())
      s.arch = arch;
    deltaKernel().compile(s.specializedFor(launchArgs)).launch((rows + 63) / 64, stream, launchArgs);
  }
  // Below 2^31 with the lengths (checked above): 32-bit arguments.
  WindowReach window = windowReach(a.windowLeft, a.windowRight, a.causal, a.seqQ + seqKV);
  int32_t left = int32_t(window.left), right = int32_t(window.right);
  // The rows of Q (and O) and of K (and V) as tensor descriptors see them, and the columns of
  // the [batch, seq, heads, head_dim] layout's rows.
  int64_t qRows = varlen                ? a.totalQ
                  : qoLayout(a) == 2 ? a.batch * a.seqQ
                                     : a.batch * a.heads * a.seqQ,
          kvRows = varlen                ? a.totalKV
                   : kvLayout(a) == 2 ? a.batch * seqKV
                                      : a.batch * kvHeads * seqKV,
          qCols = a.heads * D, kvCols = kvHeads * D;
  if (seqKV > 0) {
    std::initializer_list<KernelArg> launchArgs = {
        dk,       dv,      q,      k,        v,       dout,   lse,      delta,   cuQ,
        cuKV,     qkScale, scale,  lseStride, int32_t(seqKV), int32_t(a.heads),
        int32_t(a.heads / kvHeads),
        qs.batch, qs.head, qs.seq, ks.batch, ks.head, ks.seq, vs.batch, vs.head, vs.seq,
        os.batch, os.head, os.seq, qRows,    kvRows,  qCols,    kvCols, left, right};
    Grid3 grid{(seqKV + plan.ownRows - 1) / plan.ownRows, a.batch * kvHeads, 1};
    // (A vector: the array behind an initializer_list chosen by ?: ends with the full
    // expression, before the loop reads it.)
    std::vector<BackwardPart> parts =
        plan.splitDkDv ? std::vector{kDvOnly, kDkOnly} : std::vector{kDkDv};
    for (BackwardPart part : parts)
      attentionBackwardDkDvKernel()
          .compile(attentionBackwardSpecialization(a, true, plan, arch, part)
                       .specializedFor(launchArgs))
          .launch(grid, stream, launchArgs);
  }
  {
    std::initializer_list<KernelArg> launchArgs = {
        dq,       q,       k,      v,        dout,    lse,    delta,    cuQ,     cuKV,
        qkScale,  scale,   lseStride, int32_t(seqKV),   int32_t(a.heads),
        int32_t(a.heads / kvHeads),
        qs.batch, qs.head, qs.seq, ks.batch, ks.head, ks.seq, vs.batch, vs.head, vs.seq,
        os.batch, os.head, os.seq, qRows,    kvRows,  qCols,    kvCols, left, right};
    attentionBackwardDqKernel()
        .compile(
            attentionBackwardSpecialization(a, false, plan, arch).specializedFor(launchArgs))
        .launch(Grid3{(a.seqQ + dqPlan.ownRows - 1) / dqPlan.ownRows, a.batch * a.heads, 1},
                stream, launchArgs);
  }
}

} // namespace tritium::kernels
