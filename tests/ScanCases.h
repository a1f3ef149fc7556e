// Scans (cumsum, cumprod, associative_scan), forward and reversed, against double-precision and
// wrapping-integer references, shared by the GPU tests (tests/gpu/ScanGpuTest.cpp) and their
// interpreter twins (tests/unit/ScanInterpreterTest.cpp). The shapes and warp counts put a line
// along the axis in one thread, across lanes (with a lane stride when the tile is stored
// column-major, so that the other dimension is the layout's fastest), across warps and across
// repetitions of the layout's tile, and wrap blocks smaller than the tile over the threads. A
// non-commutative combine (composition of affine maps, exact in i32) checks that the earlier
// elements always come first. Inputs are fresh random numbers; outputs are poisoned before the
// run. `Buffer` is rt::DeviceBuffer or interpreter::HostBuffer.
#pragma once

#include "BlockCases.h"
#include "MatmulLibraryCases.h"
#include "kernels/Cumsum.h"
#include "kernels/HostDtype.h"

#include <cstring>

namespace tritium::testing::scans {

using namespace tritium::dsl;
using blocks::download;
using blocks::poisoned;
using blocks::randomFloats;
using blocks::upload;

// --- kernels ------------------------------------------------------------------------------------

// One BM x BN tile, row-major or (COLMAJOR) column-major in memory: cumsum of x along both axes,
// cumprod of small integers along axis 1, and the composition of affine maps (m, c) along axis
// 1, all forward or (REVERSE) from the end.
inline void scanTile(Ptr sum1, Ptr sum0, Ptr prod1, Ptr mulOut, Ptr addOut, Ptr x, Ptr k, Ptr m,
                     Ptr c, int BM, int BN, int COLMAJOR, int REVERSE) {
  auto rows = arange(0, BM), cols = arange(0, BN);
  Value offs = COLMAJOR ? rows(_, None) + cols(None, _) * BM : rows(_, None) * BN + cols(None, _);
  bool reverse = REVERSE != 0;
  auto v = load(x + offs);
  store(sum1 + offs, cumsum(v, 1, reverse));
  store(sum0 + offs, cumsum(v, 0, reverse));
  store(prod1 + offs, cumprod(load(k + offs), 1, reverse));
  // x -> m x + c, then the next map: (m1, c1) then (m2, c2) is (m1 m2, c1 m2 + c2).
  Group maps = associative_scan(
      Group{load(m + offs), load(c + offs)}, 1,
      [](const Group &a, const Group &b) { return Group{a[0] * b[0], a[1] * b[0] + b[1]}; },
      reverse);
  store(mulOut + offs, maps[0]);
  store(addOut + offs, maps[1]);
}

// cumsum along axis 1 of a BM x BN tile of whatever type the signature gives x (8- and 16-bit
// integers sum in 32 bits: out is then 32 bits wide).
inline void typedCumsum(Ptr out, Ptr x, int BM, int BN, int REVERSE) {
  auto offs = arange(0, BM)(_, None) * BN + arange(0, BN)(None, _);
  store(out + offs, cumsum(load(x + offs), 1, REVERSE != 0));
}

// cumsum along the rows of a [16, 2048] fp32 block and of an i32 block of the same shape, in one
// kernel (each staged whole in shared memory, they once needed 263168 bytes).
inline void wideCumsums(Ptr sums, Ptr counts, Ptr x, Ptr k, int BM, int BN) {
  auto offs = arange(0, BM)(_, None) * BN + arange(0, BN)(None, _);
  store(sums + offs, cumsum(load(x + offs), 1));
  store(counts + offs, cumsum(load(k + offs), 1));
}

// --- references ---------------------------------------------------------------------------------

// Element (i, j) of a BM x BN tile in memory.
inline size_t at(int BM, int BN, bool colMajor, int i, int j) {
  return colMajor ? size_t(j * BM + i) : size_t(i * BN + j);
}

// Scans every line of a BM x BN tile along `axis` with `step(accumulated, element)`.
template <typename T, typename Step>
std::vector<T> scanLines(const std::vector<T> &in, int BM, int BN, bool colMajor, int axis,
                         bool reverse, Step step) {
  std::vector<T> out(in.size());
  int lines = axis == 1 ? BM : BN, len = axis == 1 ? BN : BM;
  for (int line = 0; line < lines; ++line)
    for (int s = 0; s < len; ++s) {
      int pos = reverse ? len - 1 - s : s, prev = reverse ? pos + 1 : pos - 1;
      auto place = [&](int p) {
        return axis == 1 ? at(BM, BN, colMajor, line, p) : at(BM, BN, colMajor, p, line);
      };
      out[place(pos)] = s == 0 ? in[place(pos)] : step(out[place(prev)], in[place(pos)]);
    }
  return out;
}

template <typename Buffer> std::vector<int32_t> downloadInts(const Buffer &b, size_t n) {
  std::vector<int32_t> v(n);
  b.download(v.data(), n * 4);
  return v;
}

// Float results within 1e-4 of the largest partial sum (another order of f32 additions).
inline void expectNearSums(const std::vector<float> &got, const std::vector<double> &want,
                           const std::string &what) {
  double big = 1;
  for (double w : want)
    big = std::max(big, std::fabs(w));
  int64_t bad = 0;
  std::ostringstream first;
  for (size_t i = 0; i < want.size(); ++i)
    if (!(std::fabs(double(got[i]) - want[i]) <= 1e-4 * big) && bad++ < 5)
      first << "  [" << i << "] got " << got[i] << " expected " << want[i] << "\n";
  EXPECT_EQ(bad, 0) << what << ":\n" << first.str();
}

inline void expectEqualInts(const std::vector<int32_t> &got, const std::vector<int32_t> &want,
                            const std::string &what) {
  int64_t bad = 0;
  std::ostringstream first;
  for (size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i] && bad++ < 5)
      first << "  [" << i << "] got " << got[i] << " expected " << want[i] << "\n";
  EXPECT_EQ(bad, 0) << what << ":\n" << first.str();
}

