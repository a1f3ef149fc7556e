// Attention for decoding (flash-decoding), written in tritium's DSL: a few new query tokens per
// sequence against a long KV cache. The cache is read once, split along its length over
// several programs per (sequence, KV head), so that a batch of one still fills the GPU; each
// program takes every query head of its KV head's group (grouped-query and multi-query
// attention) as the rows of one tile, walks its part of the cache with a running softmax, and
// writes a partial output and log-sum-exp; a second kernel combines the parts. The cache is
// contiguous ([batch, max_seq, kv_heads, head_dim] or any order through strides) or paged, as
// vLLM keeps it: pages of `page_size` positions, [num_pages, page_size, kv_heads, head_dim]
// through strides, found through a block table ([batch, max_pages] int32 page numbers).
// Sequences have their own lengths (`seq_lens`, int32 [batch]) or one length for all. With
// seq_q > 1 (speculative tokens), query token t of a sequence of length L sees positions up
// to L - seq_q + t when `causal`. fp16 or bf16; head_dim a multiple of 16 up to 256 (others
// than powers of two padded to the next, as the forward's). Pointers are device
// addresses (host addresses under TRITIUM_INTERPRET=1); the call is asynchronous on `stream`.
#pragma once

#include "frontend/Kernel.h"
#include "kernels/Dtype.h"

#include <cuda.h>

#include <cstdint>

namespace tritium::kernels {

// Element (b, h, s, d) of q and o is at b * batch + h * head + s * seq + d.
struct DecodeQueryStrides {
  int64_t batch = 0, head = 0, seq = 0; // 0 everywhere: dense [batch, seq, heads, head_dim]
};

// Element (position p, KV head h, d) of a sequence's cache is at page * page + slot * seq +
// h * head + d: contiguous, page is the batch index and slot = p; paged, page is
// block_table[b][p / page_size] and slot = p % page_size.
struct DecodeCacheStrides {
  int64_t page = 0, seq = 0, head = 0; // 0 everywhere: dense [pages, page_size, kv_heads, d]
};

struct AttentionDecodeArgs {
  void *o = nullptr;       // [batch, seq_q, heads, head_dim] (through oStrides)
  float *lse = nullptr;    // may be null; else [batch, heads, seq_q], natural log
  const void *q = nullptr; // [batch, seq_q, heads, head_dim] (through qStrides)
  const void *k = nullptr; // the key cache (through kStrides)
  const void *v = nullptr; // the value cache (through vStrides)
  const int32_t *seqLens = nullptr;    // [batch] cache lengths; null: maxSeqKV for every one
  const int32_t *blockTable = nullptr; // [batch, maxPages] page numbers; null: contiguous
  int64_t pageSize = 0, maxPages = 0;  // paged: positions per page, block-table columns
  int64_t batch = 1, heads = 1, kvHeads = 0; // kvHeads 0: as many as heads
  int64_t seqQ = 1, maxSeqKV = 0, headDim = 0;
  DecodeQueryStrides qStrides, oStrides;
  DecodeCacheStrides kStrides, vStrides;
  bool causal = true; // only matters for seq_q > 1
  float scale = 0;    // 0: 1 / sqrt(head_dim)
  Dtype dtype = Dtype::bf16;
  // Scratch for the split parts (attentionDecodeWorkspaceBytes); null: one program per
  // (sequence, KV head) reads the whole cache and no combine runs.
  void *workspace = nullptr;
  int64_t workspaceBytes = 0;
};

// How a decode runs: cache positions per step, warps, pipeline stages, parts per sequence and
// KV head (0: enough programs to fill the GPU twice, at least 256 positions a part).
struct AttentionDecodePlan {
  int blockN = 64, numWarps = 4, numStages = 3, splits = 0;
};
// The plan for a contiguous or a paged cache (the same today: 64 positions a step on 4 warps,
// 3 stages; a paged cache's block-table entries are loaded again where its tiles are copied
// ahead, so both read the cache through cp.async rings). At head_dim 256, 32 positions a step,
// so that the ring's three stages of K and V tiles (96 KB; 105 KB with the kernel's other
// buffers) still leave room for two programs a SM, as the parts' count assumes.
AttentionDecodePlan planAttentionDecode(bool paged, int64_t headDim = 128);

// Bytes of scratch the split parts of a decode with `args` need (fp32 partial outputs and
// log-sum-exps) for `splits` parts (0: the planner's choice on the current GPU).
int64_t attentionDecodeWorkspaceBytes(const AttentionDecodeArgs &args, int splits = 0);

void attentionDecode(const AttentionDecodeArgs &args, CUstream stream,
                     const AttentionDecodePlan *plan = nullptr);

// The split kernel and the specialization a call with `args` in `splits` parts compiles (for
// `arch`; "" keeps the default), for tools and tests that compile it without launching.
Kernel &attentionDecodeKernel();
Specialization attentionDecodeSpecialization(const AttentionDecodeArgs &args,
                                             const AttentionDecodePlan &plan, int64_t splits,
                                             const std::string &arch = "");

} // namespace tritium::kernels
