// Kernels over blocks of rank 2 and 3 and their double-precision references, shared by the GPU
// tests (tests/gpu/BlocksGpuTest.cpp) and their interpreter twins
// (tests/unit/BlocksInterpreterTest.cpp): 2-D tiles with row and column masks and padded
// strides, broadcasting across ranks, reductions along every axis, transposes, reshapes and
// 3-D blocks. Inputs are fresh random numbers, outputs are poisoned before the run, and every
// element (including the padding that must stay untouched) is checked. `Buffer` is
// rt::DeviceBuffer or interpreter::HostBuffer; `Sync` waits for the launch (a no-op when
// interpreting).
#pragma once

#include "SoftmaxProblem.h"
#include "TestSupport.h"
#include "frontend/Tritium.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <vector>

namespace tritium::testing::blocks {

using namespace tritium::dsl;

// --- kernels ------------------------------------------------------------------------------------

// out[m, n] = 2 x[m, n] + 1 over tiles of BM x BN, the grid walking tiles row by row.
inline void tileAffine(Ptr out, Ptr x, Int M, Int N, Int xStride, Int outStride, int BM, int BN) {
  auto pid = program_id(0);
  auto tilesN = (N + (BN - 1)) / BN;
  auto rows = (pid / tilesN) * BM + arange(0, BM);
  auto cols = (pid % tilesN) * BN + arange(0, BN);
  auto mask = (rows(_, None) < M) & (cols(None, _) < N);
  auto v = load(x + rows(_, None) * xStride + cols(None, _), mask, 0.0);
  store(out + rows(_, None) * outStride + cols(None, _), v * 2.0 + 1.0, mask);
}

// One BM x BN tile (M <= BM, N <= BN): row sums, column maxima and column minima.
inline void tileReductions(Ptr rowSum, Ptr colMax, Ptr colMin, Ptr x, Int M, Int N, Int stride,
                           int BM, int BN) {
  auto rows = arange(0, BM);
  auto cols = arange(0, BN);
  auto mask = (rows(_, None) < M) & (cols(None, _) < N);
  auto ptrs = x + rows(_, None) * stride + cols(None, _);
  auto v = load(ptrs, mask, 0.0);
  store(rowSum + rows, sum(v, 1), rows < M);
  store(colMax + cols, max(where(mask, v, -INFINITY), 0), cols < N);
  store(colMin + cols, min(load(ptrs, mask, INFINITY), -2), cols < N);
}

// out = x^T for one BM x BN tile: trans() through shared memory, stored row-major.
inline void tileTranspose(Ptr out, Ptr x, Int M, Int N, Int xStride, Int outStride, int BM,
                          int BN) {
  auto rows = arange(0, BM);
  auto cols = arange(0, BN);
  auto v = load(x + rows(_, None) * xStride + cols(None, _),
                (rows(_, None) < M) & (cols(None, _) < N), 0.0);
  auto t = trans(v); // BN x BM
  store(out + cols(_, None) * outStride + rows(None, _), t,
        (cols(_, None) < N) & (rows(None, _) < M));
}

// out[m, n] = a[m] * b[n] + c[n]: 1-D loads broadcast against each other, and a 1-D block
// broadcast implicitly against a 2-D one (numpy's rule: leading dimensions are added).
inline void outerProduct(Ptr out, Ptr a, Ptr b, Ptr c, Int M, Int N, Int stride, int BM, int BN) {
  auto rows = arange(0, BM);
  auto cols = arange(0, BN);
  auto va = load(a + rows, rows < M, 0.0);
  auto vb = load(b + cols, cols < N, 0.0);
  auto vc = load(c + cols, cols < N, 0.0);
  auto prod = expand_dims(va, 1) * vb(None, _) + vc;
  store(out + rows(_, None) * stride + cols(None, _), prod,
        (rows(_, None) < M) & (cols(None, _) < N));
}

// A 1-D load of BM * BN elements reshaped to BM x BN; each row's sum.
inline void reshapeRows(Ptr out, Ptr x, int BM, int BN) {
  auto flat = load(x + arange(0, BM * BN));
  store(out + arange(0, BM), sum(reshape(flat, {BM, BN}), 1));
}

// A B x M x N block: sums along axis 0 (M x N), axis 1 (B x N) and axis 2 (B x M).
inline void cubeSums(Ptr sum0, Ptr sum1, Ptr sum2, Ptr x, int B, int M, int N) {
  auto b = arange(0, B)(_, None)(_, _, None); // B x 1 x 1
  auto m = expand_dims(expand_dims(arange(0, M), 0), 2); // 1 x M x 1
  auto n = expand_dims(expand_dims(arange(0, N), 0), 0); // 1 x 1 x N
  auto v = load(x + b * (M * N) + m * N + n);
  auto mm = arange(0, M);
  auto nn = arange(0, N);
  auto bb = arange(0, B);
  store(sum0 + mm(_, None) * N + nn(None, _), sum(v, 0));
  store(sum1 + bb(_, None) * N + nn(None, _), sum(v, 1));
  store(sum2 + bb(_, None) * M + mm(None, _), sum(v, -1));
}

// out = fn(x, y, z) elementwise over a 2-D tile (FN picks the function at trace time).
inline void mathTile(Ptr out, Ptr x, Ptr y, Ptr z, Int n, int FN, int BM, int BN) {
  auto offs = arange(0, BM)(_, None) * BN + arange(0, BN)(None, _);
  auto mask = offs < n;
  auto a = load(x + offs, mask, 1.0), b = load(y + offs, mask, 1.0), c = load(z + offs, mask, 1.0);
  Value r;
  switch (ir::MathFn(FN)) {
  case ir::MathFn::Exp2: r = exp2(a); break;
  case ir::MathFn::Log: r = log(a); break;
  case ir::MathFn::Log2: r = log2(a); break;
  case ir::MathFn::Sqrt: r = sqrt(a); break;
  case ir::MathFn::SqrtRn: r = sqrt_rn(a); break;
  case ir::MathFn::Rsqrt: r = rsqrt(a); break;
  case ir::MathFn::Abs: r = abs(a - 2.5); break;
  case ir::MathFn::Sin: r = sin(a); break;
  case ir::MathFn::Cos: r = cos(a); break;
  case ir::MathFn::Tanh: r = tanh(a - 2.5); break;
  case ir::MathFn::Sigmoid: r = sigmoid(a - 2.5); break;
  case ir::MathFn::Erf: r = erf(a - 2.5); break;
  // Arguments of 1e-5 to 5e-3, where log(1 + x) and exp(x) - 1 would lose most of their
  // digits; scaled back by 1000 so that the relative bound applies.
  case ir::MathFn::Log1p: r = log1p(a * 0.001) * 1000.0; break;
  case ir::MathFn::Expm1: r = expm1((a - 2.5) * 0.001) * 1000.0; break;
  case ir::MathFn::Floor: r = floor(a * 3.0); break;
  case ir::MathFn::Ceil: r = ceil(a * 3.0); break;
  case ir::MathFn::Fma: r = fma(a, b, c); break;
  case ir::MathFn::Pow: r = pow(a, b); break;
  case ir::MathFn::DivRn: r = div_rn(a, b); break;
  // Inputs moved into each function's domain (asin, acos, atanh, erfinv: within (-1, 1)).
  case ir::MathFn::Tan: r = tan(a * 0.3); break;
  case ir::MathFn::Asin: r = asin((a - 2.5) * 0.38); break;
  case ir::MathFn::Acos: r = acos((a - 2.5) * 0.38); break;
  case ir::MathFn::Atan: r = atan(a - 2.5); break;
  case ir::MathFn::Sinh: r = sinh(a - 2.5); break;
  case ir::MathFn::Cosh: r = cosh(a - 2.5); break;
  case ir::MathFn::Asinh: r = asinh(a - 2.5); break;
  case ir::MathFn::Acosh: r = acosh(a + 1.0); break;
  case ir::MathFn::Atanh: r = atanh((a - 2.5) * 0.38); break;
  case ir::MathFn::Cbrt: r = cbrt(a - 2.5); break;
  case ir::MathFn::Log10: r = log10(a); break;
  case ir::MathFn::Erfc: r = erfc(a * 0.5); break;
  case ir::MathFn::Erfinv: r = erfinv((a - 2.5) * 0.38); break;
  case ir::MathFn::Trunc: r = trunc((a - 2.5) * 3.0); break;
  case ir::MathFn::Rint: r = rint((a - 2.5) * 3.0); break;
  case ir::MathFn::Round: r = round((a - 2.5) * 3.0); break;
  case ir::MathFn::Atan2: r = atan2(a - 2.5, b - 2.5); break;
  case ir::MathFn::Hypot: r = hypot(a, b); break;
  case ir::MathFn::Fmod: r = fmod(a * 3.0, b); break;
  case ir::MathFn::Copysign: r = copysign(a, b - 2.5); break;
  }
  store(out + offs, r, mask);
}

// Integer operations on a 2-D tile of i32 or u32 (the signature picks), OP chosen at trace time.
// UMulHiByConstant: the high and low words of 64-bit products by constants, as Philox's rounds
// take them (the back end's mul.wide.u32 and mul.hi.u32), on inputs that include 0, 2^31 and
// 2^32 - 1.
enum class IntOp {
  Xor, Shl, Shr, Not, UMulHi, UMulHiByConstant, Div, Rem, Min, Max, Cdiv, Less, And, LogicalNot
};
inline constexpr int kIntOps = int(IntOp::LogicalNot) + 1;

inline void intTile(Ptr out, Ptr x, Ptr y, Int n, int OP, int BM, int BN) {
  auto offs = arange(0, BM)(_, None) * BN + arange(0, BN)(None, _);
  auto mask = offs < n;
  auto a = load(x + offs, mask, 1), b = load(y + offs, mask, 1);
  Value r;
  switch (IntOp(OP)) {
  case IntOp::Xor: r = a ^ b; break;
  case IntOp::Shl: r = a << b; break;
  case IntOp::Shr: r = a >> b; break;
  case IntOp::Not: r = ~a; break;
  case IntOp::UMulHi: r = umulhi(a, b); break;
  case IntOp::UMulHiByConstant: {
    auto wide = cast(cast(a, uint32), uint64); // zero-extended, for i32 too
    auto high = [&](uint64_t k) { return cast((wide * k) >> uint64_t(32), a.dtype()); };
    r = high(0xD2511F53u) ^ (high(0xFFFFFFFFu) * 3) ^
        (high(1) * 5 + cast(wide * 0xCD9E8D57u, a.dtype()));
    break;
  }
  case IntOp::Div: r = a / b; break;
  case IntOp::Rem: r = a % b; break;
  case IntOp::Min: r = minimum(a, b); break;
  case IntOp::Max: r = maximum(a, b); break;
  case IntOp::Cdiv: r = cdiv(a & 0xffff, b); break;
  case IntOp::Less: r = cast(a < b, a.dtype()); break;
  case IntOp::And: r = cast((a > b) && !(a == 7), a.dtype()); break;
  case IntOp::LogicalNot: r = cast(!(a & 1), a.dtype()); break;
  }
  store(out + offs, r, mask);
}

// Control flow: a range loop whose variables (a 1-D and a 2-D block and a scalar) are carried
// without carry(), an if_ inside it on a runtime scalar, and a while_ after it.
inline void controlFlow(Ptr out, Ptr x, Int n, Int mode, int BLOCK) {
  auto acc = zeros({BLOCK}, float32);
  auto tile = zeros({4, BLOCK}, float32);
  auto count = n * 0;
  for (auto i : range(0, n, BLOCK)) {
    auto offs = i + arange(0, BLOCK);
    auto v = load(x + offs, offs < n, 0.0);
    if_(mode > 0, [&] { acc = acc + v; }, [&] { acc = maximum(acc, v); });
    tile = tile + v(None, _);
    count = count + 1;
  }
  auto total = sum(abs(acc), 0);
  auto halvings = n * 0;
  while_([&] { return total > 1.0; }, [&] {
    total = total * 0.5;
    halvings = halvings + 1;
  });
  auto cols = arange(0, BLOCK);
  store(out + cols, acc);
  store(out + BLOCK + cols, sum(tile, 0));
  store(out + 2 * BLOCK, total);
  store(out + 2 * BLOCK + 1, cast(halvings, float32));
  store(out + 2 * BLOCK + 2, cast(count, float32));
}

// Carried variables that take another carried variable's value (a = b, prev = cur): each yields
// the other's value of that iteration, not the one it held before the loop.
inline void shiftedCarries(Ptr out, Int n, int BLOCK) {
  auto a = full({BLOCK}, 0.0, float32);
  auto b = full({BLOCK}, 1.0, float32);
  for (auto i : range(0, n)) {
    (void)i;
    auto t = a + b;
    a = b;
    b = t;
  }
  auto prev = n * 0;
  auto cur = n * 0 + 1;
  while_([&] { return cur < n; }, [&] {
    prev = cur;
    cur = cur * 2;
  });
  store(out + arange(0, BLOCK), a);
  store(out + BLOCK, cast(prev, float32));
  store(out + BLOCK + 1, cast(cur, float32));
}

// Atomics under contention from every program (OP picks the test at trace time):
//   0 histogram: atomic_add of 1 (i32) into bins[x % 64], masked past n
//   1 per-bin float maxima and minima (fp32, mixed signs): atomic_max / atomic_min
//   2 tickets: a scalar atomic_add of 1 on a counter; each program stores its old value
//   3 a scalar atomic_cas(slot, 0, pid + 1): one program wins; every program stores the old value
//   4 bit sets: atomic_or / atomic_xor / atomic_and on u32 words, relaxed, cta scope
//   5 fp16 and bf16 atomic_add of 1 into 64 slots (exact while below 2048)
inline void atomicsKernel(Ptr i32s, Ptr f32s, Ptr u32s, Ptr f16s, Ptr bf16s, Ptr out, Ptr x,
                          Int n, int OP, int BLOCK) {
  auto pid = program_id(0);
  auto offs = pid * BLOCK + arange(0, BLOCK);
  auto mask = offs < n;
  auto v = load(x + offs, mask, 0.0);
  switch (OP) {
  case 0:
    atomic_add(i32s + (cast(abs(v) * 1000.0, int32) % 64), 1, mask);
    break;
  case 1: {
    auto bin = offs % 16;
    atomic_max(f32s + bin, v, mask);
    atomic_min(f32s + 16 + bin, v, mask, "relaxed", "gpu");
    break;
  }
  case 2:
    store(out + pid, atomic_add(i32s, 1));
    break;
  case 3:
    store(out + pid, atomic_cas(i32s, 0, pid + 1));
    break;
  case 4: {
    auto bit = cast(1, uint32) << cast(pid % 32, uint32);
    atomic_or(u32s + pid / 32, bit, pid >= 0, "relaxed", "cta");
    atomic_xor(u32s + 8 + pid / 32, bit);
    atomic_and(u32s + 16 + pid / 32, ~bit);
    break;
  }
  case 5: {
    auto slots = arange(0, 64);
    atomic_add(f16s + slots, full({64}, 1.0, float16));
    atomic_add(bf16s + slots, full({64}, 1.0, bfloat16));
    break;
  }
  }
}

// argmax / argmin along both axes of a BM x BN tile (values rounded to create ties: the first
// index wins), xor_sum of integers and a reduce with a user combine (the largest magnitude).
inline void argReductions(Ptr argmaxRows, Ptr argminCols, Ptr xorRows, Ptr absMaxCols, Ptr x,
                          Ptr bits, int BM, int BN) {
  auto rows = arange(0, BM), cols = arange(0, BN);
  auto offs = rows(_, None) * BN + cols(None, _);
  auto v = load(x + offs);
  store(argmaxRows + rows, argmax(v, 1));
  store(argminCols + cols, argmin(v, 0));
  store(xorRows + rows, xor_sum(load(bits + offs), -1));
  store(absMaxCols + cols, reduce(v, 0, [](Value a, Value b) {
          return where(abs(a) > abs(b), a, b);
        }));
}

// Scans: cumsum along both axes of a BM x BN tile, cumprod of small integers along the rows,
// a running maximum (associative_scan with a user combine) and a 1-D cumsum of the whole tile.
inline void scans(Ptr sumRows, Ptr sumCols, Ptr prodRows, Ptr runMax, Ptr flatSum, Ptr x, Ptr k,
                  int BM, int BN) {
  auto rows = arange(0, BM), cols = arange(0, BN);
  auto offs = rows(_, None) * BN + cols(None, _);
  auto v = load(x + offs);
  store(sumRows + offs, cumsum(v, 1));
  store(sumCols + offs, cumsum(v, 0));
  store(prodRows + offs, cumprod(load(k + offs), 1));
  store(runMax + offs, associative_scan(v, 1, [](Value a, Value b) { return maximum(a, b); }));
  auto flat = arange(0, BM * BN);
  store(flatSum + flat, cumsum(load(x + flat), 0));
}

// A 3-D grid: each program writes its ids and the grid's extents along x, y and z.
inline void gridIds(Ptr out) {
  auto x = program_id(0), y = program_id(1), z = program_id(2);
  auto nx = num_programs(0), ny = num_programs(1), nz = num_programs(2);
  auto at = out + ((z * ny + y) * nx + x) * 6;
  auto slots = arange(0, 8);
  auto vals = where(slots == 0, x, where(slots == 1, y, where(slots == 2, z,
              where(slots == 3, nx, where(slots == 4, ny, nz)))));
  store(at + slots, vals, slots < 6);
}

// Philox and Triton's random numbers: the Random123 known-answer vectors through philox4x32,
// and randint / rand / randn for a seed over a block of offsets.
inline void philoxKat(Ptr out, Ptr words) {
  auto lane = arange(0, 4);
  auto w = [&](int i) { return load(words + lane * 6 + i); };
  Group r = philox4x32(w(0), w(1), w(2), w(3), w(4), w(5));
  for (int i = 0; i < 4; ++i)
    store(out + lane * 4 + i, r[size_t(i)]);
}

inline void randomNumbers(Ptr ints, Ptr uniforms, Ptr normals, Int seed, int BLOCK, int WIDE) {
  auto offs = arange(0, BLOCK) + program_id(0) * BLOCK;
  Value o = WIDE ? cast(offs, int64) * 4294967296LL + offs : offs;
  store(ints + offs, randint(seed, o));
  store(uniforms + offs, rand(seed, o));
  store(normals + offs, randn(seed, o));
}

// Triton's reference kernel (tools/triton_random_reference.py) in tritium: offsets loaded from
// memory (i32 or i64), randint4x's four words, randint, rand and randn stored per offset.
inline void tritonRandomCase(Ptr offsets, Ptr ints4, Ptr single, Ptr uniforms, Ptr normals,
                             Int seed, Int n, int BLOCK) {
  auto i = program_id(0) * BLOCK + arange(0, BLOCK);
  auto mask = i < n;
  auto offs = load(offsets + i, mask, 0);
  Group r = randint4x(seed, offs);
  for (int w = 0; w < 4; ++w)
    store(ints4 + i * 4 + w, r[size_t(w)], mask);
  store(single + i, randint(seed, offs), mask);
  store(uniforms + i, rand(seed, offs), mask);
  store(normals + i, randn(seed, offs), mask);
}

// README's 2-D example: each row of a tile normalized to mean 0 and variance 1.
inline void normalizeRows(Ptr out, Ptr x, Int M, Int N, Int stride, int BM, int BN) {
  auto rows = program_id(0) * BM + arange(0, BM);
  auto cols = arange(0, BN);
  auto mask = (rows(_, None) < M) & (cols(None, _) < N);
  auto offs = rows(_, None) * stride + cols(None, _);
  auto v = load(x + offs, mask, 0.0);
  auto mean = sum(v, 1) / N;
  auto centered = where(mask, v - mean(_, None), 0.0);
  auto rstd = rsqrt(sum(centered * centered, 1) / N + 1e-5);
  store(out + offs, centered * rstd(_, None), mask);
}

// --- problems -----------------------------------------------------------------------------------

inline std::vector<float> randomFloats(size_t n, std::mt19937 &rng) {
  std::normal_distribution<float> dist(0.f, 3.f);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

// Compares `got` with `want` element by element (NaN in `want` means "must keep the poison"),
// each within `tolerance` times the larger of 1 and |want|, or of `magnitude[i]` where given
// (the largest intermediate of a sum whose terms cancel: with fp fusion a product rounds
// once inside an fma, not twice).
inline void expectClose(const std::vector<float> &got, const std::vector<double> &want,
                        double tolerance, const std::string &what, uint32_t seed,
                        const std::vector<double> &magnitude = {}) {
  ASSERT_EQ(got.size(), want.size());
  int64_t bad = 0;
  std::ostringstream first;
  for (size_t i = 0; i < got.size(); ++i) {
    bool ok = std::isnan(want[i]) ? bitsOf(got[i]) == kPoison
                                  : std::fabs(double(got[i]) - want[i]) <=
                                        tolerance * std::max({1.0, std::fabs(want[i]),
                                                              i < magnitude.size() ? magnitude[i]
                                                                                   : 0.0});
    if (!ok && bad++ < 5)
      first << "  [" << i << "] got " << got[i] << " expected " << want[i] << "\n";
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.size() << " elements wrong; seed "
                    << seed << ":\n"
                    << first.str();
}

inline const double kUntouched = std::nan("");

template <typename Buffer> Buffer upload(const std::vector<float> &v) {
  Buffer b(std::max<size_t>(4, v.size() * 4));
  b.upload(v.data(), v.size() * 4);
  return b;
}

template <typename Buffer> Buffer poisoned(size_t n) {
  Buffer b(std::max<size_t>(4, n * 4));
  b.fill32(kPoison);
  return b;
}

template <typename Buffer> std::vector<float> download(const Buffer &b, size_t n) {
  std::vector<float> v(n);
  b.download(v.data(), n * 4);
  return v;
}

// Runs tileAffine over an M x N matrix with padded strides.
template <typename Buffer>
void checkTileAffine(CUstream stream, const std::function<void()> &sync, int64_t M, int64_t N,
                     int BM, int BN, int numWarps) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  int64_t xStride = N + 3, outStride = N + 5;
  std::vector<float> x = randomFloats(size_t(M * xStride), rng);
  Buffer in = upload<Buffer>(x);
  Buffer out = poisoned<Buffer>(size_t(M * outStride));
  auto k = kernel("tile_affine", tileAffine,
                  {"out", "x", "M", "N", "x_stride", "out_stride", "BM", "BN"});
  CompiledKernel &c = k.compile({.signature = {"*fp32", "*fp32", "i32", "i32", "i32", "i32"},
                                 .constexprs = {BM, BN},
                                 .numWarps = numWarps});
  int64_t tiles = ((M + BM - 1) / BM) * ((N + BN - 1) / BN);
  c.launch(tiles, stream,
           {out, in, int32_t(M), int32_t(N), int32_t(xStride), int32_t(outStride)});
  sync();
  std::vector<double> want(size_t(M * outStride), kUntouched);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n)
      want[size_t(m * outStride + n)] = 2.0 * double(x[size_t(m * xStride + n)]) + 1.0;
  expectClose(download(out, want.size()), want, 1e-6,
              "tile_affine " + std::to_string(M) + "x" + std::to_string(N), seed);
}

template <typename Buffer>
void checkTileReductions(CUstream stream, const std::function<void()> &sync, int64_t M,
                         int64_t N, int BM, int BN, int numWarps) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  int64_t stride = N + 1;
  std::vector<float> x = randomFloats(size_t(M * stride), rng);
  Buffer in = upload<Buffer>(x);
  Buffer rowSum = poisoned<Buffer>(size_t(BM)), colMax = poisoned<Buffer>(size_t(BN)),
         colMin = poisoned<Buffer>(size_t(BN));
  auto k = kernel("tile_reductions", tileReductions,
                  {"row_sum", "col_max", "col_min", "x", "M", "N", "stride", "BM", "BN"});
  CompiledKernel &c = k.compile(
      {.signature = {"*fp32", "*fp32", "*fp32", "*fp32", "i32", "i32", "i32"},
       .constexprs = {BM, BN},
       .numWarps = numWarps});
  c.launch(1, stream, {rowSum, colMax, colMin, in, int32_t(M), int32_t(N), int32_t(stride)});
  sync();
  std::vector<double> wantSum(size_t(BM), kUntouched), wantMax(size_t(BN), kUntouched),
      wantMin(size_t(BN), kUntouched);
  for (int64_t m = 0; m < M; ++m) {
    double s = 0;
    for (int64_t n = 0; n < N; ++n)
      s += x[size_t(m * stride + n)];
    wantSum[size_t(m)] = s;
  }
  for (int64_t n = 0; n < N; ++n) {
    double hi = -INFINITY, lo = INFINITY;
    for (int64_t m = 0; m < M; ++m) {
      hi = std::max(hi, double(x[size_t(m * stride + n)]));
      lo = std::min(lo, double(x[size_t(m * stride + n)]));
    }
    wantMax[size_t(n)] = hi;
    wantMin[size_t(n)] = lo;
  }
  std::string shape = std::to_string(M) + "x" + std::to_string(N) + " in " + std::to_string(BM) +
                      "x" + std::to_string(BN) + ", " + std::to_string(numWarps) + " warps";
  expectClose(download(rowSum, size_t(BM)), wantSum, 1e-5, "row sums " + shape, seed);
  expectClose(download(colMax, size_t(BN)), wantMax, 0, "column maxima " + shape, seed);
  expectClose(download(colMin, size_t(BN)), wantMin, 0, "column minima " + shape, seed);
}

