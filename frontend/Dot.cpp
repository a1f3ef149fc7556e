// dot (Triton's tl.dot): checks the operands against the tensor cores' type rules
// (compiler/ir/DotRules.h) at the caller's line, and gives acc + a x b. Without acc the
// product starts from a block of zeros, which the layout pass makes in the accumulator's
// layout directly.
#include "compiler/ir/DotRules.h"
#include "frontend/DSL.h"
#include "frontend/Tracer.h"
#include "frontend/TypeRules.h"

namespace tritium::dsl {

using ir::OpKind;
using ir::Type;

namespace {

ir::Value *dotOperand(const Operand &x, const char *what, const SourceLoc &loc) {
  if (x.kind != Operand::Kind::Value || !x.value)
    userError(std::string("dot's ") + what + " must be a block, got " + describe(x), loc);
  return x.value;
}

Value makeDot(const Operand &a, const Operand &b, const Operand *acc, const DotOptions &o,
              const SourceLoc &loc) {
  auto &builder = Tracer::current(loc).builder();
  ir::Value *x = dotOperand(a, "first operand", loc), *y = dotOperand(b, "second operand", loc);
  const Type &ta = x->type();
  if (!ta.isBlock() || !y->type().isBlock() || ta.rank() < 2)
    userError("dot takes blocks of rank 2 or 3, got " + ta.str() + " and " + y->type().str(),
              loc);
  std::vector<int64_t> shape = ta.shape();
  shape.back() = y->type().shape().back();
  // Other operands take no precision: one given is refused by the rules below.
  std::string precision =
      ta.kind() == ir::ScalarKind::F32 || o.input_precision != "tf32" ? o.input_precision : "";
  ir::Value *c = nullptr;
  Type accType = Type::scalar(ir::ScalarKind::F32);
  if (acc) {
    if (!o.out_dtype.empty())
      userError("dot: out_dtype picks the accumulator only when no acc is given; acc is " +
                    (acc->kind == Operand::Kind::Value && acc->value ? acc->value->type().str()
                                                                     : describe(*acc)),
                loc);
    c = dotOperand(*acc, "accumulator", loc);
    accType = c->type();
  } else {
    std::optional<ir::ScalarKind> k = ir::defaultDotAccumulator(ta.kind());
    if (!o.out_dtype.empty()) {
      k = ir::parseDtype(o.out_dtype);
      if (!k)
        userError("dot: unknown out_dtype \"" + o.out_dtype + "\" (one of " + ir::dtypeNames() +
                      ")",
                  loc);
    }
    // An operand type without a default is named by the rules below.
    accType = Type::scalar(k.value_or(ir::ScalarKind::F32)).withShape(shape);
  }
  // Checked before the zeros are made, so that a shape error names the operands.
  std::string why = ir::dotTypeError(ta, y->type(), accType, precision);
  if (why.empty() && o.max_num_imprecise_acc != 0)
    why = ir::impreciseAccumulationError(ta, o.max_num_imprecise_acc);
  if (!why.empty())
    userError(why, loc);
  if (!c)
    c = materialize(builder, Operand(int64_t(0)), accType, loc);
  ir::Op *op = builder.create(OpKind::Dot, {x, y, c}, {c->type()}, loc);
  if (!precision.empty())
    op->setAttr("input_precision", precision);
  if (o.max_num_imprecise_acc != 0)
    op->setAttr("max_num_imprecise_acc", o.max_num_imprecise_acc);
  return Value(op->result());
}

} // namespace

Value dot(const Operand &a, const Operand &b, Loc l) {
  return makeDot(a, b, nullptr, {}, SourceLoc(l));
}
Value dot(const Operand &a, const Operand &b, const Operand &acc, Loc l) {
  return makeDot(a, b, &acc, {}, SourceLoc(l));
}
Value dot(const Operand &a, const Operand &b, const Operand &acc, const DotOptions &o, Loc l) {
  return makeDot(a, b, &acc, o, SourceLoc(l));
}
Value dot(const Operand &a, const Operand &b, const DotOptions &o, Loc l) {
  return makeDot(a, b, nullptr, o, SourceLoc(l));
}

} // namespace tritium::dsl
