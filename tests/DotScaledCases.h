// dot_scaled (frontend/DotScaled.cpp) against a double-precision reference, shared by the GPU
// test (tests/gpu/DotGpuTest.cpp) and its interpreter twin (tests/unit/DotInterpreterTest.cpp):
// one program multiplies a whole [M, K] x [K, N] product of microscaling operands (e2m1 two a
// byte, e4m3, e5m2, bf16, fp16), each with or without its e8m0 scales. Inputs are fresh random
// values of each format and scales of 2^-5 to 2^5; C is poisoned first.
#pragma once

#include "DotCases.h"
#include "PtxChecks.h"

namespace tritium::testing::tensorcores {

struct DotScaledCase {
  std::string aFormat = "e2m1", bFormat = "e4m3";
  bool aScale = true, bScale = true;
  int M = 32, N = 32, K = 64;
  std::string arch = ""; // "" = the default
  bool assemble = false;  // also hand the PTX to ptxas (for `arch`), as the tests without a GPU do

  std::string str() const {
    std::ostringstream s;
    s << aFormat << (aScale ? " scaled" : "") << " x " << bFormat << (bScale ? " scaled" : "")
      << " " << M << "x" << N << "x" << K << (arch.empty() ? "" : " " + arch);
    return s.str();
  }
};

inline const char *const kScaledFormats[] = {"e2m1", "e4m3", "e5m2", "bf16", "fp16"};

inline int scaledFormatCode(const std::string &f) {
  for (int i = 0; i < 5; ++i)
    if (f == kScaledFormats[i])
      return i;
  return -1;
}

// The format's storage type (e2m1: bytes of two values).
inline ir::ScalarKind scaledStorage(int code) {
  static const ir::ScalarKind kinds[] = {ir::ScalarKind::U8, ir::ScalarKind::F8E4M3,
                                         ir::ScalarKind::F8E5M2, ir::ScalarKind::BF16,
                                         ir::ScalarKind::F16};
  return kinds[code];
}

// C[m, n] = sum over k of a[m, k] b[k, n], both given in their formats (FA, FB: codes of
// kScaledFormats) with their scales (SA, SB); a is [M, K] ([M, K / 2] bytes for e2m1), b
// [K, N] ([K / 2, N]), a_scale [M, K / 32], b_scale [N, K / 32].
inline void dotScaledKernel(dsl::Ptr c, dsl::Ptr a, dsl::Ptr a_scale, dsl::Ptr b,
                            dsl::Ptr b_scale, int M, int N, int K, int FA, int FB, int SA,
                            int SB) {
  using namespace dsl;
  int ka = FA == 0 ? K / 2 : K, kb = FB == 0 ? K / 2 : K, groups = K / 32;
  auto rm = arange(0, M), rn = arange(0, N);
  auto x = load(a + rm(_, None) * ka + arange(0, ka)(None, _));
  auto y = load(b + arange(0, kb)(_, None) * N + rn(None, _));
  std::optional<Value> xs, ys;
  if (SA)
    xs = load(a_scale + rm(_, None) * groups + arange(0, groups)(None, _));
  if (SB)
    ys = load(b_scale + rn(_, None) * groups + arange(0, groups)(None, _));
  store(c + rm(_, None) * N + rn(None, _),
        dot_scaled(x, xs, kScaledFormats[FA], y, ys, kScaledFormats[FB]));
}

// An e2m1 value (4 bits: sign, 2 exponent bits, 1 mantissa bit).
inline double e2m1Value(unsigned nibble) {
  static const double magnitudes[] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  return (nibble & 8 ? -1 : 1) * magnitudes[nibble & 7];
}

// Random operand values of a format, `rows` x `cols` (K along `kDim`): the bytes stored and
// each logical element's value, row-major over the unpacked [rows, cols].
inline Encoded scaledOperand(int code, int rows, int cols, int kDim, std::mt19937 &rng) {
  if (code != 0)
    return encode(scaledStorage(code),
                  randomValues(scaledStorage(code), size_t(rows) * cols, rng));
  Encoded e;
  std::uniform_int_distribution<int> random(0, 15);
  std::vector<unsigned> nibbles(size_t(rows) * cols);
  for (unsigned &n : nibbles)
    n = unsigned(random(rng));
  for (unsigned n : nibbles)
    e.values.push_back(e2m1Value(n));
  // Two along K a byte, the first in the low nibble.
  int packedRows = kDim == 0 ? rows / 2 : rows, packedCols = kDim == 1 ? cols / 2 : cols;
  e.raw.resize(size_t(packedRows) * packedCols);
  for (int r = 0; r < packedRows; ++r)
    for (int c = 0; c < packedCols; ++c) {
      size_t first = kDim == 1 ? size_t(r) * cols + 2 * c : size_t(2 * r) * cols + c;
      size_t second = kDim == 1 ? first + 1 : first + size_t(cols);
      e.raw[size_t(r) * packedCols + c] =
          static_cast<unsigned char>(nibbles[first] | nibbles[second] << 4);
    }
  return e;
}

template <typename Buffer>
void checkDotScaled(CUstream stream, const std::function<void()> &sync, const DotScaledCase &c) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  int fa = scaledFormatCode(c.aFormat), fb = scaledFormatCode(c.bFormat);
  int groups = c.K / 32;
  Encoded a = scaledOperand(fa, c.M, c.K, 1, rng), b = scaledOperand(fb, c.K, c.N, 0, rng);
  std::uniform_int_distribution<int> exponent(122, 132); // 2^-5 .. 2^5
  std::vector<unsigned char> sa(size_t(c.M) * groups), sb(size_t(c.N) * groups);
  for (unsigned char &s : sa)
    s = static_cast<unsigned char>(exponent(rng));
  for (unsigned char &s : sb)
    s = static_cast<unsigned char>(exponent(rng));
  Buffer da = uploadBytes<Buffer>(a.raw), db = uploadBytes<Buffer>(b.raw);
  Buffer dsa = uploadBytes<Buffer>(sa), dsb = uploadBytes<Buffer>(sb);
  Buffer dc = poisonedBytes<Buffer>(size_t(c.M) * c.N * 4);
  auto k = kernel("dot_scaled", dotScaledKernel,
                  {"c", "a", "a_scale", "b", "b_scale", "M", "N", "K", "FA", "FB", "SA", "SB"});
  Specialization spec{.signature = {"*fp32", "*" + ir::dtypeName(scaledStorage(fa)), "*u8",
                                    "*" + ir::dtypeName(scaledStorage(fb)), "*u8"},
                      .constexprs = {c.M, c.N, c.K, fa, fb, c.aScale ? 1 : 0, c.bScale ? 1 : 0},
                      .numWarps = 4};
  spec.ptxVersion = 84; // fp8 storage
  if (!c.arch.empty())
    spec.arch = c.arch;
  std::initializer_list<KernelArg> args = {dc, da, dsa, db, dsb};
  CompiledKernel &ck = k.compile(spec.specializedFor(args));
  if (c.assemble)
    expectAssembles(ck.artifacts(), c.arch.empty() ? spec.arch : c.arch);
  ck.launch(1, stream, args);
  sync();
  std::vector<unsigned char> raw(size_t(c.M) * c.N * 4);
  dc.download(raw.data(), raw.size());
  std::vector<double> got = decode(ir::ScalarKind::F32, raw);
  // fp16 operands beside another format are rounded to bf16 (8 bits) for the product.
  bool roundsFp16 = (c.aFormat == "fp16") != (c.bFormat == "fp16");
  size_t bad = 0;
  std::ostringstream first;
  for (int m = 0; m < c.M; ++m)
    for (int n = 0; n < c.N; ++n) {
      double want = 0, magnitude = 0;
      for (int kk = 0; kk < c.K; ++kk) {
        double x = a.values[size_t(m) * c.K + kk], y = b.values[size_t(kk) * c.N + n];
        if (c.aScale)
          x *= std::ldexp(1.0, sa[size_t(m) * groups + kk / 32] - 127);
        if (c.bScale)
          y *= std::ldexp(1.0, sb[size_t(n) * groups + kk / 32] - 127);
        want += x * y;
        magnitude += std::fabs(x * y);
      }
      double tol = (roundsFp16 ? 1.0 / 128 : 2e-5) * magnitude + 1e-6;
      double g = got[size_t(m) * c.N + n];
      if (!(std::isfinite(g) && std::fabs(g - want) <= tol) && bad++ < 5)
        first << "  [" << m << ", " << n << "] got " << g << ", want " << want << "\n";
    }
  EXPECT_EQ(bad, 0u) << "dot_scaled " << c.str() << ": " << bad << " of " << c.M * c.N
                     << " wrong (seed " << seed << "):\n"
                     << first.str();
}

} // namespace tritium::testing::tensorcores
