// Lowering of values computed per element: constants, grid queries, arange, splat, arithmetic,
// comparisons, select, casts, exp and pointer offsets.
#include "compiler/codegen/Lowering.h"

#include <llvm/IR/InlineAsm.h>
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
    if (t.kind() == ir::ScalarKind::F8E4M3 || t.kind() == ir::ScalarKind::F8E5M2)
      return llvm::ConstantInt::get(ty, ir::toFp8(d, t.kind())); // fp8 registers hold bits
    return llvm::ConstantFP::get(ty, d);
  }
  return llvm::ConstantInt::get(ty, uint64_t(std::get<int64_t>(value)), /*signed=*/true);
}

llvm::Value *binary(Lowering &l, OpKind kind, const ir::Type &t, llvm::Value *x, llvm::Value *y) {
  auto &b = l.b;
  bool f = t.isFloat(), u = t.isUnsigned();
  switch (kind) {
  case OpKind::Add: return f ? b.CreateFAdd(x, y) : b.CreateAdd(x, y);
  case OpKind::Sub: return f ? b.CreateFSub(x, y) : b.CreateSub(x, y);
  case OpKind::Mul: return f ? b.CreateFMul(x, y) : b.CreateMul(x, y);
  case OpKind::Div:
    // fp32 `/` is Triton's: div.full.f32 (within 2 ulp; a reciprocal and a multiply with the
    // range kept, where div.rn.f32 is a subroutine of about 20 instructions); div_rn rounds
    // correctly.
    if (x->getType()->isFloatTy())
      return l.intrinsic(llvm::Intrinsic::nvvm_div_full, {}, {x, y});
    return f ? b.CreateFDiv(x, y) : u ? b.CreateUDiv(x, y) : b.CreateSDiv(x, y);
  case OpKind::Rem: return f ? b.CreateFRem(x, y) : u ? b.CreateURem(x, y) : b.CreateSRem(x, y);
  case OpKind::And: return b.CreateAnd(x, y);
  case OpKind::Or: return b.CreateOr(x, y);
  case OpKind::Xor: return b.CreateXor(x, y);
  case OpKind::Shl:
  case OpKind::Shr: {
    // PTX clamps shift amounts, LLVM makes them poison: shifts past the width give 0 (or the
    // sign for arithmetic right shifts), as Triton's.
    unsigned bits = x->getType()->getIntegerBitWidth();
    llvm::Value *width = llvm::ConstantInt::get(x->getType(), bits);
    llvm::Value *past = b.CreateICmpUGE(y, width);
    llvm::Value *amount = b.CreateSelect(past, llvm::ConstantInt::get(x->getType(), bits - 1), y);
    if (kind == OpKind::Shl)
      return b.CreateSelect(past, llvm::ConstantInt::get(x->getType(), 0), b.CreateShl(x, amount));
    if (u || t.isBool())
      return b.CreateSelect(past, llvm::ConstantInt::get(x->getType(), 0), b.CreateLShr(x, amount));
    return b.CreateAShr(x, amount); // bits - 1 gives the sign
  }
  case OpKind::UMulHi: {
    unsigned bits = x->getType()->getIntegerBitWidth();
    llvm::Type *wide = b.getIntNTy(2 * bits);
    llvm::Value *p = b.CreateMul(b.CreateZExt(x, wide), b.CreateZExt(y, wide));
    return b.CreateTrunc(b.CreateLShr(p, 2 * bits / 2), x->getType());
  }
  // NaN-propagating min/max, as torch's softmax propagates NaN through the row maximum.
  case OpKind::Minimum:
    return b.CreateBinaryIntrinsic(f ? llvm::Intrinsic::minimum
                                   : u ? llvm::Intrinsic::umin : llvm::Intrinsic::smin, x, y);
  case OpKind::Maximum:
    return b.CreateBinaryIntrinsic(f ? llvm::Intrinsic::maximum
                                   : u ? llvm::Intrinsic::umax : llvm::Intrinsic::smax, x, y);
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
  bool isPtr = t.isPtr() || t.isUnsigned() || t.isBool();
  P p = pred == "lt" ? (isPtr ? P::ICMP_ULT : P::ICMP_SLT)
      : pred == "le" ? (isPtr ? P::ICMP_ULE : P::ICMP_SLE)
      : pred == "gt" ? (isPtr ? P::ICMP_UGT : P::ICMP_SGT)
      : pred == "ge" ? (isPtr ? P::ICMP_UGE : P::ICMP_SGE)
      : pred == "eq" ? P::ICMP_EQ : P::ICMP_NE;
  return b.CreateICmp(p, x, y);
}

bool isFp8(ir::ScalarKind k) { return k == ir::ScalarKind::F8E4M3 || k == ir::ScalarKind::F8E5M2; }

// fp8 <-> f16 with Hopper's (sm_89+) paired conversions, the second lane unused: f16 -> fp8
// rounds to nearest even and saturates to the largest finite value (NaN stays NaN), as Triton.
llvm::Value *fp8ToHalf(Lowering &l, llvm::Value *x, ir::ScalarKind k) {
  auto &b = l.b;
  const char *fmt = k == ir::ScalarKind::F8E4M3 ? "e4m3x2" : "e5m2x2";
  auto *fnTy = llvm::FunctionType::get(b.getInt32Ty(), {b.getInt16Ty()}, false);
  auto *cvt = llvm::InlineAsm::get(fnTy, std::string("cvt.rn.f16x2.") + fmt + " $0, $1;", "=r,h",
                                   false);
  llvm::Value *pair = b.CreateCall(cvt, {b.CreateZExt(x, b.getInt16Ty())});
  return b.CreateBitCast(b.CreateTrunc(pair, b.getInt16Ty()), b.getHalfTy());
}

// Two floats to fp8 in one conversion: {lo, hi} as two bytes (the instruction's second source
// lands in the low byte).
std::pair<llvm::Value *, llvm::Value *> floatsToFp8(Lowering &l, llvm::Value *lo, llvm::Value *hi,
                                                   ir::ScalarKind k) {
  auto &b = l.b;
  const char *fmt = k == ir::ScalarKind::F8E4M3 ? "e4m3x2" : "e5m2x2";
  auto *fnTy = llvm::FunctionType::get(b.getInt16Ty(), {b.getFloatTy(), b.getFloatTy()}, false);
  auto *cvt = llvm::InlineAsm::get(
      fnTy, std::string("cvt.rn.satfinite.") + fmt + ".f32 $0, $1, $2;", "=h,f,f", false);
  llvm::Value *pair = b.CreateCall(
      cvt, {b.CreateFPCast(hi, b.getFloatTy()), b.CreateFPCast(lo, b.getFloatTy())});
  return {b.CreateTrunc(pair, b.getInt8Ty()),
          b.CreateTrunc(b.CreateLShr(pair, 8), b.getInt8Ty())};
}

// One float to fp8: the pair's other lane unused.
llvm::Value *floatToFp8(Lowering &l, llvm::Value *x, ir::ScalarKind k) {
  return floatsToFp8(l, x, llvm::ConstantFP::get(l.b.getFloatTy(), 0.0), k).first;
}

llvm::Value *castTo(Lowering &l, llvm::Value *x, const ir::Type &from, const ir::Type &to) {
  auto &b = l.b;
  llvm::Type *ty = l.scalarType(to.kind());
  if (from.kind() == to.kind())
    return x;
  if (isFp8(from.kind())) { // through f16, which holds every fp8 value exactly
    ir::Type half = from.withKind(ir::ScalarKind::F16);
    return castTo(l, fp8ToHalf(l, x, from.kind()), half, to);
  }
  if (isFp8(to.kind())) {
    if (!from.isFloat())
      x = castTo(l, x, from, from.withKind(ir::ScalarKind::F32));
    return floatToFp8(l, x, to.kind());
  }
  if (from.isBool())
    return to.isFloat() ? b.CreateUIToFP(x, ty) : b.CreateZExt(x, ty);
  if (to.isBool())
    return from.isFloat() ? b.CreateFCmpUNE(x, llvm::ConstantFP::get(x->getType(), 0.0))
                          : b.CreateICmpNE(x, llvm::ConstantInt::get(x->getType(), 0));
  if (from.isFloat() && to.isFloat()) {
    // fp16 and bf16 have the same width: LLVM's casts take a wider or a narrower type, so the
    // conversion goes through f32, which holds both exactly.
    if (x->getType()->getPrimitiveSizeInBits() == ty->getPrimitiveSizeInBits())
      return b.CreateFPTrunc(b.CreateFPExt(x, b.getFloatTy()), ty);
    return b.CreateFPCast(x, ty);
  }
  if (from.isFloat())
    return to.isUnsigned() ? b.CreateFPToUI(x, ty) : b.CreateFPToSI(x, ty);
  if (to.isFloat())
    return from.isUnsigned() ? b.CreateUIToFP(x, ty) : b.CreateSIToFP(x, ty);
  return from.isUnsigned() ? b.CreateZExtOrTrunc(x, ty) : b.CreateSExtOrTrunc(x, ty);
}

// exp(x) = 2^(x * log2(e)) with the hardware's ex2.approx, as Triton and CUDA's __expf do,
// flushing subnormal inputs and results to zero as they do (ex2.approx.ftz: one MUFU.EX2;
// without .ftz ptxas scales around it with three more instructions).
llvm::Value *exp(Lowering &l, llvm::Value *x) {
  auto &b = l.b;
  llvm::Type *orig = x->getType();
  if (!orig->isFloatTy())
    x = b.CreateFPExt(x, b.getFloatTy());
  llvm::Value *scaled = b.CreateFMul(x, llvm::ConstantFP::get(b.getFloatTy(), std::numbers::log2e));
  llvm::Value *r = l.intrinsic(llvm::Intrinsic::nvvm_ex2_approx_ftz, {b.getFloatTy()}, {scaled});
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
  case OpKind::ProgramId: { // ctaid * programs per CTA + this thread's program slot (along x)
    int64_t axis = op.intAttr("axis");
    llvm::Value *cta = l.intrinsic(axis == 0   ? llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x
                                   : axis == 1 ? llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y
                                               : llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z,
                                   {}, {});
    l.set(res, {l.programsPerCTA == 1 || axis != 0
                    ? cta
                    : b.CreateAdd(b.CreateMul(cta, b.getInt32(l.programsPerCTA)), l.programSlot)});
    return true;
  }
  case OpKind::NumPrograms: {
    int64_t axis = op.intAttr("axis");
    llvm::Value *ctas = l.intrinsic(axis == 0   ? llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x
                                    : axis == 1 ? llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_y
                                                : llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_z,
                                    {}, {});
    l.set(res, {l.programsPerCTA == 1 || axis != 0
                    ? ctas
                    : b.CreateMul(ctas, b.getInt32(l.programsPerCTA))});
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
    if (const ir::Op *d = op.operand(1)->definingOp();
        d && res->type().isFloat() && res->type().isBlock()) {
      // Divided by a broadcast scalar: one reciprocal per thread, then multiplies (softmax's
      // normalisation), within an ulp of the division.
      if (d->kind() == OpKind::Splat) {
        llvm::Value *s = l.get(d->operand(0))[0];
        llvm::Value *r = b.CreateFDiv(llvm::ConstantFP::get(s->getType(), 1.0), s);
        perElement([&](int64_t k) { return b.CreateFMul(operand(0, k), r); });
        return true;
      }
      // Divided by a block broadcast along a dimension (`acc / l[:, None]`, attention's
      // normalisation): a thread's copies of a divisor are one value, so LLVM computes each
      // reciprocal once; then multiplies, where a division each element was 64 a thread in the
      // attention forward's epilogue at head_dim 128.
      if (d->kind() == OpKind::Broadcast) {
        llvm::Value *one = llvm::ConstantFP::get(l.elementType(res->type()), 1.0);
        perElement([&](int64_t k) {
          return b.CreateFMul(operand(0, k),
                              binary(l, OpKind::Div, res->type(), one, operand(1, k)));
        });
        return true;
      }
    }
    [[fallthrough]];
  case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Rem:
  case OpKind::Minimum: case OpKind::Maximum: case OpKind::And: case OpKind::Or:
  case OpKind::Xor: case OpKind::Shl: case OpKind::Shr: case OpKind::UMulHi:
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
  case OpKind::Not:
    perElement([&](int64_t k) { return b.CreateNot(operand(0, k)); });
    return true;
  case OpKind::Hint: // a promise for the axis analysis; the values pass through
    l.set(res, l.get(op.operand(0)));
    return true;
  case OpKind::Bitcast:
    perElement([&](int64_t k) {
      llvm::Value *x = operand(0, k);
      llvm::Type *ty = l.scalarType(res->type().kind());
      return x->getType() == ty ? x : b.CreateBitCast(x, ty);
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
    if (const ir::Type &from = op.operand(0)->type();
        isFp8(res->type().kind()) && from.isFloat() && !isFp8(from.kind()) && run == 1 &&
        l.elementsPerThread(res) % 2 == 0) {
      // To fp8: one paired conversion for each two of a thread's elements, where the
      // instruction converts two values anyway.
      Elements out;
      for (int64_t k = 0; k < l.elementsPerThread(res); k += 2) {
        auto [lo, hi] = floatsToFp8(l, operand(0, k), operand(0, k + 1), res->type().kind());
        out.push_back(lo);
        out.push_back(hi);
      }
      l.set(res, std::move(out));
      return true;
    }
    perElement([&](int64_t k) {
      return castTo(l, operand(0, k), op.operand(0)->type(), res->type());
    });
    return true;
  case OpKind::AddPtr: {
    llvm::Type *elem = l.scalarType(res->type().kind());
    // GEP sign-extends a narrow index: unsigned offsets (a u32 past 2^31) widen with zeros.
    const ir::Type &offset = op.operand(1)->type();
    bool zext = offset.isUnsigned() && ir::bitWidth(offset.kind()) < 64;
    perElement([&](int64_t k) {
      llvm::Value *index = operand(1, k);
      if (zext)
        index = b.CreateZExt(index, b.getInt64Ty());
      return b.CreateGEP(elem, operand(0, k), index);
    });
    return true;
  }
  default:
    return false;
  }
}

} // namespace tritium::codegen
