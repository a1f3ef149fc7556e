// Lowering of reductions over a 1-D block: each thread combines its own elements, a warp
// combines its lanes with butterfly shuffles, and when there are several warps each warp's
// lane 0 leaves its partial in shared memory for every thread to combine after a barrier. The
// result is uniform across the CTA.
//
// One barrier per reduction is enough: each reduction has two banks of slots, and successive
// reductions (of any site) alternate between them. The next write into the bank a reduction
// just read is then at least two reductions later, so the barrier of the reduction in between
// orders every thread's reads of the old partials before any warp's write of new ones.
#include "compiler/codegen/Lowering.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

#include <limits>

namespace tritium::codegen {

namespace {

struct Combiner {
  Lowering &l;
  bool isMax;
  bool isFloat;

  llvm::Value *operator()(llvm::Value *a, llvm::Value *b) const {
    auto &ir = l.b;
    if (isMax)
      return ir.CreateBinaryIntrinsic(isFloat ? llvm::Intrinsic::maximum : llvm::Intrinsic::smax,
                                      a, b);
    return isFloat ? ir.CreateFAdd(a, b) : ir.CreateAdd(a, b);
  }

  llvm::Value *identity(llvm::Type *t) const {
    if (isFloat)
      return llvm::ConstantFP::get(t, isMax ? -std::numeric_limits<double>::infinity() : 0.0);
    auto *it = llvm::cast<llvm::IntegerType>(t);
    return isMax ? llvm::ConstantInt::get(t, llvm::APInt::getSignedMinValue(it->getBitWidth()))
                 : llvm::ConstantInt::get(t, 0);
  }
};

// shfl.sync.bfly over 32-bit lanes; 64-bit values travel as two halves.
llvm::Value *shuffleXor(Lowering &l, llvm::Value *v, int offset) {
  auto &b = l.b;
  llvm::Value *mask = b.getInt32(-1), *off = b.getInt32(offset), *clamp = b.getInt32(0x1f);
  llvm::Type *t = v->getType();
  if (t->isFloatTy())
    return l.intrinsic(llvm::Intrinsic::nvvm_shfl_sync_bfly_f32, {}, {mask, v, off, clamp});
  if (t->isIntegerTy(32))
    return l.intrinsic(llvm::Intrinsic::nvvm_shfl_sync_bfly_i32, {}, {mask, v, off, clamp});
  if (t->isIntegerTy(64)) {
    llvm::Value *lo = b.CreateTrunc(v, b.getInt32Ty());
    llvm::Value *hi = b.CreateTrunc(b.CreateLShr(v, 32), b.getInt32Ty());
    lo = shuffleXor(l, lo, offset);
    hi = shuffleXor(l, hi, offset);
    return b.CreateOr(b.CreateZExt(lo, t), b.CreateShl(b.CreateZExt(hi, t), 32));
  }
  internalError("shuffle of an unsupported type");
}

} // namespace

bool lowerReduction(Lowering &l, const ir::Op &op) {
  if (op.kind() != ir::OpKind::ReduceMax && op.kind() != ir::OpKind::ReduceSum)
    return false;
  auto &b = l.b;
  const ir::Value *in = op.operand(0);
  if (in->type().rank() != 1)
    internalError("reductions of rank > 1 are not lowered yet");
  llvm::Type *resultTy = l.elementType(op.result()->type());
  bool narrowFloat = in->type().isFloat() && !resultTy->isFloatTy();
  llvm::Type *accTy = narrowFloat ? b.getFloatTy() : resultTy; // f16/bf16 reduce in f32
  Combiner combine{l, op.kind() == ir::OpKind::ReduceMax, in->type().isFloat()};

  // 1. Within the thread; copies of elements owned elsewhere count as the identity.
  const Elements &elems = l.get(in);
  llvm::Value *acc = nullptr;
  for (size_t k = 0; k < elems.size(); ++k) {
    llvm::Value *v = narrowFloat ? b.CreateFPExt(elems[k], accTy) : elems[k];
    if (llvm::Value *owns = l.ownsElement(in, int64_t(k)))
      v = b.CreateSelect(owns, v, combine.identity(accTy));
    acc = acc ? combine(acc, v) : v;
  }
  // 2. Across the lanes of a warp.
  for (int offset = 16; offset >= 1; offset /= 2)
    acc = combine(acc, shuffleXor(l, acc, offset));
  // 3. Across warps, through shared memory.
  if (l.numWarps > 1) {
    int64_t base = op.intAttr("smem_offset");
    llvm::Value *bank = b.CreateLoad(b.getInt32Ty(), l.reductionBank);
    b.CreateStore(b.CreateXor(bank, b.getInt32(1)), l.reductionBank);
    llvm::Value *site = b.CreateGEP(b.getInt8Ty(), l.smem, b.getInt64(base));
    llvm::Value *slots = b.CreateGEP(accTy, site, b.CreateMul(bank, b.getInt32(l.numWarps)));
    llvm::Function *fn = l.fn;
    auto *write = llvm::BasicBlock::Create(l.ctx, "reduce.write", fn);
    auto *join = llvm::BasicBlock::Create(l.ctx, "reduce.join", fn);
    b.CreateCondBr(b.CreateICmpEQ(l.laneId, b.getInt32(0)), write, join);
    b.SetInsertPoint(write);
    b.CreateStore(acc, b.CreateGEP(accTy, slots, l.warpId));
    b.CreateBr(join);
    b.SetInsertPoint(join);
    l.barrier();
    llvm::Value *total = nullptr;
    for (int w = 0; w < l.numWarps; ++w) {
      llvm::Value *part = b.CreateLoad(accTy, b.CreateGEP(accTy, slots, b.getInt32(w)));
      total = total ? combine(total, part) : part;
    }
    acc = total;
  }
  l.set(op.result(), {narrowFloat ? b.CreateFPTrunc(acc, resultTy) : acc});
  return true;
}

} // namespace tritium::codegen
