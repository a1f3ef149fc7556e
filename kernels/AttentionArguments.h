// Launch-argument rules the attention kernels share (Attention.cpp, AttentionBackward.cpp): the
// tensors' strides, varlen batches and the sliding window's reach.
#pragma once

#include "kernels/Arguments.h"
#include "kernels/Attention.h"

#include <cstdint>

namespace tritium::kernels {

// `given`, or where it is all 0 the dense strides of [batch, heads, seq, head_dim] (packed
// [total, heads, head_dim] for varlen batches, whose batch stride is then unused). A sequence
// stride below head_dim is an error naming the tensor.
AttentionStrides attentionStrides(const Arguments &args, const AttentionStrides &given,
                                  int64_t heads, int64_t seq, int64_t headDim, bool varlen,
                                  const char *name);

// The strides of a transposed tensor ([batch, heads, head_dim, seq], the keys contiguous):
// `given`, or where it is all 0 the dense ones; `seq` is the stride of a head_dim row. A row
// stride below seq is an error naming the tensor.
AttentionStrides transposedStrides(const Arguments &args, const AttentionStrides &given,
                                   int64_t heads, int64_t seq, int64_t headDim, const char *name);

// Whether `given` strides are those of a dense [batch, heads, seq, head_dim] tensor (all 0
// means dense), which a tensor descriptor reads as one [batch x heads x seq, head_dim] matrix.
bool denseStrides(const AttentionStrides &given, int64_t heads, int64_t seq, int64_t headDim);

// Whether `given` strides are those of a dense [batch, seq, heads, head_dim] tensor
// (FlashAttention's layout), which a tensor descriptor reads as one [batch x seq, heads x
// head_dim] matrix, a head's tiles at its head_dim columns.
bool seqMajorStrides(const AttentionStrides &given, int64_t heads, int64_t seq, int64_t headDim);

// Whether `given` strides are those of a dense transposed [batch, heads, head_dim, seq] tensor
// (all 0 means dense), which a tensor descriptor reads as one [batch x heads x head_dim, seq]
// matrix.
bool denseTransposedStrides(const AttentionStrides &given, int64_t heads, int64_t seq,
                            int64_t headDim);

// Whether `given` strides are those of a varlen batch's dense packed [total, heads, head_dim]
// tensor (the batch stride unused; all 0 means dense), which a tensor descriptor reads as one
// [total, heads x head_dim] matrix, as seqMajorStrides' layout.
bool packedStrides(const AttentionStrides &given, int64_t heads, int64_t headDim);

// Whether the call is varlen (cu_seqlens given, both or neither), with `totalQ`, the packed
// query rows, at least `seqQ`, the longest sequence.
bool checkVarlen(const Arguments &args, const void *cuSeqlensQ, const void *cuSeqlensKV,
                 int64_t totalQ, int64_t seqQ);

// The keys a query sees on either side: -1 (unbounded) and anything wider become `unbounded`;
// causal attention sees none to the right.
struct WindowReach {
  int64_t left, right;
};
WindowReach windowReach(int64_t windowLeft, int64_t windowRight, bool causal, int64_t unbounded);

// Varlen fp8's V transposed into the forward's workspace: [kv_heads, head_dim, width], the
// keys of sequence b from column 16 x (ceil(cu_kv[b] / 16) + b), so that each head_dim row of
// a sequence starts on 16 bytes (its tiles are then 16-byte cp.async copies). The columns
// after a sequence's keys up to the next one's first, and 256 after the last's, are zeros:
// a step's tile may then read past a sequence's keys, whose scores are masked, without a mask
// of its own (0 x a finite value). `width` covers batch x seqKV keys, seqKV the longest.
int64_t varlenTransposedValuesWidth(int64_t batch, int64_t seqKV);

// Varlen fp8's K written to `kw` (the forward's workspace after V^T): [width, kv_heads,
// head_dim], sequence b's keys from row 16 x (ceil(cu_kv[b] / 16) + b) as V^T's columns,
// zeros between, so that its tiles come through a descriptor whose boxes start on 16 rows.
// Asynchronous on `stream`; `a` as the forward was given it.
void varlenAlignKeys(void *kw, const AttentionArgs &a, CUstream stream);

// Head dims the kernels take: multiples of 16 from 16 to 256. A block's extent is a power of
// two, so a head dim that is not one is padded up to the next (96 -> 128: the products then
// do a third more work than they need), its extra columns masked off the loads and stores.
void checkHeadDim(const Arguments &args, int64_t headDim);
int64_t paddedHeadDim(int64_t headDim);

} // namespace tritium::kernels
