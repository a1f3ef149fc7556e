// Lowering of values computed per element: constants, grid queries, arange, splat, arithmetic,
// comparisons, select, casts, exp and pointer offsets.
#include "compiler/codegen/Lowering.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

#include <numbers>

namespace tritium::codegen {

namespace {

using ir::OpKind;

llvm::Value *constantOf(Lowering &l, const ir::Type &t, const ir::Attr &value) {
  llvm::Type *ty = l.elementType(t);
  if (t.isFloat()) {
    double d = std::holds_alternative<double>(value) ? std::get<double>(value)
                                                     : double(std::get<int64_t>(value));
    return llvm::ConstantFP::get(ty, d);
  }
  return llvm::ConstantInt::get(ty, uint64_t(std::get<int64_t>(value)), /*signed=*/true);
}

llvm::Value *binary(Lowering &l, OpKind kind, const ir::Type &t, llvm::Value *x, llvm::Value *y) {
  auto &b = l.b;
  bool f = t.isFloat();
  switch (kind) {
  case OpKind::Add: return f ? b.CreateFAdd(x, y) : b.CreateAdd(x, y);
  case OpKind::Sub: return f ? b.CreateFSub(x, y) : b.CreateSub(x, y);
  case OpKind::Mul: return f ? b.CreateFMul(x, y) : b.CreateMul(x, y);
  case OpKind::Div: return f ? b.CreateFDiv(x, y) : b.CreateSDiv(x, y);
  case OpKind::Rem: return f ? b.CreateFRem(x, y) : b.CreateSRem(x, y);
  case OpKind::And: return b.CreateAnd(x, y);
  case OpKind::Or: return b.CreateOr(x, y);
  // NaN-propagating min/max, as torch's softmax propagates NaN through the row maximum.
  case OpKind::Minimum:
    return f ? b.CreateBinaryIntrinsic(llvm::Intrinsic::minimum, x, y)
             : b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, x, y);
  case OpKind::Maximum:
    return f ? b.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, x, y)
             : b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, x, y);
  default: internalError("not a binary op");
  }
}

llvm::Value *compare(Lowering &l, const std::string &pred, const ir::Type &t, llvm::Value *x,
                     llvm::Value *y) {
  using P = llvm::CmpInst::Predicate;
  auto &b = l.b;
  if (t.isFloat()) {
    P p = pred == "lt" ? P::FCMP_OLT : pred == "le" ? P::FCMP_OLE : pred == "gt" ? P::FCMP_OGT
        : pred == "ge" ? P::FCMP_OGE : pred == "eq" ? P::FCMP_OEQ : P::FCMP_UNE;
    return b.CreateFCmp(p, x, y);
  }
  bool isPtr = t.isPtr();
  P p = pred == "lt" ? (isPtr ? P::ICMP_ULT : P::ICMP_SLT)
      : pred == "le" ? (isPtr ? P::ICMP_ULE : P::ICMP_SLE)
      : pred == "gt" ? (isPtr ? P::ICMP_UGT : P::ICMP_SGT)
      : pred == "ge" ? (isPtr ? P::ICMP_UGE : P::ICMP_SGE)
      : pred == "eq" ? P::ICMP_EQ : P::ICMP_NE;
  return b.CreateICmp(p, x, y);
}

llvm::Value *castTo(Lowering &l, llvm::Value *x, const ir::Type &from, const ir::Type &to) {
  auto &b = l.b;
  llvm::Type *ty = l.scalarType(to.kind());
  if (from.kind() == to.kind())
    return x;
  if (from.isBool())
    return to.isFloat() ? b.CreateUIToFP(x, ty) : b.CreateZExt(x, ty);
  if (to.isBool())
    return from.isFloat() ? b.CreateFCmpUNE(x, llvm::ConstantFP::get(x->getType(), 0.0))
                          : b.CreateICmpNE(x, llvm::ConstantInt::get(x->getType(), 0));
  if (from.isFloat() && to.isFloat())
    return b.CreateFPCast(x, ty);
  if (from.isFloat())
    return b.CreateFPToSI(x, ty);
  if (to.isFloat())
    return b.CreateSIToFP(x, ty);
  return b.CreateSExtOrTrunc(x, ty);
}

