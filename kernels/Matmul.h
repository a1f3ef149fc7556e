// Matrix multiplication on the tensor cores, written in tritium's DSL (Triton's tutorial 03
// with a fused epilogue):
//
//   C = act(alpha * scaleA[m] * scaleB[n] * (A x B) + bias[n]) + residual[m, n]
//
// or, with Activation::SwiGlu (LLaMA's gated MLP, gate and up projections in one B of 2N
// columns, gate first): with G[m, n] and U[m, n] the epilogue's inputs above for columns n and
// N + n of A x B (scaleB and bias then have 2N entries),
//
//   C = silu(G) * U + residual[m, n]   (C is [M, N])
//
// A is [M, K] row-major; B is [K, N] row-major or, with bTransposed, [N, K] row-major (the
// layout of nn.Linear's weights, read in place: y = x W^T). Operands (`in`): fp16 or bf16; fp8
// e4m3 or e5m2 (scaleA / scaleB / alpha dequantize them, as torch._scaled_mm's per-tensor and
// row-wise scales); int8, into int32 (exact, no epilogue) or dequantized into a float C; fp32
// through tf32 (`precision`). Products accumulate in fp32 (int32 for int8); the epilogue runs
// in fp32 and C (`out`) is fp32, fp16 or bf16, fp8 (quantized: outScale, amax), or int32
// for int8 operands. Tiles are read through tensor descriptors (TMA on Hopper) where the
// tensors allow it (bases and row strides on 16 bytes), else through pointers; the results are
// the same. Pointers are device addresses (host addresses under TRITIUM_INTERPRET=1); every
// call is asynchronous on `stream`.
#pragma once

#include "frontend/Kernel.h"
#include "kernels/Dtype.h"
#include "kernels/MatmulPlan.h"

#include <cuda.h>

#include <cstdint>
#include <string>

namespace tritium::kernels {

enum class Activation { None, Gelu, Silu, SwiGlu };
// How fp32 operands are multiplied: one tf32 product (Triton's default), three (about fp32's
// accuracy) or plain fp32 fmas.
enum class Precision { tf32, tf32x3, ieee };

struct MatmulArgs {
  void *c = nullptr;            // [M, N], row stride ldc, in `out`
  const void *a = nullptr;      // [M, K], row stride lda, in `in`
  const void *b = nullptr;      // [K, N] (row stride ldb), or [N, K] when bTransposed, in `in`
                                // (N is 2N for SwiGlu: gate columns, then up)
  const void *bias = nullptr;   // may be null; else [N] (SwiGlu: 2N) in `out`, added before the
                                // activation
  const void *residual = nullptr; // may be null; else [M, N], row stride ldr, in `out`, added last
  const float *scaleA = nullptr;  // may be null; else [M]: row m of the product times scaleA[m]
  const float *scaleB = nullptr;  // may be null; else [N] (SwiGlu: 2N): column n times scaleB[n]
  float alpha = 1;                // the product times alpha (per-tensor scales)
  // fp8 C (out fp8e4m3 / fp8e5m2, FP8 training's delayed scaling): C = saturate(result x
  // outScale), and bias and residual are bf16. amax, when given (one fp32, the caller's to
  // zero), becomes max(amax, max |result|) over C's elements, before outScale; any C may ask.
  float outScale = 1;
  float *amax = nullptr;
  int64_t M = 0, N = 0, K = 0;
  int64_t lda = 0, ldb = 0, ldc = 0, ldr = 0; // 0: dense rows
  bool bTransposed = false;
  Activation activation = Activation::None; // GELU: the tanh form, as torch's approximate="tanh"
  Dtype in = Dtype::bf16, out = Dtype::bf16;
  Precision precision = Precision::tf32; // fp32 operands only
  // fp8 operands only: the tensor cores sum fp8 products with fewer bits than fp32 (fast, as
  // torch._scaled_mm's use_fast_accum); N (a positive multiple of 32) adds their partial sums
  // into fp32 every N of K, or every K tile of the plan where that is shorter (dot's
  // max_num_imprecise_acc). 0: the fast sum throughout.
  int64_t maxImpreciseAcc = 0;
  // Scratch for plans that split K (matmulWorkspaceBytes): each slice of the K range writes its
  // partial product there in fp32 (int32 for int8), and a second kernel sums the slices in a
  // fixed order and runs the epilogue, so the result does not depend on timing; stream-K plans
  // keep a partial product slot and a flag per program there (the call zeroes the flags), and
  // the program ending a tile sums its partials in a fixed order. Null or too small: no plan
  // splits K. Calls that share a workspace must be ordered (one stream).
  void *workspace = nullptr;
  int64_t workspaceBytes = 0;
};

// The autotuner's (or the planner's) plan unless one is given.
void matmul(const MatmulArgs &args, CUstream stream, const MatmulPlan *plan = nullptr);

// The workspace with which every plan the library may choose for `args` (its shape, dtypes and
// epilogue; the pointers are not read) can split K; 0 where none would.
int64_t matmulWorkspaceBytes(const MatmulArgs &args);
// The workspace that `plan` needs for `args` (0 unless it splits K or is stream-K).
int64_t matmulWorkspaceBytes(const MatmulArgs &args, const MatmulPlan &plan);

// The kernel, the specialization that a call with `args` on `plan` compiles (for `arch`; ""
// keeps the default) and the programs it launches, for tools and tests that compile it
// without launching (args' pointers are read for their alignment only).
Kernel &matmulKernel();
Specialization matmulSpecialization(const MatmulArgs &args, const MatmulPlan &plan,
                                    const std::string &arch = "");
int64_t matmulGrid(const MatmulArgs &args, const MatmulPlan &plan, int smCount);

} // namespace tritium::kernels
