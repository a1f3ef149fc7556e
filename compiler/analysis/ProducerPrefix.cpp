#include "compiler/analysis/ProducerPrefix.h"

#include "compiler/analysis/AffineCarries.h"
#include "compiler/ir/TensorMap.h"

#include <unordered_set>

namespace tritium {

std::vector<const ir::Op *> producerPrefix(const ir::Op &outer, const ir::Op &inner) {
  const ir::Block &body = *inner.body();
  std::vector<const ir::Value *> work{inner.operand(0), inner.operand(1), inner.operand(2)};
  for (const auto &op : body.ops())
    if (op->hasAttr("pipelined") && !op->hasAttr("resident"))
      for (unsigned i = 0; i < op->numOperands(); ++i)
        if (!op->hasAttr("tensor_map") || ir::tensorCopyReads(*op, i))
          work.push_back(op->operand(i));
  std::vector<AffineCarry> carries = affineCarries(inner);
  std::unordered_set<const ir::Value *> seen;
  std::unordered_set<const ir::Op *> needed;
  while (!work.empty()) {
    const ir::Value *v = work.back();
    work.pop_back();
    if (!seen.insert(v).second)
      continue;
    if (v->ownerBlock() == &body) { // an argument of the inner body: its value at any iteration
      for (const AffineCarry &c : carries)
        if (body.argument(c.arg) == v) {
          work.push_back(inner.operand(2 + c.arg));
          work.push_back(c.step);
        }
      continue;
    }
    const ir::Op *def = v->definingOp();
    if (!def)
      continue;
    if (def->parentBlock() == outer.body())
      needed.insert(def);
    else if (def->parentBlock() != &body)
      continue; // defined before the outer loop: the producer has it
    for (const ir::Value *o : def->operands())
      work.push_back(o);
  }
  std::vector<const ir::Op *> out;
  for (const auto &op : outer.body()->ops())
    if (needed.count(op.get()))
      out.push_back(op.get());
  return out;
}

} // namespace tritium
