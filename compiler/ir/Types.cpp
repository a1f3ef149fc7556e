// Names and printing of TIR types.
#include <algorithm>
#include <climits>
#include <cmath>
#include "compiler/ir/Types.h"

namespace tritium::ir {

std::string dtypeName(ScalarKind k) {
  switch (k) {
  case ScalarKind::I1: return "i1";
  case ScalarKind::I8: return "i8";
  case ScalarKind::I16: return "i16";
  case ScalarKind::I32: return "i32";
  case ScalarKind::I64: return "i64";
  case ScalarKind::U8: return "u8";
  case ScalarKind::U16: return "u16";
  case ScalarKind::U32: return "u32";
  case ScalarKind::U64: return "u64";
  case ScalarKind::F8E4M3: return "fp8e4m3";
  case ScalarKind::F8E5M2: return "fp8e5m2";
  case ScalarKind::F16: return "fp16";
  case ScalarKind::BF16: return "bf16";
  case ScalarKind::F32: return "fp32";
  }
  return "?";
}

std::string irName(ScalarKind k) {
  switch (k) {
  case ScalarKind::F8E4M3: return "f8e4m3";
  case ScalarKind::F8E5M2: return "f8e5m2";
  case ScalarKind::F16: return "f16";
  case ScalarKind::F32: return "f32";
  default: return dtypeName(k);
  }
}

const std::vector<ScalarKind> &allScalarKinds() {
  static const std::vector<ScalarKind> all = {
      ScalarKind::I1,  ScalarKind::I8,  ScalarKind::I16,    ScalarKind::I32,
      ScalarKind::I64, ScalarKind::U8,  ScalarKind::U16,    ScalarKind::U32,
      ScalarKind::U64, ScalarKind::F8E4M3, ScalarKind::F8E5M2, ScalarKind::F16,
      ScalarKind::BF16, ScalarKind::F32};
  return all;
}

std::string dtypeNames() {
  std::string s;
  for (ScalarKind k : allScalarKinds())
    s += (s.empty() ? "" : ", ") + dtypeName(k);
  return s;
}

std::optional<ScalarKind> parseDtype(const std::string &name) {
  for (ScalarKind k : allScalarKinds())
    if (name == dtypeName(k) || name == irName(k))
      return k;
  // Triton's spellings of the fp8 types.
  if (name == "fp8e4nv")
    return ScalarKind::F8E4M3;
  if (name == "fp8e5")
    return ScalarKind::F8E5M2;
  return std::nullopt;
}

int bitWidth(ScalarKind k) {
  switch (k) {
  case ScalarKind::I1: return 1;
  case ScalarKind::I8: case ScalarKind::U8: case ScalarKind::F8E4M3: case ScalarKind::F8E5M2:
    return 8;
  case ScalarKind::I16: case ScalarKind::U16: case ScalarKind::F16: case ScalarKind::BF16:
    return 16;
  case ScalarKind::I32: case ScalarKind::U32: case ScalarKind::F32: return 32;
  case ScalarKind::I64: case ScalarKind::U64: return 64;
  }
  return 0;
}

bool isUnsignedKind(ScalarKind k) {
  return k == ScalarKind::U8 || k == ScalarKind::U16 || k == ScalarKind::U32 ||
         k == ScalarKind::U64;
}

std::pair<int64_t, int64_t> literalRange(ScalarKind k) {
  if (k == ScalarKind::I1)
    return {0, 1};
  int bits = bitWidth(k);
  if (bits >= 64)
    return {INT64_MIN, INT64_MAX};
  int64_t lo = -(int64_t(1) << (bits - 1));
  int64_t hi = isUnsignedKind(k) ? (int64_t(1) << bits) - 1 : (int64_t(1) << (bits - 1)) - 1;
  return {lo, hi};
}

bool literalFits(int64_t v, ScalarKind k) {
  if (isFloatKind(k))
    return true;
  auto [lo, hi] = literalRange(k);
  return v >= lo && v <= hi;
}

int byteWidth(ScalarKind k) { return std::max(1, bitWidth(k) / 8); }

bool isFloatKind(ScalarKind k) {
  return k == ScalarKind::F16 || k == ScalarKind::BF16 || k == ScalarKind::F32 ||
         k == ScalarKind::F8E4M3 || k == ScalarKind::F8E5M2;
}

namespace {
struct Fp8Format {
  int mantissaBits, bias;
  double largest;
  uint8_t nan;
};
Fp8Format fp8Format(ScalarKind k) {
  return k == ScalarKind::F8E4M3 ? Fp8Format{3, 7, 448.0, 0x7f} : Fp8Format{2, 15, 57344.0, 0x7e};
}
} // namespace

uint8_t toFp8(double x, ScalarKind k) {
  Fp8Format f = fp8Format(k);
  if (std::isnan(x))
    return f.nan;
  uint8_t sign = std::signbit(x) ? 0x80 : 0;
  double a = std::min(std::fabs(x), f.largest); // satfinite, infinities included
  int minExp = 1 - f.bias;
  int e = a > 0 ? std::max(minExp, int(std::floor(std::log2(a)))) : minExp;
  double quantum = std::ldexp(1.0, e - f.mantissaBits);
  double q = std::nearbyint(a / quantum); // the default rounding mode: to nearest even
  double v = std::min(q * quantum, f.largest);
  if (v == 0)
    return sign;
  int ev = std::max(minExp, int(std::floor(std::log2(v))));
  if (v < std::ldexp(1.0, minExp)) // subnormal: exponent field 0
    return uint8_t(sign | int(v / std::ldexp(1.0, minExp - f.mantissaBits)));
  int mant = int((v / std::ldexp(1.0, ev) - 1) * (1 << f.mantissaBits));
  return uint8_t(sign | ((ev + f.bias) << f.mantissaBits) | mant);
}

double fromFp8(uint8_t bits, ScalarKind k) {
  Fp8Format f = fp8Format(k);
  double sign = bits & 0x80 ? -1.0 : 1.0;
  int exp = (bits & 0x7f) >> f.mantissaBits, mant = bits & ((1 << f.mantissaBits) - 1);
  int maxExp = (1 << (7 - f.mantissaBits)) - 1;
  if (k == ScalarKind::F8E4M3 && exp == maxExp && mant == 7)
    return std::nan("");
  if (k == ScalarKind::F8E5M2 && exp == maxExp)
    return mant ? std::nan("") : sign * INFINITY;
  if (exp == 0)
    return sign * std::ldexp(double(mant), 1 - f.bias - f.mantissaBits);
  return sign * std::ldexp(1.0 + double(mant) / (1 << f.mantissaBits), exp - f.bias);
}

int64_t Type::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape_)
    n *= d;
  return n;
}

std::string Type::str() const {
  std::string elem = isPtr_ ? "ptr<" + irName(kind_) + ">" : irName(kind_);
  if (shape_.empty())
    return elem;
  std::string s = "block<";
  for (int64_t d : shape_)
    s += std::to_string(d) + "x";
  return s + elem + ">";
}

} // namespace tritium::ir
