// dot_scaled (Triton's tl.dot_scaled): a product of microscaling (MX) operands, each element
// of a group of 32 along K multiplied by its group's power-of-two scale. Hopper's tensor cores
// have no block-scaled instruction (Blackwell's tcgen05 does), so, as Triton does there, each
// operand is upcast to bf16 (fp16 when both are fp16), scaled in fp32 and handed to dot:
//
//   acc + (a x 2^(a_scale - 127)) x (b x 2^(b_scale - 127))
//
// e2m1 (fp4) operands come two to a byte along K, the first of each pair in the low nibble.
// Every value of e2m1, e4m3 and e5m2 is exact in bf16, and a power-of-two scale keeps it exact
// unless it leaves bf16's range, so the products are those of the scaled operands.
#include "frontend/DSL.h"
#include "frontend/Tracer.h"
#include "frontend/TypeRules.h"

#include <limits>

namespace tritium::dsl {

using ir::ScalarKind;
using ir::Type;

namespace {

// Elements of K that one scale covers (the MX formats' block).
constexpr int64_t kGroup = 32;

struct Format {
  std::string name;
  ScalarKind storage; // the operand's element type
  bool packed;        // two elements a byte along K (e2m1)
};

Format parseFormat(const std::string &name, const char *which, const SourceLoc &loc) {
  if (name == "e2m1")
    return {name, ScalarKind::U8, true};
  if (name == "e4m3")
    return {name, ScalarKind::F8E4M3, false};
  if (name == "e5m2")
    return {name, ScalarKind::F8E5M2, false};
  if (name == "bf16")
    return {name, ScalarKind::BF16, false};
  if (name == "fp16")
    return {name, ScalarKind::F16, false};
  userError(std::string("dot_scaled: ") + which + "_format must be \"e2m1\", \"e4m3\", \"e5m2\", " +
                "\"bf16\" or \"fp16\", got \"" + name + "\"",
            loc);
}

Type blockOf(const Operand &x, const std::string &what, const SourceLoc &loc) {
  if (x.kind != Operand::Kind::Value || !x.value || !x.value->type().isBlock() ||
      x.value->type().rank() != 2)
    userError("dot_scaled: " + what + " must be a 2-D block, got " + describe(x), loc);
  return x.value->type();
}

// e2m1 nibbles (in the low 4 bits of i32s) as bf16: sign, 2 exponent bits (bias 1), 1 mantissa
// bit; exponent 0 is the subnormal 0 or 0.5.
Value e2m1ToBf16(const Value &nibble, Loc l) {
  Value sign = Operand(Operand(nibble, l) >> 3, l) & 1;
  Value exponent = Operand(Operand(nibble, l) >> 1, l) & 3;
  Value mantissa = Operand(nibble, l) & 1;
  // Normal: 2^(e - 1) x (1 + m / 2), bf16's exponent field e - 1 + 127.
  Value normal = Operand(Operand(Operand(exponent, l) + 126, l) << 7, l) |
                 Operand(Operand(mantissa, l) << 6, l);
  Value subnormal = Operand(mantissa, l) * 0x3F00; // 0.5 or 0
  Value bits = where(Operand(exponent, l) == 0, subnormal, normal, l);
  bits = Operand(bits, l) | Operand(Operand(sign, l) << 15, l);
  return bitcast(cast(bits, uint16, l), bfloat16, l);
}

// The operand `x` in `f` as a block of `to` with K whole: along dimension `kDim`.
Value upcast(const Value &x, const Format &f, int kDim, DType to, Loc l) {
  if (!f.packed)
    return f.storage == to.kind ? x : cast(x, to, l);
  Value bytes = cast(x, int32, l);
  Value low = e2m1ToBf16(Operand(bytes, l) & 15, l);
  Value high = e2m1ToBf16(Operand(Operand(bytes, l) >> 4, l) & 15, l);
  if (to.kind != ScalarKind::BF16) {
    low = cast(low, to, l);
    high = cast(high, to, l);
  }
  if (kDim == 1) // [M, K / 2] -> [M, K]: the pair's first element, then its second
    return interleave(low, high, l);
  // [K / 2, N] -> [K / 2, 2, N] -> [K, N]
  const std::vector<int64_t> &s = x.type().shape();
  return reshape(permute(join(low, high, l), {0, 2, 1}, l), {2 * s[0], s[1]}, l);
}

// e8m0 scales (uint8) as fp32 powers of two: 2^(s - 127); 255 is NaN.
Value scaleValues(const Value &scale, Loc l) {
  Value s = cast(scale, int32, l);
  Value power = bitcast(Operand(s, l) << 23, float32, l);
  return where(Operand(s, l) == 255, Operand(std::numeric_limits<double>::quiet_NaN(), l), power, l);
}

} // namespace

Value dot_scaled(const Operand &a, const std::optional<Value> &a_scale,
                 const std::string &a_format, const Operand &b,
                 const std::optional<Value> &b_scale, const std::string &b_format,
                 const std::optional<Value> &acc, Loc l) {
  SourceLoc loc(l);
  Format fa = parseFormat(a_format, "a", loc), fb = parseFormat(b_format, "b", loc);
  Type ta = blockOf(a, "a", loc), tb = blockOf(b, "b", loc);
  for (auto [t, f, which] : {std::tuple{ta, fa, "a"}, std::tuple{tb, fb, "b"}}) {
    bool storageOk = f.packed ? (t.kind() == ScalarKind::U8 || t.kind() == ScalarKind::I8)
                              : t.kind() == f.storage;
    if (!storageOk)
      userError(std::string("dot_scaled: ") + which + " is " + t.str() + ", but " + which +
                    "_format \"" + f.name + "\" takes " +
                    (f.packed ? std::string("uint8 (two e2m1 values a byte)")
                              : Type::scalar(f.storage).str()),
                loc);
  }
  int64_t M = ta.shape()[0], N = tb.shape()[1];
  int64_t K = fa.packed ? 2 * ta.shape()[1] : ta.shape()[1];
  int64_t kB = fb.packed ? 2 * tb.shape()[0] : tb.shape()[0];
  if (K != kB)
    userError("dot_scaled: a has " + std::to_string(K) + " elements along K (" + ta.str() +
                  ", \"" + fa.name + "\") and b " + std::to_string(kB) + " (" + tb.str() +
                  ", \"" + fb.name + "\")",
              loc);
  auto checkScale = [&](const std::optional<Value> &s, int64_t rows, const char *which) {
    if (!s)
      return;
    Type t = s->type();
    if (K % kGroup != 0)
      userError("dot_scaled: scales cover groups of 32 along K, but K is " + std::to_string(K),
                loc);
    if (t.kind() != ScalarKind::U8 || !t.isBlock() || t.rank() != 2 || t.shape()[0] != rows ||
        t.shape()[1] != K / kGroup)
      userError(std::string("dot_scaled: ") + which + "_scale must be a uint8 block [" +
                    std::to_string(rows) + ", " + std::to_string(K / kGroup) + "] (e8m0), got " +
                    t.str(),
                loc);
  };
  checkScale(a_scale, M, "a");
  checkScale(b_scale, N, "b");
  // bf16 holds every value of the 8- and 4-bit formats; fp16 stays fp16 only when both are.
  DType to = fa.name == "fp16" && fb.name == "fp16" ? float16 : bfloat16;
  Value x = upcast(Value(a.value), fa, 1, to, l), y = upcast(Value(b.value), fb, 0, to, l);
  if (a_scale) { // [M, K] -> [M, K / 32, 32], each group times its scale
    Value grouped = reshape(cast(x, float32, l), {M, K / kGroup, kGroup}, l);
    Value scaled = Operand(grouped, l) * scaleValues(*a_scale, l)(_, _, None, l);
    x = cast(reshape(scaled, {M, K}, l), to, l);
  }
  if (b_scale) { // [K, N] -> [K / 32, 32, N], scales [N, K / 32] -> [K / 32, 1, N]
    Value grouped = reshape(cast(y, float32, l), {K / kGroup, kGroup, N}, l);
    Value scaled = Operand(grouped, l) * trans(scaleValues(*b_scale, l), l)(_, None, _, l);
    y = cast(reshape(scaled, {K, N}, l), to, l);
  }
  return acc ? dot(x, y, *acc, l) : dot(x, y, l);
}

} // namespace tritium::dsl
