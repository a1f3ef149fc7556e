// LayerNorm (Triton's tutorial 05) and RMSNorm, forward and backward, over `rows` rows of `cols`
// elements with their own row strides (in elements; 0 means `cols`, a dense matrix). Storage is
// fp32, fp16 or bf16 (the weight and bias in the same type), math fp32; mean and rstd are fp32,
// one per row. Pointers are device addresses (host addresses under TRITIUM_INTERPRET=1); every
// call is asynchronous on `stream`. Mistakes are tritium::UserErrors naming the argument.
//
//   kernels::layerNormForward(Dtype::bf16, {.y = y, .mean = mean, .rstd = rstd, .x = x,
//                                           .weight = w, .bias = b, .rows = M, .cols = N},
//                             stream);
#pragma once

#include "kernels/Dtype.h"
#include "kernels/RowPlan.h"

#include <cuda.h>

#include <cstddef>
#include <cstdint>

namespace tritium::kernels {

struct LayerNormForwardArgs {
  void *y = nullptr;
  float *mean = nullptr, *rstd = nullptr; // may be null when the backward does not follow
  const void *x = nullptr, *weight = nullptr, *bias = nullptr; // bias may be null (none)
  int64_t rows = 0, cols = 0;
  int64_t xStride = 0, yStride = 0;
  float eps = 1e-5f;
};

// dx, dweight and dbias from dy and the forward's x, mean and rstd. The weight and bias
// gradients are summed over rows in fp32 partial sums per program (in `workspace`, of
// layerNormBackwardWorkspaceBytes) and then over programs, in a fixed order: the result does
// not depend on timing. dbias may be null (no bias).
struct LayerNormBackwardArgs {
  void *dx = nullptr, *dweight = nullptr, *dbias = nullptr;
  const void *dy = nullptr, *x = nullptr, *weight = nullptr;
  const float *mean = nullptr, *rstd = nullptr;
  int64_t rows = 0, cols = 0;
  int64_t dyStride = 0, xStride = 0, dxStride = 0;
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
};

struct RMSNormForwardArgs {
  void *y = nullptr;
  float *rstd = nullptr; // may be null
  const void *x = nullptr, *weight = nullptr;
  int64_t rows = 0, cols = 0;
  int64_t xStride = 0, yStride = 0;
  float eps = 1e-6f;
};

struct RMSNormBackwardArgs {
  void *dx = nullptr, *dweight = nullptr;
  const void *dy = nullptr, *x = nullptr, *weight = nullptr;
  const float *rstd = nullptr;
  int64_t rows = 0, cols = 0;
  int64_t dyStride = 0, xStride = 0, dxStride = 0;
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
};

// Each takes the planner's choice unless a plan is given (its maxCols() must cover cols).
void layerNormForward(Dtype dtype, const LayerNormForwardArgs &args, CUstream stream,
                      const RowPlan *plan = nullptr);
void layerNormBackward(Dtype dtype, const LayerNormBackwardArgs &args, CUstream stream,
                       const RowPlan *plan = nullptr);
size_t layerNormBackwardWorkspaceBytes(int64_t rows, int64_t cols, const RowPlan *plan = nullptr);

void rmsNormForward(Dtype dtype, const RMSNormForwardArgs &args, CUstream stream,
                    const RowPlan *plan = nullptr);
void rmsNormBackward(Dtype dtype, const RMSNormBackwardArgs &args, CUstream stream,
                     const RowPlan *plan = nullptr);
size_t rmsNormBackwardWorkspaceBytes(int64_t rows, int64_t cols, const RowPlan *plan = nullptr);

} // namespace tritium::kernels
