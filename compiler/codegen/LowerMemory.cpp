// Lowering of loads and stores. Masked accesses become predicated PTX (`@p ld.global`), as
// Triton emits them, so a masked-off lane never touches memory and needs no branch; unmasked
// ones are plain LLVM loads and stores that the backend is free to schedule.
#include "compiler/codegen/Lowering.h"

#include <llvm/IR/InlineAsm.h>

namespace tritium::codegen {

namespace {

// PTX register class and bit width of an element type in inline asm.
struct AsmType {
  llvm::Type *intTy;
  const char *constraint;
  int bits;
};

AsmType asmTypeOf(Lowering &l, llvm::Type *t) {
  unsigned bits = t->getPrimitiveSizeInBits();
  if (t->isPointerTy())
    bits = 64;
  switch (bits) {
  case 16: return {l.b.getInt16Ty(), "h", 16};
  case 32: return {l.b.getInt32Ty(), "r", 32};
  case 64: return {l.b.getInt64Ty(), "l", 64};
  default: internalError("unsupported memory element width " + std::to_string(bits));
  }
}

llvm::Value *toBits(Lowering &l, llvm::Value *v, const AsmType &a) {
  if (v->getType()->isPointerTy())
    return l.b.CreatePtrToInt(v, a.intTy);
  return l.b.CreateBitCast(v, a.intTy);
}

llvm::Value *fromBits(Lowering &l, llvm::Value *v, llvm::Type *t) {
  if (t->isPointerTy())
    return l.b.CreateIntToPtr(v, t);
  return l.b.CreateBitCast(v, t);
}

// @pred ld.global.bN dst, [ptr]; with dst preset to `other`.
llvm::Value *predicatedLoad(Lowering &l, llvm::Type *ty, llvm::Value *ptr, llvm::Value *pred,
                            llvm::Value *other) {
  AsmType a = asmTypeOf(l, ty);
  std::string bits = std::to_string(a.bits);
  std::string text = "mov.b" + bits + " $0, $1;\n\t@$2 ld.global.b" + bits + " $0, [$3];";
  std::string constraints = std::string("=") + a.constraint + "," + a.constraint + ",b,l";
  auto *fnTy = llvm::FunctionType::get(
      a.intTy, {a.intTy, l.b.getInt1Ty(), ptr->getType()}, false);
  auto *asmFn = llvm::InlineAsm::get(fnTy, text, constraints, /*hasSideEffects=*/true);
  llvm::Value *raw = l.b.CreateCall(asmFn, {toBits(l, other, a), pred, ptr});
  return fromBits(l, raw, ty);
}

void predicatedStore(Lowering &l, llvm::Value *ptr, llvm::Value *value, llvm::Value *pred) {
  AsmType a = asmTypeOf(l, value->getType());
  std::string text = "@$0 st.global.b" + std::to_string(a.bits) + " [$1], $2;";
  std::string constraints = std::string("b,l,") + a.constraint + ",~{memory}";
  auto *fnTy = llvm::FunctionType::get(l.b.getVoidTy(),
                                       {l.b.getInt1Ty(), ptr->getType(), a.intTy}, false);
  auto *asmFn = llvm::InlineAsm::get(fnTy, text, constraints, /*hasSideEffects=*/true);
  l.b.CreateCall(asmFn, {pred, ptr, toBits(l, value, a)});
}

llvm::Align alignOf(llvm::Type *t) {
  return llvm::Align(t->isPointerTy() ? 8 : std::max<uint64_t>(1, t->getPrimitiveSizeInBits() / 8));
}

} // namespace

bool lowerMemory(Lowering &l, const ir::Op &op) {
  auto &b = l.b;
  if (op.kind() == ir::OpKind::Load) {
    const ir::Value *res = op.result();
    llvm::Type *ty = l.elementType(res->type());
    const Elements &ptrs = l.get(op.operand(0));
    Elements out;
    for (size_t k = 0; k < ptrs.size(); ++k) {
      if (op.numOperands() == 3) {
        out.push_back(predicatedLoad(l, ty, ptrs[k], l.get(op.operand(1))[k],
                                     l.get(op.operand(2))[k]));
      } else {
        out.push_back(b.CreateAlignedLoad(ty, ptrs[k], alignOf(ty)));
      }
    }
    l.set(res, std::move(out));
    return true;
  }
  if (op.kind() == ir::OpKind::Store) {
    const ir::Value *ptrV = op.operand(0);
    const Elements &ptrs = l.get(ptrV);
    const Elements &vals = l.get(op.operand(1));
    for (size_t k = 0; k < ptrs.size(); ++k) {
      llvm::Value *pred = op.numOperands() == 3 ? l.get(op.operand(2))[k] : nullptr;
      // Copies of an element held by several threads are written by its owner only.
      if (ptrV->type().isBlock())
        if (llvm::Value *owns = l.ownsElement(ptrV, int64_t(k)))
          pred = pred ? b.CreateAnd(pred, owns) : owns;
      if (pred)
        predicatedStore(l, ptrs[k], vals[k], pred);
      else
        b.CreateAlignedStore(vals[k], ptrs[k], alignOf(vals[k]->getType()));
    }
    return true;
  }
  return false;
}

} // namespace tritium::codegen
