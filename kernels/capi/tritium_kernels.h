/* The kernel library's C interface: for callers that are not C++ (Python through ctypes: the
 * benchmark tools/bench_kernels.py calls tritium through it in the same process as its peers).
 * Each function mirrors one in kernels/*.h; `dtype` is 0 (fp32), 1 (fp16) or 2 (bf16); a stride
 * of 0 means a dense row; `stream` is a CUstream (cudaStream_t), 0 for the default stream.
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
 * weights); in_dtype 1 (fp16) or 2 (bf16), out_dtype 0, 1 or 2; bias may be NULL, else [N] in
 * out_dtype; row strides of 0 mean dense rows (kernels/Matmul.h). */
int tritium_matmul(int in_dtype, int out_dtype, void *c, const void *a, const void *b,
                   const void *bias, int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb,
                   int64_t ldc, int b_transposed, int activation, void *stream);

#ifdef __cplusplus
}
#endif

#endif