inline int32_t wrapMul(int32_t a, int32_t b) { return int32_t(uint32_t(a) * uint32_t(b)); }
inline int32_t wrapAdd(int32_t a, int32_t b) { return int32_t(uint32_t(a) + uint32_t(b)); }

// --- checks -------------------------------------------------------------------------------------

template <typename Buffer>
void checkScanTile(CUstream stream, const std::function<void()> &sync, int BM, int BN,
                   int numWarps, bool colMajor, bool reverse) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  size_t n = size_t(BM * BN);
  std::vector<float> x = randomFloats(n, rng);
  std::vector<int32_t> k(n), m(n), c(n);
  std::uniform_int_distribution<int32_t> small(-3, 3), any(INT32_MIN, INT32_MAX);
  for (size_t i = 0; i < n; ++i) {
    k[i] = small(rng);
    m[i] = any(rng) | 1; // odd: the products stay odd, never 0
    c[i] = any(rng);
  }
  auto ints = [&](const std::vector<int32_t> &v) {
    Buffer b(n * 4);
    b.upload(v.data(), n * 4);
    return b;
  };
  Buffer dx = upload<Buffer>(x), dk = ints(k), dm = ints(m), dc = ints(c);
  Buffer sum1 = poisoned<Buffer>(n), sum0 = poisoned<Buffer>(n), prod = poisoned<Buffer>(n),
         mul = poisoned<Buffer>(n), add = poisoned<Buffer>(n);
  auto kern = kernel("scan_tile", scanTile,
                     {"sum1", "sum0", "prod1", "mul_out", "add_out", "x", "k", "m", "c", "BM",
                      "BN", "COLMAJOR", "REVERSE"});
  CompiledKernel &compiled = kern.compile(
      {.signature = {"*fp32", "*fp32", "*i32", "*i32", "*i32", "*fp32", "*i32", "*i32", "*i32"},
       .constexprs = {BM, BN, int64_t(colMajor), int64_t(reverse)},
       .numWarps = numWarps});
  compiled.launch(1, stream, {sum1, sum0, prod, mul, add, dx, dk, dm, dc});
  sync();

  std::vector<double> xd(x.begin(), x.end());
  auto plus = [](double a, double b) { return a + b; };
  std::vector<std::pair<int32_t, int32_t>> maps(n);
  for (size_t i = 0; i < n; ++i)
    maps[i] = {m[i], c[i]};
  auto compose = [](std::pair<int32_t, int32_t> a, std::pair<int32_t, int32_t> b) {
    return std::pair{wrapMul(a.first, b.first), wrapAdd(wrapMul(a.second, b.first), b.second)};
  };
  std::vector<std::pair<int32_t, int32_t>> wantMaps =
      scanLines(maps, BM, BN, colMajor, 1, reverse, compose);
  std::vector<int32_t> wantMul(n), wantAdd(n);
  for (size_t i = 0; i < n; ++i)
    std::tie(wantMul[i], wantAdd[i]) = wantMaps[i];

  std::string what = std::to_string(BM) + "x" + std::to_string(BN) + ", " +
                     std::to_string(numWarps) + " warps" + (colMajor ? ", column-major" : "") +
                     (reverse ? ", reversed" : "") + ", seed " + std::to_string(seed);
  expectNearSums(download(sum1, n), scanLines(xd, BM, BN, colMajor, 1, reverse, plus),
                 "cumsum along axis 1, " + what);
  expectNearSums(download(sum0, n), scanLines(xd, BM, BN, colMajor, 0, reverse, plus),
                 "cumsum along axis 0, " + what);
  expectEqualInts(downloadInts(prod, n), scanLines(k, BM, BN, colMajor, 1, reverse, wrapMul),
                  "cumprod along axis 1, " + what);
  expectEqualInts(downloadInts(mul, n), wantMul, "composed maps' factors, " + what);
  expectEqualInts(downloadInts(add, n), wantAdd, "composed maps' offsets, " + what);
}

