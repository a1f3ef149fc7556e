// Lowering of the general reduce (N blocks, a combine region): as the fixed reductions
// (LowerReduction.cpp), within the thread, across the lanes along the axis by butterfly
// shuffles, across the warps along it through shared memory, but with the combine region
// lowered inline at every step. Copies of elements (a block smaller than the layout's tile along
// the axis) need no identity value: only the lanes and warps that hold distinct elements take
// part, and the copies, doing the same steps on the same data, end with the same result.
#include "compiler/codegen/Lowering.h"
#include "compiler/gpu/GpuPasses.h"

#include <optional>

namespace tritium::codegen {

namespace {

using Group = std::vector<llvm::Value *>; // one value per operand

Group combine(Lowering &l, const ir::Op &op, const Group &a, const Group &b) {
  const ir::Block &region = *op.region(0);
  size_t n = a.size();
  for (size_t i = 0; i < n; ++i) {
    l.set(region.argument(unsigned(i)), {a[i]});
    l.set(region.argument(unsigned(i + n)), {b[i]});
  }
  const ir::Op *yield = l.lowerRegion(region);
  Group out;
  for (size_t i = 0; i < n; ++i)
    out.push_back(l.get(yield->operand(unsigned(i)))[0]);
  return out;
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

} // namespace

bool lowerGeneralReduce(Lowering &l, const ir::Op &op) {
  if (op.kind() != ir::OpKind::Reduce)
    return false;
  auto &b = l.b;
  size_t n = op.numOperands();
  const ir::Value *in = op.operand(0), *res = op.result(0);
  ir::LayoutMap inMap(*in->layout(), in->type().shape());
  int axis = inMap.rootDim(int(op.intAttr("axis")));
  bool scalar = !res->type().isBlock();
  std::optional<ir::LayoutMap> outMap;
  if (!scalar)
    outMap.emplace(*res->layout(), res->type().shape());
  int64_t outCount = scalar ? 1 : outMap->elementsPerThread();

  // 1. Within the thread (its registers hold distinct elements).
  std::vector<std::optional<Group>> acc(static_cast<size_t>(outCount));
  for (int64_t k = 0; k < inMap.elementsPerThread(); ++k) {
    Group g;
    for (size_t i = 0; i < n; ++i)
      g.push_back(l.get(op.operand(unsigned(i))).at(size_t(k)));
    size_t slot = 0;
    if (!scalar) {
      std::vector<int64_t> index = inMap.registerIndex(k);
      index[size_t(axis)] = 0;
      slot = size_t(outMap->registerNumber(index));
    }
    acc[slot] = acc[slot] ? combine(l, op, *acc[slot], g) : g;
  }
  // 2. Across the lanes along the axis that hold distinct elements.
  const ir::Layout &root = inMap.root();
  int64_t extent = inMap.rootShape()[size_t(axis)];
  int64_t spt = root.sizePerThread()[size_t(axis)], tpw = root.threadsPerWarp()[size_t(axis)];
  int64_t lanes = std::min(tpw, std::max<int64_t>(1, ceilDiv(extent, spt)));
  for (int64_t offset = lanes / 2; offset >= 1; offset /= 2)
    for (auto &a : acc) {
      Group other;
      for (llvm::Value *v : *a)
        other.push_back(shuffleXor(l, v, int(offset * inMap.laneStride(axis))));
      a = combine(l, op, *a, other);
    }
  // 3. Across the warps along the axis: slots [component][bank][element][warp].
  int64_t warpsAlong = root.warpsPerCTA()[size_t(axis)];
  int64_t warps = std::min(warpsAlong, std::max<int64_t>(1, ceilDiv(extent, spt * tpw)));
  if (warps > 1) {
    int64_t elements = scalar ? 1 : res->type().numElements();
    llvm::Value *bank = b.CreateLoad(b.getInt32Ty(), l.reductionBank);
    b.CreateStore(b.CreateXor(bank, b.getInt32(1)), l.reductionBank);
    std::vector<llvm::Value *> flat(static_cast<size_t>(outCount));
    for (int64_t k = 0; k < outCount; ++k)
      flat[size_t(k)] = scalar ? b.getInt32(0) : l.rowMajorIndex(res, k);
    auto slot = [&](size_t i, int64_t k, llvm::Value *warp) {
      int64_t base = op.intAttr("smem_offset");
      for (size_t j = 0; j < i; ++j)
        base += 2 * elements * warpsAlong * reduceSlotBytes(op.result(unsigned(j))->type());
      int64_t bytes = reduceSlotBytes(op.result(unsigned(i))->type());
      llvm::Value *index = b.CreateAdd(
          b.CreateMul(bank, b.getInt32(int32_t(elements * warpsAlong))),
          b.CreateAdd(b.CreateMul(flat[size_t(k)], b.getInt32(int32_t(warpsAlong))), warp));
      return b.CreateGEP(b.getInt8Ty(), l.programSmemBase(),
                         b.CreateAdd(b.getInt64(base),
                                     b.CreateZExt(b.CreateMul(index, b.getInt32(int32_t(bytes))),
                                                  b.getInt64Ty())));
    };
    llvm::Value *warp = l.warpCoordinate(inMap, axis);
    l.ifThen(b.CreateICmpEQ(l.laneCoordinate(inMap, axis), b.getInt32(0)), "reduce.write", [&] {
      for (int64_t k = 0; k < outCount; ++k)
        for (size_t i = 0; i < n; ++i)
          b.CreateStore((*acc[size_t(k)])[i], slot(i, k, warp));
    });
    l.barrier();
    for (int64_t k = 0; k < outCount; ++k) {
      std::optional<Group> total;
      for (int64_t w = 0; w < warps; ++w) {
        Group part;
        for (size_t i = 0; i < n; ++i)
          part.push_back(b.CreateLoad((*acc[size_t(k)])[i]->getType(),
                                      slot(i, k, b.getInt32(int32_t(w)))));
        total = total ? combine(l, op, *total, part) : part;
      }
      acc[size_t(k)] = total;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    Elements out;
    for (auto &a : acc)
      out.push_back((*a)[i]);
    l.set(op.result(unsigned(i)), std::move(out));
  }
  return true;
}

} // namespace tritium::codegen
