// Affine carries of a loop (AffineCarries.h).
#include "compiler/analysis/AffineCarries.h"

namespace tritium {

bool invariantIn(const ir::Value *v, const ir::Block &body) {
  if (v->ownerBlock() == &body)
    return false; // a body argument: the induction variable or a carried value
  const ir::Op *def = v->definingOp();
  if (!def || def->parentBlock() != &body)
    return true; // from outside the loop
  switch (def->kind()) {
  case ir::OpKind::Constant: case ir::OpKind::ProgramId: case ir::OpKind::NumPrograms:
  case ir::OpKind::Splat: case ir::OpKind::Add: case ir::OpKind::Sub: case ir::OpKind::Mul:
  case ir::OpKind::Cast: case ir::OpKind::ExpandDims: case ir::OpKind::Broadcast:
    break;
  default:
    return false;
  }
  for (const ir::Value *o : def->operands())
    if (!invariantIn(o, body))
      return false;
  return true;
}

std::vector<AffineCarry> affineCarries(const ir::Op &loop) {
  std::vector<AffineCarry> out;
  if (loop.kind() != ir::OpKind::For || !loop.body() || loop.body()->ops().empty())
    return out;
  const ir::Block &body = *loop.body();
  const ir::Op &yield = *body.ops().back();
  if (yield.kind() != ir::OpKind::Yield)
    return out;
  for (unsigned j = 1; j < body.arguments().size() && j - 1 < yield.numOperands(); ++j) {
    const ir::Value *arg = body.argument(j), *next = yield.operand(j - 1);
    const ir::Op *def = next->definingOp();
    // (A carry may take an op of no operands, a constant, each iteration.)
    if (!def || def->parentBlock() != &body || def->numOperands() == 0 ||
        def->operand(0)->type() != arg->type())
      continue;
    const ir::Value *step = nullptr;
    if (def->kind() == ir::OpKind::AddPtr && def->operand(0) == arg)
      step = def->operand(1);
    else if (def->kind() == ir::OpKind::Add && arg->type().isInt())
      step = def->operand(0) == arg ? def->operand(1)
             : def->operand(1) == arg ? def->operand(0)
                                     : nullptr;
    if (step && invariantIn(step, body))
      out.push_back({j, step, next});
  }
  return out;
}

} // namespace tritium
