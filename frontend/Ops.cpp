// The DSL's operations: each checks its operands, applies the typing rules and records one op.
#include "frontend/DSL.h"
#include "frontend/Tracer.h"
#include "frontend/TypeRules.h"

#include "compiler/ir/CacheHints.h"
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
  bool bitwise = kind == OpKind::And || kind == OpKind::Or || kind == OpKind::Xor;
  bool integral = kind == OpKind::Shl || kind == OpKind::Shr || kind == OpKind::UMulHi;
  if (bitwise && !x->type().isInt() && !x->type().isBool())
    userError(std::string("'") + opName + "' needs integers or masks, got " + x->type().str(),
              loc);
  if (integral && !x->type().isInt())
    userError(std::string("'") + opName + "' needs integers, got " + x->type().str(), loc);
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
  // Literals past the i32 range are 64-bit offsets, as Triton's.
  ir::Value *o =
      off.kind == Operand::Kind::Int
          ? b.constant(Type::scalar(literalFits(off.i, ScalarKind::I32) ? ScalarKind::I32
                                                                         : ScalarKind::I64),
                       off.i, loc)
          : off.value;
  if (!o)
    userError("use of an empty tritium Value as a pointer offset", loc);
  std::vector<int64_t> shape =
      broadcastShapes(pt.shape(), o->type().shape(), "pointer arithmetic", loc);
  if (negate) {
    // p - n for an unsigned n below 64 bits is p - zext(n), not p + zext(-n mod 2^32).
    const Type &ot = o->type();
    int bits = ir::bitWidth(ot.kind());
    if (ot.isUnsigned() && bits < 64)
      o = convert(b, o, ScalarKind::I64, loc);
    else if (bits < 32)
      o = convert(b, o, ScalarKind::I32, loc);
    o = b.createValue(OpKind::Neg, {o}, o->type(), loc);
  }
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
Value operator^(const Operand &a, const Operand &b) { return binary(OpKind::Xor, "^", a, b); }
Value operator<<(const Operand &a, const Operand &b) { return binary(OpKind::Shl, "<<", a, b); }
Value operator>>(const Operand &a, const Operand &b) { return binary(OpKind::Shr, ">>", a, b); }
Value operator~(const Operand &a) {
  ir::Value *v = requireValue(a, "the operand of '~'", a.loc);
  if (!v->type().isInt() && !v->type().isBool())
    userError("'~' needs an integer or a mask, got " + v->type().str(), a.loc);
  return Value(builder(a.loc).createValue(OpKind::Not, {v}, v->type(), a.loc));
}
// A mask from any value: x != 0 (a mask stays itself).
static ir::Value *truth(const Operand &x, const char *what, const SourceLoc &loc) {
  ir::Value *v = requireValue(x, what, loc);
  if (v->type().isBool())
    return v;
  if (v->type().isPtr())
    userError(std::string(what) + " is not defined on pointers (" + v->type().str() + ")", loc);
  return (x != 0).ir();
}
Value operator!(const Operand &a) {
  ir::Value *m = truth(a, "the operand of '!'", a.loc);
  return Value(builder(a.loc).createValue(OpKind::Not, {m}, m->type(), a.loc));
}
// An operand for a value made here, reported at the user's location.
static Operand at(ir::Value *v, const SourceLoc &loc) {
  Operand o{Value(v)};
  o.loc = loc;
  return o;
}
Value operator&&(const Operand &a, const Operand &b) {
  return at(truth(a, "'&&'", a.loc), a.loc) & at(truth(b, "'&&'", a.loc), a.loc);
}
Value operator||(const Operand &a, const Operand &b) {
  return at(truth(a, "'||'", a.loc), a.loc) | at(truth(b, "'||'", a.loc), a.loc);
}

static Value hint(const char *key, const char *what, const Operand &x,
                  const std::vector<int64_t> &values, Loc l) {
  SourceLoc loc(l);
  ir::Value *v = requireValue(x, (std::string(what) + "'s input").c_str(), loc);
  if (!v->type().isInt() && !v->type().isPtr())
    userError(std::string(what) + " takes integers or pointers, got " + v->type().str(), loc);
  int rank = std::max(1, v->type().rank());
  if (values.empty() || (values.size() != 1 && int(values.size()) != rank))
    userError(std::string(what) + " takes one value or one per dimension (" +
                  std::to_string(rank) + "), got " + std::to_string(values.size()),
              loc);
  std::vector<int64_t> all;
  for (int d = 0; d < rank; ++d) {
    int64_t value = values.size() == 1 ? values[0] : values[size_t(d)];
    if (value < 1 || (value & (value - 1)))
      userError(std::string(what) + " takes powers of two, got " + std::to_string(value), loc);
    all.push_back(value);
  }
  ir::Op *op = builder(loc).create(OpKind::Hint, {v}, {v->type()}, loc);
  op->setAttr(key, ir::formatOrder(all));
  return Value(op->result());
}

Value multiple_of(const Operand &x, const std::vector<int64_t> &values, Loc l) {
  return hint("multiple_of", "multiple_of", x, values, l);
}
Value max_contiguous(const Operand &x, const std::vector<int64_t> &values, Loc l) {
  return hint("max_contiguous", "max_contiguous", x, values, l);
}

// Triton's tl.assume: an assume op, which reaches LLVM as llvm.assume (what LLVM learns from
// it: known bits, ranges) and which the interpreter checks.
void assume(const Operand &cond, Loc l) {
  SourceLoc loc(l);
  if (cond.kind != Operand::Kind::Value || !cond.value || !cond.value->type().isBool())
    userError("assume takes a condition (a mask, i1, such as n > 0), got " + describe(cond), loc);
  builder(loc).create(OpKind::Assume, {cond.value}, {}, loc);
}

