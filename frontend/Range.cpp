// range(): a device loop traced from a C++ range-for. begin() opens the loop body, the single
// increment closes it, so the body runs exactly once at trace time.
#include "frontend/DSL.h"
#include "frontend/Tracer.h"
#include "frontend/TypeRules.h"

#include <exception>

namespace tritium::dsl {

using ir::OpKind;
using ir::ScalarKind;
using ir::Type;

Range::Range(const Operand &start, const Operand &end, const Operand &step, int numStages,
             Loc l)
    : numStages_(numStages), loc_(l) {
  auto &b = Tracer::current(loc_).builder();
  // Bounds share the widest integer type among them (i32 for literals).
  ScalarKind k = ScalarKind::I32;
  for (const Operand *x : {&start, &end, &step}) {
    if (x->kind == Operand::Kind::Float)
      userError("range bounds must be integers, got " + describe(*x), loc_);
    if (x->kind == Operand::Kind::Value) {
      if (!x->value)
        userError("use of an empty tritium Value as a range bound", loc_);
      const Type &t = x->value->type();
      if (!t.isInt() || t.isBlock())
        userError("range bounds must be integer scalars, got " + t.str(), loc_);
      if (t.kind() == ScalarKind::I64)
        k = ScalarKind::I64;
    }
  }
  if (step.kind == Operand::Kind::Int && step.i <= 0)
    userError("range step must be positive, got " + std::to_string(step.i), loc_);
  if (numStages < 0)
    userError("range num_stages must be at least 1, got " + std::to_string(numStages), loc_);
  start_ = materialize(b, start, Type::scalar(k), loc_);
  end_ = materialize(b, end, Type::scalar(k), loc_);
  step_ = materialize(b, step, Type::scalar(k), loc_);
  uncaught_ = std::uncaught_exceptions();
}

Range::Iterator Range::begin() {
  Tracer &t = Tracer::current(loc_);
  if (open_ || done_)
    userError("a tritium range can be iterated only once", loc_);
  auto &b = t.builder();
  outer_ = b.block();
  loop_ = b.create(OpKind::For, {start_, end_, step_}, {}, loc_);
  int64_t stages = numStages_ ? numStages_ : t.function().intAttr("num_stages").value_or(1);
  loop_->setAttr("num_stages", stages);
  ir::Block *body = loop_->createBody();
  body->addArgument(start_->type());
  t.enterBody(body);
  open_ = true;
  return Iterator(this);
}

void Range::close() {
  Tracer &t = Tracer::current(loc_);
  t.builder().create(OpKind::Yield, {}, {}, loc_);
  t.exitBody(outer_);
  done_ = true;
}

Range::~Range() noexcept {
  if (!open_ || done_)
    return;
  // Left without the increment: an exception, or break/return in the body.
  try {
    Tracer &t = Tracer::current(loc_);
    t.exitBody(outer_);
    if (std::uncaught_exceptions() <= uncaught_)
      t.deferError("'break' or 'return' inside a tritium range loop is not supported: the "
                   "loop body must run to its end",
                   loc_);
  } catch (...) {
  }
}

Value Range::Iterator::operator*() const { return Value(r_->loop_->body()->argument(0)); }

Range::Iterator &Range::Iterator::operator++() {
  r_->close();
  return *this;
}

bool Range::Iterator::operator!=(const Iterator &) const { return !r_->done_; }

Range range(const Operand &start, const Operand &end, const Operand &step, int num_stages,
            Loc loc) {
  return Range(start, end, step, num_stages, loc);
}

} // namespace tritium::dsl
