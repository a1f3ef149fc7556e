// Attention's backward (FlashAttention-2's, as Triton's tutorial 06 writes it), in tritium's
// DSL: from the forward's output O and log-sum-exp, dQ, dK and dV without the [seq, seq]
// scores reaching memory. Three kernels: delta = rowsum(dO * O) per query row; one program per
// block of keys walks every query block of every query head that reads its K/V head (grouped
// queries: the sum over the group stays in one program, so dK and dV are deterministic) and
// accumulates dK and dV; one program per block of queries walks the keys and accumulates dQ.
// [batch, heads, seq, head_dim] tensors (K, V, dK, dV with kv_heads heads) through strides,
// so [batch, seq, heads, head_dim] too, or varlen batches packed one after another; causal
// masks aligned bottom-right and sliding windows, as the forward's; fp16 or bf16, head_dim a
// multiple of 16 up to 256, padded to a power of two as the forward's (past 128 the dK and dV
// accumulators do not fit one warp group's registers together: two programs per block of
// keys, one for dV and one for dK, each computing the scores). The log-sum-exp and the workspace are dense [batch, heads, seq_q] ([heads, total_q]
// for varlen). dQ, dK and dV are written, not accumulated into. Pointers are device addresses
// (host addresses under TRITIUM_INTERPRET=1); the call is asynchronous on `stream`.
#pragma once

#include "frontend/Kernel.h"
#include "kernels/Attention.h"
#include "kernels/Dtype.h"

#include <cuda.h>

#include <cstdint>

namespace tritium::kernels {

struct AttentionBackwardArgs {
  void *dq = nullptr, *dk = nullptr, *dv = nullptr; // the gradients, in dtype
  const void *q = nullptr, *k = nullptr, *v = nullptr;
  const void *o = nullptr;     // the forward's output
  const void *dout = nullptr;  // the gradient of the output
  const float *lse = nullptr;  // the forward's log-sum-exp, [batch, heads, seq_q]
  float *workspace = nullptr;  // attentionBackwardWorkspaceBytes() bytes of device memory
  int64_t batch = 1, heads = 1, kvHeads = 0; // kvHeads 0: as many as heads
  int64_t seqQ = 0, seqKV = 0, headDim = 0;  // seqKV 0: seqQ
  bool causal = false;
  float scale = 0; // 0: 1 / sqrt(head_dim); the forward's
  Dtype dtype = Dtype::bf16;
  // The forward's sliding window (AttentionArgs::windowLeft, windowRight): -1 unbounded.
  int64_t windowLeft = -1, windowRight = -1;
  // Element strides (all 0: dense [batch, heads, seq, head_dim]). dQ, dK and dV are laid out as
  // Q, K and V; dO as O.
  AttentionStrides qStrides, kStrides, vStrides, oStrides;
  // Varlen batches, as the forward's (AttentionArgs::cuSeqlensQ): batch sequences packed one
  // after another, q, o, dq and dout [total_q, heads, head_dim] and k, v, dk, dv [total_kv,
  // kv_heads, head_dim] (through strides whose batch entries are unused); seqQ and seqKV the
  // longest sequences, totalQ the packed query rows; the LSE (and the workspace) [heads,
  // total_q], as the varlen forward writes it. totalKV, the packed key rows, may be 0; given,
  // dQ reads K and V (dense packed) through tensor descriptors, which may read no row past it
  // (dK/dV reads dense packed Q and dO so, bounded by totalQ).
  const int32_t *cuSeqlensQ = nullptr, *cuSeqlensKV = nullptr;
  int64_t totalQ = 0, totalKV = 0;
};

// The workspace the backward needs: delta, one fp32 per query row and head.
int64_t attentionBackwardWorkspaceBytes(const AttentionBackwardArgs &args);

// How the dK/dV and dQ kernels run: the rows each program owns (keys for dK/dV, queries for
// dQ), the rows it walks a step, warps and pipeline stages.
struct AttentionBackwardPlan {
  int ownRows = 128, stepRows = 64, numWarps = 8, numStages = 2;
  // dV and dK by two kernels, each recomputing the scores (head_dim 256).
  bool splitDkDv = false;
  // A producer warp group copies the tiles each step walks (dense tensors, read through
  // descriptors): dK/dV's loop then covers the group's query heads and blocks at once.
  bool warpSpecialize = false;
  // Where K and V are dense and seq_kv is a multiple of ownRows, dK and dV leave a program as
  // one [ownRows, head_dim] tile each through tensor descriptors (one TMA store on Hopper)
  // instead of element stores whose addresses stay live across the loop: fewer spills (316 ->
  // 188 bytes in dK/dV at head_dim 128 on sm_90a) and a quicker compile. The plan at head_dim
  // 256, where it measured 2% faster (docs/notes/attention.md, "dK and dV as one tile").
  bool blockStore = false;
  // dQ's kernel (a forward over the keys: the scores, dP and dS again) where it differs from
  // dK/dV's: query rows a program, keys a step and warps; 0 keeps ownRows, stepRows and
  // numWarps.
  int dqOwnRows = 0, dqStepRows = 0, dqNumWarps = 0;
};
AttentionBackwardPlan planAttentionBackward(int64_t headDim);

void attentionBackward(const AttentionBackwardArgs &args, CUstream stream,
                       const AttentionBackwardPlan *plan = nullptr);

// The kernels of the dK/dV and the dQ steps and the specialization a call with `args`
// compiles for each (for `arch`; "" keeps the default), for tools and tests that compile them
// without launching. `part` picks, in the dK/dV kernel, what a program accumulates: both
// (kDkDv), or dV or dK alone (a split plan's two launches).
Kernel &attentionBackwardDkDvKernel();
Kernel &attentionBackwardDqKernel();
enum BackwardPart { kDkDv = 0, kDvOnly = 1, kDkOnly = 2 };
Specialization attentionBackwardSpecialization(const AttentionBackwardArgs &args, bool dkdv,
                                               const AttentionBackwardPlan &plan,
                                               const std::string &arch = "",
                                               BackwardPart part = kDkDv);

} // namespace tritium::kernels
