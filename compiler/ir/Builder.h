// Creates ops at an insertion point (the end of a block). Type rules live with the callers: the
// DSL checks the user's types, passes build what they already know to be well-typed.
#pragma once

#include "compiler/ir/IR.h"

namespace tritium::ir {

class Builder {
public:
  explicit Builder(Block *block) : block_(block) {}
  Block *block() const { return block_; }
  void setBlock(Block *b) { block_ = b; }

  Op *create(OpKind kind, std::vector<Value *> operands, const std::vector<Type> &results,
             const SourceLoc &loc);
  Value *createValue(OpKind kind, std::vector<Value *> operands, const Type &result,
                     const SourceLoc &loc) {
    return create(kind, std::move(operands), {result}, loc)->result();
  }
  Value *constant(const Type &type, Attr value, const SourceLoc &loc);

private:
  Block *block_;
};

} // namespace tritium::ir