// exp(x) = 2^(x * log2(e)) with the hardware's ex2.approx, as Triton and CUDA's __expf do.
llvm::Value *exp(Lowering &l, llvm::Value *x) {
  auto &b = l.b;
  llvm::Type *orig = x->getType();
  if (!orig->isFloatTy())
    x = b.CreateFPExt(x, b.getFloatTy());
  llvm::Value *scaled = b.CreateFMul(x, llvm::ConstantFP::get(b.getFloatTy(), std::numbers::log2e));
  llvm::Value *r = l.intrinsic(llvm::Intrinsic::nvvm_ex2_approx, {b.getFloatTy()}, {scaled});
  return orig->isFloatTy() ? r : b.CreateFPTrunc(r, orig);
}

} // namespace

bool lowerElementwise(Lowering &l, const ir::Op &op) {
  auto &b = l.b;
  const ir::Value *res = op.numResults() ? op.result() : nullptr;
  // Values constant over aligned runs of this thread's elements (MarkConstantRuns.cpp) are
  // computed once per run.
  int64_t run = op.hasAttr("constancy") ? op.intAttr("constancy") : 1;
  auto perElement = [&](auto &&fn) {
    Elements out;
    for (int64_t k = 0; k < l.elementsPerThread(res); ++k)
      out.push_back(k % run ? out[size_t(k - k % run)] : fn(k));
    l.set(res, std::move(out));
  };
  auto operand = [&](unsigned i, int64_t k) { return l.get(op.operand(i)).at(size_t(k)); };

  switch (op.kind()) {
  case OpKind::Constant: {
    llvm::Value *c = constantOf(l, res->type().element(), op.attr("value"));
    perElement([&](int64_t) { return c; });
    return true;
  }
  case OpKind::ProgramId: { // ctaid * programs per CTA + this thread's program slot
    llvm::Value *cta = l.intrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x, {}, {});
    l.set(res, {l.programsPerCTA == 1
                    ? cta
                    : b.CreateAdd(b.CreateMul(cta, b.getInt32(l.programsPerCTA)), l.programSlot)});
    return true;
  }
  case OpKind::NumPrograms: {
    llvm::Value *ctas = l.intrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x, {}, {});
    l.set(res, {l.programsPerCTA == 1 ? ctas : b.CreateMul(ctas, b.getInt32(l.programsPerCTA))});
    return true;
  }
  case OpKind::Arange: {
    int32_t start = int32_t(op.intAttr("start"));
    perElement([&](int64_t k) { return b.CreateAdd(l.elementIndex(res, k), b.getInt32(start)); });
    return true;
  }
  case OpKind::Splat: {
    llvm::Value *s = l.get(op.operand(0))[0];
    perElement([&](int64_t) { return s; });
    return true;
  }
  case OpKind::Div:
    // A float block divided by a broadcast scalar: one reciprocal per thread, then multiplies
    // (softmax's normalisation), within an ulp of the division.
    if (res->type().isFloat() && res->type().isBlock() && op.operand(1)->definingOp() &&
        op.operand(1)->definingOp()->kind() == OpKind::Splat) {
      llvm::Value *s = l.get(op.operand(1)->definingOp()->operand(0))[0];
      llvm::Value *r = b.CreateFDiv(llvm::ConstantFP::get(s->getType(), 1.0), s);
      perElement([&](int64_t k) { return b.CreateFMul(operand(0, k), r); });
      return true;
    }
    [[fallthrough]];
  case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Rem:
  case OpKind::Minimum: case OpKind::Maximum: case OpKind::And: case OpKind::Or:
    perElement([&](int64_t k) {
      return binary(l, op.kind(), res->type(), operand(0, k), operand(1, k));
    });
    return true;
  case OpKind::Cmp:
    perElement([&](int64_t k) {
      return compare(l, op.strAttr("pred"), op.operand(0)->type(), operand(0, k), operand(1, k));
    });
    return true;
  case OpKind::Select:
    perElement([&](int64_t k) {
      return b.CreateSelect(operand(0, k), operand(1, k), operand(2, k));
    });
    return true;
  case OpKind::Neg:
    perElement([&](int64_t k) {
      return res->type().isFloat() ? b.CreateFNeg(operand(0, k)) : b.CreateNeg(operand(0, k));
    });
    return true;
  case OpKind::Exp:
    perElement([&](int64_t k) { return exp(l, operand(0, k)); });
    return true;
  case OpKind::Cast:
    perElement([&](int64_t k) {
      return castTo(l, operand(0, k), op.operand(0)->type(), res->type());
    });
    return true;
  case OpKind::AddPtr: {
    llvm::Type *elem = l.scalarType(res->type().kind());
    perElement([&](int64_t k) { return b.CreateGEP(elem, operand(0, k), operand(1, k)); });
    return true;
  }
  default:
    return false;
  }
}

} // namespace tritium::codegen
