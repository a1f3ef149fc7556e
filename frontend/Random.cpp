// Random numbers as Triton 3.6's triton.language.random makes them, built from the DSL's own
// integer ops so that the interpreter and the GPU produce the same bits: Philox 4x32 with 10
// rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"), the counter from the
// offsets and the key from the seed, the first word mapped to a float in [0, 1) by Triton's
// scale, and Box-Muller for normals. interpreter/Philox.h is an independent host model of the
// same functions, and tests/data/triton_random.csv Triton's own numbers.
#include "frontend/DSL.h"
#include "frontend/Tracer.h"
#include "frontend/TypeRules.h"

namespace tritium::dsl {

using ir::ScalarKind;

namespace {

constexpr uint32_t kRoundA = 0xD2511F53u, kRoundB = 0xCD9E8D57u; // multipliers
constexpr uint32_t kKeyA = 0x9E3779B9u, kKeyB = 0xBB67AE85u;     // key increments (Weyl)

// The offsets as the counter's word type (u32 for 32-bit offsets, u64 for 64-bit ones).
ScalarKind counterKind(const Value &offset, const SourceLoc &loc) {
  const ir::Type &t = offset.type();
  if (t.isPtr() || t.isFloat() || t.isBool() || ir::bitWidth(t.kind()) < 32)
    userError("random numbers take offsets of 32- or 64-bit integers, got " + t.str(), loc);
  return ir::bitWidth(t.kind()) == 32 ? ScalarKind::U32 : ScalarKind::U64;
}

Value asKind(const Value &v, ScalarKind k) {
  return v.type().kind() == k ? v : bitcast(v, DType(k));
}

} // namespace

Group philox4x32(const Operand &c0, const Operand &c1, const Operand &c2, const Operand &c3,
                 const Operand &k0, const Operand &k1, int n_rounds, Loc l) {
  SourceLoc loc(l);
  if (n_rounds < 1 || n_rounds > 64)
    userError("philox4x32: n_rounds must be from 1 to 64, got " + std::to_string(n_rounds), loc);
  Value x0 = c0 * 1u, x1 = c1 * 1u, x2 = c2 * 1u, x3 = c3 * 1u; // values of their own
  Value key0 = k0 * 1u, key1 = k1 * 1u;
  // Each round's products as one 32 x 32 -> 64-bit multiply (mul.wide.u32: one wide IMAD)
  // whose halves are the high and low words, rather than a mul.hi and a mul.lo of the same
  // operands.
  auto product = [&](const Value &a, uint32_t m) { return cast(a, uint64, l) * uint64_t(m); };
  auto high = [&](const Value &p) { return cast(p >> uint64_t(32), uint32, l); };
  for (int r = 0; r < n_rounds; ++r) {
    Value pB = product(x2, kRoundB), pA = product(x0, kRoundA);
    x0 = high(pB) ^ x1 ^ key0;
    x2 = high(pA) ^ x3 ^ key1;
    x1 = cast(pB, uint32, l);
    x3 = cast(pA, uint32, l);
    key0 = key0 + kKeyA;
    key1 = key1 + kKeyB;
  }
  return {x0, x1, x2, x3};
}

Group randint4x(const Operand &seed, const Operand &offset, int n_rounds, Loc l) {
  SourceLoc loc(l);
  if (offset.kind != Operand::Kind::Value || !offset.value)
    userError("random numbers take traced offsets (a block or scalar of integers)", loc);
  Value off(offset.value);
  ScalarKind word = counterKind(off, loc);
  if (seed.kind == Operand::Kind::Float)
    userError("a random seed must be an integer, got " + describe(seed), loc);
  // Triton 3.6: the seed widened to 64 bits (signed seeds sign-extend) keys Philox with its low
  // and high words; the counter is the offset's low word, then its high word for 64-bit
  // offsets (0 for 32-bit ones), then two zeros. The words are always 32 bits.
  Value s = seed.kind == Operand::Kind::Value ? cast(seed, uint64, l)
                                              : cast(Operand(seed.i, l), uint64, l);
  Value k0 = cast(s & 0xffffffffu, uint32, l);
  Value k1 = cast(s >> 32u, uint32, l);
  Value wide = asKind(off, word);
  Value c0 = cast(wide, uint32, l); // the low word (a no-op for 32-bit offsets)
  Value zero = c0 * 0u;
  Value c1 = word == ScalarKind::U64 ? cast(wide >> 32u, uint32, l) : zero;
  return philox4x32(c0, c1, zero, zero, k0, k1, n_rounds, l);
}

Value randint(const Operand &seed, const Operand &offset, int n_rounds, Loc l) {
  return randint4x(seed, offset, n_rounds, l)[0];
}

// Triton's uint_to_uniform_float: the bits as a signed integer, negatives folded onto
// non-negatives (-x - 1), times the largest scale that keeps the product below 1.0.
Value uint_to_uniform_float(const Operand &x, Loc l) {
  SourceLoc loc(l);
  Value v(x.kind == Operand::Kind::Value ? x.value : nullptr);
  if (!v.ir() || v.type().isFloat() || ir::bitWidth(v.type().kind()) < 32)
    userError("uint_to_uniform_float takes 32- or 64-bit integers", loc);
  bool wide = ir::bitWidth(v.type().kind()) == 64;
  Value i = asKind(v, wide ? ScalarKind::I64 : ScalarKind::I32);
  i = where(i < 0, -i - 1, i, l);
  double scale = wide ? 1.0842020432385337e-19 : kUniformScale32;
  return cast(i, float32, l) * float(scale);
}

Value rand(const Operand &seed, const Operand &offset, int n_rounds, Loc l) {
  return uint_to_uniform_float(randint(seed, offset, n_rounds, l), l);
}

Group rand4x(const Operand &seed, const Operand &offset, int n_rounds, Loc l) {
  Group r = randint4x(seed, offset, n_rounds, l);
  for (Value &v : r)
    v = uint_to_uniform_float(v, l);
  return r;
}

// Box-Muller on the first two uniforms, as Triton's pair_uniform_to_normal.
Value randn(const Operand &seed, const Operand &offset, int n_rounds, Loc l) {
  Group i = randint4x(seed, offset, n_rounds, l);
  Value u1 = maximum(uint_to_uniform_float(i[0], l), 1.0e-7f, l);
  Value u2 = uint_to_uniform_float(i[1], l);
  Value th = u2 * 6.283185307179586f;
  Value r = sqrt(log(u1, l) * -2.0f, l);
  return r * cos(th, l);
}

} // namespace tritium::dsl