Value cdiv(const Operand &a, const Operand &b, Loc l) {
  Operand a2 = a;
  a2.loc = SourceLoc(l);
  return (a2 + b - 1) / b;
}

Value umulhi(const Operand &a, const Operand &b, Loc l) {
  Operand a2 = a;
  a2.loc = SourceLoc(l);
  Value r = binary(OpKind::UMulHi, "umulhi", a2, b);
  if (ir::bitWidth(r.ir()->type().kind()) < 32)
    userError("umulhi takes 32- or 64-bit integers, got " + r.ir()->type().str(), SourceLoc(l));
  return r;
}
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
  if (axis < 0 || axis > 2)
    userError(std::string(what) + "(" + std::to_string(axis) +
                  "): the axis must be 0, 1 or 2 (grids have up to three dimensions)",
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

// A scalar's exchange may sit anywhere; a block's uses barriers of its own once per launch, so
// it must be reached exactly once by every program: at the kernel's top level.
static Value clusterReduce(OpKind kind, const char *what, const Operand &x, const SourceLoc &loc) {
  ir::Value *v = requireValue(x, (std::string(what) + "'s input").c_str(), loc);
  const Type &t = v->type();
  if (t.isPtr() || t.isBool())
    userError(std::string(what) + " is not defined on " + t.str(), loc);
  Tracer &tracer = Tracer::current(loc);
  if (t.isBlock() && tracer.builder().block() != &tracer.function().body())
    userError(std::string(what) + " of the block " + t.str() +
                  " must be called at the kernel's top level, not inside a loop or a branch: "
                  "a block's exchange runs once per launch (reduce a scalar inside loops, as in " +
                  what + "(" + (kind == OpKind::ClusterMax ? "max" : "sum") + "(x, 0)))",
              loc);
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

// Cache hints as the {cache, evict} attributes of a load or store, checked before the op is
// made: a cache operator PTX does not take on this instruction (a store's wb on a load) is the
// user's mistake.
static std::vector<std::pair<std::string, ir::Attr>> cacheAttrs(CacheHints hints, bool isLoad,
                                                                const SourceLoc &loc) {
  static const char *names[] = {"none", "ca", "cg", "cs", "lu", "cv", "wb", "wt"};
  std::vector<std::pair<std::string, ir::Attr>> attrs;
  if (hints.cache != Cache::none) {
    std::string name = names[int(hints.cache)];
    const auto &valid = isLoad ? ir::loadCacheModifiers() : ir::storeCacheModifiers();
    if (!ir::isOneOf(name, valid)) {
      std::string list;
      for (const std::string &v : valid)
        list += (list.empty() ? "Cache::" : ", Cache::") + v;
      userError(std::string(isLoad ? "load" : "store") + " does not take Cache::" + name +
                    " (PTX's ." + name + " is a cache operator of " +
                    (isLoad ? "stores" : "loads") + "); " + (isLoad ? "a load" : "a store") +
                    " takes " + list,
                loc);
    }
    attrs.emplace_back("cache", name);
  }
  if (hints.evict != Evict::normal)
    attrs.emplace_back("evict", std::string(hints.evict == Evict::first ? "evict_first"
                                                                         : "evict_last"));
  return attrs;
}

static ir::Op *withAttrs(ir::Op *op, const std::vector<std::pair<std::string, ir::Attr>> &attrs) {
  for (const auto &[key, value] : attrs)
    op->setAttr(key, value);
  return op;
}

Value load(const Operand &ptrs, Loc l) { return load(ptrs, CacheHints{}, l); }

Value load(const Operand &ptrs, CacheHints hints, Loc l) {
  SourceLoc loc(l);
  ir::Value *p = requireValue(ptrs, "load's address", loc);
  if (!p->type().isPtr())
    userError("load expects a pointer or a block of pointers, got " + p->type().str(), loc);
  auto attrs = cacheAttrs(hints, true, loc);
  return Value(
      withAttrs(builder(loc).create(OpKind::Load, {p}, {p->type().pointee()}, loc), attrs)
          ->result());
}

// A mask as i1 of the pointers' shape: scalars broadcast, other shapes are mistakes.
static ir::Value *maskFor(ir::Builder &b, const Operand &mask, const Type &ptrType,
                          const char *op, const SourceLoc &loc) {
  ir::Value *m = requireValue(mask, "a mask", loc);
  if (!m->type().isBool())
    userError(std::string(op) + "'s mask must be a comparison result (i1), got " +
                  m->type().str(),
              loc);
  if (m->type().isBlock() &&
      broadcastShapes(m->type().shape(), ptrType.shape(), op, loc) != ptrType.shape())
    userError(std::string(op) + "'s mask " + m->type().str() +
                  " does not broadcast to the shape of its pointers " + ptrType.str(),
              loc);
  return broadcastTo(b, m, ptrType.shape(), op, loc);
}

Value load(const Operand &ptrs, const Operand &mask, const Operand &other, CacheHints hints,
           Loc l) {
  SourceLoc loc(l);
  auto &b = builder(loc);
  ir::Value *p = requireValue(ptrs, "load's address", loc);
  if (!p->type().isPtr())
    userError("load expects a pointer or a block of pointers, got " + p->type().str(), loc);
  auto attrs = cacheAttrs(hints, true, loc);
  ir::Value *m = maskFor(b, mask, p->type(), "load", loc);
  if (other.kind == Operand::Kind::Value && other.value && other.value->type().isBlock() &&
      broadcastShapes(other.value->type().shape(), p->type().shape(), "load", loc) !=
          p->type().shape())
    userError("load's other value " + other.value->type().str() +
                  " does not broadcast to the shape of its pointers " + p->type().str(),
              loc);
  ir::Value *o = materialize(b, other, p->type().pointee(), loc);
  return Value(withAttrs(b.create(OpKind::Load, {p, m, o}, {p->type().pointee()}, loc), attrs)
                   ->result());
}

static void storeImpl(const Operand &ptrs, const Operand &value, const Operand *mask,
                      CacheHints hints, const SourceLoc &loc) {
  auto &b = builder(loc);
  ir::Value *p = requireValue(ptrs, "store's address", loc);
  if (!p->type().isPtr())
    userError("store expects a pointer or a block of pointers, got " + p->type().str(), loc);
  auto attrs = cacheAttrs(hints, false, loc);
  if (value.kind == Operand::Kind::Value && value.value) {
    const Type &vt = value.value->type();
    if (vt.isPtr())
      userError("cannot store a pointer (" + vt.str() + ")", loc);
    if (vt.kind() != p->type().kind())
      userError("store of " + vt.str() + " through " + p->type().str() +
                    ": element types differ (use cast(x, \"" + ir::dtypeName(p->type().kind()) +
                    "\"))",
                loc);
    if (vt.isBlock() && (vt.rank() > p->type().rank() ||
                         broadcastShapes(vt.shape(), p->type().shape(), "store", loc) !=
                             p->type().shape()))
      userError("store of " + vt.str() + " through " + p->type().str() +
                    ": the value's shape does not broadcast to the pointers'",
                loc);
  }
  ir::Value *v = materialize(b, value, p->type().pointee(), loc);
  std::vector<ir::Value *> operands{p, v};
  if (mask)
    operands.push_back(maskFor(b, *mask, p->type(), "store", loc));
  withAttrs(b.create(OpKind::Store, operands, {}, loc), attrs);
}

void store(const Operand &ptrs, const Operand &value, Loc l) {
  storeImpl(ptrs, value, nullptr, {}, SourceLoc(l));
}
void store(const Operand &ptrs, const Operand &value, CacheHints hints, Loc l) {
  storeImpl(ptrs, value, nullptr, hints, SourceLoc(l));
}
void store(const Operand &ptrs, const Operand &value, const Operand &mask, CacheHints hints,
           Loc l) {
  storeImpl(ptrs, value, &mask, hints, SourceLoc(l));
}

static Value reduce(OpKind kind, const char *what, const Operand &x, int axis,
                    const SourceLoc &loc) {
  ir::Value *v = requireValue(x, (std::string(what) + "'s input").c_str(), loc);
  const Type &t = v->type();
  if (!t.isBlock())
    userError(std::string(what) + " reduces a block, got the scalar " + t.str(), loc);
  if (t.isPtr() || t.isBool())
    userError(std::string(what) + " is not defined on " + t.str(), loc);
  if (axis < 0)
    axis += t.rank();
  if (axis < 0 || axis >= t.rank())
    userError(std::string(what) + ": axis " + std::to_string(axis) + " is out of range for " +
                  t.str() + " (0 to " + std::to_string(t.rank() - 1) + ")",
              loc);
  if (t.kind() == ScalarKind::F8E4M3 || t.kind() == ScalarKind::F8E5M2)
    userError(std::string(what) + " of " + t.str() + ": fp8 is a storage type; cast it to " +
                  "fp16 or fp32 first",
              loc);
  // Sums of 8- and 16-bit integers accumulate in 32 bits, as Triton's.
  if (kind == OpKind::ReduceSum && t.isInt() && ir::bitWidth(t.kind()) < 32)
    v = convert(builder(loc), v, t.isUnsigned() ? ScalarKind::U32 : ScalarKind::I32, loc);
  auto shape = v->type().shape();
  shape.erase(shape.begin() + axis);
  ir::Op *op = builder(loc).create(kind, {v}, {v->type().withShape(shape)}, loc);
  op->setAttr("axis", int64_t(axis));
  return Value(op->result());
}

// reduce and scan: N blocks of one shape, an axis, and a combine function traced into the op's
// region with scalar arguments.
static Group combineOp(OpKind kind, const char *what, const Group &xs, int axis,
                       const std::function<Group(const Group &, const Group &)> &combine,
                       Loc l, bool reverse = false) {
  SourceLoc loc(l);
  Tracer &t = Tracer::current(loc);
  auto &b = t.builder();
  if (xs.empty())
    userError(std::string(what) + " needs at least one block", loc);
  std::vector<ir::Value *> operands;
  for (const Value &x : xs) {
    ir::Value *v = requireValue(Operand(x, l), what, loc);
    if (!v->type().isBlock())
      userError(std::string(what) + " takes blocks, got the scalar " + v->type().str(), loc);
    if (v->type().shape() != xs[0].ir()->type().shape())
      userError(std::string(what) + "'s blocks must have one shape, got " + xs[0].ir()->type().str() + " and " +
                    v->type().str(),
                loc);
    operands.push_back(v);
  }
  const Type &t0 = operands[0]->type();
  if (axis < 0)
    axis += t0.rank();
  if (axis < 0 || axis >= t0.rank())
    userError(std::string(what) + ": axis " + std::to_string(axis) + " is out of range for " + t0.str() +
                  " (0 to " + std::to_string(t0.rank() - 1) + ")",
              loc);
  std::vector<Type> results;
  for (ir::Value *v : operands) {
    auto shape = v->type().shape();
    if (kind == OpKind::Reduce)
      shape.erase(shape.begin() + axis);
    results.push_back(v->type().withShape(shape));
  }
  ir::Op *op = b.create(kind, operands, results, loc);
  op->setAttr("axis", int64_t(axis));
  if (reverse)
    op->setAttr("reverse", int64_t(1));
  ir::Block *region = op->createRegion();
  Group a, c;
  for (ir::Value *v : operands)
    a.emplace_back(region->addArgument(v->type().element()));
  for (ir::Value *v : operands)
    c.emplace_back(region->addArgument(v->type().element()));
  ir::Block *outer = b.block();
  t.enterBody(region);
  try {
    Group out = combine(a, c);
    if (out.size() != operands.size())
      userError(std::string(what) + "'s combine gave " + std::to_string(out.size()) + " values for " +
                    std::to_string(operands.size()) + " blocks",
                loc);
    std::vector<ir::Value *> yielded;
    for (size_t i = 0; i < out.size(); ++i) {
      Type want = operands[i]->type().element();
      ir::Value *v = materialize(b, Operand(out[i], l), want, loc);
      if (v->type() != want)
        userError(std::string(what) + "'s combine must give " + want.str() + " for block " +
                      std::to_string(i) + ", got " + out[i].ir()->type().str(),
                  loc);
      yielded.push_back(v);
    }
    b.create(OpKind::Yield, yielded, {}, loc);
  } catch (...) {
    t.exitBody(outer);
    throw;
  }
  t.exitBody(outer);
  Group r;
  for (auto &res : op->results())
    r.emplace_back(res.get());
  return r;
}

Group reduce(const Group &xs, int axis,
             const std::function<Group(const Group &, const Group &)> &combine, Loc l) {
  return combineOp(OpKind::Reduce, "reduce", xs, axis, combine, l);
}

Group associative_scan(const Group &xs, int axis,
                       const std::function<Group(const Group &, const Group &)> &combine,
                       bool reverse, Loc l) {
  return combineOp(OpKind::Scan, "associative_scan", xs, axis, combine, l, reverse);
}

Value associative_scan(const Operand &x, int axis,
                       const std::function<Value(Value, Value)> &combine, bool reverse, Loc l) {
  ir::Value *v = requireValue(x, "associative_scan's input", SourceLoc(l));
  return associative_scan(Group{Value(v)}, axis,
                          [&](const Group &a, const Group &c) {
                            return Group{combine(a[0], c[0])};
                          },
                          reverse, l)[0];
}

// cumsum and cumprod accumulate 8- and 16-bit integers in 32 bits, as sum does.
static Value cumulative(const Operand &x, int axis, bool reverse, bool product, const char *what,
                        Loc l) {
  SourceLoc loc(l);
  ir::Value *v = requireValue(x, (std::string(what) + "'s input").c_str(), loc);
  if (!v->type().isBlock() || v->type().isPtr() || v->type().isBool())
    userError(std::string(what) + " takes a block of numbers, got " + v->type().str(), loc);
  if (v->type().isInt() && ir::bitWidth(v->type().kind()) < 32)
    v = convert(builder(loc), v, v->type().isUnsigned() ? ScalarKind::U32 : ScalarKind::I32, loc);
  return associative_scan(Operand(Value(v), l), axis,
                          [product](Value a, Value c) { return product ? a * c : a + c; },
                          reverse, l);
}

Value cumsum(const Operand &x, int axis, bool reverse, Loc l) {
  return cumulative(x, axis, reverse, false, "cumsum", l);
}
Value cumprod(const Operand &x, int axis, bool reverse, Loc l) {
  return cumulative(x, axis, reverse, true, "cumprod", l);
}

Value reduce(const Operand &x, int axis, const std::function<Value(Value, Value)> &combine,
             Loc l) {
  ir::Value *v = requireValue(x, "reduce's input", SourceLoc(l));
  return reduce(Group{Value(v)}, axis,
                [&](const Group &a, const Group &c) { return Group{combine(a[0], c[0])}; }, l)[0];
}

// argmax/argmin: (value, index) pairs, the larger (smaller) value winning and the smaller index
// on ties, as Triton's tie_break_left.
static Value argReduce(const Operand &x, int axis, bool isMax, const char *what, Loc l) {
  SourceLoc loc(l);
  ir::Value *v = requireValue(x, (std::string(what) + "'s input").c_str(), loc);
  const Type &t = v->type();
  if (!t.isBlock() || t.isPtr() || t.isBool())
    userError(std::string(what) + " takes a block of numbers, got " + t.str(), loc);
  if (axis < 0)
    axis += t.rank();
  if (axis < 0 || axis >= t.rank())
    userError(std::string(what) + ": axis " + std::to_string(axis) + " is out of range for " +
                  t.str(),
              loc);
  // The index along the axis, as a block of x's shape.
  Value index = arange(0, t.shape()[size_t(axis)], l);
  for (int d = 0; d < t.rank(); ++d)
    if (d != axis)
      index = expand_dims(index, d, l);
  index = broadcast_to(index, t.shape(), l);
  Group r = reduce(Group{Value(v), index}, axis,
                   [&](const Group &a, const Group &c) {
                     Value better = isMax ? a[0] > c[0] : a[0] < c[0];
                     Value tie = (a[0] == c[0]) & (a[1] < c[1]);
                     Value pick = better | tie;
                     return Group{where(pick, a[0], c[0], l), where(pick, a[1], c[1], l)};
                   },
                   l);
  return r[1];
}

Value argmax(const Operand &x, int axis, Loc l) { return argReduce(x, axis, true, "argmax", l); }
Value argmin(const Operand &x, int axis, Loc l) { return argReduce(x, axis, false, "argmin", l); }

Value xor_sum(const Operand &x, int axis, Loc l) {
  ir::Value *v = requireValue(x, "xor_sum's input", SourceLoc(l));
  if (!v->type().isInt())
    userError("xor_sum takes integers, got " + v->type().str(), SourceLoc(l));
  return reduce(x, axis, [](Value a, Value c) { return a ^ c; }, l);
}

Value max(const Operand &x, int axis, Loc l) {
  return reduce(OpKind::ReduceMax, "max", x, axis, SourceLoc(l));
}
Value min(const Operand &x, int axis, Loc l) {
  return reduce(OpKind::ReduceMin, "min", x, axis, SourceLoc(l));
}
Value sum(const Operand &x, int axis, Loc l) {
  return reduce(OpKind::ReduceSum, "sum", x, axis, SourceLoc(l));
}

// --- atomics ------------------------------------------------------------------------------------

namespace {

void checkAtomicOrder(const std::string &sem, const std::string &scope, const char *name,
                      const SourceLoc &loc) {
  if (sem != "relaxed" && sem != "acquire" && sem != "release" && sem != "acq_rel")
    userError(std::string(name) + ": unknown sem '" + sem +
                  "' (expected relaxed, acquire, release or acq_rel)",
              loc);
  if (scope != "gpu" && scope != "cta" && scope != "sys")
    userError(std::string(name) + ": unknown scope '" + scope + "' (expected gpu, cta or sys)",
              loc);
}

void checkAtomicType(const std::string &op, const Type &t, const char *name,
                     const SourceLoc &loc) {
  ScalarKind k = t.kind();
  bool int3264 = k == ScalarKind::I32 || k == ScalarKind::U32 || k == ScalarKind::I64 ||
                 k == ScalarKind::U64;
  bool ok = int3264;
  const char *supported = "i32, u32, i64 and u64";
  if (op == "add") {
    ok = int3264 || k == ScalarKind::F32 || k == ScalarKind::F16 || k == ScalarKind::BF16;
    supported = "i32, u32, i64, u64, fp32, fp16 and bf16";
  } else if (op == "max" || op == "min" || op == "xchg" || op == "cas") {
    ok = int3264 || k == ScalarKind::F32;
    supported = "i32, u32, i64, u64 and fp32";
  }
  if (!ok)
    userError(std::string(name) + " on " + t.str() + " is not supported: it takes " + supported,
              loc);
}

Value atomicImpl(const char *name, const std::string &op, const Operand &ptr,
                 std::vector<Operand> values, const Operand *mask, const std::string &sem,
                 const std::string &scope, const SourceLoc &loc) {
  auto &b = builder(loc);
  ir::Value *p = requireValue(ptr, (std::string(name) + "'s pointer").c_str(), loc);
  if (!p->type().isPtr())
    userError(std::string(name) + " expects a pointer or a block of pointers, got " +
                  p->type().str(),
              loc);
  checkAtomicOrder(sem, scope, name, loc);
  checkAtomicType(op, p->type().pointee().element(), name, loc);
  // The pointers broadcast to the values' shape (a scalar pointer with a block of values is
  // one address updated by each), the values and the mask to the pointers'.
  std::vector<int64_t> shape = p->type().shape();
  for (const Operand &v : values)
    if (v.kind == Operand::Kind::Value && v.value)
      shape = broadcastShapes(shape, v.value->type().shape(), name, loc);
  p = broadcastTo(b, p, shape, name, loc);
  std::vector<ir::Value *> operands{p};
  for (const Operand &v : values) {
    if (v.kind == Operand::Kind::Value && v.value && v.value->type().kind() != p->type().kind())
      userError(std::string(name) + " of " + v.value->type().str() + " through " +
                    p->type().str() + ": element types differ (use cast(x, \"" +
                    ir::dtypeName(p->type().kind()) + "\"))",
                loc);
    operands.push_back(materialize(b, v, p->type().pointee(), loc));
  }
  if (mask)
    operands.push_back(maskFor(b, *mask, p->type(), name, loc));
  ir::Op *o = b.create(op == "cas" ? OpKind::AtomicCAS : OpKind::AtomicRMW, operands,
                       {p->type().pointee()}, loc);
  if (op != "cas")
    o->setAttr("op", op);
  o->setAttr("sem", sem);
  o->setAttr("scope", scope);
  return Value(o->result());
}

} // namespace

#define TRITIUM_DEFINE_ATOMIC(name, op)                                                            \
  Value name(const Operand &ptr, const Operand &val, Loc l) {                                    \
    return atomicImpl(#name, op, ptr, {val}, nullptr, "acq_rel", "gpu", SourceLoc(l));           \
  }                                                                                              \
  Value name(const Operand &ptr, const Operand &val, const Operand &mask,                        \
             const std::string &sem, const std::string &scope, Loc l) {                          \
    return atomicImpl(#name, op, ptr, {val}, &mask, sem, scope, SourceLoc(l));                   \
  }
TRITIUM_DEFINE_ATOMIC(atomic_add, "add")
TRITIUM_DEFINE_ATOMIC(atomic_max, "max")
TRITIUM_DEFINE_ATOMIC(atomic_min, "min")
TRITIUM_DEFINE_ATOMIC(atomic_and, "and")
TRITIUM_DEFINE_ATOMIC(atomic_or, "or")
TRITIUM_DEFINE_ATOMIC(atomic_xor, "xor")
TRITIUM_DEFINE_ATOMIC(atomic_xchg, "xchg")
#undef TRITIUM_DEFINE_ATOMIC

Value atomic_cas(const Operand &ptr, const Operand &cmp, const Operand &val,
                 const std::string &sem, const std::string &scope, Loc l) {
  return atomicImpl("atomic_cas", "cas", ptr, {cmp, val}, nullptr, sem, scope, SourceLoc(l));
}

void device_assert(const Operand &cond, const std::string &message, Loc l) {
  SourceLoc loc(l);
  ir::Value *c = requireValue(cond, "device_assert's condition", loc);
  if (c->type().isPtr())
    userError("device_assert's condition cannot be a pointer", loc);
  if (!c->type().isBool())
    c = (cond != 0).ir();
  builder(loc).create(OpKind::Assert, {c}, {}, loc)->setAttr("message", message);
}

void static_assert_(bool cond, const std::string &message, Loc l) {
  if (!cond)
    userError("static_assert failed" + (message.empty() ? std::string() : ": " + message),
              SourceLoc(l));
}

void static_print(const std::string &prefix, std::initializer_list<Operand> values, Loc l) {
  SourceLoc loc(l);
  std::string line = loc.str() + ": " + prefix;
  for (const Operand &v : values)
    line += " " + describe(v);
  std::fprintf(stderr, "%s\n", line.c_str());
}

void debug_barrier(Loc l) {
  SourceLoc loc(l);
  builder(loc).create(OpKind::Barrier, {}, {}, loc);
}

// An op every program must reach (griddep_wait, grid_sync), refused inside loops and branches;
// `why` ends the message.
static void createAtTopLevel(OpKind kind, const char *call, const char *why, const SourceLoc &loc) {
  Tracer &t = Tracer::current(loc);
  if (t.builder().block() != &t.function().body())
    userError(
        std::string(call) +
            " must be called at the kernel's top level, not inside a loop or a branch: " + why,
        loc);
  t.builder().create(kind, {}, {}, loc);
}

void griddep_wait(Loc l) {
  createAtTopLevel(OpKind::GridDepWait, "griddep_wait()",
                   "every program has to wait before the kernel can count as finished",
                   SourceLoc(l));
}

void grid_sync(Loc l) {
  createAtTopLevel(OpKind::GridSync, "grid_sync()",
                   "every program has to reach it, or the others wait for ever", SourceLoc(l));
}

void griddep_launch_dependents(Loc l) {
  SourceLoc loc(l);
  builder(loc).create(OpKind::GridDepLaunchDependents, {}, {}, loc);
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

// A math function of MathFunctions.def: operands unified to one float type (ints become f32;
// abs keeps integers), broadcast together.
static Value math(ir::MathFn fn, std::vector<Operand> args, const SourceLoc &loc) {
  auto &b = builder(loc);
  const char *name = ir::mathName(fn);
  bool anyValue = false;
  for (const Operand &a : args)
    anyValue = anyValue || a.kind == Operand::Kind::Value;
  if (!anyValue)
    userError(std::string(name) + " needs at least one traced value", loc);
  // Fold the operands pairwise into one type and shape, then bring each to it.
  ir::Value *like = nullptr;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].kind != Operand::Kind::Value)
      continue;
    ir::Value *v = requireValue(args[i], name, loc);
    if (v->type().isPtr() || v->type().isBool())
      userError(std::string(name) + " is not defined on " + v->type().str(), loc);
    like = like ? unify(b, Operand(Value(like)), args[i], name, loc).first : v;
  }
  ScalarKind k = like->type().kind();
  if (!ir::isFloatKind(k) && !(ir::mathAcceptsIntegers(fn) && args.size() == 1))
    k = ScalarKind::F32; // integers compute as f32
  std::vector<int64_t> shape;
  for (const Operand &a : args)
    if (a.kind == Operand::Kind::Value)
      shape = broadcastShapes(shape, a.value->type().shape(), name, loc);
  Type t = Type::scalar(k).withShape(shape);
  std::vector<ir::Value *> operands;
  for (const Operand &a : args)
    operands.push_back(materialize(b, a, t, loc));
  ir::Op *op = b.create(OpKind::Math, operands, {t}, loc);
  op->setAttr("fn", std::string(name));
  return Value(op->result());
}

#define TRITIUM_MATH1(fn, Fn)                                                                      \
  Value fn(const Operand &x, Loc l) { return math(ir::MathFn::Fn, {x}, SourceLoc(l)); }
TRITIUM_MATH1(exp2, Exp2)
TRITIUM_MATH1(log, Log)
TRITIUM_MATH1(log2, Log2)
TRITIUM_MATH1(sqrt, Sqrt)
TRITIUM_MATH1(sqrt_rn, SqrtRn)
TRITIUM_MATH1(rsqrt, Rsqrt)
TRITIUM_MATH1(abs, Abs)
TRITIUM_MATH1(sin, Sin)
TRITIUM_MATH1(cos, Cos)
TRITIUM_MATH1(tanh, Tanh)
TRITIUM_MATH1(sigmoid, Sigmoid)
TRITIUM_MATH1(erf, Erf)
TRITIUM_MATH1(log1p, Log1p)
TRITIUM_MATH1(expm1, Expm1)
TRITIUM_MATH1(floor, Floor)
TRITIUM_MATH1(ceil, Ceil)
TRITIUM_MATH1(tan, Tan)
TRITIUM_MATH1(asin, Asin)
TRITIUM_MATH1(acos, Acos)
TRITIUM_MATH1(atan, Atan)
TRITIUM_MATH1(sinh, Sinh)
TRITIUM_MATH1(cosh, Cosh)
TRITIUM_MATH1(asinh, Asinh)
TRITIUM_MATH1(acosh, Acosh)
TRITIUM_MATH1(atanh, Atanh)
TRITIUM_MATH1(cbrt, Cbrt)
TRITIUM_MATH1(log10, Log10)
TRITIUM_MATH1(erfc, Erfc)
TRITIUM_MATH1(erfinv, Erfinv)
TRITIUM_MATH1(trunc, Trunc)
TRITIUM_MATH1(rint, Rint)
TRITIUM_MATH1(round, Round)
#undef TRITIUM_MATH1
Value fma(const Operand &x, const Operand &y, const Operand &z, Loc l) {
  return math(ir::MathFn::Fma, {x, y, z}, SourceLoc(l));
}
#define TRITIUM_MATH2(fn, Fn)                                                                      \
  Value fn(const Operand &x, const Operand &y, Loc l) {                                            \
    return math(ir::MathFn::Fn, {x, y}, SourceLoc(l));                                             \
  }
TRITIUM_MATH2(pow, Pow)
TRITIUM_MATH2(div_rn, DivRn)
TRITIUM_MATH2(atan2, Atan2)
TRITIUM_MATH2(hypot, Hypot)
TRITIUM_MATH2(fmod, Fmod)
TRITIUM_MATH2(copysign, Copysign)
#undef TRITIUM_MATH2
Value clamp(const Operand &x, const Operand &lo, const Operand &hi, Loc l) {
  return minimum(maximum(x, lo, l), hi, l);
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
  std::vector<int64_t> shape =
      broadcastShapes(m->type().shape(), x->type().shape(), "where", loc);
  x = broadcastTo(b, x, shape, "where", loc);
  y = broadcastTo(b, y, shape, "where", loc);
  m = broadcastTo(b, m, shape, "where", loc);
  return Value(b.createValue(OpKind::Select, {m, x, y}, x->type(), loc));
}

DType::DType(const char *name, Loc l) {
  static const std::pair<const char *, ScalarKind> aliases[] = {
      {"float32", ScalarKind::F32}, {"float16", ScalarKind::F16},
      {"bfloat16", ScalarKind::BF16}, {"int1", ScalarKind::I1},
      {"int32", ScalarKind::I32},   {"int64", ScalarKind::I64}};
  std::string n = name ? name : "";
  for (auto [alias, k] : aliases)
    if (n == alias) {
      kind = k;
      return;
    }
  auto k = ir::parseDtype(n);
  if (!k)
    userError("unknown dtype '" + n + "' (expected one of " + ir::dtypeNames() +
                  ", or Triton's names float32, float16, bfloat16, int1, int32, int64)",
              SourceLoc(l));
  kind = *k;
}

Value bitcast(const Operand &x, DType dtype, Loc l) {
  SourceLoc loc(l);
  ir::Value *v = requireValue(x, "bitcast's input", loc);
  if (v->type().isPtr() || v->type().isBool() || dtype.kind == ScalarKind::I1)
    userError("bitcast of " + v->type().str() + " to " + ir::dtypeName(dtype.kind) +
                  ": only numbers of the same width can be bitcast",
              loc);
  if (ir::bitWidth(v->type().kind()) != ir::bitWidth(dtype.kind))
    userError("bitcast of " + v->type().str() + " to " + ir::dtypeName(dtype.kind) +
                  ": the widths differ (" + std::to_string(ir::bitWidth(v->type().kind())) +
                  " and " + std::to_string(ir::bitWidth(dtype.kind)) + " bits)",
              loc);
  if (v->type().kind() == dtype.kind)
    return Value(v);
  return Value(
      builder(loc).createValue(OpKind::Bitcast, {v}, v->type().withKind(dtype.kind), loc));
}

Value cast(const Operand &x, DType dtype, Loc l) {
  SourceLoc loc(l);
  if (x.kind != Operand::Kind::Value) // a literal: a constant of that type
    return Value(materialize(builder(loc), x, Type::scalar(dtype.kind), loc));
  ir::Value *v = requireValue(x, "cast's input", loc);
  return Value(convert(builder(loc), v, dtype.kind, loc));
}

// --- shapes -------------------------------------------------------------------------------------

constexpr int kMaxRank = 3;

void checkShape(const std::vector<int64_t> &shape, const std::string &what, const SourceLoc &loc) {
  if (shape.empty() || int(shape.size()) > kMaxRank)
    userError(what + ": blocks have 1 to " + std::to_string(kMaxRank) + " dimensions, got " +
                  shapeStr(shape),
              loc);
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 1 || (shape.size() > 1 && !std::has_single_bit(uint64_t(d))))
      userError(what + ": the dimensions of a block of rank " + std::to_string(shape.size()) +
                    " must be powers of two, got " + shapeStr(shape),
                loc);
    if (d > (int64_t(1) << 24) || n > (int64_t(1) << 24) / d)
      userError(what + ": the block " + shapeStr(shape) + " has more than 2^24 elements", loc);
    n *= d;
  }
}

