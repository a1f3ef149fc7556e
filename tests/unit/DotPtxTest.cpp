// Which tensor-core instructions a dot compiles to, and that ptxas takes them: on sm_90a the
// tutorial matmul's tiles run on wgmma, read from the cp.async rings in place (a fence for the
// async proxy after each stage lands) or from staging; shapes wgmma does not take, and sm_90,
// keep mma.sync.
#include "DotCases.h"
#include "PtxChecks.h"
#include "kernels/Matmul.h"

#include <regex>

using namespace tritium;
using namespace tritium::testing::tensorcores;
using ir::ScalarKind;
using tritium::testing::count;
using tritium::testing::expectAssembles;

namespace {

class DotPtxTest : public tritium::testing::CompilerTest {};

Artifacts compileCase(const MatmulCase &c) {
  // 16-byte aligned pointers and sizes and strides divisible by 16, as a launch on the shapes
  // of the GPU tests would find them.
  Specialization spec = matmulSpecialization(c);
  for (std::string &s : spec.signature)
    if (s.find(':') == std::string::npos)
      s += ":16";
  return matmulKernelOf().compileTo(spec, Stage::PTX);
}

TEST_F(DotPtxTest, RingTilesRunOnWarpGroups) {
  Artifacts a = compileCase({.in = ScalarKind::BF16, .BM = 128, .BN = 256, .BK = 64, .warps = 8,
                             .stages = 3, .arch = "sm_90a"});
  EXPECT_NE(a.gir.find("wgmma = 1, ring_a = 1, ring_b = 1"), std::string::npos) << a.gir;
  EXPECT_NE(a.gir.find("wpc=[8,1]"), std::string::npos) << a.gir;
  EXPECT_NE(a.gir.find("permute_rows = 1"), std::string::npos) << a.gir;
  // 64 / 16 K steps of one m64n256 instruction per warp group, between one fence and one
  // commit. The group stays in flight across iterations: each waits for the previous
  // iteration's (wait_group 1), the loop's end for the last (wait_group 0, the accumulators
  // passing through it).
  EXPECT_NE(a.gir.find("in_flight = 1"), std::string::npos) << a.gir;
  EXPECT_NE(a.gir.find("wgmma_in_flight = 1"), std::string::npos) << a.gir;
  EXPECT_EQ(count(a.ptx, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"), 4u) << a.ptx;
  EXPECT_EQ(count(a.ptx, "wgmma.fence.sync.aligned"), 1u);
  EXPECT_EQ(count(a.ptx, "wgmma.commit_group.sync.aligned"), 1u);
  EXPECT_EQ(count(a.ptx, "wgmma.wait_group.sync.aligned \t1;"), 1u);
  EXPECT_EQ(count(a.ptx, "wgmma.wait_group.sync.aligned 0;"), 1u);
  EXPECT_NE(a.ptx.find("fence.proxy.async.shared::cta"), std::string::npos);
  EXPECT_EQ(a.ptx.find("mma.sync"), std::string::npos);
  EXPECT_EQ(a.ptx.find("ldmatrix"), std::string::npos);
  expectAssembles(a, "sm_90a");
}

TEST_F(DotPtxTest, StagedOperandsRunOnWarpGroups) {
  // No ring (one stage): both operands are staged from registers; two 64-row slices per warp
  // group.
  Artifacts a = compileCase({.in = ScalarKind::F16, .BM = 128, .BN = 64, .BK = 64, .warps = 4,
                             .stages = 1, .arch = "sm_90a"});
  EXPECT_NE(a.gir.find("{wgmma = 1, smem_offset = "), std::string::npos) << a.gir;
  EXPECT_EQ(a.gir.find("ring_a"), std::string::npos) << a.gir;
  EXPECT_EQ(count(a.ptx, "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16"), 8u) << a.ptx;
  EXPECT_EQ(a.gir.find("in_flight"), std::string::npos) << a.gir;
  EXPECT_EQ(count(a.ptx, "wgmma.wait_group.sync.aligned 0;"), 1u);
  EXPECT_GE(count(a.ptx, "fence.proxy.async.shared::cta"), 1u) << a.ptx;
  expectAssembles(a, "sm_90a");
}

TEST_F(DotPtxTest, TransposedBIsReadInPlace) {
  // b stored [N, K] (nn.Linear's weights) and given to dot as trans() of its [BN, BK] tile:
  // the ring's tile is read K-major, by wgmma (its transpose bit off) and by mma.sync
  // (ldmatrix without .trans); the transpose itself is never made.
  MatmulCase c{.in = ScalarKind::BF16, .BM = 128, .BN = 128, .BK = 64, .warps = 8, .stages = 3,
               .bColumns = true, .arch = "sm_90a"};
  Artifacts a = compileCase(c);
  EXPECT_NE(a.gir.find("ring_a = 1, b_k_major = 1, ring_b = 1"), std::string::npos) << a.gir;
  EXPECT_NE(a.gir.find("{order = \"1,0\", dot_only = 1}"), std::string::npos) << a.gir;
  EXPECT_NE(a.gir.find("trans %"), std::string::npos);
  EXPECT_NE(a.gir.find("dot_only = 1} : block<128x64xbf16"), std::string::npos) << a.gir;
  EXPECT_EQ(count(a.ptx, ", 1, 1, 1, 0, 0;"), 4u) << a.ptx; // b K-major
  expectAssembles(a, "sm_90a");
  c.arch = "sm_90";
  Artifacts m = compileCase(c);
  EXPECT_NE(m.gir.find("b_k_major = 1"), std::string::npos) << m.gir;
  EXPECT_NE(m.ptx.find("ldmatrix.sync.aligned.m8n8.x2.shared.b16"), std::string::npos);
  EXPECT_EQ(m.ptx.find(".trans"), std::string::npos);
}

// fp8, 8-bit integers and tf32 run on wgmma too, 32 bytes of K per instruction, b K-major:
// read in place from the [N, K] tile under a trans, or staged transposed when b is [K, N].
TEST_F(DotPtxTest, EightAndThirtyTwoBitOperandsRunOnWarpGroups) {
  struct Want {
    MatmulCase c;
    const char *instruction;
    size_t perIteration; // instructions per loop iteration
    bool bFromRing;
  };
  for (const Want &w :
       {Want{{.in = ScalarKind::F8E4M3, .BM = 128, .BN = 256, .BK = 128,
              .warps = 8, .stages = 4, .bColumns = true, .ptxVersion = 84, .arch = "sm_90a"},
             "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3", 4, true},
        Want{{.in = ScalarKind::F8E5M2, .BM = 64, .BN = 128, .BK = 128, .warps = 4,
              .stages = 3, .ptxVersion = 84, .arch = "sm_90a"},
             "wgmma.mma_async.sync.aligned.m64n128k32.f32.e5m2.e5m2", 4, false},
        Want{{.in = ScalarKind::I8, .acc = ScalarKind::I32, .out = ScalarKind::I32, .BM = 128,
              .BN = 128, .BK = 128, .warps = 8, .stages = 3, .bColumns = true,
              .arch = "sm_90a"},
             "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8", 4, true},
        Want{{.in = ScalarKind::F32, .BM = 64, .BN = 64, .BK = 32, .warps = 4, .stages = 3,
              .bColumns = true, .arch = "sm_90a"},
             "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32", 4, true}}) {
    SCOPED_TRACE(w.c.str());
    Artifacts a = compileCase(w.c);
    EXPECT_EQ(count(a.ptx, w.instruction), w.perIteration) << a.ptx;
    EXPECT_EQ(a.ptx.find("mma.sync"), std::string::npos);
    EXPECT_NE(a.gir.find("ring_a = 1"), std::string::npos) << a.gir;
    EXPECT_EQ(a.gir.find("ring_b = 1") != std::string::npos, w.bFromRing) << a.gir;
    EXPECT_EQ(a.gir.find("b_k_major = 1") != std::string::npos, w.bFromRing) << a.gir;
    expectAssembles(a, "sm_90a");
  }
  // tf32x3 stays on mma.sync.
  Artifacts x3 = compileCase({.in = ScalarKind::F32, .BM = 64, .BN = 64, .BK = 32, .warps = 4,
                              .stages = 3, .precision = "tf32x3", .arch = "sm_90a"});
  EXPECT_EQ(x3.ptx.find("wgmma"), std::string::npos);
  EXPECT_NE(x3.ptx.find("mma.sync.aligned.m16n8k8"), std::string::npos);
}

TEST_F(DotPtxTest, OtherShapesAndTargetsKeepMmaSync) {
  // fp32 accumulation in fp16, and sm_90 (no wgmma).
  for (const MatmulCase &c :
       {MatmulCase{.in = ScalarKind::F16, .acc = ScalarKind::F16, .out = ScalarKind::F16,
                   .BM = 64, .BN = 64, .BK = 64, .warps = 4, .stages = 2, .arch = "sm_90a"},
        MatmulCase{.in = ScalarKind::BF16, .BM = 128, .BN = 256, .BK = 64, .warps = 8,
                   .stages = 3, .arch = "sm_90"}}) {
    SCOPED_TRACE(c.str());
    Artifacts a = compileCase(c);
    EXPECT_EQ(a.ptx.find("wgmma"), std::string::npos);
    EXPECT_NE(a.ptx.find("mma.sync.aligned.m16n8k16"), std::string::npos);
  }
}

// K tiles whose rows are 64 or 32 bytes (16-bit K of 32 and 16, fp8 K of 64 and 32, tf32 K of
// 16) run on wgmma from rings swizzled as wide (SWIZZLE_64B, SWIZZLE_32B), as do K-major b
// tiles of fewer than 64 columns.
TEST_F(DotPtxTest, ShortKTilesRunOnWarpGroups) {
  for (const MatmulCase &c :
       {MatmulCase{.in = ScalarKind::BF16, .BM = 128, .BN = 128, .BK = 32, .warps = 8,
                   .stages = 3, .arch = "sm_90a"},
        MatmulCase{.in = ScalarKind::F16, .BM = 64, .BN = 128, .BK = 16, .warps = 4,
                   .stages = 4, .bColumns = true, .arch = "sm_90a"},
        MatmulCase{.in = ScalarKind::F8E4M3, .BM = 64, .BN = 128, .BK = 64, .warps = 4,
                   .stages = 3, .bColumns = true, .ptxVersion = 84, .arch = "sm_90a"},
        MatmulCase{.in = ScalarKind::F8E4M3, .BM = 64, .BN = 64, .BK = 32, .warps = 4,
                   .stages = 3, .ptxVersion = 84, .arch = "sm_90a"},
        MatmulCase{.in = ScalarKind::F32, .BM = 64, .BN = 64, .BK = 16, .warps = 4, .stages = 3,
                   .bColumns = true, .arch = "sm_90a"},
        MatmulCase{.in = ScalarKind::F32, .BM = 64, .BN = 64, .BK = 16, .warps = 4, .stages = 3,
                   .arch = "sm_90a"},
        // b K-major (trans() of [N, K] tiles) of 32 and 16 columns: N need not fill a panel.
        MatmulCase{.in = ScalarKind::BF16, .BM = 128, .BN = 32, .BK = 64, .warps = 8,
                   .stages = 3, .bColumns = true, .arch = "sm_90a"},
        MatmulCase{.in = ScalarKind::F8E4M3, .BM = 64, .BN = 16, .BK = 128, .warps = 4,
                   .stages = 3, .bColumns = true, .ptxVersion = 84, .arch = "sm_90a"}}) {
    SCOPED_TRACE(c.str());
    Artifacts a = compileCase(c);
    EXPECT_NE(a.ptx.find("wgmma.mma_async"), std::string::npos);
    EXPECT_EQ(a.ptx.find("mma.sync"), std::string::npos);
    int64_t span = std::min<int64_t>(128, int64_t(c.BK) * std::max(1, ir::bitWidth(c.in) / 8));
    EXPECT_NE(a.gir.find("swizzle = " + std::to_string(span)), std::string::npos) << a.gir;
    expectAssembles(a, "sm_90a");
  }
}

// fp8 with max_num_imprecise_acc: each N of K (here 128 / N groups a dot) is summed from zero
// (scale-d off at its first instruction), committed, waited for and added in fp32; without it
// the products chain into the accumulator and stay in flight across the loop.
TEST_F(DotPtxTest, ImpreciseAccumulationAddsPartialSumsInFp32) {
  auto k = kernel("imprecise_acc", impreciseAccumulationKernel, {"c", "a", "b", "K", "N"});
  for (int every : {0, 32, 64, 128}) {
    SCOPED_TRACE("every " + std::to_string(every));
    Specialization spec{.signature = {"*fp32:16", "*fp8e4m3:16", "*fp8e4m3:16", "i32:16"},
                        .constexprs = {every}, .numWarps = 4, .arch = "sm_90a"};
    spec.ptxVersion = 84;
    Artifacts a = k.compileTo(spec, Stage::PTX);
    EXPECT_EQ(count(a.ptx, "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3"), 4u);
    EXPECT_EQ(count(a.ptx, "wgmma.commit_group.sync.aligned"), every ? size_t(128 / every) : 1u)
        << a.ptx;
    EXPECT_EQ(count(a.ptx, "setp.ne.b32 p"), every ? size_t(128 / every) : 0u) << a.ptx;
    expectAssembles(a, "sm_90a");
  }
}

// The library's fp8 matmul with maxImpreciseAcc: each product's K tile of 128 in groups of
// N, each added into fp32 (one group a K tile for N of at least the tile). The partial sums
// double the accumulator's registers: on 128 x 128 tiles ptxas spills nothing (on 128 x 256,
// 96-128 bytes).
TEST_F(DotPtxTest, LibraryFp8MatmulAddsPartialSumsInFp32) {
  const void *aligned = reinterpret_cast<const void *>(uintptr_t(256));
  for (int64_t every : {0, 64, 128, 4096}) {
    SCOPED_TRACE("every " + std::to_string(every));
    kernels::MatmulArgs m{.c = const_cast<void *>(aligned), .a = aligned, .b = aligned,
                          .M = 4096, .N = 4096, .K = 4096, .bTransposed = true,
                          .in = kernels::Dtype::fp8e4m3, .maxImpreciseAcc = every};
    kernels::MatmulPlan plan{.blockM = 128, .blockN = 128, .blockK = 128, .numWarps = 8,
                             .numStages = 4};
    Artifacts a = kernels::matmulKernel().compileTo(
        kernels::matmulSpecialization(m, plan, "sm_90a"), Stage::PTX);
    size_t groups = every == 0 ? 1 : size_t(128 / std::min<int64_t>(every, 128));
    EXPECT_EQ(count(a.ptx, "wgmma.commit_group.sync.aligned"), groups) << a.ptx;
    expectAssembles(a, "sm_90a");
  }
}

// chainedKernel at 128 x 64 x 128 x 64 on 8 warps for sm_90a: x and y of `in`, z (and so the
// first product's cast result) of `second`.
Specialization chainedSpec(const std::string &in, const std::string &second) {
  Specialization spec{.signature = {"*fp32:16", "*" + in + ":16", "*" + in + ":16",
                                    "*" + second + ":16"},
                      .constexprs = {128, 64, 128, 64}, .numWarps = 8};
  spec.arch = "sm_90a";
  if (in == "fp8e4m3" || second == "fp8e4m3")
    spec.ptxVersion = 84;
  return spec;
}

// The line of `text` where `needle` first occurs.
std::string lineWith(const std::string &text, const std::string &needle) {
  std::string line = text.substr(std::min(text.find(needle), text.size()));
  return line.substr(0, line.find('\n'));
}

// A product of a product on wgmma: the second takes the first's result in registers (the
// register form of a, four 32-bit registers a K step), with no staging buffer for it, and
// ptxas keeps every wgmma in its pipeline.
TEST_F(DotPtxTest, ChainedProductTakesItsOperandFromRegisters) {
  auto k = kernel("chained_dot", chainedKernel, {"out", "x", "y", "z", "BM", "BK", "BN", "BN2"});
  Specialization spec = chainedSpec("bf16", "bf16");
  Artifacts a = k.compileTo(spec, Stage::PTX);
  EXPECT_EQ(count(a.gir, "a_regs = 1"), 1u) << a.gir;
  // 128 / 16 K steps of the second product, each with a from four registers.
  EXPECT_EQ(count(a.ptx, "}, {%r"), 8u) << a.ptx;
  expectAssembles(a, "sm_90a");
  // A staging buffer for z (smem_b) and none for p (smem_offset).
  std::string dot = lineWith(a.gir, "a_regs = 1");
  EXPECT_NE(dot.find("smem_b"), std::string::npos) << dot;
  EXPECT_EQ(dot.find("smem_offset"), std::string::npos) << dot;
  // sm_90 (mma.sync) stages it as before.
  spec.arch = "sm_90";
  Artifacts m = k.compileTo(spec, Stage::PTX);
  EXPECT_EQ(count(m.gir, "a_regs"), 0u);
}

// The same at 8 bits (fp8 attention's P). wgmma's 8-bit fragment holds a row's columns
// 4c .. 4c + 3 of each 16 in lane c, where an accumulator holds the pairs 2c, 2c + 1 of each 8.
// After fp8 operands the first product computes its columns in the fragment's order (its b's
// rows permuted, ByteFragmentColumns.cpp): its accumulator is blocked 2 x 4 a thread, and p's
// registers are its bytes, with no shuffle; one paired conversion to e4m3 makes each two.
TEST_F(DotPtxTest, ChainedEightBitProductTakesItsOperandInTheFragmentsOrder) {
  auto k = kernel("chained_dot", chainedKernel, {"out", "x", "y", "z", "BM", "BK", "BN", "BN2"});
  Artifacts a = k.compileTo(chainedSpec("fp8e4m3", "fp8e4m3"), Stage::PTX);
  EXPECT_EQ(count(a.gir, "a_regs = 1"), 1u) << a.gir;
  EXPECT_EQ(count(a.gir, "byte_fragment_columns = 1"), 1u) << a.gir;
  EXPECT_EQ(count(a.gir, "convert_layout"), 1u) << a.gir; // the output's, for its store
  std::string first = lineWith(a.gir, "byte_fragment_columns = 1");
  EXPECT_NE(first.find("spt=[2,4]"), std::string::npos) << first;
  std::string dot = lineWith(a.gir, "a_regs = 1");
  EXPECT_EQ(dot.find("smem_offset"), std::string::npos) << dot;
  // 64 / 32 K steps of the first product from shared memory, 128 / 32 of the second, each with
  // a from four registers.
  EXPECT_EQ(count(a.ptx, "e4m3.e4m3 {"), 6u) << a.ptx;
  EXPECT_EQ(count(a.ptx, "}, {%r"), 4u) << a.ptx;
  EXPECT_EQ(count(a.ptx, "shfl.sync"), 0u) << a.ptx;
  EXPECT_EQ(count(a.ptx, "cvt.rn.satfinite.e4m3x2.f32"), 32u) << a.ptx;
  expectAssembles(a, "sm_90a");
}

// After 16-bit operands the first product keeps its columns (a 16-bit b's major order is known
// only once the rings are planned): the lanes of each quad trade their pairs into the 8-bit
// fragment, two shuffles a fragment row, still with no staging buffer.
TEST_F(DotPtxTest, ChainedEightBitProductAfterSixteenBitOperandsTradesWithinQuads) {
  auto k = kernel("chained_dot", chainedKernel, {"out", "x", "y", "z", "BM", "BK", "BN", "BN2"});
  Artifacts a = k.compileTo(chainedSpec("bf16", "fp8e4m3"), Stage::PTX);
  EXPECT_EQ(count(a.gir, "a_regs = 1"), 1u) << a.gir;
  EXPECT_EQ(count(a.gir, "byte_fragment_columns"), 0u) << a.gir;
  // 128 / 32 K steps of the second product, each with a from four registers, and per K step
  // two fragment rows of two shuffles each.
  EXPECT_EQ(count(a.ptx, "}, {%r"), 4u) << a.ptx;
  EXPECT_EQ(count(a.ptx, "shfl.sync.idx.b32"), 16u) << a.ptx;
  EXPECT_EQ(count(a.ptx, "cvt.rn.satfinite.e4m3x2.f32"), 32u) << a.ptx;
  expectAssembles(a, "sm_90a");
}

// Two products of one loop step, both read from rings: each is waited for at its result's
// first use ({deferred_wait}), so the second is issued while the first is in flight and one
// wait covers both; the sum of the two then meets the carried total.
inline void twoProductsKernel(Ptr out, Ptr a, Ptr b, Ptr c, Int n) {
  auto r = arange(0, 64), k = arange(0, 64);
  auto total = zeros({64, 64}, float32);
  for (auto i : range(0, n, 1, 3)) {
    auto rows = i * 64 + r;
    auto at = load(a + rows(_, None) * 64 + k(None, _));
    auto bt = load(b + rows(_, None) * 64 + k(None, _));
    auto ct = load(c + rows(_, None) * 64 + k(None, _));
    auto s1 = dot(at, bt);
    auto s2 = dot(at, ct);
    total = total + s1 * s2;
  }
  store(out + r(_, None) * 64 + k(None, _), total);
}

TEST_F(DotPtxTest, ProductsThatStageNothingAreWaitedForAtTheirFirstUse) {
  auto k = kernel("two_products", twoProductsKernel, {"out", "a", "b", "c", "n"});
  Specialization spec{.signature = {"*fp32:16", "*bf16:16", "*bf16:16", "*bf16:16", "i32"},
                      .numWarps = 4};
  spec.arch = "sm_90a";
  Artifacts x = k.compileTo(spec, Stage::PTX);
  EXPECT_EQ(count(x.gir, "deferred_wait = 1"), 2u) << x.gir;
  size_t first = x.ptx.find("wgmma.commit_group");
  size_t second = x.ptx.find("wgmma.commit_group", first + 1);
  ASSERT_NE(second, std::string::npos) << x.ptx;
  EXPECT_LT(second, x.ptx.find("wgmma.wait_group", first)) << x.ptx;
  EXPECT_EQ(count(x.ptx, "wgmma.wait_group"), 1u) << x.ptx;
  expectAssembles(x, "sm_90a");
}

} // namespace

// The library's plan with a TMA store (MatmulPlan::tmaStore, the default) at 4096^3 bf16 with a bias: C's
// 128 x 256 tile leaves as four TMA stores of 64-column panels, staged straight from the
// accumulator's layout (no convert_layout), and the element stores are gone; ptxas
// serializes no wgmma. The persistent plan stores a tile per pass of its loop the same way.
TEST_F(DotPtxTest, LibraryTmaStorePlanStoresCByTma) {
  const void *aligned = reinterpret_cast<const void *>(uintptr_t(256));
  for (bool persistent : {false, true}) {
    SCOPED_TRACE(persistent ? "persistent" : "one tile a program");
    kernels::MatmulArgs m{.c = const_cast<void *>(aligned), .a = aligned, .b = aligned,
                          .bias = aligned, .M = 4096, .N = 4096, .K = 4096};
    kernels::MatmulPlan plan{.numStages = persistent ? 3 : 4, .persistent = persistent,
                             .tmaStore = true};
    Artifacts a = kernels::matmulKernel().compileTo(
        kernels::matmulSpecialization(m, plan, "sm_90a"), Stage::PTX);
    EXPECT_NE(a.gir.find("tensor_store"), std::string::npos) << a.gir;
    EXPECT_EQ(count(a.ptx, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"), 4u);
    // Element stores only for a tile at a negative offset: 16 pieces of 16 bytes a thread.
    EXPECT_EQ(count(a.ptx, "st.global"), 16u) << a.ptx;
    if (tritium::testing::ptxasPath().empty())
      GTEST_SKIP() << "ptxas was not found at configure time; the PTX was not assembled";
    tritium::testing::PtxasResult r = tritium::testing::runPtxas(a.ptx, "sm_90a");
    ASSERT_EQ(r.exitCode, 0) << r.output;
    EXPECT_EQ(r.output.find("serializ"), std::string::npos) << r.output;
  }
  // A plan that asks for element stores gets them.
  kernels::MatmulArgs m{.c = const_cast<void *>(aligned), .a = aligned, .b = aligned,
                        .M = 4096, .N = 4096, .K = 4096};
  Artifacts elements = kernels::matmulKernel().compileTo(
      kernels::matmulSpecialization(m, kernels::MatmulPlan{.tmaStore = false}, "sm_90a"),
      Stage::PTX);
  EXPECT_EQ(elements.gir.find("tensor_store"), std::string::npos);
  EXPECT_NE(elements.ptx.find("st.global"), std::string::npos);
}

// The library's stream-K plans (MatmulPlan::streamK) at 3072 x 3072 x 4096 bf16, 128 x 128
// tiles with and without a producer warp group: the K loop of each piece of a tile nested in
// the walk over the program's pieces (the warps split before it: the fix-up loop after the K
// loop has no ring), and the piece's end on either branch: a partial product stored and its
// flag released, or the others' partials waited for (a compare-and-swap loop) and added before
// the epilogue, which stages C by stmatrix as the persistent plan's does. With the producer
// ptxas spills nothing. (On 128 x 256 tiles it spills 500-650 bytes: the partial's
// store converts the 128 accumulators a thread into 16-byte runs through shared memory.)
TEST_F(DotPtxTest, LibraryStreamKPlanSharesTheTilesSteps) {
  const void *aligned = reinterpret_cast<const void *>(uintptr_t(256));
  kernels::MatmulArgs m{.c = const_cast<void *>(aligned), .a = aligned, .b = aligned,
                        .M = 3072, .N = 3072, .K = 4096};
  for (bool producer : {false, true}) {
    SCOPED_TRACE(producer ? "producer warp group" : "no producer");
    kernels::MatmulPlan plan{.blockN = 128, .warpSpecialize = producer, .persistent = true,
                             .streamK = true};
    EXPECT_EQ(kernels::matmulGrid(m, plan, 132), 132);
    Artifacts a = kernels::matmulKernel().compileTo(
        kernels::matmulSpecialization(m, plan, "sm_90a"), Stage::PTX);
    EXPECT_EQ(count(a.gir, "warp_specialized = 1"), producer ? 1u : 0u) << a.gir;
    kernels::MatmulPlan tiles = plan;
    tiles.streamK = false;
    Artifacts p = kernels::matmulKernel().compileTo(
        kernels::matmulSpecialization(m, tiles, "sm_90a"), Stage::PTX);
    // (LLVM may duplicate the K loop's body: at least the persistent plan's products.)
    EXPECT_GE(count(a.ptx, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"),
              count(p.ptx, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"));
    EXPECT_EQ(count(a.ptx, "atom.acq_rel.gpu.global.cas.b32"), 1u) << a.ptx;
    // C staged for its TMA store from the accumulator's fragments, as the persistent plan's.
    EXPECT_EQ(count(a.ptx, "stmatrix.sync.aligned"), count(p.ptx, "stmatrix.sync.aligned"));
    EXPECT_GT(count(a.ptx, "stmatrix.sync.aligned"), 0u);
    EXPECT_EQ(count(a.ptx, "atom.acq_rel.gpu.global.exch.b32"), 1u) << a.ptx;
    if (producer)
      EXPECT_EQ(count(a.ptx, "setmaxnreg.inc.sync.aligned.u32 240;"), 1u);
    if (tritium::testing::ptxasPath().empty())
      GTEST_SKIP() << "ptxas was not found at configure time; the PTX was not assembled";
    tritium::testing::PtxasResult r = tritium::testing::runPtxas(a.ptx, "sm_90a");
    ASSERT_EQ(r.exitCode, 0) << r.output;
    // Without the producer's registers (240 a compute thread) ptxas spills 4 bytes at 255.
    std::smatch spill;
    ASSERT_TRUE(std::regex_search(r.output, spill, std::regex("(\\d+) bytes spill stores")));
    EXPECT_LE(std::stoi(spill[1]), producer ? 0 : 8) << r.output;
    EXPECT_EQ(r.output.find("serializ"), std::string::npos) << r.output;
  }
}

// The library's persistent plan (MatmulPlan::persistent) at 8192 x 8192 x 512 bf16, with and
// without a producer warp group: one program per SM walks its tiles, each with the per-tile
// kernel's K loop (its product left in flight from step to step: wait_group 1) and epilogue.
// With the producer the warps split once, before the walk (one setmaxnreg pair); the producer
// walks the tiles too, and the compute warps meet at no CTA-wide barrier after the split.
// ptxas serializes no wgmma and spills nothing.
// Clusters of two programs on neighbouring row tiles (MatmulPlan::cluster): B's tile is
// multicast, each program's TMA copying half of its K rows into both; A's stays each
// program's own. Per tile and persistent, B [K, N] and [N, K].
TEST_F(DotPtxTest, LibraryClusterPlanMulticastsB) {
  const void *aligned = reinterpret_cast<const void *>(uintptr_t(256));
  for (bool persistent : {false, true})
    for (bool bNK : {false, true}) {
      SCOPED_TRACE(std::string(persistent ? "persistent" : "a program per tile") +
                   (bNK ? ", B [N, K]" : ", B [K, N]"));
      kernels::MatmulArgs m{.c = const_cast<void *>(aligned), .a = aligned, .b = aligned,
                            .M = 8192, .N = 8192, .K = 8192, .bTransposed = bNK};
      kernels::MatmulPlan plan{.numStages = persistent ? 3 : 4, .warpSpecialize = true,
                               .persistent = persistent, .cluster = 2};
      // 32 pairs of 128-row tiles by 32 columns of 256: a pair per two SMs when persistent.
      EXPECT_EQ(kernels::matmulGrid(m, plan, 132), persistent ? 132 : 2048);
      Artifacts a = kernels::matmulKernel().compileTo(
          kernels::matmulSpecialization(m, plan, "sm_90a"), Stage::PTX);
      EXPECT_EQ(count(a.gir, "multicast_copies = 2"), 1u) << a.gir;
      EXPECT_EQ(count(a.gir, "multicast_skipped"), 0u) << a.gir;
      // B's box: half of its 64 K rows, or of its 256 N rows.
      EXPECT_NE(a.tensorMaps.find(bNK ? "bf16 a2 dims=a13,a12 strides=a15*2 box=64,128 swizzle=128"
                                      : "bf16 a2 dims=a12,a13 strides=a15*2 box=64,32 swizzle=128"),
                std::string::npos)
          << a.tensorMaps;
      EXPECT_EQ(count(a.ptx, ".reqnctapercluster 2, 1, 1"), 1u);
      EXPECT_EQ(count(a.ptx, "bytes.multicast::cluster ["), bNK ? 1u : 4u) << a.ptx;
      EXPECT_EQ(count(a.ptx, "mapa.shared::cluster.u32"), persistent ? 2u : 1u) << a.ptx;
      EXPECT_EQ(count(a.ptx, "barrier.cluster.arrive"), 2u);
      EXPECT_EQ(count(a.ptx, "setmaxnreg.dec.sync.aligned.u32 24;"), 1u);
      tritium::testing::expectAssembles(a, "sm_90a"); // no spills, no serialized wgmma
    }
}

TEST_F(DotPtxTest, LibraryPingPongPlanGivesEachWarpGroupItsTiles) {
  const void *aligned = reinterpret_cast<const void *>(uintptr_t(256));
  kernels::MatmulArgs m{.c = const_cast<void *>(aligned), .a = aligned, .b = aligned,
                        .M = 8192, .N = 8192, .K = 512};
  kernels::MatmulPlan plan{.blockN = 128, .numWarps = 4, .warpSpecialize = true,
                           .persistent = true, .pingPong = true};
  // 4096 tiles of 128 x 128, two at a time per program: a program per SM.
  EXPECT_EQ(kernels::matmulGrid(m, plan, 132), 132);
  Artifacts a = kernels::matmulKernel().compileTo(
      kernels::matmulSpecialization(m, plan, "sm_90a"), Stage::PTX);
  EXPECT_EQ(a.computeGroups, 2);
  EXPECT_EQ(a.producerWarps, 4);
  EXPECT_EQ(count(a.gir, "ping_pong = 1"), 1u) << a.gir;
  EXPECT_EQ(count(a.gir, "compute_groups = 2"), 1u) << a.gir;
  EXPECT_EQ(count(a.gir, "ping_pong_skipped"), 0u) << a.gir;
  // Two warp groups of 4 warps and the producer's: 384 threads.
  EXPECT_NE(a.ptx.find(".reqntid 384"), std::string::npos);
  EXPECT_EQ(count(a.ptx, "setmaxnreg.inc.sync.aligned.u32 240;"), 1u);
  // Each group's own barrier (1 or 2, a register), 128 threads; both groups' (3) before the
  // ring's mbarriers are retired; barrier 0 only before the split.
  EXPECT_NE(a.ptx.find(", 128;"), std::string::npos) << a.ptx;
  EXPECT_NE(a.ptx.find("bar.sync \t3, 256;"), std::string::npos) << a.ptx;
  // The groups' turns at the ring's waits (barriers 4 and 5): one sync, one hand-over.
  EXPECT_EQ(count(a.ptx, "bar.sync %r"), 1u) << a.ptx;
  EXPECT_EQ(count(a.ptx, "bar.arrive"), 1u) << a.ptx;
  size_t split = a.ptx.find("setmaxnreg.inc");
  EXPECT_EQ(a.ptx.find("bar.sync \t0;", split), std::string::npos) << a.ptx;
  // Each group's tile: two m64n128 products a K16 step, C stored by TMA.
  EXPECT_EQ(count(a.ptx, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"), 8u);
  tritium::testing::expectAssembles(a, "sm_90a"); // no spills, no serialized wgmma
}

TEST_F(DotPtxTest, LibraryPersistentPlanNestsItsKLoopInTheTileWalk) {
  const void *aligned = reinterpret_cast<const void *>(uintptr_t(256));
  kernels::MatmulArgs m{.c = const_cast<void *>(aligned), .a = aligned, .b = aligned,
                        .M = 8192, .N = 8192, .K = 512};
  for (bool producer : {false, true}) {
    SCOPED_TRACE(producer ? "producer warp group" : "no producer");
    kernels::MatmulPlan plan{.numStages = 3, .warpSpecialize = producer, .persistent = true};
    EXPECT_EQ(kernels::matmulGrid(m, plan, 132), 132);
    Artifacts a = kernels::matmulKernel().compileTo(
        kernels::matmulSpecialization(m, plan, "sm_90a"), Stage::PTX);
    EXPECT_EQ(count(a.gir, "for "), 2u) << a.gir;
    EXPECT_EQ(count(a.gir, "warp_split = 1"), producer ? 1u : 0u) << a.gir;
    EXPECT_EQ(count(a.gir, "warp_specialized = 1"), producer ? 1u : 0u) << a.gir;
    EXPECT_NE(a.gir.find("wgmma = 1, ring_a = 1, ring_b = 1, in_flight = 1"), std::string::npos)
        << a.gir;
    EXPECT_EQ(count(a.ptx, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"), 4u);
    EXPECT_NE(a.ptx.find("wgmma.wait_group.sync.aligned \t1;"), std::string::npos) << a.ptx;
    EXPECT_EQ(count(a.ptx, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"), 4u);
    if (producer) {
      EXPECT_EQ(count(a.ptx, "setmaxnreg.dec.sync.aligned.u32 24;"), 1u);
      EXPECT_EQ(count(a.ptx, "setmaxnreg.inc.sync.aligned.u32 240;"), 1u);
      // Barrier 0 only sets up the ring's mbarriers, before the split.
      size_t split = a.ptx.find("setmaxnreg.inc");
      EXPECT_EQ(a.ptx.find("bar.sync \t0;", split), std::string::npos) << a.ptx;
      EXPECT_NE(a.ptx.find("bar.sync \t1, 256;"), std::string::npos);
    }
    if (tritium::testing::ptxasPath().empty())
      GTEST_SKIP() << "ptxas was not found at configure time; the PTX was not assembled";
    tritium::testing::PtxasResult r = tritium::testing::runPtxas(a.ptx, "sm_90a");
    ASSERT_EQ(r.exitCode, 0) << r.output;
    EXPECT_NE(r.output.find(" 0 bytes spill stores"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("C7514"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("serializ"), std::string::npos) << r.output;
  }
  // A persistent plan of 128 x 256 tiles asking for 4 stages: C's staging beside the ring
  // leaves room for 3, which the ring keeps (PipelineLoads fits the stages to what is left).
  Artifacts four = kernels::matmulKernel().compileTo(
      kernels::matmulSpecialization(
          m, kernels::MatmulPlan{.warpSpecialize = true, .persistent = true}, "sm_90a"),
      Stage::GIR);
  EXPECT_NE(four.gir.find("num_stages = 4, warp_specialize = 1, pipeline_stages = 3"),
            std::string::npos)
      << four.gir;
  // The planner's persistent plans fit their shared memory: fp16, and SwiGLU's two products.
  for (kernels::Activation act : {kernels::Activation::None, kernels::Activation::SwiGlu}) {
    kernels::MatmulArgs s = m;
    s.activation = act;
    s.in = s.out = kernels::Dtype::fp16;
    kernels::MatmulPlan plan = kernels::planMatmul(8192, 8192, 512, 132,
                                                   {.in = s.in, .twoProducts = act != kernels::Activation::None});
    ASSERT_TRUE(plan.persistent);
    Artifacts a = kernels::matmulKernel().compileTo(
        kernels::matmulSpecialization(s, plan, "sm_90a"), Stage::PTX);
    // SwiGLU's second B tile (columns N + j of a 2 x N wide B) is a TMA copy too, so its loop
    // has a producer as well.
    EXPECT_EQ(count(a.ptx, "setmaxnreg.dec.sync.aligned.u32 24;"), 1u);
    EXPECT_EQ(count(a.gir, "compute_groups = 2"), act == kernels::Activation::None ? 1u : 0u)
        << a.gir; // ping-pong, but for SwiGLU
    tritium::testing::expectAssembles(a, "sm_90a");
    // B's map spans its 2 x N columns (N is argument 12) for SwiGLU.
    EXPECT_NE(a.gir.find(act == kernels::Activation::None ? " a2 dims=a12,a13 "
                                                            : " a2 dims=a12*2,a13 "),
              std::string::npos)
        << a.gir;
    EXPECT_EQ(count(a.ptx, "cp.async.bulk.tensor.2d.shared::cluster") +
                  count(a.ptx, "cp.async.bulk.tensor.4d.shared::cluster"),
              act == kernels::Activation::None ? 3u : 5u)
        << a.ptx;
  }
}
