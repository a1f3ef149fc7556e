// range(): a device loop traced from a C++ range-for. begin() opens the loop body, the single
// increment closes it, so the body runs exactly once at trace time.
#include "frontend/Carry.h"
#include "frontend/DSL.h"
#include "frontend/Tracer.h"
#include "frontend/TypeRules.h"

#include <exception>
#include <optional>

namespace tritium::dsl {

using ir::OpKind;
using ir::ScalarKind;
using ir::Type;

Range::Range(const Operand &start, const Operand &end, const Operand &step, int numStages,
             Loc l)
    : numStages_(numStages), loc_(l) {
  auto &b = Tracer::current(loc_).builder();
  // Bounds share one integer type, the widest among the values (at equal width unsigned, as
  // arithmetic's rule; a u32 bound past 2^31 stays unsigned); i32 for literals, i64 for
  // literals past the i32 range.
  std::optional<ScalarKind> valueKind;
  for (const Operand *x : {&start, &end, &step}) {
    if (x->kind == Operand::Kind::Float)
      userError("range bounds must be integers, got " + describe(*x), loc_);
    if (x->kind == Operand::Kind::Value) {
      if (!x->value)
        userError("use of an empty tritium Value as a range bound", loc_);
      const Type &t = x->value->type();
      if (!t.isInt() || t.isBlock())
        userError("range bounds must be integer scalars, got " + t.str(), loc_);
      ScalarKind vk = t.kind();
      if (!valueKind || ir::bitWidth(vk) > ir::bitWidth(*valueKind) ||
          (ir::bitWidth(vk) == ir::bitWidth(*valueKind) && ir::isUnsignedKind(vk)))
        valueKind = vk;
    }
  }
  // Narrow integers count in 32 bits, as Triton's loops do.
  ScalarKind k = !valueKind || ir::bitWidth(*valueKind) < 32 ? ScalarKind::I32 : *valueKind;
  for (const Operand *x : {&start, &end, &step})
    if (x->kind == Operand::Kind::Int && !literalFits(x->i, k))
      k = ScalarKind::I64;
  if (step.kind == Operand::Kind::Int && step.i <= 0)
    userError("range step must be positive, got " + std::to_string(step.i), loc_);
  if (numStages < 0)
    userError("range num_stages must be at least 1, got " + std::to_string(numStages), loc_);
  start_ = materialize(b, start, Type::scalar(k), loc_);
  end_ = materialize(b, end, Type::scalar(k), loc_);
  step_ = materialize(b, step, Type::scalar(k), loc_);
  uncaught_ = std::uncaught_exceptions();
}

Range::Range(Range &&o) noexcept
    : carried_(std::move(o.carried_)), before_(std::move(o.before_)), start_(o.start_),
      end_(o.end_), step_(o.step_),
      numStages_(o.numStages_), warpSpecialize_(o.warpSpecialize_),
      pingPong_(o.pingPong_), hoist_(o.hoist_), loc_(o.loc_), loop_(o.loop_), outer_(o.outer_),
      open_(o.open_), done_(o.done_), uncaught_(o.uncaught_) {
  o.open_ = false; // the moved-from range owns no loop
}

void Range::addCarried(Value *v) {
  if (open_ || done_)
    userError("carry() must name the loop's variables before the loop starts", loc_);
  if (!v->checked(loc_))
    userError("carry() of an empty tritium Value: give the variable its initial value first",
              loc_);
  for (Value *c : carried_)
    if (c == v)
      userError("carry() names the same variable twice", loc_);
  carried_.push_back(v);
}

Range Range::warp_specialize(bool on) && {
  if (open_ || done_)
    userError("warp_specialize() must be asked before the loop starts", loc_);
  warpSpecialize_ = on;
  return std::move(*this);
}

Range Range::ping_pong(bool on) && {
  if (open_ || done_)
    userError("ping_pong() must be asked before the loop starts", loc_);
  pingPong_ = on;
  warpSpecialize_ = warpSpecialize_ || on;
  return std::move(*this);
}

Range Range::hoist_invariants(bool on) && {
  if (open_ || done_)
    userError("hoist_invariants() must be asked before the loop starts", loc_);
  hoist_ = on;
  return std::move(*this);
}

Range::Iterator Range::begin() {
  Tracer &t = Tracer::current(loc_);
  if (open_ || done_)
    userError("a tritium range can be iterated only once", loc_);
  auto &b = t.builder();
  outer_ = b.block();
  std::vector<ir::Value *> operands = {start_, end_, step_};
  std::vector<Type> types;
  for (Value *c : carried_) {
    operands.push_back(c->checked(loc_));
    types.push_back(c->ir()->type());
  }
  loop_ = b.create(OpKind::For, operands, types, loc_);
  int64_t stages = numStages_ ? numStages_ : t.function().intAttr("num_stages").value_or(1);
  loop_->setAttr("num_stages", stages);
  if (warpSpecialize_)
    loop_->setAttr("warp_specialize", int64_t(1));
  if (pingPong_)
    loop_->setAttr("ping_pong_asked", int64_t(1));
  if (!hoist_)
    loop_->setAttr("no_hoist", int64_t(1));
  ir::Block *body = loop_->createBody();
  body->addArgument(start_->type());
  // Inside the body a carried variable is the value of the current iteration.
  for (Value *c : carried_)
    c->v_ = body->addArgument(c->ir()->type());
  before_ = std::make_shared<const std::vector<LiveValues::Entry>>(LiveValues::snapshot());
  t.enterBody(body);
  open_ = true;
  return Iterator(this);
}

void Range::close() {
  Tracer &t = Tracer::current(loc_);
  // Variables assigned in the body and not named with carry(): carried too, their reads in the
  // body rewritten to the iteration's value.
  const auto &before = *static_cast<const std::vector<LiveValues::Entry> *>(before_.get());
  std::vector<LiveValues::Change> assigned = assignedVariables(before, carried_);
  ir::Block *body = loop_->body();
  checkUnambiguous(assigned, before, {body}, "range loop", loc_);
  std::vector<CarriedArgument> arguments;
  for (const auto &ch : assigned) {
    if (!ch.after)
      userError("a variable was emptied in the body of this range loop", loc_);
    if (ch.after->type() != ch.before->type())
      userError("a variable assigned in this range loop changed type, from " +
                    ch.before->type().str() + " to " + ch.after->type().str() +
                    " (a carried variable must keep its type and shape; use cast() or full())",
                loc_);
    loop_->addOperand(ch.before);
    ir::Value *arg = body->addArgument(ch.before->type());
    loop_->addResult(ch.before->type());
    ir::replaceUsesIn(*body, ch.before, arg);
    arguments.push_back({ch.before, arg});
    carried_.push_back(ch.var);
  }
  std::vector<ir::Value *> next;
  for (size_t i = 0; i < carried_.size(); ++i) {
    ir::Value *v = carried_[i]->checked(loc_); // the body may have assigned a stale value
    const Type &want = loop_->result(unsigned(i))->type();
    if (!v)
      userError("carried variable " + std::to_string(i + 1) + " was emptied in the loop body",
                loc_);
    if (v->type() != want)
      userError("carried variable " + std::to_string(i + 1) + " changed type in the loop body, " +
                    "from " + want.str() + " to " + v->type().str() +
                    " (a carried variable must keep its type and shape; use cast() or full())",
                loc_);
    next.push_back(yieldedValue(v, arguments, before, "range loop", loc_));
  }
  t.builder().create(OpKind::Yield, next, {}, loc_);
  t.exitBody(outer_);
  // After the loop a carried variable is the value of the last iteration.
  for (size_t i = 0; i < carried_.size(); ++i)
    carried_[i]->v_ = loop_->result(unsigned(i));
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
