// Bit-exact host reference for Triton 3.6's random numbers (tl.randint, tl.randint4x, tl.rand,
// tl.rand4x, tl.randn, tl.randn4x, tl.random.philox): counter-based Philox from (seed, offset).
// The interpreter and the GPU lowering are both checked against these scalar functions, so that a
// mask drawn in Triton (e.g. dropout) can be reproduced in tritium. docs/RANDOM.md has the
// algorithm, what is bit-exact and what is only close (randn goes through log/sqrt/cos).
#pragma once

#include <array>
#include <cstdint>
#include <utility>

namespace tritium::philox {

// Philox4x32 constants (Salmon et al., SC'11; same as Random123 and Triton).
inline constexpr uint32_t RoundA32 = 0xD2511F53; // multiplier applied to c0
inline constexpr uint32_t RoundB32 = 0xCD9E8D57; // multiplier applied to c2
inline constexpr uint32_t KeyA32 = 0x9E3779B9;   // Weyl increment of k0 (golden ratio)
inline constexpr uint32_t KeyB32 = 0xBB67AE85;   // Weyl increment of k1 (sqrt(3) - 1)
// Philox4x64 constants, used by Triton only when tl.random.philox gets 64-bit counter words.
inline constexpr uint64_t RoundA64 = 0xD2E7470EE14C6C93;
inline constexpr uint64_t RoundB64 = 0xCA5A826395121157;
inline constexpr uint64_t KeyA64 = 0x9E3779B97F4A7C15;
inline constexpr uint64_t KeyB64 = 0xBB67AE8584CAA73B;

// Triton's N_ROUNDS_DEFAULT: every tl.rand* uses Philox4x32-10 unless n_rounds is given.
inline constexpr int DefaultRounds = 10;

using Block4x32 = std::array<uint32_t, 4>;
using Block4x64 = std::array<uint64_t, 4>;

// `rounds` rounds of Philox4x32 on counter (c0..c3) with key (k0, k1); the key is bumped after
// every round. rounds == 10 is Random123's philox4x32-10; rounds == 0 returns the counter.
Block4x32 philox4x32(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                     uint32_t k1, int rounds = DefaultRounds);
// The same with 64-bit words (Random123's philox4x64-R).
Block4x64 philox4x64(uint64_t c0, uint64_t c1, uint64_t c2, uint64_t c3, uint64_t k0,
                     uint64_t k1, int rounds = DefaultRounds);

// --- Seeds -------------------------------------------------------------------------------------
// Triton converts the seed with seed.to(tl.uint64) and keys Philox4x32 with (low word, high
// word). That cast sign-extends signed types, so an i32 seed of -1 is the key (0xffffffff,
// 0xffffffff) but a u32 seed of 0xffffffff is (0xffffffff, 0). Every function below takes the
// seed already widened; these name the widening for each seed type (Triton passes a Python int
// seed as i32 when it fits, else i64 or u64, so "the int's value mod 2^64" in every case).
constexpr uint64_t seedFromI32(int32_t s) { return uint64_t(int64_t(s)); } // sign-extends
constexpr uint64_t seedFromU32(uint32_t s) { return uint64_t(s); }         // zero-extends
constexpr uint64_t seedFromI64(int64_t s) { return uint64_t(s); }
constexpr uint64_t seedFromU64(uint64_t s) { return s; }

// --- Offsets -----------------------------------------------------------------------------------
// The element type of the offset block decides the counter: Triton 3.6 (since PR #6832) always
// runs 32-bit Philox and puts offset.to(uint32) in c0 and, for 64-bit offsets only, the high word
// (offset >> 32) in c1; c2 = c3 = 0. So i32 offset -1 is counter (0xffffffff, 0, 0, 0) while i64
// offset -1 is (0xffffffff, 0xffffffff, 0, 0); non-negative offsets below 2^32 agree. Unsigned
// offsets behave like the signed type of the same width; 8/16-bit ones are sign-/zero-extended
// to 32 bits by the caller and passed as I32.
enum class OffsetWidth { I32, I64 };

// The Philox counter (c0, c1, c2, c3) Triton builds from `offset` (low 32 bits only for I32).
Block4x32 counterForOffset(int64_t offset, OffsetWidth width);

// tl.randint4x(seed, offset): all four Philox4x32 outputs, as uint32 bits.
Block4x32 randint4x(uint64_t seed, int64_t offset, OffsetWidth width,
                    int rounds = DefaultRounds);
// tl.randint(seed, offset): the first output of randint4x (Triton's block has dtype uint32).
uint32_t randint(uint64_t seed, int64_t offset, OffsetWidth width, int rounds = DefaultRounds);

// --- Uniform floats ----------------------------------------------------------------------------
// tl.random.uint_to_uniform_float on 32-bit input: view the bits as int32, fold negatives with
// ~x (= -x - 1, so the result is in [0, 2^31 - 1]), convert to float (round to nearest even),
// multiply by float(4.6566127342e-10) = (1 - 2^-24) * 2^-31. The scale sits one float below 2^-31
// so even 2^31 - 1, which rounds up to 2^31 as a float, maps to 1 - 2^-24: 1.0 is never returned.
float uint32ToUniformFloat(uint32_t x);
// The 64-bit branch (x of dtype int64/uint64): int64 view, same fold, float conversion (round to
// nearest), times float(1.0842020432385337e-19) = (1 - 2^-23) * 2^-63, so the maximum is
// 1 - 2^-23. Triton's rand never takes this branch (randint is always 32-bit); it is here for
// uint_to_uniform_float called directly on 64-bit integers.
float uint64ToUniformFloat(uint64_t x);

// tl.rand(seed, offset): uint32ToUniformFloat(randint(...)). Bit-exact with Triton.
float rand(uint64_t seed, int64_t offset, OffsetWidth width, int rounds = DefaultRounds);
// tl.rand4x(seed, offset): the four randint4x outputs, each through uint32ToUniformFloat.
std::array<float, 4> rand4x(uint64_t seed, int64_t offset, OffsetWidth width,
                            int rounds = DefaultRounds);

// --- Normal floats -----------------------------------------------------------------------------
// tl.random.pair_uniform_to_normal (Box-Muller), all in fp32, in this order:
//   u1 = max(1e-7f, u1)                  (keeps log away from log(0) = -inf)
//   th = float(6.283185307179586) * u2   (2*pi rounded to float, one fp32 multiply)
//   r  = sqrt(-2.0f * log(u1))
//   returns (r * cos(th), r * sin(th))
// Triton's GPU code uses libdevice's logf/sinf/cosf and a fast sqrt; this host version uses the C
// library's fp32 functions, so results agree with Triton to a few ulp, not bit for bit.
std::pair<float, float> pairUniformToNormal(float u1, float u2);

// tl.randn(seed, offset): the first (cosine) output of pairUniformToNormal on the uniforms of the
// first two randint4x words.
float randn(uint64_t seed, int64_t offset, OffsetWidth width, int rounds = DefaultRounds);
// tl.randn4x(seed, offset): Box-Muller on (word0, word1) and on (word2, word3), both outputs each.
std::array<float, 4> randn4x(uint64_t seed, int64_t offset, OffsetWidth width,
                             int rounds = DefaultRounds);

// --- Comparing floats --------------------------------------------------------------------------
// Distance in units in the last place between two finite floats (0 when bit-identical or +-0).
// Used to state randn's tolerance against Triton.
uint32_t ulpDistance(float a, float b);

} // namespace tritium::philox
