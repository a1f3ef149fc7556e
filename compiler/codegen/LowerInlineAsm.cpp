// Lowering of inline_asm: one LLVM inline asm call per `pack` of the thread's elements, its text
// handed to the NVPTX back end untouched (so to ptxas). Each register is built as the rules say
// (compiler/ir/InlineAsmRules.h): narrow elements packed into an integer, the first in the
// lowest bits, an 8-bit register widened to its letter; results are taken apart the same way. A
// thread whose element count is not a multiple of the pack fills the last call with zeros and
// drops what it gives for them.
#include "compiler/codegen/Lowering.h"
#include "compiler/ir/InlineAsmRules.h"

#include <llvm/IR/InlineAsm.h>

namespace tritium::codegen {

namespace {

int letterBits(char letter) {
  return letter == 'h' ? 16 : letter == 'l' || letter == 'd' ? 64 : 32;
}

llvm::Type *registerType(Lowering &l, char letter) {
  auto &b = l.b;
  switch (letter) {
  case 'f':
    return b.getFloatTy();
  case 'd':
    return b.getDoubleTy();
  default:
    return b.getIntNTy(unsigned(letterBits(letter)));
  }
}

// An element as integer bits of its width (pointers as i64).
llvm::Value *toBits(Lowering &l, llvm::Value *v) {
  auto &b = l.b;
  llvm::Type *t = v->getType();
  if (t->isPointerTy())
    return b.CreatePtrToInt(v, b.getInt64Ty());
  if (t->isIntegerTy())
    return v;
  return b.CreateBitCast(v, b.getIntNTy(t->getPrimitiveSizeInBits().getFixedValue()));
}

llvm::Value *fromBits(Lowering &l, llvm::Value *bits, llvm::Type *t) {
  auto &b = l.b;
  if (t->isPointerTy())
    return b.CreateIntToPtr(bits, t);
  return t->isIntegerTy() ? bits : b.CreateBitCast(bits, t);
}

} // namespace

bool lowerInlineAsm(Lowering &l, const ir::Op &op) {
  if (op.kind() != ir::OpKind::InlineAsm)
    return false;
  auto &b = l.b;
  int64_t pack = op.intAttr("pack");
  std::vector<ir::AsmConstraint> constraints = ir::parseAsmConstraints(op.strAttr("constraints"));
  std::string llvmConstraints;
  for (const ir::AsmConstraint &c : constraints)
    llvmConstraints += std::string(llvmConstraints.empty() ? "" : ",") + (c.output ? "=" : "") +
                       (c.earlyClobber ? "&" : "") + c.letter;
  std::vector<llvm::Type *> outTypes, inTypes;
  for (const ir::AsmConstraint &c : constraints)
    (c.output ? outTypes : inTypes).push_back(registerType(l, c.letter));
  llvm::Type *returnType = outTypes.size() == 1 ? outTypes[0]
                                                 : llvm::StructType::get(l.ctx, outTypes);
  auto *asmFn = llvm::InlineAsm::get(llvm::FunctionType::get(returnType, inTypes, false),
                                     op.strAttr("asm"), llvmConstraints,
                                     /*hasSideEffects=*/op.intAttr("pure") == 0);

  const ir::Value *first = op.operand(0);
  int64_t count = l.elementsPerThread(first);
  std::vector<Elements> results(op.numResults());
  for (int64_t start = 0; start < count; start += pack) {
    // The registers of the arguments, in order.
    std::vector<llvm::Value *> ins;
    for (unsigned a = 0; a < op.numOperands(); ++a) {
      const ir::Value *arg = op.operand(a);
      const Elements &elems = l.get(arg);
      int perRegister = ir::asmElementsPerRegister(arg->type().element(), pack);
      int elemBits = ir::asmRegisterBits(arg->type().element(), pack) / perRegister;
      for (int64_t r = 0; r < pack / perRegister; ++r) {
        llvm::Value *bits = b.getIntN(unsigned(elemBits * perRegister), 0);
        for (int j = 0; j < perRegister; ++j) {
          int64_t k = start + r * perRegister + j;
          llvm::Value *e = k < count ? toBits(l, elems[size_t(k)])
                                     : llvm::Constant::getNullValue(b.getIntNTy(unsigned(elemBits)));
          e = b.CreateZExt(e, bits->getType());
          bits = perRegister == 1 ? e : b.CreateOr(bits, b.CreateShl(e, uint64_t(elemBits * j)));
        }
        llvm::Type *regTy = inTypes[ins.size()];
        if (regTy->isIntegerTy() && letterBits(constraints[outTypes.size() + ins.size()].letter) >
                                        int(bits->getType()->getIntegerBitWidth()))
          bits = b.CreateZExt(bits, regTy); // an 8-bit register in h or r
        ins.push_back(regTy->isIntegerTy() ? bits : b.CreateBitCast(bits, regTy));
      }
    }
    llvm::Value *call = b.CreateCall(asmFn, ins);
    // The results' registers, in order, taken apart into elements.
    unsigned out = 0;
    for (unsigned i = 0; i < op.numResults(); ++i) {
      const ir::Value *res = op.result(i);
      llvm::Type *elemTy = l.elementType(res->type());
      int perRegister = ir::asmElementsPerRegister(res->type().element(), pack);
      int elemBits = ir::asmRegisterBits(res->type().element(), pack) / perRegister;
      for (int64_t r = 0; r < pack / perRegister; ++r, ++out) {
        llvm::Value *reg = outTypes.size() == 1 ? call : b.CreateExtractValue(call, {out});
        llvm::Value *bits = reg->getType()->isIntegerTy()
                                ? reg
                                : b.CreateBitCast(reg, b.getIntNTy(unsigned(letterBits(
                                                           constraints[out].letter))));
        for (int j = 0; j < perRegister; ++j) {
          int64_t k = start + r * perRegister + j;
          if (k >= count)
            continue;
          llvm::Value *e = b.CreateTrunc(b.CreateLShr(bits, uint64_t(elemBits * j)),
                                         b.getIntNTy(unsigned(elemBits)));
          results[i].push_back(fromBits(l, e, elemTy));
        }
      }
    }
  }
  for (unsigned i = 0; i < op.numResults(); ++i)
    l.set(op.result(i), std::move(results[i]));
  return true;
}

} // namespace tritium::codegen
