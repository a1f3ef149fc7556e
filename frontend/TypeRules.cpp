// Implicit conversions of the DSL (see TypeRules.h).
#include "frontend/TypeRules.h"

#include "compiler/ir/Printer.h"
#include "frontend/Tracer.h"

namespace tritium::dsl {

using ir::ScalarKind;
using ir::Type;

std::string describe(const Operand &x) {
  switch (x.kind) {
  case Operand::Kind::Value: return x.value ? x.value->type().str() : "an empty Value";
  case Operand::Kind::Int: return "int literal " + std::to_string(x.i);
  case Operand::Kind::Float: return "float literal " + ir::formatAttr(x.f);
  }
  return "?";
}

std::string shapeStr(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

ir::Value *convert(ir::Builder &b, ir::Value *v, ScalarKind k, const SourceLoc &loc) {
  const Type &t = v->type();
  if (t.isPtr())
    userError("cannot convert a pointer (" + t.str() + ") to " + ir::irName(k), loc);
  if (t.kind() == k)
    return v;
  return b.createValue(ir::OpKind::Cast, {v}, t.withKind(k), loc);
}

std::vector<int64_t> broadcastShapes(const std::vector<int64_t> &a, const std::vector<int64_t> &c,
                                     const std::string &what, const SourceLoc &loc) {
  // numpy's rule: align the shapes at their last dimension; each pair is equal or has a 1.
  std::vector<int64_t> out(std::max(a.size(), c.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t y = i < c.size() ? c[c.size() - 1 - i] : 1;
    if (x != y && x != 1 && y != 1)
      userError("cannot broadcast shapes " + shapeStr(a) + " and " + shapeStr(c) + " in " + what +
                    ": dimension " + std::to_string(out.size() - 1 - i) + " is " +
                    std::to_string(x) + " against " + std::to_string(y),
                loc);
    out[out.size() - 1 - i] = std::max(x, y);
  }
  return out;
}

ir::Value *broadcastTo(ir::Builder &b, ir::Value *v, const std::vector<int64_t> &shape,
                       const std::string &what, const SourceLoc &loc) {
  const Type &t = v->type();
  if (t.shape() == shape)
    return v;
  if (!t.isBlock())
    return b.createValue(ir::OpKind::Splat, {v}, t.withShape(shape), loc);
  if (t.rank() > int(shape.size()) ||
      broadcastShapes(t.shape(), shape, what, loc) != shape)
    userError("cannot broadcast " + t.str() + " to shape " + shapeStr(shape) + " in " + what, loc);
  // Missing leading dimensions first (as x[None, ...]), then dimensions of 1 repeated.
  while (v->type().rank() < int(shape.size())) {
    std::vector<int64_t> s = v->type().shape();
    s.insert(s.begin(), 1);
    ir::Op *op = b.create(ir::OpKind::ExpandDims, {v}, {v->type().withShape(s)}, loc);
    op->setAttr("axis", int64_t(0));
    v = op->result();
  }
  if (v->type().shape() == shape)
    return v;
  return b.createValue(ir::OpKind::Broadcast, {v}, v->type().withShape(shape), loc);
}

ir::Value *materialize(ir::Builder &b, const Operand &x, const Type &like, const SourceLoc &loc) {
  switch (x.kind) {
  case Operand::Kind::Value: {
    if (!x.value)
      userError("use of an empty tritium Value (declared but never assigned)", loc);
    ir::Value *v = convert(b, x.value, like.kind(), loc);
    return broadcastTo(b, v, like.shape(), "this operation", loc);
  }
  case Operand::Kind::Int:
  case Operand::Kind::Float: {
    Type scalar = like.element();
    ir::Attr value;
    if (scalar.isFloat())
      value = x.kind == Operand::Kind::Int ? double(x.i) : x.f;
    else if (x.kind == Operand::Kind::Float)
      userError("float literal " + ir::formatAttr(x.f) + " used where " + scalar.str() +
                    " is expected",
                loc);
    else if (!literalFits(x.i, scalar.kind()))
      userError("int literal " + std::to_string(x.i) + " does not fit " + scalar.str() +
                    " (write cast(..., int64) or a 64-bit value to compute in 64 bits)",
                loc);
    else
      value = x.i;
    ir::Value *c = b.constant(scalar, value, loc);
    return broadcastTo(b, c, like.shape(), "this operation", loc);
  }
  }
  internalError("unknown operand kind");
}

static bool isFp8(ScalarKind k) { return k == ScalarKind::F8E4M3 || k == ScalarKind::F8E5M2; }

// The element kind two numeric kinds meet at: floats win over ints, wider wins, and at equal
// width unsigned wins (C's and Triton's rule). fp8 computes in f32.
static ScalarKind join(ScalarKind a, ScalarKind c) {
  if (isFp8(a) || isFp8(c))
    return ScalarKind::F32;
  if (a == c)
    return a;
  bool fa = ir::isFloatKind(a), fc = ir::isFloatKind(c);
  if (fa && fc)
    return ScalarKind::F32; // f16 with bf16 or f32: compute in f32
  if (fa != fc)
    return fa ? a : c;
  if (ir::bitWidth(a) != ir::bitWidth(c))
    return ir::bitWidth(a) > ir::bitWidth(c) ? a : c;
  return ir::isUnsignedKind(a) ? a : c;
}

std::pair<ir::Value *, ir::Value *> unify(ir::Builder &b, const Operand &a, const Operand &c,
                                          const std::string &opName, const SourceLoc &loc) {
  bool av = a.kind == Operand::Kind::Value, cv = c.kind == Operand::Kind::Value;
  if ((av && !a.value) || (cv && !c.value))
    userError("use of an empty tritium Value in '" + opName + "'", loc);
  if (!av && !cv)
    userError("'" + opName + "' needs at least one traced value", loc);
  for (const Operand *x : {&a, &c})
    if (x->kind == Operand::Kind::Value && x->value->type().isPtr())
      userError("'" + opName + "' is not defined on pointers (" + x->value->type().str() +
                    "); only pointer + integer offsets and comparisons are",
                loc);

  // Element kind: a float literal next to an int value makes the result f32.
  auto kindOf = [](const Operand &x) -> std::optional<ScalarKind> {
    if (x.kind == Operand::Kind::Value)
      return x.value->type().kind();
    if (x.kind == Operand::Kind::Float)
      return ScalarKind::F32;
    return std::nullopt; // an int literal adopts its partner's kind
  };
  auto ka = kindOf(a), kc = kindOf(c);
  ScalarKind k = ka && kc ? join(*ka, *kc) : (ka ? *ka : *kc);
  if (isFp8(k))
    k = ScalarKind::F32; // fp8 is a storage type: arithmetic happens in f32
  if (k == ScalarKind::I1 && (!ka || !kc))
    k = ScalarKind::I32; // mask & 1 is integer arithmetic
  if (av && cv && a.value->type().kind() == ScalarKind::I1 &&
      c.value->type().kind() == ScalarKind::I1)
    k = ScalarKind::I1;
  // An int literal its partner's type cannot hold (i32 + 5000000000) makes the operation 64-bit,
  // as Triton's: offsets past 2^31 then need no cast.
  for (const Operand *x : {&a, &c})
    if (x->kind == Operand::Kind::Int && !literalFits(x->i, k))
      k = ScalarKind::I64;

  // Shape: numpy broadcasting; scalars splat.
  std::vector<int64_t> shape;
  for (const Operand *x : {&a, &c})
    if (x->kind == Operand::Kind::Value && x->value->type().isBlock())
      shape = broadcastShapes(shape, x->value->type().shape(), "'" + opName + "'", loc);
  Type target = Type::scalar(k).withShape(shape);
  return {materialize(b, a, target, loc), materialize(b, c, target, loc)};
}

ir::Value *indexScalar(const Operand &x, const std::string &what, const SourceLoc &loc) {
  auto &b = Tracer::current(loc).builder();
  if (x.kind == Operand::Kind::Float)
    userError(what + " must be an integer, got " + describe(x), loc);
  if (x.kind == Operand::Kind::Value) {
    if (!x.value || !x.value->type().isInt() || x.value->type().isBlock())
      userError(what + " must be an integer scalar, got " + describe(x), loc);
    return convert(b, x.value, ScalarKind::I64, loc);
  }
  return materialize(b, x, Type::scalar(ScalarKind::I64), loc);
}

} // namespace tritium::dsl
