// dot (tensor cores) against double-precision references, shared by the GPU tests
// (tests/gpu/DotGpuTest.cpp) and their interpreter twins (tests/unit/DotInterpreterTest.cpp):
// Triton's tutorial matmul over every operand dtype and accumulator the tensor cores take,
// shapes that are not multiples of the tiles, operands of either major order (b read through
// trans()), batched dots, and a dot without an accumulator. Inputs are fresh random numbers
// rounded to their dtype on the host, outputs are poisoned, and every element is checked.
// `Buffer` is rt::DeviceBuffer or interpreter::HostBuffer.
#pragma once

#include "BlockCases.h"
#include "compiler/ir/Types.h"

#include <bit>
#include <cstring>
#include <optional>

namespace tritium::testing::tensorcores {

using namespace tritium::dsl;

// Triton's tutorial 03: C = A x B over BM x BN tiles in grouped order, K in steps of BK with
// masked loads (K need not be a multiple of BK), a pipelined loop, the accumulator cast to C's
// dtype. ACC: 0 fp32, 1 fp16, 2 i32. PREC: 0 tf32, 1 tf32x3, 2 ieee (fp32 operands).
// B_COLUMNS: b is given as [N, K] row-major, loaded as a [BN, BK] tile and transposed.
inline void matmulKernel(Ptr c, Ptr a, Ptr b, Int M, Int N, Int K, Int sam, Int sak, Int sbk,
                         Int sbn, Int scm, Int scn, int BM, int BN, int BK, int GROUP_M,
                         int STAGES, int ACC, int PREC, int B_COLUMNS) {
  auto pid = program_id(0);
  auto pidsM = cdiv(M, BM), pidsN = cdiv(N, BN);
  auto inGroup = GROUP_M * pidsN;
  auto firstM = (pid / inGroup) * GROUP_M;
  auto groupM = minimum(pidsM - firstM, GROUP_M);
  auto pidM = firstM + (pid % inGroup) % groupM;
  auto pidN = (pid % inGroup) / groupM;
  auto rm = pidM * BM + arange(0, BM);
  auto rn = pidN * BN + arange(0, BN);
  auto rk = arange(0, BK);
  auto acc = zeros({BM, BN}, ACC == 0 ? float32 : ACC == 1 ? float16 : int32);
  const char *precision = PREC == 0 ? "tf32" : PREC == 1 ? "tf32x3" : "ieee";
  for (auto k : range(0, cdiv(K, BK), 1, STAGES)) {
    auto kk = k * BK + rk;
    auto x = load(a + rm(_, None) * sam + kk(None, _) * sak,
                  (rm(_, None) < M) & (kk(None, _) < K), 0);
    Value y;
    if (B_COLUMNS)
      y = trans(load(b + rn(_, None) * sbn + kk(None, _) * sbk,
                     (rn(_, None) < N) & (kk(None, _) < K), 0));
    else
      y = load(b + kk(_, None) * sbk + rn(None, _) * sbn, (kk(_, None) < K) & (rn(None, _) < N),
               0);
    acc = dot(x, y, acc, {.input_precision = precision});
  }
  store(c + rm(_, None) * scm + rn(None, _) * scn, cast(acc, c.dtype()),
        (rm(_, None) < M) & (rn(None, _) < N));
}

// Batched: out[s] = x[s] x y[s] + 1 for S matrices of BM x BK and BK x BN, one program, the
// product started without an accumulator.
inline void batchedKernel(Ptr out, Ptr x, Ptr y, int S, int BM, int BN, int BK) {
  auto s = arange(0, S), m = arange(0, BM), n = arange(0, BN), k = arange(0, BK);
  auto xs = load(x + s(_, None, None) * (BM * BK) + m(None, _, None) * BK + k(None, None, _));
  auto ys = load(y + s(_, None, None) * (BK * BN) + k(None, _, None) * BN + n(None, None, _));
  auto prod = dot(xs, ys) + 1.0;
  store(out + s(_, None, None) * (BM * BN) + m(None, _, None) * BN + n(None, None, _), prod);
}

// Chained: out = cast(x y / 8, z's dtype) z, x [BM, BK], y [BK, BN], z [BN, BN2], one program.
// The first product's result is the second's a: on wgmma it reaches the instruction in
// registers, in the accumulator's fragment layout (KeepDotOperandsInRegisters.cpp), as
// attention's P does; at 8 bits after fp8 operands, the first product computes its columns in
// the 8-bit fragment's order (ByteFragmentColumns.cpp), after 16-bit ones the lanes trade them.
inline void chainedKernel(Ptr out, Ptr x, Ptr y, Ptr z, int BM, int BK, int BN, int BN2) {
  auto m = arange(0, BM), k = arange(0, BK), n = arange(0, BN), n2 = arange(0, BN2);
  auto xs = load(x + m(_, None) * BK + k(None, _));
  auto ys = load(y + k(_, None) * BN + n(None, _));
  auto zs = load(z + n(_, None) * BN2 + n2(None, _));
  auto p = cast(dot(xs, ys) * 0.125, z.dtype());
  store(out + m(_, None) * BN2 + n2(None, _), dot(p, zs));
}

// --- host side ----------------------------------------------------------------------------------

// Host values of a dtype: the bytes and the value they hold.
struct Encoded {
  std::vector<unsigned char> raw;
  std::vector<double> values;
};

inline double roundBf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  return double(std::bit_cast<float>(u));
}

