// Kernels with inline_asm_elementwise and their references, shared by the GPU test
// (tests/gpu/InlineAsmGpuTest.cpp, which runs them) and tests/unit/InlineAsmTest.cpp (which
// compiles them to PTX and assembles it without a GPU; the interpreter cannot run PTX). Inputs
// are fresh random numbers; outputs are poisoned before the run.
#pragma once

#include "BlockCases.h"

#include <cstring>

namespace tritium::testing::inline_asm {

using namespace tritium::dsl;

// --- kernels ------------------------------------------------------------------------------------

// shf.l.wrap.b32: the upper word of (y:x) << (n mod 32), one element per call, a scalar n
// broadcast over the block.
inline void funnelShift(Ptr out, Ptr x, Ptr y, Int n, int BLOCK) {
  auto offs = arange(0, BLOCK);
  store(out + offs, inline_asm_elementwise("shf.l.wrap.b32 $0, $1, $2, $3;", "=r,r,r,r",
                                           {load(x + offs), load(y + offs), n}, uint32, true, 1));
}

// Four bytes per call in one 32-bit register each way: (x & 31) << 3 of every byte.
inline void packedBytes(Ptr out, Ptr x, int BLOCK) {
  auto offs = arange(0, BLOCK);
  store(out + offs, inline_asm_elementwise("and.b32 $0, $1, 0x1F1F1F1F;\n\tshl.b32 $0, $0, 3;",
                                           "=r,r", {load(x + offs)}, int8, true, 4));
}

// Two results, four elements per call (Triton's own example): a's four bytes arrive packed in
// $8, b's four i32 in $9 .. $12; c = a widened to u32 ($0 .. $3), d = a - b ($4 .. $7).
inline void twoResults(Ptr c, Ptr d, Ptr a, Ptr b, int BLOCK) {
  auto offs = arange(0, BLOCK);
  Group r = inline_asm_elementwise(R"({
    .reg .b8 tmp<4>;
    mov.b32 {tmp0, tmp1, tmp2, tmp3}, $8;
    cvt.u32.u8 $0, tmp0;
    cvt.u32.u8 $1, tmp1;
    cvt.u32.u8 $2, tmp2;
    cvt.u32.u8 $3, tmp3;
    }
    sub.u32 $4, $0, $9;
    sub.u32 $5, $1, $10;
    sub.u32 $6, $2, $11;
    sub.u32 $7, $3, $12;)",
                                   "=r,=r,=r,=r,=r,=r,=r,=r,r,r,r,r,r",
                                   {load(a + offs), load(b + offs)}, {uint32, int32}, true, 4);
  store(c + offs, r[0]);
  store(d + offs, r[1]);
}

// Registers of other widths: an f32 product in f registers, fp16 pairs in one r, i64 in l.
inline void otherRegisters(Ptr prod, Ptr halves, Ptr wide, Ptr x, Ptr y, Ptr h, Ptr g, Ptr p,
                           Ptr q, int BLOCK) {
  auto offs = arange(0, BLOCK);
  store(prod + offs, inline_asm_elementwise("mul.rn.f32 $0, $1, $2;", "=f,f,f",
                                            {load(x + offs), load(y + offs)}, float32, true, 1));
  store(halves + offs, inline_asm_elementwise("add.rn.f16x2 $0, $1, $2;", "=r,r,r",
                                              {load(h + offs), load(g + offs)}, float16, true, 2));
  store(wide + offs, inline_asm_elementwise("add.s64 $0, $1, $2;", "=l,l,l",
                                            {load(p + offs), load(q + offs)}, int64, true, 1));
}

// An asm that is not pure (it reads %laneid), and one on scalars: out[i] = the lane holding
// element i (one element per thread: i mod 32), out[BLOCK] = n + 5.
inline void lanesAndScalars(Ptr out, Int n, int BLOCK) {
  auto offs = arange(0, BLOCK);
  store(out + offs,
        inline_asm_elementwise("mov.u32 $0, %laneid;", "=r,r", {offs}, int32, false, 1));
  store(out + BLOCK, inline_asm_elementwise("add.u32 $0, $1, $2;", "=r,r,r", {n, 5}, int32, true, 1));
}

