// The library's decode attention (flash-decoding): a split kernel whose programs each read one
// part of one sequence's cache for one KV head, with every query head of that head's group as
// a row of the tile (so the cache is read once however many query heads share it), and a
// combine kernel that weighs the parts by their log-sum-exps. Scores are scaled by
// scale x log2(e) so that the running softmax uses exp2; the parts' log-sum-exps stay in log2
// units.
#include "kernels/AttentionDecode.h"

#include "frontend/DSL.h"
#include "frontend/Kernel.h"
#include "interpreter/Interpreter.h"
#include "kernels/Arguments.h"
#include "kernels/AttentionArguments.h"
#include "kernels/PaddedColumns.h"
#include "runtime/Device.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

namespace tritium::kernels {

using namespace tritium::dsl;

namespace {

// One program: part `split` (positions [split x chunk, + chunk)) of sequence b's cache, KV
// head kvh. Row r of the tile is query head kvh x groups + r / seq_q, token r % seq_q; rows
// past groups x seq_q are padding (the tensor cores take 16 rows at least). PAGED, the page
// size: position p is in page block_table[b][p / PAGED] at slot p % PAGED; 0: page b, slot p.
// The page size is a compile-time constant, so that a position's page and slot are a shift
// and a mask (a power of two) or a multiply: 64-bit divisions by a runtime value, two per row
// of each tile, held the paged decode at 0.52-0.57 of copy bandwidth on the H200, its issue
// slots full of the division's subroutine.
// SPLIT: the part's output (normalized) and log2-sum-exp go to o_part and lse_part, row-major
// [batch, heads, seq_q, splits(, D)]; otherwise the one part is the answer.
// HD: the head dim, D it rounded up to a power of two; columns from HD on are masked off the
// loads and the stores (and are zeros in the parts).
// The integer arguments are i32 where every offset fits (decodeOffsetsAreNarrow), else i64,
// and the index math follows them.
void attention_decode_kernel(Ptr o, Ptr lse, Ptr o_part, Ptr lse_part, Ptr q, Ptr k, Ptr v,
                             Ptr seq_lens, Ptr block_table, Float qk_scale, Int seq_q,
                             Int max_seq, Int heads, Int groups, Int chunk, Int splits, Int sqb,
                             Int sqh, Int sqs, Int skp, Int sks, Int skh, Int svp, Int svs,
                             Int svh, Int sob, Int soh, Int sos, Int bt_stride,
                             int R, int BN, int D, int STAGES, int CAUSAL, int HAS_LSE,
                             int PAGED, int HAS_LENS, int SPLIT, int HD) {
  auto split = program_id(0);
  auto bk = program_id(1);
  auto kv_heads = heads / groups;
  auto b = bk / kv_heads, kvh = bk % kv_heads;
  auto r = arange(0, R);
  auto t = r % seq_q;
  auto h = kvh * groups + r / seq_q;
  auto row_ok = r < groups * seq_q;
  auto rd = arange(0, D);
  auto cols = [&](Value rows_ok) { return paddedColumns(rows_ok, rd, D, HD); };
  Value len = HAS_LENS ? cast(load(seq_lens + b), max_seq.dtype()) : Value(max_seq);
  auto lo = split * chunk;
  auto hi = minimum(len, lo + chunk);
  auto q_tile = load(q + b * sqb + h(_, None) * sqh + t(_, None) * sqs + rd(None, _),
                     cols(row_ok(_, None)), 0);
  auto m_i = full({R}, -INFINITY, float32);
  auto l_i = zeros({R}, float32);
  auto acc = zeros({R, D}, float32);
  // Causal: token t sees positions up to len - seq_q + t.
  auto last = len - seq_q + t;
  for (auto start : range(lo, hi, BN, STAGES)) {
    // The positions, both the tiles' rows (addresses, masks of the loads) and the scores'
    // columns: layout assignment computes this index math again in each role's layout, so no
    // conversion through shared memory keeps the loads out of the pipeliner's rings
    // (docs/notes/attention.md, "Decode").
    auto pos = start + arange(0, BN);
    auto in = pos < hi;
    // Each position's row in the caches (elements, before the head).
    Value k_row, v_row;
    if (PAGED) {
      // Each position's page, read in the tile's own shape (the entry repeated along the
      // row), so that it needs no layout conversion: the pipeliner then loads the entries
      // again for the iteration whose tiles it copies ahead, and the tiles are ring copies.
      auto entry = broadcast_to((block_table + b * bt_stride + pos / PAGED)(_, None), {BN, D});
      // (64-bit whatever the arguments' width: a pool's page numbers times the page stride
      // are not bounded by the call's sizes.)
      auto page = cast(load(entry, broadcast_to(in(_, None), {BN, D}), 0), int64);
      auto slot = pos(_, None) % PAGED;
      k_row = page * skp + slot * sks;
      v_row = page * svp + slot * svs;
    } else {
      k_row = (b * skp + pos * sks)(_, None);
      v_row = (b * svp + pos * svs)(_, None);
    }
    auto k_tile = load(k + k_row + kvh * skh + rd(None, _), cols(in(_, None)), 0);
    auto v_tile = load(v + v_row + kvh * svh + rd(None, _), cols(in(_, None)), 0);
    auto s = dot(q_tile, trans(k_tile)) * qk_scale;
    auto valid = (pos(None, _) < hi) & row_ok(_, None);
    if (CAUSAL)
      valid = valid & (pos(None, _) <= last(_, None));
    s = where(valid, s, -INFINITY);
    auto m_new = maximum(m_i, max(s, 1));
    auto m_use = where(m_new == -INFINITY, 0.0, m_new);
    auto p = exp2(s - m_use(_, None));
    auto alpha = exp2(m_i - m_use);
    l_i = l_i * alpha + sum(p, 1);
    acc = dot(cast(p, q.dtype()), v_tile, acc * alpha(_, None));
    m_i = m_new;
  }
  // A part (or a row) that saw no position gives zeros and a log-sum-exp of -inf.
  auto l_safe = where(l_i == 0.0, 1.0, l_i);
  auto out = acc / l_safe(_, None);
  auto row = (b * heads + h) * seq_q + t; // [batch, heads, seq_q]
  if (SPLIT) {
    auto part = row * splits + split;
    store(o_part + part(_, None) * D + rd(None, _), out, row_ok(_, None));
    store(lse_part + part, m_i + log2(l_safe), row_ok);
  } else {
    store(o + b * sob + h(_, None) * soh + t(_, None) * sos + rd(None, _), cast(out, o.dtype()),
          cols(row_ok(_, None)));
    if (HAS_LSE)
      store(lse + row, (m_i + log2(l_safe)) * 0.6931471805599453, row_ok);
  }
}

// One program per (sequence, head, token): the parts weighed by 2^(lse_part - max).
void attention_decode_combine_kernel(Ptr o, Ptr lse, Ptr o_part, Ptr lse_part, Int seq_q,
                                     Int heads, Int splits, Int sob, Int soh, Int sos, int S,
                                     int D, int HAS_LSE, int HD) {
  auto row = program_id(0);
  auto t = row % seq_q, bh = row / seq_q;
  auto b = bh / heads, h = bh % heads;
  auto rs = arange(0, S);
  auto rd = arange(0, D);
  // Both loads first, so that neither waits for the other's reductions (one trip to memory).
  auto l = load(lse_part + row * splits + rs, rs < splits, -INFINITY);
  auto parts = load(o_part + (row * splits + rs(_, None)) * D + rd(None, _), rs(_, None) < splits,
                    0.0);
  auto m = max(l, 0);
  auto m_use = where(m == -INFINITY, 0.0, m);
  auto w = exp2(l - m_use);
  auto total = sum(w, 0);
  auto out = sum(parts * w(_, None), 0) / where(total == 0.0, 1.0, total);
  if (HD < D)
    store(o + b * sob + h * soh + t * sos + rd, cast(out, o.dtype()), rd < HD);
  else
    store(o + b * sob + h * soh + t * sos + rd, cast(out, o.dtype()));
  if (HAS_LSE)
    store(lse + row, (m + log2(total)) * 0.6931471805599453);
}

} // namespace

Kernel &attentionDecodeKernel() {
  static auto k = kernel(
      "attention_decode", attention_decode_kernel,
      {"o", "lse", "o_part", "lse_part", "q", "k", "v", "seq_lens", "block_table", "qk_scale",
       "seq_q", "max_seq", "heads", "groups", "chunk", "splits", "sqb", "sqh", "sqs", "skp", "sks",
       "skh", "svp", "svs", "svh", "sob", "soh", "sos", "bt_stride", "R", "BN", "D",
       "STAGES", "CAUSAL", "HAS_LSE", "PAGED", "HAS_LENS", "SPLIT", "HD"});
  return k;
}

namespace {

Kernel &combineKernel() {
  static auto k = kernel("attention_decode_combine", attention_decode_combine_kernel,
                         {"o", "lse", "o_part", "lse_part", "seq_q", "heads", "splits", "sob",
                          "soh", "sos", "S", "D", "HAS_LSE", "HD"});
  return k;
}

int64_t nextPowerOfTwo(int64_t n) {
  int64_t p = 1;
  while (p < n)
    p *= 2;
  return p;
}

int64_t kvHeadsOf(const AttentionDecodeArgs &a) { return a.kvHeads ? a.kvHeads : a.heads; }

// The strides a call reads its tensors with: the given ones, or the dense forms where none are.
struct DecodeStrides {
  DecodeQueryStrides q, o;
  DecodeCacheStrides k, v;
};
DecodeStrides resolveStrides(const AttentionDecodeArgs &a) {
  int64_t D = a.headDim, kvHeads = kvHeadsOf(a);
  auto query = [&](const DecodeQueryStrides &s) {
    return !s.batch && !s.head && !s.seq ? DecodeQueryStrides{a.seqQ * a.heads * D, D, a.heads * D}
                                         : s;
  };
  int64_t pageRows = a.blockTable ? a.pageSize : a.maxSeqKV;
  auto cache = [&](const DecodeCacheStrides &s) {
    return !s.page && !s.seq && !s.head
               ? DecodeCacheStrides{pageRows * kvHeads * D, kvHeads * D, D}
               : s;
  };
  return {query(a.qStrides), query(a.oStrides), cache(a.kStrides), cache(a.vStrides)};
}

// Whether every element offset the split kernel computes fits in an int32, so that its integer
// arguments and index math can be 32-bit: half the instructions of 64-bit math, which a
// program at a small cache runs as one chain (docs/notes/attention.md, "Decode at small
// caches"). A paged cache's page numbers are not bounded by the call's arguments (its pool's
// size is not one), so the kernel multiplies them by the page stride in 64 bits whatever the
// arguments' width; here only the stride itself and the offsets within a page must fit.
bool decodeOffsetsAreNarrow(const AttentionDecodeArgs &a, int64_t splits, int blockN) {
  DecodeStrides s = resolveStrides(a);
  int64_t D = paddedHeadDim(a.headDim), kvHeads = kvHeadsOf(a);
  bool paged = a.blockTable != nullptr;
  auto query = [&](const DecodeQueryStrides &q) {
    return (a.batch - 1) * std::abs(q.batch) + (a.heads - 1) * std::abs(q.head) +
           (a.seqQ - 1) * std::abs(q.seq) + D;
  };
  // Positions run up to a step past the cache's end (masked off, but their offsets computed).
  int64_t positions = a.maxSeqKV + blockN;
  auto cache = [&](const DecodeCacheStrides &c) {
    int64_t rows = paged ? std::max(std::abs(c.page), (a.pageSize - 1) * std::abs(c.seq))
                         : (a.batch - 1) * std::abs(c.page) + positions * std::abs(c.seq);
    return rows + (kvHeads - 1) * std::abs(c.head) + D;
  };
  int64_t tableEntries = paged ? a.batch * a.maxPages + positions / std::max<int64_t>(a.pageSize, 1)
                               : 0;
  int64_t most = std::max({query(s.q), query(s.o), cache(s.k), cache(s.v),
                           a.batch * a.heads * a.seqQ * splits * (D + 1),
                           a.maxSeqKV + int64_t(blockN) * splits, tableEntries});
  return most <= int64_t(std::numeric_limits<int32_t>::max());
}

// Parts per (sequence, KV head): as many as keep every program in one wave of two per SM (a
// second, partial wave measured 0.68 of copy bandwidth where one wave gave 0.88), each part at
// least 256 positions (fewer parts would not pay for the combine), at most 64.
int64_t planSplits(const AttentionDecodeArgs &a, const AttentionDecodePlan &plan) {
  if (plan.splits > 0)
    return plan.splits;
  int64_t programs = a.batch * kvHeadsOf(a);
  int64_t sms = tritium::interpreting() ? 4 : rt::Context::current().props().smCount;
  int64_t want = std::max<int64_t>(1, 2 * sms / programs);
  int64_t most = std::max<int64_t>(1, a.maxSeqKV / 256);
  return std::clamp<int64_t>(want, 1, std::min<int64_t>(most, 64));
}

// The cache positions of one part: a multiple of the step.
int64_t chunkOf(const AttentionDecodeArgs &a, int64_t splits, int blockN) {
  int64_t chunk = (a.maxSeqKV + splits - 1) / splits;
  return (chunk + blockN - 1) / blockN * blockN;
}

} // namespace

AttentionDecodePlan planAttentionDecode(bool, int64_t headDim) {
  // Paged caches too, now that their tiles are ring copies: 0.55-0.58 of copy against 0.31-0.32
  // for 32 positions on 8 warps and 0.33-0.34 for 4 stages (H200, docs/notes/attention.md).
  // Head_dim 256 keeps the bytes a stage holds (and so those in flight a SM): 32 positions.
  return {.blockN = headDim > 128 ? 32 : 64, .numWarps = 4, .numStages = 3, .splits = 0};
}

int64_t attentionDecodeWorkspaceBytes(const AttentionDecodeArgs &a, int splits) {
  AttentionDecodePlan plan;
  plan.splits = splits;
  int64_t s = planSplits(a, plan);
  if (s <= 1)
    return 0;
  return a.batch * a.heads * a.seqQ * s * (paddedHeadDim(a.headDim) + 1) * 4;
}

void attentionDecode(const AttentionDecodeArgs &a, CUstream stream,
                     const AttentionDecodePlan *given) {
  Arguments args("attentionDecode");
  if (a.dtype != Dtype::fp16 && a.dtype != Dtype::bf16)
    args.fail("dtype must be fp16 or bf16, got " + dtypeName(a.dtype));
  checkHeadDim(args, a.headDim);
  args.atLeast("batch", a.batch, 1);
  int64_t kvHeads = args.kvHeads(a.heads, a.kvHeads);
  args.atLeast("seq_q", a.seqQ, 1);
  args.atLeast("max_seq_kv", a.maxSeqKV, 0);
  int64_t groups = a.heads / kvHeads, D = a.headDim;
  if (groups * a.seqQ > 128)
    args.fail("heads / kv_heads x seq_q must be at most 128 (query rows of one KV head), got " +
              std::to_string(groups * a.seqQ));
  bool paged = a.blockTable != nullptr;
  if (paged) {
    args.atLeast("page_size", a.pageSize, 1);
    args.atLeast("max_pages", a.maxPages, 1);
    if (a.pageSize * a.maxPages < a.maxSeqKV)
      args.fail("page_size x max_pages (" + std::to_string(a.pageSize * a.maxPages) +
                ") is less than max_seq_kv (" + std::to_string(a.maxSeqKV) + ")");
  }
  KernelArg o = args.pointer("o", a.o), q = args.pointer("q", a.q), k = args.pointer("k", a.k),
            v = args.pointer("v", a.v);
  KernelArg lse = a.lse ? args.pointer("lse", a.lse) : o;
  KernelArg lens = a.seqLens ? args.pointer("seq_lens", a.seqLens) : o;
  KernelArg table = paged ? args.pointer("block_table", a.blockTable) : o;
  DecodeStrides strides = resolveStrides(a);
  DecodeQueryStrides qs = strides.q, os = strides.o;
  DecodeCacheStrides ks = strides.k, vs = strides.v;
  for (auto [d, name] : {std::pair{ks, "k"}, std::pair{vs, "v"}})
    if (d.seq < D && d.head < D)
      args.fail(std::string(name) + "'s position and head strides (" + std::to_string(d.seq) +
                ", " + std::to_string(d.head) + ") are both less than head_dim " +
                std::to_string(D));
  if (a.batch * kvHeads > 65535)
    args.fail("batch x kv_heads must be at most 65535, got " + std::to_string(a.batch * kvHeads));
  AttentionDecodePlan plan = given ? *given : planAttentionDecode(paged, D);
  args.planBlock(plan.blockN);
  int64_t splits = a.workspace ? planSplits(a, plan) : 1;
  int64_t need = splits > 1 ? attentionDecodeWorkspaceBytes(a, int(splits)) : 0;
  if (need > a.workspaceBytes && splits > 1)
    args.fail("workspace holds " + std::to_string(a.workspaceBytes) + " bytes, " +
              std::to_string(need) + " needed (attentionDecodeWorkspaceBytes)");
  KernelArg partO = o, partLse = o;
  if (splits > 1) {
    partO = args.pointer("workspace", a.workspace);
    partLse = args.pointer("workspace", static_cast<char *>(a.workspace) +
                                            a.batch * a.heads * a.seqQ * splits *
                                                paddedHeadDim(D) * 4);
  }
  int64_t chunk = chunkOf(a, splits, plan.blockN);
  float scale = a.scale != 0 ? a.scale : float(1.0 / std::sqrt(double(D)));
  std::initializer_list<KernelArg> launchArgs = {
      o,       lse,     partO,   partLse, q,       k,        v,         lens,
      table,   scale * 1.4426950408889634f,       a.seqQ,   a.maxSeqKV, a.heads,
      groups,  chunk,   splits,  qs.batch, qs.head, qs.seq,  ks.page,   ks.seq,
      ks.head, vs.page, vs.seq,  vs.head, os.batch, os.head, os.seq,    paged ? a.maxPages : 0};
  // Hopper's wgmma needs the architecture-specific target (its code runs on sm_90 only).
  bool gpu = !tritium::interpreting();
  std::string arch = gpu && rt::Context::current().props().arch() == "sm_90" ? "sm_90a" : "";
  attentionDecodeKernel()
      .compile(attentionDecodeSpecialization(a, plan, splits, arch).specializedFor(launchArgs))
      .launch(Grid3{splits, a.batch * kvHeads, 1}, stream, launchArgs);
  if (splits <= 1)
    return;
  std::initializer_list<KernelArg> combineArgs = {o,       lse,     partO,   partLse, a.seqQ,
                                                  a.heads, splits,  os.batch, os.head, os.seq};
  std::string t = "*" + dtypeName(a.dtype);
  Specialization cs{.signature = {t, "*fp32", "*fp32", "*fp32", "i64", "i64", "i64", "i64", "i64",
                                  "i64"},
                    .constexprs = {nextPowerOfTwo(splits), paddedHeadDim(D), a.lse ? 1 : 0, D},
                    .numWarps = 4,
                    .awaitPreviousKernel = true};
  combineKernel()
      .compile(cs.specializedFor(combineArgs))
      .launch(Grid3{a.batch * a.heads * a.seqQ, 1, 1}, stream, combineArgs);
}

Specialization attentionDecodeSpecialization(const AttentionDecodeArgs &a,
                                             const AttentionDecodePlan &plan, int64_t splits,
                                             const std::string &arch) {
  int64_t groups = a.heads / kvHeadsOf(a);
  int64_t rows = std::max<int64_t>(16, nextPowerOfTwo(groups * a.seqQ));
  std::string t = "*" + dtypeName(a.dtype);
  std::string idx = decodeOffsetsAreNarrow(a, splits, plan.blockN) ? "i32" : "i64";
  Specialization spec{
      .signature = {t, "*fp32", "*fp32", "*fp32", t, t, t, "*i32", "*i32", "fp32", idx, idx, idx,
                    idx, idx, idx, idx, idx, idx, idx, idx, idx, idx, idx, idx, idx, idx, idx,
                    idx},
      .constexprs = {rows, plan.blockN, paddedHeadDim(a.headDim), plan.numStages,
                     a.causal && a.seqQ > 1 ? 1 : 0, a.lse ? 1 : 0,
                     a.blockTable ? a.pageSize : 0,
                     a.seqLens ? 1 : 0, splits > 1 ? 1 : 0, a.headDim},
      .numWarps = plan.numWarps,
      // NVPTX's strength reduction is most of a paged kernel's code generation (78 of 121 ms
      // at head_dim 128 on a 2-core host): left out there, where the H200 read the cache as
      // fast without it; kept at head_dim 256, which ran 9% slower without it (paged, 8 x
      // 32768; docs/notes/compile-time.md, "The decode's cold compile").
      .strengthReduction = !(a.blockTable && a.headDim <= 128),
      // As the library's other kernels: its launch overlaps the previous kernel's tail, and
      // the combine's overlaps the parts' (at 16 MB of cache the two launches dominate).
      .awaitPreviousKernel = true};
  if (!arch.empty())
    spec.arch = arch;
  return spec;
}

} // namespace tritium::kernels