template <typename Buffer>
void checkTranspose(CUstream stream, const std::function<void()> &sync, int64_t M, int64_t N,
                    int BM, int BN, int numWarps) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  int64_t xStride = N + 2, outStride = M + 1;
  std::vector<float> x = randomFloats(size_t(M * xStride), rng);
  Buffer in = upload<Buffer>(x);
  Buffer out = poisoned<Buffer>(size_t(N * outStride));
  auto k = kernel("tile_transpose", tileTranspose,
                  {"out", "x", "M", "N", "x_stride", "out_stride", "BM", "BN"});
  CompiledKernel &c = k.compile({.signature = {"*fp32", "*fp32", "i32", "i32", "i32", "i32"},
                                 .constexprs = {BM, BN},
                                 .numWarps = numWarps});
  c.launch(1, stream, {out, in, int32_t(M), int32_t(N), int32_t(xStride), int32_t(outStride)});
  sync();
  std::vector<double> want(size_t(N * outStride), kUntouched);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n)
      want[size_t(n * outStride + m)] = x[size_t(m * xStride + n)];
  expectClose(download(out, want.size()), want, 0,
              "transpose " + std::to_string(M) + "x" + std::to_string(N), seed);
}

template <typename Buffer>
void checkOuterProduct(CUstream stream, const std::function<void()> &sync, int64_t M, int64_t N,
                       int BM, int BN, int numWarps) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  std::vector<float> a = randomFloats(size_t(M), rng), b = randomFloats(size_t(N), rng),
                     c = randomFloats(size_t(N), rng);
  Buffer da = upload<Buffer>(a), db = upload<Buffer>(b), dc = upload<Buffer>(c);
  int64_t stride = N + 7;
  Buffer out = poisoned<Buffer>(size_t(M * stride));
  auto k = kernel("outer_product", outerProduct,
                  {"out", "a", "b", "c", "M", "N", "stride", "BM", "BN"});
  CompiledKernel &ck =
      k.compile({.signature = {"*fp32", "*fp32", "*fp32", "*fp32", "i32", "i32", "i32"},
                 .constexprs = {BM, BN},
                 .numWarps = numWarps});
  ck.launch(1, stream, {out, da, db, dc, int32_t(M), int32_t(N), int32_t(stride)});
  sync();
  std::vector<double> want(size_t(M * stride), kUntouched);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n)
      want[size_t(m * stride + n)] =
          double(float(a[size_t(m)] * b[size_t(n)])) + double(c[size_t(n)]);
  expectClose(download(out, want.size()), want, 1e-6,
              "outer product " + std::to_string(M) + "x" + std::to_string(N), seed);
}

