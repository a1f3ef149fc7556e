// The TIR data structures: SSA values, ops with attributes and single-block regions, and the
// kernel function. Nodes carry a kind enum (no RTTI); ops are listed once in Ops.def.
#pragma once

#include "compiler/ir/Layout.h"
#include "compiler/ir/Types.h"
#include "compiler/support/Error.h"

#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tritium::ir {

enum class OpKind {
#define OP(kind, mnemonic, trait) kind,
#include "compiler/ir/Ops.def"
};

enum class OpTrait { Pure, Read, Effect };

const char *mnemonic(OpKind k);
// Ops whose result element i depends only on element i of each operand (all of one shape).
bool isElementwise(OpKind k);
OpTrait trait(OpKind k);
std::optional<OpKind> parseMnemonic(const std::string &s);

class Op;
// An op's trait: its kind's, except an inline_asm marked {pure = 1}, which is Pure.
OpTrait trait(const Op &op);
class Block;

// An SSA value: the result of an op, or an argument of a block (kernel arguments, loop
// induction variables and loop-carried values).
class Value {
public:
  Value(Type type, Op *def, Block *owner, unsigned index)
      : type_(std::move(type)), def_(def), owner_(owner), index_(index) {}
  const Type &type() const { return type_; }
  void setType(Type t) { type_ = std::move(t); }
  Op *definingOp() const { return def_; }   // null for block arguments
  Block *ownerBlock() const { return owner_; } // set for block arguments
  unsigned index() const { return index_; }
  // The name a printer uses for block arguments ("input_ptr"); results are numbered.
  const std::string &name() const { return name_; }
  void setName(std::string n) { name_ = std::move(n); }
  // Kernel arguments specialized as divisible by 16 (bytes for pointers, value for integers),
  // as Triton's specialization does; 1 when nothing is known.
  int divisibility() const { return divisibility_; }
  void setDivisibility(int d) { divisibility_ = d; }
  // Set by the layout pass: which thread holds which element (GIR). Blocks only.
  const std::optional<Layout> &layout() const { return layout_; }
  void setLayout(Layout l) { layout_ = std::move(l); }

private:
  Type type_;
  Op *def_;
  Block *owner_;
  unsigned index_;
  std::string name_;
  int divisibility_ = 1;
  std::optional<Layout> layout_;
};

using Attr = std::variant<int64_t, double, std::string>;

class Block {
public:
  explicit Block(Op *parent = nullptr) : parent_(parent) {}
  Value *addArgument(Type type, std::string name = "");
  const std::vector<std::unique_ptr<Value>> &arguments() const { return args_; }
  Value *argument(unsigned i) const { return args_.at(i).get(); }
  std::list<std::unique_ptr<Op>> &ops() { return ops_; }
  const std::list<std::unique_ptr<Op>> &ops() const { return ops_; }
  Op *parentOp() const { return parent_; }
  Op *terminator() const { return ops_.empty() ? nullptr : ops_.back().get(); }

private:
  Op *parent_;
  std::vector<std::unique_ptr<Value>> args_;
  std::list<std::unique_ptr<Op>> ops_;
};

class Op {
public:
  Op(OpKind kind, std::vector<Value *> operands, const std::vector<Type> &resultTypes,
     SourceLoc loc);
  OpKind kind() const { return kind_; }
  const char *name() const { return mnemonic(kind_); }
  const SourceLoc &loc() const { return loc_; }

  const std::vector<Value *> &operands() const { return operands_; }
  Value *operand(unsigned i) const { return operands_.at(i); }
  unsigned numOperands() const { return static_cast<unsigned>(operands_.size()); }
  void setOperand(unsigned i, Value *v) { operands_.at(i) = v; }
  void addOperand(Value *v) { operands_.push_back(v); }
  Value *addResult(Type type); // a new last result (the tracer's loops gain carried values)

