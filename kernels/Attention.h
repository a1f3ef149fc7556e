// Attention on the tensor cores (FlashAttention's forward), written in tritium's DSL as
// Triton's tutorial 06 is: each program takes BLOCK_M query rows of one (batch, head), walks
// the keys and values BLOCK_N at a time in a pipelined loop, and keeps a running softmax (the
// row maximum and sum) beside its fp32 accumulator, so that the [seq, seq] scores never reach
// memory. Q, K, V and O are [batch, heads, seq, head_dim] or [batch, seq, heads, head_dim]
// through their strides (elements; head_dim contiguous); K and V may have fewer heads than Q
// (grouped-query and multi-query attention: Q head h reads K/V head h / (heads / kv_heads)).
// Causal attention masks key j for query i unless j <= i + (seq_kv - seq_q), FlashAttention's
// bottom-right alignment; a sliding window bounds the keys on either side as well. The log-sum-exp of each row's scaled scores (natural log) is written
// to `lse` ([batch, heads, seq_q] fp32) when it is given, for a backward pass. fp16, bf16 or
// fp8 e4m3 (with descales, into a bf16 output);
// head_dim a multiple of 16 from 16 to 256 (other than 16, 32, 64, 128 and 256 padded to the
// next power of two). Pointers are device addresses (host addresses under TRITIUM_INTERPRET=1);
// the call is asynchronous on `stream`.
#pragma once

#include "frontend/Kernel.h"
#include "kernels/Dtype.h"

#include <cuda.h>

#include <cstdint>

