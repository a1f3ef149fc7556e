// Warp shuffles of any element type (shfl.sync in its four modes): PTX moves 32-bit registers,
// so 64-bit values travel as two halves, narrower ones widened, 16-bit floats and pointers as
// integers of their width.
#include "compiler/codegen/Lowering.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

namespace tritium::codegen {

llvm::Value *shuffle(Lowering &l, llvm::Value *v, Shuffle mode, llvm::Value *laneOrDelta) {
  auto &b = l.b;
  llvm::Type *t = v->getType();
  if (t->isFloatTy() || t->isIntegerTy(32)) {
    bool f = t->isFloatTy();
    llvm::Intrinsic::ID id;
    switch (mode) {
    case Shuffle::Xor:
      id = f ? llvm::Intrinsic::nvvm_shfl_sync_bfly_f32 : llvm::Intrinsic::nvvm_shfl_sync_bfly_i32;
      break;
    case Shuffle::Up:
      id = f ? llvm::Intrinsic::nvvm_shfl_sync_up_f32 : llvm::Intrinsic::nvvm_shfl_sync_up_i32;
      break;
    case Shuffle::Down:
      id = f ? llvm::Intrinsic::nvvm_shfl_sync_down_f32 : llvm::Intrinsic::nvvm_shfl_sync_down_i32;
      break;
    default:
      id = f ? llvm::Intrinsic::nvvm_shfl_sync_idx_f32 : llvm::Intrinsic::nvvm_shfl_sync_idx_i32;
    }
    // The clamp: up reads no lane below 0, the other modes none above 31.
    llvm::Value *clamp = b.getInt32(mode == Shuffle::Up ? 0 : 0x1f);
    return l.intrinsic(id, {}, {b.getInt32(-1), v, laneOrDelta, clamp});
  }
  if (t->isHalfTy() || t->isBFloatTy())
    return b.CreateBitCast(shuffle(l, b.CreateBitCast(v, b.getInt16Ty()), mode, laneOrDelta), t);
  if (t->isPointerTy())
    return b.CreateIntToPtr(shuffle(l, b.CreatePtrToInt(v, b.getInt64Ty()), mode, laneOrDelta), t);
  if (t->isIntegerTy(8) || t->isIntegerTy(16) || t->isIntegerTy(1))
    return b.CreateTrunc(shuffle(l, b.CreateZExt(v, b.getInt32Ty()), mode, laneOrDelta), t);
  if (t->isIntegerTy(64)) {
    llvm::Value *lo = b.CreateTrunc(v, b.getInt32Ty());
    llvm::Value *hi = b.CreateTrunc(b.CreateLShr(v, 32), b.getInt32Ty());
    lo = shuffle(l, lo, mode, laneOrDelta);
    hi = shuffle(l, hi, mode, laneOrDelta);
    return b.CreateOr(b.CreateZExt(lo, t), b.CreateShl(b.CreateZExt(hi, t), 32));
  }
  internalError("shuffle of an unsupported type");
}

llvm::Value *shuffleXor(Lowering &l, llvm::Value *v, int offset) {
  return shuffle(l, v, Shuffle::Xor, l.b.getInt32(offset));
}

} // namespace tritium::codegen
