// V written transposed ([batch, kv_heads, head_dim, seq_kv], the keys contiguous) for the fp8
// forward: 8-bit wgmma reads its B operand K-major only, so P V takes a transposed V's tiles in
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

// Varlen batches (V packed [total_kv, kv_heads, head_dim]): program (i, bh) writes columns
// i BS .. i BS + BS - 1 of sequence b's run in V^T, [kv_heads, HD, width] with the run from
// column col0 = 16 x (ceil(cu_kv[b] / 16) + b) up to the next sequence's col0 (the last's: 256
// past its keys rounded up to 16): its keys, then zeros (varlenTransposedValuesWidth).
void attention_transpose_v_varlen(Ptr vt, Ptr v, Ptr cu_kv, Int batch, Int kv_heads, Int width,
                                  Int svh, Int svs, int BS, int D, int HD) {
  auto bh = cast(program_id(1), int64);
  auto b = bh / kv_heads, h = bh % kv_heads;
  auto kv0 = cast(load(cu_kv + b), int64), kv1 = cast(load(cu_kv + b + 1), int64);
  auto len = kv1 - kv0;
  auto col0 = (cdiv(kv0, 16) + b) * 16;
  auto end = where(b + 1 < batch, (cdiv(kv1, 16) + b + 1) * 16, col0 + cdiv(len, 16) * 16 + 256);
  auto c = cast(program_id(0), int64) * BS + arange(0, BS); // columns of the run
  auto d = arange(0, D);
  auto x = load(v + h * svh + (kv0 + c(_, None)) * svs + d(None, _),
                paddedColumns(c(_, None) < len, d, D, HD), 0);
  auto out = (col0 + c < end)(None, _) & (d < HD)(_, None);
  store(vt + h * HD * width + d(_, None) * width + col0 + c(None, _), trans(x), out);
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
} // namespace

int64_t attentionForwardWorkspaceBytes(const AttentionArgs &a) {
  if (a.dtype != Dtype::fp8e4m3 || a.vTransposed)
    return 0;
  int64_t kvHeads = a.kvHeads ? a.kvHeads : a.heads, seqKV = a.seqKV ? a.seqKV : a.seqQ;
  if (a.cuSeqlensQ) // one byte an element
    return kvHeads * a.headDim * varlenTransposedValuesWidth(a.batch, seqKV);
  return a.batch * kvHeads * a.headDim * seqKV;
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
    // A run holds its keys and at most 31 zeros after them (the last: 271).
    transposeVarlenKernel()
        .compile(spec.specializedFor(launchArgs))
        .launch(Grid3{(seqKV + 271 + 63) / 64, a.batch * kvHeads, 1}, stream, launchArgs);
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
