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
#include "runtime/Driver.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

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
  kPersistent = 512,     // with kDescriptors: each program walks tiles, a K loop each
  kTmaStore = 1024,      // C's tile through a tensor descriptor (a TMA store on Hopper)
  kStreamK = 2048,       // with kPersistent: the programs share the tiles' K steps evenly
  // With kWarpSpecialize: clusters of two programs on neighbouring row tiles of one column of
  // tiles, B's tile multicast to both (each program's TMA reads half of it).
  kMulticastB = 4096,
  // With kPersistent and kWarpSpecialize: two compute warp groups take alternate tiles.
  kPingPong = 8192,
};

// What the epilogue reads besides the accumulators: C and the tensors of FLAGS, and ACT (0 none,
// 1 GELU (tanh), 2 SiLU, 3 SwiGLU).
struct Epilogue {
  Ptr c, bias, residual, scale_a, scale_b, amax;
  Float alpha, out_scale;
  Int M, N, ldc, ldr;
  int FLAGS, ACT;
};

// The BM x BN tile of C at rows m0 + rm and columns n0 + rn: with kTmaStore through a
// tensor descriptor (one TMA store where the compiler can take C's base and ldc; element
// stores otherwise), else through pointers.
struct CTile {
  Value m0, n0, rm, rn;
  int BM, BN;
};
void storeC(const Epilogue &e, const CTile &t, Value value, Value inC) {
  if (e.FLAGS & kTmaStore)
    make_tensor_descriptor(e.c, {e.M, e.N}, {e.ldc, 1}, {t.BM, t.BN}).store({t.m0, t.n0}, value);
  else
    store(e.c + t.rm(_, None) * e.ldc + t.rn(None, _), value, inC);
}

// The epilogue of the tile `t`: scales, bias, activation, residual, cast, one store. acc is
// int32 for int8 operands (`integer`); acc_up is SwiGLU's second product (the up
// projection's columns N + rn).
void epilogue(const Epilogue &e, bool integer, Value acc, Value acc_up, const CTile &t) {
  Value rm = t.rm, rn = t.rn;
  auto inM = rm < e.M, inN = rn < e.N;
  auto inC = inM(_, None) & inN(None, _);
  if (e.c.dtype() == "i32") { // int8 products, exact: no epilogue
    storeC(e, t, acc, inC);
    return;
  }
  // The epilogue's inputs of the product of B's columns `cols`.
  auto scaled = [&](Value x, Value cols) {
    Value r = integer ? cast(x, float32) : x;
    if (e.FLAGS & kAlpha)
      r = r * e.alpha;
    if (e.FLAGS & kScaleA)
      r = r * load(e.scale_a + rm, inM, 0)(_, None);
    if (e.FLAGS & kScaleB)
      r = r * load(e.scale_b + cols, inN, 0)(None, _);
    if (e.FLAGS & kBias)
      r = r + cast(load(e.bias + cols, inN, 0), float32)(None, _);
    return r;
  };
  Value r = scaled(acc, rn);
  if (e.ACT == 1) // 0.5 x (1 + tanh(u)), u = sqrt(2 / pi) (x + 0.044715 x^3), as x sigmoid(2u):
    // the same function in an exp2 and a division, where libdevice's tanh is a longer
    // subroutine (+4.6% at 8192 x 8192 x 4096 on the H200), and no cancellation in 1 +
    // tanh(u) for negative x.
    r = r * sigmoid(1.5957691216057308 * (r + 0.044715 * r * r * r));
  else if (e.ACT == 2)
    r = r * sigmoid(r);
  else if (e.ACT == 3) // silu(gate) x up
    r = r * sigmoid(r) * scaled(acc_up, e.N + rn);
  if (e.FLAGS & kResidual)
    r = r + cast(load(e.residual + rm(_, None) * e.ldr + rn(None, _), inC, 0), float32);
  if (e.FLAGS & kAmax) // the tile's largest magnitude, one atomic per tile; relaxed: it
    // publishes nothing else, so it need not wait for C's TMA store
    atomic_max(e.amax, max(max(where(inC, abs(r), 0.0), 1), 0), t.m0 < e.M, "relaxed");
  bool fp8 = e.c.dtype() == "fp8e4m3" || e.c.dtype() == "fp8e5m2";
  if (fp8)
    r = r * e.out_scale;
  storeC(e, t, cast(r, e.c.dtype()), inC);
}

