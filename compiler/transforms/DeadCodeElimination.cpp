// Dead code elimination: drops pure and read-only ops whose results are unused, iterating to a
// fixed point so chains of dead ops go at once.
#include "compiler/transforms/Passes.h"

#include <unordered_set>

namespace tritium {

static void collectUses(ir::Block &block, std::unordered_set<const ir::Value *> &used) {
  for (auto &op : block.ops()) {
    for (ir::Value *v : op->operands())
      used.insert(v);
    for (unsigned r = 0; r < op->numRegions(); ++r)
      collectUses(*op->region(r), used);
  }
}

static bool sweep(ir::Block &block, const std::unordered_set<const ir::Value *> &used) {
  bool changed = false;
  for (auto it = block.ops().begin(); it != block.ops().end();) {
    ir::Op &op = **it;
    for (unsigned r = 0; r < op.numRegions(); ++r)
      changed |= sweep(*op.region(r), used);
    bool removable = ir::trait(op) != ir::OpTrait::Effect;
    for (auto &r : op.results())
      removable = removable && !used.count(r.get());
    if (removable) {
      it = block.ops().erase(it);
      changed = true;
    } else {
      ++it;
    }
  }
  return changed;
}

void eliminateDeadCode(ir::Function &fn) {
  bool changed = true;
  while (changed) {
    std::unordered_set<const ir::Value *> used;
    collectUses(fn.body(), used);
    changed = sweep(fn.body(), used);
  }
}

} // namespace tritium
