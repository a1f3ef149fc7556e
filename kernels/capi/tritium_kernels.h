/* The kernel library's C interface: for callers that are not C++ (Python through ctypes: the
 * benchmark tools/bench_kernels.py calls tritium through it in the same process as its peers).
 * Each function mirrors one of the headers in kernels/; `dtype` is 0 (fp32), 1 (fp16) or 2
 * (bf16); a stride of 0 means a dense row; `stream` is a CUstream (cudaStream_t), 0 for the
 * default stream.
 * Each returns 0, or -1 with tritium_last_error() saying why (per thread). */
#ifndef TRITIUM_KERNELS_CAPI_H
#define TRITIUM_KERNELS_CAPI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

const char *tritium_last_error(void);

/* Autotuning of launch plans (kernels/Autotuner.h): 1 on, 0 off (the planner's choice), -1
 * back to following TRITIUM_AUTOTUNE. */
void tritium_set_autotune(int on);

int tritium_vector_add(int dtype, void *out, const void *a, const void *b, int64_t n,
                       void *stream);
int tritium_dropout(int dtype, void *out, const void *x, int64_t n, double p, int64_t seed,
                    void *stream);
int tritium_softmax_forward(int dtype, void *out, const void *in, int64_t rows, int64_t cols,
                            int64_t in_stride, int64_t out_stride, void *stream);
int tritium_softmax_backward(int dtype, void *dx, const void *o, const void *dout, int64_t rows,
                             int64_t cols, int64_t dx_stride, int64_t o_stride,
                             int64_t dout_stride, void *stream);
int tritium_layer_norm_forward(int dtype, void *y, float *mean, float *rstd, const void *x,
                               const void *weight, const void *bias, int64_t rows, int64_t cols,
                               int64_t x_stride, int64_t y_stride, float eps, void *stream);
int64_t tritium_layer_norm_backward_workspace(int64_t rows, int64_t cols);
int tritium_layer_norm_backward(int dtype, void *dx, void *dweight, void *dbias, const void *dy,
                                const void *x, const void *weight, const float *mean,
                                const float *rstd, int64_t rows, int64_t cols, int64_t dy_stride,
                                int64_t x_stride, int64_t dx_stride, void *workspace,
                                int64_t workspace_bytes, void *stream);
int tritium_rms_norm_forward(int dtype, void *y, float *rstd, const void *x, const void *weight,
                             int64_t rows, int64_t cols, int64_t x_stride, int64_t y_stride,
                             float eps, void *stream);
int64_t tritium_rms_norm_backward_workspace(int64_t rows, int64_t cols);
int tritium_rms_norm_backward(int dtype, void *dx, void *dweight, const void *dy, const void *x,
                              const void *weight, const float *rstd, int64_t rows, int64_t cols,
                              int64_t dy_stride, int64_t x_stride, int64_t dx_stride,
                              void *workspace, int64_t workspace_bytes, void *stream);
int tritium_cross_entropy_forward(int dtype, float *loss, float *lse, float *stats,
                                  const void *logits, const int64_t *targets, int64_t rows,
                                  int64_t vocab, int64_t stride, int64_t ignore_index,
                                  float label_smoothing, void *stream);
int tritium_cross_entropy_backward(int dtype, void *dlogits, const void *logits,
                                   const int64_t *targets, const float *lse, const float *stats,
                                   int64_t rows, int64_t vocab, int64_t logits_stride,
                                   int64_t dlogits_stride, int64_t ignore_index,
                                   float label_smoothing, float grad_loss, void *stream);

/* C = A x B (+ bias) (+ activation: 0 none, 1 GELU in its tanh form, 2 SiLU). A is [M, K]
 * row-major; B is [K, N] row-major, or [N, K] row-major when b_transposed (nn.Linear's
 * weights); in_dtype 1 (fp16), 2 (bf16), 3 (fp8e4m3), 4 (fp8e5m2), 5 (int8) or 0 (fp32,
 * through tf32); out_dtype 0, 1 or 2, or 6 (int32) for int8 operands; bias may be NULL, else
 * [N] in out_dtype; row strides of 0 mean dense rows (kernels/Matmul.h). */
