// Lowering of atomics to PTX `atom` (inline assembly, so the semantics and scope are exactly the
// ones asked for): each element once, by the thread that owns it, predicated by the mask; the
// old value comes back (0 where masked off). A scalar atomic is done by the program's thread 0;
// its old value, and those of blocks whose elements have copies in several threads, reach every
// thread through shared memory between two barriers. Float max and min have no PTX atom: as
// Triton, a non-negative value takes the signed integer max (min) of the bits, a negative one
// the unsigned integer min (max). In a kernel with TMA stores, a release first waits for their
// writes.
#include "compiler/codegen/Lowering.h"
#include "compiler/gpu/GpuPasses.h"

#include <llvm/IR/InlineAsm.h>

namespace tritium::codegen {

namespace {

struct AtomicType {
  const char *suffix;     // ".f32", ".u32", ...
  const char *constraint; // "r", "l", "h", "f"
};

AtomicType atomicType(const ir::Type &t, const std::string &op) {
  int bits = ir::bitWidth(t.kind());
  bool bitwise = op == "and" || op == "or" || op == "xor" || op == "xchg" || op == "cas";
  if (t.kind() == ir::ScalarKind::F32)
    return {bitwise ? ".b32" : ".f32", "f"};
  if (t.kind() == ir::ScalarKind::F16)
    return {bitwise ? ".b16" : ".noftz.f16", "h"};
  if (t.kind() == ir::ScalarKind::BF16)
    return {bitwise ? ".b16" : ".noftz.bf16", "h"};
  if (bitwise)
    return {bits == 64 ? ".b64" : ".b32", bits == 64 ? "l" : "r"};
  if (bits == 64)
    return {t.isUnsigned() || op == "add" ? ".u64" : ".s64", "l"};
  return {t.isUnsigned() ? ".u32" : ".s32", "r"};
}

// `@pred atom.sem.scope.global.op.type old, [ptr], args...` with old = 0 where pred is false.
// `order` is ".sem.scope", `opName` the PTX operation ("add", "exch", "cas", ...).
llvm::Value *atom(Lowering &l, const std::string &order, const std::string &opName,
                  const AtomicType &t, llvm::Type *ty, llvm::Value *pred, llvm::Value *ptr,
                  std::vector<llvm::Value *> args) {
  auto &b = l.b;
  if (t.constraint[0] == 'h' && !ty->isIntegerTy()) { // 16-bit floats travel as their bits
    for (auto &a : args)
      a = b.CreateBitCast(a, b.getInt16Ty());
    return b.CreateBitCast(atom(l, order, opName, t, b.getInt16Ty(), pred, ptr, args), ty);
  }
  std::string zero = t.constraint[0] == 'f' ? "0f00000000" : "0";
  std::string movType = t.constraint[0] == 'l' ? ".b64" : t.constraint[0] == 'h' ? ".b16" : ".b32";
  std::string text = "mov" + movType + " $0, " + zero + ";\n\t@$1 atom" + order + ".global." +
                     opName + t.suffix + " $0, [$2]";
  std::string constraints = std::string("=") + t.constraint + ",b,l";
  std::vector<llvm::Type *> argTys{b.getInt1Ty(), ptr->getType()};
  for (size_t i = 0; i < args.size(); ++i) {
    text += ", $" + std::to_string(3 + i);
    constraints += std::string(",") + t.constraint;
    argTys.push_back(args[i]->getType());
  }
  text += ";";
  constraints += ",~{memory}";
  auto *fnTy = llvm::FunctionType::get(ty, argTys, false);
  std::vector<llvm::Value *> all{pred, ptr};
  all.insert(all.end(), args.begin(), args.end());
  return b.CreateCall(llvm::InlineAsm::get(fnTy, text, constraints, true), all);
}

// Float max and min through the integer atomics.
llvm::Value *floatMinMax(Lowering &l, const ir::Op &op, llvm::Value *pred, llvm::Value *ptr,
                         llvm::Value *val) {
  auto &b = l.b;
  std::string kind = op.strAttr("op");
  std::string order = "." + op.strAttr("sem") + "." + op.strAttr("scope");
  // f32 through its bits: ordered as signed ints when non-negative, reversed unsigned when not.
  llvm::Type *i32 = b.getInt32Ty();
  llvm::Value *bits = b.CreateBitCast(val, i32);
  llvm::Value *negative = b.CreateICmpSLT(bits, b.getInt32(0));
  AtomicType s{".s32", "r"}, u{".u32", "r"};
  llvm::Value *a = atom(l, order, kind, s, i32, b.CreateAnd(pred, b.CreateNot(negative)), ptr,
                        {bits});
  llvm::Value *c = atom(l, order, kind == "max" ? "min" : "max", u, i32,
                        b.CreateAnd(pred, negative), ptr, {bits});
  return b.CreateBitCast(b.CreateSelect(negative, c, a), val->getType());
}

} // namespace

bool lowerAtomic(Lowering &l, const ir::Op &op) {
  if (op.kind() == ir::OpKind::Barrier) {
    l.barrier();
    return true;
  }
  if (op.kind() != ir::OpKind::AtomicRMW && op.kind() != ir::OpKind::AtomicCAS)
    return false;
  auto &b = l.b;
  bool cas = op.kind() == ir::OpKind::AtomicCAS;
  const ir::Value *ptrV = op.operand(0), *res = op.result();
  const ir::Type &t = res->type();
  llvm::Type *ty = l.elementType(t);
  std::string kind = cas ? "cas" : op.strAttr("op");
  std::string prefix = "." + op.strAttr("sem") + "." + op.strAttr("scope");
  bool scalar = !ptrV->type().isBlock();
  bool staged = op.hasAttr("smem_offset");
  // A release publishes the program's earlier writes, and a TMA store's writes are performed by
  // the async proxy after the store op has ended: its issuing thread waits for them and fences
  // them for the generic proxy first (completeTensorStores), and a barrier puts every thread's
  // atomic after that.
  std::string sem = op.strAttr("sem");
  if (l.tensorStores && (sem == "release" || sem == "acq_rel")) {
    completeTensorStores(l);
    if (!scalar)
      l.barrier();
  }
  const Elements &ptrs = l.get(ptrV);
  Elements old;
  for (size_t k = 0; k < ptrs.size(); ++k) {
    llvm::Value *pred = b.getTrue();
    if (!cas && op.numOperands() >= 3)
      pred = l.get(op.operand(2))[k];
    if (scalar)
      pred = b.CreateAnd(pred, b.CreateICmpEQ(l.tid, b.getInt32(0)));
    else if (llvm::Value *owns = l.ownsElement(ptrV, int64_t(k)))
      pred = b.CreateAnd(pred, owns);
    llvm::Value *val = l.get(op.operand(1))[k];
    if (t.isFloat() && !cas && (kind == "max" || kind == "min")) {
      old.push_back(floatMinMax(l, op, pred, ptrs[k], val));
      continue;
    }
    AtomicType at = atomicType(t, kind);
    std::string ptxOp = kind == "xchg" ? "exch" : kind;
    std::vector<llvm::Value *> args{val};
    if (cas)
      args.push_back(l.get(op.operand(2))[k]);
    old.push_back(atom(l, prefix, ptxOp, at, ty, pred, ptrs[k], args));
  }
  if (staged) {
    // One thread did the work for several: its old value goes to every copy.
    llvm::Value *base = l.programSmem(op.intAttr("smem_offset"));
    // Each element's slot, written by its owner and read by every copy.
    std::vector<llvm::Value *> slots;
    for (size_t k = 0; k < old.size(); ++k)
      slots.push_back(scalar ? base : b.CreateGEP(ty, base, l.rowMajorIndex(res, int64_t(k))));
    l.barrier();
    for (size_t k = 0; k < old.size(); ++k) {
      llvm::Value *at = slots[k];
      llvm::Value *owner = scalar ? b.CreateICmpEQ(l.tid, b.getInt32(0)) : l.ownsElement(res, int64_t(k));
      if (owner)
        l.ifThen(owner, "atomic.share", [&] { b.CreateStore(old[k], at); });
      else
        b.CreateStore(old[k], at);
    }
    l.barrier();
    for (size_t k = 0; k < old.size(); ++k)
      old[k] = b.CreateLoad(ty, slots[k]);
  }
  l.set(res, std::move(old));
  return true;
}

} // namespace tritium::codegen
