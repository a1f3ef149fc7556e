// Which tensor-core instruction each dot uses (GIR, before layouts): Hopper's warp-group
// wgmma.mma_async where the target has it and the dot fits its shape, mma.sync otherwise. A
// dot that takes wgmma gets {wgmma = 1}; layout assignment then puts the four warps of each
// warp group along M (dotAccumulatorLayout), and the lowering reads both operands from shared
// memory through matrix descriptors (codegen/LowerDot.cpp).
//
// wgmma needs the architecture-specific target sm_90a. This first form covers what the
// matmuls of the kernel library and the tutorials use: 16-bit operands (bf16, fp16) into fp32
// accumulators, rank 2, whole 128-byte rows of both operands in shared memory (K and N
// multiples of 64, the width of one SWIZZLE_128B panel; N at most 256, one instruction
// wide), and M a multiple of 16 rows per warp (every warp group owns whole 64-row slices).
// Other dots, and every dot on sm_80 to sm_90, use mma.sync.
#include "compiler/gpu/GpuPasses.h"

namespace tritium {

static bool dotFitsWarpGroups(const ir::Op &dot, int numWarps) {
  const ir::Type &a = dot.operand(0)->type(), &b = dot.operand(1)->type();
  const ir::Type &c = dot.result()->type();
  if (a.rank() != 2 || a.kind() != b.kind() || c.kind() != ir::ScalarKind::F32)
    return false;
  if (a.kind() != ir::ScalarKind::BF16 && a.kind() != ir::ScalarKind::F16)
    return false;
  int64_t M = a.shape()[0], K = a.shape()[1], N = b.shape()[1];
  return numWarps % 4 == 0 && M % (16 * int64_t(numWarps)) == 0 && K % 64 == 0 && N % 64 == 0 &&
         N <= 256;
}

void chooseDotInstructions(ir::Function &fn, const std::string &arch, int numWarps) {
  if (arch != "sm_90a")
    return;
  ir::walk(fn.body(), [&](ir::Op &op) {
    if (op.kind() == ir::OpKind::Dot && dotFitsWarpGroups(op, numWarps))
      op.setAttr("wgmma", int64_t(1));
  });
}

} // namespace tritium
