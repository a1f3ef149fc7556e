/* A C program against the kernel library's C interface (tritium::kernels_c, installed as
   libtritium_kernels_c.so): a null output or input is refused with a message, before anything
   runs, for the elementwise, matmul (the fused, quantized and options-struct ones too) and
   attention (forward, varlen, fp8 varlen, backward, decode) and cumsum entries. */
#include <tritium/kernels/capi/tritium_kernels.h>

#include <stdio.h>
#include <string.h>

int main(void) {
  float b = 0;
  int rc = tritium_vector_add(0, NULL, &b, &b, 1, NULL);
  const char *error = tritium_last_error();
  int ok = rc != 0 && strstr(error, "vectorAdd: out is null") != NULL;
  printf("%s: tritium_vector_add with a null output returns %d: %s\n", ok ? "ok" : "FAILED", rc,
         error);
  rc = tritium_matmul(2, 2, &b, &b, NULL, NULL, 8, 8, 8, 0, 0, 0, 0, 0, NULL);
  error = tritium_last_error();
  int matmulOk = rc != 0 && strstr(error, "matmul: b is null") != NULL;
  printf("%s: tritium_matmul without b returns %d: %s\n", matmulOk ? "ok" : "FAILED", rc, error);
  /* int8 operands into an int32 C take no epilogue: a bias is refused. */
  rc = tritium_matmul_fused(5, 6, &b, &b, &b, &b, NULL, NULL, NULL, 1.f, 8, 8, 8, 0, 0, 0, 0, 0,
                            0, 0, NULL);
  error = tritium_last_error();
  int fusedOk = rc != 0 && strstr(error, "the exact int8 product takes no epilogue") != NULL;
  printf("%s: tritium_matmul_fused int8 -> int32 with a bias returns %d: %s\n",
         fusedOk ? "ok" : "FAILED", rc, error);
  rc = tritium_attention_forward(2, &b, NULL, &b, NULL, &b, 1, 8, 3, 16, 16, 64, NULL, NULL,
                                 NULL, NULL, 0, 0.f, NULL);
  error = tritium_last_error();
  int forwardOk = rc != 0 && strstr(error, "heads (8) must be a multiple of kv_heads (3)") != NULL;
  printf("%s: tritium_attention_forward with 8 heads on 3 returns %d: %s\n",
         forwardOk ? "ok" : "FAILED", rc, error);
  int64_t shortRows[3] = {8 * 64 * 16, 64 * 16, 15};
  rc = tritium_attention_forward_fp8(&b, NULL, &b, &b, &b, 1, 8, 8, 16, 16, 64, NULL, NULL,
                                     shortRows, NULL, 1, 0, 0.f, 1.f, 1.f, 1.f, NULL);
  error = tritium_last_error();
  forwardOk = forwardOk && rc != 0 && strstr(error, "row stride 15 is less than seq 16") != NULL;
  printf("%s: tritium_attention_forward_fp8 with V^T rows of 15 returns %d: %s\n",
         forwardOk ? "ok" : "FAILED", rc, error);
  rc = tritium_attention_transpose_v(3, NULL, &b, 1, 8, 16, 64, NULL, NULL);
  error = tritium_last_error();
  forwardOk = forwardOk && rc != 0 && strstr(error, "attentionTransposeValues: vt is null") != NULL;
  printf("%s: tritium_attention_transpose_v without vt returns %d: %s\n",
         forwardOk ? "ok" : "FAILED", rc, error);
  rc = tritium_attention_transpose_v(4, &b, &b, 1, 8, 16, 64, NULL, NULL);
  error = tritium_last_error();
  forwardOk = forwardOk && rc != 0 && strstr(error, "3 (fp8e4m3)") != NULL;
  printf("%s: tritium_attention_transpose_v of dtype 4 returns %d: %s\n",
         forwardOk ? "ok" : "FAILED", rc, error);
  rc = tritium_attention_forward_varlen(2, &b, NULL, &b, &b, &b, NULL, NULL, 2, 8, 8, 10, 6,
                                        6, 64, 0, -1, -1, 0.f, NULL);
  error = tritium_last_error();
  int varlenOk = rc != 0 && strstr(error, "attentionForward: cu_seqlens_q is null") != NULL;
  printf("%s: tritium_attention_forward_varlen without cu_seqlens returns %d: %s\n",
         varlenOk ? "ok" : "FAILED", rc, error);
  /* total_kv (K and V through tensor descriptors) below the longest sequence is refused. */
  int32_t cuKV = 0;
  rc = tritium_attention_forward_varlen_total_kv(2, &b, NULL, &b, &b, &b, &cuKV, &cuKV, 2, 8, 8,
                                                 10, 5, 6, 6, 64, 0, -1, -1, 0.f, NULL);
  error = tritium_last_error();
  varlenOk = varlenOk && rc != 0 && strstr(error, "totalKV (5, the packed key rows)") != NULL;
  printf("%s: tritium_attention_forward_varlen_total_kv with 5 key rows for 6 returns %d: %s\n",
         varlenOk ? "ok" : "FAILED", rc, error);
  /* fp8: a workspace smaller than the transposed V needs is refused, naming the size. */
  int64_t need = tritium_attention_forward_varlen_fp8_workspace(2, 8, 6, 64);
  int badHeadDim = tritium_attention_forward_varlen_fp8_workspace(2, 8, 6, 100) == -1;
  int32_t cu = 0;
  rc = tritium_attention_forward_varlen_fp8(&b, NULL, &b, &b, &b, &cu, &cu, 2, 8, 8, 10, 6, 6, 64,
                                            0, -1, -1, 0.f, 1.f, 1.f, 1.f, &b, 4, NULL);
  error = tritium_last_error();
  varlenOk = varlenOk && badHeadDim && need > 8 * 64 * 12 && rc != 0 &&
             strstr(error, "workspace holds 4 bytes") != NULL;
  printf("%s: tritium_attention_forward_varlen_fp8 with a workspace of 4 bytes (%lld needed) "
         "returns %d: %s\n",
         varlenOk ? "ok" : "FAILED", (long long)need, rc, error);
  rc = tritium_attention_decode(2, &b, NULL, &b, &b, &b, NULL, NULL, 0, 0, 1, 8, 2, 1, 64, 72,
                                NULL, NULL, NULL, NULL, 1, 0.f, NULL, 0, NULL);
  error = tritium_last_error();
  int decodeOk =
      rc != 0 && strstr(error, "head_dim must be a multiple of 16 from 16 to 256, got 72") != NULL;
  printf("%s: tritium_attention_decode with head_dim 72 returns %d: %s\n",
         decodeOk ? "ok" : "FAILED", rc, error);
  rc = tritium_matmul_quantized(2, 3, NULL, &b, &b, NULL, NULL, NULL, NULL, 1.f, 448.f, &b, 8,
                                8, 8, 0, 0, 0, 0, 0, 0, NULL);
  error = tritium_last_error();
  int quantizedOk = rc != 0 && strstr(error, "matmul: c is null") != NULL;
  printf("%s: tritium_matmul_quantized without c returns %d: %s\n", quantizedOk ? "ok" : "FAILED",
         rc, error);
  /* 16 rows of a long K leave most SMs idle: its plans split K given a workspace. */
  int64_t room = tritium_matmul_workspace(2, 2, 16, 4096, 8192, 1, 0);
  rc = tritium_matmul_split_k(2, 2, &b, &b, &b, NULL, NULL, NULL, NULL, 1.f, 1.f, NULL, 16, 4096,
                              8192, 0, 0, 0, 0, 1, 0, &b, -1, NULL);
  error = tritium_last_error();
  int splitOk = room > 0 && rc != 0 && strstr(error, "workspaceBytes") != NULL;
  printf("%s: tritium_matmul_workspace gives %lld bytes; a workspace of -1 bytes returns %d: %s\n",
         splitOk ? "ok" : "FAILED", (long long)room, rc, error);
  int64_t bad = tritium_matmul_workspace(2, 2, 16, 4096, 8192, 1, 7);
  error = tritium_last_error();
  int badOk = bad == -1 && strstr(error, "activation is 7") != NULL;
  printf("%s: tritium_matmul_workspace with activation 7 returns %lld: %s\n",
         badOk ? "ok" : "FAILED", (long long)bad, error);
  splitOk = splitOk && badOk;
  rc = tritium_attention_backward(2, &b, &b, &b, &b, &b, &b, &b, &b, &b, NULL, NULL, 1, 2, 2, 16,
                                  16, 0, 64, NULL, NULL, NULL, NULL, 1, -1, -1, 0.f, &b, 4, NULL);
  error = tritium_last_error();
  int backwardOk = rc != 0 && strstr(error, "workspace_bytes is 4, but this call needs 128") != NULL;
  printf("%s: tritium_attention_backward with a 4-byte workspace returns %d: %s\n",
         backwardOk ? "ok" : "FAILED", rc, error);
  rc = tritium_attention_backward_total_kv(2, &b, &b, &b, &b, &b, &b, &b, &b, &b, &cuKV, &cuKV,
                                           2, 8, 8, 6, 6, 10, 5, 64, NULL, NULL, NULL, NULL, 0,
                                           -1, -1, 0.f, &b, 1024, NULL);
  error = tritium_last_error();
  backwardOk = backwardOk && rc != 0 && strstr(error, "totalKV (5, the packed key rows)") != NULL;
  printf("%s: tritium_attention_backward_total_kv with 5 key rows for 6 returns %d: %s\n",
         backwardOk ? "ok" : "FAILED", rc, error);
  /* Every option through one struct: its defaults, a null one, and fp8's partial sums asked
     of bf16 operands. */
  tritium_matmul_options options;
  tritium_matmul_options_init(&options);
  int withOk = options.alpha == 1.f && options.out_scale == 1.f && options.bias == NULL &&
               options.max_imprecise_acc == 0 && options.workspace == NULL;
  rc = tritium_matmul_with(2, 2, &b, &b, &b, 8, 8, 8, NULL, NULL);
  error = tritium_last_error();
  withOk = withOk && rc != 0 && strstr(error, "matmul: options is null") != NULL;
  options.max_imprecise_acc = 128;
  rc = tritium_matmul_with(2, 2, &b, &b, &b, 8, 8, 8, &options, NULL);
  error = tritium_last_error();
  withOk = withOk && rc != 0 &&
           strstr(error, "maxImpreciseAcc applies to fp8 operands only (in is bf16)") != NULL;
  printf("%s: tritium_matmul_with's defaults; max_imprecise_acc on bf16 returns %d: %s\n",
         withOk ? "ok" : "FAILED", rc, error);
  rc = tritium_cumsum(5, &b, &b, 1, &b, 4, NULL);
  error = tritium_last_error();
  int cumsumOk = rc != 0 && strstr(error, "cumsum: dtype must be fp32, fp16, bf16 or int32") != NULL;
  printf("%s: tritium_cumsum of int8 returns %d: %s\n", cumsumOk ? "ok" : "FAILED", rc, error);
  return ok && matmulOk && fusedOk && forwardOk && varlenOk && decodeOk && quantizedOk &&
                 backwardOk && cumsumOk && splitOk && withOk
             ? 0
             : 1;
}