int tritium_matmul(int in_dtype, int out_dtype, void *c, const void *a, const void *b,
                   const void *bias, int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb,
                   int64_t ldc, int b_transposed, int activation, void *stream);

/* The same with the whole epilogue: C = act(alpha * scale_a[m] * scale_b[n] * (A x B) +
 * bias[n]) + residual[m, n]. residual ([M, N], row stride ldr, in out_dtype), scale_a ([M]) and
 * scale_b ([N], fp32) may each be NULL; precision (fp32 operands) 0 tf32, 1 tf32x3, 2 ieee.
 * activation 3 is SwiGLU: B has 2N columns (gate, then up; bias and scale_b 2N entries) and
 * C = silu(gate) * up + residual. */
int tritium_matmul_fused(int in_dtype, int out_dtype, void *c, const void *a, const void *b,
                         const void *bias, const void *residual, const float *scale_a,
                         const float *scale_b, float alpha, int64_t M, int64_t N, int64_t K,
                         int64_t lda, int64_t ldb, int64_t ldc, int64_t ldr, int b_transposed,
                         int activation, int precision, void *stream);

/* The fused matmul into an fp8 C (out_dtype 3 fp8e4m3 or 4 fp8e5m2): C = saturate(result *
 * out_scale), bias and residual then bf16; or any float C. amax, when not NULL (one fp32 in
 * device memory, zeroed by the caller), receives the largest |result| before out_scale: FP8
 * training's delayed scaling. The other arguments as tritium_matmul_fused's. */
int tritium_matmul_quantized(int in_dtype, int out_dtype, void *c, const void *a, const void *b,
                             const void *bias, const void *residual, const float *scale_a,
                             const float *scale_b, float alpha, float out_scale, float *amax,
                             int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb,
                             int64_t ldc, int64_t ldr, int b_transposed, int activation,
                             void *stream);

/* The bytes of device memory with which tritium_matmul_split_k's plans may split K (each
 * slice's partial product in fp32, summed by a second kernel in a fixed order) or share the K
 * steps of a partly filled last wave of tiles between programs (stream-K: a partial product
 * slot and a flag per program, zeroed by each call); 0 where no plan for this product would;
 * -1 for a bad dtype or activation (tritium_last_error says which). */
int64_t tritium_matmul_workspace(int in_dtype, int out_dtype, int64_t M, int64_t N, int64_t K,
                                 int b_transposed, int activation);

/* tritium_matmul_quantized with a workspace (tritium_matmul_workspace's bytes; NULL or smaller:
 * no split), for products with fewer tiles than SMs and a long K (skinny shapes and small
 * batches) or a partly filled last wave of tiles. Calls sharing a workspace must be ordered on
 * one stream. */
int tritium_matmul_split_k(int in_dtype, int out_dtype, void *c, const void *a, const void *b,
                           const void *bias, const void *residual, const float *scale_a,
                           const float *scale_b, float alpha, float out_scale, float *amax,
                           int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb,
                           int64_t ldc, int64_t ldr, int b_transposed, int activation,
                           void *workspace, int64_t workspace_bytes, void *stream);

/* Every option of the library's matmul (kernels/Matmul.h's MatmulArgs), for
 * tritium_matmul_with. tritium_matmul_options_init fills it with the defaults (no bias,
 * residual, scales or amax; alpha and out_scale 1; dense rows; B [K, N]; no activation; tf32
 * for fp32 operands; the fast fp8 sum; no workspace); set what differs after it. Later
 * versions may add fields at the end: always start from tritium_matmul_options_init. */
