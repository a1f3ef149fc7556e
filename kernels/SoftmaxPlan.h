// How to run a softmax of a given row length and dtype: which kernel (the row in one CTA's
// registers; the row split over a thread-block cluster's registers; or the online two-pass
// kernel for rows longer than that), its block size, num_warps and num_stages, and the launch on
// the persistent grid. Every choice can be overridden by
// changing the plan before launching it.
#pragma once

#include "kernels/Softmax.h"
#include "frontend/CompiledKernel.h"

#include <cstdint>
#include <string>

namespace tritium::kernels {

enum class SoftmaxDirection { Forward, Backward };

struct SoftmaxPlan {
  SoftmaxDirection direction = SoftmaxDirection::Forward;
  bool online = false; // false: one row per block in registers; true: two passes in blocks
  // Programs per row: above 1, a thread-block cluster shares each row, each program holding a
  // blockSize slice of it in registers, or (online) streaming a slice of ceil(cols / size)
  // columns in blocks of blockSize.
  int clusterSize = 1;
  int minBlocksPerSM = 1; // Specialization::minBlocksPerSM
  // Forward, one pass (registers or cluster): load the program's next row into registers
  // before reducing this one, instead of a cp.async ring (numStages is then 1).
  bool prefetch = false;
  int64_t blockSize = 0;
  int numWarps = 4;
  int numStages = 1;
  // A cp.async ring (numStages > 1) of whole rows may be bulk copies (Specialization::bulkCopies).
  bool bulkCopies = true;
  // The launch: one program (cluster) per row, which the hardware schedules as programs finish,
  // so one program's loads overlap another's reductions on the same SM; or (false) the
  // persistent grid of resident programs, each walking rows with a stride.
  bool programPerRow = false;
  // Warp-sized programs (numWarps 1) side by side in one CTA, each with its own rows
  // (Specialization::programsPerCTA): short rows in fewer, larger CTAs.
  int programsPerCTA = 1;
  // The PTX ISA version to emit (x 10), or 0 for Specialization's default. Cluster exchanges
  // use st.async from 81 and a cluster barrier per exchange before.
  int ptxVersion = 0;

  bool cluster() const { return !online && clusterSize > 1; }
  // Splits rows of `cols` over `size` programs: each holds a power-of-two slice of
  // ceil(cols / size) in registers, or (online) streams its slice in blocks of blockSize.
  void splitOver(int size, int64_t cols);
  // The registers tier's block for rows of `cols` at this numWarps: the power of two above
  // cols, or a multiple of the CTA's tile of 16-byte vectors (32 x numWarps x 16 / bytes) when
  // that is smaller, so a row of 12288 is not a 16384 block with its last quarter masked.
  void fitBlock(int64_t cols, const std::string &dtype);
  Kernel &kernel() const;
  // The specialization for `dtype` ("fp32", "fp16", "bf16"). Strides are i32 unless a row
  // offset could pass 2^31 elements, then i64.
  Specialization specialization(const std::string &dtype, int64_t rows,
                                int64_t maxStride) const;
  std::string str() const; // "registers BLOCK 4096 warps 4 stages 2", "cluster 8 x BLOCK ...",
                          // ending in " prefetch", " per-thread-copies", " program-per-row",
                          // " programs-per-cta P" and " min-blocks B" where they apply
  int64_t maxCols() const;  // the longest row the plan can run
  // CTAs to launch `k` (compiled from this plan) with over `rows` rows.
  int64_t grid(CompiledKernel &k, int64_t rows) const;
};

// The measured best plan on the H200 for rows of `cols` elements (docs/notes/softmax.md).
SoftmaxPlan planSoftmax(int64_t cols, const std::string &dtype = "fp32");
SoftmaxPlan planSoftmaxBackward(int64_t cols, const std::string &dtype = "fp32");
// The online (two-pass) plan the planner gives long rows, to force it on any row length.
SoftmaxPlan planOnline(SoftmaxDirection direction);

// A row-major problem: `rows` rows of `cols` elements, each buffer with its own row stride (in
// elements). Forward reads `in` and writes `out`; backward reads `o` (the forward's output) and
// `dout` and writes `dx`.
struct SoftmaxShape {
  int64_t rows = 0, cols = 0;
};

// Compiles (or finds) the kernel for these arguments, specialized on their divisibility by 16,
// and launches it on `stream` over the persistent grid (or `grid` programs when > 0). Returns
// the compiled kernel for its metadata. Arguments are checked as CompiledKernel::launch does.
CompiledKernel &softmaxForward(const SoftmaxPlan &plan, const std::string &dtype,
                               KernelArg out, KernelArg in, SoftmaxShape shape,
                               int64_t inStride, int64_t outStride, CUstream stream,
                               int64_t grid = 0);
CompiledKernel &softmaxBackward(const SoftmaxPlan &plan, const std::string &dtype,
                                KernelArg dx, KernelArg o, KernelArg dout, SoftmaxShape shape,
                                int64_t dxStride, int64_t oStride, int64_t doutStride,
                                CUstream stream, int64_t grid = 0);

} // namespace tritium::kernels
