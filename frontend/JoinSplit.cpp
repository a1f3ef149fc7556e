// join and split (Triton's tl.join, tl.split): two blocks stacked along a new last dimension
// of 2, and back. The layout pass keeps that dimension within each thread, so neither moves
// data unless a use needs another layout. interleave, ravel and cat are compositions of them
// (cat in its given order transposes the joined pairs, through shared memory on the GPU).
#include "frontend/DSL.h"
#include "frontend/Tracer.h"
#include "frontend/TypeRules.h"

#include <bit>

namespace tritium::dsl {

using ir::OpKind;
using ir::Type;

Value join(const Operand &a, const Operand &b, Loc l) {
  SourceLoc loc(l);
  auto &builder = Tracer::current(loc).builder();
  const Operand *typed = a.kind == Operand::Kind::Value ? &a : &b;
  if (typed->kind != Operand::Kind::Value || !typed->value)
    userError("join needs at least one traced value, got " + describe(a) + " and " + describe(b),
              loc);
  // Shapes broadcast as numpy's; a literal takes its partner's type, values must agree.
  std::vector<int64_t> shape;
  for (const Operand *x : {&a, &b})
    if (x->kind == Operand::Kind::Value && x->value && x->value->type().isBlock())
      shape = broadcastShapes(shape, x->value->type().shape(), "join", loc);
  if (shape.empty())
    userError("join takes blocks, got the scalars " + describe(a) + " and " + describe(b) +
                  " (make one a block with full() first)",
              loc);
  if (a.kind == Operand::Kind::Value && b.kind == Operand::Kind::Value && a.value && b.value &&
      a.value->type().element() != b.value->type().element())
    userError("join of " + a.value->type().str() + " and " + b.value->type().str() +
                  ": the element types differ (cast one of them)",
              loc);
  std::vector<int64_t> joined = shape;
  joined.push_back(2);
  checkShape(joined, "join", loc);
  Type t = typed->value->type().withShape(shape);
  ir::Value *x = materialize(builder, a, t, loc), *y = materialize(builder, b, t, loc);
  return Value(builder.createValue(OpKind::Join, {x, y}, t.withShape(joined), loc));
}

std::pair<Value, Value> split(const Operand &x, Loc l) {
  SourceLoc loc(l);
  if (x.kind != Operand::Kind::Value || !x.value)
    userError("split takes a block whose last dimension is 2, got " + describe(x), loc);
  const Type &t = x.value->type();
  if (!t.isBlock() || t.shape().back() != 2)
    userError("split takes a block whose last dimension is 2, got " + t.str(), loc);
  std::vector<int64_t> shape = t.shape();
  shape.pop_back();
  ir::Op *op = Tracer::current(loc).builder().create(
      OpKind::Split, {x.value}, {t.withShape(shape), t.withShape(shape)}, loc);
  return {Value(op->result(0)), Value(op->result(1))};
}

Value interleave(const Operand &a, const Operand &b, Loc l) {
  Value joined = join(a, b, l);
  std::vector<int64_t> shape = joined.type(l).shape();
  shape.pop_back();
  shape.back() *= 2;
  return reshape(joined, shape, l);
}

Value ravel(const Operand &x, Loc l) {
  SourceLoc loc(l);
  if (x.kind != Operand::Kind::Value || !x.value || !x.value->type().isBlock())
    userError("ravel takes a block, got " + describe(x), loc);
  return reshape(x, {x.value->type().numElements()}, l);
}

std::pair<Value, Value> swizzle2d(const Operand &i, const Operand &j, const Operand &size_i,
                                  const Operand &size_j, const Operand &size_g, Loc l) {
  // The grid row-major: ij = i * size_j + j; groups of size_g rows (the last one may be
  // shorter), each walked column by column.
  SourceLoc loc(l);
  for (const Operand *x : {&i, &j, &size_i, &size_j, &size_g})
    if ((x->kind == Operand::Kind::Value && x->value && !x->value->type().isInt()) ||
        x->kind == Operand::Kind::Float)
      userError("swizzle2d takes integers, got " + describe(*x), loc);
  // Written so that every step has a traced left operand (the sizes may all be constants):
  // the group's first row is (ij / size_j) rounded down to a multiple of size_g.
  Value ij = i * size_j + j;
  Value first = ij / size_j / size_g * size_g;
  Value rows = minimum(size_i - first, size_g, l);
  Value inGroup = ij - first * size_j;
  return {first + inGroup % rows, inGroup / rows};
}

Value cat(const Operand &a, const Operand &b, bool can_reorder, int dim, Loc l) {
  SourceLoc loc(l);
  for (const Operand *x : {&a, &b})
    if (x->kind != Operand::Kind::Value || !x->value || !x->value->type().isBlock())
      userError("cat takes two blocks, got " + describe(a) + " and " + describe(b), loc);
  const Type &t = a.value->type();
  if (t.shape() != b.value->type().shape())
    userError("cat of " + t.str() + " and " + b.value->type().str() +
                  ": the shapes differ (cat takes blocks of one shape)",
              loc);
  int d = dim < 0 ? dim + t.rank() : dim;
  if (d < 0 || d >= t.rank())
    userError("cat: dimension " + std::to_string(dim) + " is out of range for " + t.str() +
                  " (0 to " + std::to_string(t.rank() - 1) + ")",
              loc);
  for (int64_t e : t.shape())
    if (!std::has_single_bit(uint64_t(e)))
      userError("cat of " + t.str() + ": the dimensions of its blocks must be powers of two", loc);
  std::vector<int64_t> shape = t.shape();
  shape[size_t(d)] *= 2;
  // The elements before dimension d count the runs, the rest is one run of a's and one of b's.
  int64_t runs = 1, run = 1;
  for (int e = 0; e < t.rank(); ++e)
    (e < d ? runs : run) *= t.shape()[size_t(e)];
  if (can_reorder) // join's pairs as they lie: every element once, no data moved
    return reshape(join(ravel(a, l), ravel(b, l), l), shape, l);
  if (runs == 1)
    return reshape(trans(join(ravel(a, l), ravel(b, l), l), l), shape, l);
  Value pairs = join(reshape(a, {runs, run}, l), reshape(b, {runs, run}, l), l); // [runs, run, 2]
  return reshape(permute(pairs, {0, 2, 1}, l), shape, l);
}

} // namespace tritium::dsl
