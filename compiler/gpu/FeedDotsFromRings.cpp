// Feeding dot from the pipeliner's rings (GIR): a 16-bit dot operand that is a tile loaded by
// a cp.async ring of the dot's own loop, [M, K] for a or [K, N] for b, is read by the dot
// straight from the ring's stage buffer, instead of from registers staged into shared memory
// again. Such a load gets {swizzle = 128}: its tile sits in the buffer row-major with each
// 16-byte chunk's index XORed with bits 7-9 of its offset (the layout TMA calls SWIZZLE_128B),
// so that the eight row addresses of an ldmatrix hit eight different bank groups. A load
// whose only user is the dot also gets {dot_only = 1}: no thread reads it into registers. The
// dot records which operands it takes from rings: {ring_a = 1}, {ring_b = 1}.
//
// Bulk rings are left out: a bulk buffer is refilled as soon as the body's pipelined loads
// have read it, before the dot would. A ring with such a tile waits for its stage and then
// synchronizes the CTA at the top of each iteration (codegen/LowerPipelinedLoop.cpp): every
// warp reads tiles other threads copied, and the refill of the previous iteration's stage must
// wait for every warp's reads of it.
#include "compiler/gpu/GpuPasses.h"

#include <unordered_map>

namespace tritium {

void feedDotsFromRings(ir::Function &fn) {
  std::unordered_map<const ir::Value *, int> uses;
  ir::walk(fn.body(), [&](ir::Op &op) {
    for (const ir::Value *v : op.operands())
      ++uses[v];
  });
  ir::walk(fn.body(), [&](ir::Op &op) {
    if (op.kind() != ir::OpKind::Dot || op.operand(0)->type().rank() != 2 ||
        ir::bitWidth(op.operand(0)->type().kind()) != 16)
      return;
    for (unsigned i = 0; i < 2; ++i) {
      ir::Op *load = op.operand(i)->definingOp();
      if (!load || load->kind() != ir::OpKind::Load || !load->hasAttr("pipelined") ||
          load->hasAttr("resident") || load->parentBlock() != op.parentBlock())
        continue;
      const ir::Op *loop = load->parentBlock()->parentOp();
      if (!loop || loop->hasAttr("bulk_barriers"))
        continue;
      load->setAttr("swizzle", int64_t(128));
      if (uses[load->result()] == 1)
        load->setAttr("dot_only", int64_t(1));
      op.setAttr(i == 0 ? "ring_a" : "ring_b", int64_t(1));
    }
  });
}

} // namespace tritium
