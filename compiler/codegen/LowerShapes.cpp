// Lowering of shape changes. expand_dims and broadcast move no data: the layout pass gives
// them layouts under which each result register is one of the operand's registers; nor does a
// convert_layout or reshape marked in_place (same placement on both sides).
// convert_layout, reshape and trans stage the block in shared memory: every thread writes its
// elements at their row-major index (for trans, the index in the result), a barrier, then every
// thread reads the elements its result layout gives it. Rows of 32 elements or more get one
// padding element so that reads down a column do not all hit one bank.
#include "compiler/codegen/Lowering.h"
#include "compiler/gpu/GpuPasses.h"

namespace tritium::codegen {

namespace {

using ir::OpKind;

// Where flat index `flat` of the staged block `t` sits (stagedElements in GpuPasses.h).
llvm::Value *stagedIndex(Lowering &l, llvm::Value *flat, const ir::Type &t) {
  int64_t row = t.shape().back();
  if (t.rank() < 2 || row < 32)
    return flat;
  return l.b.CreateAdd(flat, l.b.CreateUDiv(flat, l.b.getInt32(int32_t(row))));
}

void lowerStaged(Lowering &l, const ir::Op &op) {
  auto &b = l.b;
  const ir::Value *in = op.operand(0), *res = op.result();
  const ir::Type &t = res->type();
  llvm::Type *elemTy = l.elementType(t);
  llvm::Type *slotTy = t.isBool() ? b.getInt8Ty() : elemTy; // masks travel as bytes
  llvm::Value *base =
      l.programSmem(op.intAttr("smem_offset"));
  std::vector<int64_t> order;
  if (op.kind() == OpKind::Trans)
    order = ir::parseOrder(op.strAttr("order"));
  l.barrier(); // an earlier round of this buffer (a loop) has been read
  const Elements &vals = l.get(in);
  for (size_t k = 0; k < vals.size(); ++k) {
    std::vector<llvm::Value *> coords = l.coordinates(in, int64_t(k));
    llvm::Value *flat;
    if (op.kind() == OpKind::Trans) {
      std::vector<llvm::Value *> permuted;
      for (int64_t d : order)
        permuted.push_back(coords[size_t(d)]);
      flat = l.rowMajorIndex(permuted, t.shape());
    } else {
      flat = l.rowMajorIndex(coords, in->type().shape());
    }
    llvm::Value *v = t.isBool() ? b.CreateZExt(vals[k], slotTy) : vals[k];
    // Copies of an element held by several threads all write the same value.
    b.CreateStore(v, b.CreateGEP(slotTy, base, stagedIndex(l, flat, t)));
  }
  l.barrier();
  Elements out;
  for (int64_t k = 0; k < l.elementsPerThread(res); ++k) {
    llvm::Value *flat = l.rowMajorIndex(res, k);
    llvm::Value *v = b.CreateLoad(slotTy, b.CreateGEP(slotTy, base, stagedIndex(l, flat, t)));
    out.push_back(t.isBool() ? b.CreateTrunc(v, elemTy) : v);
  }
  l.set(res, std::move(out));
}

// Each result register of a broadcast reads the operand register with index 0 along the
// broadcast dimensions (the operand's extent there is 1).
void lowerBroadcast(Lowering &l, const ir::Op &op) {
  const ir::Value *in = op.operand(0), *res = op.result();
  ir::LayoutMap inMap(*in->layout(), in->type().shape());
  ir::LayoutMap outMap(*res->layout(), res->type().shape());
  if (!(in->layout()->root() == res->layout()->root()))
    internalError("broadcast between different layouts");
  const Elements &vals = l.get(in);
  Elements out;
  for (int64_t k = 0; k < outMap.elementsPerThread(); ++k) {
    std::vector<int64_t> index = outMap.registerIndex(k);
    for (int d = 0; d < res->type().rank(); ++d)
      if (in->type().shape()[size_t(d)] == 1)
        index[size_t(outMap.rootDim(d))] = 0;
    out.push_back(vals.at(size_t(inMap.registerNumber(index))));
  }
  l.set(res, std::move(out));
}

// join: the layout pass keeps the new last dimension in each thread, fastest, so result
// register 2k + j is register k of operand j.
void lowerJoin(Lowering &l, const ir::Op &op) {
  const Elements &a = l.get(op.operand(0)), &c = l.get(op.operand(1));
  Elements out;
  for (size_t k = 0; k < a.size(); ++k) {
    out.push_back(a[k]);
    out.push_back(c[k]);
  }
  if (int64_t(out.size()) != l.elementsPerThread(op.result()))
    internalError("join's result layout does not hold its operands' elements");
  l.set(op.result(), std::move(out));
}

// split: each result's layout is the input's sliced along its last dimension, whose two
// elements sit in the same thread; half j reads the input register with index j along it.
void lowerSplit(Lowering &l, const ir::Op &op) {
  const ir::Value *in = op.operand(0);
  ir::LayoutMap inMap(*in->layout(), in->type().shape());
  int lastRoot = inMap.rootDim(in->type().rank() - 1);
  if (inMap.run(lastRoot) < 2)
    internalError("split of a block whose halves sit in different threads");
  const Elements &vals = l.get(in);
  for (unsigned half = 0; half < 2; ++half) {
    const ir::Value *res = op.result(half);
    Elements out;
    if (!res->type().isBlock()) {
      std::vector<int64_t> index(inMap.registersPerDim().size(), 0);
      index[size_t(lastRoot)] = half;
      out.push_back(vals.at(size_t(inMap.registerNumber(index))));
    } else {
      ir::LayoutMap outMap(*res->layout(), res->type().shape());
      for (int64_t k = 0; k < outMap.elementsPerThread(); ++k) {
        std::vector<int64_t> index = outMap.registerIndex(k);
        index[size_t(lastRoot)] = half;
        out.push_back(vals.at(size_t(inMap.registerNumber(index))));
      }
    }
    l.set(res, std::move(out));
  }
}

} // namespace

bool lowerShapes(Lowering &l, const ir::Op &op) {
  switch (op.kind()) {
  case OpKind::ExpandDims: {
    // The operand's layout is the result's sliced along the new axis: the same registers.
    const Elements &vals = l.get(op.operand(0));
    if (int64_t(vals.size()) != l.elementsPerThread(op.result()))
      internalError("expand_dims between layouts that hold different elements");
    l.set(op.result(), vals);
    return true;
  }
  case OpKind::Broadcast:
    lowerBroadcast(l, op);
    return true;
  case OpKind::Join:
    lowerJoin(l, op);
    return true;
  case OpKind::Split:
    lowerSplit(l, op);
    return true;
  case OpKind::ConvertLayout:
  case OpKind::Reshape:
    if (op.hasAttr("in_place")) { // every element already where the result wants it
      l.set(op.result(), l.get(op.operand(0)));
      return true;
    }
    lowerStaged(l, op);
    return true;
  case OpKind::Trans:
    if (op.hasAttr("dot_only")) { // a dot reads the ring tile under it (FeedDotsFromRings.cpp)
      l.set(op.result(), {});
      return true;
    }
    lowerStaged(l, op);
    return true;
  default:
    return false;
  }
}

} // namespace tritium::codegen
