// The library's matmul (kernels/Matmul.h) against a double-precision reference, shared by the
// GPU tests (tests/gpu/DotGpuTest.cpp) and their interpreter twins
// (tests/unit/DotInterpreterTest.cpp): B in either layout, bias and activations in the
// epilogue, row strides wider than the rows, shapes that are not multiples of any tile. Inputs
// are fresh random numbers rounded to their dtype; C is poisoned first, and every element of
// C (and the padding between its rows, which must stay poisoned) is checked.
#pragma once

#include "DotCases.h"
#include "interpreter/Memory.h"
#include "kernels/Matmul.h"
#include "runtime/Memory.h"

namespace tritium::testing::tensorcores {

struct LibraryMatmulCase {
  kernels::Dtype in = kernels::Dtype::bf16, out = kernels::Dtype::bf16;
  int64_t M = 64, N = 64, K = 64;
  int64_t lda = 0, ldb = 0, ldc = 0; // 0: dense
  bool bTransposed = false, bias = false;
  kernels::Activation activation = kernels::Activation::None;

  std::string str() const {
    std::ostringstream s;
    s << kernels::dtypeName(in) << "->" << kernels::dtypeName(out) << " " << M << "x" << N << "x"
      << K << (bTransposed ? " b[N,K]" : " b[K,N]") << (bias ? " +bias" : "")
      << (activation == kernels::Activation::Gelu   ? " gelu"
          : activation == kernels::Activation::Silu ? " silu"
                                                    : "")
      << " lda " << lda << " ldb " << ldb << " ldc " << ldc;
    return s.str();
  }
};

inline ir::ScalarKind scalarKind(kernels::Dtype d) {
  return d == kernels::Dtype::fp32   ? ir::ScalarKind::F32
         : d == kernels::Dtype::fp16 ? ir::ScalarKind::F16
                                     : ir::ScalarKind::BF16;
}

inline void *addressOf(const interpreter::HostBuffer &b) { return b.data(); }
inline void *addressOf(const rt::DeviceBuffer &b) { return reinterpret_cast<void *>(b.ptr()); }

template <typename Buffer>
void checkLibraryMatmul(CUstream stream, const std::function<void()> &sync,
                        const LibraryMatmulCase &c) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  ir::ScalarKind in = scalarKind(c.in), out = scalarKind(c.out);
  int64_t lda = c.lda ? c.lda : c.K, ldc = c.ldc ? c.ldc : c.N;
  int64_t ldb = c.ldb ? c.ldb : (c.bTransposed ? c.K : c.N);
  int64_t rowsB = c.bTransposed ? c.N : c.K;
  Encoded a = encode(in, randomValues(in, size_t(c.M * lda), rng));
  Encoded b = encode(in, randomValues(in, size_t(rowsB * ldb), rng));
  Encoded bias = encode(out, randomValues(out, size_t(c.N), rng));
  int outBytes = ir::bitWidth(out) / 8;
  Buffer da = uploadBytes<Buffer>(a.raw), db = uploadBytes<Buffer>(b.raw);
  Buffer dbias = uploadBytes<Buffer>(bias.raw);
  Buffer dc = poisonedBytes<Buffer>(size_t(c.M * ldc * outBytes));
  kernels::MatmulArgs args{.c = addressOf(dc), .a = addressOf(da), .b = addressOf(db),
                           .bias = c.bias ? addressOf(dbias) : nullptr, .M = c.M, .N = c.N,
                           .K = c.K, .lda = c.lda, .ldb = c.ldb, .ldc = c.ldc,
                           .bTransposed = c.bTransposed, .activation = c.activation,
                           .in = c.in, .out = c.out};
  kernels::matmul(args, stream);
  sync();
  std::vector<unsigned char> raw(size_t(c.M * ldc * outBytes));
  dc.download(raw.data(), raw.size());
  std::vector<double> got = decode(out, raw);
  // fp32 accumulation over K terms of unit normals, then one rounding to C's dtype; the
  // activations' exp and tanh are approximate to a few ulp of fp32.
  double tol = 2e-5 * std::sqrt(double(c.K)) + 1e-5;
  double rel = c.out == kernels::Dtype::bf16 ? 1.0 / 128
               : c.out == kernels::Dtype::fp16 ? 1.0 / 1024
                                               : 1e-5;
  size_t bad = 0;
  std::ostringstream first;
  for (int64_t m = 0; m < c.M; ++m)
    for (int64_t n = 0; n < ldc; ++n) {
      double g = got[size_t(m * ldc + n)];
      if (n >= c.N) { // padding between rows: still the poison's bytes
        bool kept = true;
        for (int64_t o = (m * ldc + n) * outBytes; o < (m * ldc + n + 1) * outBytes; ++o)
          kept = kept && raw[size_t(o)] == ((0x7fc00001u >> (8 * (o % 4))) & 0xffu);
        if (!kept && bad++ < 5)
          first << "  padding [" << m << ", " << n << "] was written\n";
        continue;
      }
      double want = 0;
      for (int64_t k = 0; k < c.K; ++k)
        want += a.values[size_t(m * lda + k)] *
                b.values[size_t(c.bTransposed ? n * ldb + k : k * ldb + n)];
      if (c.bias)
        want += bias.values[size_t(n)];
      if (c.activation == kernels::Activation::Gelu)
        want = 0.5 * want * (1 + std::tanh(0.7978845608028654 * (want + 0.044715 * want * want * want)));
      else if (c.activation == kernels::Activation::Silu)
        want = want / (1 + std::exp(-want));
      bool ok = std::isfinite(g) && std::fabs(g - want) <= tol + rel * std::fabs(want);
      if (!ok && bad++ < 5)
        first << "  [" << m << ", " << n << "] got " << g << ", want " << want << "\n";
    }
  EXPECT_EQ(bad, 0u) << "library matmul " << c.str() << ": " << bad << " wrong (seed " << seed
                     << "):\n"
                     << first.str();
}

} // namespace tritium::testing::tensorcores