// The bits of v as an element of `dtype` (integers wrap to its width; floats are small integers,
// exact in every float type here).
inline void encode(const std::string &dtype, int64_t v, unsigned char *p) {
  int bytes = dtype == "fp32" || dtype == "i32" || dtype == "u32"   ? 4
              : dtype == "i64" || dtype == "u64"                    ? 8
              : dtype == "i8"                                      ? 1
                                                                    : 2;
  if (dtype == "fp32" || dtype == "fp16" || dtype == "bf16") {
    kernels::storeElement(dtype, float(v), p);
    return;
  }
  std::memcpy(p, &v, size_t(bytes)); // little-endian: the low bytes
}

template <typename Buffer>
void checkTypedCumsum(CUstream stream, const std::function<void()> &sync, const std::string &dtype,
                      int BM, int BN, int numWarps, bool reverse) {
  uint32_t seed = freshSeed();
  std::mt19937_64 rng(seed);
  size_t n = size_t(BM * BN);
  bool isFloat = dtype == "fp32" || dtype == "fp16" || dtype == "bf16";
  bool narrow = dtype == "i8" || dtype == "u16";
  std::string outType = dtype == "i8" ? "i32" : dtype == "u16" ? "u32" : dtype;
  int inBytes = dtype == "i8" ? 1 : dtype == "fp16" || dtype == "bf16" || dtype == "u16" ? 2
                : dtype == "i64" || dtype == "u64"                             ? 8
                                                                               : 4;
  int outBytes = narrow ? 4 : inBytes;
  // Floats: small integers whose sums stay exact (bf16 holds integers up to 256). Integers: any
  // value of the type, so that sums wrap.
  std::vector<int64_t> vals(n);
  for (auto &v : vals) {
    uint64_t r = rng();
    if (isFloat)
      v = int64_t(r % 5) - 2;
    else if (inBytes == 8)
      v = int64_t(r);
    else
      v = int64_t(r >> (64 - 8 * inBytes)) - (dtype[0] == 'i' ? (int64_t(1) << (8 * inBytes - 1)) : 0);
  }
  std::vector<unsigned char> in(n * size_t(inBytes)), got(n * size_t(outBytes));
  for (size_t i = 0; i < n; ++i)
    encode(dtype, vals[i], &in[i * size_t(inBytes)]);
  Buffer dx(in.size()), out(got.size());
  dx.upload(in.data(), in.size());
  out.fill32(kPoison);
  auto kern = kernel("typed_cumsum", typedCumsum, {"out", "x", "BM", "BN", "REVERSE"});
  CompiledKernel &compiled =
      kern.compile({.signature = {"*" + outType, "*" + dtype},
                    .constexprs = {BM, BN, int64_t(reverse)},
                    .numWarps = numWarps});
  compiled.launch(1, stream, {out, dx});
  sync();
  out.download(got.data(), got.size());
  // Sums in 64-bit wrapping arithmetic; their low bytes are the type's wrapped sums.
  std::vector<int64_t> want = scanLines(vals, BM, BN, false, 1, reverse, [](int64_t a, int64_t b) {
    return int64_t(uint64_t(a) + uint64_t(b));
  });
  int64_t bad = 0;
  std::ostringstream first;
  for (size_t i = 0; i < n; ++i) {
    std::vector<unsigned char> expected(static_cast<size_t>(outBytes));
    encode(outType, want[i], expected.data());
    if (std::memcmp(expected.data(), &got[i * size_t(outBytes)], size_t(outBytes)) && bad++ < 5)
      first << "  [" << i << "] expected the sum " << want[i] << "\n";
  }
  EXPECT_EQ(bad, 0) << "cumsum of " << dtype << " " << BM << "x" << BN << ", " << numWarps
                    << " warps" << (reverse ? ", reversed" : "") << ", seed " << seed << ":\n"
                    << first.str();
}

