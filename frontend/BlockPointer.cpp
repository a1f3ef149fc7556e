// Block pointers (Triton's tl.make_block_ptr, tl.advance, and load/store of a block pointer
// with boundary_check): the tensor's base, shape and strides and the tile's offsets as i64
// scalars. A load or store is traced as the masked load or store it means: every element's
// address from the offsets and strides, the mask covering only the dimensions the caller asks
// to check. advance() only adds to the offsets, so a pointer advanced in a loop is a carried
// variable like any other.
#include "frontend/DSL.h"
#include "frontend/Tracer.h"
#include "frontend/TypeRules.h"

#include <algorithm>
#include <cmath>

namespace tritium::dsl {

using ir::ScalarKind;
using ir::Type;

namespace {

std::vector<Value> indexScalars(const std::vector<Operand> &xs, const std::string &what,
                                const SourceLoc &loc) {
  std::vector<Value> out;
  for (size_t i = 0; i < xs.size(); ++i)
    out.push_back(Value(indexScalar(xs[i], what + "[" + std::to_string(i) + "]", loc)));
  return out;
}

std::string listStr(const std::vector<int64_t> &v) { return shapeStr(v); }

} // namespace

BlockPointer make_block_ptr(const Operand &base, const std::vector<Operand> &shape,
                            const std::vector<Operand> &strides,
                            const std::vector<Operand> &offsets,
                            const std::vector<int64_t> &block_shape,
                            const std::vector<int64_t> &order, Loc l) {
  SourceLoc loc(l);
  if (base.kind != Operand::Kind::Value || !base.value || !base.value->type().isPtr() ||
      base.value->type().isBlock())
    userError("make_block_ptr's base must be a pointer (a scalar pointer), got " +
                  describe(base),
              loc);
  size_t rank = block_shape.size();
  if (rank < 1 || rank > 3)
    userError("make_block_ptr: block_shape " + shapeStr(block_shape) + " has rank " +
                  std::to_string(rank) + "; blocks have rank 1 to 3",
              loc);
  if (shape.size() != rank || strides.size() != rank || offsets.size() != rank ||
      order.size() != rank)
    userError("make_block_ptr: block_shape " + shapeStr(block_shape) + " has rank " +
                  std::to_string(rank) + " but shape has " + std::to_string(shape.size()) +
                  " entries, strides " + std::to_string(strides.size()) + ", offsets " +
                  std::to_string(offsets.size()) + " and order " +
                  std::to_string(order.size()),
              loc);
  for (int64_t d : block_shape)
    if (d < 1 || (d & (d - 1)) != 0)
      userError("make_block_ptr: block_shape " + shapeStr(block_shape) +
                    " must have powers of two in every dimension",
                loc);
  checkShape(block_shape, "make_block_ptr's block_shape", loc);
  std::vector<int64_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < rank; ++i)
    if (sorted[i] != int64_t(i))
      userError("make_block_ptr: order " + listStr(order) +
                    " must list each dimension once (a permutation of 0 .. " +
                    std::to_string(rank - 1) + ")",
                loc);
  BlockPointer p;
  p.base_ = Value(base.value);
  p.shape_ = indexScalars(shape, "make_block_ptr's shape", loc);
  p.strides_ = indexScalars(strides, "make_block_ptr's strides", loc);
  p.offsets_ = indexScalars(offsets, "make_block_ptr's offsets", loc);
  p.block_ = block_shape;
  p.order_ = order;
  return p;
}

BlockPointer &BlockPointer::operator=(const BlockPointer &o) {
  auto assign = [](std::vector<Value> &to, const std::vector<Value> &from) {
    if (to.size() != from.size()) {
      to = from;
      return;
    }
    for (size_t i = 0; i < to.size(); ++i)
      to[i] = from[i];
  };
  base_ = o.base_;
  assign(shape_, o.shape_);
  assign(strides_, o.strides_);
  assign(offsets_, o.offsets_);
  block_ = o.block_;
  order_ = o.order_;
  return *this;
}

BlockPointer advance(const BlockPointer &bp, const std::vector<Operand> &offsets, Loc l) {
  SourceLoc loc(l);
  if (offsets.size() != bp.block_.size())
    userError("advance takes " + std::to_string(bp.block_.size()) +
                  " offsets (one per dimension of the block pointer), got " +
                  std::to_string(offsets.size()),
              loc);
  BlockPointer out = bp;
  std::vector<Value> by = indexScalars(offsets, "advance's offsets", loc);
  for (size_t i = 0; i < by.size(); ++i)
    out.offsets_[i] = Operand(bp.offsets_[i], l) + Operand(by[i], l);
  return out;
}

// The tile's element pointers and the mask of the dimensions in `boundaryCheck` (a null Value
// when none is checked); every op made here carries the user's line `l`.
std::pair<Value, Value> BlockPointer::tile(const std::vector<int64_t> &boundaryCheck,
                                           const char *what, Loc l) const {
  SourceLoc loc(l);
  auto at = [&](const Value &v) { return Operand(v, l); };
  size_t rank = block_.size();
  std::vector<bool> checked(rank, false);
  for (int64_t d : boundaryCheck) {
    if (d < 0 || d >= int64_t(rank))
      userError(std::string(what) + ": boundary_check names dimension " + std::to_string(d) +
                    " of a block pointer of rank " + std::to_string(rank),
                loc);
    checked[size_t(d)] = true;
  }
  Value offset, mask;
  bool anyMask = false;
  for (size_t i = 0; i < rank; ++i) {
    // Along dimension i: offsets[i] + 0 .. block_[i] - 1, expanded to rank `rank`; the offset
    // is added after the expansion so that each tile's index blocks keep their own layouts.
    Value index = cast(arange(0, block_[i], l), int64, l);
    for (size_t j = 0; j < rank; ++j)
      if (j != i)
        index = expand_dims(index, int(j), l);
    index = at(offsets_[i]) + at(index);
    Value term = at(index) * at(strides_[i]);
    offset = i == 0 ? term : at(offset) + at(term);
    if (checked[i]) {
      Value inside = at(at(index) >= Operand(int64_t(0), l)) && at(at(index) < at(shape_[i]));
      mask = anyMask ? Value(at(mask) && at(inside)) : inside;
      anyMask = true;
    }
  }
  Value ptrs = at(base_) + at(broadcast_to(offset, block_, l));
  return {ptrs, anyMask ? broadcast_to(mask, block_, l) : Value()};
}

Value load(const BlockPointer &bp, const std::vector<int64_t> &boundary_check, Padding padding,
           Loc l) {
  auto [ptrs, mask] = bp.tile(boundary_check, "load of a block pointer", l);
  if (!mask.ir())
    return load(Operand(ptrs, l), l);
  Operand other = padding == Padding::nan ? Operand(double(NAN), l) : Operand(0, l);
  return load(Operand(ptrs, l), Operand(mask, l), other, {}, l);
}

void store(const BlockPointer &bp, const Operand &value,
           const std::vector<int64_t> &boundary_check, Loc l) {
  SourceLoc loc(l);
  if (value.kind == Operand::Kind::Value && value.value && value.value->type().isBlock() &&
      value.value->type().shape() != bp.block_)
    userError("store to a block pointer of block_shape " + shapeStr(bp.block_) + " got " +
                  value.value->type().str(),
              loc);
  auto [ptrs, mask] = bp.tile(boundary_check, "store to a block pointer", l);
  if (!mask.ir())
    store(Operand(ptrs, l), value, l);
  else
    store(Operand(ptrs, l), value, Operand(mask, l), {}, l);
}

} // namespace tritium::dsl
