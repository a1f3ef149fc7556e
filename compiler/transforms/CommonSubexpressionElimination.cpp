// Common subexpression elimination over pure ops: an op equal to an earlier visible one (same
// kind, operands, attributes, types and, in GIR, layouts) is replaced by it. Scopes follow the region nesting, so
// a value from inside a loop body or a branch never replaces one outside it. Loads are never merged: a store
// may sit between them.
#include "compiler/transforms/Passes.h"

#include "compiler/ir/Printer.h"

#include <map>
#include <unordered_map>

namespace tritium {

namespace {

// A textual identity of an op's computation; values by address, which is unique and stable.
std::string signatureOf(const ir::Op &op) {
  std::string s = op.name();
  for (ir::Value *v : op.operands())
    s += " " + std::to_string(reinterpret_cast<uintptr_t>(v));
  for (auto &[name, value] : op.attrs())
    s += " " + name + "=" + ir::formatAttr(value);
  for (auto &r : op.results()) {
    s += " :" + r->type().str();
    if (r->layout()) // GIR: the same value in another layout is another value
      s += " " + r->layout()->str();
  }
  return s;
}

class CSE {
public:
  void run(ir::Block &block, std::map<std::string, ir::Op *> scope) {
    for (auto &op : block.ops()) {
      for (unsigned i = 0; i < op->numOperands(); ++i)
        if (auto it = replaced_.find(op->operand(i)); it != replaced_.end())
          op->setOperand(i, it->second);
      if (op->numRegions()) {
        for (unsigned r = 0; r < op->numRegions(); ++r)
          run(*op->region(r), scope);
        continue;
      }
      if (ir::trait(*op) != ir::OpTrait::Pure || op->numResults() == 0)
        continue;
      std::string key = signatureOf(*op);
      auto [it, inserted] = scope.emplace(key, op.get());
      if (!inserted)
        for (unsigned i = 0; i < op->numResults(); ++i)
          replaced_[op->result(i)] = it->second->result(i);
    }
  }

private:
  std::unordered_map<const ir::Value *, ir::Value *> replaced_;
};

} // namespace

void eliminateCommonSubexpressions(ir::Function &fn) {
  CSE().run(fn.body(), {});
  eliminateDeadCode(fn); // the merged duplicates are now unused
}

} // namespace tritium