typedef struct tritium_matmul_options {
  const void *bias;            /* [N] (2N for SwiGLU), in out_dtype (bf16 for an fp8 C) */
  const void *residual;        /* [M, N], row stride ldr */
  const float *scale_a;        /* [M] fp32 */
  const float *scale_b;        /* [N] fp32 */
  float alpha, out_scale;      /* out_scale: fp8 C only */
  float *amax;                 /* fp8 C only: the largest |result|, one fp32 zeroed by the caller */
  int64_t lda, ldb, ldc, ldr;  /* row strides in elements, 0: dense */
  int b_transposed;            /* B stored [N, K] */
  int activation;              /* 0 none, 1 GELU (tanh), 2 SiLU, 3 SwiGLU */
  int precision;               /* fp32 operands: 0 tf32, 1 tf32x3, 2 ieee */
  /* fp8 operands: 0 sums each product on the tensor cores in their own precision (fast, as
   * torch._scaled_mm's use_fast_accum); N, a positive multiple of 32, adds the partial sums
   * into fp32 every N of K (dot's max_num_imprecise_acc). */
  int64_t max_imprecise_acc;
  void *workspace;             /* tritium_matmul_workspace's bytes, or NULL: no split-K */
  int64_t workspace_bytes;
} tritium_matmul_options;
void tritium_matmul_options_init(tritium_matmul_options *options);

/* C = A x B with every option above; in_dtype and out_dtype as tritium_matmul's (3 and 4 also
 * for an fp8 C). */
int tritium_matmul_with(int in_dtype, int out_dtype, void *c, const void *a, const void *b,
                        int64_t M, int64_t N, int64_t K, const tritium_matmul_options *options,
                        void *stream);

/* The inclusive prefix sum of n elements (kernels/Cumsum.h): dtype 0 (fp32), 1 (fp16), 2 (bf16),
 * summed in fp32, or 6 (int32), exact; out may equal x; workspace of
 * tritium_cumsum_workspace(n) bytes of device memory. */
int64_t tritium_cumsum_workspace(int64_t n);
int tritium_cumsum(int dtype, void *out, const void *x, int64_t n, void *workspace,
                   int64_t workspace_bytes, void *stream);

/* Attention forward (kernels/Attention.h): softmax(scale Q K^T) V. q and o are [batch, heads,
 * seq_q, head_dim], k and v [batch, kv_heads, seq_kv, head_dim], each through its strides
 * (elements, {batch, head, seq}; all three 0: dense); lse may be NULL, else fp32 [batch, heads,
 * seq_q]; scale 0 means 1 / sqrt(head_dim); dtype 1 (fp16) or 2 (bf16). */
int tritium_attention_forward(int dtype, void *o, float *lse, const void *q, const void *k,
                              const void *v, int64_t batch, int64_t heads, int64_t kv_heads,
                              int64_t seq_q, int64_t seq_kv, int64_t head_dim,
                              const int64_t q_strides[3], const int64_t k_strides[3],
                              const int64_t v_strides[3], const int64_t o_strides[3],
                              int causal, float scale, void *stream);

/* The fp8 e4m3 forward (FlashAttention-3's): q, k and v in e4m3 with per-tensor descales (the
 * scores scaled by descale_q x descale_k, the output by descale_v), o in bf16; otherwise as
 * tritium_attention_forward. v_transposed 1: v stored [batch, kv_heads, head_dim, seq_kv], the
 * keys contiguous (v_strides then {batch, head, head_dim row}), which the products read in
 * place; v as the others is transposed through shared memory at every step, about 2.4 times
 * slower (docs/PERF.md), or first by tritium_attention_transpose_v. */
int tritium_attention_forward_fp8(void *o, float *lse, const void *q, const void *k,
                                  const void *v, int64_t batch, int64_t heads, int64_t kv_heads,
                                  int64_t seq_q, int64_t seq_kv, int64_t head_dim,
                                  const int64_t q_strides[3], const int64_t k_strides[3],
                                  const int64_t v_strides[3], const int64_t o_strides[3],
                                  int v_transposed, int causal, float scale, float descale_q,
                                  float descale_k, float descale_v, void *stream);

