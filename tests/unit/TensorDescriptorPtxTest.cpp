// What a tensor descriptor's tiles compile to, and that ptxas takes it: on sm_90a the tiles a
// pipelined loop brings in are TMA copies (cp.async.bulk.tensor, one thread, an mbarrier per
// stage) when the base is 16-byte aligned and the strides are multiples of 16 bytes, the
// wgmma's a as a four-dimensional box (its rows permuted within 16); other targets and
// arguments TMA cannot take keep cp.async, with the same results (the interpreter and GPU
// tests check those).
#include "TensorDescriptorCases.h"
#include "PtxChecks.h"

#include <fstream>
#include <iterator>

using namespace tritium;
using namespace tritium::testing::descriptors;
using ir::ScalarKind;
using tritium::testing::count;
using tritium::testing::expectAssembles;

namespace {

class TensorDescriptorPtxTest : public tritium::testing::CompilerTest {};

// The matmul specialized as a launch with aligned pointers finds it: every pointer 16-byte
// aligned, the integers given as `divisible` says.
Artifacts compileMatmul(const std::string &arch, bool divisible, int bColumns = 0,
                        int BM = 128, int BN = 256, int warps = 8, int stages = 4, int BK = 64) {
  std::string i = divisible ? "i32:16" : "i32";
  Specialization spec{.signature = {"*bf16:16", "*bf16:16", "*bf16:16", i, i, i, i, i, i},
                      .constexprs = {BM, BN, BK, stages, bColumns},
                      .numWarps = warps,
                      .arch = arch};
  return descriptorMatmulKernelOf().compileTo(spec, Stage::PTX);
}

TEST_F(TensorDescriptorPtxTest, HopperTilesAreTmaCopies) {
  Artifacts a = compileMatmul("sm_90a", true);
  // a: (64 columns, 8 rows 2 apart, 2 rows, 128 / 16 groups of 16) with SWIZZLE_128B; b: four
  // panels of 64 columns.
  EXPECT_NE(a.tensorMaps.find("bf16 a1 dims=a5,8,2,a3/16 strides=a6*4,a6*2,a6*32 "
                              "box=64,8,2,8 swizzle=128"),
            std::string::npos)
      << a.tensorMaps;
  EXPECT_NE(a.tensorMaps.find("bf16 a2 dims=a4,a5 strides=a7*2 box=64,64 swizzle=128"),
            std::string::npos)
      << a.tensorMaps;
  // Issued for two iterations ahead before the loop (the wgmma stays in flight: one stage
  // less of lookahead) and once in it.
  EXPECT_NE(a.gir.find("wgmma_in_flight = 1"), std::string::npos) << a.gir;
  EXPECT_EQ(count(a.ptx, "cp.async.bulk.tensor.4d.shared::cluster.global.tile"), 3u) << a.ptx;
  EXPECT_EQ(count(a.ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.tile"), 3u * 4) << a.ptx;
  EXPECT_NE(a.ptx.find(".param .align 64 .b8 descriptor_matmul_param_9[128]"), std::string::npos)
      << a.ptx;
  EXPECT_NE(a.ptx.find("mbarrier.arrive.expect_tx"), std::string::npos);
  EXPECT_EQ(a.ptx.find("cp.async.cg"), std::string::npos) << "no tile left to cp.async";
  EXPECT_EQ(count(a.ptx, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"), 4u);
  expectAssembles(a, "sm_90a");
}

// K tiles of 32 and 16 bf16 (rows of 64 and 32 bytes): TMA boxes of whole rows with
// SWIZZLE_64B and SWIZZLE_32B, read by wgmma through descriptors of the same swizzle (mode 2
// or 3 in bits 62-63; 8-row groups 512 or 256 bytes apart); b [K, N] keeps its 128-byte
// panels, b as trans() of [N, K] tiles has short rows too.
TEST_F(TensorDescriptorPtxTest, ShortRowTilesAreTmaCopiesWithNarrowSwizzles) {
  for (int BK : {32, 16})
    for (int bColumns : {0, 1}) {
      SCOPED_TRACE("BK " + std::to_string(BK) + (bColumns ? " b^T" : ""));
      Artifacts a = compileMatmul("sm_90a", true, bColumns, 128, 128, 4, 4, BK);
      std::string span = std::to_string(BK * 2);
      EXPECT_NE(a.tensorMaps.find("box=" + std::to_string(BK) + ",8,2,8 swizzle=" + span),
                std::string::npos)
          << a.tensorMaps;
      EXPECT_NE(a.tensorMaps.find(bColumns ? "box=" + std::to_string(BK) + ",128 swizzle=" + span
                                           : "box=64," + std::to_string(BK) + " swizzle=128"),
                std::string::npos)
          << a.tensorMaps;
      EXPECT_EQ(a.ptx.find("cp.async.cg"), std::string::npos) << "no tile left to cp.async";
      EXPECT_EQ(count(a.ptx, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"),
                size_t(BK / 16) * 2);
      // a's descriptor: the swizzle mode and the 8-row stride (>> 4) in its upper word.
      uint64_t mode = BK == 32 ? 2 : 3, stride = 8 * uint64_t(BK) * 2 / 16;
      // (PTX prints the 64-bit constant signed.)
      std::string fixed = std::to_string(int64_t((mode << 62) | (stride << 32) | (1ull << 16)));
      EXPECT_NE(a.ptx.find(fixed), std::string::npos) << fixed << "\n" << a.ptx;
      expectAssembles(a, "sm_90a");
    }
}

// The elements' addresses and masks of a tile that TMA copies are not lowered at all (LLVM
// would delete them, after its passes had worked through them): in the lowering's own IR
// ($TRITIUM_DUMP_DIR/<kernel>.lowered.ll) no address is computed from a or b, while C's
// epilogue stores still address each of a thread's 128 elements.
TEST_F(TensorDescriptorPtxTest, TmaTilesLowerNoElementAddresses) {
  tritium::testing::ScopedTempDir dumps("tritium-dumps");
  ::setenv("TRITIUM_DUMP_DIR", dumps.path().c_str(), 1);
  Artifacts a = compileMatmul("sm_90a", true);
  ::unsetenv("TRITIUM_DUMP_DIR");
  ASSERT_NE(a.tensorMaps, "");
  std::ifstream in(dumps.path() / "descriptor_matmul.lowered.ll");
  std::string ir((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(ir.empty());
  EXPECT_EQ(count(ir, "getelementptr bfloat, ptr addrspace(1) %a,"), 0u);
  EXPECT_EQ(count(ir, "getelementptr bfloat, ptr addrspace(1) %b,"), 0u);
  EXPECT_EQ(count(ir, "getelementptr bfloat, ptr addrspace(1) %c,"), 128u);
}

TEST_F(TensorDescriptorPtxTest, TransposedBIsOneTmaBox) {
  Artifacts a = compileMatmul("sm_90a", true, 1);
  EXPECT_NE(a.tensorMaps.find("bf16 a2 dims=a5,a4 strides=a7*2 box=64,256 swizzle=128"),
            std::string::npos)
      << a.tensorMaps;
  EXPECT_EQ(count(a.ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.tile"), 3u) << a.ptx;
  expectAssembles(a, "sm_90a");
}

TEST_F(TensorDescriptorPtxTest, OtherTargetsAndArgumentsKeepCpAsync) {
  // sm_80: the tiles are 16-byte cp.async copies of a ring.
  Artifacts ampere = compileMatmul("sm_80", true, 0, 64, 64, 4, 3);
  EXPECT_TRUE(ampere.tensorMaps.empty()) << ampere.tensorMaps;
  EXPECT_EQ(ampere.ptx.find("cp.async.bulk.tensor"), std::string::npos);
  EXPECT_NE(ampere.ptx.find("cp.async.cg.shared.global"), std::string::npos) << ampere.gir;
  // Strides not known to be multiples of 16 bytes: plain loads, no TMA.
  Artifacts odd = compileMatmul("sm_90a", false);
  EXPECT_TRUE(odd.tensorMaps.empty()) << odd.tensorMaps;
  EXPECT_EQ(odd.ptx.find("cp.async.bulk.tensor"), std::string::npos);
}

} // namespace

// A descriptor's atomics are element atomics on every target (relaxed, as Triton's TMA
// reductions are): one atom per element of a thread's part of the tile, none issued by TMA.
TEST_F(TensorDescriptorPtxTest, AtomicsAreRelaxedElementAtomics) {
  auto k = kernel("descriptor_atomic", descriptorAtomicKernel,
                  {"out", "in", "R", "C", "ld", "dr", "dc", "BR", "BC", "OP"});
  for (auto [op, dtype, instruction] :
       {std::tuple{0, "fp32", "atom.relaxed.gpu.global.add.f32"},
        std::tuple{2, "i32", "atom.relaxed.gpu.global.max.s32"},
        std::tuple{5, "i32", "atom.relaxed.gpu.global.xor.b32"}}) {
    SCOPED_TRACE(instruction);
    std::string t = std::string("*") + dtype + ":16";
    Specialization spec{.signature = {t, t, "i32", "i32", "i32:16", "i32", "i32"},
                        .constexprs = {32, 64, op},
                        .numWarps = 4,
                        .arch = "sm_90a"};
    Artifacts a = k.compileTo(spec, Stage::PTX);
    // 32 x 64 elements on 128 threads: 16 each.
    EXPECT_EQ(count(a.ptx, instruction), 16u);
    EXPECT_EQ(count(a.ptx, "cp.reduce"), 0u);
    EXPECT_EQ(a.tensorMaps, "");
    expectAssembles(a, "sm_90a");
  }
}