inline Encoded encode(ir::ScalarKind k, const std::vector<double> &v) {
  Encoded e;
  int bytes = std::max(1, ir::bitWidth(k) / 8);
  e.raw.resize(v.size() * size_t(bytes));
  e.values.resize(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    unsigned char *p = e.raw.data() + i * size_t(bytes);
    double x = v[i];
    switch (k) {
    case ir::ScalarKind::F32: {
      float f = float(x);
      std::memcpy(p, &f, 4);
      x = f;
      break;
    }
    case ir::ScalarKind::F16: {
      _Float16 h = _Float16(x);
      std::memcpy(p, &h, 2);
      x = double(h);
      break;
    }
    case ir::ScalarKind::BF16: {
      x = roundBf16(float(x));
      uint32_t u = std::bit_cast<uint32_t>(float(x)) >> 16;
      uint16_t h = uint16_t(u);
      std::memcpy(p, &h, 2);
      break;
    }
    case ir::ScalarKind::F8E4M3:
    case ir::ScalarKind::F8E5M2:
      p[0] = ir::toFp8(x, k);
      x = ir::fromFp8(p[0], k);
      break;
    case ir::ScalarKind::I8:
      p[0] = uint8_t(int8_t(x));
      break;
    case ir::ScalarKind::U8:
      p[0] = uint8_t(x);
      break;
    default:
      ADD_FAILURE() << "no host encoding for " << ir::dtypeName(k);
    }
    e.values[i] = x;
  }
  return e;
}

inline std::vector<double> decode(ir::ScalarKind k, const std::vector<unsigned char> &raw) {
  int bytes = std::max(1, ir::bitWidth(k) / 8);
  std::vector<double> out(raw.size() / size_t(bytes));
  for (size_t i = 0; i < out.size(); ++i) {
    const unsigned char *p = raw.data() + i * size_t(bytes);
    if (k == ir::ScalarKind::F32) {
      float f;
      std::memcpy(&f, p, 4);
      out[i] = f;
    } else if (k == ir::ScalarKind::F16) {
      _Float16 h;
      std::memcpy(&h, p, 2);
      out[i] = double(h);
    } else if (k == ir::ScalarKind::BF16) {
      uint16_t h;
      std::memcpy(&h, p, 2);
      out[i] = double(std::bit_cast<float>(uint32_t(h) << 16));
    } else if (k == ir::ScalarKind::I32) {
      int32_t v;
      std::memcpy(&v, p, 4);
      out[i] = v;
    } else if (k == ir::ScalarKind::F8E4M3 || k == ir::ScalarKind::F8E5M2) {
      out[i] = ir::fromFp8(p[0], k);
    } else {
      ADD_FAILURE() << "no host decoding for " << ir::dtypeName(k);
    }
  }
  return out;
}

template <typename Buffer> Buffer uploadBytes(const std::vector<unsigned char> &raw) {
  Buffer buf(std::max<size_t>(raw.size(), 16));
  buf.upload(raw.data(), raw.size());
  return buf;
}

template <typename Buffer> Buffer poisonedBytes(size_t bytes) {
  Buffer buf(std::max<size_t>(bytes, 16));
  buf.fill32(0x7fc00001u); // a NaN for fp32 (and fp16/bf16 pairs); i32 outputs checked exactly
  return buf;
}