inline const std::vector<std::string> kFunnelNames = {"out", "x", "y", "n", "BLOCK"};
inline const std::vector<std::string> kPackedNames = {"out", "x", "BLOCK"};
inline const std::vector<std::string> kTwoNames = {"c", "d", "a", "b", "BLOCK"};
inline const std::vector<std::string> kOtherNames = {"prod", "halves", "wide", "x", "y",
                                                     "h", "g", "p", "q", "BLOCK"};
inline const std::vector<std::string> kLaneNames = {"out", "n", "BLOCK"};

inline Specialization funnelSpec(int block) {
  return {.signature = {"*u32", "*u32", "*u32", "i32"}, .constexprs = {block}, .numWarps = 4};
}
inline Specialization packedSpec(int block) {
  return {.signature = {"*i8", "*u8"}, .constexprs = {block}, .numWarps = 4};
}
inline Specialization twoSpec(int block) {
  return {.signature = {"*u32", "*i32", "*u8", "*i32"}, .constexprs = {block}, .numWarps = 4};
}
inline Specialization otherSpec(int block) {
  return {.signature = {"*fp32", "*fp16", "*i64", "*fp32", "*fp32", "*fp16", "*fp16", "*i64",
                        "*i64"},
          .constexprs = {block},
          .numWarps = 4};
}
inline Specialization laneSpec(int block) {
  return {.signature = {"*i32", "i32"}, .constexprs = {block}, .numWarps = 4};
}

// --- checks -------------------------------------------------------------------------------------

template <typename Buffer, typename T> Buffer uploadVector(const std::vector<T> &v) {
  Buffer b(std::max<size_t>(4, v.size() * sizeof(T)));
  b.upload(v.data(), v.size() * sizeof(T));
  return b;
}
template <typename Buffer> Buffer poisonedBytes(size_t bytes) {
  Buffer b(std::max<size_t>(4, (bytes + 3) / 4 * 4));
  b.fill32(kPoison);
  return b;
}
template <typename T, typename Buffer> std::vector<T> downloadVector(const Buffer &b, size_t n) {
  std::vector<T> v(n);
  b.download(v.data(), n * sizeof(T));
  return v;
}

template <typename T>
void expectEqual(const std::vector<T> &got, const std::vector<T> &want, const std::string &what) {
  int64_t bad = 0;
  std::ostringstream first;
  for (size_t i = 0; i < want.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(T)) && bad++ < 5)
      first << "  [" << i << "] got " << double(got[i]) << " expected " << double(want[i]) << "\n";
  EXPECT_EQ(bad, 0) << what << ":\n" << first.str();
}

template <typename Buffer>
void checkFunnelShift(CUstream stream, const std::function<void()> &sync, int block) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  std::vector<uint32_t> x(static_cast<size_t>(block)), y(static_cast<size_t>(block));
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = rng(), y[i] = rng();
  int32_t n = int32_t(rng() % 64);
  Buffer dx = uploadVector<Buffer>(x), dy = uploadVector<Buffer>(y),
         out = poisonedBytes<Buffer>(x.size() * 4);
  auto kKernel = kernel("funnel_shift", funnelShift, kFunnelNames);
  CompiledKernel &k = kKernel.compile(funnelSpec(block));
  k.launch(1, stream, {out, dx, dy, n});
  sync();
  std::vector<uint32_t> want(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    want[i] = uint32_t(((uint64_t(y[i]) << 32 | x[i]) << (n % 32)) >> 32);
  expectEqual(downloadVector<uint32_t>(out, x.size()), want,
              "shf.l.wrap by " + std::to_string(n) + ", seed " + std::to_string(seed));
}

template <typename Buffer>
void checkPackedBytes(CUstream stream, const std::function<void()> &sync, int block) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  std::vector<uint8_t> x(static_cast<size_t>(block));
  for (auto &v : x)
    v = uint8_t(rng());
  Buffer dx = uploadVector<Buffer>(x), out = poisonedBytes<Buffer>(x.size());
  auto kKernel = kernel("packed_bytes", packedBytes, kPackedNames);
  CompiledKernel &k = kKernel.compile(packedSpec(block));
  k.launch(1, stream, {out, dx});
  sync();
  std::vector<int8_t> want(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    want[i] = int8_t(uint8_t((x[i] & 31) << 3));
  expectEqual(downloadVector<int8_t>(out, x.size()), want,
              "four bytes per call, " + std::to_string(block) + " elements, seed " +
                  std::to_string(seed));
}