/* v (dtype 1 fp16, 2 bf16 or 3 fp8e4m3; [batch, kv_heads, seq_kv, head_dim] through
 * v_strides, NULL for dense) written
 * transposed to vt: dense [batch, kv_heads, head_dim, seq_kv], the form
 * tritium_attention_forward_fp8 reads in place with v_transposed 1 and v_strides NULL. */
int tritium_attention_transpose_v(int dtype, void *vt, const void *v, int64_t batch,
                                  int64_t kv_heads, int64_t seq_kv, int64_t head_dim,
                                  const int64_t v_strides[3], void *stream);

/* The forward over dense [batch, heads, seq, head_dim] tensors with a sliding window
 * (FlashAttention's window_size: window_left / window_right keys on either side, -1
 * unbounded; causal makes the right side 0). */
int tritium_attention_forward_window(int dtype, void *o, float *lse, const void *q,
                                     const void *k, const void *v, int64_t batch, int64_t heads,
                                     int64_t kv_heads, int64_t seq_q, int64_t seq_kv,
                                     int64_t head_dim, int causal, int64_t window_left,
                                     int64_t window_right, float scale, void *stream);

/* The forward over varlen batches (FlashAttention's cu_seqlens): batch sequences packed one
 * after another, q and o dense [total_q, heads, head_dim], k and v [total_kv, kv_heads,
 * head_dim]; cu_seqlens_q / cu_seqlens_kv int32 [batch + 1] in device memory; max_seq_q and
 * max_seq_kv the longest sequences; lse NULL or fp32 [heads, total_q]; a window as above. */
int tritium_attention_forward_varlen(int dtype, void *o, float *lse, const void *q,
                                     const void *k, const void *v, const int32_t *cu_seqlens_q,
                                     const int32_t *cu_seqlens_kv, int64_t batch, int64_t heads,
                                     int64_t kv_heads, int64_t total_q, int64_t max_seq_q,
                                     int64_t max_seq_kv, int64_t head_dim, int causal,
                                     int64_t window_left, int64_t window_right, float scale,
                                     void *stream);

/* The same with total_kv, the packed key rows (k and v's first extent): k and v are then read
 * through tensor descriptors (TMA copies on Hopper, about 1.25 times as fast), which may read
 * no row past it. */
int tritium_attention_forward_varlen_total_kv(int dtype, void *o, float *lse, const void *q,
                                              const void *k, const void *v,
                                              const int32_t *cu_seqlens_q,
                                              const int32_t *cu_seqlens_kv, int64_t batch,
                                              int64_t heads, int64_t kv_heads, int64_t total_q,
                                              int64_t total_kv, int64_t max_seq_q,
                                              int64_t max_seq_kv, int64_t head_dim, int causal,
                                              int64_t window_left, int64_t window_right,
                                              float scale, void *stream);

/* The fp8 e4m3 forward over varlen batches: as tritium_attention_forward_varlen with q, k and
 * v in e4m3, o in bf16 and per-tensor descales (as tritium_attention_forward_fp8). With a
 * workspace of tritium_attention_forward_varlen_fp8_workspace() bytes of device memory, V is
 * first transposed into it and K copied there, so that the products read both in place
 * through TMA (2-4.7 times faster, docs/KERNELS.md); NULL transposes V through shared
 * memory at every step. The workspace
 * function returns -1 for arguments the forward would refuse. */
int64_t tritium_attention_forward_varlen_fp8_workspace(int64_t batch, int64_t kv_heads,
                                                       int64_t max_seq_kv, int64_t head_dim);
int tritium_attention_forward_varlen_fp8(void *o, float *lse, const void *q, const void *k,
                                         const void *v, const int32_t *cu_seqlens_q,
                                         const int32_t *cu_seqlens_kv, int64_t batch,
                                         int64_t heads, int64_t kv_heads, int64_t total_q,
                                         int64_t max_seq_q, int64_t max_seq_kv, int64_t head_dim,
                                         int causal, int64_t window_left, int64_t window_right,
                                         float scale, float descale_q, float descale_k,
                                         float descale_v, void *workspace,
                                         int64_t workspace_bytes, void *stream);

