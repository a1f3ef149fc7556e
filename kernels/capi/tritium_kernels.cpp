// The C interface: each call converts its arguments, calls the C++ function and turns an
// exception into -1 and a message kept per thread.
#include "kernels/capi/tritium_kernels.h"

#include "kernels/Attention.h"
#include "kernels/AttentionArguments.h"
#include "kernels/AttentionBackward.h"
#include "kernels/AttentionDecode.h"
#include "kernels/Autotuner.h"
#include "kernels/CrossEntropy.h"
#include "kernels/Cumsum.h"
#include "kernels/Elementwise.h"
#include "kernels/Matmul.h"
#include "kernels/Norms.h"
#include "kernels/SoftmaxPlan.h"

#include <exception>
#include <string>

using namespace tritium::kernels;
using tritium::KernelArg;

namespace {

thread_local std::string lastError;

Dtype toDtype(int d) {
  if (d < 0 || d > 2)
    throw std::invalid_argument("dtype is " + std::to_string(d) +
                                ", but must be 0 (fp32), 1 (fp16) or 2 (bf16)");
  return Dtype(d);
}

// The dtypes that tritium_attention_transpose_v moves: the above and fp8e4m3.
Dtype toValuesDtype(int d) {
  if (d < 0 || d > 3)
    throw std::invalid_argument("dtype is " + std::to_string(d) +
                                ", but must be 0 (fp32), 1 (fp16), 2 (bf16) or 3 (fp8e4m3)");
  return Dtype(d);
}

// The matmul's dtypes: the above and the 8-bit operands, int32 for int8 products.
Dtype toMatmulDtype(const char *name, int d) {
  if (d < 0 || d > 6)
    throw std::invalid_argument(std::string(name) + " is " + std::to_string(d) +
                                ", but must be 0 (fp32), 1 (fp16), 2 (bf16), 3 (fp8e4m3), "
                                "4 (fp8e5m2), 5 (int8) or 6 (int32)");
  return Dtype(d);
}

CUstream toStream(void *s) { return static_cast<CUstream>(s); }

// An attention tensor's {batch, head, seq} strides; NULL: dense.
AttentionStrides strides(const int64_t *s) {
  return s ? AttentionStrides{s[0], s[1], s[2]} : AttentionStrides{};
}

void checkActivation(int activation) {
  if (activation < 0 || activation > 3)
    throw std::invalid_argument("activation is " + std::to_string(activation) +
                                ", but must be 0 (none), 1 (GELU), 2 (SiLU) or 3 (SwiGLU)");
}

template <typename F> int guarded(F &&f) {
  try {
    f();
    lastError.clear();
    return 0;
  } catch (const std::exception &e) {
    lastError = e.what();
  } catch (...) {
    lastError = "unknown exception";
  }
  return -1;
}

} // namespace

