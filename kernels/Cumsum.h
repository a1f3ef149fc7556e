// The inclusive prefix sum of a long 1-D array across programs (torch.cumsum of a flat tensor;
// a block's own scan is the DSL's cumsum, in registers). Three kernels, reduce then scan: each
// block's sum; the exclusive scan of those sums, in one program; each block's scan plus its
// prefix. fp32, fp16 and bf16 are summed in fp32 (stored in the dtype), int32 exactly (wrapping
// as torch's int32 cumsum does). Pointers are device addresses (host addresses under
// TRITIUM_INTERPRET=1); the call is asynchronous on `stream`.
#pragma once

#include "kernels/Dtype.h"

#include <cuda.h>

#include <cstdint>

namespace tritium::kernels {

// The device memory cumsum needs beside its input and output: one partial sum per block.
int64_t cumsumWorkspaceBytes(int64_t n);

// out[i] = x[0] + ... + x[i] for i < n. `out` may equal `x`.
void cumsum(Dtype dtype, void *out, const void *x, int64_t n, void *workspace,
            int64_t workspaceBytes, CUstream stream);

} // namespace tritium::kernels