inline std::vector<double> randomValues(ir::ScalarKind k, size_t n, std::mt19937 &rng) {
  std::vector<double> v(n);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<int> s8(-128, 127), u8(0, 255);
  for (double &x : v)
    x = k == ir::ScalarKind::I8 ? s8(rng) : k == ir::ScalarKind::U8 ? u8(rng) : normal(rng);
  return v;
}

struct MatmulCase {
  ir::ScalarKind in = ir::ScalarKind::F16;
  ir::ScalarKind acc = ir::ScalarKind::F32; // f32, f16 or i32
  ir::ScalarKind out = ir::ScalarKind::F32;
  int M = 64, N = 64, K = 64;
  int BM = 32, BN = 32, BK = 32;
  int warps = 4, stages = 1;
  std::string precision = "tf32";
  bool bColumns = false;  // b stored [N, K] and transposed in the kernel
  int ptxVersion = 81;    // fp8 needs 84
  std::string arch = "";  // "" = the default

  std::string str() const {
    std::ostringstream s;
    s << ir::dtypeName(in) << "->" << ir::dtypeName(acc) << "->" << ir::dtypeName(out) << " "
      << M << "x" << N << "x" << K << " tiles " << BM << "x" << BN << "x" << BK << " warps "
      << warps << " stages " << stages << (in == ir::ScalarKind::F32 ? " " + precision : "")
      << (bColumns ? " b^T" : "") << (arch.empty() ? "" : " " + arch);
    return s.str();
  }
};

// |got - want| within the operands' and accumulator's rounding: exact for integers; a K-term
// sum of unit normals has a spread of sqrt(K), so the bounds scale with it.
inline double matmulTolerance(const MatmulCase &c) {
  double spread = std::sqrt(double(c.K));
  if (c.acc == ir::ScalarKind::I32)
    return 0;
  double t = 2e-5; // fp32 accumulation (the tensor cores truncate a little more than IEEE)
  if (c.in == ir::ScalarKind::F32 && c.precision == "tf32")
    t = 2e-3;
  // wgmma (sm_90a) truncates fp32 to tf32 where mma.sync's path rounds it: each operand loses
  // up to 2^-10 of itself, not 2^-11, and a K-term sum of unit normals' products then spreads
  // by about 1.1e-3 sqrt(K); 6e-3 sqrt(K) is over five of those spreads.
  if (c.in == ir::ScalarKind::F32 && c.precision == "tf32" && c.arch == "sm_90a")
    t = 6e-3;
  if (c.acc == ir::ScalarKind::F16)
    t = 4e-3;
  if (c.in == ir::ScalarKind::F8E4M3 || c.in == ir::ScalarKind::F8E5M2)
    t = 1e-3;
  return t * spread;
}

// The relative part: one rounding of the result to a 16-bit output (or accumulator), or the
// tensor cores' fp32 accumulation, which rounds a little worse than IEEE (an element of 287.368
// summed over K = 4096 came out 287.366 on the H200).
inline double matmulRelativeTolerance(const MatmulCase &c) {
  if (c.out == ir::ScalarKind::BF16)
    return 1.0 / 128;
  if (c.out == ir::ScalarKind::F16 || c.acc == ir::ScalarKind::F16)
    return 1.0 / 1024;
  return c.acc == ir::ScalarKind::I32 ? 0 : 2e-5;
}

// wgmma (sm_90a) sums fp8 products with fewer bits than fp32 (as Triton's fp8 dots on Hopper
// do by default, and torch._scaled_mm with use_fast_accum): its error grows with the sum of
// the products' magnitudes. The H200 measured up to 1.3e-4 of that sum (K = 300 and 1000);
// the bound is 2^-12.
inline double accumulationTolerance(const MatmulCase &c) {
  bool fp8 = c.in == ir::ScalarKind::F8E4M3 || c.in == ir::ScalarKind::F8E5M2;
  return fp8 && c.arch == "sm_90a" ? 1.0 / 4096 : 0;
}

inline auto matmulKernelOf() {
  return kernel("matmul", matmulKernel,
                {"c", "a", "b", "M", "N", "K", "sam", "sak", "sbk", "sbn", "scm", "scn", "BM", "BN",
                 "BK", "GROUP_M", "STAGES", "ACC", "PREC", "B_COLUMNS"});
}