template <typename Buffer>
void checkReshape(CUstream stream, const std::function<void()> &sync, int BM, int BN,
                  int numWarps) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  std::vector<float> x = randomFloats(size_t(BM * BN), rng);
  Buffer in = upload<Buffer>(x);
  Buffer out = poisoned<Buffer>(size_t(BM));
  auto k = kernel("reshape_rows", reshapeRows, {"out", "x", "BM", "BN"});
  CompiledKernel &c = k.compile(
      {.signature = {"*fp32", "*fp32"}, .constexprs = {BM, BN}, .numWarps = numWarps});
  c.launch(1, stream, {out, in});
  sync();
  std::vector<double> want(size_t(BM), 0.0);
  for (int m = 0; m < BM; ++m)
    for (int n = 0; n < BN; ++n)
      want[size_t(m)] += x[size_t(m * BN + n)];
  expectClose(download(out, size_t(BM)), want, 1e-5,
              "reshape " + std::to_string(BM) + "x" + std::to_string(BN), seed);
}

template <typename Buffer>
void checkCubeSums(CUstream stream, const std::function<void()> &sync, int B, int M, int N,
                   int numWarps) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  std::vector<float> x = randomFloats(size_t(B * M * N), rng);
  Buffer in = upload<Buffer>(x);
  Buffer s0 = poisoned<Buffer>(size_t(M * N)), s1 = poisoned<Buffer>(size_t(B * N)),
         s2 = poisoned<Buffer>(size_t(B * M));
  auto k = kernel("cube_sums", cubeSums, {"sum0", "sum1", "sum2", "x", "B", "M", "N"});
  CompiledKernel &c = k.compile({.signature = {"*fp32", "*fp32", "*fp32", "*fp32"},
                                 .constexprs = {B, M, N},
                                 .numWarps = numWarps});
  c.launch(1, stream, {s0, s1, s2, in});
  sync();
  std::vector<double> w0(size_t(M * N), 0.0), w1(size_t(B * N), 0.0), w2(size_t(B * M), 0.0);
  for (int b = 0; b < B; ++b)
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        double v = x[size_t((b * M + m) * N + n)];
        w0[size_t(m * N + n)] += v;
        w1[size_t(b * N + n)] += v;
        w2[size_t(b * M + m)] += v;
      }
  std::string shape = std::to_string(B) + "x" + std::to_string(M) + "x" + std::to_string(N);
  expectClose(download(s0, w0.size()), w0, 1e-5, "axis 0 sums " + shape, seed);
  expectClose(download(s1, w1.size()), w1, 1e-5, "axis 1 sums " + shape, seed);
  expectClose(download(s2, w2.size()), w2, 1e-5, "axis 2 sums " + shape, seed);
}

