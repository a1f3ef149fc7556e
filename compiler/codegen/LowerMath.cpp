// Lowering of the math op (compiler/ir/MathFunctions.def): NVPTX instructions where the
// hardware has the function (approximate ones as Triton uses them), LLVM intrinsics for the
// exact ones, and CUDA's libdevice for the rest (linked by LinkLibdevice.cpp). 16-bit floats
// compute in f32 and round back.
#include "compiler/codegen/Lowering.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

#include <numbers>

namespace tritium::codegen {

namespace {

using ir::MathFn;

llvm::Value *libdevice(Lowering &l, const char *name, llvm::ArrayRef<llvm::Value *> args) {
  std::vector<llvm::Type *> types(args.size(), l.b.getFloatTy());
  llvm::FunctionCallee f = l.mod.getOrInsertFunction(
      name, llvm::FunctionType::get(l.b.getFloatTy(), types, false));
  return l.b.CreateCall(f, args);
}

// ex2.approx.ftz, as exp (LowerElementwise.cpp).
llvm::Value *exp2(Lowering &l, llvm::Value *x) {
  return l.intrinsic(llvm::Intrinsic::nvvm_ex2_approx_ftz, {l.b.getFloatTy()}, {x});
}

// f32 operands in, the f32 result out.
llvm::Value *apply(Lowering &l, MathFn fn, const std::vector<llvm::Value *> &x) {
  auto &b = l.b;
  switch (fn) {
  case MathFn::Exp2: return exp2(l, x[0]);
  case MathFn::Log: return libdevice(l, "__nv_logf", x);
  case MathFn::Log2: return libdevice(l, "__nv_log2f", x);
  case MathFn::Sqrt: return l.intrinsic(llvm::Intrinsic::nvvm_sqrt_approx_f, {}, {x[0]});
  case MathFn::SqrtRn: return l.intrinsic(llvm::Intrinsic::nvvm_sqrt_rn_f, {}, {x[0]});
  case MathFn::Rsqrt: return l.intrinsic(llvm::Intrinsic::nvvm_rsqrt_approx_f, {}, {x[0]});
  case MathFn::Abs: return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x[0]);
  case MathFn::Sin: return libdevice(l, "__nv_sinf", x);
  case MathFn::Cos: return libdevice(l, "__nv_cosf", x);
  case MathFn::Tanh: return libdevice(l, "__nv_tanhf", x);
  case MathFn::Sigmoid: {
    llvm::Value *e = exp2(l, b.CreateFMul(b.CreateFNeg(x[0]),
                                          llvm::ConstantFP::get(b.getFloatTy(), std::numbers::log2e)));
    llvm::Value *one = llvm::ConstantFP::get(b.getFloatTy(), 1.0);
    // As Triton's sigmoid, 1 / (1 + e) through div.full.f32 (fp32 `/`, LowerElementwise.cpp).
    return l.intrinsic(llvm::Intrinsic::nvvm_div_full, {}, {one, b.CreateFAdd(one, e)});
  }
  case MathFn::Erf: return libdevice(l, "__nv_erff", x);
  case MathFn::Log1p: return libdevice(l, "__nv_log1pf", x);
  case MathFn::Expm1: return libdevice(l, "__nv_expm1f", x);
  case MathFn::Floor: return b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x[0]);
  case MathFn::Ceil: return b.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, x[0]);
  case MathFn::Fma:
    return b.CreateIntrinsic(llvm::Intrinsic::fma, {b.getFloatTy()}, {x[0], x[1], x[2]});
  case MathFn::Pow: return libdevice(l, "__nv_powf", x);
  case MathFn::DivRn: return b.CreateFDiv(x[0], x[1]); // NVPTX's fdiv is div.rn.f32
  case MathFn::Tan: return libdevice(l, "__nv_tanf", x);
  case MathFn::Asin: return libdevice(l, "__nv_asinf", x);
  case MathFn::Acos: return libdevice(l, "__nv_acosf", x);
  case MathFn::Atan: return libdevice(l, "__nv_atanf", x);
  case MathFn::Sinh: return libdevice(l, "__nv_sinhf", x);
  case MathFn::Cosh: return libdevice(l, "__nv_coshf", x);
  case MathFn::Asinh: return libdevice(l, "__nv_asinhf", x);
  case MathFn::Acosh: return libdevice(l, "__nv_acoshf", x);
  case MathFn::Atanh: return libdevice(l, "__nv_atanhf", x);
  case MathFn::Cbrt: return libdevice(l, "__nv_cbrtf", x);
  case MathFn::Log10: return libdevice(l, "__nv_log10f", x);
  case MathFn::Erfc: return libdevice(l, "__nv_erfcf", x);
  case MathFn::Erfinv: return libdevice(l, "__nv_erfinvf", x);
  case MathFn::Trunc: return b.CreateUnaryIntrinsic(llvm::Intrinsic::trunc, x[0]);
  case MathFn::Rint: return b.CreateUnaryIntrinsic(llvm::Intrinsic::rint, x[0]);
  case MathFn::Round: return libdevice(l, "__nv_roundf", x);
  case MathFn::Atan2: return libdevice(l, "__nv_atan2f", x);
  case MathFn::Hypot: return libdevice(l, "__nv_hypotf", x);
  case MathFn::Fmod: return libdevice(l, "__nv_fmodf", x);
  case MathFn::Copysign:
    return b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, x[0], x[1]);
  }
  internalError("unknown math function");
}

} // namespace

bool lowerMath(Lowering &l, const ir::Op &op) {
  if (op.kind() != ir::OpKind::Math)
    return false;
  auto &b = l.b;
  MathFn fn = *ir::parseMathFn(op.strAttr("fn"));
  const ir::Value *res = op.result();
  Elements out;
  for (int64_t k = 0; k < l.elementsPerThread(res); ++k) {
    std::vector<llvm::Value *> x;
    for (unsigned i = 0; i < op.numOperands(); ++i)
      x.push_back(l.get(op.operand(i)).at(size_t(k)));
    if (res->type().isInt()) { // abs of an integer
      out.push_back(b.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x[0], b.getFalse()));
      continue;
    }
    llvm::Type *ty = x[0]->getType();
    bool narrow = !ty->isFloatTy();
    if (narrow)
      for (auto &v : x)
        v = b.CreateFPExt(v, b.getFloatTy());
    llvm::Value *r = apply(l, fn, x);
    out.push_back(narrow ? b.CreateFPTrunc(r, ty) : r);
  }
  l.set(res, std::move(out));
  return true;
}

} // namespace tritium::codegen