// ACT: as Epilogue's. PRECISION: fp32 operands' Precision.
// An fp8 C is quantized: the result times out_scale, saturated to the type's largest finite
// value (its bias and residual are bf16).
// SPLIT_K > 1: SPLIT_K programs per tile, program pid summing slice pid / tiles of the K steps;
// each writes its partial product to `partial` ([SPLIT_K, M, N] of the accumulator's dtype;
// SwiGLU's [SPLIT_K, M, 2N]) instead of running the epilogue, which matmul_split_k_sum runs.
void matmul_kernel(Ptr c, Ptr a, Ptr b, Ptr bias, Ptr residual, Ptr scale_a, Ptr scale_b,
                   Ptr amax, Ptr partial, Float alpha, Float out_scale, Int M, Int N, Int K,
                   Int lda, Int ldb, Int ldc, Int ldr, int BM, int BN, int BK, int GROUP_M,
                   int STAGES, int FLAGS, int ACT, int PRECISION, int SPLIT_K, int IMPRECISE) {
  auto pid = program_id(0);
  auto pidsM = cdiv(M, BM), pidsN = cdiv(N, BN);
  Value tile = pid, slice;
  if (SPLIT_K > 1) {
    tile = pid % (pidsM * pidsN);
    slice = pid / (pidsM * pidsN);
  }
  // With kMulticastB a cluster's C programs take C neighbouring row tiles of one column (a
  // "group" of tiles, in grouped order, stands for C row tiles; the last group's rows past M
  // compute zeros and store nothing), so that all of them read the same B tiles.
  int C = FLAGS & kMulticastB ? 2 : 1;
  Value groupsM = C == 1 ? pidsM : cdiv(pidsM, C);
  auto tileOfGroup = [&](Value group) -> std::pair<Value, Value> {
    auto [gm, gn] = swizzle2d(group / pidsN, group % pidsN, groupsM, pidsN, GROUP_M);
    if (C == 1)
      return {gm, gn};
    return {gm * C + cluster_rank(), gn};
  };
  auto [pidM, pidN] = tileOfGroup(C == 1 ? tile : pid / C);
  auto rm = pidM * BM + arange(0, BM);
  auto rn = pidN * BN + arange(0, BN);
  bool integer = a.dtype() == "i8";
  // IMPRECISE: fp8 partial sums added into fp32 every IMPRECISE of K, at most every K tile.
  DotOptions options{.input_precision = PRECISION == 0 ? "tf32" : PRECISION == 1 ? "tf32x3" : "ieee",
                     .max_num_imprecise_acc = std::min(IMPRECISE, BK) / 32 * 32};
  bool two = ACT == 3;
  auto acc = zeros({BM, BN}, integer ? int32 : float32);
  auto acc_up = zeros({BM, BN}, float32); // SwiGLU's second product (unused otherwise)
  Epilogue e{c, bias, residual, scale_a, scale_b, amax, alpha, out_scale, M, N, ldc, ldr,
             FLAGS, ACT};
  // This program's K steps: all, or its slice's (the last slices may hold fewer, or none).
  auto steps = cdiv(K, BK);
  Value firstStep = steps, endStep = steps;
  if (SPLIT_K > 1) {
    auto per = cdiv(steps, SPLIT_K);
    firstStep = minimum(slice * per, steps);
    endStep = minimum(firstStep + per, steps);
  }
  if (FLAGS & kDescriptors) {
    Value columns = N;
    if (two)
      columns = 2 * N;
    auto a_desc = make_tensor_descriptor(a, {M, K}, {lda, 1}, {BM, BK});
    auto b_desc = FLAGS & kBNK ? make_tensor_descriptor(b, {columns, K}, {ldb, 1}, {BN, BK})
                               : make_tensor_descriptor(b, {K, columns}, {ldb, 1}, {BK, BN});
    auto b_tile = [&](Value k, Value n) {
      if (FLAGS & kMulticastB)
        return FLAGS & kBNK ? trans(b_desc.load({n, k}, multicast)) : b_desc.load({k, n}, multicast);
      return FLAGS & kBNK ? trans(b_desc.load({n, k})) : b_desc.load({k, n});
    };
    // The product of tile (pm, pn) over K from kStart to kEnd, into tacc (and tacc_up).
    auto tileProduct = [&](Value pm, Value pn, const Operand &kStart, const Operand &kEnd,
                           Value &tacc, Value &tacc_up) {
      for (auto k : range(kStart, kEnd, BK, STAGES)
                        .warp_specialize((FLAGS & kWarpSpecialize) != 0)) {
        auto x = a_desc.load({pm * BM, k});
        tacc = dot(x, b_tile(k, pn * BN), tacc, options);
        if (two)
          tacc_up = dot(x, b_tile(k, N + pn * BN), tacc_up, options);
      }
    };
    auto tileOf = [&](Value pm, Value pn) {
      return CTile{pm * BM, pn * BN, pm * BM + arange(0, BM), pn * BN + arange(0, BN), BM, BN};
    };
    if (FLAGS & kStreamK) {
      // Stream-K, data-parallel first: each program (one per SM) takes whole tiles pid, pid +
      // programs, ... of all waves but the last one or two, as the persistent plan does (the
      // tiles in flight together are neighbours, sharing A's and B's panels in L2); the tiles
      // from `skFirst` on share their K steps evenly: program pid takes steps [lo, hi) of their
      // sequence, so no SM idles in a last, partly filled wave. A tile split between programs
      // is finished by the program holding its last step, which adds the others' partial
      // products (in `partial`, a [BM, BN] slot a program, then a flag each that the call
      // zeroes) in program order and runs the epilogue. Each program walks its shared tiles
      // last first: the partial it leaves is its first piece, published at once, and the tile
      // it finishes is its last, waiting only on programs below it, which published first (so
      // the interpreter, running programs in order, never waits either). Spreading every
      // tile's steps over the programs instead ran at 348 against 646 TFLOP/s at 4096^3 on an
      // H200 (the tiles in flight span the whole of C, each reading its panels from DRAM).
      auto programs = num_programs(0);
      auto steps = cdiv(K, BK);
      auto tiles = pidsM * pidsN;
      auto ownTiles = maximum(tiles / programs - 1, 0); // each program's whole tiles
      auto skFirst = ownTiles * programs;               // the shared tiles' first
      auto total = (tiles - skFirst) * steps;
      auto per = cdiv(total, programs);
      auto lo = minimum(pid * per, total), hi = minimum(lo + per, total);
      auto firstTile = lo / steps, endTile = cdiv(hi, steps);
      int columns = two ? 2 * BN : BN;
      auto within = arange(0, BM)(_, None) * columns + arange(0, BN)(None, _);
      auto flags = partial + programs * BM * columns;
      Value one = integer ? cast(1, int32) : cast(1.0, float32);
      Value none = integer ? cast(0, int32) : cast(0.0, float32);
      for (auto i : range(0, ownTiles + endTile - firstTile)) {
        auto own = i < ownTiles;
        auto shared = endTile - 1 - (i - ownTiles); // of the shared tiles, last first
        auto t = where(own, pid + i * programs, skFirst + shared);
        auto tileLo = shared * steps;
        auto kLo = where(own, 0, maximum(lo, tileLo) - tileLo);
        auto kHi = where(own, steps, minimum(hi, tileLo + steps) - tileLo);
        // The programs whose partials this one adds (none for its own tiles).
        auto firstPartial = where(own, pid, tileLo / per);
        auto [pm, pn] = swizzle2d(t / pidsN, t % pidsN, pidsM, pidsN, GROUP_M);
        auto tacc = zeros({BM, BN}, integer ? int32 : float32);
        auto tacc_up = zeros({BM, BN}, float32);
        tileProduct(pm, pn, kLo * BK, kHi * BK, tacc, tacc_up);
        if_(
            kHi < steps,
            [&] { // a partial product for the program that ends the tile
              auto slot = partial + pid * BM * columns + within;
              store(slot, tacc);
              if (two)
                store(slot + BN, tacc_up);
              debug_barrier(); // every thread's stores before the flag's release
              atomic_xchg(flags + pid, one);
            },
            [&] { // the tile's last step: add the partials of the programs before this one
              // (summed apart, in the loads' layout, so that tacc keeps the accumulator's
              // and the epilogue stages C by stmatrix: converting tacc for the sum on every
              // tile cost the walk 15-20% at 4096^3 on an H200)
              if_(firstPartial < pid, [&] {
                auto others = zeros({BM, BN}, integer ? int32 : float32);
                auto others_up = zeros({BM, BN}, float32);
                for (auto q : range(firstPartial, pid)) {
                  while_([&] { return atomic_cas(flags + q, one, none) != one; }, [] {});
                  auto slot = partial + q * BM * columns + within;
                  others = others + load(slot);
                  if (two)
                    others_up = others_up + load(slot + BN);
                }
                tacc = tacc + others;
                if (two)
                  tacc_up = tacc_up + others_up;
              });
              epilogue(e, integer, tacc, tacc_up, tileOf(pm, pn));
            });
      }
      return;
    }
    if (FLAGS & kPersistent) {
      // One program per SM walks tiles pid, pid + programs, ...; each tile's K loop as the
      // per-tile kernel's. With a producer warp group the warps split before the walk, and the
      // producer fills the ring with the next tile's first steps while this tile's epilogue runs.
      Value first = C == 1 ? pid : pid / C, stride = C == 1 ? num_programs(0) : num_programs(0) / C;
      for (auto t : range(first, groupsM * pidsN, stride).ping_pong((FLAGS & kPingPong) != 0)) {
        auto [pm, pn] = tileOfGroup(t);
        auto tacc = zeros({BM, BN}, integer ? int32 : float32);
        auto tacc_up = zeros({BM, BN}, float32);
        tileProduct(pm, pn, 0, K, tacc, tacc_up);
        epilogue(e, integer, tacc, tacc_up, tileOf(pm, pn));
      }
      return;
    }
    auto kRange = SPLIT_K > 1 ? range(firstStep * BK, endStep * BK, BK, STAGES)
                              : range(0, K, BK, STAGES);
    for (auto k : std::move(kRange).warp_specialize((FLAGS & kWarpSpecialize) != 0)) {
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
    auto kRange = SPLIT_K > 1 ? range(firstStep, endStep, 1, STAGES) : range(0, steps, 1, STAGES);
    for (auto k : kRange) {
      auto kk = k * BK + rk;
      auto x = load(a + rm(_, None) * lda + kk(None, _), (rm(_, None) < M) & (kk(None, _) < K), 0);
      acc = dot(x, b_tile(kk, rn), acc, options);
      if (two)
        acc_up = dot(x, b_tile(kk, N + rn), acc_up, options);
    }
  }
  if (SPLIT_K > 1) { // the slice's partial product, for matmul_split_k_sum
    Value columns = N;
    if (two)
      columns = 2 * N;
    auto inC = (rm < M)(_, None) & (rn < N)(None, _);
    auto rows = partial + slice * M * columns + rm(_, None) * columns;
    store(rows + rn(None, _), acc, inC);
    if (two)
      store(rows + N + rn(None, _), acc_up, inC);
    return;
  }
  epilogue(e, integer, acc, acc_up, {pidM * BM, pidN * BN, rm, rn, BM, BN});
}

// The sum of a split-K product's SPLIT_K partial products (`partial`, as matmul_kernel writes
// them), slice by slice in order, and the epilogue on it: BM x BN elements of C a program.
void matmul_split_k_sum(Ptr c, Ptr partial, Ptr bias, Ptr residual, Ptr scale_a, Ptr scale_b,
                        Ptr amax, Float alpha, Float out_scale, Int M, Int N, Int ldc, Int ldr,
                        int BM, int BN, int SPLIT_K, int FLAGS, int ACT) {
  auto pid = program_id(0);
  auto pidsN = cdiv(N, BN);
  auto rm = pid / pidsN * BM + arange(0, BM);
  auto rn = pid % pidsN * BN + arange(0, BN);
  bool two = ACT == 3;
  Value columns = N;
  if (two)
    columns = 2 * N;
  auto inC = (rm < M)(_, None) & (rn < N)(None, _);
  bool integer = partial.dtype() == "i32";
  auto acc = zeros({BM, BN}, integer ? int32 : float32);
  auto acc_up = zeros({BM, BN}, float32);
  for (int s = 0; s < SPLIT_K; ++s) {
    auto rows = partial + s * M * columns + rm(_, None) * columns;
    acc = acc + load(rows + rn(None, _), inC, 0);
    if (two)
      acc_up = acc_up + load(rows + N + rn(None, _), inC, 0);
  }
  epilogue({c, bias, residual, scale_a, scale_b, amax, alpha, out_scale, M, N, ldc, ldr, FLAGS,
            ACT},
           integer, acc, acc_up, {pid / pidsN * BM, pid % pidsN * BN, rm, rn, BM, BN});
}

} // namespace