// erf's inverse in double (C++ has none): bisection on std::erf, to the last bit.
inline double erfinvOf(double y) {
  double lo = -6, hi = 6;
  for (int i = 0; i < 200 && lo < hi; ++i) {
    double mid = (lo + hi) / 2;
    (std::erf(mid) < y ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

// Every math function on fresh inputs in (0, 5], against std:: in double. `tolerance` is
// relative (with an absolute floor of the same size for results near 0).
template <typename Buffer>
void checkMathFunction(CUstream stream, const std::function<void()> &sync, ir::MathFn fn,
                       double tolerance) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(0.01f, 5.f);
  const int BM = 8, BN = 128;
  int64_t n = BM * BN - 37;
  std::vector<float> x(static_cast<size_t>(n)), y(x), z(x);
  for (int64_t i = 0; i < n; ++i)
    x[size_t(i)] = dist(rng), y[size_t(i)] = dist(rng), z[size_t(i)] = dist(rng);
  Buffer dx = upload<Buffer>(x), dy = upload<Buffer>(y), dz = upload<Buffer>(z);
  Buffer out = poisoned<Buffer>(size_t(BM * BN));
  auto k = kernel(std::string("math_") + ir::mathName(fn), mathTile,
                  {"out", "x", "y", "z", "n", "FN", "BM", "BN"});
  CompiledKernel &c = k.compile({.signature = {"*fp32", "*fp32", "*fp32", "*fp32", "i32"},
                                 .constexprs = {int(fn), BM, BN},
                                 .numWarps = 4});
  c.launch(1, stream, {out, dx, dy, dz, int32_t(n)});
  sync();
  std::vector<double> want(size_t(BM * BN), kUntouched);
  for (int64_t i = 0; i < n; ++i) {
    double a = x[size_t(i)], b = y[size_t(i)], cc = z[size_t(i)], r = 0;
    switch (fn) {
    case ir::MathFn::Exp2: r = std::exp2(a); break;
    case ir::MathFn::Log: r = std::log(a); break;
    case ir::MathFn::Log2: r = std::log2(a); break;
    case ir::MathFn::Sqrt: case ir::MathFn::SqrtRn: r = std::sqrt(a); break;
    case ir::MathFn::Rsqrt: r = 1 / std::sqrt(a); break;
    case ir::MathFn::Abs: r = std::fabs(double(float(a - 2.5))); break;
    case ir::MathFn::Sin: r = std::sin(a); break;
    case ir::MathFn::Cos: r = std::cos(a); break;
    case ir::MathFn::Tanh: r = std::tanh(double(float(a - 2.5))); break;
    case ir::MathFn::Sigmoid: r = 1 / (1 + std::exp(-double(float(a - 2.5)))); break;
    case ir::MathFn::Erf: r = std::erf(double(float(a - 2.5))); break;
    case ir::MathFn::Log1p: r = std::log1p(double(float(a * double(float(0.001))))) * 1000; break;
    case ir::MathFn::Expm1:
      r = std::expm1(double(float(double(float(a - 2.5)) * double(float(0.001))))) * 1000;
      break;
    case ir::MathFn::Floor: r = std::floor(double(float(a * 3))); break;
    case ir::MathFn::Ceil: r = std::ceil(double(float(a * 3))); break;
    case ir::MathFn::Fma: r = std::fma(a, b, cc); break;
    case ir::MathFn::Pow: r = std::pow(a, b); break;
    case ir::MathFn::DivRn: r = a / b; break;
    case ir::MathFn::Tan: r = std::tan(double(float(a * double(float(0.3))))); break;
    case ir::MathFn::Asin: r = std::asin(double(float(double(float(a - 2.5)) * double(float(0.38))))); break;
    case ir::MathFn::Acos: r = std::acos(double(float(double(float(a - 2.5)) * double(float(0.38))))); break;
    case ir::MathFn::Atan: r = std::atan(double(float(a - 2.5))); break;
    case ir::MathFn::Sinh: r = std::sinh(double(float(a - 2.5))); break;
    case ir::MathFn::Cosh: r = std::cosh(double(float(a - 2.5))); break;
    case ir::MathFn::Asinh: r = std::asinh(double(float(a - 2.5))); break;
    case ir::MathFn::Acosh: r = std::acosh(double(float(a + 1))); break;
    case ir::MathFn::Atanh: r = std::atanh(double(float(double(float(a - 2.5)) * double(float(0.38))))); break;
    case ir::MathFn::Cbrt: r = std::cbrt(double(float(a - 2.5))); break;
    case ir::MathFn::Log10: r = std::log10(a); break;
    case ir::MathFn::Erfc: r = std::erfc(double(float(a * double(float(0.5))))); break;
    case ir::MathFn::Erfinv: r = erfinvOf(double(float(double(float(a - 2.5)) * double(float(0.38))))); break;
    case ir::MathFn::Trunc: r = std::trunc(double(float(double(float(a - 2.5)) * 3))); break;
    case ir::MathFn::Rint: r = std::nearbyint(double(float(double(float(a - 2.5)) * 3))); break;
    case ir::MathFn::Round: r = std::round(double(float(double(float(a - 2.5)) * 3))); break;
    case ir::MathFn::Atan2: r = std::atan2(double(float(a - 2.5)), double(float(b - 2.5))); break;
    case ir::MathFn::Hypot: r = std::hypot(a, b); break;
    case ir::MathFn::Fmod: r = std::fmod(double(float(a * 3)), b); break;
    case ir::MathFn::Copysign: r = std::copysign(a, double(float(b - 2.5))); break;
    }
    want[size_t(i)] = r;
  }
  expectClose(download(out, want.size()), want, tolerance, ir::mathName(fn), seed);
}

// Every integer op on random i32 or u32 values (b from 1 to 40, so that shifts pass the width
// and divisions are defined), bit for bit against C++ on the host.
template <typename Buffer>
void checkIntOp(CUstream stream, const std::function<void()> &sync, IntOp op, bool isUnsigned) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  const int BM = 4, BN = 256;
  int64_t n = BM * BN - 5;
  std::vector<uint32_t> x(static_cast<size_t>(n)), y(x);
  std::uniform_int_distribution<uint32_t> any, small(1, 40);
  for (int64_t i = 0; i < n; ++i)
    x[size_t(i)] = i % 7 == 0    ? 7
                   : i % 11 == 0 ? 0xffffffffu
                   : i % 13 == 0 ? 0x80000000u
                   : i % 17 == 0 ? 0
                                 : any(rng),
              y[size_t(i)] = small(rng);
  auto up = [](const std::vector<uint32_t> &v) {
    Buffer b(v.size() * 4);
    b.upload(v.data(), v.size() * 4);
    return b;
  };
  Buffer dx = up(x), dy = up(y);
  Buffer out(size_t(BM * BN) * 4);
  out.fill32(kPoison);
  const char *t = isUnsigned ? "*u32" : "*i32";
  auto k = kernel("int_op_" + std::to_string(int(op)) + (isUnsigned ? "_u32" : "_i32"), intTile,
                  {"out", "x", "y", "n", "OP", "BM", "BN"});
  CompiledKernel &c = k.compile(
      {.signature = {t, t, t, "i32"}, .constexprs = {int(op), BM, BN}, .numWarps = 4});
  c.launch(1, stream, {out, dx, dy, int32_t(n)});
  sync();
  std::vector<uint32_t> got(size_t(BM * BN));
  out.download(got.data(), got.size() * 4);
  int64_t bad = 0;
  std::ostringstream first;
  for (int64_t i = 0; i < BM * BN; ++i) {
    uint32_t ua = x[size_t(std::min(i, n - 1))], ub = y[size_t(std::min(i, n - 1))];
    int32_t sa = int32_t(ua), sb = int32_t(ub);
    uint32_t want = kPoison;
    if (i < n) {
      switch (op) {
      case IntOp::Xor: want = ua ^ ub; break;
      case IntOp::Shl: want = ub >= 32 ? 0 : ua << ub; break;
      case IntOp::Shr:
        want = isUnsigned ? (ub >= 32 ? 0 : ua >> ub) : uint32_t(sa >> std::min<uint32_t>(ub, 31));
        break;
      case IntOp::Not: want = ~ua; break;
      case IntOp::UMulHi: want = uint32_t((uint64_t(ua) * ub) >> 32); break;
      case IntOp::UMulHiByConstant: {
        auto high = [&](uint64_t k) { return uint32_t((uint64_t(ua) * k) >> 32); };
        want = high(0xD2511F53u) ^ (high(0xFFFFFFFFu) * 3 ^ (high(1) * 5 + ua * 0xCD9E8D57u));
        break;
      }
      case IntOp::Div: want = isUnsigned ? ua / ub : uint32_t(sa / sb); break;
      case IntOp::Rem: want = isUnsigned ? ua % ub : uint32_t(sa % sb); break;
      case IntOp::Min: want = isUnsigned ? std::min(ua, ub) : uint32_t(std::min(sa, sb)); break;
      case IntOp::Max: want = isUnsigned ? std::max(ua, ub) : uint32_t(std::max(sa, sb)); break;
      case IntOp::Cdiv: want = ((ua & 0xffff) + ub - 1) / ub; break;
      case IntOp::Less: want = isUnsigned ? ua < ub : sa < sb; break;
      case IntOp::And: want = (isUnsigned ? ua > ub : sa > sb) && ua != 7; break;
      case IntOp::LogicalNot: want = (ua & 1) == 0; break;
      }
    }
    if (got[size_t(i)] != want && bad++ < 5)
      first << "  [" << i << "] a=" << ua << " b=" << ub << ": got " << got[size_t(i)]
            << " expected " << want << "\n";
  }
  EXPECT_EQ(bad, 0) << "int op " << int(op) << (isUnsigned ? " u32" : " i32") << ", seed "
                    << seed << ":\n"
                    << first.str();
}

// fp8 round trips: f32 -> fp8 -> f32 must give the nearest fp8 value (ties to even, saturating
// at the largest finite one), as ir::toFp8 computes it; bitcast keeps every bit (NaN payloads
// included). (A sign-bit xor would not do for the check: LLVM turns it into fneg, which the
// NVPTX back end emits as neg.f32, and that canonicalizes NaNs.)
inline void fp8Tile(Ptr out, Ptr bits, Ptr x, int KIND, int BLOCK) {
  auto offs = arange(0, BLOCK);
  auto v = load(x + offs);
  auto f8 = cast(v, KIND == 0 ? float8e4m3 : float8e5m2);
  store(out + offs, cast(f8, float32));
  store(bits + offs, bitcast(v, uint32) ^ 0x00ff00ffu);
}

template <typename Buffer>
void checkFp8(CUstream stream, const std::function<void()> &sync, ir::ScalarKind kind) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  const int BLOCK = 1024;
  std::vector<float> x = randomFloats(BLOCK, rng);
  x[0] = 1e6f, x[1] = -1e6f, x[2] = 0.0f, x[3] = -0.0f, x[4] = std::nanf(""), x[5] = 1e-9f;
  for (int i = 6; i < 64; ++i) // halfway points and tiny values
    x[size_t(i)] = std::ldexp(1.0f + (2 * i + 1) / 64.0f, i % 20 - 12);
  // NaNs whose bits a load and a bitcast must keep: signalling ones, and payloads.
  const uint32_t nans[] = {0x7f800001u, 0xff800001u, 0x7fc12345u, 0xffbfffffu};
  for (size_t i = 0; i < 4; ++i)
    x[64 + i] = std::bit_cast<float>(nans[i]);
  Buffer dx = upload<Buffer>(x), out = poisoned<Buffer>(BLOCK), bits = poisoned<Buffer>(BLOCK);
  auto k = kernel(std::string("fp8_") + ir::dtypeName(kind), fp8Tile,
                  {"out", "bits", "x", "KIND", "BLOCK"});
  CompiledKernel &c = k.compile({.signature = {"*fp32", "*u32", "*fp32"},
                                 .constexprs = {kind == ir::ScalarKind::F8E4M3 ? 0 : 1, BLOCK},
                                 .numWarps = 4});
  c.launch(1, stream, {out, bits, dx});
  sync();
  std::vector<float> got = download(out, BLOCK);
  std::vector<uint32_t> gotBits(BLOCK);
  bits.download(gotBits.data(), BLOCK * 4);
  int64_t bad = 0;
  std::ostringstream first;
  for (int i = 0; i < BLOCK; ++i) {
    double want = ir::fromFp8(ir::toFp8(x[size_t(i)], kind), kind);
    bool ok = std::isnan(want) ? std::isnan(got[size_t(i)]) : double(got[size_t(i)]) == want;
    ok = ok && gotBits[size_t(i)] == (bitsOf(x[size_t(i)]) ^ 0x00ff00ffu);
    if (!ok && bad++ < 5)
      first << "  [" << i << "] " << x[size_t(i)] << ": got " << got[size_t(i)] << " expected "
            << want << "\n";
  }
  EXPECT_EQ(bad, 0) << ir::dtypeName(kind) << ", seed " << seed << ":\n" << first.str();
}