namespace tritium::kernels {

struct AttentionStrides {
  int64_t batch = 0, head = 0, seq = 0; // 0 everywhere: dense [batch, heads, seq, head_dim]
};

struct AttentionArgs {
  void *o = nullptr;       // [batch, heads, seq_q, head_dim] in dtype
  float *lse = nullptr;    // may be null; else [batch, heads, seq_q]
  const void *q = nullptr; // [batch, heads, seq_q, head_dim]
  const void *k = nullptr; // [batch, kv_heads, seq_kv, head_dim]
  const void *v = nullptr; // [batch, kv_heads, seq_kv, head_dim]
  int64_t batch = 1, heads = 1, kvHeads = 0; // kvHeads 0: as many as heads
  int64_t seqQ = 0, seqKV = 0, headDim = 0;  // seqKV 0: seqQ
  AttentionStrides qStrides, kStrides, vStrides, oStrides;
  bool causal = false;
  // A sliding window (FlashAttention's window_size): query i sees keys i + (seq_kv - seq_q) -
  // windowLeft .. i + (seq_kv - seq_q) + windowRight; -1 leaves that side unbounded. With
  // causal, the right side is 0 whatever windowRight says.
  int64_t windowLeft = -1, windowRight = -1;
  // Varlen batches (FlashAttention's cu_seqlens): `batch` sequences packed one after another,
  // q and o [totalQ, heads, head_dim] and k and v [total_kv, kv_heads, head_dim] (dense, or
  // through their head and seq strides; batch strides are unused); cuSeqlensQ and cuSeqlensKV
  // ([batch + 1] int32, device memory) say where each sequence starts, the last entry the
  // total; seqQ and seqKV are the longest sequences; lse is then [heads, totalQ]. Causal
  // masks and windows align each sequence's queries with its own keys; an empty sequence
  // writes nothing. totalKV, the packed key rows (K and V's first extent), may be 0; given, K
  // and V (dense packed) are read through tensor descriptors, TMA copies on Hopper, which may
  // read no row past it; else through pointers (cp.async), about 0.8 times as fast.
  const int32_t *cuSeqlensQ = nullptr, *cuSeqlensKV = nullptr;
  int64_t totalQ = 0, totalKV = 0;
  float scale = 0; // 0: 1 / sqrt(head_dim)
  Dtype dtype = Dtype::bf16; // of q, k, v and o; fp8e4m3: q, k, v in fp8, o in bf16
  // fp8e4m3 only: per-tensor descales (the scores are scaled by descaleQ x descaleK, the output
  // by descaleV), as FlashAttention-3's fp8 forward takes them. P is quantized to e4m3 before
  // it meets V.
  float descaleQ = 1, descaleK = 1, descaleV = 1;
  // V stored transposed, as Triton's tutorial 06 passes it for fp8: each head's [head_dim,
  // seq_kv] with the keys contiguous, V's element (b, h, j, d) at b x vStrides.batch +
  // h x vStrides.head + d x vStrides.seq + j (all 0: dense [batch, kv_heads, head_dim,
  // seq_kv]). fp8 products read V K-major, which this form gives them in place; V as stored
  // above is transposed through shared memory at every step. Any dtype; not with varlen
  // batches (whose fp8 V the workspace below transposes). The backward takes V as stored above.
  bool vTransposed = false;
  // fp8e4m3 with V as stored (not vTransposed), fixed-length or varlen: device memory of
  // attentionForwardWorkspaceBytes(args) bytes into which V is first transposed
  // (attentionTransposeValues), so that the products read it in place: 0.4 of bf16's speed
  // becomes about 1.3 (docs/KERNELS.md, "Attention"). Varlen batches' K is copied there too,
  // each sequence's from a row that is a multiple of 16, and read through a tensor descriptor. Null: V is transposed through shared
  // memory at every step. Unused otherwise. workspaceBytes: its size, which the call checks.
  void *workspace = nullptr;
  int64_t workspaceBytes = 0;
};

// How one forward runs: query rows per program, keys per step, warps, pipeline stages.
struct AttentionPlan {
  int blockM = 128, blockN = 64, numWarps = 8, numStages = 3;
  // A producer warp issues the K/V tiles' TMA copies (range(...).warp_specialize(); dense K and
  // V on sm_90 only, where TMA copies them).
  bool warpSpecialize = false;
  // With it, the two compute warp groups take turns at the products (range(...).ping_pong()).
  bool pingPong = false;
  // Each warp group's softmax runs under its own previous P V product (FlashAttention-3's
  // order; dense K and V through tensor descriptors only).
  bool overlapSoftmax = false;
  // As many programs as fit the SMs at once walk the (query block, head) tiles, a head's
  // blocks together, the heaviest first when causal; with warpSpecialize the producer warp
  // group walks them too, loading the next tile's keys and values under this tile's epilogue.
  // Fixed-length batches (varlen ones keep a program per tile). On an H200 at head_dim 128
  // without a mask: +6% at 16 x 16 x 512, +2.3% at 16 x 16 x 1024, within 1% at 2048 keys and
  // more, so planAttention(args, ...) takes it there; causal -20% (a static walk gives
  // programs unequal work), head_dim 64 -14%, head_dim 256 ten times slower
  // (docs/notes/attention.md, "Persistent forward").
  bool persistent = false;
  // At least this many programs a SM (0: no bound), told to ptxas, which then keeps each
  // program's registers to what that many allow and schedules the code for that occupancy
  // (`Specialization::minBlocksPerSM`, PTX's .minnctapersm).
  int minProgramsPerSM = 0;
};
// `warpGroups`: the kernel compiles for sm_90a (wgmma); other targets stage every operand and
// get smaller tiles at head_dim 256. `vTransposed`: AttentionArgs::vTransposed.
AttentionPlan planAttention(int64_t headDim, Dtype dtype = Dtype::bf16, bool warpGroups = true,
                            bool vTransposed = false);

// The plan attentionForward takes for `args` without one given: planAttention's for its head
// dim and dtype, walked persistently where the sequences are short (at most 1024 keys) and
// unmasked, with dense K and V and a producer warp group (head_dim 128 in 16 bits on sm_90a);
// short causal ones (fixed lengths, no window) drop that producer and its turns.
AttentionPlan planAttention(const AttentionArgs &args, bool warpGroups);

void attentionForward(const AttentionArgs &args, CUstream stream,
                      const AttentionPlan *plan = nullptr);

// The bytes of AttentionArgs::workspace that the call takes: for fp8e4m3 with V as stored, V's
// size (fixed-length batches) or 2 x kv_heads x head_dim x (about batch x seqKV + 16 x batch +
// 272) (varlen: V^T and K, each sequence's keys from a multiple of 16, seqKV the longest);
// else 0.
int64_t attentionForwardWorkspaceBytes(const AttentionArgs &args);

// args' V (as stored, through vStrides) written transposed to `vt`: dense [batch, kv_heads,
// head_dim, seq_kv], the form AttentionArgs::vTransposed takes with vStrides all 0. Varlen
// batches: the workspace's form, [kv_heads, head_dim, width] with each sequence's keys from a
// column on 16 bytes and zeros between (AttentionArguments.h, varlenTransposedValuesWidth),
// which only the forward's workspace takes. Any dtype. Asynchronous on `stream`.
void attentionTransposeValues(void *vt, const AttentionArgs &args, CUstream stream);

// The forward's kernel and the specialization a call with `args` compiles (for `arch`; ""
// keeps the default), for tools and tests that compile it without launching.
Kernel &attentionForwardKernel();
Specialization attentionForwardSpecialization(const AttentionArgs &args, const AttentionPlan &plan,
                                              const std::string &arch = "");

} // namespace tritium::kernels