/* Attention backward (kernels/AttentionBackward.h): dq, dk, dv from the forward's o and lse
 * (fp32 [batch, heads, seq_q], dense) and dout. q, dq, o and dout are [batch, heads, seq_q,
 * head_dim] and k, dk, v, dv [batch, kv_heads, seq_kv, head_dim], through strides (elements,
 * {batch, head, seq}; NULL: dense): dq as q, dk as k, dv as v, dout as o. Varlen batches:
 * cu_seqlens_q / cu_seqlens_kv int32 [batch + 1] in device memory (both NULL otherwise), the
 * tensors packed [total, heads, head_dim], seq_q and seq_kv the longest sequences, total_q the
 * packed query rows and lse [heads, total_q], as tritium_attention_forward_varlen writes it. A
 * window as the forward's (-1 unbounded); scale 0 means 1 / sqrt(head_dim); dtype 1 (fp16) or
 * 2 (bf16); workspace of tritium_attention_backward_workspace() bytes of device memory. */
int64_t tritium_attention_backward_workspace(int64_t batch, int64_t heads, int64_t seq_q,
                                             int64_t total_q);
int tritium_attention_backward(int dtype, void *dq, void *dk, void *dv, const void *q,
                               const void *k, const void *v, const void *o, const void *dout,
                               const float *lse, const int32_t *cu_seqlens_q,
                               const int32_t *cu_seqlens_kv, int64_t batch, int64_t heads,
                               int64_t kv_heads, int64_t seq_q, int64_t seq_kv, int64_t total_q,
                               int64_t head_dim, const int64_t q_strides[3],
                               const int64_t k_strides[3], const int64_t v_strides[3],
                               const int64_t o_strides[3], int causal, int64_t window_left,
                               int64_t window_right, float scale, void *workspace,
                               int64_t workspace_bytes, void *stream);
/* The same with total_kv, the packed key rows of a varlen batch (0: not given): with it, dQ
 * reads dense packed k and v through tensor descriptors (TMA copies on Hopper), which may read
 * no row past it. */
int tritium_attention_backward_total_kv(
    int dtype, void *dq, void *dk, void *dv, const void *q, const void *k, const void *v,
    const void *o, const void *dout, const float *lse, const int32_t *cu_seqlens_q,
    const int32_t *cu_seqlens_kv, int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q,
    int64_t seq_kv, int64_t total_q, int64_t total_kv, int64_t head_dim,
    const int64_t q_strides[3], const int64_t k_strides[3], const int64_t v_strides[3],
    const int64_t o_strides[3], int causal, int64_t window_left, int64_t window_right,
    float scale, void *workspace, int64_t workspace_bytes, void *stream);

/* Decode attention (kernels/AttentionDecode.h, flash-decoding): q and o [batch, seq_q, heads,
 * head_dim] through {batch, head, seq} strides; the K and V caches through {page, seq, head}
 * strides, contiguous (block_table NULL) or paged (block_table int32 [batch, max_pages]);
 * seq_lens int32 [batch] or NULL (max_seq_kv for all); strides of NULL mean dense; workspace
 * of tritium_attention_decode_workspace() bytes, or NULL for one part per sequence. */
int64_t tritium_attention_decode_workspace(int64_t batch, int64_t heads, int64_t kv_heads,
                                           int64_t seq_q, int64_t max_seq_kv, int64_t head_dim);
int tritium_attention_decode(int dtype, void *o, float *lse, const void *q, const void *k,
                             const void *v, const int32_t *seq_lens, const int32_t *block_table,
                             int64_t page_size, int64_t max_pages, int64_t batch, int64_t heads,
                             int64_t kv_heads, int64_t seq_q, int64_t max_seq_kv,
                             int64_t head_dim, const int64_t q_strides[3],
                             const int64_t o_strides[3], const int64_t k_strides[3],
                             const int64_t v_strides[3], int causal, float scale,
                             void *workspace, int64_t workspace_bytes, void *stream);

#ifdef __cplusplus
}
#endif

#endif
