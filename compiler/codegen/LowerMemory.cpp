// Lowering of loads and stores. Masked accesses become predicated PTX (`@p ld.global`), as
// Triton emits them, so a masked-off lane never touches memory and needs no branch; unmasked
// ones are plain LLVM loads and stores that the backend is free to schedule, unless they carry
// cache hints, which only inline PTX can spell (ld.global.cg, .L2::cache_hint).
#include "compiler/ir/TensorMap.h"
#include "compiler/codegen/Lowering.h"
#include "compiler/codegen/Pipelining.h"

#include <llvm/IR/InlineAsm.h>

#include <map>

namespace tritium::codegen {

namespace {

// A vector of `vec` elements moves as `count` words of `memBits` in memory (32-bit words, or one
// 16- or 8-bit word for a lone half or byte), held in registers of `bits` (PTX has no 8-bit
// registers: a byte travels in a 16-bit one, and mov has no .b8), so one PTX instruction
// carries up to 16 bytes of any element type.
struct Words {
  int bits;
  int count;
  const char *constraint;
  int memBits;
  llvm::Type *type(Lowering &l) const { return l.b.getIntNTy(unsigned(bits)); }
  llvm::Type *memType(Lowering &l) const { return l.b.getIntNTy(unsigned(memBits)); }
};

Words wordsFor(llvm::Type *elem, int64_t vec) {
  int64_t total = int64_t(elem->isPointerTy() ? 64 : elem->getPrimitiveSizeInBits()) * vec;
  if (total < 32)
    return {16, 1, "h", int(total)};
  return {32, int(total / 32), "r", 32};
}

// Packs elements [k, k+vec) of `elems` into words, and back.
std::vector<llvm::Value *> pack(Lowering &l, const Elements &elems, size_t k, int64_t vec,
                                const Words &w) {
  auto &b = l.b;
  llvm::Type *elemTy = elems[k]->getType();
  bool isPtr = elemTy->isPointerTy();
  llvm::Type *scalarTy = isPtr ? b.getInt64Ty() : elemTy;
  llvm::Value *v = llvm::PoisonValue::get(llvm::FixedVectorType::get(scalarTy, unsigned(vec)));
  for (int64_t j = 0; j < vec; ++j) {
    llvm::Value *e = isPtr ? b.CreatePtrToInt(elems[k + size_t(j)], scalarTy) : elems[k + size_t(j)];
    v = b.CreateInsertElement(v, e, uint64_t(j));
  }
  llvm::Value *words =
      b.CreateBitCast(v, llvm::FixedVectorType::get(w.memType(l), unsigned(w.count)));
  std::vector<llvm::Value *> out;
  for (int i = 0; i < w.count; ++i)
    out.push_back(b.CreateZExtOrBitCast(b.CreateExtractElement(words, uint64_t(i)), w.type(l)));
  return out;
}

void unpack(Lowering &l, const std::vector<llvm::Value *> &words, llvm::Type *elemTy, int64_t vec,
            const Words &w, Elements &out) {
  auto &b = l.b;
  llvm::Value *v =
      llvm::PoisonValue::get(llvm::FixedVectorType::get(w.memType(l), unsigned(w.count)));
  for (int i = 0; i < w.count; ++i)
    v = b.CreateInsertElement(v, b.CreateTruncOrBitCast(words[size_t(i)], w.memType(l)),
                              uint64_t(i));
  bool isPtr = elemTy->isPointerTy();
  llvm::Type *scalarTy = isPtr ? b.getInt64Ty() : elemTy;
  llvm::Value *elems = b.CreateBitCast(v, llvm::FixedVectorType::get(scalarTy, unsigned(vec)));
  for (int64_t j = 0; j < vec; ++j) {
    llvm::Value *e = b.CreateExtractElement(elems, uint64_t(j));
    out.push_back(isPtr ? b.CreateIntToPtr(e, elemTy) : e);
  }
}

std::string wordList(int first, int count) {
  if (count == 1)
    return "$" + std::to_string(first);
  std::string s = "{";
  for (int i = 0; i < count; ++i)
    s += (i ? ", $" : "$") + std::to_string(first + i);
  return s + "}";
}

std::string vectorSuffix(const Words &w) {
  return (w.count > 1 ? ".v" + std::to_string(w.count) : std::string()) + ".b" +
         std::to_string(w.memBits);
}

// The PTX qualifiers of a load's or store's cache hints: the cache operator (.cg), and for an
// eviction priority .L2::cache_hint with a policy register, plus the L1 priority where no cache
// operator is given (PTX takes one or the other: ".cg.L1::evict_first" does not assemble).
struct Hints {
  std::string qualifiers;
  llvm::Value *policy = nullptr; // the createpolicy register, when .L2::cache_hint is used
};

Hints hintsOf(Lowering &l, const ir::Op &op) {
  Hints h;
  if (op.hasAttr("cache"))
    h.qualifiers += "." + op.strAttr("cache");
  if (op.hasAttr("evict")) {
    if (!op.hasAttr("cache"))
      h.qualifiers += ".L1::" + op.strAttr("evict");
    h.qualifiers += ".L2::cache_hint";
    h.policy = cachePolicy(l, op);
  }
  return h;
}

// `@pred ld.global[.hints][.vN].bW {words}, [ptr]`, each output word preset to `other` where a
// predicate is given; without one the load is unconditional (an unmasked load with hints).
void asmLoad(Lowering &l, llvm::Type *elemTy, llvm::Value *ptr, llvm::Value *pred,
             const Elements *others, size_t k, int64_t vec, const Hints &hints, Elements &out) {
  auto &b = l.b;
  Words w = wordsFor(elemTy, vec);
  std::string text, constraints;
  for (int i = 0; i < w.count; ++i)
    constraints += std::string(i ? "," : "") + "=" + w.constraint;
  int next = w.count; // the first input operand
  std::vector<llvm::Value *> args;
  std::vector<llvm::Type *> argTys;
  if (pred) {
    for (int i = 0; i < w.count; ++i)
      text += "mov.b" + std::to_string(w.bits) + " $" + std::to_string(i) + ", $" +
              std::to_string(next + i) + ";\n\t";
    for (int i = 0; i < w.count; ++i)
      constraints += std::string(",") + w.constraint;
    args = pack(l, *others, k, vec, w);
    argTys.assign(size_t(w.count), w.type(l));
    next += w.count;
    text += "@$" + std::to_string(next++) + " ";
    constraints += ",b";
    args.push_back(pred);
    argTys.push_back(b.getInt1Ty());
  }
  text += "ld.global" + hints.qualifiers + vectorSuffix(w) + " " + wordList(0, w.count) + ", [$" +
          std::to_string(next++) + "]";
  constraints += ",l";
  args.push_back(ptr);
  argTys.push_back(ptr->getType());
  if (hints.policy) {
    text += ", $" + std::to_string(next++);
    constraints += ",l";
    args.push_back(hints.policy);
    argTys.push_back(hints.policy->getType());
  }
  text += ";";
  std::vector<llvm::Type *> outTys(size_t(w.count), w.type(l));
  llvm::Type *retTy = w.count == 1 ? outTys[0] : llvm::StructType::get(l.ctx, outTys);
  auto *asmFn = llvm::InlineAsm::get(llvm::FunctionType::get(retTy, argTys, false), text,
                                     constraints, /*hasSideEffects=*/true);
  llvm::Value *ret = b.CreateCall(asmFn, args);
  std::vector<llvm::Value *> words;
  for (int i = 0; i < w.count; ++i)
    words.push_back(w.count == 1 ? ret : b.CreateExtractValue(ret, unsigned(i)));
  unpack(l, words, elemTy, vec, w, out);
}

// `@pred st.global[.hints][.vN].bW [ptr], {words}`; without a predicate, unconditional.
void asmStore(Lowering &l, llvm::Value *ptr, const Elements &vals, size_t k, int64_t vec,
              llvm::Value *pred, const Hints &hints) {
  auto &b = l.b;
  Words w = wordsFor(vals[k]->getType(), vec);
  std::vector<llvm::Value *> args;
  std::vector<llvm::Type *> argTys;
  int next = pred ? 1 : 0; // the address operand
  std::string constraints = pred ? "b,l" : "l";
  std::string text = std::string(pred ? "@$0 " : "") + "st.global" + hints.qualifiers +
                     vectorSuffix(w) + " [$" + std::to_string(next) + "], " +
                     wordList(next + 1, w.count);
  if (pred) {
    args.push_back(pred);
    argTys.push_back(b.getInt1Ty());
  }
  args.push_back(ptr);
  argTys.push_back(ptr->getType());
  for (llvm::Value *word : pack(l, vals, k, vec, w)) {
    constraints += std::string(",") + w.constraint;
    args.push_back(word);
    argTys.push_back(w.type(l));
  }
  if (hints.policy) {
    text += ", $" + std::to_string(next + 1 + w.count);
    constraints += ",l";
    args.push_back(hints.policy);
    argTys.push_back(hints.policy->getType());
  }
  text += ";";
  constraints += ",~{memory}";
  auto *asmFn = llvm::InlineAsm::get(llvm::FunctionType::get(b.getVoidTy(), argTys, false), text,
                                     constraints, /*hasSideEffects=*/true);
  b.CreateCall(asmFn, args);
}

llvm::Align alignOf(llvm::Type *t, int64_t vec) {
  uint64_t bytes = t->isPointerTy() ? 8 : std::max<uint64_t>(1, t->getPrimitiveSizeInBits() / 8);
  return llvm::Align(bytes * uint64_t(vec));
}

} // namespace

llvm::Value *cachePolicy(Lowering &l, const ir::Op &op) {
  if (!op.hasAttr("evict"))
    return nullptr;
  // No side effects and no memory: LLVM may share one register between the accesses.
  auto *asmFn = llvm::InlineAsm::get(
      llvm::FunctionType::get(l.b.getInt64Ty(), false),
      "createpolicy.fractional.L2::" + op.strAttr("evict") + ".b64 $0, 1.0;", "=l",
      /*hasSideEffects=*/false);
  llvm::CallInst *call = l.b.CreateCall(asmFn);
  call->setDoesNotAccessMemory();
  call->setDoesNotThrow();
  return call;
}

bool lowerMemory(Lowering &l, const ir::Op &op) {
  auto &b = l.b;
  int64_t vec = op.hasAttr("vec") ? op.intAttr("vec") : 1;
  if (op.kind() == ir::OpKind::Load && op.hasAttr("pipelined")) {
    lowerPipelinedLoad(l, op, l.rings.at(op.parentBlock()->parentOp()));
    return true;
  }
  if (op.kind() == ir::OpKind::Load) {
    const ir::Value *res = op.result();
    llvm::Type *ty = l.elementType(res->type());
    const Elements &ptrs = l.get(op.operand(0));
    Elements out;
    Hints hints = hintsOf(l, op);
    // Elements of one thread that read the same address under the same mask (a block-table
    // entry broadcast over a page's tile) are loaded once: the masked loads are volatile
    // inline assembly, which LLVM does not merge.
    std::map<std::vector<llvm::Value *>, size_t> firstRead;
    for (size_t k = 0; k < ptrs.size(); k += size_t(vec)) {
      std::vector<llvm::Value *> key{ptrs[k]};
      if (ir::hasMask(op)) {
        key.push_back(l.get(op.operand(1))[k]);
        for (int64_t j = 0; j < vec; ++j)
          key.push_back(l.get(op.operand(2))[k + size_t(j)]);
      }
      auto [at, fresh] = firstRead.try_emplace(key, k);
      if (!fresh) {
        for (int64_t j = 0; j < vec; ++j)
          out.push_back(out[at->second + size_t(j)]);
        continue;
      }
      if (ir::hasMask(op)) {
        asmLoad(l, ty, ptrs[k], l.get(op.operand(1))[k], &l.get(op.operand(2)), k, vec, hints,
                out);
      } else if (!hints.qualifiers.empty()) {
        asmLoad(l, ty, ptrs[k], nullptr, nullptr, k, vec, hints, out);
      } else if (vec == 1) {
        out.push_back(b.CreateAlignedLoad(ty, ptrs[k], alignOf(ty, 1)));
      } else {
        llvm::Value *v = b.CreateAlignedLoad(llvm::FixedVectorType::get(ty, unsigned(vec)),
                                             ptrs[k], alignOf(ty, vec));
        for (int64_t j = 0; j < vec; ++j)
          out.push_back(b.CreateExtractElement(v, uint64_t(j)));
      }
    }
    l.set(res, std::move(out));
    return true;
  }
  if (op.kind() == ir::OpKind::Store) {
    const ir::Value *ptrV = op.operand(0);
    const Elements &ptrs = l.get(ptrV);
    const Elements &vals = l.get(op.operand(1));
    Hints hints = hintsOf(l, op);
    for (size_t k = 0; k < ptrs.size(); k += size_t(vec)) {
      llvm::Value *pred = op.numOperands() >= 3 ? l.get(op.operand(2))[k] : nullptr;
      // Copies of an element held by several threads are written by its owner only.
      if (ptrV->type().isBlock())
        if (llvm::Value *owns = l.ownsElement(ptrV, int64_t(k)))
          pred = pred ? b.CreateAnd(pred, owns) : owns;
      if (pred || !hints.qualifiers.empty()) {
        asmStore(l, ptrs[k], vals, k, vec, pred, hints);
      } else if (vec == 1) {
        b.CreateAlignedStore(vals[k], ptrs[k], alignOf(vals[k]->getType(), 1));
      } else {
        llvm::Type *ty = vals[k]->getType();
        llvm::Value *v = llvm::PoisonValue::get(llvm::FixedVectorType::get(ty, unsigned(vec)));
        for (int64_t j = 0; j < vec; ++j)
          v = b.CreateInsertElement(v, vals[k + size_t(j)], uint64_t(j));
        b.CreateAlignedStore(v, ptrs[k], alignOf(ty, vec));
      }
    }
    return true;
  }
  return false;
}

} // namespace tritium::codegen
