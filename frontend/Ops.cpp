// The DSL's operations: each checks its operands, applies the typing rules and records one op.
#include "frontend/DSL.h"
#include "frontend/Tracer.h"
#include "frontend/TypeRules.h"

#include "compiler/ir/Layout.h"

#include <bit>

namespace tritium::dsl {

using ir::OpKind;
using ir::ScalarKind;
using ir::Type;

const Type &Value::type(Loc loc) const {
  if (!v_)
    throw UserError("use of an empty tritium Value (declared but never assigned)");
  return checked(loc)->type();
}

std::string Value::dtype(Loc loc) const { return ir::dtypeName(type(loc).kind()); }

namespace {

ir::Builder &builder(const SourceLoc &loc) { return Tracer::current(loc).builder(); }

Value binary(OpKind kind, const char *opName, const Operand &a, const Operand &c) {
  const SourceLoc &loc = a.loc;
  auto &b = builder(loc);
  auto [x, y] = unify(b, a, c, opName, loc);
  if ((kind == OpKind::And || kind == OpKind::Or) && x->type().isFloat())
    userError(std::string("'") + opName + "' needs integers or masks, got " + x->type().str(),
              loc);
  return Value(b.createValue(kind, {x, y}, x->type(), loc));
}

Value compare(const char *pred, const char *opName, const Operand &a, const Operand &c) {
  const SourceLoc &loc = a.loc;
  auto &b = builder(loc);
  // Pointers compare with pointers of the same shape only.
  bool aPtr = a.kind == Operand::Kind::Value && a.value && a.value->type().isPtr();
  bool cPtr = c.kind == Operand::Kind::Value && c.value && c.value->type().isPtr();
  ir::Value *x, *y;
  if (aPtr || cPtr) {
    if (!(aPtr && cPtr) || a.value->type() != c.value->type())
      userError(std::string("cannot compare ") + describe(a) + " with " + describe(c), loc);
    x = a.value;
    y = c.value;
  } else {
    std::tie(x, y) = unify(b, a, c, opName, loc);
  }
  ir::Op *op = b.create(OpKind::Cmp, {x, y}, {x->type().withKind(ScalarKind::I1)}, loc);
  op->setAttr("pred", std::string(pred));
  return Value(op->result());
}

// Pointer +/- integer offsets (in elements).
Value pointerArith(const Operand &p, const Operand &off, bool negate) {
  const SourceLoc &loc = p.loc;
  auto &b = builder(loc);
  const Type &pt = p.value->type();
  if (off.kind == Operand::Kind::Float ||
      (off.kind == Operand::Kind::Value && off.value && !off.value->type().isInt()))
    userError("cannot add " + describe(off) + " to a pointer (" + pt.str() +
                  "); pointer offsets must be integers",
              loc);
  ir::Value *o = off.kind == Operand::Kind::Int
                     ? b.constant(Type::scalar(ScalarKind::I32), off.i, loc)
                     : off.value;
  if (!o)
    userError("use of an empty tritium Value as a pointer offset", loc);
  std::vector<int64_t> shape = pt.isBlock() ? pt.shape() : o->type().shape();
  if (pt.isBlock() && o->type().isBlock() && pt.shape() != o->type().shape())
    userError("cannot broadcast " + pt.str() + " with " + o->type().str() +
                  ": block shapes must be equal",
              loc);
  if (negate)
    o = b.createValue(OpKind::Neg, {o}, o->type(), loc);
  ir::Value *ptr = broadcastTo(b, p.value, shape, "pointer arithmetic", loc);
  o = broadcastTo(b, o, shape, "pointer arithmetic", loc);
  return Value(b.createValue(OpKind::AddPtr, {ptr, o}, ptr->type(), loc));
}

bool isPtr(const Operand &x) {
  return x.kind == Operand::Kind::Value && x.value && x.value->type().isPtr();
}

ir::Value *requireValue(const Operand &x, const char *what, const SourceLoc &loc) {
  if (x.kind != Operand::Kind::Value || !x.value)
    userError(std::string(what) + " must be a traced value, got " + describe(x), loc);
  return x.value;
}

} // namespace

Value operator+(const Operand &a, const Operand &b) {
  if (isPtr(a) && isPtr(b))
    userError("cannot add two pointers", a.loc);
  if (isPtr(a))
    return pointerArith(a, b, false);
  if (isPtr(b))
    return pointerArith(b, a, false);
  return binary(OpKind::Add, "+", a, b);
}
Value operator-(const Operand &a, const Operand &b) {
  if (isPtr(b))
    userError("cannot subtract a pointer (" + b.value->type().str() + ")", a.loc);
  if (isPtr(a))
    return pointerArith(a, b, true);
  return binary(OpKind::Sub, "-", a, b);
}
Value operator*(const Operand &a, const Operand &b) { return binary(OpKind::Mul, "*", a, b); }
Value operator/(const Operand &a, const Operand &b) { return binary(OpKind::Div, "/", a, b); }
Value operator%(const Operand &a, const Operand &b) { return binary(OpKind::Rem, "%", a, b); }
Value operator&(const Operand &a, const Operand &b) { return binary(OpKind::And, "&", a, b); }
Value operator|(const Operand &a, const Operand &b) { return binary(OpKind::Or, "|", a, b); }
Value operator-(const Operand &a) {
  ir::Value *v = requireValue(a, "the operand of unary '-'", a.loc);
  if (v->type().isPtr() || v->type().isBool())
    userError("unary '-' is not defined on " + v->type().str(), a.loc);
  return Value(builder(a.loc).createValue(OpKind::Neg, {v}, v->type(), a.loc));
}
Value operator<(const Operand &a, const Operand &b) { return compare("lt", "<", a, b); }
Value operator<=(const Operand &a, const Operand &b) { return compare("le", "<=", a, b); }
Value operator>(const Operand &a, const Operand &b) { return compare("gt", ">", a, b); }
Value operator>=(const Operand &a, const Operand &b) { return compare("ge", ">=", a, b); }
Value operator==(const Operand &a, const Operand &b) { return compare("eq", "==", a, b); }
Value operator!=(const Operand &a, const Operand &b) { return compare("ne", "!=", a, b); }

static Value gridQuery(OpKind kind, const char *what, int axis, const SourceLoc &loc) {
  if (axis != 0)
    userError(std::string(what) + "(" + std::to_string(axis) +
                  "): only axis 0 is supported (tritium launches 1-D grids)",
              loc);
  ir::Op *op = builder(loc).create(kind, {}, {Type::scalar(ScalarKind::I32)}, loc);
  op->setAttr("axis", int64_t(axis));
  return Value(op->result());
}

Value program_id(int axis, Loc l) { return gridQuery(OpKind::ProgramId, "program_id", axis, l); }
Value num_programs(int axis, Loc l) {
  return gridQuery(OpKind::NumPrograms, "num_programs", axis, l);
}

Value cluster_rank(Loc l) {
  SourceLoc loc(l);
  return Value(builder(loc).createValue(OpKind::ClusterRank, {}, Type::scalar(ScalarKind::I32), loc));
}

Value cluster_size(Loc l) {
  SourceLoc loc(l);
  int64_t size = Tracer::current(loc).function().intAttr("cluster_size").value_or(1);
  return Value(materialize(builder(loc), Operand(size, l), Type::scalar(ScalarKind::I32), loc));
}

static Value clusterReduce(OpKind kind, const char *what, const Operand &x, const SourceLoc &loc) {
  ir::Value *v = requireValue(x, (std::string(what) + "'s input").c_str(), loc);
  const Type &t = v->type();
  if (t.isBlock())
    userError(std::string(what) + " combines one number per program, got the block " + t.str() +
                  ": reduce it first, as in " + what + "(" +
                  (kind == OpKind::ClusterMax ? "max" : "sum") + "(x, 0))",
              loc);
  if (t.isPtr() || t.isBool())
    userError(std::string(what) + " is not defined on " + t.str(), loc);
  return Value(builder(loc).createValue(kind, {v}, t, loc));
}

Value cluster_max(const Operand &x, Loc l) {
  return clusterReduce(OpKind::ClusterMax, "cluster_max", x, SourceLoc(l));
}
Value cluster_sum(const Operand &x, Loc l) {
  return clusterReduce(OpKind::ClusterSum, "cluster_sum", x, SourceLoc(l));
}

Value cluster_gather(const Operand &x, const Operand &other, Loc l) {
  SourceLoc loc(l);
  auto &b = builder(loc);
  ir::Value *v = requireValue(x, "cluster_gather's input", loc);
  const Type &t = v->type();
  if (t.isBlock())
    userError("cluster_gather gathers one number per program, got the block " + t.str() +
                  ": reduce it first",
              loc);
  if (t.isPtr() || t.isBool())
    userError("cluster_gather is not defined on " + t.str(), loc);
  ir::Value *o = materialize(b, other, t, loc);
  if (o->type() != t)
    userError("cluster_gather's other value " + o->type().str() + " does not match its input " +
                  t.str(),
              loc);
  int64_t size = Tracer::current(loc).function().intAttr("cluster_size").value_or(1);
  int64_t lanes = int64_t(std::bit_ceil(uint64_t(size)));
  return Value(b.createValue(OpKind::ClusterGather, {v, o}, Type::block(t, {lanes}), loc));
}

// A block of n elements is a power of two long, or holds the same number of elements in every
// thread of the CTA (a multiple of 32 x num_warps): a row of 12288 at 16 warps needs no masked
// quarter, as its power of two (16384) would.
static void checkBlockSize(int64_t n, const std::string &what, const SourceLoc &loc) {
  int64_t threads = 32 * Tracer::current(loc).function().intAttr("num_warps").value_or(4);
  if (!ir::hasBlockedLayout(n, threads))
    userError(what + ": the block size " + std::to_string(n) +
                  " must be a power of two or a multiple of 32 x num_warps = " +
                  std::to_string(threads) + " (round it up and mask the tail)",
              loc);
}

Value arange(int64_t start, int64_t end, Loc l) {
  SourceLoc loc(l);
  int64_t n = end - start;
  if (n <= 0)
    userError("arange(" + std::to_string(start) + ", " + std::to_string(end) +
                  "): end must be greater than start",
              loc);
  checkBlockSize(n, "arange(" + std::to_string(start) + ", " + std::to_string(end) + ")", loc);
  ir::Op *op = builder(loc).create(
      OpKind::Arange, {}, {Type::block(Type::scalar(ScalarKind::I32), {n})}, loc);
  op->setAttr("start", start);
  op->setAttr("end", end);
  return Value(op->result());
}

Value full(int64_t size, const Operand &value, Loc l) {
  SourceLoc loc(l);
  if (size <= 0)
    userError("full(" + std::to_string(size) + ", ...): the size must be positive", loc);
  checkBlockSize(size, "full(" + std::to_string(size) + ", ...)", loc);
  auto &b = builder(loc);
  Type elem = value.kind == Operand::Kind::Value ? requireValue(value, "full's value", loc)->type()
              : value.kind == Operand::Kind::Float ? Type::scalar(ScalarKind::F32)
                                                   : Type::scalar(ScalarKind::I32);
  if (elem.isBlock())
    userError("full's value must be a scalar, got " + elem.str(), loc);
  return Value(materialize(b, value, elem.withShape({size}), loc));
}

Value load(const Operand &ptrs, Loc l) {
  SourceLoc loc(l);
  ir::Value *p = requireValue(ptrs, "load's address", loc);
  if (!p->type().isPtr())
    userError("load expects a pointer or a block of pointers, got " + p->type().str(), loc);
  return Value(builder(loc).createValue(OpKind::Load, {p}, p->type().pointee(), loc));
}

// A mask as i1 of the pointers' shape: scalars broadcast, other shapes are mistakes.
static ir::Value *maskFor(ir::Builder &b, const Operand &mask, const Type &ptrType,
                          const char *op, const SourceLoc &loc) {
  ir::Value *m = requireValue(mask, "a mask", loc);
  if (!m->type().isBool())
    userError(std::string(op) + "'s mask must be a comparison result (i1), got " +
                  m->type().str(),
              loc);
  if (m->type().isBlock() && m->type().shape() != ptrType.shape())
    userError(std::string(op) + "'s mask " + m->type().str() +
                  " does not match the shape of its pointers " + ptrType.str(),
              loc);
  return broadcastTo(b, m, ptrType.shape(), op, loc);
}

Value load(const Operand &ptrs, const Operand &mask, const Operand &other, Loc l) {
  SourceLoc loc(l);
  auto &b = builder(loc);
  ir::Value *p = requireValue(ptrs, "load's address", loc);
  if (!p->type().isPtr())
    userError("load expects a pointer or a block of pointers, got " + p->type().str(), loc);
  ir::Value *m = maskFor(b, mask, p->type(), "load", loc);
  if (other.kind == Operand::Kind::Value && other.value && other.value->type().isBlock() &&
      other.value->type().shape() != p->type().shape())
    userError("load's other value " + other.value->type().str() +
                  " does not match the shape of its pointers " + p->type().str(),
              loc);
  ir::Value *o = materialize(b, other, p->type().pointee(), loc);
  return Value(b.createValue(OpKind::Load, {p, m, o}, p->type().pointee(), loc));
}

static void storeImpl(const Operand &ptrs, const Operand &value, const Operand *mask,
                      const SourceLoc &loc) {
  auto &b = builder(loc);
  ir::Value *p = requireValue(ptrs, "store's address", loc);
  if (!p->type().isPtr())
    userError("store expects a pointer or a block of pointers, got " + p->type().str(), loc);
  if (value.kind == Operand::Kind::Value && value.value) {
    const Type &vt = value.value->type();
    if (vt.isPtr())
      userError("cannot store a pointer (" + vt.str() + ")", loc);
    if (vt.kind() != p->type().kind())
      userError("store of " + vt.str() + " through " + p->type().str() +
                    ": element types differ (use cast(x, \"" + ir::dtypeName(p->type().kind()) +
                    "\"))",
                loc);
    if (vt.isBlock() && vt.shape() != p->type().shape())
      userError("store of " + vt.str() + " through " + p->type().str() +
                    ": the value's shape does not match the pointers'",
                loc);
  }
  ir::Value *v = materialize(b, value, p->type().pointee(), loc);
  std::vector<ir::Value *> operands{p, v};
  if (mask)
    operands.push_back(maskFor(b, *mask, p->type(), "store", loc));
  b.create(OpKind::Store, operands, {}, loc);
}

void store(const Operand &ptrs, const Operand &value, Loc l) {
  storeImpl(ptrs, value, nullptr, SourceLoc(l));
}
void store(const Operand &ptrs, const Operand &value, const Operand &mask, Loc l) {
  storeImpl(ptrs, value, &mask, SourceLoc(l));
}

static Value reduce(OpKind kind, const char *what, const Operand &x, int axis,
                    const SourceLoc &loc) {
  ir::Value *v = requireValue(x, (std::string(what) + "'s input").c_str(), loc);
  const Type &t = v->type();
  if (!t.isBlock())
    userError(std::string(what) + " reduces a block, got the scalar " + t.str(), loc);
  if (t.isPtr() || t.isBool())
    userError(std::string(what) + " is not defined on " + t.str(), loc);
  if (axis < 0 || axis >= t.rank())
    userError(std::string(what) + ": axis " + std::to_string(axis) + " is out of range for " +
                  t.str(),
              loc);
  auto shape = t.shape();
  shape.erase(shape.begin() + axis);
  ir::Op *op = builder(loc).create(kind, {v}, {t.withShape(shape)}, loc);
  op->setAttr("axis", int64_t(axis));
  return Value(op->result());
}

Value max(const Operand &x, int axis, Loc l) {
  return reduce(OpKind::ReduceMax, "max", x, axis, SourceLoc(l));
}
Value sum(const Operand &x, int axis, Loc l) {
  return reduce(OpKind::ReduceSum, "sum", x, axis, SourceLoc(l));
}

void print(const std::string &prefix, const Operand &value, Loc l) {
  SourceLoc loc(l);
  auto &b = builder(loc);
  ir::Value *v = value.kind == Operand::Kind::Value
                     ? requireValue(value, "print's value", loc)
                     : materialize(b, value,
                                   ir::Type::scalar(value.kind == Operand::Kind::Float
                                                        ? ScalarKind::F32
                                                        : ScalarKind::I32),
                                   loc);
  b.create(OpKind::Print, {v}, {}, loc)->setAttr("prefix", prefix);
}

Value exp(const Operand &x, Loc l) {
  SourceLoc loc(l);
  ir::Value *v = requireValue(x, "exp's input", loc);
  if (!v->type().isFloat())
    userError("exp expects floating-point values, got " + v->type().str() +
                  " (use cast(x, \"fp32\"))",
              loc);
  return Value(builder(loc).createValue(OpKind::Exp, {v}, v->type(), loc));
}

Value maximum(const Operand &a, const Operand &c, Loc l) {
  Operand a2 = a;
  a2.loc = SourceLoc(l);
  return binary(OpKind::Maximum, "maximum", a2, c);
}
Value minimum(const Operand &a, const Operand &c, Loc l) {
  Operand a2 = a;
  a2.loc = SourceLoc(l);
  return binary(OpKind::Minimum, "minimum", a2, c);
}

Value where(const Operand &cond, const Operand &a, const Operand &c, Loc l) {
  SourceLoc loc(l);
  auto &b = builder(loc);
  ir::Value *m = requireValue(cond, "where's condition", loc);
  if (!m->type().isBool())
    userError("where's condition must be a mask (i1), got " + m->type().str(), loc);
  auto [x, y] = unify(b, a, c, "where", loc);
  std::vector<int64_t> shape = x->type().shape();
  if (m->type().isBlock()) {
    if (!shape.empty() && shape != m->type().shape())
      userError("where's condition " + m->type().str() + " does not match its values " +
                    x->type().str(),
                loc);
    shape = m->type().shape();
  }
  x = broadcastTo(b, x, shape, "where", loc);
  y = broadcastTo(b, y, shape, "where", loc);
  m = broadcastTo(b, m, shape, "where", loc);
  return Value(b.createValue(OpKind::Select, {m, x, y}, x->type(), loc));
}

Value cast(const Operand &x, const std::string &dtype, Loc l) {
  SourceLoc loc(l);
  auto k = ir::parseDtype(dtype);
  if (!k)
    userError("cast to unknown dtype '" + dtype + "' (expected fp32, fp16, bf16, i32, i64, i1)",
              loc);
  ir::Value *v = requireValue(x, "cast's input", loc);
  return Value(convert(builder(loc), v, *k, loc));
}

} // namespace tritium::dsl