// The case's specialization, before the launch arguments add their pointers' alignment.
inline Specialization matmulSpecialization(const MatmulCase &c) {
  std::string in = "*" + ir::dtypeName(c.in), out = "*" + ir::dtypeName(c.out);
  int accSel = c.acc == ir::ScalarKind::F32 ? 0 : c.acc == ir::ScalarKind::F16 ? 1 : 2;
  int prec = c.precision == "tf32" ? 0 : c.precision == "tf32x3" ? 1 : 2;
  int sbk = c.bColumns ? 1 : c.N, sbn = c.bColumns ? c.K : 1;
  // Unit strides specialized as 1 (":1", as Triton does) and the rest as divisible by 16 where
  // they are: the tiles' loads then become 16-byte cp.async copies the dot reads in place.
  auto unit = [](int stride) { return stride == 1 ? std::string("i32:1") : std::string("i32"); };
  Specialization spec{.signature = {out, in, in, "i32", "i32", "i32", unit(c.K), "i32:1",
                                    unit(sbk), unit(sbn), unit(c.N), "i32:1"},
                      .constexprs = {c.BM, c.BN, c.BK, 4, c.stages, accSel, prec,
                                     c.bColumns ? 1 : 0},
                      .numWarps = c.warps};
  spec.ptxVersion = c.ptxVersion;
  if (!c.arch.empty())
    spec.arch = c.arch;
  return spec;
}

template <typename Buffer>
void checkMatmul(CUstream stream, const std::function<void()> &sync, const MatmulCase &c) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  Encoded a = encode(c.in, randomValues(c.in, size_t(c.M) * c.K, rng));
  Encoded b = encode(c.in, randomValues(c.in, size_t(c.K) * c.N, rng));
  // b is b[k][n]; stored as [N][K] when bColumns.
  std::vector<double> bStored(size_t(c.K) * c.N);
  for (int k = 0; k < c.K; ++k)
    for (int n = 0; n < c.N; ++n)
      bStored[c.bColumns ? size_t(n) * c.K + k : size_t(k) * c.N + n] =
          b.values[size_t(k) * c.N + n];
  Encoded bEnc = encode(c.in, bStored);
  int outBytes = ir::bitWidth(c.out) / 8;
  Buffer da = uploadBytes<Buffer>(a.raw), db = uploadBytes<Buffer>(bEnc.raw);
  Buffer dc = poisonedBytes<Buffer>(size_t(c.M) * c.N * size_t(outBytes));
  auto k = matmulKernelOf();
  int sbk = c.bColumns ? 1 : c.N, sbn = c.bColumns ? c.K : 1;
  Specialization spec = matmulSpecialization(c);
  std::initializer_list<KernelArg> args = {dc, da, db, c.M, c.N, c.K, c.K, 1, sbk, sbn, c.N, 1};
  CompiledKernel &ck = k.compile(spec.specializedFor(args));
  int64_t grid = int64_t((c.M + c.BM - 1) / c.BM) * ((c.N + c.BN - 1) / c.BN);
  ck.launch(grid, stream, args);
  sync();
  std::vector<unsigned char> raw(size_t(c.M) * c.N * size_t(outBytes));
  dc.download(raw.data(), raw.size());
  std::vector<double> got = decode(c.out, raw);
  double tol = matmulTolerance(c), rel = matmulRelativeTolerance(c);
  size_t bad = 0;
  std::ostringstream first;
  for (int m = 0; m < c.M; ++m)
    for (int n = 0; n < c.N; ++n) {
      double want = 0, magnitude = 0;
      for (int kk = 0; kk < c.K; ++kk) {
        double p = a.values[size_t(m) * c.K + kk] * b.values[size_t(kk) * c.N + n];
        want += p;
        magnitude += std::fabs(p);
      }
      if (c.acc == ir::ScalarKind::I32)
        want = double(int32_t(uint32_t(int64_t(want))));
      double g = got[size_t(m) * c.N + n];
      bool ok = std::isfinite(g) && std::fabs(g - want) <= tol + rel * std::fabs(want) +
                                                               accumulationTolerance(c) * magnitude;
      if (!ok && bad++ < 5)
        first << "  [" << m << ", " << n << "] got " << g << ", want " << want << "\n";
    }
  EXPECT_EQ(bad, 0u) << "matmul " << c.str() << ": " << bad << " of " << c.M * c.N
                     << " wrong (tolerance " << tol << " + " << rel << " x |want|, seed " << seed
                     << "):\n"
                     << first.str();
}