Kernel &matmulKernel() {
  static auto k = kernel("matmul", matmul_kernel,
                         {"c", "a", "b", "bias", "residual", "scale_a", "scale_b", "amax",
                          "partial", "alpha", "out_scale", "M", "N", "K", "lda", "ldb", "ldc",
                          "ldr", "BM", "BN", "BK", "GROUP_M", "STAGES", "FLAGS", "ACT",
                          "PRECISION", "SPLIT_K", "IMPRECISE"});
  return k;
}

Kernel &matmulSplitKSumKernel() {
  static auto k = kernel("matmul_split_k_sum", matmul_split_k_sum,
                         {"c", "partial", "bias", "residual", "scale_a", "scale_b", "amax",
                          "alpha", "out_scale", "M", "N", "ldc", "ldr", "BM", "BN", "SPLIT_K",
                          "FLAGS", "ACT"});
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
  if (m.maxImpreciseAcc != 0 && !isFp8(m.in))
    args.fail("maxImpreciseAcc applies to fp8 operands only (in is " + name(m.in) + ")");
  if (m.maxImpreciseAcc < 0 || m.maxImpreciseAcc % 32 != 0)
    args.fail("maxImpreciseAcc must be 0 or a positive multiple of 32, got " +
              std::to_string(m.maxImpreciseAcc));
}

} // namespace

