// Matrix multiplication on the tensor cores: C = A x B (+ bias) with an optional activation,
// written in tritium's DSL (Triton's tutorial 03 with a fused epilogue). A is [M, K] row-major;
// B is [K, N] row-major or, with bTransposed, [N, K] row-major (the layout of nn.Linear's
// weights, read in place: y = x W^T). fp16 or bf16 in, fp32 accumulation, fp32, fp16 or bf16
// out. On Hopper it compiles for sm_90a (wgmma). Pointers are device addresses (host addresses
// under TRITIUM_INTERPRET=1); every call is asynchronous on `stream`.
#pragma once

#include "kernels/Dtype.h"
#include "kernels/MatmulPlan.h"

#include <cuda.h>

#include <cstdint>

namespace tritium::kernels {

enum class Activation { None, Gelu, Silu };

struct MatmulArgs {
  void *c = nullptr;            // [M, N], row stride ldc, in `out`
  const void *a = nullptr;      // [M, K], row stride lda, in `in`
  const void *b = nullptr;      // [K, N] (row stride ldb), or [N, K] when bTransposed, in `in`
  const void *bias = nullptr;   // may be null; else [N] in `out`, added before the activation
  int64_t M = 0, N = 0, K = 0;
  int64_t lda = 0, ldb = 0, ldc = 0; // 0: dense rows
  bool bTransposed = false;
  Activation activation = Activation::None; // GELU: the tanh form, as torch's approximate="tanh"
  Dtype in = Dtype::bf16, out = Dtype::bf16;
};

// The autotuner's (or the planner's) plan unless one is given.
void matmul(const MatmulArgs &args, CUstream stream, const MatmulPlan *plan = nullptr);

} // namespace tritium::kernels
