// The host reference for Triton's random numbers (interpreter/Philox.h): Random123's published
// Philox known-answer vectors, Triton's own numpy reference (test_random.py's CustomPhilox4x)
// re-done independently, properties of rand/randn, and tests/data/triton_random.csv
// (written by tools/triton_random_reference.py on the H200 with Triton 3.6): the exact Triton values.
#include "interpreter/Philox.h"
#include "TestSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

using namespace tritium::philox;

namespace {

// Random123 tests/kat_vectors (DEShawResearch/random123), the "philox4x32 R" and "philox4x64 R"
// lines: counter[4], key[2] -> output[4].
struct Kat32 {
  int rounds;
  Block4x32 ctr;
  std::array<uint32_t, 2> key;
  Block4x32 out;
};
const Kat32 Kat4x32[] = {
    {7, {0, 0, 0, 0}, {0, 0}, {0x5f6fb709, 0x0d893f64, 0x4f121f81, 0x4f730a48}},
    {7,
     {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x5207ddc2, 0x45165e59, 0x4d8ee751, 0x8c52f662}},
    {7,
     {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a}},
    {10, {0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {10,
     {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {10,
     {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, // digits of pi
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

struct Kat64 {
  int rounds;
  Block4x64 ctr;
  std::array<uint64_t, 2> key;
  Block4x64 out;
};
const uint64_t Ones = ~uint64_t(0);
const Kat64 Kat4x64[] = {
    {10,
     {0, 0, 0, 0},
     {0, 0},
     {0x16554d9eca36314c, 0xdb20fe9d672d0fdc, 0xd7e772cee186176b, 0x7e68b68aec7ba23b}},
    {10,
     {Ones, Ones, Ones, Ones},
     {Ones, Ones},
     {0x87b092c3013fe90b, 0x438c3c67be8d0224, 0x9cc7d7c69cd777b6, 0xa09caebf594f0ba0}},
    {10,
     {0x243f6a8885a308d3, 0x13198a2e03707344, 0xa4093822299f31d0, 0x082efa98ec4e6c89},
     {0x452821e638d01377, 0xbe5466cf34e90c6c},
     {0xa528f45403e61d95, 0x38c72dbd566e9788, 0xa5a1610e72fd18b5, 0x57bd43b5e52b7fe6}},
};

TEST(Philox, Random123KnownAnswers4x32) {
  for (const Kat32 &k : Kat4x32) {
    Block4x32 got = philox4x32(k.ctr[0], k.ctr[1], k.ctr[2], k.ctr[3], k.key[0], k.key[1],
                               k.rounds);
    EXPECT_EQ(got, k.out) << "philox4x32-" << k.rounds << " counter " << std::hex << k.ctr[0];
  }
}

TEST(Philox, Random123KnownAnswers4x64) {
  for (const Kat64 &k : Kat4x64) {
    Block4x64 got = philox4x64(k.ctr[0], k.ctr[1], k.ctr[2], k.ctr[3], k.key[0], k.key[1],
                               k.rounds);
    EXPECT_EQ(got, k.out) << "philox4x64-" << k.rounds << " counter " << std::hex << k.ctr[0];
  }
}

TEST(Philox, ZeroRoundsIsTheCounter) {
  Block4x32 c = {1, 2, 3, 4};
  EXPECT_EQ(philox4x32(1, 2, 3, 4, 5, 6, 0), c);
}

// Triton's test_random.py checks tl.randint against a numpy model (CustomPhilox4x with the
// 32-bit config): key = the seed's two low 32-bit pieces, counter = (offset, 0, seed pieces 2
// and 3 = 0), ten rounds of "multiply A*c0 and B*c2 into (lo, hi), permute, xor in the key",
// the key raised after each round, output word 0. This is that model written out again, step
// for step, independently of Philox.cpp's loop.
uint32_t tritonNumpyModelRandint(uint64_t seed, uint32_t offset) {
  uint32_t key[2] = {uint32_t(seed & 0xffffffff), uint32_t(seed >> 32)};
  uint32_t ctr[4] = {offset, 0, 0, 0};
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t(0xD2511F53u) * ctr[0]; // (lo0, hi0)
    uint64_t p1 = uint64_t(0xCD9E8D57u) * ctr[2]; // (lo1, hi1)
    uint32_t next[4] = {uint32_t(p1 >> 32) ^ ctr[1] ^ key[0], uint32_t(p1),
                        uint32_t(p0 >> 32) ^ ctr[3] ^ key[1], uint32_t(p0)};
    for (int i = 0; i < 4; ++i)
      ctr[i] = next[i];
    key[0] += 0x9E3779B9u;
    key[1] += 0xBB67AE85u;
  }
  return ctr[0];
}

TEST(Philox, RandintMatchesTritonsNumpyModel) {
  // The seeds of Triton's test_randint, including one wider than 32 bits.
  const uint64_t seeds[] = {0, 42, 124, 54, 0xffffffff, 0x0000000fcafeb0ba};
  for (uint64_t seed : seeds)
    for (uint32_t offset : {0u, 1u, 2u, 3u, 1023u, 1024u, 399999u}) {
      uint32_t want = tritonNumpyModelRandint(seed, offset);
      EXPECT_EQ(randint(seed, offset, OffsetWidth::I32), want) << seed << " " << offset;
      // Triton's test runs the same reference for int64 offsets (below 2^32).
      EXPECT_EQ(randint(seed, offset, OffsetWidth::I64), want) << seed << " " << offset;
    }
}

TEST(Philox, SeedAndOffsetLayout) {
  // Seed 0x0000000fcafeb0ba is key (0xcafeb0ba, 0xf); offset 5 is counter (5, 0, 0, 0).
  EXPECT_EQ(randint4x(0x0000000fcafeb0ba, 5, OffsetWidth::I32),
            philox4x32(5, 0, 0, 0, 0xcafeb0ba, 0xf));
  // An i32 seed sign-extends (Triton's seed.to(tl.uint64)); a u32 seed does not.
  EXPECT_EQ(seedFromI32(-1), ~uint64_t(0));
  EXPECT_EQ(seedFromU32(0xffffffffu), uint64_t(0xffffffff));
  EXPECT_EQ(randint4x(seedFromI32(-1), 7, OffsetWidth::I32),
            philox4x32(7, 0, 0, 0, 0xffffffff, 0xffffffff));
  // 64-bit offsets put their high word in c1; i32 offsets never fill c1.
  EXPECT_EQ(counterForOffset(0x123456789abcdef0, OffsetWidth::I64),
            (Block4x32{0x9abcdef0, 0x12345678, 0, 0}));
  EXPECT_EQ(counterForOffset(-1, OffsetWidth::I64), (Block4x32{0xffffffff, 0xffffffff, 0, 0}));
  EXPECT_EQ(counterForOffset(-1, OffsetWidth::I32), (Block4x32{0xffffffff, 0, 0, 0}));
  EXPECT_NE(randint(1, -1, OffsetWidth::I32), randint(1, -1, OffsetWidth::I64));
  EXPECT_EQ(randint(1, 77, OffsetWidth::I32), randint(1, 77, OffsetWidth::I64));
  // randint is word 0 of randint4x.
  EXPECT_EQ(randint(99, 3, OffsetWidth::I32), randint4x(99, 3, OffsetWidth::I32)[0]);
}

TEST(Philox, UniformFloatConstantsAndLimits) {
  // The scales as fp32: one float below 2^-31, and two floats below 2^-63.
  EXPECT_EQ(std::bit_cast<uint32_t>(uint32ToUniformFloat(1)), 0x2fffffffu);
  EXPECT_EQ(uint32ToUniformFloat(1), std::nextafter(std::ldexp(1.0f, -31), 0.0f));
  EXPECT_EQ(std::bit_cast<uint32_t>(uint64ToUniformFloat(1)), 0x1ffffffeu);
  // Zero maps to 0 and so does all-ones (int32 -1 folds to 0).
  EXPECT_EQ(uint32ToUniformFloat(0), 0.0f);
  EXPECT_EQ(uint32ToUniformFloat(0xffffffff), 0.0f);
  EXPECT_EQ(uint64ToUniformFloat(Ones), 0.0f);
  // The largest magnitudes (INT_MAX, and INT_MIN which folds onto it) stay below 1.0: this is
  // Triton's test_rand_limits.
  const float eps = std::numeric_limits<float>::epsilon();
  for (uint32_t x : {0x7fffffffu, 0x80000000u, 0x7fffff80u, 0x80000040u}) {
    float f = uint32ToUniformFloat(x);
    EXPECT_LT(f, 1.0f) << std::hex << x;
    EXPECT_GE(f, 1.0f - eps) << std::hex << x;
  }
  EXPECT_EQ(uint32ToUniformFloat(0x7fffffff), uint32ToUniformFloat(0x80000000));
  EXPECT_EQ(uint32ToUniformFloat(0x7fffffff), 1.0f - std::ldexp(1.0f, -24));
  for (uint64_t x : {uint64_t(INT64_MAX), uint64_t(INT64_MIN)}) {
    float f = uint64ToUniformFloat(x);
    EXPECT_LT(f, 1.0f);
    EXPECT_GE(f, 1.0f - eps);
  }
  EXPECT_EQ(uint64ToUniformFloat(uint64_t(INT64_MAX)), 1.0f - eps);
  // Small values are exact multiples of the scale; the sign fold maps x and ~x together.
  EXPECT_EQ(uint32ToUniformFloat(12345), 12345.0f * uint32ToUniformFloat(1));
  EXPECT_EQ(uint32ToUniformFloat(~12345u), uint32ToUniformFloat(12345));
}

TEST(Philox, RandIsUniformOnZeroOne) {
  const int n = 100000;
  double sum = 0, sumSq = 0;
  int below[10] = {};
  for (int i = 0; i < n; ++i) {
    float u = rand(42, i, OffsetWidth::I32);
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
    sumSq += double(u) * u;
    ++below[int(u * 10)];
  }
  double mean = sum / n, var = sumSq / n - mean * mean;
  EXPECT_NEAR(mean, 0.5, 0.005);
  EXPECT_NEAR(var, 1.0 / 12, 0.002);
  for (int b : below) // each decile holds ~10000; 5 sigma is ~470
    EXPECT_NEAR(b, n / 10, 500);
  // rand is the uniform of randint, and rand4x's first lane is rand.
  EXPECT_EQ(rand(7, 11, OffsetWidth::I64), uint32ToUniformFloat(randint(7, 11, OffsetWidth::I64)));
  EXPECT_EQ(rand4x(7, 11, OffsetWidth::I32)[0], rand(7, 11, OffsetWidth::I32));
}

TEST(Philox, RandnIsStandardNormal) {
  const int n = 100000;
  double sum = 0, sumSq = 0;
  int within1 = 0;
  for (int i = 0; i < n; ++i) {
    float z = randn(1234, i, OffsetWidth::I64);
    ASSERT_TRUE(std::isfinite(z)) << i;
    sum += z;
    sumSq += double(z) * z;
    within1 += std::fabs(z) < 1.0f;
  }
  double mean = sum / n, var = sumSq / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.015);
  EXPECT_NEAR(var, 1.0, 0.02);
  EXPECT_NEAR(double(within1) / n, 0.6827, 0.006);
  // randn is the cosine half of Box-Muller on words 0 and 1; randn4x pairs (0,1) and (2,3).
  auto n4 = randn4x(5, 6, OffsetWidth::I32);
  EXPECT_EQ(n4[0], randn(5, 6, OffsetWidth::I32));
  auto u = rand4x(5, 6, OffsetWidth::I32);
  EXPECT_EQ(n4[3], pairUniformToNormal(u[2], u[3]).second);
}

TEST(Philox, BoxMullerEdges) {
  // u1 = 0 is clamped to 1e-7: r = sqrt(-2 ln 1e-7) ~= 5.6777, finite.
  auto [c, s] = pairUniformToNormal(0.0f, 0.0f);
  EXPECT_NEAR(c, 5.6777, 1e-3);
  EXPECT_EQ(s, 0.0f);
  // The largest uniform (1 - 2^-24) gives a tiny r, still finite and non-negative in cos at 0.
  auto [c1, s1] = pairUniformToNormal(1.0f - std::ldexp(1.0f, -24), 0.0f);
  EXPECT_GT(c1, 0.0f);
  EXPECT_LT(c1, 1e-3f);
  EXPECT_EQ(s1, 0.0f);
}

TEST(Philox, UlpDistance) {
  EXPECT_EQ(ulpDistance(1.0f, 1.0f), 0u);
  EXPECT_EQ(ulpDistance(0.0f, -0.0f), 0u);
  EXPECT_EQ(ulpDistance(1.0f, std::nextafter(1.0f, 2.0f)), 1u);
  float tiny = std::numeric_limits<float>::denorm_min();
  EXPECT_EQ(ulpDistance(tiny, -tiny), 2u);
}

// --- Values produced by real Triton --------------------------------------------------------------

// tools/triton_random_reference.py wrote this file on the H200 (Triton 3.6); see docs/RANDOM.md.
const std::string TritonCsv = tritium::testing::testDataPath("triton_random.csv");

// randn through libdevice logf/cosf and a fast sqrt vs. the C library's: a few ulp apart. Where
// cos(th) crosses zero the result is tiny and an ulp bound is too strict, hence the absolute one.
constexpr uint32_t RandnMaxUlp = 8;
constexpr float RandnMaxAbs = 0x1p-21f;

uint32_t parseHex32(const std::string &s) { return uint32_t(std::stoul(s, nullptr, 16)); }

TEST(Philox, MatchesTritonCsv) {
  std::ifstream in(TritonCsv);
  ASSERT_TRUE(in) << TritonCsv << " is missing (tools/triton_random_reference.py writes it)";
  std::string line;
  while (std::getline(in, line) && !line.empty() && line[0] == '#') {
    std::printf("%s\n", line.c_str()); // provenance: Triton/torch versions, GPU
  }
  ASSERT_EQ(line, "seed,offset_dtype,offset,randint,randint4x_1,randint4x_2,randint4x_3,rand,"
                  "randn");
  int rows = 0;
  uint32_t worstUlp = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#')
      continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');)
      f.push_back(cell);
    ASSERT_EQ(f.size(), 9u) << line;
    // The seed is a Python int; Triton keys with its value mod 2^64 whatever type it gets.
    uint64_t seed = f[0][0] == '-' ? uint64_t(std::stoll(f[0])) : std::stoull(f[0]);
    ASSERT_TRUE(f[1] == "int32" || f[1] == "int64") << line;
    OffsetWidth width = f[1] == "int32" ? OffsetWidth::I32 : OffsetWidth::I64;
    int64_t offset = std::stoll(f[2]);
    Block4x32 want = {parseHex32(f[3]), parseHex32(f[4]), parseHex32(f[5]), parseHex32(f[6])};
    EXPECT_EQ(randint4x(seed, offset, width), want) << line;
    EXPECT_EQ(std::bit_cast<uint32_t>(rand(seed, offset, width)), parseHex32(f[7])) << line;
    float tritonN = std::bit_cast<float>(parseHex32(f[8]));
    float ours = randn(seed, offset, width);
    uint32_t ulp = ulpDistance(ours, tritonN);
    worstUlp = std::max(worstUlp, ulp);
    EXPECT_TRUE(ulp <= RandnMaxUlp || std::fabs(ours - tritonN) <= RandnMaxAbs)
        << line << ": randn " << ours << " vs Triton " << tritonN << " (" << ulp << " ulp)";
    ++rows;
  }
  EXPECT_GT(rows, 0);
  std::printf("compared %d Triton rows; randn worst %u ulp\n", rows, worstUlp);
}

} // namespace