namespace {

// What a call's arguments resolve to: dense strides filled in, whether offsets need 64 bits
// and whether TMA can take A and B.
struct MatmulCall {
  int64_t lda, ldb, ldc, ldr, columnsB, rowsB;
  bool wide, descriptorsUsable;
};
MatmulCall resolve(const MatmulArgs &m, int splitK = 1) {
  MatmulCall r{};
  r.lda = m.lda ? m.lda : m.K;
  r.ldc = m.ldc ? m.ldc : m.N;
  r.ldr = m.ldr ? m.ldr : m.N;
  r.columnsB = m.activation == Activation::SwiGlu ? 2 * m.N : m.N; // SwiGLU: gate and up columns
  r.ldb = m.ldb ? m.ldb : (m.bTransposed ? m.K : r.columnsB);
  r.rowsB = m.bTransposed ? r.columnsB : m.K;
  // 64-bit offsets once a row offset can pass 2^31 - 1.
  r.wide = std::max({m.M * r.lda, r.rowsB * r.ldb, m.M * r.ldc, m.residual ? m.M * r.ldr : 0,
                     splitK > 1 ? splitK * m.M * r.columnsB : 0}) >
           int64_t(std::numeric_limits<int32_t>::max());
  // TMA takes a tensor whose base and row strides lie on 16 bytes; other tensors are read
  // through pointers whatever the plan says.
  int64_t bytesIn = dtypeBytes(m.in);
  r.descriptorsUsable = on16ByteBoundaries({m.a, m.b}) && r.lda * bytesIn % 16 == 0 &&
                        r.ldb * bytesIn % 16 == 0;
  return r;
}

// The kernel's launch arguments (c, a, b, bias, residual, scaleA, scaleB, amax, partial: the
// pointers), handed to f as one list.
template <class F>
auto withLaunchArgs(const MatmulArgs &m, const MatmulCall &call,
                    const std::array<KernelArg, 9> &pointers, F f) {
  auto intArg = [&](int64_t v) { return call.wide ? KernelArg(v) : KernelArg(int32_t(v)); };
  const auto &[c, a, b, bias, residual, scaleA, scaleB, amax, partial] = pointers;
  return f({c, a, b, bias, residual, scaleA, scaleB, amax, partial, m.alpha, m.outScale,
            intArg(m.M), intArg(m.N), intArg(m.K), intArg(call.lda), intArg(call.ldb),
            intArg(call.ldc), intArg(call.ldr)});
}

// The split-K sum's launch arguments, as f's list.
template <class F>
auto withSumArgs(const MatmulArgs &m, const MatmulCall &call,
                 const std::array<KernelArg, 9> &pointers, F f) {
  auto intArg = [&](int64_t v) { return call.wide ? KernelArg(v) : KernelArg(int32_t(v)); };
  const auto &[c, a, b, bias, residual, scaleA, scaleB, amax, partial] = pointers;
  return f({c, partial, bias, residual, scaleA, scaleB, amax, m.alpha, m.outScale, intArg(m.M),
            intArg(m.N), intArg(call.ldc), intArg(call.ldr)});
}

// The split-K sum's tiles: 32 x 128 elements of C on 4 warps.
constexpr int kSumRows = 32, kSumColumns = 128;

// The partial products' element: int32 for int8 operands, else fp32.
std::string partialType(const MatmulArgs &m) { return m.in == Dtype::int8 ? "*i32" : "*fp32"; }

int matmulFlags(const MatmulArgs &m, const MatmulCall &call, const MatmulPlan &plan) {
  bool tma = plan.descriptors && call.descriptorsUsable;
  return (m.bTransposed ? kBNK : 0) | (tma ? kDescriptors : 0) |
         (plan.warpSpecialize && tma ? kWarpSpecialize : 0) |
         (plan.persistent && tma ? kPersistent : 0) | (plan.tmaStore && tma ? kTmaStore : 0) |
         (plan.streamK && plan.persistent && tma ? kStreamK : 0) |
         (plan.cluster > 1 && plan.warpSpecialize && tma ? kMulticastB : 0) |
         (plan.pingPong && plan.persistent && plan.warpSpecialize && tma ? kPingPong : 0) |
         (m.bias ? kBias : 0) |
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
      .signature = {out, in, in, extra, extra, "*fp32", "*fp32", "*fp32", partialType(m), "fp32",
                    "fp32", idx, idx, idx, idx, idx, idx, idx},
      .constexprs = {plan.blockM, plan.blockN, plan.blockK, 8, plan.numStages,
                     flags, int64_t(m.activation), int64_t(m.precision), plan.splitK,
                     m.maxImpreciseAcc},
      .numWarps = plan.numWarps,
      .awaitPreviousKernel = true};
  if (flags & kMulticastB)
    spec.clusterSize = 2;
  if (!arch.empty())
    spec.arch = arch;
  if (isFp8(m.in))
    spec.ptxVersion = 84; // fp8 on mma.sync (Ada), where wgmma does not take the tiles
  return spec;
}