namespace {

ir::Value *blockInput(const Operand &x, const char *what, const SourceLoc &loc) {
  ir::Value *v = requireValue(x, (std::string(what) + "'s input").c_str(), loc);
  if (!v->type().isBlock())
    userError(std::string(what) + " takes a block, got the scalar " + v->type().str(), loc);
  return v;
}

} // namespace

Value full(const std::vector<int64_t> &shape, const Operand &value, DType dtype, Loc l) {
  SourceLoc loc(l);
  checkShape(shape, "full(" + shapeStr(shape) + ", ...)", loc);
  if (shape.size() == 1)
    checkBlockSize(shape[0], "full(" + shapeStr(shape) + ", ...)", loc);
  auto &b = builder(loc);
  Type elem = Type::scalar(dtype.kind);
  if (value.kind == Operand::Kind::Value) {
    ir::Value *v = requireValue(value, "full's value", loc);
    if (v->type().isBlock())
      userError("full's value must be a scalar, got " + v->type().str(), loc);
  }
  return Value(materialize(b, value, elem.withShape(shape), loc));
}

Value zeros(const std::vector<int64_t> &shape, DType dtype, Loc l) {
  return full(shape, Operand(int64_t(0), l), dtype, l);
}

Value expand_dims(const Operand &x, int axis, Loc l) {
  SourceLoc loc(l);
  ir::Value *v = requireValue(x, "expand_dims's input", loc);
  if (!v->type().isBlock()) { // a scalar (a 1-D reduction's result) becomes a block of one
    if (axis != 0 && axis != -1)
      userError("expand_dims of the scalar " + v->type().str() + ": axis " +
                    std::to_string(axis) + " is out of range (0 or -1)",
                loc);
    return Value(builder(loc).createValue(OpKind::Splat, {v}, v->type().withShape({1}), loc));
  }
  int rank = v->type().rank();
  if (axis < 0)
    axis += rank + 1;
  if (axis < 0 || axis > rank)
    userError("expand_dims: axis " + std::to_string(axis) + " is out of range for " +
                  v->type().str() + " (0 to " + std::to_string(rank) + ")",
              loc);
  std::vector<int64_t> shape = v->type().shape();
  shape.insert(shape.begin() + axis, 1);
  checkShape(shape, "expand_dims", loc);
  ir::Op *op = builder(loc).create(OpKind::ExpandDims, {v}, {v->type().withShape(shape)}, loc);
  op->setAttr("axis", int64_t(axis));
  return Value(op->result());
}

