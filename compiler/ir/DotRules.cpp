// dot's type rules. The pairs are those the tensor cores' mma.sync and wgmma take: f16 and bf16
// into f32 (f16 also into f16), f32 through tf32 (or three tf32 products, or plain fp32 fmas),
// e4m3 and e5m2 (mixed too) into f32, and signed or unsigned 8-bit integers into i32.
#include "compiler/ir/DotRules.h"

#include <bit>

namespace tritium::ir {

namespace {

bool is8BitInt(ScalarKind k) { return k == ScalarKind::I8 || k == ScalarKind::U8; }
bool isFp8(ScalarKind k) { return k == ScalarKind::F8E4M3 || k == ScalarKind::F8E5M2; }

std::string shapeText(const std::vector<int64_t> &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

} // namespace

bool isDotInputPrecision(const std::string &p) {
  return p == "tf32" || p == "tf32x3" || p == "ieee";
}

std::optional<ScalarKind> defaultDotAccumulator(ScalarKind k) {
  if (k == ScalarKind::F16 || k == ScalarKind::BF16 || k == ScalarKind::F32 || isFp8(k))
    return ScalarKind::F32;
  if (is8BitInt(k))
    return ScalarKind::I32;
  return std::nullopt;
}

std::string dotTypeError(const Type &a, const Type &b, const Type &acc,
                         const std::string &precision) {
  if (a.isPtr() || b.isPtr() || acc.isPtr())
    return "dot multiplies numbers, not pointers";
  if (!a.isBlock() || !b.isBlock() || a.rank() != b.rank() || a.rank() < 2 || a.rank() > 3)
    return "dot takes two blocks of rank 2 ([M, K] x [K, N]) or 3 ([B, M, K] x [B, K, N]), got " +
           a.str() + " and " + b.str();
  int r = a.rank();
  const auto &sa = a.shape(), &sb = b.shape();
  int64_t M = sa[size_t(r - 2)], K = sa[size_t(r - 1)], N = sb[size_t(r - 1)];
  if (sb[size_t(r - 2)] != K)
    return "dot of " + shapeText(sa) + " and " + shapeText(sb) +
           ": the inner dimensions differ (" + std::to_string(K) + " and " +
           std::to_string(sb[size_t(r - 2)]) + ")";
  if (r == 3 && sa[0] != sb[0])
    return "dot of " + shapeText(sa) + " and " + shapeText(sb) + ": the batch dimensions differ";
  for (auto [name, v] : {std::pair{"M", M}, {"N", N}, {"K", K}})
    if (v < 16 || !std::has_single_bit(uint64_t(v)))
      return "dot of " + shapeText(sa) + " and " + shapeText(sb) + ": " + name + " = " +
             std::to_string(v) + " must be a power of two of at least 16 (the tensor cores' "
             "tile); pad the block and mask the loads";
  std::vector<int64_t> out = sa;
  out[size_t(r - 1)] = N;
  if (acc.shape() != out)
    return "dot's accumulator must be " + shapeText(out) + ", got " + acc.str();
  ScalarKind ka = a.kind(), kb = b.kind(), kc = acc.kind();
  bool sameFamily = ka == kb || (isFp8(ka) && isFp8(kb)) || (is8BitInt(ka) && is8BitInt(kb));
  if (!sameFamily)
    return "dot's operands must have one dtype (or both be fp8, or both 8-bit integers), got " +
           dtypeName(ka) + " and " + dtypeName(kb);
  if (!defaultDotAccumulator(ka))
    return "dot takes fp16, bf16, fp32, fp8 (e4m3, e5m2) or 8-bit integer operands, got " +
           dtypeName(ka);
  bool accOk = kc == *defaultDotAccumulator(ka) || (ka == ScalarKind::F16 && kc == ScalarKind::F16);
  if (!accOk)
    return "dot of " + dtypeName(ka) + " operands accumulates in " +
           dtypeName(*defaultDotAccumulator(ka)) + (ka == ScalarKind::F16 ? " or fp16" : "") +
           ", not " + dtypeName(kc);
  if (ka == ScalarKind::F32) {
    if (!isDotInputPrecision(precision))
      return "dot of fp32 operands takes input_precision \"tf32\", \"tf32x3\" or \"ieee\", got \"" +
             precision + "\"";
  } else if (!precision.empty() && precision != "tf32") {
    return "input_precision \"" + precision + "\" applies to fp32 operands only, not " +
           dtypeName(ka);
  }
  return "";
}

std::string impreciseAccumulationError(const Type &a, int64_t n) {
  if (!isFp8(a.kind()))
    return "max_num_imprecise_acc applies to fp8 operands only, not " + dtypeName(a.kind());
  int64_t K = a.shape().back();
  if (n <= 0 || n % 32 != 0 || n > K)
    return "max_num_imprecise_acc must be a positive multiple of 32 of at most K (" +
           std::to_string(K) + "), got " + std::to_string(n);
  return "";
}

} // namespace tritium::ir
