// Tensor descriptors (Triton 3's tl.make_tensor_descriptor): a row-major view of a tensor in
// global memory, loaded and stored a tile at a time. A tile's load is traced as the ordinary
// masked load it means (every element's address from the offsets and strides, the elements
// outside the tensor masked to zero), so the interpreter, the layout passes and the cp.async
// pipeliner treat it like any load; a store or atomic likewise. Each keeps the descriptor's
// scalars after its own operands ({tensor_rank}, compiler/ir/TensorMap.h), from which the GPU
// passes may lower it to a TMA copy instead (gpu/ChooseTensorMaps.cpp for loads,
// gpu/ChooseTensorStores.cpp for stores and reductions). Address arithmetic is 64-bit: a descriptor
// covers tensors past 2^31 elements.
#include "frontend/DSL.h"
#include "frontend/Tracer.h"
#include "frontend/TypeRules.h"

namespace tritium::dsl {

using ir::OpKind;
using ir::ScalarKind;
using ir::Type;

namespace {

bool isConstantOne(const Operand &x) {
  if (x.kind == Operand::Kind::Int)
    return x.i == 1;
  if (x.kind != Operand::Kind::Value || !x.value)
    return false;
  const ir::Op *def = x.value->definingOp();
  return def && def->kind() == OpKind::Constant && !x.value->type().isBlock() &&
         std::holds_alternative<int64_t>(def->attr("value")) &&
         std::get<int64_t>(def->attr("value")) == 1;
}

} // namespace

TensorDescriptor make_tensor_descriptor(const Operand &base, const std::vector<Operand> &shape,
                                        const std::vector<Operand> &strides,
                                        const std::vector<int64_t> &block_shape, Loc l) {
  SourceLoc loc(l);
  if (base.kind != Operand::Kind::Value || !base.value || !base.value->type().isPtr() ||
      base.value->type().isBlock())
    userError("make_tensor_descriptor's base must be a pointer argument (a scalar pointer), got " +
                  describe(base),
              loc);
  size_t rank = block_shape.size();
  if (rank < 1 || rank > 3)
    userError("make_tensor_descriptor: block_shape " + shapeStr(block_shape) +
                  " has rank " + std::to_string(rank) + "; blocks have rank 1 to 3",
              loc);
  if (shape.size() != rank || strides.size() != rank)
    userError("make_tensor_descriptor: block_shape " + shapeStr(block_shape) + " has rank " +
                  std::to_string(rank) + " but shape has " + std::to_string(shape.size()) +
                  " entries and strides " + std::to_string(strides.size()),
              loc);
  for (int64_t d : block_shape)
    if (d < 1 || (d & (d - 1)) != 0)
      userError("make_tensor_descriptor: block_shape " + shapeStr(block_shape) +
                    " must have powers of two in every dimension",
                loc);
  checkShape(block_shape, "make_tensor_descriptor's block_shape", loc);
  if (!isConstantOne(strides.back()))
    userError("make_tensor_descriptor: the last dimension must be contiguous (its stride the "
              "literal 1, as TMA requires), got " +
                  describe(strides.back()) +
                  "; for a column-major tensor describe its transpose and trans() the tiles",
              loc);
  TensorDescriptor d;
  d.base_ = Value(base.value);
  for (size_t i = 0; i < rank; ++i) {
    d.shape_.push_back(Value(indexScalar(shape[i], "make_tensor_descriptor's shape[" +
                                                       std::to_string(i) + "]", loc)));
    d.strides_.push_back(Value(indexScalar(strides[i], "make_tensor_descriptor's strides[" +
                                                           std::to_string(i) + "]", loc)));
  }
  d.block_ = block_shape;
  return d;
}

// The tile's element pointers and in-bounds mask at `offsets` (i64 scalars); every op made
// here carries the user's line `l`.
std::pair<Value, Value> TensorDescriptor::tile(const std::vector<ir::Value *> &offsets,
                                               Loc l) const {
  auto at = [&](const Value &v) { return Operand(v, l); };
  size_t rank = block_.size();
  Value offset, mask;
  for (size_t i = 0; i < rank; ++i) {
    // Along dimension i: offsets[i] + 0 .. block_[i] - 1, as a block of rank `rank` with
    // extent 1 elsewhere. The offset is added after the expansion, so that the index blocks of
    // two tiles of one loop (a's columns, b's rows) stay apart and each keeps its own layout
    // instead of sharing one through a conversion in the loop.
    Value index = cast(arange(0, block_[i], l), int64, l);
    for (size_t j = 0; j < rank; ++j)
      if (j != i)
        index = expand_dims(index, int(j), l);
    index = at(Value(offsets[i])) + at(index);
    Value inside = at(at(index) >= Operand(int64_t(0), l)) && at(at(index) < at(shape_[i]));
    Value term = i + 1 == rank ? index : at(index) * at(strides_[i]);
    offset = i == 0 ? term : at(offset) + at(term);
    mask = i == 0 ? inside : at(mask) && at(inside);
  }
  return {at(base_) + at(broadcast_to(offset, block_, l)), broadcast_to(mask, block_, l)};
}

std::vector<ir::Value *> TensorDescriptor::offsetValues(const std::vector<Operand> &offsets,
                                                        const char *what, Loc l) const {
  SourceLoc loc(l);
  if (offsets.size() != block_.size())
    userError(std::string(what) + " takes " + std::to_string(block_.size()) +
                  " offsets (one per dimension of the descriptor), got " +
                  std::to_string(offsets.size()),
              loc);
  std::vector<ir::Value *> out;
  for (size_t i = 0; i < offsets.size(); ++i)
    out.push_back(indexScalar(offsets[i], std::string(what) + "'s offset " + std::to_string(i),
                              loc));
  return out;
}

// The descriptor's scalars ride along after the op's own operands (TensorMap.h).
void TensorDescriptor::attach(ir::Op *op, const std::vector<ir::Value *> &offsets,
                              const SourceLoc &loc) const {
  op->addOperand(base_.checked(loc));
  for (const Value &s : shape_)
    op->addOperand(s.checked(loc));
  for (const Value &s : strides_)
    op->addOperand(s.checked(loc));
  for (ir::Value *o : offsets)
    op->addOperand(o);
  op->setAttr("tensor_rank", int64_t(block_.size()));
}

Value TensorDescriptor::load(const std::vector<Operand> &offsets, Loc l) const {
  SourceLoc loc(l);
  std::vector<ir::Value *> at = offsetValues(offsets, "load of a tensor descriptor", l);
  auto [ptrs, mask] = tile(at, l);
  Value v = dsl::load(ptrs, mask, Operand(0, l), {}, l);
  attach(v.checked(loc)->definingOp(), at, loc);
  return v;
}

Value TensorDescriptor::load(const std::vector<Operand> &offsets, MulticastTag, Loc l) const {
  Value v = load(offsets, l);
  v.checked(SourceLoc(l))->definingOp()->setAttr("multicast", int64_t(1));
  return v;
}

TensorDescriptor::WrittenTile TensorDescriptor::writtenTile(const std::vector<Operand> &offsets,
                                                           const Operand &value,
                                                           const std::string &what,
                                                           Loc l) const {
  SourceLoc loc(l);
  std::vector<ir::Value *> at = offsetValues(offsets, what.c_str(), l);
  if (value.kind == Operand::Kind::Value && value.value && value.value->type().isBlock() &&
      value.value->type().shape() != block_)
    userError(what + " of block_shape " + shapeStr(block_) + " got " + value.value->type().str(),
              loc);
  auto [ptrs, mask] = tile(at, l);
  return {ptrs, mask, at};
}

// The op just traced in the current block: the store or atomic that a descriptor's scalars
// are attached to.
static ir::Op *lastTraced(const SourceLoc &loc) {
  return Tracer::current(loc).builder().block()->ops().back().get();
}

void TensorDescriptor::store(const std::vector<Operand> &offsets, const Operand &value,
                             Loc l) const {
  SourceLoc loc(l);
  WrittenTile w = writtenTile(offsets, value, "store to a tensor descriptor", l);
  dsl::store(w.ptrs, value, w.mask, {}, l);
  attach(lastTraced(loc), w.offsets, loc);
}

// Element atomics through the tile's pointers, relaxed as a bulk reduction is, under the
// tile's mask and without old values; with the descriptor's scalars attached, the GPU passes
// make the supported ones TMA reductions (cp.reduce.async.bulk.tensor, gpu/
// ChooseTensorStores.cpp). The atomic's own checks (its dtypes) name the user's line.
#define TRITIUM_DESCRIPTOR_ATOMIC(name)                                                            \
  void TensorDescriptor::name(const std::vector<Operand> &offsets, const Operand &value, Loc l)   \
      const {                                                                                    \
    SourceLoc loc(l);                                                                            \
    WrittenTile w = writtenTile(offsets, value, #name " of a tensor descriptor", l);             \
    Value old = dsl::name(Operand(w.ptrs, l), value, Operand(w.mask, l), "relaxed", "gpu", l);   \
    attach(old.checked(loc)->definingOp(), w.offsets, loc);                                      \
  }
TRITIUM_DESCRIPTOR_ATOMIC(atomic_add)
TRITIUM_DESCRIPTOR_ATOMIC(atomic_min)
TRITIUM_DESCRIPTOR_ATOMIC(atomic_max)
TRITIUM_DESCRIPTOR_ATOMIC(atomic_and)
TRITIUM_DESCRIPTOR_ATOMIC(atomic_or)
TRITIUM_DESCRIPTOR_ATOMIC(atomic_xor)
#undef TRITIUM_DESCRIPTOR_ATOMIC

} // namespace tritium::dsl
