// Triton 3.6's Philox random numbers on host scalars (see Philox.h and docs/RANDOM.md). Every
// float step is one IEEE fp32 operation in Triton's order, so rand is bit-exact; randn differs from
// the GPU only through the log/sqrt/cos implementations.
#include "interpreter/Philox.h"

#include <bit>
#include <cmath>
#include <cstdlib>

namespace tritium::philox {

namespace {

uint32_t mulhi32(uint32_t a, uint32_t b) { return uint32_t((uint64_t(a) * b) >> 32); }

uint64_t mulhi64(uint64_t a, uint64_t b) {
  return uint64_t((static_cast<unsigned __int128>(a) * b) >> 64);
}

// Both scales are Triton's Python float literals, which it rounds to fp32 (double -> float, round
// to nearest) before the multiply; written the same way here rather than as float literals.
const float Scale32 = static_cast<float>(4.6566127342e-10);
const float Scale64 = static_cast<float>(1.0842020432385337e-19);
const float TwoPi = static_cast<float>(6.283185307179586);
const float MinU1 = static_cast<float>(1.0e-7);

} // namespace

Block4x32 philox4x32(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                     uint32_t k1, int rounds) {
  for (int r = 0; r < rounds; ++r) {
    uint32_t oldC0 = c0, oldC2 = c2;
    c0 = mulhi32(RoundB32, oldC2) ^ c1 ^ k0;
    c2 = mulhi32(RoundA32, oldC0) ^ c3 ^ k1;
    c1 = RoundB32 * oldC2; // unsigned: wraps mod 2^32 like Triton's i32/u32 multiply
    c3 = RoundA32 * oldC0;
    k0 += KeyA32;
    k1 += KeyB32;
  }
  return {c0, c1, c2, c3};
}

Block4x64 philox4x64(uint64_t c0, uint64_t c1, uint64_t c2, uint64_t c3, uint64_t k0,
                     uint64_t k1, int rounds) {
  for (int r = 0; r < rounds; ++r) {
    uint64_t oldC0 = c0, oldC2 = c2;
    c0 = mulhi64(RoundB64, oldC2) ^ c1 ^ k0;
    c2 = mulhi64(RoundA64, oldC0) ^ c3 ^ k1;
    c1 = RoundB64 * oldC2;
    c3 = RoundA64 * oldC0;
    k0 += KeyA64;
    k1 += KeyB64;
  }
  return {c0, c1, c2, c3};
}

Block4x32 counterForOffset(int64_t offset, OffsetWidth width) {
  uint64_t bits = uint64_t(offset);
  uint32_t lo = uint32_t(bits);
  // Only a 64-bit offset contributes a high word; an i32 offset never sign-extends into c1.
  uint32_t hi = width == OffsetWidth::I64 ? uint32_t(bits >> 32) : 0;
  return {lo, hi, 0, 0};
}

Block4x32 randint4x(uint64_t seed, int64_t offset, OffsetWidth width, int rounds) {
  Block4x32 c = counterForOffset(offset, width);
  // Key = (low word, high word) of the seed widened to u64.
  return philox4x32(c[0], c[1], c[2], c[3], uint32_t(seed), uint32_t(seed >> 32), rounds);
}

uint32_t randint(uint64_t seed, int64_t offset, OffsetWidth width, int rounds) {
  return randint4x(seed, offset, width, rounds)[0];
}

float uint32ToUniformFloat(uint32_t x) {
  int32_t v = std::bit_cast<int32_t>(x);
  if (v < 0)
    v = ~v; // Triton's where(x < 0, -x - 1, x); ~x never overflows, unlike -x at INT32_MIN
  return static_cast<float>(v) * Scale32; // v <= 2^31 - 1, so the product is <= 1 - 2^-24
}

float uint64ToUniformFloat(uint64_t x) {
  int64_t v = std::bit_cast<int64_t>(x);
  if (v < 0)
    v = ~v;
  return static_cast<float>(v) * Scale64; // int64 -> float rounds to nearest, then one multiply
}

float rand(uint64_t seed, int64_t offset, OffsetWidth width, int rounds) {
  return uint32ToUniformFloat(randint(seed, offset, width, rounds));
}

std::array<float, 4> rand4x(uint64_t seed, int64_t offset, OffsetWidth width, int rounds) {
  Block4x32 r = randint4x(seed, offset, width, rounds);
  return {uint32ToUniformFloat(r[0]), uint32ToUniformFloat(r[1]), uint32ToUniformFloat(r[2]),
          uint32ToUniformFloat(r[3])};
}

std::pair<float, float> pairUniformToNormal(float u1, float u2) {
  u1 = std::fmax(MinU1, u1); // u1 can be exactly 0; log(0) would make r infinite
  float th = TwoPi * u2;
  float r = std::sqrt(-2.0f * std::log(u1)); // float overloads: fp32 log and sqrt
  return {r * std::cos(th), r * std::sin(th)};
}

float randn(uint64_t seed, int64_t offset, OffsetWidth width, int rounds) {
  Block4x32 r = randint4x(seed, offset, width, rounds);
  return pairUniformToNormal(uint32ToUniformFloat(r[0]), uint32ToUniformFloat(r[1])).first;
}

std::array<float, 4> randn4x(uint64_t seed, int64_t offset, OffsetWidth width, int rounds) {
  std::array<float, 4> u = rand4x(seed, offset, width, rounds);
  auto [n0, n1] = pairUniformToNormal(u[0], u[1]);
  auto [n2, n3] = pairUniformToNormal(u[2], u[3]);
  return {n0, n1, n2, n3};
}

uint32_t ulpDistance(float a, float b) {
  // Map the sign-magnitude float encoding onto a monotonic integer line (+0 and -0 meet at 0).
  auto ordered = [](float f) {
    int64_t bits = std::bit_cast<int32_t>(f);
    return bits < 0 ? int64_t(INT32_MIN) - bits : bits;
  };
  int64_t d = ordered(a) - ordered(b);
  return uint32_t(d < 0 ? -d : d);
}

} // namespace tritium::philox