  Value *result(unsigned i = 0) const { return results_.at(i).get(); }
  unsigned numResults() const { return static_cast<unsigned>(results_.size()); }
  const std::vector<std::unique_ptr<Value>> &results() const { return results_; }

  // Attributes keep their insertion order so the printed form is stable.
  void setAttr(const std::string &name, Attr value);
  bool hasAttr(const std::string &name) const;
  const Attr &attr(const std::string &name) const;
  int64_t intAttr(const std::string &name) const;
  double floatAttr(const std::string &name) const;
  const std::string &strAttr(const std::string &name) const;
  const std::vector<std::pair<std::string, Attr>> &attrs() const { return attrs_; }

  // Ops with regions own one block per region: for has one (its body), if two (then, else),
  // while two (the condition, the body). body() is the first.
  Block *body() const { return regions_.empty() ? nullptr : regions_[0].get(); }
  Block *region(unsigned i) const { return regions_.at(i).get(); }
  unsigned numRegions() const { return unsigned(regions_.size()); }
  Block *createBody() { return createRegion(); } // the first region
  Block *createRegion();
  Block *parentBlock() const { return parent_; }
  void setParentBlock(Block *b) { parent_ = b; }

private:
  OpKind kind_;
  std::vector<Value *> operands_;
  std::vector<std::unique_ptr<Value>> results_;
  std::vector<std::pair<std::string, Attr>> attrs_;
  std::vector<std::unique_ptr<Block>> regions_;
  Block *parent_ = nullptr;
  SourceLoc loc_;
};

// A kernel: its arguments are the body's block arguments.
class Function {
public:
  Function(std::string name, SourceLoc loc) : name_(std::move(name)), loc_(std::move(loc)) {}
  const std::string &name() const { return name_; }
  const SourceLoc &loc() const { return loc_; }
  Block &body() { return body_; }
  const Block &body() const { return body_; }
  // Function-level attributes: num_warps, compile-time parameters, shared_bytes (GIR), ...
  std::vector<std::pair<std::string, Attr>> &attrs() { return attrs_; }
  const std::vector<std::pair<std::string, Attr>> &attrs() const { return attrs_; }
  void setAttr(const std::string &name, Attr value);
  std::optional<int64_t> intAttr(const std::string &name) const;

private:
  std::string name_;
  SourceLoc loc_;
  Block body_;
  std::vector<std::pair<std::string, Attr>> attrs_;
};

// Replaces every use of `from` by `to` in the ops of `block` and of the regions inside it.
void replaceUsesIn(Block &block, const Value *from, Value *to);

// The functions of the math op (MathFunctions.def).
enum class MathFn {
#define MATH(name, text, arity, ints) name,
#include "compiler/ir/MathFunctions.def"
};
const char *mathName(MathFn f);
int mathArity(MathFn f);
bool mathAcceptsIntegers(MathFn f);
std::optional<MathFn> parseMathFn(const std::string &name);

// The permutation attribute of trans ("1,0"), and back; parseOrder returns {} when malformed.
std::string formatOrder(const std::vector<int64_t> &order);
std::vector<int64_t> parseOrder(const std::string &text);
// A hint's per-dimension list ("16,1"): {} unless it is comma-separated decimal integers that
// each fit 64 bits.
std::vector<int64_t> parseIntList(const std::string &text);

// Walks every op in program order, entering regions (in order) before continuing.
template <typename Fn> void walk(Block &block, Fn &&fn) {
  for (auto &op : block.ops()) {
    fn(*op);
    for (unsigned r = 0; r < op->numRegions(); ++r)
      walk(*op->region(r), fn);
  }
}

// The first op of `kind` in program order (regions included), or null.
inline const Op *findFirst(const Block &block, OpKind kind) {
  for (const auto &op : block.ops()) {
    if (op->kind() == kind)
      return op.get();
    for (unsigned r = 0; r < op->numRegions(); ++r)
      if (const Op *inner = findFirst(*op->region(r), kind))
        return inner;
  }
  return nullptr;
}

} // namespace tritium::ir