template <typename Buffer>
void checkControlFlow(CUstream stream, const std::function<void()> &sync, int64_t n, int mode) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  const int BLOCK = 256;
  std::vector<float> x = randomFloats(size_t(n), rng);
  Buffer dx = upload<Buffer>(x), out = poisoned<Buffer>(2 * BLOCK + 3);
  auto k = kernel("control_flow", controlFlow, {"out", "x", "n", "mode", "BLOCK"});
  CompiledKernel &c =
      k.compile({.signature = {"*fp32", "*fp32", "i32", "i32"}, .constexprs = {BLOCK}, .numWarps = 4});
  c.launch(1, stream, {out, dx, int32_t(n), int32_t(mode)});
  sync();
  std::vector<double> want(2 * BLOCK + 3, 0.0);
  int64_t count = 0;
  std::vector<float> acc(BLOCK, 0.f);
  for (int64_t i = 0; i < n; i += BLOCK, ++count)
    for (int j = 0; j < BLOCK; ++j) {
      float v = i + j < n ? x[size_t(i + j)] : 0.f;
      acc[size_t(j)] = mode > 0 ? acc[size_t(j)] + v : std::max(acc[size_t(j)], v);
      want[size_t(BLOCK + j)] += 4.0 * v;
    }
  double total = 0;
  for (int j = 0; j < BLOCK; ++j) {
    want[size_t(j)] = acc[size_t(j)];
    total += std::fabs(acc[size_t(j)]);
  }
  total = float(total);
  int halvings = 0;
  while (total > 1.0)
    total = float(total * 0.5), ++halvings;
  want[2 * BLOCK] = total;
  want[2 * BLOCK + 1] = halvings;
  want[2 * BLOCK + 2] = double(count);
  expectClose(download(out, want.size()), want, 2e-5,
              "control flow n=" + std::to_string(n) + " mode=" + std::to_string(mode), seed);
}