extern "C" {

const char *tritium_last_error(void) { return lastError.c_str(); }

int tritium_matmul(int in_dtype, int out_dtype, void *c, const void *a, const void *b,
                   const void *bias, int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb,
                   int64_t ldc, int b_transposed, int activation, void *stream) {
  return guarded([&] {
    if (activation < 0 || activation > 2)
      throw std::invalid_argument("activation is " + std::to_string(activation) +
                                  ", but must be 0 (none), 1 (GELU) or 2 (SiLU)");
    matmul({.c = c, .a = a, .b = b, .bias = bias, .M = M, .N = N, .K = K, .lda = lda,
            .ldb = ldb, .ldc = ldc, .bTransposed = b_transposed != 0,
            .activation = Activation(activation), .in = toMatmulDtype("in_dtype", in_dtype),
            .out = toMatmulDtype("out_dtype", out_dtype)},
           toStream(stream));
  });
}

// The options the fused, quantized and split-K entries share; the rest keep their defaults.
static tritium_matmul_options epilogueOptions(const void *bias, const void *residual,
                                              const float *scale_a, const float *scale_b,
                                              float alpha, int64_t lda, int64_t ldb, int64_t ldc,
                                              int64_t ldr, int b_transposed, int activation) {
  tritium_matmul_options o;
  tritium_matmul_options_init(&o);
  o.bias = bias;
  o.residual = residual;
  o.scale_a = scale_a;
  o.scale_b = scale_b;
  o.alpha = alpha;
  o.lda = lda, o.ldb = ldb, o.ldc = ldc, o.ldr = ldr;
  o.b_transposed = b_transposed;
  o.activation = activation;
  return o;
}

int tritium_matmul_fused(int in_dtype, int out_dtype, void *c, const void *a, const void *b,
                         const void *bias, const void *residual, const float *scale_a,
                         const float *scale_b, float alpha, int64_t M, int64_t N, int64_t K,
                         int64_t lda, int64_t ldb, int64_t ldc, int64_t ldr, int b_transposed,
                         int activation, int precision, void *stream) {
  tritium_matmul_options o = epilogueOptions(bias, residual, scale_a, scale_b, alpha, lda, ldb,
                                             ldc, ldr, b_transposed, activation);
  o.precision = precision;
  return tritium_matmul_with(in_dtype, out_dtype, c, a, b, M, N, K, &o, stream);
}

int tritium_matmul_quantized(int in_dtype, int out_dtype, void *c, const void *a, const void *b,
                             const void *bias, const void *residual, const float *scale_a,
                             const float *scale_b, float alpha, float out_scale, float *amax,
                             int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb,
                             int64_t ldc, int64_t ldr, int b_transposed, int activation,
                             void *stream) {
  return tritium_matmul_split_k(in_dtype, out_dtype, c, a, b, bias, residual, scale_a, scale_b,
                                alpha, out_scale, amax, M, N, K, lda, ldb, ldc, ldr,
                                b_transposed, activation, nullptr, 0, stream);
}

int64_t tritium_matmul_workspace(int in_dtype, int out_dtype, int64_t M, int64_t N, int64_t K,
                                 int b_transposed, int activation) {
  int64_t bytes = -1;
  guarded([&] {
    checkActivation(activation);
    bytes = matmulWorkspaceBytes({.M = M, .N = N, .K = K, .bTransposed = b_transposed != 0,
                                  .activation = Activation(activation),
                                  .in = toMatmulDtype("in_dtype", in_dtype),
                                  .out = toMatmulDtype("out_dtype", out_dtype)});
  });
  return bytes;
}

int tritium_matmul_split_k(int in_dtype, int out_dtype, void *c, const void *a, const void *b,
                           const void *bias, const void *residual, const float *scale_a,
                           const float *scale_b, float alpha, float out_scale, float *amax,
                           int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb,
                           int64_t ldc, int64_t ldr, int b_transposed, int activation,
                           void *workspace, int64_t workspace_bytes, void *stream) {
  tritium_matmul_options o = epilogueOptions(bias, residual, scale_a, scale_b, alpha, lda, ldb,
                                             ldc, ldr, b_transposed, activation);
  o.out_scale = out_scale;
  o.amax = amax;
  o.workspace = workspace;
  o.workspace_bytes = workspace_bytes;
  return tritium_matmul_with(in_dtype, out_dtype, c, a, b, M, N, K, &o, stream);
}

void tritium_matmul_options_init(tritium_matmul_options *options) {
  if (options)
    *options = tritium_matmul_options{.alpha = 1, .out_scale = 1};
}

int tritium_matmul_with(int in_dtype, int out_dtype, void *c, const void *a, const void *b,
                        int64_t M, int64_t N, int64_t K, const tritium_matmul_options *options,
                        void *stream) {
  return guarded([&] {
    if (!options)
      throw std::invalid_argument("matmul: options is null (fill one with "
                                  "tritium_matmul_options_init)");
    const tritium_matmul_options &o = *options;
    checkActivation(o.activation);
    if (o.precision < 0 || o.precision > 2)
      throw std::invalid_argument("precision is " + std::to_string(o.precision) +
                                  ", but must be 0 (tf32), 1 (tf32x3) or 2 (ieee)");
    matmul({.c = c, .a = a, .b = b, .bias = o.bias, .residual = o.residual,
            .scaleA = o.scale_a, .scaleB = o.scale_b, .alpha = o.alpha,
            .outScale = o.out_scale, .amax = o.amax, .M = M, .N = N, .K = K, .lda = o.lda,
            .ldb = o.ldb, .ldc = o.ldc, .ldr = o.ldr, .bTransposed = o.b_transposed != 0,
            .activation = Activation(o.activation), .in = toMatmulDtype("in_dtype", in_dtype),
            .out = toMatmulDtype("out_dtype", out_dtype), .precision = Precision(o.precision),
            .maxImpreciseAcc = o.max_imprecise_acc, .workspace = o.workspace,
            .workspaceBytes = o.workspace_bytes},
           toStream(stream));
  });
}

int64_t tritium_cumsum_workspace(int64_t n) { return cumsumWorkspaceBytes(n); }

int tritium_cumsum(int dtype, void *out, const void *x, int64_t n, void *workspace,
                   int64_t workspace_bytes, void *stream) {
  return guarded([&] {
    cumsum(toMatmulDtype("dtype", dtype), out, x, n, workspace, workspace_bytes,
           toStream(stream));
  });
}

// The arguments tritium_attention_forward and its fp8 form share.
static AttentionArgs forwardArgs(void *o, float *lse, const void *q, const void *k,
                                 const void *v, int64_t batch, int64_t heads, int64_t kv_heads,
                                 int64_t seq_q, int64_t seq_kv, int64_t head_dim,
                                 const int64_t q_strides[3], const int64_t k_strides[3],
                                 const int64_t v_strides[3], const int64_t o_strides[3],
                                 int causal, float scale) {
  return {.o = o, .lse = lse, .q = q, .k = k, .v = v, .batch = batch, .heads = heads,
          .kvHeads = kv_heads, .seqQ = seq_q, .seqKV = seq_kv, .headDim = head_dim,
          .qStrides = strides(q_strides), .kStrides = strides(k_strides),
          .vStrides = strides(v_strides), .oStrides = strides(o_strides), .causal = causal != 0,
          .scale = scale};
}

// The arguments the packed (cu_seqlens) forward calls share; null offsets are named here
// because AttentionArgs reads a null cuSeqlensQ as "not packed".
static AttentionArgs varlenForwardArgs(void *o, float *lse, const void *q, const void *k,
                                       const void *v, const int32_t *cu_seqlens_q,
                                       const int32_t *cu_seqlens_kv, int64_t batch,
                                       int64_t heads, int64_t kv_heads, int64_t total_q,
                                       int64_t max_seq_q, int64_t max_seq_kv, int64_t head_dim,
                                       int causal, int64_t window_left, int64_t window_right,
                                       float scale) {
  for (auto [name, p] : {std::pair{"cu_seqlens_q", cu_seqlens_q}, {"cu_seqlens_kv", cu_seqlens_kv}})
    if (!p)
      throw std::invalid_argument(std::string("attentionForward: ") + name + " is null");
  return {.o = o, .lse = lse, .q = q, .k = k, .v = v, .batch = batch, .heads = heads,
          .kvHeads = kv_heads, .seqQ = max_seq_q, .seqKV = max_seq_kv, .headDim = head_dim,
          .causal = causal != 0, .windowLeft = window_left, .windowRight = window_right,
          .cuSeqlensQ = cu_seqlens_q, .cuSeqlensKV = cu_seqlens_kv, .totalQ = total_q,
          .scale = scale};
}

int tritium_attention_forward(int dtype, void *o, float *lse, const void *q, const void *k,
                              const void *v, int64_t batch, int64_t heads, int64_t kv_heads,
                              int64_t seq_q, int64_t seq_kv, int64_t head_dim,
                              const int64_t q_strides[3], const int64_t k_strides[3],
                              const int64_t v_strides[3], const int64_t o_strides[3],
                              int causal, float scale, void *stream) {
  return guarded([&] {
    AttentionArgs a = forwardArgs(o, lse, q, k, v, batch, heads, kv_heads, seq_q, seq_kv,
                                  head_dim, q_strides, k_strides, v_strides, o_strides, causal,
                                  scale);
    a.dtype = toDtype(dtype);
    attentionForward(a, toStream(stream));
  });
}

int tritium_attention_forward_fp8(void *o, float *lse, const void *q, const void *k,
                                  const void *v, int64_t batch, int64_t heads, int64_t kv_heads,
                                  int64_t seq_q, int64_t seq_kv, int64_t head_dim,
                                  const int64_t q_strides[3], const int64_t k_strides[3],
                                  const int64_t v_strides[3], const int64_t o_strides[3],
                                  int v_transposed, int causal, float scale, float descale_q,
                                  float descale_k, float descale_v, void *stream) {
  return guarded([&] {
    AttentionArgs a = forwardArgs(o, lse, q, k, v, batch, heads, kv_heads, seq_q, seq_kv,
                                  head_dim, q_strides, k_strides, v_strides, o_strides, causal,
                                  scale);
    a.dtype = Dtype::fp8e4m3;
    a.descaleQ = descale_q, a.descaleK = descale_k, a.descaleV = descale_v;
    a.vTransposed = v_transposed != 0;
    attentionForward(a, toStream(stream));
  });
}

int tritium_attention_transpose_v(int dtype, void *vt, const void *v, int64_t batch,
                                  int64_t kv_heads, int64_t seq_kv, int64_t head_dim,
                                  const int64_t v_strides[3], void *stream) {
  return guarded([&] {
    AttentionArgs a{.v = v, .batch = batch, .heads = kv_heads, .kvHeads = kv_heads,
                    .seqQ = seq_kv, .seqKV = seq_kv, .headDim = head_dim,
                    .vStrides = strides(v_strides),
                    .dtype = toValuesDtype(dtype)};
    attentionTransposeValues(vt, a, toStream(stream));
  });
}

int tritium_attention_forward_varlen(int dtype, void *o, float *lse, const void *q,
                                     const void *k, const void *v, const int32_t *cu_seqlens_q,
                                     const int32_t *cu_seqlens_kv, int64_t batch, int64_t heads,
                                     int64_t kv_heads, int64_t total_q, int64_t max_seq_q,
                                     int64_t max_seq_kv, int64_t head_dim, int causal,
                                     int64_t window_left, int64_t window_right, float scale,
                                     void *stream) {
  return tritium_attention_forward_varlen_total_kv(
      dtype, o, lse, q, k, v, cu_seqlens_q, cu_seqlens_kv, batch, heads, kv_heads, total_q, 0,
      max_seq_q, max_seq_kv, head_dim, causal, window_left, window_right, scale, stream);
}

int tritium_attention_forward_varlen_total_kv(int dtype, void *o, float *lse, const void *q,
                                              const void *k, const void *v,
                                              const int32_t *cu_seqlens_q,
                                              const int32_t *cu_seqlens_kv, int64_t batch,
                                              int64_t heads, int64_t kv_heads, int64_t total_q,
                                              int64_t total_kv, int64_t max_seq_q,
                                              int64_t max_seq_kv, int64_t head_dim, int causal,
                                              int64_t window_left, int64_t window_right,
                                              float scale, void *stream) {
  return guarded([&] {
    AttentionArgs a = varlenForwardArgs(o, lse, q, k, v, cu_seqlens_q, cu_seqlens_kv, batch,
                                        heads, kv_heads, total_q, max_seq_q, max_seq_kv,
                                        head_dim, causal, window_left, window_right, scale);
    a.totalKV = total_kv;
    a.dtype = toDtype(dtype);
    attentionForward(a, toStream(stream));
  });
}

int64_t tritium_attention_forward_varlen_fp8_workspace(int64_t batch, int64_t kv_heads,
                                                       int64_t max_seq_kv, int64_t head_dim) {
  int64_t bytes = -1;
  guarded([&] {
    Arguments args("attentionForwardWorkspaceBytes");
    args.atLeast("batch", batch, 1);
    args.atLeast("kv_heads", kv_heads, 1);
    args.atLeast("max_seq_kv", max_seq_kv, 0);
    checkHeadDim(args, head_dim);
    static const int32_t varlen = 0; // (the size reads only whether cu_seqlens are given)
    bytes = attentionForwardWorkspaceBytes({.batch = batch, .heads = kv_heads,
                                            .kvHeads = kv_heads, .seqQ = max_seq_kv,
                                            .seqKV = max_seq_kv, .headDim = head_dim,
                                            .cuSeqlensQ = &varlen, .cuSeqlensKV = &varlen,
                                            .dtype = Dtype::fp8e4m3});
  });
  return bytes;
}

int tritium_attention_forward_varlen_fp8(void *o, float *lse, const void *q, const void *k,
                                         const void *v, const int32_t *cu_seqlens_q,
                                         const int32_t *cu_seqlens_kv, int64_t batch,
                                         int64_t heads, int64_t kv_heads, int64_t total_q,
                                         int64_t max_seq_q, int64_t max_seq_kv, int64_t head_dim,
                                         int causal, int64_t window_left, int64_t window_right,
                                         float scale, float descale_q, float descale_k,
                                         float descale_v, void *workspace,
                                         int64_t workspace_bytes, void *stream) {
  return guarded([&] {
    AttentionArgs a = varlenForwardArgs(o, lse, q, k, v, cu_seqlens_q, cu_seqlens_kv, batch,
                                        heads, kv_heads, total_q, max_seq_q, max_seq_kv,
                                        head_dim, causal, window_left, window_right, scale);
    a.dtype = Dtype::fp8e4m3;
    a.descaleQ = descale_q, a.descaleK = descale_k, a.descaleV = descale_v;
    a.workspace = workspace, a.workspaceBytes = workspace_bytes;
    attentionForward(a, toStream(stream));
  });
}

int tritium_attention_forward_window(int dtype, void *o, float *lse, const void *q,
                                     const void *k, const void *v, int64_t batch, int64_t heads,
                                     int64_t kv_heads, int64_t seq_q, int64_t seq_kv,
                                     int64_t head_dim, int causal, int64_t window_left,
                                     int64_t window_right, float scale, void *stream) {
  return guarded([&] {
    attentionForward({.o = o, .lse = lse, .q = q, .k = k, .v = v, .batch = batch,
                      .heads = heads, .kvHeads = kv_heads, .seqQ = seq_q, .seqKV = seq_kv,
                      .headDim = head_dim, .causal = causal != 0, .windowLeft = window_left,
                      .windowRight = window_right, .scale = scale, .dtype = toDtype(dtype)},
                     toStream(stream));
  });
}

int64_t tritium_attention_backward_workspace(int64_t batch, int64_t heads, int64_t seq_q,
                                             int64_t total_q) {
  // Varlen batches' rows are total_q rows of one packed batch.
  bool varlen = total_q > 0;
  return attentionBackwardWorkspaceBytes(
      {.batch = varlen ? 1 : batch, .heads = heads, .seqQ = varlen ? total_q : seq_q});
}

int tritium_attention_backward(int dtype, void *dq, void *dk, void *dv, const void *q,
                               const void *k, const void *v, const void *o, const void *dout,
                               const float *lse, const int32_t *cu_seqlens_q,
                               const int32_t *cu_seqlens_kv, int64_t batch, int64_t heads,
                               int64_t kv_heads, int64_t seq_q, int64_t seq_kv, int64_t total_q,
                               int64_t head_dim, const int64_t q_strides[3],
                               const int64_t k_strides[3], const int64_t v_strides[3],
                               const int64_t o_strides[3], int causal, int64_t window_left,
                               int64_t window_right, float scale, void *workspace,
                               int64_t workspace_bytes, void *stream) {
  return tritium_attention_backward_total_kv(
      dtype, dq, dk, dv, q, k, v, o, dout, lse, cu_seqlens_q, cu_seqlens_kv, batch, heads,
      kv_heads, seq_q, seq_kv, total_q, 0, head_dim, q_strides, k_strides, v_strides, o_strides,
      causal, window_left, window_right, scale, workspace, workspace_bytes, stream);
}

int tritium_attention_backward_total_kv(
    int dtype, void *dq, void *dk, void *dv, const void *q, const void *k, const void *v,
    const void *o, const void *dout, const float *lse, const int32_t *cu_seqlens_q,
    const int32_t *cu_seqlens_kv, int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q,
    int64_t seq_kv, int64_t total_q, int64_t total_kv, int64_t head_dim,
    const int64_t q_strides[3], const int64_t k_strides[3], const int64_t v_strides[3],
    const int64_t o_strides[3], int causal, int64_t window_left, int64_t window_right,
    float scale, void *workspace, int64_t workspace_bytes, void *stream) {
  return guarded([&] {
    AttentionBackwardArgs a{.dq = dq, .dk = dk, .dv = dv, .q = q, .k = k, .v = v, .o = o,
                            .dout = dout, .lse = lse,
                            .workspace = static_cast<float *>(workspace), .batch = batch,
                            .heads = heads, .kvHeads = kv_heads, .seqQ = seq_q,
                            .seqKV = seq_kv, .headDim = head_dim, .causal = causal != 0,
                            .scale = scale, .dtype = toDtype(dtype),
                            .windowLeft = window_left, .windowRight = window_right,
                            .qStrides = strides(q_strides), .kStrides = strides(k_strides),
                            .vStrides = strides(v_strides), .oStrides = strides(o_strides),
                            .cuSeqlensQ = cu_seqlens_q, .cuSeqlensKV = cu_seqlens_kv,
                            .totalQ = total_q, .totalKV = total_kv};
    int64_t need = attentionBackwardWorkspaceBytes(a);
    if (workspace_bytes < need)
      throw std::invalid_argument("attentionBackward: workspace_bytes is " +
                                  std::to_string(workspace_bytes) + ", but this call needs " +
                                  std::to_string(need));
    attentionBackward(a, toStream(stream));
  });
}

int64_t tritium_attention_decode_workspace(int64_t batch, int64_t heads, int64_t kv_heads,
                                           int64_t seq_q, int64_t max_seq_kv, int64_t head_dim) {
  int64_t bytes = -1;
  guarded([&] {
    bytes = attentionDecodeWorkspaceBytes({.batch = batch, .heads = heads, .kvHeads = kv_heads,
                                           .seqQ = seq_q, .maxSeqKV = max_seq_kv,
                                           .headDim = head_dim});
  });
  return bytes;
}

int tritium_attention_decode(int dtype, void *o, float *lse, const void *q, const void *k,
                             const void *v, const int32_t *seq_lens, const int32_t *block_table,
                             int64_t page_size, int64_t max_pages, int64_t batch, int64_t heads,
                             int64_t kv_heads, int64_t seq_q, int64_t max_seq_kv,
                             int64_t head_dim, const int64_t q_strides[3],
                             const int64_t o_strides[3], const int64_t k_strides[3],
                             const int64_t v_strides[3], int causal, float scale,
                             void *workspace, int64_t workspace_bytes, void *stream) {
  return guarded([&] {
    auto query = [](const int64_t *s) {
      return s ? DecodeQueryStrides{s[0], s[1], s[2]} : DecodeQueryStrides{};
    };
    auto cache = [](const int64_t *s) {
      return s ? DecodeCacheStrides{s[0], s[1], s[2]} : DecodeCacheStrides{};
    };
    attentionDecode({.o = o, .lse = lse, .q = q, .k = k, .v = v, .seqLens = seq_lens,
                     .blockTable = block_table, .pageSize = page_size, .maxPages = max_pages,
                     .batch = batch, .heads = heads, .kvHeads = kv_heads, .seqQ = seq_q,
                     .maxSeqKV = max_seq_kv, .headDim = head_dim, .qStrides = query(q_strides),
                     .oStrides = query(o_strides), .kStrides = cache(k_strides),
                     .vStrides = cache(v_strides), .causal = causal != 0, .scale = scale,
                     .dtype = toDtype(dtype), .workspace = workspace,
                     .workspaceBytes = workspace_bytes},
                    toStream(stream));
  });
}

void tritium_set_autotune(int on) {
  if (on < 0)
    resetAutotune();
  else
    setAutotune(on != 0);
}

int tritium_vector_add(int dtype, void *out, const void *a, const void *b, int64_t n,
                       void *stream) {
  return guarded([&] { vectorAdd(toDtype(dtype), out, a, b, n, toStream(stream)); });
}

int tritium_dropout(int dtype, void *out, const void *x, int64_t n, double p, int64_t seed,
                    void *stream) {
  return guarded([&] { dropout(toDtype(dtype), out, x, n, p, seed, toStream(stream)); });
}

int tritium_softmax_forward(int dtype, void *out, const void *in, int64_t rows, int64_t cols,
                            int64_t in_stride, int64_t out_stride, void *stream) {
  return guarded([&] {
    std::string d = dtypeName(toDtype(dtype));
    softmaxForward(planSoftmax(cols, d), d, KernelArg(out), KernelArg(in), {rows, cols},
                   in_stride ? in_stride : cols, out_stride ? out_stride : cols,
                   toStream(stream));
  });
}

int tritium_softmax_backward(int dtype, void *dx, const void *o, const void *dout, int64_t rows,
                             int64_t cols, int64_t dx_stride, int64_t o_stride,
                             int64_t dout_stride, void *stream) {
  return guarded([&] {
    std::string d = dtypeName(toDtype(dtype));
    softmaxBackward(planSoftmaxBackward(cols, d), d, KernelArg(dx), KernelArg(o),
                    KernelArg(dout), {rows, cols}, dx_stride ? dx_stride : cols,
                    o_stride ? o_stride : cols, dout_stride ? dout_stride : cols,
                    toStream(stream));
  });
}

int tritium_layer_norm_forward(int dtype, void *y, float *mean, float *rstd, const void *x,
                               const void *weight, const void *bias, int64_t rows, int64_t cols,
                               int64_t x_stride, int64_t y_stride, float eps, void *stream) {
  return guarded([&] {
    layerNormForward(toDtype(dtype),
                     {.y = y, .mean = mean, .rstd = rstd, .x = x, .weight = weight, .bias = bias,
                      .rows = rows, .cols = cols, .xStride = x_stride, .yStride = y_stride,
                      .eps = eps},
                     toStream(stream));
  });
}

int64_t tritium_layer_norm_backward_workspace(int64_t rows, int64_t cols) {
  return int64_t(layerNormBackwardWorkspaceBytes(rows, cols));
}

int tritium_layer_norm_backward(int dtype, void *dx, void *dweight, void *dbias, const void *dy,
                                const void *x, const void *weight, const float *mean,
                                const float *rstd, int64_t rows, int64_t cols, int64_t dy_stride,
                                int64_t x_stride, int64_t dx_stride, void *workspace,
                                int64_t workspace_bytes, void *stream) {
  return guarded([&] {
    layerNormBackward(toDtype(dtype),
                      {.dx = dx, .dweight = dweight, .dbias = dbias, .dy = dy, .x = x,
                       .weight = weight, .mean = mean, .rstd = rstd, .rows = rows, .cols = cols,
                       .dyStride = dy_stride, .xStride = x_stride, .dxStride = dx_stride,
                       .workspace = workspace, .workspaceBytes = size_t(workspace_bytes)},
                      toStream(stream));
  });
}

int tritium_rms_norm_forward(int dtype, void *y, float *rstd, const void *x, const void *weight,
                             int64_t rows, int64_t cols, int64_t x_stride, int64_t y_stride,
                             float eps, void *stream) {
  return guarded([&] {
    rmsNormForward(toDtype(dtype),
                   {.y = y, .rstd = rstd, .x = x, .weight = weight, .rows = rows, .cols = cols,
                    .xStride = x_stride, .yStride = y_stride, .eps = eps},
                   toStream(stream));
  });
}

int64_t tritium_rms_norm_backward_workspace(int64_t rows, int64_t cols) {
  return int64_t(rmsNormBackwardWorkspaceBytes(rows, cols));
}

int tritium_rms_norm_backward(int dtype, void *dx, void *dweight, const void *dy, const void *x,
                              const void *weight, const float *rstd, int64_t rows, int64_t cols,
                              int64_t dy_stride, int64_t x_stride, int64_t dx_stride,
                              void *workspace, int64_t workspace_bytes, void *stream) {
  return guarded([&] {
    rmsNormBackward(toDtype(dtype),
                    {.dx = dx, .dweight = dweight, .dy = dy, .x = x, .weight = weight,
                     .rstd = rstd, .rows = rows, .cols = cols, .dyStride = dy_stride,
                     .xStride = x_stride, .dxStride = dx_stride, .workspace = workspace,
                     .workspaceBytes = size_t(workspace_bytes)},
                    toStream(stream));
  });
}

int tritium_cross_entropy_forward(int dtype, float *loss, float *lse, float *stats,
                                  const void *logits, const int64_t *targets, int64_t rows,
                                  int64_t vocab, int64_t stride, int64_t ignore_index,
                                  float label_smoothing, void *stream) {
  return guarded([&] {
    crossEntropyForward(toDtype(dtype),
                        {.loss = loss, .lse = lse, .stats = stats, .logits = logits,
                         .targets = targets, .rows = rows, .vocab = vocab, .logitsStride = stride,
                         .ignoreIndex = ignore_index, .labelSmoothing = label_smoothing},
                        toStream(stream));
  });
}

int tritium_cross_entropy_backward(int dtype, void *dlogits, const void *logits,
                                   const int64_t *targets, const float *lse, const float *stats,
                                   int64_t rows, int64_t vocab, int64_t logits_stride,
                                   int64_t dlogits_stride, int64_t ignore_index,
                                   float label_smoothing, float grad_loss, void *stream) {
  return guarded([&] {
    crossEntropyBackward(toDtype(dtype),
                         {.dlogits = dlogits, .logits = logits, .targets = targets, .lse = lse,
                          .stats = stats, .rows = rows, .vocab = vocab,
                          .logitsStride = logits_stride, .dlogitsStride = dlogits_stride,
                          .ignoreIndex = ignore_index, .labelSmoothing = label_smoothing,
                          .gradLoss = grad_loss},
                         toStream(stream));
  });
}

} // extern "C"
