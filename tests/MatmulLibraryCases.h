// The library's matmul (kernels/Matmul.h) against a double-precision reference, shared by the
// GPU tests (tests/gpu/DotGpuTest.cpp) and their interpreter twins
// (tests/unit/DotInterpreterTest.cpp): B in either layout, bias and activations in the
// epilogue (scales, residual), every operand dtype, row strides wider than the rows, shapes
// that are not multiples of any tile. Inputs
// are fresh random numbers rounded to their dtype; C is poisoned first, and every element of
// C (and the padding between its rows, which must stay poisoned) is checked.
#pragma once

#include "DotCases.h"
#include "interpreter/Memory.h"
#include "kernels/Matmul.h"
#include "kernels/capi/tritium_kernels.h"
#include "runtime/Memory.h"

#include <algorithm>
#include <optional>

namespace tritium::testing::tensorcores {

struct LibraryMatmulCase {
  kernels::Dtype in = kernels::Dtype::bf16, out = kernels::Dtype::bf16;
  int64_t M = 64, N = 64, K = 64;
  int64_t lda = 0, ldb = 0, ldc = 0, ldr = 0; // 0: dense
  bool bTransposed = false, bias = false;
  kernels::Activation activation = kernels::Activation::None;
  bool residual = false, scaleA = false, scaleB = false;
  float alpha = 1;
  float outScale = 1; // fp8 out: C = saturate(result x outScale)
  bool amax = false;  // ask for max |result|
  kernels::Precision precision = kernels::Precision::tf32;
  int64_t maxImpreciseAcc = 0; // fp8: partial sums into fp32 every so many of K
  bool onWgmma = false; // sm_90a: fp8 sums and tf32 operands lose a few more bits
  std::optional<kernels::MatmulPlan> plan; // else the planner's (or the autotuner's)
  // A workspace (poisoned) of matmulWorkspaceBytes, or of what the given plan's split needs:
  // plans may split K.
  bool workspace = false;
  // The 32-bit word the workspace is filled with (0: the poison): 1.0f (0x3f800000, or 1 for
  // int8 operands) is what a stream-K flag says when a partial product is ready, so that a
  // flag the call did not reset lets a program read a partial before it is written.
  uint32_t workspaceWord = 0;
  // Called through the C interface's tritium_matmul_with (every option in its struct) instead
  // of kernels::matmul; no plan.
  bool throughCApi = false;

