// Which tensor-core instruction each dot uses (GIR, before layouts): Hopper's warp-group
// wgmma.mma_async where the target has it and the dot fits its shape, mma.sync otherwise. A
// dot that takes wgmma gets {wgmma = 1}; layout assignment then puts the four warps of each
// warp group along M (dotAccumulatorLayout), and the lowering reads both operands from shared
// memory through matrix descriptors (codegen/LowerDot.cpp).
//
// wgmma needs the architecture-specific target sm_90a. It takes rank-2 dots whose operands are
// bf16 or fp16 (either major order of b), fp8 e4m3 / e5m2 in any pair, 8-bit integers (signed
// or unsigned, i32 accumulators) or fp32 as tf32, all into 32-bit accumulators. Every
// instruction reads 32 bytes of K per row (k16 for 16-bit types, k32 for 8-bit, k8 for tf32),
// so the shared-memory geometry is the same in bytes for all of them: K-major rows in
// SWIZZLE_128B panels of 128 bytes, or whole rows of 64 or 32 bytes in SWIZZLE_64B and
// SWIZZLE_32B (K * bytes 32, 64 or a multiple of 128: dotSwizzleBytes); N-major b in 128-byte
// panels (N a multiple of 64), K-major b of any multiple of 16 columns (at most 256 per
// instruction) and M a multiple of 16 rows per warp (every warp group owns whole
// 64-row slices). Types other than 16-bit read b K-major only (the hardware transposes 16-bit
// tiles alone): b is then trans() of an [N, K] tile read in place, or staged transposed.
// tf32 on wgmma truncates fp32's low 13 mantissa bits where mma.sync's path rounds them
// (cvt.rna); tf32x3 and ieee stay on mma.sync and fmas. Other dots, and every dot on sm_80 to
// sm_90, use mma.sync.
#include "compiler/gpu/GpuPasses.h"

namespace tritium {

// Whether the operand and accumulator types are a pair wgmma takes.
static bool wgmmaTypes(const ir::Op &dot) {
  using ir::ScalarKind;
  ScalarKind a = dot.operand(0)->type().kind(), b = dot.operand(1)->type().kind(),
             c = dot.result()->type().kind();
  auto fp8 = [](ScalarKind k) { return k == ScalarKind::F8E4M3 || k == ScalarKind::F8E5M2; };
  auto int8 = [](ScalarKind k) { return k == ScalarKind::I8 || k == ScalarKind::U8; };
  if (a == ScalarKind::BF16 || a == ScalarKind::F16)
    return b == a && c == ScalarKind::F32;
  if (fp8(a))
    return fp8(b) && c == ScalarKind::F32;
  if (int8(a))
    return int8(b) && c == ScalarKind::I32;
  if (a == ScalarKind::F32)
    return b == a && c == ScalarKind::F32 && dot.hasAttr("input_precision") &&
           dot.strAttr("input_precision") == "tf32";
  return false;
}

static bool dotFitsWarpGroups(const ir::Op &dot, int numWarps) {
  const ir::Type &a = dot.operand(0)->type(), &b = dot.operand(1)->type();
  if (a.rank() != 2 || !wgmmaTypes(dot))
    return false;
  int64_t M = a.shape()[0], K = a.shape()[1], N = b.shape()[1];
  int64_t bytes = ir::byteWidth(a.kind());
  // b K-major (8- and 32-bit types, or trans() of a 16-bit [N, K] tile): its rows are N, any
  // multiple of 16; N-major 16-bit b sits in panels of 64 columns.
  const ir::Op *bDef = dot.operand(1)->definingOp();
  bool bKMajor = bytes != 2 || (bDef && bDef->kind() == ir::OpKind::Trans);
  return numWarps % 4 == 0 && M % (16 * int64_t(numWarps)) == 0 &&
         dotSwizzleBytes(K * bytes) >= 32 && N % (bKMajor ? 16 : 64) == 0 && N <= 256;
}

bool dotStagesSwizzled(const ir::Op &dot) {
  return dot.hasAttr("wgmma") || ir::bitWidth(dot.operand(0)->type().kind()) == 16;
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
