// Lowering of loads and stores. Masked accesses become predicated PTX (`@p ld.global`), as
// Triton emits them, so a masked-off lane never touches memory and needs no branch; unmasked
// ones are plain LLVM loads and stores that the backend is free to schedule.
#include "compiler/codegen/Lowering.h"
#include "compiler/codegen/Pipelining.h"

#include <llvm/IR/InlineAsm.h>

namespace tritium::codegen {

namespace {

// A vector of `vec` elements moves as `count` words of `bits` (32-bit words, or one 16-bit word
// for a lone half), so one PTX instruction carries up to 16 bytes of any element type.
struct Words {
  int bits;
  int count;
  const char *constraint;
  llvm::Type *type(Lowering &l) const { return l.b.getIntNTy(unsigned(bits)); }
};

Words wordsFor(llvm::Type *elem, int64_t vec) {
  int64_t total = int64_t(elem->isPointerTy() ? 64 : elem->getPrimitiveSizeInBits()) * vec;
  if (total < 32)
    return {int(total), 1, "h"};
  return {32, int(total / 32), "r"};
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
  llvm::Value *words = b.CreateBitCast(v, llvm::FixedVectorType::get(w.type(l), unsigned(w.count)));
  std::vector<llvm::Value *> out;
  for (int i = 0; i < w.count; ++i)
    out.push_back(b.CreateExtractElement(words, uint64_t(i)));
  return out;
}

void unpack(Lowering &l, const std::vector<llvm::Value *> &words, llvm::Type *elemTy, int64_t vec,
            const Words &w, Elements &out) {
  auto &b = l.b;
  llvm::Value *v = llvm::PoisonValue::get(llvm::FixedVectorType::get(w.type(l), unsigned(w.count)));
  for (int i = 0; i < w.count; ++i)
    v = b.CreateInsertElement(v, words[size_t(i)], uint64_t(i));
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
         std::to_string(w.bits);
}

// Each output word preset to `other`, then `@pred ld.global[.vN].bW {words}, [ptr]`.
void predicatedLoad(Lowering &l, llvm::Type *elemTy, llvm::Value *ptr, llvm::Value *pred,
                    const Elements &others, size_t k, int64_t vec, Elements &out) {
  auto &b = l.b;
  Words w = wordsFor(elemTy, vec);
  std::string text, constraints;
  for (int i = 0; i < w.count; ++i) {
    text += "mov.b" + std::to_string(w.bits) + " $" + std::to_string(i) + ", $" +
            std::to_string(w.count + i) + ";\n\t";
    constraints += std::string(i ? "," : "") + "=" + w.constraint;
  }
  text += "@$" + std::to_string(2 * w.count) + " ld.global" + vectorSuffix(w) + " " +
          wordList(0, w.count) + ", [$" + std::to_string(2 * w.count + 1) + "];";
  for (int i = 0; i < w.count; ++i)
    constraints += std::string(",") + w.constraint;
  constraints += ",b,l";
  std::vector<llvm::Type *> outTys(size_t(w.count), w.type(l));
  llvm::Type *retTy = w.count == 1 ? outTys[0] : llvm::StructType::get(l.ctx, outTys);
  std::vector<llvm::Value *> args = pack(l, others, k, vec, w);
  std::vector<llvm::Type *> argTys(size_t(w.count), w.type(l));
  args.push_back(pred);
  args.push_back(ptr);
  argTys.push_back(b.getInt1Ty());
  argTys.push_back(ptr->getType());
  auto *asmFn = llvm::InlineAsm::get(llvm::FunctionType::get(retTy, argTys, false), text,
                                     constraints, /*hasSideEffects=*/true);
  llvm::Value *ret = b.CreateCall(asmFn, args);
  std::vector<llvm::Value *> words;
  for (int i = 0; i < w.count; ++i)
    words.push_back(w.count == 1 ? ret : b.CreateExtractValue(ret, unsigned(i)));
  unpack(l, words, elemTy, vec, w, out);
}

void predicatedStore(Lowering &l, llvm::Value *ptr, const Elements &vals, size_t k, int64_t vec,
                     llvm::Value *pred) {
  auto &b = l.b;
  Words w = wordsFor(vals[k]->getType(), vec);
  std::string text = "@$0 st.global" + vectorSuffix(w) + " [$1], " + wordList(2, w.count) + ";";
  std::string constraints = "b,l";
  for (int i = 0; i < w.count; ++i)
    constraints += std::string(",") + w.constraint;
  constraints += ",~{memory}";
  std::vector<llvm::Value *> args{pred, ptr};
  std::vector<llvm::Type *> argTys{b.getInt1Ty(), ptr->getType()};
  for (llvm::Value *word : pack(l, vals, k, vec, w)) {
    args.push_back(word);
    argTys.push_back(w.type(l));
  }
  auto *asmFn = llvm::InlineAsm::get(llvm::FunctionType::get(b.getVoidTy(), argTys, false), text,
                                     constraints, /*hasSideEffects=*/true);
  b.CreateCall(asmFn, args);
}

llvm::Align alignOf(llvm::Type *t, int64_t vec) {
  uint64_t bytes = t->isPointerTy() ? 8 : std::max<uint64_t>(1, t->getPrimitiveSizeInBits() / 8);
  return llvm::Align(bytes * uint64_t(vec));
}

} // namespace

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
    for (size_t k = 0; k < ptrs.size(); k += size_t(vec)) {
      if (op.numOperands() == 3) {
        predicatedLoad(l, ty, ptrs[k], l.get(op.operand(1))[k], l.get(op.operand(2)), k, vec, out);
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
    for (size_t k = 0; k < ptrs.size(); k += size_t(vec)) {
      llvm::Value *pred = op.numOperands() == 3 ? l.get(op.operand(2))[k] : nullptr;
      // Copies of an element held by several threads are written by its owner only.
      if (ptrV->type().isBlock())
        if (llvm::Value *owns = l.ownsElement(ptrV, int64_t(k)))
          pred = pred ? b.CreateAnd(pred, owns) : owns;
      if (pred) {
        predicatedStore(l, ptrs[k], vals, k, vec, pred);
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