static Value index(const Value &x, const std::vector<Index> &indices, Loc l) {
  SourceLoc loc(l);
  ir::Value *v = blockInput(Operand(x, l), "indexing with _ and None", loc);
  int kept = 0;
  for (Index i : indices)
    kept += i.newAxis ? 0 : 1;
  if (kept != v->type().rank())
    userError("indexing " + v->type().str() + " with " + std::to_string(indices.size()) +
                  " indices: each of its " + std::to_string(v->type().rank()) +
                  " dimensions needs one `_` (and each new one a `None`)",
              loc);
  Value out = x;
  for (size_t i = 0; i < indices.size(); ++i)
    if (indices[i].newAxis)
      out = expand_dims(out, int(i), l);
  return out;
}

Value Value::operator()(Index a, Index b, Loc l) const { return index(*this, {a, b}, l); }
Value Value::operator()(Index a, Index b, Index c, Loc l) const {
  return index(*this, {a, b, c}, l);
}

Value broadcast_to(const Operand &x, const std::vector<int64_t> &shape, Loc l) {
  SourceLoc loc(l);
  checkShape(shape, "broadcast_to", loc);
  ir::Value *v = requireValue(x, "broadcast_to's input", loc);
  return Value(broadcastTo(builder(loc), v, shape, "broadcast_to", loc));
}