template <typename Buffer>
void checkShiftedCarries(CUstream stream, const std::function<void()> &sync, int64_t n) {
  const int BLOCK = 64;
  Buffer out = poisoned<Buffer>(BLOCK + 2);
  auto k = kernel("shifted_carries", shiftedCarries, {"out", "n", "BLOCK"});
  CompiledKernel &c = k.compile({.signature = {"*fp32", "i32"}, .constexprs = {BLOCK}});
  c.launch(1, stream, {out, int32_t(n)});
  sync();
  double a = 0, b = 1;
  for (int64_t i = 0; i < n; ++i)
    std::tie(a, b) = std::pair{b, a + b};
  int64_t prev = 0, cur = 1;
  while (cur < n)
    prev = cur, cur *= 2;
  std::vector<double> want(BLOCK, a);
  want.push_back(double(prev));
  want.push_back(double(cur));
  expectClose(download(out, want.size()), want, 0.0, "shifted carries n=" + std::to_string(n), 0);
}

template <typename Buffer>
void checkAtomics(CUstream stream, const std::function<void()> &sync, int op, int numWarps) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  const int BLOCK = 256, grid = 96;
  int64_t n = int64_t(grid) * BLOCK - 77;
  std::vector<float> x = randomFloats(size_t(n), rng);
  Buffer dx = upload<Buffer>(x);
  std::vector<int32_t> i32(64, 0);
  std::vector<float> f32(32);
  for (int b = 0; b < 16; ++b)
    f32[size_t(b)] = -INFINITY, f32[size_t(16 + b)] = INFINITY;
  std::vector<uint32_t> u32(24, 0);
  for (int w = 16; w < 24; ++w)
    u32[size_t(w)] = 0xffffffffu;
  std::vector<uint16_t> zeros16(64, 0);
  auto up = [](const auto &v) {
    Buffer b(v.size() * sizeof(v[0]));
    b.upload(v.data(), v.size() * sizeof(v[0]));
    return b;
  };
  Buffer di32 = up(i32), df32 = up(f32), du32 = up(u32), df16 = up(zeros16), dbf16 = up(zeros16);
  Buffer out(grid * 4);
  out.fill32(kPoison);
  auto k = kernel("atomics_" + std::to_string(op), atomicsKernel,
                  {"i32s", "f32s", "u32s", "f16s", "bf16s", "out", "x", "n", "OP", "BLOCK"});
  CompiledKernel &c = k.compile(
      {.signature = {"*i32", "*fp32", "*u32", "*fp16", "*bf16", "*i32", "*fp32", "i32"},
       .constexprs = {op, BLOCK},
       .numWarps = numWarps});
  c.launch(grid, stream, {di32, df32, du32, df16, dbf16, out, dx, int32_t(n)});
  sync();
  std::vector<int32_t> gotI(64), gotOut(grid);
  std::vector<float> gotF(32);
  std::vector<uint32_t> gotU(24);
  std::vector<uint16_t> got16(64), gotB16(64);
  di32.download(gotI.data(), 64 * 4);
  df32.download(gotF.data(), 32 * 4);
  du32.download(gotU.data(), 24 * 4);
  df16.download(got16.data(), 64 * 2);
  dbf16.download(gotB16.data(), 64 * 2);
  out.download(gotOut.data(), size_t(grid) * 4);
  std::string what = "atomics op " + std::to_string(op) + ", " + std::to_string(numWarps) +
                     " warps, seed " + std::to_string(seed);
  switch (op) {
  case 0: {
    std::vector<int32_t> want(64, 0);
    for (int64_t i = 0; i < n; ++i)
      ++want[size_t(int32_t(float(std::fabs(x[size_t(i)]) * 1000.0f)) % 64)];
    EXPECT_EQ(gotI, want) << what;
    break;
  }
  case 1: {
    for (int b = 0; b < 16; ++b) {
      float hi = -INFINITY, lo = INFINITY;
      for (int64_t i = b; i < n; i += 16)
        hi = std::max(hi, x[size_t(i)]), lo = std::min(lo, x[size_t(i)]);
      EXPECT_EQ(gotF[size_t(b)], hi) << what << " bin " << b;
      EXPECT_EQ(gotF[size_t(16 + b)], lo) << what << " bin " << b;
    }
    break;
  }
  case 2: {
    std::vector<int32_t> sorted = gotOut;
    std::sort(sorted.begin(), sorted.end());
    for (int i = 0; i < grid; ++i)
      EXPECT_EQ(sorted[size_t(i)], i) << what << ": the tickets are not 0 .. grid-1";
    EXPECT_EQ(gotI[0], grid) << what;
    break;
  }
  case 3: {
    int winners = 0;
    for (int p = 0; p < grid; ++p) {
      if (gotOut[size_t(p)] == 0) {
        ++winners;
        EXPECT_EQ(gotI[0], p + 1) << what << ": the slot holds another program's id";
      } else {
        EXPECT_EQ(gotOut[size_t(p)], gotI[0]) << what << ": a loser saw another old value";
      }
    }
    EXPECT_EQ(winners, 1) << what;
    break;
  }
  case 4: {
    for (int w = 0; w < 3; ++w) {
      uint32_t all = 0;
      for (int p = w * 32; p < std::min(grid, (w + 1) * 32); ++p)
        all |= 1u << (p % 32);
      EXPECT_EQ(gotU[size_t(w)], all) << what;
      EXPECT_EQ(gotU[size_t(8 + w)], all) << what;
      EXPECT_EQ(gotU[size_t(16 + w)], ~all) << what;
    }
    break;
  }
  case 5: {
    uint16_t f16 = std::bit_cast<uint16_t>(_Float16(grid));
    uint16_t bf16 = uint16_t(std::bit_cast<uint32_t>(float(grid)) >> 16);
    for (int i = 0; i < 64; ++i) {
      EXPECT_EQ(got16[size_t(i)], f16) << what << " slot " << i;
      EXPECT_EQ(gotB16[size_t(i)], bf16) << what << " slot " << i;
    }
    break;
  }
  }
}