// The split-K sum's specialization: only the epilogue's flags.
Specialization sumSpecialization(const MatmulArgs &m, const MatmulCall &call,
                                 const MatmulPlan &plan, int flags, const std::string &arch) {
  std::string idx = call.wide ? "i64" : "i32", out = "*" + dtypeName(m.out);
  std::string extra = "*" + dtypeName(isFp8(m.out) ? Dtype::bf16 : m.out);
  int epilogueFlags = flags & (kBias | kResidual | kScaleA | kScaleB | kAlpha | kAmax);
  Specialization spec{
      .signature = {out, partialType(m), extra, extra, "*fp32", "*fp32", "*fp32", "fp32", "fp32",
                    idx, idx, idx, idx},
      .constexprs = {kSumRows, kSumColumns, plan.splitK, epilogueFlags, int64_t(m.activation)},
      .numWarps = 4,
      .awaitPreviousKernel = true};
  if (!arch.empty())
    spec.arch = arch;
  return spec;
}

KernelArg pointerArg(const void *p) { return KernelArg::pointer(reinterpret_cast<uintptr_t>(p)); }

// The programs a launch with `flags` starts: a program per tile, or, persistent, one per SM
// (the plans' tiles fill one) each walking its tiles; stream-K, one per SM (or per K step,
// where there are fewer) sharing the steps.
int64_t programs(const MatmulArgs &m, const MatmulPlan &plan, int flags, int smCount) {
  int64_t tiles = plan.tiles(m.M, m.N);
  if (flags & kStreamK)
    return std::min<int64_t>(tiles * ((m.K + plan.blockK - 1) / plan.blockK), smCount);
  if (flags & kMulticastB) { // pairs of row tiles; persistent, a pair per two SMs (at most)
    int64_t pairs = (m.M + 2 * plan.blockM - 1) / (2 * plan.blockM) *
                    ((m.N + plan.blockN - 1) / plan.blockN);
    return 2 * (flags & kPersistent ? std::min<int64_t>(pairs, smCount / 2) : pairs);
  }
  if (flags & kPingPong) // two tiles at a time a program
    return std::min<int64_t>((tiles + 1) / 2, smCount);
  return flags & kPersistent ? std::min<int64_t>(tiles, smCount) : tiles * plan.splitK;
}

