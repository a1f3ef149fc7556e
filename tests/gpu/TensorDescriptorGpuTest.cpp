// Tensor descriptors on the GPU (tests/TensorDescriptorCases.h) against double-precision
// references: on Hopper the matmul's tiles as TMA copies (the a tile as a four-dimensional box,
// b in panels or as trans() of [N, K] tiles), a tensor whose row count is no multiple of 16 (a
// then cp.async beside b's TMA in one ring), strides TMA refuses (every tile cp.async), and
// tiles read past both ends of the tensor, which TMA fills with zeros. Skips, saying so,
// without a GPU; the interpreter twins run everywhere.
#include "TensorDescriptorCases.h"
#include "GpuTestSupport.h"

#include "runtime/Device.h"
#include "runtime/Memory.h"

using namespace tritium;
using namespace tritium::testing::descriptors;
using ir::ScalarKind;
using rt::DeviceBuffer;

namespace {

class TensorDescriptorGpuTest : public tritium::testing::GpuStreamTest {};

bool usesTma(const std::string &ptx) { return ptx.find("cp.async.bulk.tensor") != std::string::npos; }

#define SKIP_WITHOUT_HOPPER()                                                                     \
  SKIP_WITHOUT_GPU();                                                                             \
  if (rt::Context::current().props().arch() != "sm_90")                                          \
  GTEST_SKIP() << "TMA needs an sm_90 GPU, this one is " << rt::Context::current().props().arch()

TEST_F(TensorDescriptorGpuTest, MatmulTilesAreTmaCopies) {
  SKIP_WITHOUT_HOPPER();
  for (ScalarKind in : {ScalarKind::BF16, ScalarKind::F16}) {
    std::string ptx = checkDescriptorMatmul<DeviceBuffer>(
        stream().get(), sync,
        {.in = in, .out = in, .M = 256, .N = 512, .K = 1024, .BM = 128, .BN = 256, .BK = 64,
         .warps = 8, .stages = 4, .arch = "sm_90a"});
    EXPECT_TRUE(usesTma(ptx));
  }
  // Edges: M, N and K no multiples of the tiles (M a multiple of 16 keeps a's box; rows of
  // multiples of 16 bytes keep TMA).
  EXPECT_TRUE(usesTma(checkDescriptorMatmul<DeviceBuffer>(
      stream().get(), sync,
      {.M = 208, .N = 336, .K = 200 + 8, .BM = 128, .BN = 128, .BK = 64, .warps = 4,
       .stages = 3, .arch = "sm_90a"})));
  // b as trans() of [N, K] tiles.
  EXPECT_TRUE(usesTma(checkDescriptorMatmul<DeviceBuffer>(
      stream().get(), sync,
      {.M = 256, .N = 320, .K = 512, .BM = 128, .BN = 256, .BK = 64, .warps = 8, .stages = 4,
       .bColumns = true, .arch = "sm_90a"})));
}

// K tiles of 32 and 16 (rows of 64 and 32 bytes): TMA's SWIZZLE_64B and SWIZZLE_32B boxes,
// read by wgmma through descriptors of the same swizzle; edges masked, b either way round.
TEST_F(TensorDescriptorGpuTest, ShortRowTilesAreTmaCopies) {
  SKIP_WITHOUT_HOPPER();
  for (int bk : {32, 16})
    for (bool bColumns : {false, true})
      EXPECT_TRUE(usesTma(checkDescriptorMatmul<DeviceBuffer>(
          stream().get(), sync,
          {.M = 208, .N = 320, .K = 300 + 4, .BM = 128, .BN = 128, .BK = bk, .warps = 4,
           .stages = 4, .bColumns = bColumns, .arch = "sm_90a"})));
}

TEST_F(TensorDescriptorGpuTest, MatmulFallsBackWhereTmaCannot) {
  SKIP_WITHOUT_GPU();
  std::string arch = rt::Context::current().props().arch() == "sm_90" ? "sm_90a" : "";
  // 300 rows: a's rows cannot be split into groups of 16, so a stays cp.async while b is TMA.
  checkDescriptorMatmul<DeviceBuffer>(stream().get(), sync,
                                      {.M = 300, .N = 256, .K = 256, .BM = 128, .BN = 128,
                                       .BK = 64, .warps = 8, .stages = 3, .arch = arch});
  // Leading dimensions of odd lengths: no TMA, every tile cp.async.
  EXPECT_FALSE(usesTma(checkDescriptorMatmul<DeviceBuffer>(
      stream().get(), sync,
      {.in = ScalarKind::F16, .M = 96, .N = 80, .K = 72, .BM = 64, .BN = 64, .BK = 64,
       .stages = 3, .arch = arch, .extraLead = 3})));
}

// Tiles read in registers (no dot): a TMA box of the tile, unswizzled.
TEST_F(TensorDescriptorGpuTest, RowMajorTilesAreTmaCopies) {
  SKIP_WITHOUT_HOPPER();
  EXPECT_TRUE(usesTma(checkDescriptorShift<DeviceBuffer>(stream().get(), sync, ScalarKind::F32,
                                                         200, 96, 112, 0, 0, 32, 32, 3, 4,
                                                         "sm_90a")));
}

// Offsets before the tensor's start, 16-byte aligned: TMA fills the rows and columns outside
// with zeros.
TEST_F(TensorDescriptorGpuTest, RowMajorTilesBeforeTheStart) {
  SKIP_WITHOUT_HOPPER();
  EXPECT_TRUE(usesTma(checkDescriptorShift<DeviceBuffer>(stream().get(), sync, ScalarKind::F32,
                                                         200, 96, 112, -16, -32, 32, 32, 3, 4,
                                                         "sm_90a")));
}

TEST_F(TensorDescriptorGpuTest, RowMajorTilesOnSm90) {
  SKIP_WITHOUT_HOPPER();
  checkDescriptorShift<DeviceBuffer>(stream().get(), sync, ScalarKind::F32, 200, 96, 112, 0, 0,
                                     32, 32, 3, 4, "sm_90");
}

// Offsets before the tensor's start and past its end, of any alignment: plain masked loads.
TEST_F(TensorDescriptorGpuTest, TilesOutsideTheTensorReadZeros) {
  SKIP_WITHOUT_GPU();
  std::string arch = rt::Context::current().props().arch() == "sm_90" ? "sm_90a" : "";
  checkDescriptorShift<DeviceBuffer>(stream().get(), sync, ScalarKind::F32, 200, 96, 112, -3, 5,
                                     32, 32, 3, 4, arch);
}

TEST_F(TensorDescriptorGpuTest, SixteenBitTilesOutsideTheTensorReadZeros) {
  SKIP_WITHOUT_GPU();
  std::string arch = rt::Context::current().props().arch() == "sm_90" ? "sm_90a" : "";
  checkDescriptorShift<DeviceBuffer>(stream().get(), sync, ScalarKind::BF16, 100, 256, 256, 40,
                                     -70, 16, 128, 2, 4, arch);
}

// The interpreter twin's atomics on more programs than SMs, so that tiles of programs running
// at once overlap.
TEST_F(TensorDescriptorGpuTest, AtomicsCombineOverlappingTiles) {
  SKIP_WITHOUT_GPU();
  std::string arch = rt::Context::current().props().arch() == "sm_90" ? "sm_90a" : "";
  checkDescriptorAtomic<DeviceBuffer>(stream().get(), sync, 0, ScalarKind::F32, 600, 4000, 90,
                                      96, -5, -3, 16, 64, arch);
  // On Hopper, TMA reductions where the column offset and the width lie on 16 bytes (88
  // columns of 4 bytes), element atomics elsewhere; at a negative row offset the threads
  // combine the staged tile themselves.
  for (auto [dr, dc] : {std::pair{3, 8}, std::pair{-5, 16}})
    checkDescriptorAtomic<DeviceBuffer>(stream().get(), sync, 0, ScalarKind::F32, 600, 4000, 88,
                                        96, dr, dc, 16, 64, arch);
  // A product's accumulator on two warp groups ([128, 64] on 8 warps, wgmma on Hopper), added
  // by element atomics (column offset 3 of 301 columns) and by TMA reductions (8 of 300).
  for (auto [C, dc] : {std::pair{301, 3}, std::pair{300, 8}})
    checkDescriptorAtomic<DeviceBuffer>(stream().get(), sync, 0, ScalarKind::F32, 60, 4000, C,
                                        304, 5, dc, 128, 64, arch, 8, true);
  for (int op = 0; op < 6; ++op) {
    checkDescriptorAtomic<DeviceBuffer>(stream().get(), sync, op, ScalarKind::I32, 500, 3000, 70,
                                        72, 3, 7, 16, 64, arch);
    checkDescriptorAtomic<DeviceBuffer>(stream().get(), sync, op, ScalarKind::I32, 500, 3000, 72,
                                        72, op % 2 ? -3 : 3, 8, 16, 64, arch);
  }
}

// Stores of tiles side by side, some before the tensor's start and past its end. On Hopper,
// TMA stores where the column offset and the width lie on 16 bytes (offsets 8 and 48 of 88
// columns of 4 bytes; 48 reaches past the last column), which write nothing outside the
// tensor; at a negative row offset the threads store the staged tile themselves; element
// stores at the other offsets (-3, 7) and widths (90).
TEST_F(TensorDescriptorGpuTest, StoresClipAtTheTensorsEdges) {
  SKIP_WITHOUT_GPU();
  std::string arch = rt::Context::current().props().arch() == "sm_90" ? "sm_90a" : "";
  for (auto [dr, dc] : {std::pair{-5, -3}, std::pair{3, 8}, std::pair{0, 7}, std::pair{-5, 48},
                        std::pair{0, 48}})
    checkDescriptorAtomic<DeviceBuffer>(stream().get(), sync, 6, ScalarKind::F32, 300, 4000, 88,
                                        96, dr, dc, 16, 64, arch);
  checkDescriptorAtomic<DeviceBuffer>(stream().get(), sync, 6, ScalarKind::F32, 300, 4000, 90,
                                      96, 3, 8, 16, 64, arch);
  for (int dr : {3, -3})
    checkDescriptorAtomic<DeviceBuffer>(stream().get(), sync, 6, ScalarKind::I32, 200, 3000, 72,
                                        72, dr, 4, 32, 32, arch);
}

// A tile stored through a descriptor (a TMA store) and published by an acq_rel atomic is what
// the programs that acquire it read: every program copies its neighbour's tile after all of
// them have counted themselves done (publishedTileKernel). Fresh poison each run; 8 programs of
// 4 warps, all resident at once; several runs, as a race shows only now and then.
TEST_F(TensorDescriptorGpuTest, AReleasePublishesATmaStore) {
  SKIP_WITHOUT_HOPPER();
  const int P = 8, BR = 32, BC = 64;
  for (int run = 0; run < 20; ++run) {
    DeviceBuffer out(size_t(P * BR * BC) * 4), seen(size_t(P * BR * BC) * 4), counter(4);
    out.fill32(0x7fc00001u);
    seen.fill32(0x7fc00001u);
    counter.fill32(0);
    Specialization spec{.signature = {"*fp32", "*fp32", "*i32", "i32"},
                        .constexprs = {BR, BC},
                        .numWarps = 4,
                        .arch = "sm_90a"};
    std::initializer_list<KernelArg> args = {out, seen, counter, int32_t(P)};
    CompiledKernel &c = publishedTileKernelOf().compile(spec.specializedFor(args));
    c.launch(P, stream().get(), args);
    sync();
    ASSERT_NE(c.artifacts().ptx.find("cp.async.bulk.tensor"), std::string::npos);
    std::vector<float> got(size_t(P * BR * BC));
    seen.download(got.data(), got.size() * 4);
    size_t bad = 0;
    for (int p = 0; p < P; ++p)
      for (int r = 0; r < BR; ++r)
        for (int col = 0; col < BC; ++col) {
          float want = float((((p + 1) % P) * BR + r) * BC + col) + 0.5f;
          float g = got[size_t((p * BR + r) * BC + col)];
          if (g != want && bad++ < 3)
            ADD_FAILURE() << "run " << run << ": program " << p << " read [" << r << ", " << col
                          << "] of its neighbour's tile as " << g << ", not " << want;
        }
    ASSERT_EQ(bad, 0u) << "run " << run;
  }
}

} // namespace
