// V written transposed ([batch, kv_heads, head_dim, seq_kv], the keys contiguous) for the fp8
// forward (and, for varlen batches, K realigned beside it): 8-bit wgmma reads its B operand K-major only, so P V takes a transposed V's tiles in
// place, where V as stored is transposed through shared memory at every step of every program
// (a CTA barrier pair and byte stores a step). One pass over V is a few percent of the forward.
#include "kernels/Attention.h"

#include "frontend/DSL.h"
#include "frontend/Kernel.h"
#include "kernels/Arguments.h"
#include "kernels/AttentionArguments.h"
#include "kernels/PaddedColumns.h"
#include "runtime/Device.h"

namespace tritium::kernels {

namespace {
using namespace tritium::dsl;

// Program (i, bh) moves positions i BS .. i BS + BS - 1 of (batch, KV head) bh = b x kv_heads
// + h: read as [BS, D] rows along head_dim.
void attention_transpose_v(Ptr vt, Ptr v, Int seq, Int kv_heads, Int svb, Int svh, Int svs,
                           int BS, int D, int HD) {
  auto bh = cast(program_id(1), int64);
  auto s = cast(program_id(0), int64) * BS + arange(0, BS);
  auto d = arange(0, D);
  auto in = paddedColumns(s(_, None) < seq, d, D, HD);
  auto x = load(v + (bh / kv_heads * svb + bh % kv_heads * svh) + s(_, None) * svs + d(None, _),
                in);
  // Written as [D, BS] rows along the positions (the compiler converts the tile's layout
  // between the two through shared memory), the head_dim rows past HD left out.
  auto out = (s < seq)(None, _) & (d < HD)(_, None);
  store(vt + bh * HD * seq + d(_, None) * seq + s(None, _), trans(x), out);
}

// A varlen workspace program's run: program (i, bh) takes positions i BS .. i BS + BS - 1
// (`at`) of sequence b's keys from kv0 (len of them), KV head h, written from `first` =
// 16 x (ceil(cu_kv[b] / 16) + b) up to the next sequence's first (the last's: 256 past its keys
// rounded up to 16): its keys, then zeros (varlenTransposedValuesWidth).
struct VarlenRun {
  Value h, kv0, len, first, end, at;
};
VarlenRun varlenRun(Ptr cu_kv, Int batch, Int kv_heads, int BS) {
  auto bh = cast(program_id(1), int64);
  auto b = bh / kv_heads, h = bh % kv_heads;
  auto kv0 = cast(load(cu_kv + b), int64), kv1 = cast(load(cu_kv + b + 1), int64);
  auto len = kv1 - kv0;
  auto first = (cdiv(kv0, 16) + b) * 16;
  // (first and end are multiples of 16, so a mask `first + at < end` holds along 16 positions
  // and the stores are 16 bytes wide; while the axis analysis did not see through this select,
  // V^T's were byte stores: 485 us a call at 4 x 32 x 4096 x 128 on an H200, a quarter of the
  // fp8 varlen forward's time.)
  auto end = where(b + 1 < batch, (cdiv(kv1, 16) + b + 1) * 16, first + cdiv(len, 16) * 16 + 256);
  return {h, kv0, len, first, end, cast(program_id(0), int64) * BS + arange(0, BS)};
}

// Varlen batches (V packed [total_kv, kv_heads, head_dim]): program (i, bh) writes columns
// i BS .. i BS + BS - 1 of sequence b's run in V^T, [kv_heads, HD, width] with the run from
// column col0 = 16 x (ceil(cu_kv[b] / 16) + b) up to the next sequence's col0 (the last's: 256
// past its keys rounded up to 16): its keys, then zeros (varlenTransposedValuesWidth).
void attention_transpose_v_varlen(Ptr vt, Ptr v, Ptr cu_kv, Int batch, Int kv_heads, Int width,
                                  Int svh, Int svs, int BS, int D, int HD) {
  VarlenRun run = varlenRun(cu_kv, batch, kv_heads, BS);
  auto c = run.at; // columns of the run
  auto d = arange(0, D);
  auto x = load(v + run.h * svh + (run.kv0 + c(_, None)) * svs + d(None, _),
                paddedColumns(c(_, None) < run.len, d, D, HD), 0);
  auto out = (run.first + c < run.end)(None, _) & (d < HD)(_, None);
  store(vt + run.h * HD * width + d(_, None) * width + run.first + c(None, _), trans(x), out);
}

// Varlen fp8's K copied into the workspace after V^T: [width, kv_heads, HD] rows, sequence b's
// keys from row col0 (V^T's column), zeros up to the next sequence's, so that each sequence's
// first row is a multiple of 16 (varlenTransposedValuesWidth). Program (i, bh) writes rows
// i BS .. i BS + BS - 1 of sequence b's run, KV head h's columns.
void attention_align_k_varlen(Ptr kw, Ptr k, Ptr cu_kv, Int batch, Int kv_heads, Int skh,
                              Int sks, int BS, int D, int HD) {
  VarlenRun run = varlenRun(cu_kv, batch, kv_heads, BS);
  auto r = run.at; // rows of the run
  auto d = arange(0, D);
  auto x = load(k + run.h * skh + (run.kv0 + r(_, None)) * sks + d(None, _),
                paddedColumns(r(_, None) < run.len, d, D, HD), 0);
  store(kw + (run.first + r(_, None)) * (kv_heads * HD) + run.h * HD + d(None, _), x,
        paddedColumns((run.first + r < run.end)(_, None), d, D, HD));
}

Kernel &transposeKernel() {
  static auto k = kernel("attention_transpose_v", attention_transpose_v,
                         {"vt", "v", "seq", "kv_heads", "svb", "svh", "svs", "BS", "D", "HD"});
  return k;
}

Kernel &transposeVarlenKernel() {
  static auto k =
      kernel("attention_transpose_v_varlen", attention_transpose_v_varlen,
             {"vt", "v", "cu_kv", "batch", "kv_heads", "width", "svh", "svs", "BS", "D", "HD"});
  return k;
}
Kernel &alignKeysKernel() {
  static auto k =
      kernel("attention_align_k_varlen", attention_align_k_varlen,
             {"kw", "k", "cu_kv", "batch", "kv_heads", "skh", "sks", "BS", "D", "HD"});
  return k;
}
// The grid of varlenRun's programs: 64 positions a program along the longest run (its keys
// and at most 31 zeros after them; the last's 271), one row of programs per (sequence, KV head).
Grid3 varlenRunGrid(int64_t batch, int64_t kvHeads, int64_t seqKV) {
  return Grid3{(seqKV + 271 + 63) / 64, batch * kvHeads, 1};
}
} // namespace

int64_t attentionForwardWorkspaceBytes(const AttentionArgs &a) {
  if (a.dtype != Dtype::fp8e4m3 || a.vTransposed)
    return 0;
  int64_t kvHeads = a.kvHeads ? a.kvHeads : a.heads, seqKV = a.seqKV ? a.seqKV : a.seqQ;
  if (a.cuSeqlensQ) // one byte an element: V^T, then K (varlenAlignKeys)
    return 2 * kvHeads * a.headDim * varlenTransposedValuesWidth(a.batch, seqKV);
  return a.batch * kvHeads * a.headDim * seqKV;
}

void varlenAlignKeys(void *kw, const AttentionArgs &a, CUstream stream) {
  Arguments args("attentionForward");
  int64_t kvHeads = args.kvHeads(a.heads, a.kvHeads), seqKV = a.seqKV ? a.seqKV : a.seqQ;
  AttentionStrides ks = attentionStrides(args, a.kStrides, kvHeads, seqKV, a.headDim, true, "k");
  KernelArg out = args.pointer("workspace", kw), k = args.pointer("k", a.k),
            cuKV = args.pointer("cuSeqlensKV", a.cuSeqlensKV);
  std::string t = "*" + dtypeName(a.dtype);
  std::initializer_list<KernelArg> launchArgs = {out, k, cuKV, a.batch, kvHeads, ks.head, ks.seq};
  Specialization spec{.signature = {t, t, "*i32", "i64", "i64", "i64", "i64"},
                      .constexprs = {64, paddedHeadDim(a.headDim), a.headDim}, .numWarps = 4};
  if (a.dtype == Dtype::fp8e4m3)
    spec.ptxVersion = 84;
  alignKeysKernel()
      .compile(spec.specializedFor(launchArgs))
      .launch(varlenRunGrid(a.batch, kvHeads, seqKV), stream, launchArgs);
}

void attentionTransposeValues(void *vt, const AttentionArgs &a, CUstream stream) {
  Arguments args("attentionTransposeValues");
  if (a.vTransposed)
    args.fail("V is transposed already (vTransposed is set)");
  checkHeadDim(args, a.headDim);
  args.atLeast("batch", a.batch, 1);
  int64_t kvHeads = args.kvHeads(a.heads, a.kvHeads);
  int64_t seqKV = a.seqKV ? a.seqKV : a.seqQ;
  args.atLeast("seq_kv", seqKV, 0);
  if (a.batch * kvHeads > 65535)
    args.fail("batch x kv_heads must be at most 65535, got " + std::to_string(a.batch * kvHeads));
  bool varlen = checkVarlen(args, a.cuSeqlensQ, a.cuSeqlensKV, a.totalQ, a.seqQ);
  AttentionStrides vs = attentionStrides(args, a.vStrides, kvHeads, seqKV, a.headDim, varlen, "v");
  KernelArg out = args.pointer("vt", vt), v = args.pointer("v", a.v);
  std::string t = "*" + dtypeName(a.dtype);
  if (varlen) { // every sequence's run, its zeros too, even where no sequence has a key
    KernelArg cuKV = args.pointer("cuSeqlensKV", a.cuSeqlensKV);
    int64_t width = varlenTransposedValuesWidth(a.batch, seqKV);
    std::initializer_list<KernelArg> launchArgs = {out,     v,       cuKV,   a.batch,
                                                   kvHeads, width,   vs.head, vs.seq};
    Specialization spec{.signature = {t, t, "*i32", "i64", "i64", "i64", "i64", "i64"},
                        .constexprs = {64, paddedHeadDim(a.headDim), a.headDim},
                        .numWarps = 4};
    if (a.dtype == Dtype::fp8e4m3)
      spec.ptxVersion = 84;
    transposeVarlenKernel()
        .compile(spec.specializedFor(launchArgs))
        .launch(varlenRunGrid(a.batch, kvHeads, seqKV), stream, launchArgs);
    return;
  }
  if (seqKV == 0)
    return;
  std::initializer_list<KernelArg> launchArgs = {out, v, seqKV, kvHeads, vs.batch, vs.head,
                                                 vs.seq};
  Specialization spec{.signature = {t, t, "i64", "i64", "i64", "i64", "i64"},
                      .constexprs = {64, paddedHeadDim(a.headDim), a.headDim}, .numWarps = 4};
  if (a.dtype == Dtype::fp8e4m3)
    spec.ptxVersion = 84;
  transposeKernel()
      .compile(spec.specializedFor(launchArgs))
      .launch(Grid3{(seqKV + 63) / 64, a.batch * kvHeads, 1}, stream, launchArgs);
}

} // namespace tritium::kernels