  std::string str() const {
    std::ostringstream s;
    s << kernels::dtypeName(in) << "->" << kernels::dtypeName(out) << " " << M << "x" << N << "x"
      << K << (bTransposed ? " b[N,K]" : " b[K,N]") << (bias ? " +bias" : "")
      << (activation == kernels::Activation::Gelu     ? " gelu"
          : activation == kernels::Activation::Silu   ? " silu"
          : activation == kernels::Activation::SwiGlu ? " swiglu"
                                                      : "")
      << (residual ? " +residual" : "") << (scaleA ? " *scaleA" : "")
      << (scaleB ? " *scaleB" : "") << (alpha != 1 ? " *alpha" : "")
      << (outScale != 1 ? " *outScale" : "") << (amax ? " amax" : "")
      << (in == kernels::Dtype::fp32 ? " precision " + std::to_string(int(precision)) : "")
      << " lda " << lda << " ldb " << ldb << " ldc " << ldc << " ldr " << ldr
      << (plan ? " plan " + kernels::describe(plan->fields()) : "")
      << (workspace ? " workspace" : "")
      << (workspaceWord ? " workspace of " + std::to_string(workspaceWord) : "") << (throughCApi ? " through the C API" : "")
      << (maxImpreciseAcc ? " imprecise " + std::to_string(maxImpreciseAcc) : "");
    return s.str();
  }
};

inline ir::ScalarKind scalarKind(kernels::Dtype d) {
  switch (d) {
  case kernels::Dtype::fp32: return ir::ScalarKind::F32;
  case kernels::Dtype::fp16: return ir::ScalarKind::F16;
  case kernels::Dtype::bf16: return ir::ScalarKind::BF16;
  case kernels::Dtype::fp8e4m3: return ir::ScalarKind::F8E4M3;
  case kernels::Dtype::fp8e5m2: return ir::ScalarKind::F8E5M2;
  case kernels::Dtype::int8: return ir::ScalarKind::I8;
  case kernels::Dtype::int32: return ir::ScalarKind::I32;
  }
  return ir::ScalarKind::F32;
}

inline void *addressOf(const interpreter::HostBuffer &b) { return b.data(); }
inline void *addressOf(const rt::DeviceBuffer &b) { return reinterpret_cast<void *>(b.ptr()); }

// The bound on |got - want| for one element, from the exact product's sum of magnitudes
// (sum |a b|), K and the dtypes: exact for int8 into int32; otherwise fp32 accumulation of K
// terms (their spread grows as sqrt(K) for the unit normals of the float operands), tf32's
// rounding of fp32 operands, Hopper's shorter fp8 sums, one rounding of each epilogue input to
// C's dtype and of the result.
inline double libraryMatmulTolerance(const LibraryMatmulCase &c, double magnitude, double scale,
                                     double want) {
  using kernels::Dtype;
  if (c.out == Dtype::int32)
    return 0;
  double spread = std::sqrt(double(c.K));
  double t = 2e-5 * spread + 1e-5;
  if (c.in == Dtype::int8)
    t = 1e-6 * magnitude; // exact in int32, then rounded to fp32
  else if (c.in == Dtype::fp32 && c.precision == kernels::Precision::tf32)
    t = (c.onWgmma ? 6e-3 : 2e-3) * spread;
  else if (c.in == Dtype::fp32 && c.precision == kernels::Precision::tf32x3)
    t = 1e-4 * spread;
  else if (kernels::isFp8(c.in) && c.onWgmma)
    // Hopper sums fp8 products keeping about 14 bits (DeepSeek-V3's report, section 3.3.2):
    // each of the K / 32 wgmma steps may lose 2^-14 of the running sum and of its products,
    // both at most sum |a b|. The H200 gave 4.7e-4 of sum |a b| at K = 384 into fp32 (an
    // element of -61.65 came out -61.77), past the 2^-12 that tests/DotCases.h allows its
    // smaller sums; this bound is 7.9e-4 there.
    t = 1e-3 * spread + magnitude * (double(c.K) / 32 + 1) / 16384;
  else if (kernels::isFp8(c.in))
    t = 1e-3 * spread;
  double rel = c.out == Dtype::bf16 ? 1.0 / 128 : c.out == Dtype::fp16 ? 1.0 / 1024 : 1e-5;
  return t * scale + rel * std::fabs(want);
}

template <typename Buffer>
void checkLibraryMatmul(CUstream stream, const std::function<void()> &sync,
                        const LibraryMatmulCase &c) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  ir::ScalarKind in = scalarKind(c.in), out = scalarKind(c.out);
  int64_t lda = c.lda ? c.lda : c.K, ldc = c.ldc ? c.ldc : c.N, ldr = c.ldr ? c.ldr : c.N;
  // SwiGLU: B holds 2N columns (gate, then up), and so do bias and scaleB.
  bool swiglu = c.activation == kernels::Activation::SwiGlu;
  int64_t columnsB = swiglu ? 2 * c.N : c.N;
  int64_t ldb = c.ldb ? c.ldb : (c.bTransposed ? c.K : columnsB);
  int64_t rowsB = c.bTransposed ? columnsB : c.K;
  Encoded a = encode(in, randomValues(in, size_t(c.M * lda), rng));
  Encoded b = encode(in, randomValues(in, size_t(rowsB * ldb), rng));
  // Bias and residual come in C's dtype; bf16 for an fp8 C.
  ir::ScalarKind epilogue = c.out == kernels::Dtype::int32 ? ir::ScalarKind::F32
                            : kernels::isFp8(c.out)         ? ir::ScalarKind::BF16
                                                            : out;
  Encoded bias = encode(epilogue, randomValues(epilogue, size_t(columnsB), rng));
  Encoded residual = encode(epilogue, randomValues(epilogue, size_t(c.M * ldr), rng));
  std::uniform_real_distribution<double> scales(0.25, 2.0);
  std::vector<double> sa(static_cast<size_t>(c.M)), sb(static_cast<size_t>(columnsB));
  for (double &v : sa)
    v = scales(rng);
  for (double &v : sb)
    v = scales(rng);
  Encoded scaleA = encode(ir::ScalarKind::F32, sa), scaleB = encode(ir::ScalarKind::F32, sb);
  int outBytes = ir::bitWidth(out) / 8;
  Buffer da = uploadBytes<Buffer>(a.raw), db = uploadBytes<Buffer>(b.raw);
  Buffer dbias = uploadBytes<Buffer>(bias.raw), dres = uploadBytes<Buffer>(residual.raw);
  Buffer dsa = uploadBytes<Buffer>(scaleA.raw), dsb = uploadBytes<Buffer>(scaleB.raw);
  Buffer dc = poisonedBytes<Buffer>(size_t(c.M * ldc * outBytes));
  Buffer damax = uploadBytes<Buffer>(std::vector<unsigned char>(4, 0)); // 0.0f
  kernels::MatmulArgs args{
      .c = addressOf(dc), .a = addressOf(da), .b = addressOf(db),
      .bias = c.bias ? addressOf(dbias) : nullptr,
      .residual = c.residual ? addressOf(dres) : nullptr,
      .scaleA = c.scaleA ? static_cast<const float *>(addressOf(dsa)) : nullptr,
      .scaleB = c.scaleB ? static_cast<const float *>(addressOf(dsb)) : nullptr,
      .alpha = c.alpha, .outScale = c.outScale,
      .amax = c.amax ? static_cast<float *>(addressOf(damax)) : nullptr,
      .M = c.M, .N = c.N, .K = c.K, .lda = c.lda, .ldb = c.ldb, .ldc = c.ldc,
      .ldr = c.ldr, .bTransposed = c.bTransposed, .activation = c.activation, .in = c.in,
      .out = c.out, .precision = c.precision, .maxImpreciseAcc = c.maxImpreciseAcc};
  // The partial products' room, poisoned: a slice the sum read before it was written would show.
  int64_t workspaceBytes = 0;
  if (c.workspace)
    workspaceBytes = std::max(kernels::matmulWorkspaceBytes(args),
                              c.plan ? kernels::matmulWorkspaceBytes(args, *c.plan) : 0);
  Buffer dworkspace = poisonedBytes<Buffer>(size_t(std::max<int64_t>(workspaceBytes, 4)));
  if (c.workspaceWord)
    dworkspace.fill32(c.workspaceWord);
  if (c.workspace) {
    args.workspace = addressOf(dworkspace);
    args.workspaceBytes = workspaceBytes;
  }
  if (c.throughCApi) {
    tritium_matmul_options o;
    tritium_matmul_options_init(&o);
    o.bias = args.bias;
    o.residual = args.residual;
    o.scale_a = args.scaleA;
    o.scale_b = args.scaleB;
    o.alpha = args.alpha;
    o.out_scale = args.outScale;
    o.amax = args.amax;
    o.lda = args.lda, o.ldb = args.ldb, o.ldc = args.ldc, o.ldr = args.ldr;
    o.b_transposed = args.bTransposed;
    o.activation = int(args.activation);
    o.precision = int(args.precision);
    o.max_imprecise_acc = args.maxImpreciseAcc;
    o.workspace = args.workspace;
    o.workspace_bytes = args.workspaceBytes;
    // The C interface's dtype numbers are kernels::Dtype's.
    int rc = tritium_matmul_with(int(args.in), int(args.out), args.c, args.a, args.b, args.M,
                                 args.N, args.K, &o, stream);
    ASSERT_EQ(rc, 0) << c.str() << ": " << tritium_last_error();
  } else {
    kernels::matmul(args, stream, c.plan ? &*c.plan : nullptr);
  }
  sync();
  std::vector<unsigned char> raw(size_t(c.M * ldc * outBytes));
  dc.download(raw.data(), raw.size());
  std::vector<double> got = decode(out, raw);
  size_t bad = 0;
  std::ostringstream first;
  double wantAmax = 0, amaxTol = 0; // max |result| before quantization, and its bound
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
      // The epilogue's input of B's column j (before the activation), with its bound.
      auto column = [&](int64_t j, double &tol) {
        double x = 0, magnitude = 0;
        for (int64_t k = 0; k < c.K; ++k) {
          double p = a.values[size_t(m * lda + k)] *
                     b.values[size_t(c.bTransposed ? j * ldb + k : k * ldb + j)];
          x += p;
          magnitude += std::fabs(p);
        }
        double scale =
            double(c.alpha) * (c.scaleA ? sa[size_t(m)] : 1) * (c.scaleB ? sb[size_t(j)] : 1);
        x *= scale;
        if (c.bias)
          x += bias.values[size_t(j)];
        tol = libraryMatmulTolerance(c, magnitude, std::fabs(scale), x);
        return x;
      };
      double tol = 0;
      double want = column(n, tol);
      if (c.activation == kernels::Activation::Gelu)
        want = 0.5 * want * (1 + std::tanh(0.7978845608028654 * (want + 0.044715 * want * want * want)));
      else if (c.activation == kernels::Activation::Silu)
        want = want / (1 + std::exp(-want));
      else if (swiglu) {
        // silu(g) u: an error e in g moves it by at most 1.1 |u| e (|silu'| < 1.1), one in u
        // by |silu(g)| times it.
        double tolUp = 0, up = column(c.N + n, tolUp);
        double gate = want / (1 + std::exp(-want));
        want = gate * up;
        tol = 1.1 * std::fabs(up) * tol + std::fabs(gate) * tolUp;
      }
      if (c.residual)
        want += residual.values[size_t(m * ldr + n)];
      double rel = c.out == kernels::Dtype::bf16 ? 1.0 / 128 : c.out == kernels::Dtype::fp16 ? 1.0 / 1024 : 1e-5;
      if (swiglu || c.residual)
        tol += rel * std::fabs(want);
      if (std::fabs(want) + tol > wantAmax)
        amaxTol = std::max(amaxTol, tol);
      wantAmax = std::max(wantAmax, std::fabs(want));
      if (kernels::isFp8(c.out)) {
        // Quantized: times outScale, saturated to the largest finite value, rounded to 3 (e4m3)
        // or 2 (e5m2) mantissa bits.
        double top = c.out == kernels::Dtype::fp8e4m3 ? 448 : 57344;
        double q = std::clamp(want * c.outScale, -top, top);
        tol = tol * c.outScale + (c.out == kernels::Dtype::fp8e4m3 ? 1.0 / 16 : 1.0 / 8) * std::fabs(q) +
              std::ldexp(1.0, c.out == kernels::Dtype::fp8e4m3 ? -9 : -16); // subnormal steps
        want = q;
      }
      bool ok = std::isfinite(g) && std::fabs(g - want) <= tol;
      if (!ok && bad++ < 5)
        first << "  [" << m << ", " << n << "] got " << g << ", want " << want << "\n";
    }
  EXPECT_EQ(bad, 0u) << "library matmul " << c.str() << ": " << bad << " wrong (seed " << seed
                     << "):\n"
                     << first.str();
  if (c.amax) {
    std::vector<unsigned char> rawAmax(4);
    damax.download(rawAmax.data(), 4);
    double gotAmax = decode(ir::ScalarKind::F32, rawAmax)[0];
    EXPECT_LE(std::fabs(gotAmax - wantAmax), amaxTol)
        << "library matmul " << c.str() << ": amax " << gotAmax << ", want " << wantAmax
        << " (seed " << seed << ")";
  }
}

} // namespace tritium::testing::tensorcores
