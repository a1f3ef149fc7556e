// The interpreter's evaluator of ops, by family: sources (constants, grid queries, arange,
// splat), elementwise arithmetic, comparisons, select, casts and exp, pointer offsets, loads and
// stores through the memory model, reductions (within a program and across a cluster), and print.
// Each op runs over whole blocks, so the dispatch costs once per op and not per element.
//
// Semantics follow the GPU lowering (compiler/codegen): float math rounds to the element type
// after each op (f32 +,-,*,/ are then exactly IEEE, as on the GPU); exp is std::exp in double
// rounded to the type where the GPU uses ex2.approx; reductions accumulate in double; integer
// arithmetic wraps to the type's width; min/max propagate NaN; float != is unordered.
#include "interpreter/Evaluator.h"

#include "interpreter/Cluster.h"
#include "interpreter/FloatBits.h"
#include "compiler/ir/TensorMap.h"

#include <algorithm>
#include <bit>
#include <cinttypes>
#include <cmath>
#include <cstring>
#include <limits>

namespace tritium::interpreter {

using ir::OpKind;
using ir::ScalarKind;

static bool isFp8(ScalarKind k) { return k == ScalarKind::F8E4M3 || k == ScalarKind::F8E5M2; }

double roundTo(ScalarKind k, double x) {
  if (std::isnan(x) && !isFp8(k)) // a NaN keeps its bits until a store or bitcast narrows them
    return x;
  switch (k) {
  case ScalarKind::F32:
    return double(float(x));
  case ScalarKind::F16:
    return double(_Float16(x));
  case ScalarKind::F8E4M3:
  case ScalarKind::F8E5M2:
    return ir::fromFp8(ir::toFp8(x, k), k);
  case ScalarKind::BF16: {
    // Round to nearest even on the upper 16 bits of the f32 (NaN stays NaN).
    float f = float(x);
    if (std::isnan(f))
      return x;
    uint32_t u = std::bit_cast<uint32_t>(f);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    return double(std::bit_cast<float>(u));
  }
  default:
    return x;
  }
}

int64_t wrapTo(ScalarKind k, int64_t x) {
  switch (k) {
  case ScalarKind::I1:
    return x & 1;
  case ScalarKind::I8:
    return int64_t(int8_t(uint8_t(uint64_t(x))));
  case ScalarKind::I16:
    return int64_t(int16_t(uint16_t(uint64_t(x))));
  case ScalarKind::I32:
    return int64_t(int32_t(uint32_t(uint64_t(x))));
  case ScalarKind::U8:
    return int64_t(uint8_t(uint64_t(x)));
  case ScalarKind::U16:
    return int64_t(uint16_t(uint64_t(x)));
  case ScalarKind::U32:
    return int64_t(uint32_t(uint64_t(x)));
  default: // i64, and u64 as its bits
    return x;
  }
}

namespace {

int64_t elementBytes(ScalarKind k) { return std::max(1, ir::bitWidth(k) / 8); }

// The inverse of erf on (-1, 1) (C++ has none): bisection on std::erf to the last bit; +-inf
// at +-1, NaN outside.
double erfinvOf(double y) {
  if (!(y > -1 && y < 1))
    return y == 1 ? INFINITY : y == -1 ? -INFINITY : NAN;
  double lo = -6, hi = 6; // erf(6) is 1 in double
  for (int i = 0; i < 80; ++i) {
    double mid = (lo + hi) / 2;
    (std::erf(mid) < y ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

// Two's-complement arithmetic without signed-overflow UB.
int64_t addWrap(int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); }
int64_t subWrap(int64_t a, int64_t b) { return int64_t(uint64_t(a) - uint64_t(b)); }
int64_t mulWrap(int64_t a, int64_t b) { return int64_t(uint64_t(a) * uint64_t(b)); }

// NaN-propagating min/max, as llvm.minimum/llvm.maximum (and -0 < +0).
double fmaximum(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  if (a == b)
    return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
double fminimum(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  if (a == b)
    return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

class OpEvaluator {
public:
  OpEvaluator(Machine &m, const ir::Op &op) : m_(m), op_(op) {}

  bool run() {
    switch (op_.kind()) {
    case OpKind::Constant:
      return constant();
    case OpKind::ProgramId: {
      int64_t axis = op_.intAttr("axis");
      return scalarInt(axis == 0 ? m_.pid : axis == 1 ? m_.pidY : m_.pidZ);
    }
    case OpKind::NumPrograms: {
      int64_t axis = op_.intAttr("axis");
      return scalarInt(axis == 0 ? m_.grid : axis == 1 ? m_.gridY : m_.gridZ);
    }
    case OpKind::Arange:
      return arange();
    case OpKind::Splat:
      return splat();
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Div:
    case OpKind::Rem:
    case OpKind::Minimum:
    case OpKind::Maximum:
    case OpKind::And:
    case OpKind::Or:
    case OpKind::Xor:
    case OpKind::Shl:
    case OpKind::Shr:
    case OpKind::UMulHi:
      return binary();
    case OpKind::Not:
      return bitwiseNot();
    case OpKind::Bitcast:
      return bitcast();
    case OpKind::Cmp:
      return compare();
    case OpKind::Select:
      return select();
    case OpKind::Neg:
    case OpKind::Exp:
      return unary();
    case OpKind::Math:
      return math();
    case OpKind::Cast:
      return cast();
    case OpKind::AddPtr:
      return addPtr();
    case OpKind::Load:
      return load();
    case OpKind::Store:
      return store();
    case OpKind::ReduceMax:
    case OpKind::ReduceMin:
    case OpKind::ReduceSum:
      return reduce();
    case OpKind::ExpandDims:
    case OpKind::Reshape:
    case OpKind::ConvertLayout:
    case OpKind::Hint:
      out() = in(0); // row-major order is unchanged; layouts are the GPU's business
      return true;
    case OpKind::Broadcast:
    case OpKind::Trans:
      return gather();
    case OpKind::Join:
    case OpKind::Split:
      return joinOrSplit();
    case OpKind::ClusterRank:
      return scalarInt(m_.pid % m_.clusterSize);
    case OpKind::ClusterMax:
    case OpKind::ClusterSum:
      return clusterReduce();
    case OpKind::ClusterGather:
      return clusterGather();
    case OpKind::AtomicRMW:
    case OpKind::AtomicCAS:
      return atomic();
    case OpKind::Barrier:
      return true; // one program runs at a time: nothing to wait for
    case OpKind::GridDepWait:
    case OpKind::GridDepLaunchDependents:
      return true; // kernels run one after another: the earlier one has finished
    case OpKind::GridSync:
      if (!m_.wholeGrid)
        internalError("grid_sync in a program run without the rest of its grid");
      m_.wholeGrid->exchange(m_.pid, op_, {});
      return true;
    case OpKind::Assert: {
      const auto &c = in(0).i;
      for (size_t e = 0; e < c.size(); ++e)
        if (!c[e])
          userError("device_assert failed in program " + std::to_string(m_.pid) +
                        (op_.operand(0)->type().isBlock() ? ", element " + std::to_string(e) : "") +
                        ": " + op_.strAttr("message"),
                    op_.loc());
      return true;
    }
    case OpKind::Assume: { // the compiled kernel's behaviour would be undefined: say where
      const auto &c = in(0).i;
      for (size_t e = 0; e < c.size(); ++e)
        if (!c[e])
          userError("assume's condition does not hold in program " + std::to_string(m_.pid) +
                        (op_.operand(0)->type().isBlock() ? ", element " + std::to_string(e)
                                                          : ""),
                    op_.loc());
      return true;
    }
    case OpKind::Print:
      return print();
    case OpKind::Dot:
      return evaluateDot(m_, op_);
    default:
      return false;
    }
  }

private:
  const ir::Type &resultType() const { return op_.result()->type(); }
  Tensor &in(unsigned i) { return m_.at(op_.operand(i)); }
  Tensor &out() { return m_.at(op_.result()); }
  size_t count(const ir::Type &t) const { return size_t(t.numElements()); }

  // The result's storage, sized, with the other vector emptied.
  std::vector<double> &outF() {
    Tensor &t = out();
    t.f.resize(count(resultType()));
    return t.f;
  }
  std::vector<int64_t> &outI() {
    Tensor &t = out();
    t.i.resize(count(resultType()));
    return t.i;
  }

  bool scalarInt(int64_t v) {
    outI()[0] = wrapTo(resultType().kind(), v);
    return true;
  }

  bool constant() {
    const ir::Attr &a = op_.attr("value");
    const ir::Type &t = resultType();
    if (t.isFloat()) {
      double d =
          std::holds_alternative<double>(a) ? std::get<double>(a) : double(std::get<int64_t>(a));
      auto &o = outF();
      std::fill(o.begin(), o.end(), roundTo(t.kind(), d));
    } else {
      int64_t v =
          std::holds_alternative<int64_t>(a) ? std::get<int64_t>(a) : int64_t(std::get<double>(a));
      auto &o = outI();
      std::fill(o.begin(), o.end(), wrapTo(t.kind(), v));
    }
    return true;
  }

  bool arange() {
    int64_t start = op_.intAttr("start");
    auto &o = outI();
    for (size_t k = 0; k < o.size(); ++k)
      o[k] = wrapTo(ScalarKind::I32, start + int64_t(k));
    return true;
  }

  bool splat() {
    if (resultType().isFloat()) {
      double v = in(0).f[0];
      auto &o = outF();
      std::fill(o.begin(), o.end(), v);
    } else {
      int64_t v = in(0).i[0];
      auto &o = outI();
      std::fill(o.begin(), o.end(), v);
    }
    return true;
  }

  template <typename Fn> void mapF(Fn fn) {
    const auto &a = in(0).f, &b = in(1).f;
    auto &o = outF();
    ScalarKind k = resultType().kind();
    for (size_t e = 0; e < o.size(); ++e)
      o[e] = roundTo(k, fn(a[e], b[e]));
  }
  template <typename Fn> void mapI(Fn fn) {
    const auto &a = in(0).i, &b = in(1).i;
    auto &o = outI();
    // Pointers are 64-bit addresses whatever their pointee.
    ScalarKind k = resultType().isPtr() ? ScalarKind::I64 : resultType().kind();
    for (size_t e = 0; e < o.size(); ++e)
      o[e] = wrapTo(k, fn(a[e], b[e]));
  }

  bool binary() {
    OpKind kind = op_.kind();
    if (resultType().isFloat()) {
      switch (kind) {
      case OpKind::Add:
        mapF([](double a, double b) { return a + b; });
        break;
      case OpKind::Sub:
        mapF([](double a, double b) { return a - b; });
        break;
      case OpKind::Mul:
        mapF([](double a, double b) { return a * b; });
        break;
      case OpKind::Div:
        mapF([](double a, double b) { return a / b; });
        break;
      case OpKind::Rem:
        mapF([](double a, double b) { return std::fmod(a, b); });
        break;
      case OpKind::Minimum:
        mapF(fminimum);
        break;
      case OpKind::Maximum:
        mapF(fmaximum);
        break;
      default:
        internalError(std::string("interpreter: '") + op_.name() + "' on floats");
      }
      return true;
    }
    switch (kind) {
    case OpKind::Add:
      mapI(addWrap);
      break;
    case OpKind::Sub:
      mapI(subWrap);
      break;
    case OpKind::Mul:
      mapI(mulWrap);
      break;
    case OpKind::Div:
    case OpKind::Rem: {
      bool div = kind == OpKind::Div;
      bool u = resultType().isUnsigned();
      mapI([&](int64_t a, int64_t b) -> int64_t {
        if (b == 0)
          userError(std::string("integer ") + (div ? "division" : "remainder") +
                        " by zero in program " + std::to_string(m_.pid),
                    op_.loc());
        if (u) // zero-extended below 64 bits; u64 as its bits
          return int64_t(div ? uint64_t(a) / uint64_t(b) : uint64_t(a) % uint64_t(b));
        if (b == -1) // INT_MIN / -1 wraps as the hardware does
          return div ? subWrap(0, a) : 0;
        return div ? a / b : a % b;
      });
      break;
    }
    case OpKind::Minimum:
      if (resultType().isUnsigned())
        mapI([](int64_t a, int64_t b) { return int64_t(std::min(uint64_t(a), uint64_t(b))); });
      else
        mapI([](int64_t a, int64_t b) { return std::min(a, b); });
      break;
    case OpKind::Maximum:
      if (resultType().isUnsigned())
        mapI([](int64_t a, int64_t b) { return int64_t(std::max(uint64_t(a), uint64_t(b))); });
      else
        mapI([](int64_t a, int64_t b) { return std::max(a, b); });
      break;
    case OpKind::Xor:
      mapI([](int64_t a, int64_t b) { return a ^ b; });
      break;
    case OpKind::Shl:
    case OpKind::Shr: {
      // Shifts past the width give 0 (or the sign for arithmetic right shifts), as the GPU's.
      int bits = ir::bitWidth(resultType().kind());
      bool logical = resultType().isUnsigned() || resultType().isBool();
      bool left = kind == OpKind::Shl;
      mapI([&](int64_t a, int64_t b) -> int64_t {
        uint64_t n = uint64_t(b) & (bits == 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1);
        if (left)
          return n >= uint64_t(bits) ? 0 : int64_t(uint64_t(a) << n);
        if (logical) {
          uint64_t ua = bits == 64 ? uint64_t(a) : uint64_t(a) & ((uint64_t(1) << bits) - 1);
          return n >= uint64_t(bits) ? 0 : int64_t(ua >> n);
        }
        return a >> std::min<uint64_t>(n, 63); // sign-extended in the slot
      });
      break;
    }
    case OpKind::UMulHi: {
      int bits = ir::bitWidth(resultType().kind());
      mapI([&](int64_t a, int64_t b) -> int64_t {
        if (bits == 64)
          return int64_t((unsigned __int128)uint64_t(a) * uint64_t(b) >> 64);
        uint64_t ua = uint64_t(a) & 0xffffffffu, ub = uint64_t(b) & 0xffffffffu;
        return int64_t((ua * ub) >> 32);
      });
      break;
    }
    case OpKind::And:
      mapI([](int64_t a, int64_t b) { return a & b; });
      break;
    case OpKind::Or:
      mapI([](int64_t a, int64_t b) { return a | b; });
      break;
    default:
      internalError("interpreter: not a binary op");
    }
    return true;
  }

  bool compare() {
    const std::string &pred = op_.strAttr("pred");
    auto &o = outI();
    if (op_.operand(0)->type().isFloat()) {
      const auto &a = in(0).f, &b = in(1).f;
      for (size_t e = 0; e < o.size(); ++e) {
        double x = a[e], y = b[e];
        o[e] = pred == "lt"   ? x < y
               : pred == "le" ? x <= y
               : pred == "gt" ? x > y
               : pred == "ge" ? x >= y
               : pred == "eq" ? x == y
                              : !(x == y); // ne: unordered
      }
      return true;
    }
    // Pointers compare unsigned; host addresses are below 2^63, so signed order agrees. u64
    // compares its bits unsigned (narrower unsigned values are zero-extended in the slot).
    const auto &a = in(0).i, &b = in(1).i;
    bool u64 = op_.operand(0)->type().kind() == ScalarKind::U64;
    for (size_t e = 0; e < o.size(); ++e) {
      int64_t x = a[e], y = b[e];
      if (u64) { // flip the sign bit: unsigned order in signed arithmetic
        x = int64_t(uint64_t(x) ^ (uint64_t(1) << 63));
        y = int64_t(uint64_t(y) ^ (uint64_t(1) << 63));
      }
      o[e] = pred == "lt"   ? x < y
             : pred == "le" ? x <= y
             : pred == "gt" ? x > y
             : pred == "ge" ? x >= y
             : pred == "eq" ? x == y
                            : x != y;
    }
    return true;
  }

  bool select() {
    const auto &c = in(0).i;
    if (resultType().isFloat()) {
      const auto &a = in(1).f, &b = in(2).f;
      auto &o = outF();
      for (size_t e = 0; e < o.size(); ++e)
        o[e] = c[e] ? a[e] : b[e];
    } else {
      const auto &a = in(1).i, &b = in(2).i;
      auto &o = outI();
      for (size_t e = 0; e < o.size(); ++e)
        o[e] = c[e] ? a[e] : b[e];
    }
    return true;
  }

  bool unary() {
    ScalarKind k = resultType().kind();
    if (resultType().isFloat()) {
      const auto &a = in(0).f;
      auto &o = outF();
      bool isExp = op_.kind() == OpKind::Exp;
      for (size_t e = 0; e < o.size(); ++e)
        o[e] = isExp ? roundTo(k, std::exp(a[e])) : -a[e];
    } else {
      const auto &a = in(0).i;
      auto &o = outI();
      for (size_t e = 0; e < o.size(); ++e)
        o[e] = wrapTo(k, subWrap(0, a[e]));
    }
    return true;
  }

  bool bitwiseNot() {
    ScalarKind k = resultType().kind();
    const auto &a = in(0).i;
    auto &o = outI();
    for (size_t e = 0; e < o.size(); ++e)
      o[e] = wrapTo(k, ~a[e]);
    return true;
  }

  // The same bits under another type of the same width.
  bool bitcast() {
    const ir::Type &from = op_.operand(0)->type(), &to = resultType();
    size_t n = count(to);
    std::vector<uint64_t> bits(n);
    for (size_t e = 0; e < n; ++e) {
      if (from.isFloat()) {
        double x = in(0).f[e];
        bits[e] = isFp8(from.kind()) ? ir::toFp8(x, from.kind()) : floatToBits(from.kind(), x);
      } else {
        bits[e] = uint64_t(in(0).i[e]);
      }
    }
    if (to.isFloat()) {
      auto &o = outF();
      for (size_t e = 0; e < n; ++e)
        o[e] = isFp8(to.kind()) ? ir::fromFp8(uint8_t(bits[e]), to.kind())
                                : floatFromBits(to.kind(), bits[e]);
    } else {
      auto &o = outI();
      for (size_t e = 0; e < n; ++e)
        o[e] = wrapTo(to.kind(), int64_t(bits[e]));
    }
    return true;
  }

  // The math functions in double, rounded to the element type once (the GPU computes 16-bit
  // floats in f32; its approximate functions are within docs/INTERPRETER.md's tolerance).
  bool math() {
    using ir::MathFn;
    MathFn fn = *ir::parseMathFn(op_.strAttr("fn"));
    ScalarKind k = resultType().kind();
    if (resultType().isInt()) { // abs
      const auto &a = in(0).i;
      auto &o = outI();
      for (size_t e = 0; e < o.size(); ++e)
        o[e] = wrapTo(k, a[e] < 0 ? subWrap(0, a[e]) : a[e]);
      return true;
    }
    std::vector<const std::vector<double> *> args;
    for (unsigned i = 0; i < op_.numOperands(); ++i)
      args.push_back(&in(i).f);
    auto &o = outF();
    for (size_t e = 0; e < o.size(); ++e) {
      double x = (*args[0])[e];
      double y = args.size() > 1 ? (*args[1])[e] : 0, z = args.size() > 2 ? (*args[2])[e] : 0;
      double r = 0;
      switch (fn) {
      case MathFn::Exp2: r = std::exp2(x); break;
      case MathFn::Log: r = std::log(x); break;
      case MathFn::Log2: r = std::log2(x); break;
      case MathFn::Sqrt:
      case MathFn::SqrtRn: r = std::sqrt(x); break;
      case MathFn::Rsqrt: r = 1.0 / std::sqrt(x); break;
      case MathFn::Abs: r = std::fabs(x); break;
      case MathFn::Sin: r = std::sin(x); break;
      case MathFn::Cos: r = std::cos(x); break;
      case MathFn::Tanh: r = std::tanh(x); break;
      case MathFn::Sigmoid: r = 1.0 / (1.0 + std::exp(-x)); break;
      case MathFn::Erf: r = std::erf(x); break;
      case MathFn::Log1p: r = std::log1p(x); break;
      case MathFn::Expm1: r = std::expm1(x); break;
      case MathFn::Floor: r = std::floor(x); break;
      case MathFn::Ceil: r = std::ceil(x); break;
      case MathFn::Fma: r = std::fma(x, y, z); break;
      case MathFn::Pow: r = std::pow(x, y); break;
      case MathFn::DivRn: r = x / y; break;
      case MathFn::Tan: r = std::tan(x); break;
      case MathFn::Asin: r = std::asin(x); break;
      case MathFn::Acos: r = std::acos(x); break;
      case MathFn::Atan: r = std::atan(x); break;
      case MathFn::Sinh: r = std::sinh(x); break;
      case MathFn::Cosh: r = std::cosh(x); break;
      case MathFn::Asinh: r = std::asinh(x); break;
      case MathFn::Acosh: r = std::acosh(x); break;
      case MathFn::Atanh: r = std::atanh(x); break;
      case MathFn::Cbrt: r = std::cbrt(x); break;
      case MathFn::Log10: r = std::log10(x); break;
      case MathFn::Erfc: r = std::erfc(x); break;
      case MathFn::Erfinv: r = erfinvOf(x); break;
      case MathFn::Trunc: r = std::trunc(x); break;
      case MathFn::Rint: r = std::nearbyint(x); break;
      case MathFn::Round: r = std::round(x); break;
      case MathFn::Atan2: r = std::atan2(x, y); break;
      case MathFn::Hypot: r = std::hypot(x, y); break;
      case MathFn::Fmod: r = std::fmod(x, y); break;
      case MathFn::Copysign: r = std::copysign(x, y); break;
      }
      o[e] = roundTo(k, r);
    }
    return true;
  }

  bool cast() {
    const ir::Type &from = op_.operand(0)->type(), &to = resultType();
    ScalarKind k = to.kind();
    if (from.isFloat()) {
      const auto &a = in(0).f;
      if (to.isFloat()) {
        auto &o = outF();
        for (size_t e = 0; e < o.size(); ++e)
          o[e] = roundTo(k, a[e]);
      } else {
        auto &o = outI();
        for (size_t e = 0; e < o.size(); ++e) {
          double x = a[e];
          if (to.isBool()) {
            o[e] = x != 0 || std::isnan(x);
            continue;
          }
          // fptosi/fptoui truncate; out of range is undefined on the GPU: saturate here.
          int bits = ir::bitWidth(k);
          if (to.isUnsigned()) {
            double hi = bits == 64 ? 18446744073709549568.0 : std::ldexp(1.0, bits) - 1;
            o[e] = std::isnan(x) ? 0 : int64_t(uint64_t(std::trunc(std::clamp(x, 0.0, hi))));
          } else {
            double lo = -std::ldexp(1.0, bits - 1);
            double hi = bits == 64 ? 9223372036854774784.0 : std::ldexp(1.0, bits - 1) - 1;
            o[e] = std::isnan(x) ? 0 : int64_t(std::trunc(std::clamp(x, lo, hi)));
          }
        }
      }
      return true;
    }
    const auto &a = in(0).i;
    if (to.isFloat()) {
      auto &o = outF();
      bool u64 = from.kind() == ScalarKind::U64;
      // One rounding, as the GPU's cvt: 64-bit integers go to f32 directly, not through double.
      for (size_t e = 0; e < o.size(); ++e)
        o[e] = k == ScalarKind::F32 ? double(u64 ? float(uint64_t(a[e])) : float(a[e]))
                                    : roundTo(k, u64 ? double(uint64_t(a[e])) : double(a[e]));
    } else {
      auto &o = outI();
      for (size_t e = 0; e < o.size(); ++e)
        o[e] = to.isBool() ? a[e] != 0 : wrapTo(k, a[e]); // i1 holds 0/1: zext for free
    }
    return true;
  }

  bool addPtr() {
    int64_t bytes = elementBytes(resultType().kind());
    mapI([&](int64_t p, int64_t off) { return addWrap(p, mulWrap(off, bytes)); });
    return true;
  }

  // --- memory ---------------------------------------------------------------------------------

  void check(const char *what, int64_t addr, int64_t bytes, size_t element, size_t n) {
    if (uint64_t(addr) % uint64_t(bytes) != 0)
      userError(std::string(what) + " at a misaligned address " + hex(addr) + " (element " +
                    std::to_string(element) + " of " + std::to_string(n) + ", program " +
                    std::to_string(m_.pid) + "): " + std::to_string(bytes) +
                    "-byte elements need " + std::to_string(bytes) + "-byte alignment",
                op_.loc());
    if (!m_.memory.contains(uint64_t(addr), uint64_t(bytes)))
      userError(std::string(what) + " out of bounds in program " + std::to_string(m_.pid) +
                    ": element " + std::to_string(element) + " of " + std::to_string(n) +
                    " accesses " + std::to_string(bytes) + " bytes at " + hex(addr) + ", " +
                    m_.memory.explain(uint64_t(addr), uint64_t(bytes)) +
                    "; no mask switches it off (mask the access or fix its offsets)",
                op_.loc());
  }

  static std::string hex(int64_t v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%" PRIx64, uint64_t(v));
    return buf;
  }

  // Loads and stores move a float's bits as the GPU does, NaN payloads included (FloatBits.h).
  static double readFloat(ScalarKind k, const void *p) {
    uint64_t bits = 0;
    std::memcpy(&bits, p, size_t(elementBytes(k))); // little-endian: the low bytes
    return isFp8(k) ? ir::fromFp8(uint8_t(bits), k) : floatFromBits(k, bits);
  }
  static void writeFloat(ScalarKind k, void *p, double x) {
    uint64_t bits = isFp8(k) ? ir::toFp8(x, k) : floatToBits(k, x);
    std::memcpy(p, &bits, size_t(elementBytes(k))); // little-endian: the low bytes
  }
  // Integers of every width, sign- or zero-extended into the slot by their kind; i1 as a byte.
  static int64_t readInt(ScalarKind k, const void *p) {
    if (k == ScalarKind::I1) {
      uint8_t v;
      std::memcpy(&v, p, 1);
      return v & 1;
    }
    uint64_t v = 0;
    std::memcpy(&v, p, size_t(elementBytes(k))); // little-endian: the low bytes
    return wrapTo(k, int64_t(v));
  }
  static void writeInt(ScalarKind k, void *p, int64_t v) {
    if (k == ScalarKind::I1)
      v &= 1;
    std::memcpy(p, &v, size_t(elementBytes(k))); // little-endian: the low bytes
  }

  bool load() {
    if (op_.hasAttr("multicast") && m_.cluster)
      checkMulticastTile();
    const ir::Type &t = resultType();
    ScalarKind k = t.kind();
    int64_t bytes = elementBytes(k);
    const auto &ptrs = in(0).i;
    // (a load traced from a tensor descriptor has the descriptor's scalars after `other`)
    const std::vector<int64_t> *mask = op_.numOperands() >= 3 ? &in(1).i : nullptr;
    size_t n = count(t);
    if (t.isFloat()) {
      const std::vector<double> *other = mask ? &in(2).f : nullptr;
      auto &o = outF();
      for (size_t e = 0; e < n; ++e) {
        if (mask && !(*mask)[e]) {
          o[e] = (*other)[e];
          continue;
        }
        check("load", ptrs[e], bytes, e, n);
        o[e] = readFloat(k, reinterpret_cast<const void *>(ptrs[e]));
      }
    } else {
      const std::vector<int64_t> *other = mask ? &in(2).i : nullptr;
      auto &o = outI();
      for (size_t e = 0; e < n; ++e) {
        if (mask && !(*mask)[e]) {
          o[e] = (*other)[e];
          continue;
        }
        check("load", ptrs[e], bytes, e, n);
        o[e] = readInt(k, reinterpret_cast<const void *>(ptrs[e]));
      }
    }
    return true;
  }

  bool store() {
    const ir::Type &t = op_.operand(1)->type();
    ScalarKind k = t.kind();
    int64_t bytes = elementBytes(k);
    const auto &ptrs = in(0).i;
    const std::vector<int64_t> *mask = op_.numOperands() >= 3 ? &in(2).i : nullptr;
    size_t n = count(t);
    // Check every active lane first: a failing store writes nothing.
    for (size_t e = 0; e < n; ++e)
      if (!mask || (*mask)[e])
        check("store", ptrs[e], bytes, e, n);
    for (size_t e = 0; e < n; ++e) {
      if (mask && !(*mask)[e])
        continue;
      void *p = reinterpret_cast<void *>(ptrs[e]);
      if (t.isFloat())
        writeFloat(k, p, in(1).f[e]);
      else
        writeInt(k, p, in(1).i[e]);
    }
    return true;
  }

  // --- shape changes -------------------------------------------------------------------------

  // Broadcast and trans: each result element reads one operand element, found from the
  // result's coordinates (a broadcast dimension reads index 0; trans reads dim order[i]).
  bool gather() {
    const ir::Type &from = op_.operand(0)->type();
    const std::vector<int64_t> &shape = resultType().shape();
    std::vector<int64_t> order(shape.size());
    for (size_t d = 0; d < order.size(); ++d)
      order[d] = int64_t(d);
    if (op_.kind() == OpKind::Trans)
      order = ir::parseOrder(op_.strAttr("order"));
    std::vector<int64_t> strides(from.shape().size(), 0);
    for (int64_t d = int64_t(strides.size()) - 1, s = 1; d >= 0; --d) {
      strides[size_t(d)] = from.shape()[size_t(d)] == 1 ? 0 : s;
      s *= from.shape()[size_t(d)];
    }
    size_t n = count(resultType());
    std::vector<size_t> source(n);
    std::vector<int64_t> coord(shape.size(), 0);
    for (size_t e = 0; e < n; ++e) {
      size_t at = 0;
      for (size_t d = 0; d < shape.size(); ++d)
        at += size_t(coord[d] * strides[size_t(order[d])]);
      source[e] = at;
      for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
        if (++coord[size_t(d)] < shape[size_t(d)])
          break;
        coord[size_t(d)] = 0;
      }
    }
    const Tensor &x = in(0);
    if (resultType().isFloat()) {
      auto &o = outF();
      for (size_t e = 0; e < n; ++e)
        o[e] = x.f[source[e]];
    } else {
      auto &o = outI();
      for (size_t e = 0; e < n; ++e)
        o[e] = x.i[source[e]];
    }
    return true;
  }

  // join interleaves its operands along the new last dimension (a at even, b at odd row-major
  // positions); split takes them apart again.
  bool joinOrSplit() {
    auto move = [&](auto member) {
      if (op_.kind() == OpKind::Join) {
        const auto &a = in(0).*member, &b = in(1).*member;
        auto &o = out().*member;
        o.resize(2 * a.size());
        for (size_t e = 0; e < a.size(); ++e) {
          o[2 * e] = a[e];
          o[2 * e + 1] = b[e];
        }
        return;
      }
      const auto x = in(0).*member; // a copy: the results may be resized first
      for (unsigned half = 0; half < 2; ++half) {
        auto &o = m_.at(op_.result(half)).*member;
        o.resize(x.size() / 2);
        for (size_t e = 0; e < o.size(); ++e)
          o[e] = x[2 * e + half];
      }
    };
    if (op_.operand(0)->type().isFloat())
      move(&Tensor::f);
    else
      move(&Tensor::i);
    return true;
  }

  // Atomics, element by element in order (programs run one at a time, so each is atomic); the
  // old values come back, 0 where masked off.
  bool atomic() {
    const ir::Type &t = resultType();
    ScalarKind k = t.kind();
    bool cas = op_.kind() == OpKind::AtomicCAS;
    std::string kind = cas ? "cas" : op_.strAttr("op");
    int64_t bytes = elementBytes(k);
    const auto &ptrs = in(0).i;
    const std::vector<int64_t> *mask = !cas && op_.numOperands() >= 3 ? &in(2).i : nullptr;
    size_t n = count(t);
    if (t.isFloat()) {
      auto &o = outF();
      const auto &val = in(1).f;
      for (size_t e = 0; e < n; ++e) {
        if (mask && !(*mask)[e]) {
          o[e] = 0;
          continue;
        }
        check("atomic", ptrs[e], bytes, e, n);
        void *p = reinterpret_cast<void *>(ptrs[e]);
        double old = readFloat(k, p), v = val[e], next = v;
        if (kind == "add")
          next = old + v;
        else if (kind == "max")
          next = fmaximum(old, v);
        else if (kind == "min")
          next = fminimum(old, v);
        else if (kind == "cas")
          next = old == v ? in(2).f[e] : old;
        writeFloat(k, p, roundTo(k, next));
        o[e] = old;
      }
      return true;
    }
    auto &o = outI();
    const auto &val = in(1).i;
    bool u = t.isUnsigned();
    for (size_t e = 0; e < n; ++e) {
      if (mask && !(*mask)[e]) {
        o[e] = 0;
        continue;
      }
      check("atomic", ptrs[e], bytes, e, n);
      void *p = reinterpret_cast<void *>(ptrs[e]);
      int64_t old = readInt(k, p), v = val[e], next = v;
      if (kind == "add")
        next = addWrap(old, v);
      else if (kind == "max")
        next = u ? int64_t(std::max(uint64_t(old), uint64_t(v))) : std::max(old, v);
      else if (kind == "min")
        next = u ? int64_t(std::min(uint64_t(old), uint64_t(v))) : std::min(old, v);
      else if (kind == "and")
        next = old & v;
      else if (kind == "or")
        next = old | v;
      else if (kind == "xor")
        next = old ^ v;
      else if (kind == "cas")
        next = old == v ? in(2).i[e] : old;
      writeInt(k, p, wrapTo(k, next));
      o[e] = old;
    }
    return true;
  }

  // --- reductions -----------------------------------------------------------------------------

  bool reduce() {
    const ir::Type &t = op_.operand(0)->type();
    int64_t axis = op_.intAttr("axis");
    // The input as [outer, len, inner] around the reduced axis.
    int64_t outer = 1, inner = 1, len = t.shape()[size_t(axis)];
    for (int d = 0; d < t.rank(); ++d) {
      if (d < axis)
        outer *= t.shape()[size_t(d)];
      else if (d > axis)
        inner *= t.shape()[size_t(d)];
    }
    OpKind kind = op_.kind();
    ScalarKind k = t.kind();
    auto index = [&](int64_t o, int64_t j, int64_t i) { return size_t((o * len + j) * inner + i); };
    if (t.isFloat()) {
      const auto &a = in(0).f;
      auto &o = outF();
      for (int64_t x = 0; x < outer; ++x)
        for (int64_t i = 0; i < inner; ++i) {
          double acc = kind == OpKind::ReduceMax ? -INFINITY
                       : kind == OpKind::ReduceMin ? INFINITY : 0.0;
          for (int64_t j = 0; j < len; ++j) {
            double v = a[index(x, j, i)];
            acc = kind == OpKind::ReduceMax ? fmaximum(acc, v)
                  : kind == OpKind::ReduceMin ? fminimum(acc, v) : acc + v;
          }
          o[size_t(x * inner + i)] = roundTo(k, acc);
        }
    } else {
      const auto &a = in(0).i;
      auto &o = outI();
      for (int64_t x = 0; x < outer; ++x)
        for (int64_t i = 0; i < inner; ++i) {
          int64_t acc = kind == OpKind::ReduceMax ? std::numeric_limits<int64_t>::min()
                        : kind == OpKind::ReduceMin ? std::numeric_limits<int64_t>::max() : 0;
          for (int64_t j = 0; j < len; ++j) {
            int64_t v = a[index(x, j, i)];
            acc = kind == OpKind::ReduceMax ? std::max(acc, v)
                  : kind == OpKind::ReduceMin ? std::min(acc, v) : addWrap(acc, v);
          }
          o[size_t(x * inner + i)] = wrapTo(k, acc);
        }
    }
    return true;
  }

  // A multicast tile (desc.load(offsets, multicast)) is one copy for the whole cluster: every
  // program must load it, at the same offsets. The exchange is the cluster's barrier, as the
  // GPU's copies into each other's shared memory are.
  void checkMulticastTile() {
    int64_t rank = ir::tensorRank(op_);
    Cluster::Value mine;
    for (int64_t d = 0; d < rank; ++d)
      mine.i.push_back(m_.at(ir::tensorOffset(op_, d)).i[0]);
    int64_t me = m_.pid % m_.clusterSize;
    const std::vector<Cluster::Value> &all = m_.cluster->exchange(me, op_, mine);
    auto offsets = [](const Cluster::Value &v) {
      std::string s = "[";
      for (size_t d = 0; d < v.i.size(); ++d)
        s += (d ? ", " : "") + std::to_string(v.i[d]);
      return s + "]";
    };
    for (size_t r = 0; r < all.size(); ++r)
      if (all[r].i != all[0].i) {
        int64_t first = m_.pid - me;
        userError("load of a tensor descriptor with multicast: program " +
                  std::to_string(first) + " (rank 0 of its cluster) loads the tile at " +
                  offsets(all[0]) + " but program " + std::to_string(first + int64_t(r)) +
                  " (rank " + std::to_string(r) + ") at " + offsets(all[r]) +
                  " (a multicast tile is copied once for the whole cluster: every program of "
                  "it must load the same tile)",
                  op_.loc());
      }
  }

  // One scalar or block per program of the cluster, combined element by element in rank order
  // as the GPU does, in double (ints in int64) and rounded once, as reduce() does. The exchange
  // is the cluster's barrier.
  bool clusterReduce() {
    const Tensor &x = in(0);
    if (!m_.cluster) { // a cluster of one program: the input itself
      out() = x;
      return true;
    }
    bool isFloat = resultType().isFloat();
    Cluster::Value mine;
    if (isFloat)
      mine.f = x.f;
    else
      mine.i = x.i;
    const std::vector<Cluster::Value> &all =
        m_.cluster->exchange(m_.pid % m_.clusterSize, op_, std::move(mine));
    bool isMax = op_.kind() == OpKind::ClusterMax;
    ScalarKind k = resultType().kind();
    if (isFloat) {
      std::vector<double> &o = outF();
      for (size_t e = 0; e < o.size(); ++e) {
        double acc = all[0].f[e];
        for (size_t r = 1; r < all.size(); ++r)
          acc = isMax ? fmaximum(acc, all[r].f[e]) : acc + all[r].f[e];
        o[e] = roundTo(k, acc);
      }
    } else {
      std::vector<int64_t> &o = outI();
      for (size_t e = 0; e < o.size(); ++e) {
        int64_t acc = all[0].i[e];
        for (size_t r = 1; r < all.size(); ++r)
          acc = isMax ? std::max(acc, all[r].i[e]) : addWrap(acc, all[r].i[e]);
        o[e] = wrapTo(k, acc);
      }
    }
    return true;
  }

  // cluster_gather(x, other): program r's x at lane r, `other` past the cluster.
  bool clusterGather() {
    const Tensor &x = in(0), &other = in(1);
    bool isFloat = resultType().isFloat();
    Cluster::Value mine;
    if (isFloat)
      mine.f = {x.f[0]};
    else
      mine.i = {x.i[0]};
    std::vector<Cluster::Value> single{mine};
    const std::vector<Cluster::Value> &all =
        m_.cluster ? m_.cluster->exchange(m_.pid % m_.clusterSize, op_, std::move(mine)) : single;
    if (isFloat) {
      std::vector<double> &o = outF();
      for (size_t r = 0; r < o.size(); ++r)
        o[r] = r < all.size() ? all[r].f[0] : other.f[0];
    } else {
      std::vector<int64_t> &o = outI();
      for (size_t r = 0; r < o.size(); ++r)
        o[r] = r < all.size() ? all[r].i[0] : other.i[0];
    }
    return true;
  }

  // --- print ----------------------------------------------------------------------------------

  // The GPU's vprintf formats (compiler/codegen/LowerPrint.cpp), so both print alike. The op's
  // lines go out in one write, which stdio locks: the programs of a cluster, running at once,
  // never interleave within them.
  bool print() {
    const ir::Type &t = op_.operand(0)->type();
    const std::string &prefix = op_.strAttr("prefix");
    const Tensor &x = in(0);
    std::string text;
    for (size_t e = 0; e < count(t); ++e) {
      appendf(text, "pid (%lld) ", (long long)m_.pid);
      if (t.isBlock()) { // row-major coordinates, as the GPU prints them
        std::string index;
        size_t rest = e;
        for (int d = t.rank() - 1; d >= 0; --d) {
          size_t extent = size_t(t.shape()[size_t(d)]);
          index = std::to_string(rest % extent) + (index.empty() ? "" : ", ") + index;
          rest /= extent;
        }
        appendf(text, "idx (%s) ", index.c_str());
      }
      if (!prefix.empty())
        appendf(text, "%s ", prefix.c_str());
      if (t.isFloat())
        appendf(text, "%f\n", x.f[e]);
      else if (t.isPtr())
        appendf(text, "0x%llx\n", (unsigned long long)x.i[e]);
      else if (t.isUnsigned())
        appendf(text, "%llu\n", (unsigned long long)x.i[e]);
      else
        appendf(text, "%lld\n", (long long)x.i[e]);
    }
    if (m_.options.printTo)
      std::fwrite(text.data(), 1, text.size(), m_.options.printTo);
    return true;
  }

  template <typename... A> static void appendf(std::string &text, const char *format, A... args) {
    int size = std::snprintf(nullptr, 0, format, args...);
    size_t at = text.size();
    text.resize(at + size_t(size) + 1); // snprintf writes the terminating NUL too
    std::snprintf(text.data() + at, size_t(size) + 1, format, args...);
    text.resize(at + size_t(size));
  }

  Machine &m_;
  const ir::Op &op_;
};

} // namespace

bool evaluate(Machine &m, const ir::Op &op) { return OpEvaluator(m, op).run(); }

} // namespace tritium::interpreter