template <typename Buffer>
void checkBatched(CUstream stream, const std::function<void()> &sync, int S, int BM, int BN,
                  int BK, int warps) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  Encoded x = encode(ir::ScalarKind::BF16, randomValues(ir::ScalarKind::BF16, size_t(S * BM * BK), rng));
  Encoded y = encode(ir::ScalarKind::BF16, randomValues(ir::ScalarKind::BF16, size_t(S * BK * BN), rng));
  Buffer dx = uploadBytes<Buffer>(x.raw), dy = uploadBytes<Buffer>(y.raw);
  Buffer out = poisonedBytes<Buffer>(size_t(S * BM * BN) * 4);
  auto k = kernel("batched_dot", batchedKernel, {"out", "x", "y", "S", "BM", "BN", "BK"});
  CompiledKernel &ck = k.compile({.signature = {"*fp32", "*bf16", "*bf16"},
                                  .constexprs = {S, BM, BN, BK},
                                  .numWarps = warps});
  ck.launch(1, stream, {out, dx, dy});
  sync();
  std::vector<unsigned char> raw(size_t(S * BM * BN) * 4);
  out.download(raw.data(), raw.size());
  std::vector<double> got = decode(ir::ScalarKind::F32, raw);
  double tol = 2e-5 * std::sqrt(double(BK));
  size_t bad = 0;
  for (int s = 0; s < S; ++s)
    for (int m = 0; m < BM; ++m)
      for (int n = 0; n < BN; ++n) {
        double want = 1.0;
        for (int kk = 0; kk < BK; ++kk)
          want += x.values[size_t((s * BM + m) * BK + kk)] * y.values[size_t((s * BK + kk) * BN + n)];
        double g = got[size_t((s * BM + m) * BN + n)];
        if (!(std::fabs(g - want) <= tol) && bad++ < 5)
          ADD_FAILURE() << "batched dot [" << s << ", " << m << ", " << n << "] got " << g
                        << ", want " << want << " (seed " << seed << ")";
      }
  EXPECT_EQ(bad, 0u) << "batched dot " << S << "x" << BM << "x" << BN << "x" << BK << " warps "
                     << warps;
}

// chainedKernel against double precision: p is rounded to z's type (`second`, else `in`) as
// the kernel rounds it, so the bound covers one rounding of p (and of x y's fp32 sum) per term.
// (e4m3's subnormals below 2^-6 are absolute errors of at most 2^-10 a term, inside 2 u |p z|
// at the magnitudes these normal operands give.)
template <typename Buffer>
void checkChained(CUstream stream, const std::function<void()> &sync, ir::ScalarKind in, int BM,
                  int BK, int BN, int BN2, int warps, const std::string &arch,
                  std::optional<ir::ScalarKind> second = std::nullopt) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  ir::ScalarKind pt = second.value_or(in);
  Encoded x = encode(in, randomValues(in, size_t(BM * BK), rng));
  Encoded y = encode(in, randomValues(in, size_t(BK * BN), rng));
  Encoded z = encode(pt, randomValues(pt, size_t(BN * BN2), rng));
  Buffer dx = uploadBytes<Buffer>(x.raw), dy = uploadBytes<Buffer>(y.raw),
         dz = uploadBytes<Buffer>(z.raw);
  Buffer out = poisonedBytes<Buffer>(size_t(BM * BN2) * 4);
  auto k = kernel("chained_dot", chainedKernel,
                  {"out", "x", "y", "z", "BM", "BK", "BN", "BN2"});
  std::string t = "*" + ir::dtypeName(in), tz = "*" + ir::dtypeName(pt);
  Specialization spec{.signature = {"*fp32", t, t, tz}, .constexprs = {BM, BK, BN, BN2},
                      .numWarps = warps};
  spec.arch = arch;
  bool fp8 = pt == ir::ScalarKind::F8E4M3;
  if (fp8 || in == ir::ScalarKind::F8E4M3)
    spec.ptxVersion = 84;
  CompiledKernel &ck = k.compile(spec);
  ck.launch(1, stream, {out, dx, dy, dz});
  sync();
  std::vector<unsigned char> raw(size_t(BM * BN2) * 4);
  out.download(raw.data(), raw.size());
  std::vector<double> got = decode(ir::ScalarKind::F32, raw);
  // Unit roundoff of p's type (bf16 8 bits, fp16 11, e4m3 4), with slack for fp32's sums.
  double u = pt == ir::ScalarKind::BF16 ? std::ldexp(1.0, -8)
           : fp8                        ? std::ldexp(1.0, -4)
                                        : std::ldexp(1.0, -11);
  size_t bad = 0;
  for (int m = 0; m < BM; ++m) {
    std::vector<double> p(static_cast<size_t>(BN), 0.0);
    for (int n = 0; n < BN; ++n) {
      double s = 0;
      for (int kk = 0; kk < BK; ++kk)
        s += x.values[size_t(m * BK + kk)] * y.values[size_t(kk * BN + n)];
      p[size_t(n)] = s * 0.125;
    }
    for (int n2 = 0; n2 < BN2; ++n2) {
      double want = 0, mag = 0;
      for (int n = 0; n < BN; ++n) {
        want += p[size_t(n)] * z.values[size_t(n * BN2 + n2)];
        mag += std::fabs(p[size_t(n)] * z.values[size_t(n * BN2 + n2)]);
      }
      double g = got[size_t(m * BN2 + n2)];
      double tol = 2 * u * mag + 1e-6;
      if (!(std::fabs(g - want) <= tol) && bad++ < 5)
        ADD_FAILURE() << "chained dot [" << m << ", " << n2 << "] got " << g << ", want " << want
                      << " (tolerance " << tol << ", seed " << seed << ")";
    }
  }
  EXPECT_EQ(bad, 0u) << "chained dot " << ir::dtypeName(in) << " then " << ir::dtypeName(pt)
                     << " " << BM << "x" << BK << "x"
                     << BN << "x" << BN2 << " warps " << warps << " " << arch;
}

