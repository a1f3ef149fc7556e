// See Mbarrier.h.
#include "compiler/codegen/Mbarrier.h"

#include <llvm/IR/InlineAsm.h>

#include <vector>

namespace tritium::codegen {

void emitAsm(Lowering &l, const std::string &text, const std::string &constraints,
             llvm::ArrayRef<llvm::Value *> args) {
  std::vector<llvm::Type *> types;
  for (llvm::Value *a : args)
    types.push_back(a->getType());
  auto *fnTy = llvm::FunctionType::get(l.b.getVoidTy(), types, false);
  std::string clobbers = constraints.empty() ? "~{memory}" : constraints + ",~{memory}";
  l.b.CreateCall(llvm::InlineAsm::get(fnTy, text, clobbers, /*hasSideEffects=*/true), args);
}

llvm::Value *sharedAddress(Lowering &l, llvm::Value *offset) {
  auto &b = l.b;
  llvm::Value *p = b.CreateGEP(b.getInt8Ty(), l.smem, b.CreateZExt(offset, b.getInt64Ty()));
  return b.CreateTrunc(b.CreatePtrToInt(p, b.getInt64Ty()), b.getInt32Ty());
}

void waitParity(Lowering &l, llvm::Value *barrier, llvm::Value *parity) {
  // The label is local to the braces, so every copy of this text may use the same one.
  emitAsm(l,
          "{\n\t.reg .pred ready;\n\twait:\n\t"
          "mbarrier.try_wait.parity.shared::cta.b64 ready, [$0], $1;\n\t"
          "@!ready bra wait;\n\t}",
          "r,r", {barrier, parity});
}

} // namespace tritium::codegen
