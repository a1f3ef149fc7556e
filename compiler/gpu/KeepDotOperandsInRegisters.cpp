// Lets a wgmma dot take its a operand from registers where they already hold it as the
// instruction wants (GIR, after layout assignment, before shared memory is allocated).
//
// wgmma's register form of a (16-bit types) gives each warp of the group 16 rows of the 64-row
// slice and, per 16 columns of K, the fragment rows g and g + 8 at columns 2c, 2c + 1 and
// 2c + 8, 2c + 9 (g = lane / 4, c = lane % 4): the same places where a wgmma accumulator of those
// rows keeps its columns (dotAccumulatorLayout). So an operand computed elementwise from
// another product's accumulator, attention's P = exp(S - m) cast to 16 bits, is a fragment
// already: it goes to the instruction in registers instead of through a staging buffer, a
// fence and two CTA barriers per product. The dot gets {a_regs}; allocateSharedMemory then
// gives a no buffer and the lowering packs the fragments (LowerDot.cpp).
//
// 8-bit a (fp8 attention's P) is its fragment already where its product computed its columns
// in the fragment's order (dotByteFragmentLayout, ByteFragmentColumns.cpp): a row's columns
// 4c .. 4c + 3 of each 16 in lane c. In the accumulator's own layout (the pairs 2c, 2c + 1 of
// each 8) it goes in registers all the same: the lowering trades pairs within each quad of
// lanes (two shuffles a fragment row), still far cheaper than the staging: +8-9% at head_dim
// 128, +33% at 64 on the H200 (docs/notes/attention.md, "fp8").
#include "compiler/gpu/GpuPasses.h"

namespace tritium {

static bool dotTakesRegisterA(const ir::Op &dot, int numWarps) {
  if (dot.kind() != ir::OpKind::Dot || !dot.hasAttr("wgmma"))
    return false;
  const ir::Value *a = dot.operand(0);
  int bits = ir::bitWidth(a->type().kind());
  if (a->type().rank() != 2 || (bits != 16 && bits != 8) || !a->layout())
    return false;
  // A tile that a ring of the loop may bring in is read there in place: no registers at all.
  const ir::Op *def = a->definingOp();
  if (def && def->kind() == ir::OpKind::Load)
    return false;
  return *a->layout() == dotAccumulatorLayout(a->type().shape(), numWarps, true) ||
         (bits == 8 && *a->layout() == dotByteFragmentLayout(numWarps));
}

void keepDotOperandsInRegisters(ir::Function &fn, int numWarps) {
  ir::walk(fn.body(), [&](ir::Op &op) {
    if (dotTakesRegisterA(op, numWarps))
      op.setAttr("a_regs", int64_t(1));
  });
}

} // namespace tritium