// fp8 products summed over a long K with max_num_imprecise_acc = N_IMPRECISE (0: in the tensor
// cores' own precision throughout): one 64 x 64 tile, a [64, K] and b stored [64, K] (read
// K-major), 128 of K a step.
inline void impreciseAccumulationKernel(Ptr c, Ptr a, Ptr b, Int K, int N_IMPRECISE) {
  auto r = arange(0, 64), rk = arange(0, 128);
  auto acc = zeros({64, 64}, float32);
  for (auto k : range(0, K, 128, 3)) {
    auto x = load(a + r(_, None) * K + (k + rk)(None, _));
    auto y = load(b + r(_, None) * K + (k + rk)(None, _));
    acc = dot(x, trans(y), acc, {.max_num_imprecise_acc = N_IMPRECISE});
  }
  store(c + r(_, None) * 64 + r(None, _), acc);
}

// The largest error of that product against double precision, as a fraction of the largest sum
// of the products' magnitudes: e4m3 operands in [1, 2), all positive, so that the running sum
// grows with K and a sum held with fewer bits than fp32 loses them (the tensor cores' fp8
// accumulation, about 14 bits). The output is poisoned first and must be written everywhere.
template <typename Buffer>
double impreciseAccumulationError(CUstream stream, const std::function<void()> &sync, int K,
                                  int every, const std::string &arch) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(1.0, 2.0);
  std::vector<double> va(size_t(64) * K), vb(size_t(64) * K);
  for (double &v : va)
    v = dist(rng);
  for (double &v : vb)
    v = dist(rng);
  Encoded a = encode(ir::ScalarKind::F8E4M3, va), b = encode(ir::ScalarKind::F8E4M3, vb);
  Buffer da = uploadBytes<Buffer>(a.raw), db = uploadBytes<Buffer>(b.raw);
  Buffer dc = poisonedBytes<Buffer>(size_t(64) * 64 * 4);
  auto k = kernel("imprecise_acc", impreciseAccumulationKernel,
                  {"c", "a", "b", "K", "N_IMPRECISE"});
  Specialization spec{.signature = {"*fp32:16", "*fp8e4m3:16", "*fp8e4m3:16", "i32:16"},
                      .constexprs = {every}, .numWarps = 4};
  spec.ptxVersion = 84;
  if (!arch.empty())
    spec.arch = arch;
  k.compile(spec).launch(1, stream, {dc, da, db, K});
  sync();
  std::vector<unsigned char> raw(size_t(64) * 64 * 4);
  dc.download(raw.data(), raw.size());
  std::vector<double> got = decode(ir::ScalarKind::F32, raw);
  double worst = 0, magnitude = 0;
  for (int m = 0; m < 64; ++m)
    for (int n = 0; n < 64; ++n) {
      double want = 0;
      for (int kk = 0; kk < K; ++kk)
        want += a.values[size_t(m) * K + kk] * b.values[size_t(n) * K + kk];
      magnitude = std::max(magnitude, want);
      double g = got[size_t(m) * 64 + n];
      worst = std::isfinite(g) ? std::max(worst, std::fabs(g - want)) : INFINITY;
    }
  return worst / magnitude;
}

} // namespace tritium::testing::tensorcores
