// Lowering of reductions along one axis of a block of any rank, under its layout: each thread
// combines its own elements that share the other coordinates, the lanes along the axis combine
// with butterfly shuffles, and when warps also lie along the axis each warp leaves its partials
// in shared memory for every thread to combine after a barrier. The result has the input's
// layout sliced along the axis (a 1-D input gives a scalar, uniform across the program).
//
// One barrier per reduction is enough: each reduction has two banks of slots, and successive
// reductions (of any site) alternate between them. The next write into the bank a reduction
// just read is then at least two reductions later, so the barrier of the reduction in between
// orders every thread's reads of the old partials before any warp's write of new ones.
#include "compiler/codegen/Lowering.h"

#include <limits>
#include <optional>

namespace tritium::codegen {

namespace {

struct Combiner {
  Lowering &l;
  ir::OpKind kind;
  bool isFloat;
  bool isUnsigned;

  llvm::Value *operator()(llvm::Value *a, llvm::Value *b) const {
    auto &ir = l.b;
    switch (kind) {
    case ir::OpKind::ReduceMax:
      return ir.CreateBinaryIntrinsic(isFloat      ? llvm::Intrinsic::maximum
                                      : isUnsigned ? llvm::Intrinsic::umax
                                                   : llvm::Intrinsic::smax,
                                      a, b);
    case ir::OpKind::ReduceMin:
      return ir.CreateBinaryIntrinsic(isFloat      ? llvm::Intrinsic::minimum
                                      : isUnsigned ? llvm::Intrinsic::umin
                                                   : llvm::Intrinsic::smin,
                                      a, b);
    default:
      return isFloat ? ir.CreateFAdd(a, b) : ir.CreateAdd(a, b);
    }
  }

