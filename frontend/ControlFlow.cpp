// if_ and while_: structured control flow on runtime scalars, traced once per region as range
// loops are. Variables assigned inside flow out (if_) or are carried (while_) without being
// named, found by comparing the live variables before and after (Carry.h).
#include "frontend/Carry.h"
#include "frontend/DSL.h"
#include "frontend/Tracer.h"
#include "frontend/TypeRules.h"

namespace tritium::dsl {

using ir::OpKind;
using ir::ScalarKind;
using ir::Type;

namespace {

// A program-uniform condition: an i1 scalar, or a number compared with 0.
ir::Value *scalarCondition(const Operand &cond, const char *what, const SourceLoc &loc) {
  if (cond.kind != Operand::Kind::Value || !cond.value)
    userError(std::string(what) + "'s condition must be a traced value, got " + describe(cond),
              loc);
  const Type &t = cond.value->type();
  if (t.isBlock())
    userError(std::string(what) + "'s condition must be a scalar (every thread of the program " +
                  "takes the same branch), got " + t.str() + "; use where() for blocks",
              loc);
  if (t.isPtr())
    userError(std::string(what) + "'s condition cannot be a pointer", loc);
  if (t.isBool())
    return cond.value;
  return (cond != 0).ir();
}

// Restores the builder to `outer` however the region's tracing ends.
class RegionScope {
public:
  RegionScope(Tracer &t, ir::Block *region) : t_(t), outer_(t.builder().block()) {
    t_.enterBody(region);
  }
  ~RegionScope() { t_.exitBody(outer_); }

private:
  Tracer &t_;
  ir::Block *outer_;
};

void checkSameType(const Type &a, const Type &b, const char *what, const SourceLoc &loc) {
  if (a != b)
    userError(std::string("a variable assigned in ") + what + " has type " + a.str() +
                  " on one path and " + b.str() +
                  " on the other: both must give the same type and shape (use cast() or full())",
              loc);
}

} // namespace

void if_(const Operand &cond, const std::function<void()> &then,
         const std::function<void()> &otherwise, Loc l) {
  SourceLoc loc(l);
  Tracer &t = Tracer::current(loc);
  ir::Value *c = scalarCondition(cond, "if_", loc);
  std::vector<LiveValues::Entry> before = LiveValues::snapshot();
  ir::Op *op = t.builder().create(OpKind::If, {c}, {}, loc);
  ir::Block *regions[2] = {op->createRegion(), op->createRegion()};
  // Each branch from the same starting values; what each leaves in every variable it assigned.
  std::vector<LiveValues::Change> changed[2];
  for (int r = 0; r < 2; ++r) {
    {
      RegionScope scope(t, regions[r]);
      if (r == 0 ? bool(then) : bool(otherwise))
        (r == 0 ? then : otherwise)();
    }
    changed[r] = assignedVariables(before);
    for (const auto &ch : changed[r])
      LiveValues::rebind(ch.var, ch.before);
  }
  // The variables either branch assigned, in a stable order, and their value on each path.
  std::vector<Value *> vars;
  std::vector<ir::Value *> paths[2], start;
  for (int r = 0; r < 2; ++r)
    for (const auto &ch : changed[r])
      if (std::find(vars.begin(), vars.end(), ch.var) == vars.end()) {
        vars.push_back(ch.var);
        start.push_back(ch.before);
      }
  for (int r = 0; r < 2; ++r)
    for (size_t i = 0; i < vars.size(); ++i) {
      ir::Value *v = start[i];
      for (const auto &ch : changed[r])
        if (ch.var == vars[i])
          v = ch.after;
      if (!v)
        userError("a variable was emptied in a branch of if_", loc);
      paths[r].push_back(v);
    }
  for (size_t i = 0; i < vars.size(); ++i)
    checkSameType(paths[0][i]->type(), paths[1][i]->type(), "the branches of if_", loc);
  for (int r = 0; r < 2; ++r) {
    RegionScope scope(t, regions[r]);
    t.builder().create(OpKind::Yield, paths[r], {}, loc);
  }
  for (size_t i = 0; i < vars.size(); ++i)
    LiveValues::rebind(vars[i], op->addResult(paths[0][i]->type()));
}

void while_(const std::function<Value()> &cond, const std::function<void()> &body, Loc l) {
  SourceLoc loc(l);
  Tracer &t = Tracer::current(loc);
  std::vector<LiveValues::Entry> before = LiveValues::snapshot();
  ir::Op *op = t.builder().create(OpKind::While, {}, {}, loc);
  ir::Block *condRegion = op->createRegion(), *bodyRegion = op->createRegion();
  {
    RegionScope scope(t, condRegion);
    Value c = cond();
    ir::Value *flag = scalarCondition(Operand(c, l), "while_", loc);
    t.builder().create(OpKind::Yield, {flag}, {}, loc);
  }
  if (!assignedVariables(before).empty())
    userError("while_'s condition assigns a variable: update variables in the body", loc);
  {
    RegionScope scope(t, bodyRegion);
    body();
  }
  std::vector<LiveValues::Change> carried = assignedVariables(before);
  checkUnambiguous(carried, before, {condRegion, bodyRegion}, "while_ loop", loc);
  std::vector<CarriedArgument> arguments;
  for (const auto &ch : carried) {
    if (!ch.after)
      userError("a variable was emptied in the body of while_", loc);
    checkSameType(ch.before->type(), ch.after->type(), "while_'s body (before and after)", loc);
    op->addOperand(ch.before);
    ir::Value *inCond = condRegion->addArgument(ch.before->type());
    ir::Value *inBody = bodyRegion->addArgument(ch.before->type());
    // Reads of the variable inside the loop see the current iteration's value.
    ir::replaceUsesIn(*condRegion, ch.before, inCond);
    ir::replaceUsesIn(*bodyRegion, ch.before, inBody);
    arguments.push_back({ch.before, inBody});
  }
  std::vector<ir::Value *> next;
  for (const auto &ch : carried)
    next.push_back(yieldedValue(ch.after, arguments, before, "while_ loop", loc));
  {
    RegionScope scope(t, bodyRegion);
    t.builder().create(OpKind::Yield, next, {}, loc);
  }
  for (size_t i = 0; i < carried.size(); ++i)
    LiveValues::rebind(carried[i].var, op->addResult(carried[i].before->type()));
}

} // namespace tritium::dsl
