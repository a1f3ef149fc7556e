// Loop-invariant code motion (GIR) for pipelined loops: a pure op directly in the body of a
// `for` with num_stages >= 2 whose operands all come from outside the body computes the same
// value in every iteration, so it moves to just before the loop, innermost loops first so that
// an op can leave several levels. The layout pass puts each convert_layout at its use, inside
// the loop, where it would stage the block through shared memory (two barriers) in every
// iteration, and the pipelining plan would see it in a load's slice and leave the load out of
// the ring (a tile's column mask made before the loop is such a convert). Pure ops have no side
// effects and cannot fault, so running them once more for a loop of no iteration is harmless.
// LLVM hoists the register-only ones anyway.
//
// Loops without a ring keep their ops: there, hoisting the cross-entropy backward's per-row
// converts out of its loop over blocks (plain loads of single elements, rows that start
// anywhere) made it 10% slower on the H200 (docs/notes/norms.md, "Tiles of rows through the
// ring"); the barriers they brought kept the CTA's warps on the same stretch of the rows.
#include "compiler/gpu/GpuPasses.h"

#include <iterator>

namespace tritium {

namespace {

bool definedInside(const ir::Value *v, const ir::Block &body) {
  if (v->ownerBlock() == &body) // the induction variable or a carried value
    return true;
  const ir::Op *def = v->definingOp();
  return def && def->parentBlock() == &body;
}

// Hoists what it can out of the loops in `block` (and their nested blocks).
void hoistIn(ir::Block &block) {
  for (auto it = block.ops().begin(); it != block.ops().end(); ++it) {
    ir::Op &op = **it;
    for (unsigned r = 0; r < op.numRegions(); ++r)
      hoistIn(*op.region(r));
    if (op.kind() != ir::OpKind::For || op.intAttr("num_stages") < 2)
      continue;
    ir::Block &body = *op.body();
    for (auto b = body.ops().begin(); b != body.ops().end();) {
      ir::Op &candidate = **b;
      bool invariant = ir::trait(candidate) == ir::OpTrait::Pure &&
                       candidate.numRegions() == 0 && candidate.numResults() > 0;
      for (const ir::Value *o : candidate.operands())
        invariant = invariant && !definedInside(o, body);
      if (!invariant) {
        ++b;
        continue;
      }
      candidate.setParentBlock(&block);
      auto next = std::next(b);
      block.ops().splice(it, body.ops(), b); // before the loop, after what was hoisted so far
      b = next;
    }
  }
}

} // namespace

void hoistLoopInvariants(ir::Function &fn) { hoistIn(fn.body()); }

} // namespace tritium
