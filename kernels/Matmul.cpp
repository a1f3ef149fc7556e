// The library's matmul: Triton's tutorial 03 (grouped tile order, a pipelined K loop, masked
// edges) with the epilogue fused: scales, bias, activation, residual and the cast to C's dtype
// happen on the accumulator before its one store. Offsets are 64-bit only where a row offset
// can pass 2^31.
#include "kernels/Matmul.h"

#include "frontend/DSL.h"
#include "frontend/Kernel.h"
#include "interpreter/Interpreter.h"
#include "kernels/Arguments.h"
#include "runtime/Device.h"

#include <algorithm>
#include <array>
#include <bit>
#include <limits>
#include <string>

namespace tritium::kernels {

using namespace tritium::dsl;

namespace {

// The constexpr flags of the kernel below.
enum Flags : int {
  kBNK = 1,        // b is [N, K], read as trans() of its [BN, BK] tile
  kDescriptors = 2, // tiles through tensor descriptors (TMA on Hopper), else pointers
  kBias = 4,
  kResidual = 8,
  kScaleA = 16,
  kScaleB = 32,
  kAlpha = 64,
  kAmax = 128, // amax[0] = max(amax[0], max |C| before out_scale)
  kWarpSpecialize = 256, // with kDescriptors: a producer warp group issues the TMA copies
  kPersistent = 512,     // with kDescriptors: each program walks tiles (one K loop for all)
};

// ACT: 0 none, 1 GELU (tanh), 2 SiLU, 3 SwiGLU (a second product with B's columns N + n: the
// gate's and the up projection's tiles share each A tile). PRECISION: fp32 operands'
// Precision.
// An fp8 C is quantized: the result times out_scale, saturated to the type's largest finite
// value (its bias and residual are bf16).
void matmul_kernel(Ptr c, Ptr a, Ptr b, Ptr bias, Ptr residual, Ptr scale_a, Ptr scale_b,
                   Ptr amax, Float alpha, Float out_scale, Int M, Int N, Int K, Int lda, Int ldb,
                   Int ldc, Int ldr, int BM, int BN, int BK, int GROUP_M, int STAGES, int FLAGS,
                   int ACT, int PRECISION) {
  auto pid = program_id(0);
  auto pidsM = cdiv(M, BM), pidsN = cdiv(N, BN);
  auto [pidM, pidN] = swizzle2d(pid / pidsN, pid % pidsN, pidsM, pidsN, GROUP_M);
  auto rm = pidM * BM + arange(0, BM);
  auto rn = pidN * BN + arange(0, BN);
  bool integer = a.dtype() == "i8";
  DotOptions options{.input_precision = PRECISION == 0 ? "tf32" : PRECISION == 1 ? "tf32x3" : "ieee"};
  bool two = ACT == 3;
  auto acc = zeros({BM, BN}, integer ? int32 : float32);
  auto acc_up = zeros({BM, BN}, float32); // SwiGLU's second product (unused otherwise)
  // The epilogue of the tile of rows rm and columns rn: scales, bias, activation, residual,
  // cast, one store.
  auto epilogue = [&](Value acc, Value acc_up, Value rm, Value rn) {
    auto inM = rm < M, inN = rn < N;
    auto inC = inM(_, None) & inN(None, _);
    if (c.dtype() == "i32") { // int8 products, exact: no epilogue
      store(c + rm(_, None) * ldc + rn(None, _), acc, inC);
      return;
    }
    // The epilogue's inputs of the product of B's columns `cols`.
    auto scaled = [&](Value x, Value cols) {
      Value r = integer ? cast(x, float32) : x;
      if (FLAGS & kAlpha)
        r = r * alpha;
      if (FLAGS & kScaleA)
        r = r * load(scale_a + rm, inM, 0)(_, None);
      if (FLAGS & kScaleB)
        r = r * load(scale_b + cols, inN, 0)(None, _);
      if (FLAGS & kBias)
        r = r + cast(load(bias + cols, inN, 0), float32)(None, _);
      return r;
    };
    Value r = scaled(acc, rn);
    if (ACT == 1) // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
      r = 0.5 * r * (1.0 + tanh(0.7978845608028654 * (r + 0.044715 * r * r * r)));
    else if (ACT == 2)
      r = r * sigmoid(r);
    else if (two) // silu(gate) x up
      r = r * sigmoid(r) * scaled(acc_up, N + rn);
    if (FLAGS & kResidual)
      r = r + cast(load(residual + rm(_, None) * ldr + rn(None, _), inC, 0), float32);
    if (FLAGS & kAmax) // the tile's largest magnitude, one atomic per program
      atomic_max(amax, max(max(where(inC, abs(r), 0.0), 1), 0));
    bool fp8 = c.dtype() == "fp8e4m3" || c.dtype() == "fp8e5m2";
    if (fp8)
      r = r * out_scale;
    store(c + rm(_, None) * ldc + rn(None, _), cast(r, c.dtype()), inC);
  };
  if (FLAGS & kDescriptors) {
    Value columns = N;
    if (two)
      columns = 2 * N;
    auto a_desc = make_tensor_descriptor(a, {M, K}, {lda, 1}, {BM, BK});
    auto b_desc = FLAGS & kBNK ? make_tensor_descriptor(b, {columns, K}, {ldb, 1}, {BN, BK})
                               : make_tensor_descriptor(b, {K, columns}, {ldb, 1}, {BK, BN});
    auto b_tile = [&](Value k, Value n) {
      return FLAGS & kBNK ? trans(b_desc.load({n, k})) : b_desc.load({k, n});
    };
    if (FLAGS & kPersistent) {
      // One loop over this program's tiles' K steps together (tiles pid, pid + programs, ...),
      // so that the ring loads the next tile's first steps while this one's epilogue runs.
      auto steps = cdiv(K, BK), programs = num_programs(0);
      auto mine = cdiv(pidsM * pidsN - pid, programs);
      for (auto it :
           range(0, mine * steps, 1, STAGES).warp_specialize((FLAGS & kWarpSpecialize) != 0)) {
        auto t = pid + it / steps * programs, k = it % steps * BK;
        auto [pm, pn] = swizzle2d(t / pidsN, t % pidsN, pidsM, pidsN, GROUP_M);
        auto x = a_desc.load({pm * BM, k});
        acc = dot(x, b_tile(k, pn * BN), acc, options);
        if (two)
          acc_up = dot(x, b_tile(k, N + pn * BN), acc_up, options);
        if_(k + BK >= K, [&] {
          epilogue(acc, acc_up, pm * BM + arange(0, BM), pn * BN + arange(0, BN));
          acc = zeros({BM, BN}, integer ? int32 : float32);
          if (two)
            acc_up = zeros({BM, BN}, float32);
        });
      }
      return;
    }
    for (auto k : range(0, K, BK, STAGES).warp_specialize((FLAGS & kWarpSpecialize) != 0)) {
      auto y = b_tile(k, pidN * BN);
      auto x = a_desc.load({pidM * BM, k});
      acc = dot(x, y, acc, options);
      if (two)
        acc_up = dot(x, b_tile(k, N + pidN * BN), acc_up, options);
    }
  } else {
    auto rk = arange(0, BK);
    auto b_tile = [&](Value kk, Value cols) {
      if (FLAGS & kBNK)
        return trans(load(b + cols(_, None) * ldb + kk(None, _),
                          (rn(_, None) < N) & (kk(None, _) < K), 0));
      return load(b + kk(_, None) * ldb + cols(None, _), (kk(_, None) < K) & (rn(None, _) < N),
                  0);
    };
    for (auto k : range(0, cdiv(K, BK), 1, STAGES)) {
      auto kk = k * BK + rk;
      auto x = load(a + rm(_, None) * lda + kk(None, _), (rm(_, None) < M) & (kk(None, _) < K), 0);
      acc = dot(x, b_tile(kk, rn), acc, options);
      if (two)
        acc_up = dot(x, b_tile(kk, N + rn), acc_up, options);
    }
  }
  epilogue(acc, acc_up, rm, rn);
}

} // namespace

Kernel &matmulKernel() {
  static auto k = kernel("matmul", matmul_kernel,
                         {"c", "a", "b", "bias", "residual", "scale_a", "scale_b", "amax",
                          "alpha", "out_scale", "M", "N", "K", "lda", "ldb", "ldc", "ldr", "BM",
                          "BN", "BK", "GROUP_M", "STAGES", "FLAGS", "ACT", "PRECISION"});
  return k;
}

namespace {

// The operand and output dtypes the kernel takes, checked together.
void checkDtypes(const Arguments &args, const MatmulArgs &m) {
  auto name = [](Dtype d) { return dtypeName(d); };
  if (m.in == Dtype::int32)
    args.fail("in must be fp16, bf16, fp8e4m3, fp8e5m2, i8 or fp32, got i32");
  if (m.out == Dtype::int32) {
    if (m.in != Dtype::int8)
      args.fail("out is i32, which only i8 operands give (in is " + name(m.in) + ")");
    if (m.bias || m.residual || m.scaleA || m.scaleB || m.alpha != 1 ||
        m.activation != Activation::None || m.amax)
      args.fail("out is i32: the exact int8 product takes no epilogue (bias, residual, scales, "
                "alpha, activation, amax); a float out dequantizes it");
  } else if (!isFloatStorage(m.out) && !isFp8(m.out)) {
    args.fail("out must be fp32, fp16, bf16, fp8e4m3 or fp8e5m2 (or i32 for i8 operands), got " +
              name(m.out));
  }
  if (m.outScale != 1 && !isFp8(m.out))
    args.fail("outScale quantizes an fp8 out only (out is " + name(m.out) + ")");
  if (m.in != Dtype::fp32 && m.precision != Precision::tf32)
    args.fail("precision applies to fp32 operands only (in is " + name(m.in) + ")");
}

} // namespace

namespace {

// What a call's arguments resolve to: dense strides filled in, whether offsets need 64 bits
// and whether TMA can take A and B.
struct MatmulCall {
  int64_t lda, ldb, ldc, ldr, columnsB, rowsB;
  bool wide, descriptorsUsable;
};
MatmulCall resolve(const MatmulArgs &m) {
  MatmulCall r{};
  r.lda = m.lda ? m.lda : m.K;
  r.ldc = m.ldc ? m.ldc : m.N;
  r.ldr = m.ldr ? m.ldr : m.N;
  r.columnsB = m.activation == Activation::SwiGlu ? 2 * m.N : m.N; // SwiGLU: gate and up columns
  r.ldb = m.ldb ? m.ldb : (m.bTransposed ? m.K : r.columnsB);
  r.rowsB = m.bTransposed ? r.columnsB : m.K;
  // 64-bit offsets once a row offset can pass 2^31 - 1.
  r.wide = std::max({m.M * r.lda, r.rowsB * r.ldb, m.M * r.ldc, m.residual ? m.M * r.ldr : 0}) >
           int64_t(std::numeric_limits<int32_t>::max());
  // TMA takes a tensor whose base and row strides lie on 16 bytes; other tensors are read
  // through pointers whatever the plan says.
  int64_t bytesIn = dtypeBytes(m.in);
  r.descriptorsUsable = on16ByteBoundaries({m.a, m.b}) && r.lda * bytesIn % 16 == 0 &&
                        r.ldb * bytesIn % 16 == 0;
  return r;
}

// The kernel's launch arguments (c, a, b, bias, residual, scaleA, scaleB, amax: the pointers),
// handed to f as one list.
template <class F>
auto withLaunchArgs(const MatmulArgs &m, const MatmulCall &call,
                    const std::array<KernelArg, 8> &pointers, F f) {
  auto intArg = [&](int64_t v) { return call.wide ? KernelArg(v) : KernelArg(int32_t(v)); };
  const auto &[c, a, b, bias, residual, scaleA, scaleB, amax] = pointers;
  return f({c, a, b, bias, residual, scaleA, scaleB, amax, m.alpha, m.outScale, intArg(m.M),
            intArg(m.N), intArg(m.K), intArg(call.lda), intArg(call.ldb), intArg(call.ldc),
            intArg(call.ldr)});
}

int matmulFlags(const MatmulArgs &m, const MatmulCall &call, const MatmulPlan &plan) {
  bool tma = plan.descriptors && call.descriptorsUsable;
  return (m.bTransposed ? kBNK : 0) | (tma ? kDescriptors : 0) |
         (plan.warpSpecialize && tma ? kWarpSpecialize : 0) |
         (plan.persistent && tma ? kPersistent : 0) | (m.bias ? kBias : 0) |
         (m.residual ? kResidual : 0) | (m.scaleA ? kScaleA : 0) | (m.scaleB ? kScaleB : 0) |
         (m.alpha != 1 ? kAlpha : 0) | (m.amax ? kAmax : 0);
}

// `flags`: matmulFlags(m, call, plan).
Specialization baseSpecialization(const MatmulArgs &m, const MatmulCall &call,
                                  const MatmulPlan &plan, int flags, const std::string &arch) {
  std::string idx = call.wide ? "i64" : "i32", in = "*" + dtypeName(m.in),
              out = "*" + dtypeName(m.out);
  // An fp8 C's bias and residual are bf16.
  std::string extra = "*" + dtypeName(isFp8(m.out) ? Dtype::bf16 : m.out);
  Specialization spec{
      .signature = {out, in, in, extra, extra, "*fp32", "*fp32", "*fp32", "fp32", "fp32", idx,
                    idx, idx, idx, idx, idx, idx},
      .constexprs = {plan.blockM, plan.blockN, plan.blockK, 8, plan.numStages,
                     flags, int64_t(m.activation), int64_t(m.precision)},
      .numWarps = plan.numWarps,
      .awaitPreviousKernel = true};
  if (!arch.empty())
    spec.arch = arch;
  if (isFp8(m.in))
    spec.ptxVersion = 84; // fp8 on mma.sync (Ada), where wgmma does not take the tiles
  return spec;
}

KernelArg pointerArg(const void *p) { return KernelArg::pointer(reinterpret_cast<uintptr_t>(p)); }

// The programs a launch with `flags` starts: a program per tile, or, persistent, one per SM
// (the plans' tiles fill one) each walking its tiles.
int64_t programs(const MatmulArgs &m, const MatmulPlan &plan, int flags, int smCount) {
  int64_t tiles = plan.tiles(m.M, m.N);
  return flags & kPersistent ? std::min<int64_t>(tiles, smCount) : tiles;
}

} // namespace

Specialization matmulSpecialization(const MatmulArgs &m, const MatmulPlan &plan,
                                    const std::string &arch) {
  MatmulCall call = resolve(m);
  KernelArg c = pointerArg(m.c);
  auto orC = [&](const void *p) { return p ? pointerArg(p) : c; };
  return withLaunchArgs(m, call,
                        {c, pointerArg(m.a), pointerArg(m.b), orC(m.bias), orC(m.residual),
                         orC(m.scaleA), orC(m.scaleB), orC(m.amax)},
                        [&](std::initializer_list<KernelArg> args) {
                          return baseSpecialization(m, call, plan, matmulFlags(m, call, plan), arch)
                              .specializedFor(args);
                        });
}

int64_t matmulGrid(const MatmulArgs &m, const MatmulPlan &plan, int smCount) {
  return programs(m, plan, matmulFlags(m, resolve(m), plan), smCount);
}

void matmul(const MatmulArgs &m, CUstream stream, const MatmulPlan *given) {
  Arguments args("matmul");
  checkDtypes(args, m);
  args.atLeast("M", m.M, 0);
  args.atLeast("N", m.N, 0);
  args.atLeast("K", m.K, 1);
  MatmulCall call = resolve(m);
  bool swiglu = m.activation == Activation::SwiGlu;
  args.rowStride("lda", call.lda, m.K);
  args.rowStride("ldb", call.ldb, m.bTransposed ? m.K : call.columnsB);
  args.rowStride("ldc", call.ldc, m.N);
  if (m.residual)
    args.rowStride("ldr", call.ldr, m.N);
  KernelArg c = args.pointer("c", m.c), a = args.pointer("a", m.a), b = args.pointer("b", m.b);
  // Absent tensors are never read (their flags are off): any valid pointer stands in.
  KernelArg bias = m.bias ? args.pointer("bias", m.bias) : c;
  KernelArg residual = m.residual ? args.pointer("residual", m.residual) : c;
  KernelArg scaleA = m.scaleA ? args.pointer("scaleA", m.scaleA) : c;
  KernelArg scaleB = m.scaleB ? args.pointer("scaleB", m.scaleB) : c;
  KernelArg amax = m.amax ? args.pointer("amax", m.amax) : c;
  if (m.M == 0 || m.N == 0)
    return;
  if (given)
    for (int side : {given->blockM, given->blockN, given->blockK})
      if (side < 16 || !std::has_single_bit(unsigned(side)))
        args.fail("a plan's tiles are powers of two of at least 16, got " +
                  std::to_string(given->blockM) + " x " + std::to_string(given->blockN) + " x " +
                  std::to_string(given->blockK));
  int64_t bytesIn = dtypeBytes(m.in), bytesOut = dtypeBytes(m.out),
          bytesExtra = dtypeBytes(isFp8(m.out) ? Dtype::bf16 : m.out);
  MatmulTypes types{.in = m.in, .exactFp32 = m.in == Dtype::fp32 && m.precision != Precision::tf32,
                    .twoProducts = swiglu};
  bool gpu = !tritium::interpreting();
  const rt::DeviceProps *props = gpu ? &rt::Context::current().props() : nullptr;
  int smCount = props ? props->smCount : 132;
  // Hopper's wgmma needs the architecture-specific target (its code runs on sm_90 only).
  std::string arch = props && props->arch() == "sm_90" ? "sm_90a" : "";
  auto launch = [&](const MatmulPlan &plan) {
    withLaunchArgs(m, call, {c, a, b, bias, residual, scaleA, scaleB, amax},
                   [&](std::initializer_list<KernelArg> launchArgs) {
                     int flags = matmulFlags(m, call, plan);
                     matmulKernel()
                         .compile(baseSpecialization(m, call, plan, flags, arch)
                                      .specializedFor(launchArgs))
                         .launch(programs(m, plan, flags, smCount), stream, launchArgs);
                   });
  };
  bool rerunSafe =
      !anyOverlap({{m.c, m.M * call.ldc * bytesOut}},
                  {{m.a, m.M * call.lda * bytesIn}, {m.b, call.rowsB * call.ldb * bytesIn},
                   {m.bias, m.bias ? call.columnsB * bytesExtra : 0},
                   {m.residual, m.residual ? m.M * call.ldr * bytesExtra : 0},
                   {m.amax, m.amax ? 4 : 0},
                   {m.scaleA, m.scaleA ? m.M * 4 : 0},
                   {m.scaleB, m.scaleB ? call.columnsB * 4 : 0}});
  launch(choosePlan<MatmulPlan>(
      given,
      {"matmul",
       {int64_t(m.in), int64_t(m.out), m.bTransposed, m.M, m.N, m.K, call.lda, call.ldb,
        call.ldc, on16ByteBoundaries({m.a, m.b, m.c}) ? 1 : 0, call.descriptorsUsable ? 1 : 0,
        int64_t(m.precision), swiglu ? 1 : 0},
       rerunSafe},
      [&] {
        return matmulBucket(m.in, m.out, m.bTransposed, m.M, m.N, m.K) +
               (call.descriptorsUsable ? "" : "-pointers") +
               (m.in == Dtype::fp32 ? "-" + std::to_string(int(m.precision)) : "") +
               (swiglu ? "-swiglu" : "");
      },
      stream, [&] { return planMatmul(m.M, m.N, m.K, smCount, types); },
      [&] { return matmulCandidates(m.M, m.N, m.K, smCount, types, call.descriptorsUsable); },
      launch));
}

} // namespace tritium::kernels
