// The library's matmul: Triton's tutorial 03 (grouped tile order, a pipelined K loop, masked
// edges) with the epilogue fused: bias, activation and the cast to C's dtype happen on the
// accumulator before its one store. Offsets are 64-bit only where a row offset can pass 2^31.
#include "kernels/Matmul.h"

#include "frontend/DSL.h"
#include "frontend/Kernel.h"
#include "interpreter/Interpreter.h"
#include "kernels/Arguments.h"
#include "runtime/Device.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <string>

namespace tritium::kernels {

using namespace tritium::dsl;

// B_NK: b is [N, K] (read as trans() of its [BN, BK] tile). ACT: 0 none, 1 GELU (tanh), 2 SiLU.
static void matmul_kernel(Ptr c, Ptr a, Ptr b, Ptr bias, Int M, Int N, Int K, Int lda, Int ldb,
                          Int ldc, int BM, int BN, int BK, int GROUP_M, int STAGES, int B_NK,
                          int HAS_BIAS, int ACT) {
  auto pid = program_id(0);
  auto pidsM = cdiv(M, BM), pidsN = cdiv(N, BN);
  auto [pidM, pidN] = swizzle2d(pid / pidsN, pid % pidsN, pidsM, pidsN, GROUP_M);
  auto rm = pidM * BM + arange(0, BM);
  auto rn = pidN * BN + arange(0, BN);
  auto rk = arange(0, BK);
  auto acc = zeros({BM, BN}, float32);
  for (auto k : range(0, cdiv(K, BK), 1, STAGES)) {
    auto kk = k * BK + rk;
    auto x = load(a + rm(_, None) * lda + kk(None, _), (rm(_, None) < M) & (kk(None, _) < K), 0);
    Value y;
    if (B_NK)
      y = trans(load(b + rn(_, None) * ldb + kk(None, _), (rn(_, None) < N) & (kk(None, _) < K),
                     0));
    else
      y = load(b + kk(_, None) * ldb + rn(None, _), (kk(_, None) < K) & (rn(None, _) < N), 0);
    acc = dot(x, y, acc);
  }
  if (HAS_BIAS)
    acc = acc + cast(load(bias + rn, rn < N, 0), float32)(None, _);
  if (ACT == 1) // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
    acc = 0.5 * acc * (1.0 + tanh(0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)));
  else if (ACT == 2)
    acc = acc * sigmoid(acc);
  store(c + rm(_, None) * ldc + rn(None, _), cast(acc, c.dtype()),
        (rm(_, None) < M) & (rn(None, _) < N));
}

static Kernel &matmulKernel() {
  static auto k = kernel("matmul", matmul_kernel,
                         {"c", "a", "b", "bias", "M", "N", "K", "lda", "ldb", "ldc", "BM", "BN",
                          "BK", "GROUP_M", "STAGES", "B_NK", "HAS_BIAS", "ACT"});
  return k;
}

void matmul(const MatmulArgs &m, CUstream stream, const MatmulPlan *given) {
  Arguments args("matmul");
  if (m.in == Dtype::fp32)
    args.fail("in must be fp16 or bf16 (fp32 operands are not taken yet)");
  args.atLeast("M", m.M, 0);
  args.atLeast("N", m.N, 0);
  args.atLeast("K", m.K, 1);
  int64_t lda = m.lda ? m.lda : m.K, ldc = m.ldc ? m.ldc : m.N;
  int64_t ldb = m.ldb ? m.ldb : (m.bTransposed ? m.K : m.N);
  args.rowStride("lda", lda, m.K);
  args.rowStride("ldb", ldb, m.bTransposed ? m.K : m.N);
  args.rowStride("ldc", ldc, m.N);
  KernelArg c = args.pointer("c", m.c), a = args.pointer("a", m.a), b = args.pointer("b", m.b);
  KernelArg bias = m.bias ? args.pointer("bias", m.bias) : c;
  if (m.M == 0 || m.N == 0)
    return;
  if (given)
    for (int side : {given->blockM, given->blockN, given->blockK})
      if (side < 16 || !std::has_single_bit(unsigned(side)))
          args.fail("a plan's tiles are powers of two of at least 16, got " +
                  std::to_string(given->blockM) + " x " + std::to_string(given->blockN) + " x " +
                  std::to_string(given->blockK));
  // 64-bit offsets once a row offset can pass 2^31 - 1.
  int64_t rowsB = m.bTransposed ? m.N : m.K;
  bool wide = std::max({m.M * lda, rowsB * ldb, m.M * ldc}) >
              int64_t(std::numeric_limits<int32_t>::max());
  auto intArg = [&](int64_t v) { return wide ? KernelArg(v) : KernelArg(int32_t(v)); };
  std::string idx = wide ? "i64" : "i32", in = "*" + dtypeName(m.in), out = "*" + dtypeName(m.out);
  bool gpu = !tritium::interpreting();
  const rt::DeviceProps *props = gpu ? &rt::Context::current().props() : nullptr;
  int smCount = props ? props->smCount : 132;
  auto launch = [&](const MatmulPlan &plan) {
    std::initializer_list<KernelArg> launchArgs = {
        c, a, b, bias, intArg(m.M), intArg(m.N), intArg(m.K), intArg(lda), intArg(ldb),
        intArg(ldc)};
    Specialization spec{.signature = {out, in, in, out, idx, idx, idx, idx, idx, idx},
                        .constexprs = {plan.blockM, plan.blockN, plan.blockK, 8, plan.numStages,
                                       m.bTransposed ? 1 : 0, m.bias ? 1 : 0,
                                       int64_t(m.activation)},
                        .numWarps = plan.numWarps,
                        .awaitPreviousKernel = true};
    // Hopper's wgmma needs the architecture-specific target (its code runs on sm_90 only).
    if (props && props->arch() == "sm_90")
      spec.arch = "sm_90a";
    matmulKernel().compile(spec.specializedFor(launchArgs)).launch(plan.grid(m.M, m.N), stream,
                                                                   launchArgs);
  };
  int64_t bytesIn = dtypeBytes(m.in), bytesOut = dtypeBytes(m.out);
  bool rerunSafe = !anyOverlap({{m.c, m.M * ldc * bytesOut}},
                               {{m.a, m.M * lda * bytesIn}, {m.b, rowsB * ldb * bytesIn},
                                {m.bias, m.bias ? m.N * bytesOut : 0}});
  launch(choosePlan<MatmulPlan>(
      given,
      {"matmul",
       {int64_t(m.in), int64_t(m.out), m.bTransposed, m.M, m.N, m.K, lda, ldb, ldc,
        on16ByteBoundaries({m.a, m.b, m.c}) ? 1 : 0},
       rerunSafe},
      [&] { return matmulBucket(m.in, m.out, m.bTransposed, m.M, m.N, m.K); }, stream,
      [&] { return planMatmul(m.M, m.N, m.K, smCount); },
      [&] { return matmulCandidates(m.M, m.N, m.K, smCount); }, launch));
}

} // namespace tritium::kernels
