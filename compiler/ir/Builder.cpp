// Op creation at the end of the current block.
#include "compiler/ir/Builder.h"

namespace tritium::ir {

Op *Builder::create(OpKind kind, std::vector<Value *> operands, const std::vector<Type> &results,
                    const SourceLoc &loc) {
  auto op = std::make_unique<Op>(kind, std::move(operands), results, loc);
  op->setParentBlock(block_);
  Op *raw = op.get();
  block_->ops().push_back(std::move(op));
  return raw;
}

Value *Builder::constant(const Type &type, Attr value, const SourceLoc &loc) {
  Op *op = create(OpKind::Constant, {}, {type}, loc);
  op->setAttr("value", std::move(value));
  return op->result();
}

} // namespace tritium::ir