// The workspace that `plan` needs for a call's shape: split K `splitK` ways, every slice's
// partial product of C (SwiGLU's two); stream-K, a [BM, BN] slot (two for SwiGLU) and a flag
// per program. Elements of 4 bytes (fp32, or int32 for int8 operands).
int64_t workspaceNeed(const MatmulArgs &m, const MatmulPlan &plan, int smCount) {
  int64_t products = m.activation == Activation::SwiGlu ? 2 : 1;
  if (plan.splitK > 1)
    return plan.splitK * m.M * products * m.N * 4;
  if (plan.streamK && plan.persistent) {
    int64_t p = programs(m, plan, kStreamK, smCount);
    return p * (products * plan.blockM * plan.blockN + 1) * 4;
  }
  return 0;
}

// What a plan depends on in a call besides its shape.
MatmulTypes matmulTypes(const MatmulArgs &m, bool canSplitK) {
  return {.in = m.in, .exactFp32 = m.in == Dtype::fp32 && m.precision != Precision::tf32,
          .twoProducts = m.activation == Activation::SwiGlu, .canSplitK = canSplitK,
          .outBytes = int64_t(dtypeBytes(m.out))};
}

// The SMs that plans fill: the current device's; 132 (an H100's or H200's) in the interpreter
// or without a GPU.
int planningSmCount() {
  if (tritium::interpreting() || !rt::Driver::available())
    return 132;
  return rt::Context::current().props().smCount;
}

} // namespace

int64_t matmulWorkspaceBytes(const MatmulArgs &m) {
  if (m.M <= 0 || m.N <= 0 || m.K <= 0)
    return 0;
  int sms = planningSmCount();
  int64_t most = 0;
  for (const MatmulPlan &p : possibleMatmulPlans(m.M, m.N, m.K, sms, matmulTypes(m, true)))
    most = std::max(most, workspaceNeed(m, p, sms));
  return most;
}