Value reshape(const Operand &x, const std::vector<int64_t> &shape, Loc l) {
  SourceLoc loc(l);
  ir::Value *v = blockInput(x, "reshape", loc);
  checkShape(shape, "reshape", loc);
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  if (n != v->type().numElements())
    userError("reshape of " + v->type().str() + " to " + shapeStr(shape) +
                  ": the element counts differ (" + std::to_string(v->type().numElements()) +
                  " and " + std::to_string(n) + ")",
              loc);
  if (v->type().shape() == shape)
    return Value(v);
  return Value(builder(loc).createValue(OpKind::Reshape, {v}, v->type().withShape(shape), loc));
}

Value permute(const Operand &x, const std::vector<int> &dims, Loc l) {
  SourceLoc loc(l);
  ir::Value *v = blockInput(x, "permute", loc);
  std::vector<int64_t> order(dims.begin(), dims.end());
  std::string text = ir::formatOrder(order);
  if (int(dims.size()) != v->type().rank() || ir::parseOrder(text).empty())
    userError("permute of " + v->type().str() + " by [" + text +
                  "]: the dims must be a permutation of 0 .. " +
                  std::to_string(v->type().rank() - 1),
              loc);
  std::vector<int64_t> shape;
  for (int d : dims)
    shape.push_back(v->type().shape()[size_t(d)]);
  bool identity = true;
  for (size_t i = 0; i < dims.size(); ++i)
    identity = identity && dims[i] == int(i);
  if (identity)
    return Value(v);
  ir::Op *op = builder(loc).create(OpKind::Trans, {v}, {v->type().withShape(shape)}, loc);
  op->setAttr("order", text);
  return Value(op->result());
}

Value trans(const Operand &x, Loc l) {
  SourceLoc loc(l);
  ir::Value *v = blockInput(x, "trans", loc);
  if (v->type().rank() != 2)
    userError("trans swaps the dimensions of a 2-D block, got " + v->type().str() +
                  " (use permute(x, dims) for other ranks)",
              loc);
  return permute(x, {1, 0}, l);
}

} // namespace tritium::dsl