  llvm::Value *identity(llvm::Type *t) const {
    double inf = std::numeric_limits<double>::infinity();
    if (isFloat)
      return llvm::ConstantFP::get(t, kind == ir::OpKind::ReduceMax   ? -inf
                                      : kind == ir::OpKind::ReduceMin ? inf
                                                                      : 0.0);
    unsigned bits = llvm::cast<llvm::IntegerType>(t)->getBitWidth();
    if (kind == ir::OpKind::ReduceMax)
      return llvm::ConstantInt::get(t, isUnsigned ? llvm::APInt::getMinValue(bits)
                                                  : llvm::APInt::getSignedMinValue(bits));
    if (kind == ir::OpKind::ReduceMin)
      return llvm::ConstantInt::get(t, isUnsigned ? llvm::APInt::getMaxValue(bits)
                                                  : llvm::APInt::getSignedMaxValue(bits));
    return llvm::ConstantInt::get(t, 0);
  }
};

} // namespace

bool isReduction(ir::OpKind k) {
  return k == ir::OpKind::ReduceMax || k == ir::OpKind::ReduceMin || k == ir::OpKind::ReduceSum;
}

bool lowerReduction(Lowering &l, const ir::Op &op) {
  if (!isReduction(op.kind()))
    return false;
  auto &b = l.b;
  const ir::Value *in = op.operand(0);
  const ir::Value *res = op.result();
  llvm::Type *resultTy = l.elementType(res->type());
  bool narrowFloat = in->type().isFloat() && !resultTy->isFloatTy();
  llvm::Type *accTy = narrowFloat ? b.getFloatTy() : resultTy; // f16/bf16 reduce in f32
  Combiner combine{l, op.kind(), in->type().isFloat(), in->type().isUnsigned()};
  ir::LayoutMap inMap(*in->layout(), in->type().shape());
  int axis = inMap.rootDim(int(op.intAttr("axis")));
  bool scalar = !res->type().isBlock();
  std::optional<ir::LayoutMap> outMap;
  if (!scalar)
    outMap.emplace(*res->layout(), res->type().shape());
  int64_t outCount = scalar ? 1 : outMap->elementsPerThread();

  // 1. Within the thread: elements that differ only along the axis meet in one accumulator;
  // copies of an element along the axis held by another thread count as the identity.
  const Elements &elems = l.get(in);
  std::vector<llvm::Value *> acc(size_t(outCount), nullptr);
  std::vector<std::vector<llvm::Value *>> parts(static_cast<size_t>(outCount));
  for (size_t k = 0; k < elems.size(); ++k) {
    llvm::Value *v = narrowFloat ? b.CreateFPExt(elems[k], accTy) : elems[k];
    if (llvm::Value *owns = l.ownsElement(in, int64_t(k), axis))
      v = b.CreateSelect(owns, v, combine.identity(accTy));
    size_t slot = 0;
    if (!scalar) {
      std::vector<int64_t> index = inMap.registerIndex(int64_t(k));
      index[size_t(axis)] = 0;
      slot = size_t(outMap->registerNumber(index));
    }
    parts[slot].push_back(v);
  }
  // Into kChains running partials, then pairwise: a thread's 64 scores meet in 10 dependent
  // steps, not 63, while at most kChains partials are live beside the elements (a full tree's
  // 32 made the softmax of 16384 fp32 on 16 warps spill).
  constexpr size_t kChains = 8;
  for (size_t slot = 0; slot < parts.size(); ++slot) {
    std::vector<llvm::Value *> &p = parts[slot];
    if (p.size() > kChains) {
      std::vector<llvm::Value *> chains(p.begin(), p.begin() + kChains);
      for (size_t i = kChains; i < p.size(); ++i)
        chains[i % kChains] = combine(chains[i % kChains], p[i]);
      p = std::move(chains);
    }
    while (p.size() > 1) {
      std::vector<llvm::Value *> next;
      for (size_t i = 0; i + 1 < p.size(); i += 2)
        next.push_back(combine(p[i], p[i + 1]));
      if (p.size() % 2)
        next.push_back(p.back());
      p = std::move(next);
    }
    acc[slot] = p.empty() ? nullptr : p[0];
  }
  // 2. Across the lanes along the axis.
  const ir::Layout &root = inMap.root();
  int64_t lanes = root.threadsPerWarp()[size_t(axis)];
  for (int64_t offset = lanes / 2; offset >= 1; offset /= 2)
    for (auto &a : acc)
      a = combine(a, shuffleXor(l, a, int(offset * inMap.laneStride(axis))));
  // 3. Across the warps along the axis, through shared memory: slot [bank][element][warp].
  int64_t warps = root.warpsPerCTA()[size_t(axis)];
  if (warps > 1) {
    int64_t elements = scalar ? 1 : res->type().numElements();
    int64_t base = op.intAttr("smem_offset");
    llvm::Value *bank = b.CreateLoad(b.getInt32Ty(), l.reductionBank);
    b.CreateStore(b.CreateXor(bank, b.getInt32(1)), l.reductionBank);
    llvm::Value *site = l.programSmem(base);
    llvm::Value *slots =
        b.CreateGEP(accTy, site, b.CreateMul(bank, b.getInt32(int32_t(elements * warps))));
    // Each result element's first slot: its row-major index in the result, times the warps.
    auto elementSlots = [&](int64_t k) -> llvm::Value * {
      if (scalar)
        return slots;
      llvm::Value *flat = l.rowMajorIndex(res, k);
      return b.CreateGEP(accTy, slots, b.CreateMul(flat, b.getInt32(int32_t(warps))));
    };
    llvm::Value *warp = l.warpCoordinate(inMap, axis);
    l.ifThen(b.CreateICmpEQ(l.laneCoordinate(inMap, axis), b.getInt32(0)), "reduce.write", [&] {
      for (int64_t k = 0; k < outCount; ++k)
        b.CreateStore(acc[size_t(k)], b.CreateGEP(accTy, elementSlots(k), warp));
    });
    l.barrier();
    for (int64_t k = 0; k < outCount; ++k) {
      llvm::Value *first = elementSlots(k);
      llvm::Value *total = nullptr;
      for (int64_t w = 0; w < warps; ++w) {
        llvm::Value *part =
            b.CreateLoad(accTy, b.CreateGEP(accTy, first, b.getInt32(int32_t(w))));
        total = total ? combine(total, part) : part;
      }
      acc[size_t(k)] = total;
    }
  }
  Elements out;
  for (llvm::Value *a : acc)
    out.push_back(narrowFloat ? b.CreateFPTrunc(a, resultTy) : a);
  l.set(res, std::move(out));
  return true;
}

} // namespace tritium::codegen