template <typename Buffer>
void checkTwoResults(CUstream stream, const std::function<void()> &sync, int block) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  std::vector<uint8_t> a(static_cast<size_t>(block));
  std::vector<int32_t> b(static_cast<size_t>(block));
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = uint8_t(rng()), b[i] = int32_t(rng());
  Buffer da = uploadVector<Buffer>(a), db = uploadVector<Buffer>(b),
         c = poisonedBytes<Buffer>(a.size() * 4), d = poisonedBytes<Buffer>(a.size() * 4);
  auto kKernel = kernel("two_results", twoResults, kTwoNames);
  CompiledKernel &k = kKernel.compile(twoSpec(block));
  k.launch(1, stream, {c, d, da, db});
  sync();
  std::vector<uint32_t> wantC(a.size());
  std::vector<int32_t> wantD(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    wantC[i] = a[i];
    wantD[i] = int32_t(uint32_t(a[i]) - uint32_t(b[i]));
  }
  std::string what = std::to_string(block) + " elements, seed " + std::to_string(seed);
  expectEqual(downloadVector<uint32_t>(c, a.size()), wantC, "first result, " + what);
  expectEqual(downloadVector<int32_t>(d, a.size()), wantD, "second result, " + what);
}

template <typename Buffer>
void checkOtherRegisters(CUstream stream, const std::function<void()> &sync, int block) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  size_t n = size_t(block);
  std::vector<float> x = blocks::randomFloats(n, rng), y = blocks::randomFloats(n, rng);
  std::vector<_Float16> h(n), g(n);
  std::vector<int64_t> p(n), q(n);
  for (size_t i = 0; i < n; ++i) {
    h[i] = _Float16(x[i]), g[i] = _Float16(y[i] * 0.5f);
    p[i] = int64_t(uint64_t(rng()) << 32 | rng()), q[i] = int64_t(uint64_t(rng()) << 32 | rng());
  }
  Buffer dx = uploadVector<Buffer>(x), dy = uploadVector<Buffer>(y), dh = uploadVector<Buffer>(h),
         dg = uploadVector<Buffer>(g), dp = uploadVector<Buffer>(p), dq = uploadVector<Buffer>(q),
         prod = poisonedBytes<Buffer>(n * 4), halves = poisonedBytes<Buffer>(n * 2),
         wide = poisonedBytes<Buffer>(n * 8);
  auto kKernel = kernel("other_registers", otherRegisters, kOtherNames);
  CompiledKernel &k = kKernel.compile(otherSpec(block));
  k.launch(1, stream, {prod, halves, wide, dx, dy, dh, dg, dp, dq});
  sync();
  // Each is one correctly rounded operation: the host's float, _Float16 and wrapping int64
  // arithmetic give the same bits.
  std::vector<float> wantProd(n);
  std::vector<_Float16> wantHalves(n);
  std::vector<int64_t> wantWide(n);
  for (size_t i = 0; i < n; ++i) {
    wantProd[i] = x[i] * y[i];
    wantHalves[i] = _Float16(h[i] + g[i]);
    wantWide[i] = int64_t(uint64_t(p[i]) + uint64_t(q[i]));
  }
  std::string what = std::to_string(block) + " elements, seed " + std::to_string(seed);
  expectEqual(downloadVector<float>(prod, n), wantProd, "mul.rn.f32 in f registers, " + what);
  expectEqual(downloadVector<_Float16>(halves, n), wantHalves, "add.rn.f16x2, " + what);
  expectEqual(downloadVector<int64_t>(wide, n), wantWide, "add.s64 in l registers, " + what);
}

template <typename Buffer>
void checkLanesAndScalars(CUstream stream, const std::function<void()> &sync) {
  const int block = 128; // one element per thread of 4 warps
  uint32_t seed = freshSeed();
  int32_t n = int32_t(std::mt19937(seed)() % 1000);
  Buffer out = poisonedBytes<Buffer>(size_t(block + 1) * 4);
  auto kKernel = kernel("lanes_and_scalars", lanesAndScalars, kLaneNames);
  CompiledKernel &k = kKernel.compile(laneSpec(block));
  k.launch(1, stream, {out, n});
  sync();
  std::vector<int32_t> want(size_t(block + 1));
  for (int i = 0; i < block; ++i)
    want[size_t(i)] = i % 32;
  want[size_t(block)] = n + 5;
  expectEqual(downloadVector<int32_t>(out, want.size()), want,
              "%laneid and a scalar asm, n = " + std::to_string(n));
}

} // namespace tritium::testing::inline_asm