// wideCumsums on fresh values, 4 warps: any i32 values, so that their sums wrap.
template <typename Buffer>
void checkWideCumsums(CUstream stream, const std::function<void()> &sync) {
  const int BM = 16, BN = 2048;
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  size_t n = size_t(BM * BN);
  std::vector<float> x = randomFloats(n, rng);
  std::vector<int32_t> k(n);
  std::uniform_int_distribution<int32_t> any(INT32_MIN, INT32_MAX);
  for (auto &v : k)
    v = any(rng);
  Buffer dx = upload<Buffer>(x), dk(n * 4), sums = poisoned<Buffer>(n),
         counts = poisoned<Buffer>(n);
  dk.upload(k.data(), n * 4);
  auto kern = kernel("wide_cumsums", wideCumsums, {"sums", "counts", "x", "k", "BM", "BN"});
  CompiledKernel &compiled = kern.compile(
      {.signature = {"*fp32", "*i32", "*fp32", "*i32"}, .constexprs = {BM, BN}, .numWarps = 4});
  compiled.launch(1, stream, {sums, counts, dx, dk});
  sync();
  std::vector<double> xd(x.begin(), x.end());
  std::string what = "16x2048, seed " + std::to_string(seed);
  expectNearSums(download(sums, n),
                 scanLines(xd, BM, BN, false, 1, false, [](double a, double b) { return a + b; }),
                 "fp32 cumsum, " + what);
  expectEqualInts(downloadInts(counts, n), scanLines(k, BM, BN, false, 1, false, wrapAdd),
                  "i32 cumsum, " + what);
}

// The library's long 1-D cumsum (kernels/Cumsum.h) of n fresh random elements, into a poisoned
// output or in place, against a running sum in double precision: floats within 2^-20 of the
// running sum of |x| (fp32 partial sums over blocks of 4096) plus the dtype's rounding of the
// result; int32 exactly, wrapping.
template <typename Buffer>
void checkLongCumsum(CUstream stream, const std::function<void()> &sync, kernels::Dtype dtype,
                     int64_t n, bool inPlace) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  bool exact = dtype == kernels::Dtype::int32;
  ir::ScalarKind kind = tensorcores::scalarKind(dtype);
  size_t bytes = size_t(n) * size_t(kernels::dtypeBytes(dtype));
  std::vector<double> values;
  std::vector<unsigned char> raw;
  if (exact) { // large enough to wrap 32 bits over a long array
    std::uniform_int_distribution<int32_t> pick(-(1 << 30), 1 << 30);
    std::vector<int32_t> ints(static_cast<size_t>(n));
    for (int32_t &x : ints)
      x = pick(rng);
    raw.resize(bytes);
    std::memcpy(raw.data(), ints.data(), bytes);
    values.assign(ints.begin(), ints.end());
  } else {
    tensorcores::Encoded x =
        tensorcores::encode(kind, tensorcores::randomValues(kind, static_cast<size_t>(n), rng));
    raw = x.raw, values = x.values;
  }
  Buffer in = tensorcores::uploadBytes<Buffer>(raw),
         separate = tensorcores::poisonedBytes<Buffer>(bytes);
  Buffer &out = inPlace ? in : separate;
  int64_t wsBytes = kernels::cumsumWorkspaceBytes(n);
  Buffer ws = tensorcores::poisonedBytes<Buffer>(size_t(wsBytes));
  auto address = [](const Buffer &buf) { return reinterpret_cast<void *>(uintptr_t(buf.ptr())); };
  kernels::cumsum(dtype, address(out), address(in), n, address(ws), wsBytes, stream);
  sync();
  std::vector<unsigned char> got(bytes);
  out.download(got.data(), got.size());
  std::vector<double> y = tensorcores::decode(kind, got);
  double u = dtype == kernels::Dtype::bf16   ? 1.0 / 256
             : dtype == kernels::Dtype::fp16 ? 1.0 / 2048
                                             : 0;
  double want = 0, absSum = 0;
  int64_t wrapped = 0;
  size_t bad = 0;
  std::ostringstream first;
  for (int64_t i = 0; i < n; ++i) {
    bool ok;
    if (exact) {
      wrapped = int64_t(int32_t(uint32_t(uint64_t(wrapped) + uint64_t(int64_t(values[size_t(i)])))));
      want = double(wrapped);
      ok = y[size_t(i)] == want;
    } else {
      want += values[size_t(i)];
      absSum += std::fabs(values[size_t(i)]);
      ok = std::fabs(y[size_t(i)] - want) <= absSum / (1 << 20) + u * std::fabs(want) + 1e-30;
    }
    if (!ok && bad++ < 5)
      first << "  out[" << i << "] got " << y[size_t(i)] << ", want " << want << "\n";
  }
  EXPECT_EQ(bad, 0u) << "cumsum " << kernels::dtypeName(dtype) << " n " << n
                     << (inPlace ? " in place" : "") << ": " << bad << " wrong (seed " << seed
                     << "):\n"
                     << first.str();
}

} // namespace tritium::testing::scans
