// Blocks of rank 2 and 3 on the GPU against double-precision references (tests/BlockCases.h):
// 2-D tiles with row and column masks, reductions along every axis under several warp counts,
// trans() and reshape() through shared memory, broadcasting across ranks and 3-D blocks.
#include "BlockCases.h"
#include "LanguageCases.h"
#include "GpuTestSupport.h"

#include "interpreter/Interpreter.h"
#include "runtime/Memory.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include "runtime/Memory.h"

using namespace tritium;
using namespace tritium::testing::blocks;
using rt::DeviceBuffer;

namespace {

class BlocksGpuTest : public tritium::testing::GpuStreamTest {};

TEST_F(BlocksGpuTest, TileAffineWithRowAndColumnMasks) {
  SKIP_WITHOUT_GPU();
  for (int warps : {1, 4, 8}) {
    checkTileAffine<DeviceBuffer>(stream().get(), sync, 37, 45, 16, 32, warps);
    checkTileAffine<DeviceBuffer>(stream().get(), sync, 1000, 1000, 64, 64, warps);
    checkTileAffine<DeviceBuffer>(stream().get(), sync, 5, 300, 2, 128, warps);
  }
}

TEST_F(BlocksGpuTest, ReductionsAlongEachAxis) {
  SKIP_WITHOUT_GPU();
  for (int warps : {1, 2, 4, 8}) {
    checkTileReductions<DeviceBuffer>(stream().get(), sync, 13, 29, 16, 32, warps);
    checkTileReductions<DeviceBuffer>(stream().get(), sync, 64, 8, 64, 8, warps);
    checkTileReductions<DeviceBuffer>(stream().get(), sync, 3, 100, 4, 128, warps);
    checkTileReductions<DeviceBuffer>(stream().get(), sync, 100, 3, 128, 4, warps);
    checkTileReductions<DeviceBuffer>(stream().get(), sync, 64, 64, 64, 64, warps);
  }
  // 256 elements per thread, the most a block may give one.
  checkTileReductions<DeviceBuffer>(stream().get(), sync, 250, 255, 256, 256, 8);
}

TEST_F(BlocksGpuTest, Transpose) {
  SKIP_WITHOUT_GPU();
  for (int warps : {1, 4}) {
    checkTranspose<DeviceBuffer>(stream().get(), sync, 30, 50, 32, 64, warps);
    checkTranspose<DeviceBuffer>(stream().get(), sync, 8, 8, 8, 8, warps);
    checkTranspose<DeviceBuffer>(stream().get(), sync, 128, 64, 128, 64, warps);
  }
}

TEST_F(BlocksGpuTest, OuterProductBroadcastsAcrossRanks) {
  SKIP_WITHOUT_GPU();
  for (int warps : {1, 4})
    checkOuterProduct<DeviceBuffer>(stream().get(), sync, 20, 70, 32, 128, warps);
}

TEST_F(BlocksGpuTest, ReshapeThenReduce) {
  SKIP_WITHOUT_GPU();
  checkReshape<DeviceBuffer>(stream().get(), sync, 8, 64, 2);
  checkReshape<DeviceBuffer>(stream().get(), sync, 16, 256, 4);
}

TEST_F(BlocksGpuTest, ThreeDimensionalSums) {
  SKIP_WITHOUT_GPU();
  for (int warps : {1, 4}) {
    checkCubeSums<DeviceBuffer>(stream().get(), sync, 4, 8, 16, warps);
    checkCubeSums<DeviceBuffer>(stream().get(), sync, 2, 32, 4, warps);
  }
}

TEST_F(BlocksGpuTest, MathFunctions) {
  SKIP_WITHOUT_GPU();
  for (int f = 0; f <= int(ir::MathFn::Copysign); ++f) { // (the last of MathFunctions.def)
    SCOPED_TRACE(ir::mathName(ir::MathFn(f)));
    checkMathFunction<DeviceBuffer>(stream().get(), sync, ir::MathFn(f),
                                    mathTolerance(ir::MathFn(f)));
  }
}

TEST_F(BlocksGpuTest, IntegerOps) {
  SKIP_WITHOUT_GPU();
  for (int op = 0; op < kIntOps; ++op)
    for (bool u : {false, true})
      checkIntOp<DeviceBuffer>(stream().get(), sync, IntOp(op), u);
}

TEST_F(BlocksGpuTest, Fp8CastsAndBitcast) {
  SKIP_WITHOUT_GPU();
  checkFp8<DeviceBuffer>(stream().get(), sync, ir::ScalarKind::F8E4M3);
  checkFp8<DeviceBuffer>(stream().get(), sync, ir::ScalarKind::F8E5M2);
}

TEST_F(BlocksGpuTest, LoopsBranchesAndWhileCarryVariables) {
  SKIP_WITHOUT_GPU();
  for (int mode : {0, 1})
    for (int64_t n : {1, 300, 1000})
      checkControlFlow<DeviceBuffer>(stream().get(), sync, n, mode);
  for (int64_t n : {1, 7, 30})
    checkShiftedCarries<DeviceBuffer>(stream().get(), sync, n);
}

TEST_F(BlocksGpuTest, AtomicsUnderContention) {
  SKIP_WITHOUT_GPU();
  for (int op = 0; op < 6; ++op)
    for (int warps : {1, 4})
      checkAtomics<DeviceBuffer>(stream().get(), sync, op, warps);
}

TEST_F(BlocksGpuTest, ArgmaxArgminXorSumAndUserReduce) {
  SKIP_WITHOUT_GPU();
  for (int warps : {1, 4, 8}) {
    checkArgReductions<DeviceBuffer>(stream().get(), sync, 16, 64, warps);
    checkArgReductions<DeviceBuffer>(stream().get(), sync, 64, 8, warps);
    checkArgReductions<DeviceBuffer>(stream().get(), sync, 4, 4, warps);
  }
}

TEST_F(BlocksGpuTest, CumsumCumprodAndAssociativeScan) {
  SKIP_WITHOUT_GPU();
  for (int warps : {1, 4}) {
    checkScans<DeviceBuffer>(stream().get(), sync, 8, 64, warps);
    checkScans<DeviceBuffer>(stream().get(), sync, 64, 8, warps);
    checkScans<DeviceBuffer>(stream().get(), sync, 2, 512, warps);
  }
}

TEST_F(BlocksGpuTest, ThreeDimensionalGrids) {
  SKIP_WITHOUT_GPU();
  checkGrid3<DeviceBuffer>(stream().get(), sync, {3, 4, 5});
  checkGrid3<DeviceBuffer>(stream().get(), sync, {7, 2});
}

TEST_F(BlocksGpuTest, PhiloxKnownAnswersAndRandomNumbers) {
  SKIP_WITHOUT_GPU();
  checkPhiloxKnownAnswers<DeviceBuffer>(stream().get(), sync);
  for (bool wide : {false, true})
    for (int32_t seed : {0, 12345, -7})
      checkRandomProperties(runRandomNumbers<DeviceBuffer>(stream().get(), sync, seed, wide), seed, wide);
}

// The GPU's random numbers against the interpreter's: randint and rand bit for bit, randn
// within 4 ulp.
TEST_F(BlocksGpuTest, RandomNumbersMatchTheInterpreter) {
  SKIP_WITHOUT_GPU();
  for (bool wide : {false, true})
    for (int32_t seed : {0, 12345, -7}) {
      RandomOutputs gpu = runRandomNumbers<DeviceBuffer>(stream().get(), sync, seed, wide);
      setInterpret(true);
      RandomOutputs ref = runRandomNumbers<interpreter::HostBuffer>(nullptr, [] {}, seed, wide);
      resetInterpret();
      EXPECT_EQ(gpu.ints, ref.ints) << "seed " << seed << (wide ? " (64-bit offsets)" : "");
      for (size_t i = 0; i < gpu.uniforms.size(); ++i) {
        ASSERT_EQ(tritium::testing::bitsOf(gpu.uniforms[i]), tritium::testing::bitsOf(ref.uniforms[i])) << "rand at " << i;
        ASSERT_NEAR(gpu.normals[i], ref.normals[i], 4e-6 * std::max(1.0f, std::fabs(ref.normals[i])))
            << "randn at " << i;
      }
    }
}

// Triton's own numbers (tests/data/triton_random.csv, from tools/triton_random_reference.py
// on the H200): randint4x, randint and rand bit for bit, randn within 4e-6 (libdevice's log and
// cos against Triton's).
TEST_F(BlocksGpuTest, TritonRandomReference) {
  SKIP_WITHOUT_GPU();
  checkTritonRandomCsv<DeviceBuffer>(stream().get(), sync, 4e-6f);
}

TEST_F(BlocksGpuTest, ReadmeNormalizeRows) {
  SKIP_WITHOUT_GPU();
  checkNormalizeRows<DeviceBuffer>(stream().get(), sync, 100, 200, 4, 256, 4);
  checkNormalizeRows<DeviceBuffer>(stream().get(), sync, 37, 1000, 2, 1024, 8);
}

// Cache hints change no result: every cache operator and eviction priority on loads and
// stores, and pipelined loops whose cp.async copies carry .ca and an L2 policy.
TEST_F(BlocksGpuTest, CacheHintsChangeNoResult) {
  SKIP_WITHOUT_GPU();
  using namespace tritium::testing::language;
  for (int warps : {1, 4, 8}) {
    checkCacheHints<DeviceBuffer>(stream().get(), sync, 100000, warps);
    for (bool bulk : {false, true})
      checkHintedRowSums<DeviceBuffer>(stream().get(), sync, 300, 5008, warps, bulk);
  }
}

// Rings of evict-first loads after a ring nested in another loop: the CUDA 13.0 driver's ptxas
// compiled these, while tritium gave cp.async an L2 cache policy, to an illegal instruction
// (docs/notes/hardware.md). The shapes are those that stopped the kernel then: 512
// or 256 partial rows in 4-column strips on 2 warps, rings of 2 and 3; and two that ran.
TEST_F(BlocksGpuTest, EvictFirstRingAfterNestedRingOfSums) {
  SKIP_WITHOUT_GPU();
  using namespace tritium::testing::language;
  struct Shape {
    int64_t parts;
    int P, C, warps, stages;
  };
  for (Shape s : {Shape{512, 512, 4, 2, 2}, Shape{256, 256, 4, 2, 2}, Shape{512, 512, 4, 2, 3},
                  Shape{512, 64, 8, 2, 2}, Shape{512, 512, 4, 4, 2}})
    checkSumsThenHintedTiles<DeviceBuffer>(stream().get(), sync, 4096, 512, s.parts, s.P, s.C,
                                           s.warps, s.stages, 512);
  checkSumsThenHintedTiles<DeviceBuffer>(stream().get(), sync, 1001, 496, 77, 64, 4, 2, 2, 132);
}

// Loads that no iteration changes, copied once into shared memory before their pipelined loop:
// with cp.async and bulk rings, masked lanes reading `other`, more programs than rows (loops of
// no iteration) and a nested loop of none that must not touch its null pointer.
TEST_F(BlocksGpuTest, LoopInvariantLoadsAreCopiedOnce) {
  SKIP_WITHOUT_GPU();
  using namespace tritium::testing::language;
  for (int warps : {1, 4, 8})
    for (bool bulk : {false, true}) {
      EXPECT_EQ(checkResidentLoads<DeviceBuffer>(stream().get(), sync, 300, 132, warps, bulk), 3);
      checkResidentLoads<DeviceBuffer>(stream().get(), sync, 5, 16, warps, bulk);
    }
}

// Consumers launched while their producers run (programmatic dependent launch) read the
// producers' output, never the round before; the same again from a captured CUDA graph, whose
// edges between the pairs are programmatic ones.
TEST_F(BlocksGpuTest, GridDependencyConsumersSeeTheirProducersOutput) {
  SKIP_WITHOUT_GPU();
  using namespace tritium::testing::language;
  bool waits = false;
  auto direct = [](const std::function<void()> &launches) { launches(); };
  checkGridDependency<DeviceBuffer>(stream().get(), sync, direct, 100000, 40, 3000, &waits);
  EXPECT_TRUE(waits) << "sm_90's consumer should be launched with programmatic serialization";
  auto graph = [this](const std::function<void()> &launches) {
    rt::Graph g = rt::Graph::capture(stream().get(), launches);
    g.launch(stream().get());
    g.launch(stream().get());
  };
  checkGridDependency<DeviceBuffer>(stream().get(), sync, graph, 100000, 40, 3000);
}

// cluster_sum and cluster_max of blocks over clusters of 2 to 16 (16: Hopper's non-portable
// size): 1-D and 2-D tiles, uneven strips, copies of elements, fp32, bf16, i32 and i64, with
// PTX 8.1 and 8.0.
TEST_F(BlocksGpuTest, ClusterSumsOfBlocks) {
  SKIP_WITHOUT_GPU();
  using namespace tritium::testing::language;
  for (int size : {2, 3, 4, 8, 16})
    for (int type : {0, 1, 2, 3}) {
      checkClusterBlockSums<DeviceBuffer>(stream().get(), sync, size, 40, type, 1, 1024, 2);
      checkClusterBlockSums<DeviceBuffer>(stream().get(), sync, size, 40, type, 4, 64, 4);
    }
  checkClusterBlockSums<DeviceBuffer>(stream().get(), sync, 4, 33, 0, 1, 16, 4);
  checkClusterBlockSums<DeviceBuffer>(stream().get(), sync, 8, 40, 1, 2, 512, 8, 80);
  checkClusterBlockSums<DeviceBuffer>(stream().get(), sync, 3, 40, 2, 1, 96, 1, 80);
}

// grid_sync over as many programs as fit at once, and over a few, launched directly and from a
// CUDA graph replayed twice; a grid larger than the GPU holds at once is refused by name.
TEST_F(BlocksGpuTest, GridSyncWaitsForEveryProgram) {
  SKIP_WITHOUT_GPU();
  using namespace tritium::testing::language;
  auto direct = [](const std::function<void()> &launches) { launches(); };
  for (int warps : {1, 4, 8}) {
    SCOPED_TRACE("direct launches, the most programs that fit, " + std::to_string(warps) +
                 " warps");
    checkGridSync<DeviceBuffer>(stream().get(), sync, direct, 0, 3, 20000, warps);
  }
  SCOPED_TRACE("direct launches, 3 programs");
  checkGridSync<DeviceBuffer>(stream().get(), sync, direct, 3, 2, 20000, 2);
  auto graph = [this](const std::function<void()> &launches) {
    rt::Graph g = rt::Graph::capture(stream().get(), launches);
    g.launch(stream().get());
    g.launch(stream().get());
  };
  SCOPED_TRACE("a CUDA graph replayed twice");
  checkGridSync<DeviceBuffer>(stream().get(), sync, graph, 0, 2, 20000, 4);

  auto k =
      kernel("grid_exchange", gridExchange, {"out", "scratch", "x", "spin", "launch", "BLOCK"});
  CompiledKernel &c = k.compile(
      {.signature = {"*fp32", "*fp32", "*fp32", "i32", "i32"}, .constexprs = {128}, .numWarps = 4});
  int64_t tooMany = c.persistentGrid(int64_t(1) << 20) + 1;
  DeviceBuffer buf(size_t(2 * tooMany * 128 + 5) * 4);
  try {
    c.launch(tooMany, stream().get(), {buf, buf, buf, int32_t(0), int32_t(0)});
    FAIL() << "a grid of " << tooMany << " programs calling grid_sync was launched";
  } catch (const std::exception &e) {
    EXPECT_NE(std::string(e.what()).find("grid_sync"), std::string::npos) << e.what();
  }
}

TEST_F(BlocksGpuTest, JoinAndSplit) {
  SKIP_WITHOUT_GPU();
  using namespace tritium::testing::language;
  for (int warps : {1, 4, 8}) {
    checkJoinSplit<DeviceBuffer>(stream().get(), sync, 256, 8, 16, warps);
    checkJoinSplit<DeviceBuffer>(stream().get(), sync, 1024, 32, 32, warps);
    checkJoinSplit<DeviceBuffer>(stream().get(), sync, 64, 4, 4, warps);
    checkInterleaveRavelSwizzle<DeviceBuffer>(stream().get(), sync, 8, 16, 3, warps);
    checkInterleaveRavelSwizzle<DeviceBuffer>(stream().get(), sync, 32, 64, 8, warps);
  }
}

TEST_F(BlocksGpuTest, SortFlipTopk) {
  SKIP_WITHOUT_GPU();
  using namespace tritium::testing::language;
  for (int warps : {1, 4, 8}) {
    checkSortFlipTopk<DeviceBuffer>(stream().get(), sync, 8, 16, 4, warps);
    checkSortFlipTopk<DeviceBuffer>(stream().get(), sync, 16, 16, 8, warps);
  }
}

TEST_F(BlocksGpuTest, CatGatherHistogram) {
  SKIP_WITHOUT_GPU();
  using namespace tritium::testing::language;
  for (int warps : {1, 4}) {
    checkCatGatherHistogram<DeviceBuffer>(stream().get(), sync, 8, 16, 16, warps);
    checkCatGatherHistogram<DeviceBuffer>(stream().get(), sync, 4, 32, 4, warps);
  }
  checkCatGatherHistogram<DeviceBuffer>(stream().get(), sync, 16, 16, 64, 8);
}

// Offsets past 2^31 in a real buffer of 2^31 + 2^20 bytes: bytes written through i64 offsets
// around 2^31, read back through u32 offsets in a range loop with u32 bounds (and stored
// through out - start + offs), checked against the host's f(i); and the small-buffer cases of
// the interpreter test.
TEST_F(BlocksGpuTest, OffsetsPast2To31) {
  SKIP_WITHOUT_GPU();
  using namespace tritium::testing::language;
  checkWideOffsets<DeviceBuffer>(stream().get(), sync, 3000000000u, 100000, 4);
  checkWideOffsets<DeviceBuffer>(stream().get(), sync, 2147483648u, 1000, 1);
  const int64_t bytes = (int64_t(1) << 31) + (int64_t(1) << 20);
  const int64_t start = (int64_t(1) << 31) - (int64_t(1) << 20), count = int64_t(1) << 21;
  std::optional<DeviceBuffer> buf;
  try {
    buf.emplace(size_t(bytes));
  } catch (const std::exception &e) {
    GTEST_SKIP() << "cannot allocate " << bytes << " bytes on the GPU (" << e.what()
                 << "): the 2^31 case needs them";
  }
  checkBytesAt<DeviceBuffer>(stream().get(), sync, *buf, start, count);
}

} // namespace