template <typename Buffer>
void checkArgReductions(CUstream stream, const std::function<void()> &sync, int BM, int BN,
                        int numWarps) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  std::vector<float> x = randomFloats(size_t(BM * BN), rng);
  for (float &f : x)
    f = std::round(f); // ties
  std::vector<int32_t> bits(size_t(BM * BN));
  for (auto &b : bits)
    b = int32_t(rng());
  Buffer dx = upload<Buffer>(x);
  Buffer dbits(bits.size() * 4);
  dbits.upload(bits.data(), bits.size() * 4);
  Buffer amax(static_cast<size_t>(BM) * 4), amin(static_cast<size_t>(BN) * 4),
      xr(static_cast<size_t>(BM) * 4),
      absMax = poisoned<Buffer>(size_t(BN));
  for (Buffer *b : {&amax, &amin, &xr})
    b->fill32(kPoison);
  auto k = kernel("arg_reductions", argReductions,
                  {"argmax_rows", "argmin_cols", "xor_rows", "absmax_cols", "x", "bits", "BM", "BN"});
  CompiledKernel &c = k.compile({.signature = {"*i32", "*i32", "*i32", "*fp32", "*fp32", "*i32"},
                                 .constexprs = {BM, BN},
                                 .numWarps = numWarps});
  c.launch(1, stream, {amax, amin, xr, absMax, dx, dbits});
  sync();
  std::vector<int32_t> gotMax(static_cast<size_t>(BM)), gotMin(static_cast<size_t>(BN)),
      gotXor(static_cast<size_t>(BM));
  amax.download(gotMax.data(), gotMax.size() * 4);
  amin.download(gotMin.data(), gotMin.size() * 4);
  xr.download(gotXor.data(), gotXor.size() * 4);
  std::vector<float> gotAbs = download(absMax, size_t(BN));
  std::string what = std::to_string(BM) + "x" + std::to_string(BN) + ", " +
                     std::to_string(numWarps) + " warps, seed " + std::to_string(seed);
  for (int m = 0; m < BM; ++m) {
    int best = 0;
    int32_t x2 = 0;
    for (int n = 0; n < BN; ++n) {
      if (x[size_t(m * BN + n)] > x[size_t(m * BN + best)])
        best = n;
      x2 ^= bits[size_t(m * BN + n)];
    }
    EXPECT_EQ(gotMax[size_t(m)], best) << "argmax of row " << m << ", " << what;
    EXPECT_EQ(gotXor[size_t(m)], x2) << "xor_sum of row " << m << ", " << what;
  }
  for (int n = 0; n < BN; ++n) {
    int best = 0;
    float big = 0;
    for (int m = 0; m < BM; ++m) {
      if (x[size_t(m * BN + n)] < x[size_t(best * BN + n)])
        best = m;
      big = std::max(big, std::fabs(x[size_t(m * BN + n)]));
    }
    EXPECT_EQ(gotMin[size_t(n)], best) << "argmin of column " << n << ", " << what;
    EXPECT_EQ(std::fabs(gotAbs[size_t(n)]), big) << "largest magnitude of column " << n << ", "
                                                  << what;
  }
}

template <typename Buffer>
void checkScans(CUstream stream, const std::function<void()> &sync, int BM, int BN, int numWarps) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  size_t n = size_t(BM * BN);
  std::vector<float> x = randomFloats(n, rng);
  std::vector<int32_t> k(n);
  std::uniform_int_distribution<int32_t> small(-3, 3);
  for (auto &v : k)
    v = small(rng);
  Buffer dx = upload<Buffer>(x), dk(n * 4);
  dk.upload(k.data(), n * 4);
  Buffer sumRows = poisoned<Buffer>(n), sumCols = poisoned<Buffer>(n), prod(n * 4),
         runMax = poisoned<Buffer>(n), flat = poisoned<Buffer>(n);
  prod.fill32(kPoison);
  auto kern = kernel("scans", scans,
                     {"sum_rows", "sum_cols", "prod_rows", "run_max", "flat_sum", "x", "k", "BM",
                      "BN"});
  CompiledKernel &c = kern.compile(
      {.signature = {"*fp32", "*fp32", "*i32", "*fp32", "*fp32", "*fp32", "*i32"},
       .constexprs = {BM, BN},
       .numWarps = numWarps});
  c.launch(1, stream, {sumRows, sumCols, prod, runMax, flat, dx, dk});
  sync();
  std::vector<double> wRows(n), wCols(n), wMax(n), wFlat(n);
  std::vector<int32_t> wProd(n);
  for (int m = 0; m < BM; ++m)
    for (int j = 0; j < BN; ++j) {
      size_t at = size_t(m * BN + j);
      bool first = j == 0;
      wRows[at] = x[at] + (first ? 0.0 : wRows[at - 1]);
      wMax[at] = first ? x[at] : std::max(double(x[at]), wMax[at - 1]);
      wProd[at] = int32_t(uint32_t(k[at]) * uint32_t(first ? 1 : wProd[at - 1]));
      wCols[at] = x[at] + (m == 0 ? 0.0 : wCols[at - size_t(BN)]);
      wFlat[at] = x[at] + (at == 0 ? 0.0 : wFlat[at - 1]);
    }
  std::string what = std::to_string(BM) + "x" + std::to_string(BN) + ", " +
                     std::to_string(numWarps) + " warps";
  // Sums of up to a few thousand terms of size ~3, in f32 in another order: 1e-4 relative to
  // the largest partial sum.
  auto scaled = [](std::vector<double> w) {
    double big = 1;
    for (double v : w)
      big = std::max(big, std::fabs(v));
    return big;
  };
  auto closeAbs = [&](const std::vector<float> &got, const std::vector<double> &want,
                      const std::string &name) {
    double tol = 1e-5 * scaled(want) * 10;
    int64_t bad = 0;
    std::ostringstream first;
    for (size_t i = 0; i < want.size(); ++i)
      if (!(std::fabs(double(got[i]) - want[i]) <= tol) && bad++ < 5)
        first << "  [" << i << "] got " << got[i] << " expected " << want[i] << "\n";
    EXPECT_EQ(bad, 0) << name << " " << what << ", seed " << seed << ":\n" << first.str();
  };
  closeAbs(download(sumRows, n), wRows, "cumsum along rows");
  closeAbs(download(sumCols, n), wCols, "cumsum along columns");
  closeAbs(download(flat, n), wFlat, "1-D cumsum");
  expectClose(download(runMax, n), wMax, 0, "running max " + what, seed);
  std::vector<int32_t> gotProd(n);
  prod.download(gotProd.data(), n * 4);
  EXPECT_EQ(gotProd, wProd) << "cumprod " << what << ", seed " << seed;
}

template <typename Buffer>
void checkGrid3(CUstream stream, const std::function<void()> &sync, Grid3 grid) {
  size_t programs = size_t(grid.x * grid.y * grid.z);
  Buffer out(programs * 6 * 4);
  out.fill32(kPoison);
  auto k = kernel("grid_ids", gridIds, {"out"});
  CompiledKernel &c = k.compile({.signature = {"*i32"}, .numWarps = 1});
  c.launch(grid, stream, {out});
  sync();
  std::vector<int32_t> got(programs * 6);
  out.download(got.data(), got.size() * 4);
  for (int64_t z = 0; z < grid.z; ++z)
    for (int64_t y = 0; y < grid.y; ++y)
      for (int64_t x = 0; x < grid.x; ++x) {
        size_t at = size_t(((z * grid.y + y) * grid.x + x) * 6);
        std::vector<int32_t> want{int32_t(x), int32_t(y), int32_t(z), int32_t(grid.x),
                                  int32_t(grid.y), int32_t(grid.z)};
        EXPECT_EQ(std::vector<int32_t>(got.begin() + long(at), got.begin() + long(at) + 6), want)
            << "program (" << x << ", " << y << ", " << z << ")";
      }
}

template <typename Buffer>
void checkPhiloxKnownAnswers(CUstream stream, const std::function<void()> &sync) {
  // Random123's kat_vectors for philox4x32-10: counter c0..c3, key k0 k1, then the output;
  // the fourth row is the first with the counter and key of all-ones words but the last.
  std::vector<uint32_t> words = {
      0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000,
      0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff,
      0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0,
      0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000};
  std::vector<uint32_t> want = {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8,
                                0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd,
                                0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1,
                                0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8};
  Buffer dw(words.size() * 4), out(16 * 4);
  dw.upload(words.data(), words.size() * 4);
  out.fill32(kPoison);
  auto k = kernel("philox_kat", philoxKat, {"out", "words"});
  CompiledKernel &c = k.compile({.signature = {"*u32", "*u32"}, .numWarps = 1});
  c.launch(1, stream, {out, dw});
  sync();
  std::vector<uint32_t> got(16);
  out.download(got.data(), 64);
  EXPECT_EQ(got, want);
}

// Every output once from the interpreter's reference bits: randint is Philox's first word;
// rand its Triton float; randn Box-Muller. GPU and interpreter must agree bit for bit on randint
// and rand, within a few ulp on randn (libdevice's log and cos against the host's).
struct RandomOutputs {
  std::vector<uint32_t> ints;
  std::vector<float> uniforms, normals;
};

template <typename Buffer>
RandomOutputs runRandomNumbers(CUstream stream, const std::function<void()> &sync, int32_t seed,
                               bool wide) {
  const int BLOCK = 1024, grid = 4;
  size_t n = size_t(BLOCK * grid);
  Buffer ints(n * 4), uni(n * 4), nor(n * 4);
  auto k = kernel("random_numbers", randomNumbers,
                  {"ints", "uniforms", "normals", "seed", "BLOCK", "WIDE"});
  CompiledKernel &c = k.compile({.signature = {"*u32", "*fp32", "*fp32", "i32"},
                                 .constexprs = {BLOCK, wide ? 1 : 0},
                                 .numWarps = 4});
  c.launch(grid, stream, {ints, uni, nor, seed});
  sync();
  RandomOutputs r{std::vector<uint32_t>(n), std::vector<float>(n), std::vector<float>(n)};
  ints.download(r.ints.data(), n * 4);
  uni.download(r.uniforms.data(), n * 4);
  nor.download(r.normals.data(), n * 4);
  return r;
}