int64_t matmulWorkspaceBytes(const MatmulArgs &m, const MatmulPlan &plan) {
  return m.M > 0 && m.N > 0 ? workspaceNeed(m, plan, planningSmCount()) : 0;
}

Specialization matmulSpecialization(const MatmulArgs &m, const MatmulPlan &plan,
                                    const std::string &arch) {
  MatmulCall call = resolve(m, plan.splitK);
  KernelArg c = pointerArg(m.c);
  auto orC = [&](const void *p) { return p ? pointerArg(p) : c; };
  return withLaunchArgs(m, call,
                        {c, pointerArg(m.a), pointerArg(m.b), orC(m.bias), orC(m.residual),
                         orC(m.scaleA), orC(m.scaleB), orC(m.amax), orC(m.workspace)},
                        [&](std::initializer_list<KernelArg> args) {
                          return baseSpecialization(m, call, plan, matmulFlags(m, call, plan), arch)
                              .specializedFor(args);
                        });
}

int64_t matmulGrid(const MatmulArgs &m, const MatmulPlan &plan, int smCount) {
  return programs(m, plan, matmulFlags(m, resolve(m, plan.splitK), plan), smCount);
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
  KernelArg workspace = m.workspace ? args.pointer("workspace", m.workspace) : c;
  args.atLeast("workspaceBytes", m.workspaceBytes, 0);
  if (m.M == 0 || m.N == 0)
    return;
  if (given) {
    for (int side : {given->blockM, given->blockN, given->blockK})
      if (side < 16 || !std::has_single_bit(unsigned(side)))
        args.fail("a plan's tiles are powers of two of at least 16, got " +
                  std::to_string(given->blockM) + " x " + std::to_string(given->blockN) + " x " +
                  std::to_string(given->blockK));
    if (given->splitK < 1 || given->splitK > 64)
      args.fail("a plan's splitK is 1 to 64, got " + std::to_string(given->splitK));
    if (given->splitK > 1 && given->persistent)
      args.fail("a plan either splits K or is persistent, not both");
    if (given->streamK && !given->persistent)
      args.fail("a stream-K plan is persistent (its programs walk the tiles' K steps)");
    if (given->cluster != 1 && given->cluster != 2)
      args.fail("a plan's cluster is 1 or 2, got " + std::to_string(given->cluster));
    if (given->cluster > 1 && (given->splitK > 1 || given->streamK || !given->warpSpecialize))
      args.fail("a plan with clusters multicasts B through its producer warp group: it takes "
                "warpSpecialize, and neither splitK nor streamK");
    if (given->pingPong && (!given->persistent || !given->warpSpecialize ||
                            given->numWarps != 4 || given->cluster > 1 || given->streamK))
      args.fail("a ping-pong plan's two warp groups take alternate tiles of a persistent walk: "
                "it takes persistent, warpSpecialize and numWarps 4, and neither clusters nor "
                "streamK");
    if (int64_t need = workspaceNeed(m, *given, planningSmCount());
        need > 0 && (!m.workspace || m.workspaceBytes < need))
      args.fail(std::string("the plan ") +
                (given->streamK ? "shares K steps between programs (stream-K)"
                                : "splits K " + std::to_string(given->splitK) + " ways") +
                ": workspace holds " + std::to_string(m.workspace ? m.workspaceBytes : 0) +
                " bytes, " + std::to_string(need) + " needed");
  }
  int64_t bytesIn = dtypeBytes(m.in), bytesOut = dtypeBytes(m.out),
          bytesExtra = dtypeBytes(isFp8(m.out) ? Dtype::bf16 : m.out);
  std::initializer_list<Span> operands = {
      {m.a, m.M * call.lda * bytesIn}, {m.b, call.rowsB * call.ldb * bytesIn},
      {m.bias, m.bias ? call.columnsB * bytesExtra : 0},
      {m.residual, m.residual ? m.M * call.ldr * bytesExtra : 0},
      {m.amax, m.amax ? 4 : 0},
      {m.scaleA, m.scaleA ? m.M * 4 : 0},
      {m.scaleB, m.scaleB ? call.columnsB * 4 : 0}};
  if (m.workspace && m.workspaceBytes > 0 &&
      (anyOverlap({{m.workspace, m.workspaceBytes}}, operands) ||
       anyOverlap({{m.workspace, m.workspaceBytes}}, {{m.c, m.M * call.ldc * bytesOut}})))
    args.fail("workspace overlaps an operand or C");
  // Plans split K only with a workspace that holds what any of them needs.
  int64_t splitBytes = m.workspace ? matmulWorkspaceBytes(m) : 0;
  bool canSplitK = splitBytes > 0 && m.workspaceBytes >= splitBytes;
  MatmulTypes types = matmulTypes(m, canSplitK);
  bool gpu = !tritium::interpreting();
  const rt::DeviceProps *props = gpu ? &rt::Context::current().props() : nullptr;
  int smCount = props ? props->smCount : 132;
  // Hopper's wgmma needs the architecture-specific target (its code runs on sm_90 only).
  std::string arch = props && props->arch() == "sm_90" ? "sm_90a" : "";
  auto launch = [&](const MatmulPlan &chosen) {
    MatmulPlan plan = chosen;
    MatmulCall planCall = resolve(m, plan.splitK);
    // A ping-pong plan's groups need TMA's producer warp group (Hopper, tensors it takes):
    // elsewhere its tiles run on both warp groups together.
    if (plan.pingPong && (!(plan.descriptors && planCall.descriptorsUsable) ||
                          (gpu && arch != "sm_90a"))) {
      plan.pingPong = false;
      plan.numWarps = 8;
    }
    std::array<KernelArg, 9> pointers{c, a, b, bias, residual, scaleA, scaleB, amax, workspace};
    int flags = matmulFlags(m, planCall, plan);
    if (flags & kStreamK) { // the flags after the programs' partial slots start at 0
      int64_t p = programs(m, plan, flags, smCount);
      int64_t products = swiglu ? 2 : 1;
      char *flagWords = static_cast<char *>(m.workspace) + p * products * plan.blockM *
                                                               plan.blockN * 4;
      if (gpu)
        TRITIUM_CU(cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(flagWords), 0, size_t(p),
                                    stream));
      else
        std::memset(flagWords, 0, size_t(p) * 4);
    }
    withLaunchArgs(m, planCall, pointers, [&](std::initializer_list<KernelArg> launchArgs) {
      CompiledKernel &k = matmulKernel().compile(
          baseSpecialization(m, planCall, plan, flags, arch).specializedFor(launchArgs));
      int64_t grid = programs(m, plan, flags, smCount);
      // Persistent pairs: as many as the GPU holds at once (a pair's SMs share a GPC, so
      // fewer than SMs / 2 may fit).
      if ((flags & kMulticastB) && (flags & kPersistent))
        grid = k.persistentGrid(grid / 2);
      k.launch(grid, stream, launchArgs);
    });
    if (plan.splitK > 1)
      withSumArgs(m, planCall, pointers, [&](std::initializer_list<KernelArg> sumArgs) {
        int64_t sums = ((m.M + kSumRows - 1) / kSumRows) * ((m.N + kSumColumns - 1) / kSumColumns);
        matmulSplitKSumKernel()
            .compile(sumSpecialization(m, planCall, plan, flags, arch).specializedFor(sumArgs))
            .launch(sums, stream, sumArgs);
      });
  };
  bool rerunSafe = !anyOverlap({{m.c, m.M * call.ldc * bytesOut}}, operands);
  launch(choosePlan<MatmulPlan>(
      given,
      {"matmul",
       {int64_t(m.in), int64_t(m.out), m.bTransposed, m.M, m.N, m.K, call.lda, call.ldb,
        call.ldc, on16ByteBoundaries({m.a, m.b, m.c}) ? 1 : 0, call.descriptorsUsable ? 1 : 0,
        int64_t(m.precision), swiglu ? 1 : 0, canSplitK ? 1 : 0, m.maxImpreciseAcc},
       rerunSafe},
      [&] {
        return matmulBucket(m.in, m.out, m.bTransposed, m.M, m.N, m.K) +
               (call.descriptorsUsable ? "" : "-pointers") +
               (m.in == Dtype::fp32 ? "-" + std::to_string(int(m.precision)) : "") +
               (swiglu ? "-swiglu" : "") + (canSplitK ? "-split-k" : "") +
               (m.maxImpreciseAcc ? "-imprecise-" + std::to_string(m.maxImpreciseAcc) : "");
      },
      stream, [&] { return planMatmul(m.M, m.N, m.K, smCount, types); },
      [&] { return matmulCandidates(m.M, m.N, m.K, smCount, types, call.descriptorsUsable); },
      launch,
      // The planner's plan stays unless a trial runs more than 3% faster: a trial of 9
      // launches runs at the clocks of a GPU that has just started, and at 8192^3 on an H200
      // the trials' winner (256 x 128 tiles, 1.45 ms there) ran at 656.3 TFLOP/s under the
      // peers' timing where the planner's persistent 128 x 256 plan ran at 702.7.
      0.03));
}

} // namespace tritium::kernels
