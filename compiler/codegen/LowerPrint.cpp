// Lowering of print (Triton's device_print) through CUDA's vprintf(format, args): one call per
// element this thread owns, "pid (P) idx (I, J..) prefix value\n", the interpreter's format. Scalars
// print once per program (thread 0). The format string is a module constant in the generic
// address space; the argument buffer is a stack slot of the C layout vprintf expects (each
// argument aligned to its size, floats promoted to double).
#include "compiler/codegen/Lowering.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

namespace tritium::codegen {

namespace {

llvm::FunctionCallee vprintf(Lowering &l) {
  auto *ptr = llvm::PointerType::get(l.ctx, 0);
  return l.mod.getOrInsertFunction("vprintf",
                                   llvm::FunctionType::get(l.b.getInt32Ty(), {ptr, ptr}, false));
}

std::string escapePercent(const std::string &s) {
  std::string out;
  for (char c : s)
    out += c == '%' ? std::string("%%") : std::string(1, c);
  return out;
}

} // namespace

// device_assert: where the condition is false, CUDA's __assertfail(message, file, line,
// function, 1) prints "file:line: function: block [..], thread [..] Assertion `message` failed."
// and stops the kernel (the launch then fails with an illegal-instruction error).
static void lowerAssert(Lowering &l, const ir::Op &op) {
  auto &b = l.b;
  auto *ptr = llvm::PointerType::get(l.ctx, 0);
  llvm::FunctionCallee fail = l.mod.getOrInsertFunction(
      "__assertfail", llvm::FunctionType::get(b.getVoidTy(),
                                              {ptr, ptr, b.getInt32Ty(), ptr, b.getInt64Ty()},
                                              false));
  const SourceLoc &loc = op.loc();
  llvm::Value *message = b.CreateGlobalString(op.strAttr("message"), "assert.message", 0, &l.mod);
  llvm::Value *file = b.CreateGlobalString(loc.known() ? loc.file : "?", "assert.file", 0, &l.mod);
  llvm::Value *function = b.CreateGlobalString(l.kernel.name(), "assert.function", 0, &l.mod);
  for (llvm::Value *ok : l.get(op.operand(0)))
    l.ifThen(b.CreateNot(ok), "assert.fail", [&] {
      b.CreateCall(fail, {message, file, b.getInt32(int32_t(loc.line)), function, b.getInt64(1)});
    });
}

bool lowerPrint(Lowering &l, const ir::Op &op) {
  if (op.kind() == ir::OpKind::Assert) {
    lowerAssert(l, op);
    return true;
  }
  if (op.kind() != ir::OpKind::Print)
    return false;
  auto &b = l.b;
  const ir::Value *v = op.operand(0);
  const ir::Type &t = v->type();
  bool block = t.isBlock();

  // The printed value's C type and conversion.
  const char *valueFormat = "%d";
  llvm::Type *valueTy = b.getInt32Ty();
  if (t.isFloat()) {
    valueFormat = "%f";
    valueTy = b.getDoubleTy();
  } else if (t.isPtr()) {
    valueFormat = "0x%llx";
    valueTy = b.getInt64Ty();
  } else if (l.elementType(t)->getIntegerBitWidth() == 64) { // i64, u64
    valueFormat = t.isUnsigned() ? "%llu" : "%lld";
    valueTy = b.getInt64Ty();
  } else if (t.isUnsigned()) {
    valueFormat = "%u";
  }
  const std::string &prefix = op.strAttr("prefix");
  // Blocks of rank r print r coordinates: "idx (1, 2) ".
  std::string index;
  for (int d = 0; d < t.rank(); ++d)
    index += d ? ", %d" : "idx (%d";
  if (block)
    index += ") ";
  std::string format = std::string("pid (%d) ") + index +
                       (prefix.empty() ? "" : escapePercent(prefix) + " ") + valueFormat + "\n";
  llvm::Value *fmt = b.CreateGlobalString(format, "printf.format", 0, &l.mod);

  std::vector<llvm::Type *> fields{b.getInt32Ty()};
  for (int d = 0; d < t.rank(); ++d)
    fields.push_back(b.getInt32Ty());
  fields.push_back(valueTy);
  auto *argsTy = llvm::StructType::get(l.ctx, fields);
  // One stack slot per print, in the entry block so that loops do not grow the stack.
  llvm::BasicBlock &entry = l.fn->getEntryBlock();
  llvm::IRBuilder<> entryBuilder(&entry, entry.getFirstInsertionPt());
  llvm::AllocaInst *slot = entryBuilder.CreateAlloca(argsTy, nullptr, "printf.args");
  llvm::Value *args = slot->getType()->getPointerAddressSpace() == 0
                          ? static_cast<llvm::Value *>(slot)
                          : b.CreateAddrSpaceCast(slot, llvm::PointerType::get(l.ctx, 0));

  llvm::Value *pid = l.intrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x, {}, {});
  const Elements &elems = l.get(v);
  for (int64_t k = 0; k < (block ? l.elementsPerThread(v) : 1); ++k) {
    llvm::Value *pred = block ? l.ownsElement(v, k) : b.CreateICmpEQ(l.tid, b.getInt32(0));
    llvm::BasicBlock *cont = nullptr;
    if (pred) {
      auto *then = llvm::BasicBlock::Create(l.ctx, "print", l.fn);
      cont = llvm::BasicBlock::Create(l.ctx, "print.cont", l.fn);
      b.CreateCondBr(pred, then, cont);
      b.SetInsertPoint(then);
    }
    llvm::Value *x = elems.at(size_t(k));
    if (t.isFloat())
      x = b.CreateFPExt(x, valueTy);
    else if (t.isPtr())
      x = b.CreatePtrToInt(x, valueTy);
    else if (x->getType() != valueTy) // narrower integers (and i1) widened by their sign
      x = t.isUnsigned() || x->getType()->isIntegerTy(1) ? b.CreateZExt(x, valueTy)
                                                         : b.CreateSExt(x, valueTy);
    unsigned field = 0;
    b.CreateStore(pid, b.CreateStructGEP(argsTy, slot, field++));
    if (block)
      for (llvm::Value *c : l.coordinates(v, k))
        b.CreateStore(c, b.CreateStructGEP(argsTy, slot, field++));
    b.CreateStore(x, b.CreateStructGEP(argsTy, slot, field));
    b.CreateCall(vprintf(l), {fmt, args});
    if (cont) {
      b.CreateBr(cont);
      b.SetInsertPoint(cont);
    }
  }
  return true;
}

} // namespace tritium::codegen