// Properties that do not need a reference: rand in [0, 1), never 1; mean and variance of rand
// and randn near 1/2, 1/12, 0 and 1; and for seed 0, offset 0 Philox's first word of the
// all-zero known-answer vector.
inline void checkRandomProperties(const RandomOutputs &r, int32_t seed, bool wide) {
  double mu = 0, var = 0, nmu = 0, nvar = 0;
  size_t n = r.uniforms.size();
  for (size_t i = 0; i < n; ++i) {
    float u = r.uniforms[i], z = r.normals[i];
    ASSERT_TRUE(u >= 0.0f && u < 1.0f) << "rand gave " << u << " at " << i;
    ASSERT_TRUE(std::isfinite(z)) << "randn gave " << z << " at " << i;
    mu += u, var += double(u) * u, nmu += z, nvar += double(z) * z;
  }
  mu /= double(n), var = var / double(n) - mu * mu, nmu /= double(n), nvar = nvar / double(n) - nmu * nmu;
  EXPECT_NEAR(mu, 0.5, 0.02);
  EXPECT_NEAR(var, 1.0 / 12, 0.01);
  EXPECT_NEAR(nmu, 0.0, 0.06);
  EXPECT_NEAR(nvar, 1.0, 0.08);
  if (seed == 0 && !wide) {
    EXPECT_EQ(r.ints[0], 0x6627e8d5u); // Philox(counter 0, key 0)'s first word
  }
}

// tests/data/triton_random.csv (tools/triton_random_reference.py on the H200 with Triton 3.6;
// docs/RANDOM.md): seeds of i32, i64 and u64 arguments, offsets of i32 and i64 blocks including
// ones with a high word. randint4x, randint and rand must equal Triton's bit for bit; randn within
// `randnTolerance` relative (the interpreter computes log and cos on the host).
template <typename Buffer>
void checkTritonRandomCsv(CUstream stream, const std::function<void()> &sync,
                          float randnTolerance) {
  std::ifstream in(testDataPath("triton_random.csv"));
  ASSERT_TRUE(in) << "tests/data/triton_random.csv is missing";
  struct Row {
    int64_t offset;
    std::array<uint32_t, 4> words;
    uint32_t single, uniform, normal;
  };
  // Keyed by the seed's text (Python ints up to 2^64) and the offsets' dtype.
  std::map<std::pair<std::string, std::string>, std::vector<Row>> groups;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.rfind("seed,", 0) == 0)
      continue;
    std::stringstream ss(line);
    std::vector<std::string> f;
    for (std::string cell; std::getline(ss, cell, ',');)
      f.push_back(cell);
    ASSERT_EQ(f.size(), 9u) << line;
    auto hex = [](const std::string &h) { return uint32_t(std::stoul(h, nullptr, 16)); };
    groups[{f[0], f[1]}].push_back({std::stoll(f[2]), {hex(f[3]), hex(f[4]), hex(f[5]), hex(f[6])},
                                    hex(f[3]), hex(f[7]), hex(f[8])});
  }
  ASSERT_GE(groups.size(), 10u);
  const int BLOCK = 128;
  auto k = kernel("triton_random_case", tritonRandomCase,
                  {"offsets", "ints4", "single", "uniforms", "normals", "seed", "n", "BLOCK"});
  for (auto &[key, rows] : groups) {
    const auto &[seedText, dtype] = key;
    // Triton's argument typing: an int in i32 range is i32, below 2^63 i64, else u64.
    bool negative = seedText[0] == '-';
    uint64_t bits = negative ? uint64_t(std::stoll(seedText)) : std::stoull(seedText);
    int64_t asSigned = int64_t(bits);
    std::string seedType = !negative && bits >= (uint64_t(1) << 63) ? "u64"
                           : asSigned >= INT32_MIN && asSigned <= INT32_MAX ? "i32"
                                                                              : "i64";
    bool wide = dtype == "int64";
    size_t n = rows.size();
    std::vector<int64_t> offs64(n);
    std::vector<int32_t> offs32(n);
    for (size_t i = 0; i < n; ++i)
      offs64[i] = rows[i].offset, offs32[i] = int32_t(rows[i].offset);
    Buffer offsets(n * (wide ? 8 : 4)), ints4(n * 16), single(n * 4), uni(n * 4), nor(n * 4);
    offsets.upload(wide ? static_cast<const void *>(offs64.data()) : offs32.data(),
                   n * (wide ? 8 : 4));
    CompiledKernel &c = k.compile(
        {.signature = {wide ? "*i64" : "*i32", "*u32", "*u32", "*fp32", "*fp32", seedType, "i32"},
         .constexprs = {BLOCK},
         .numWarps = 4});
    KernelArg seedArg = seedType == "u64" ? KernelArg(bits)
                        : seedType == "i64" ? KernelArg(asSigned)
                                            : KernelArg(int32_t(asSigned));
    c.launch(int64_t((n + BLOCK - 1) / BLOCK), stream,
             {offsets, ints4, single, uni, nor, seedArg, int32_t(n)});
    sync();
    std::vector<uint32_t> w(n * 4), s(n), u(n), z(n);
    ints4.download(w.data(), n * 16);
    single.download(s.data(), n * 4);
    uni.download(u.data(), n * 4);
    nor.download(z.data(), n * 4);
    for (size_t i = 0; i < n; ++i) {
      std::string where = "seed " + seedText + " (" + seedType + "), " + dtype + " offset " +
                          std::to_string(rows[i].offset);
      for (int j = 0; j < 4; ++j)
        ASSERT_EQ(w[i * 4 + j], rows[i].words[j]) << "randint4x word " << j << ", " << where;
      ASSERT_EQ(s[i], rows[i].single) << "randint, " << where;
      ASSERT_EQ(u[i], rows[i].uniform) << "rand, " << where;
      float want = floatOf(rows[i].normal), got = floatOf(z[i]);
      ASSERT_NEAR(got, want, randnTolerance * std::max(1.0f, std::fabs(want))) << "randn, " << where;
    }
  }
}

template <typename Buffer>
void checkNormalizeRows(CUstream stream, const std::function<void()> &sync, int64_t M, int64_t N,
                        int BM, int BN, int numWarps) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  int64_t stride = N + 3;
  std::vector<float> x = randomFloats(size_t(M * stride), rng);
  Buffer dx = upload<Buffer>(x), out = poisoned<Buffer>(size_t(M * stride));
  auto k = kernel("normalize_rows", normalizeRows, {"out", "x", "M", "N", "stride", "BM", "BN"});
  CompiledKernel &c = k.compile({.signature = {"*fp32", "*fp32", "i32", "i32", "i32"},
                                 .constexprs = {BM, BN},
                                 .numWarps = numWarps});
  c.launch(Grid3{(M + BM - 1) / BM}, stream, {out, dx, int32_t(M), int32_t(N), int32_t(stride)});
  sync();
  std::vector<double> want(size_t(M * stride), kUntouched);
  for (int64_t m = 0; m < M; ++m) {
    double mean = 0, var = 0;
    for (int64_t n = 0; n < N; ++n)
      mean += x[size_t(m * stride + n)];
    mean /= double(N);
    for (int64_t n = 0; n < N; ++n)
      var += (x[size_t(m * stride + n)] - mean) * (x[size_t(m * stride + n)] - mean);
    double rstd = 1 / std::sqrt(var / double(N) + 1e-5);
    for (int64_t n = 0; n < N; ++n)
      want[size_t(m * stride + n)] = (x[size_t(m * stride + n)] - mean) * rstd;
  }
  expectClose(download(out, want.size()), want, 2e-5,
              "normalize_rows " + std::to_string(M) + "x" + std::to_string(N), seed);
}

// The accuracy each function is checked to: exact ones (correctly rounded) at f32's half ulp,
// approximate and libdevice ones at a few ulp.
inline double mathTolerance(ir::MathFn fn) {
  switch (fn) {
  case ir::MathFn::SqrtRn: case ir::MathFn::Abs: case ir::MathFn::Floor: case ir::MathFn::Ceil:
  case ir::MathFn::Fma: case ir::MathFn::DivRn: case ir::MathFn::Trunc: case ir::MathFn::Rint:
  case ir::MathFn::Round: case ir::MathFn::Copysign: case ir::MathFn::Fmod:
    return 6e-8;
  default:
    return 1e-6;
  }
}

} // namespace tritium::testing::blocks
