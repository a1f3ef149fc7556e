// What a tensor descriptor's tiles compile to, and that ptxas takes it: on sm_90a the tiles a
// pipelined loop brings in are TMA copies (cp.async.bulk.tensor, one thread, an mbarrier per
// stage) when the base is 16-byte aligned and the strides are multiples of 16 bytes, the
// wgmma's a as a four-dimensional box (its rows permuted within 16); other targets and
// arguments TMA cannot take keep cp.async, with the same results (the interpreter and GPU
// tests check those). A tile stored or added through a descriptor is a TMA store or reduction
// under the same conditions.
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
// ($TRITIUM_DUMP_DIR/<kernel>.lowered.ll) no address is computed from a or b, nor from c
// but for the tile's pieces at a negative offset (C's tile is a TMA store).
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
  // C's only addresses: the 16 pieces of 16 bytes a thread writes where the tile's offset is
  // negative and TMA refuses it (LowerTensorStore.cpp).
  EXPECT_EQ(count(ir, "getelementptr bfloat, ptr addrspace(1) %c,"), 16u);
}

// C's tile (128 x 256 bf16) leaves by TMA: the accumulator's fragments go to a staging buffer
// in four swizzled panels of 64 columns, straight from the accumulator's layout (no
// convert_layout), fenced for the async proxy; one thread issues four stores and commits them,
// and waits for their reads before the kernel's later barriers and for their writes at its
// end. C as the descriptor describes it: a 16-byte aligned base, rows and width a multiple of
// 16 bytes.
TEST_F(TensorDescriptorPtxTest, HopperEpilogueIsATmaStore) {
  Artifacts a = compileMatmul("sm_90a", true);
  EXPECT_NE(a.tensorMaps.find("bf16 a0 dims=a4,a3 strides=a8*2 box=64,128 swizzle=128"),
            std::string::npos)
      << a.tensorMaps;
  EXPECT_NE(a.gir.find("tensor_store"), std::string::npos) << a.gir;
  EXPECT_EQ(a.gir.find("convert_layout"), std::string::npos) << a.gir;
  EXPECT_EQ(count(a.ptx, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"), 4u) << a.ptx;
  EXPECT_EQ(count(a.ptx, "cp.async.bulk.commit_group;"), 1u);
  EXPECT_GE(count(a.ptx, "cp.async.bulk.wait_group.read 0;"), 1u);
  EXPECT_EQ(count(a.ptx, "cp.async.bulk.wait_group 0;"), 1u);
  // The threads write the staged tile themselves only where its offset is negative: 16 pieces
  // of 16 bytes each.
  EXPECT_EQ(count(a.ptx, "st.global"), 16u) << a.ptx;
  EXPECT_EQ(count(a.ptx, "st.global.v4.b32"), 16u) << a.ptx;
  // 128 x 256 elements on 256 threads, 128 each in the accumulator's fragments: stmatrix,
  // four 8 x 8 matrices (a register each) an instruction, where 4-byte stores took 64.
  EXPECT_EQ(count(a.ptx, "stmatrix.sync.aligned.m8n8.x4.shared.b16"), 16u) << a.ptx;
  EXPECT_EQ(count(a.ptx, "st.shared.b32"), 0u) << a.ptx;
  expectAssembles(a, "sm_90a");

  // C's rows not known to be a multiple of 16 bytes: element stores, as before.
  Specialization spec{.signature = {"*bf16:16", "*bf16:16", "*bf16:16", "i32:16", "i32:16",
                                    "i32:16", "i32:16", "i32:16", "i32"},
                      .constexprs = {128, 256, 64, 4, 0},
                      .numWarps = 8,
                      .arch = "sm_90a"};
  Artifacts odd = descriptorMatmulKernelOf().compileTo(spec, Stage::PTX);
  EXPECT_EQ(odd.gir.find("tensor_store"), std::string::npos);
  EXPECT_EQ(count(odd.ptx, "cp.async.bulk.tensor.2d.global"), 0u);
  EXPECT_NE(odd.ptx.find("st.global"), std::string::npos);
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

// A descriptor's atomics are TMA reductions on sm_90a where TMA has the reduction for the
// type (cp.reduce.async.bulk.tensor: 32 x 64 four-byte elements, two panels of 32 columns) and
// the column offset and the width are known to lie on 16 bytes; element atomics otherwise (relaxed, as TMA's reductions are): one atom per element of a thread's part of
// the tile.
TEST_F(TensorDescriptorPtxTest, AtomicsAreTmaReductionsWhereTmaHasThem) {
  auto k = kernel("descriptor_atomic", descriptorAtomicKernel,
                  {"out", "in", "R", "C", "ld", "dr", "dc", "BR", "BC", "OP", "PRODUCT"});
  struct Case {
    int op;
    const char *dtype, *arch, *instruction;
    bool tma;
    const char *columnOffset = "i32:16";
  };
  for (const Case &c :
       {Case{0, "fp32", "sm_90a", "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile", true},
        Case{2, "i32", "sm_90a", "cp.reduce.async.bulk.tensor.2d.global.shared::cta.max.tile", true},
        Case{5, "i32", "sm_90a", "cp.reduce.async.bulk.tensor.2d.global.shared::cta.xor.tile", true},
        Case{5, "i32", "sm_90a", "atom.relaxed.gpu.global.xor.b32", false, "i32"},
        Case{0, "fp32", "sm_90a", "atom.relaxed.gpu.global.add.f32", false, "i32"},
        Case{2, "fp32", "sm_90a", "atom.relaxed.gpu.global.max.s32", false}, // no f32 max in TMA
        Case{0, "fp32", "sm_80", "atom.relaxed.gpu.global.add.f32", false},
        Case{5, "i32", "sm_80", "atom.relaxed.gpu.global.xor.b32", false}}) {
    SCOPED_TRACE(std::string(c.instruction) + " " + c.arch + " dc " + c.columnOffset);
    std::string t = std::string("*") + c.dtype + ":16";
    Specialization spec{.signature = {t, t, "i32", "i32:16", "i32:16", "i32", c.columnOffset},
                        .constexprs = {32, 64, c.op, 0},
                        .numWarps = 4,
                        .arch = c.arch};
    Artifacts a = k.compileTo(spec, Stage::PTX);
    if (c.tma) {
      EXPECT_EQ(count(a.ptx, c.instruction), 2u) << a.ptx;
      EXPECT_EQ(count(a.ptx, "atom."), 0u);
      EXPECT_EQ(a.tensorMaps, std::string(c.dtype == std::string("fp32") ? "fp32" : "i32") +
                                  " a0 dims=a3,a2 strides=a4*4 box=32,32 swizzle=128");
    } else {
      // 32 x 64 elements on 128 threads: 16 each (f32 max as two integer atoms each).
      EXPECT_GE(count(a.ptx, c.instruction), 16u);
      EXPECT_EQ(count(a.ptx, "cp.reduce"), 0u);
      EXPECT_EQ(a.tensorMaps, "");
    }
    expectAssembles(a, c.arch);
  }
}

// An atomic that releases (acq_rel, the default) after a TMA store: thread 0, which issued the
// store, first waits for its writes (cp.async.bulk.wait_group 0, not .read) and fences them
// for the generic proxy, so that a program that acquires the atomic's value reads the tile.
TEST_F(TensorDescriptorPtxTest, AReleaseWaitsForTheTmaStoresBeforeIt) {
  Specialization spec{.signature = {"*fp32:16", "*fp32:16", "*i32:16", "i32"},
                      .constexprs = {32, 64},
                      .numWarps = 4,
                      .arch = "sm_90a"};
  Artifacts a = publishedTileKernelOf().compileTo(spec, Stage::PTX);
  size_t store = a.ptx.find("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group");
  size_t atom = a.ptx.find("atom.acq_rel.gpu.global.add");
  ASSERT_NE(store, std::string::npos) << a.ptx;
  ASSERT_NE(atom, std::string::npos) << a.ptx;
  size_t wait = a.ptx.find("cp.async.bulk.wait_group 0;", store);
  size_t fence = a.ptx.find("fence.proxy.async.global;", store);
  EXPECT_LT(wait, atom) << a.ptx;
  EXPECT_LT(fence, atom) << a.ptx;
  EXPECT_LT(wait, fence);
  expectAssembles(a, "sm_90a");
}
