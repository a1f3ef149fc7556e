// Softmax beyond the tutorial on the GPU: rows of any length (split over a thread-block cluster
// up to 262144 columns, the online kernel beyond), the fused backward, fp16 and bf16, and rows of special values, each against the
// double-precision reference (tests/SoftmaxCase.h), with plans chosen by row length as at run
// time. Each test skips, saying why, when no GPU is usable; their interpreter twins are in
// tests/unit/SoftmaxVariantsInterpreterTest.cpp.
#include "SoftmaxCase.h"
#include "GpuTestSupport.h"
#include "TestSupport.h"

#include "runtime/Driver.h"
#include "runtime/Memory.h"

#include <gtest/gtest.h>

using namespace tritium;
using kernels::SoftmaxDirection;
using kernels::SoftmaxPlan;
using tritium::testing::SoftmaxCase;
using tritium::testing::Values;
using tritium::testing::perCTA;
using tritium::testing::prefetch;
using tritium::testing::ring;
using tritium::testing::withBlock;

namespace {

using DeviceRun = tritium::testing::SoftmaxCaseRun<rt::DeviceBuffer>;

class SoftmaxVariantsGpuTest : public tritium::testing::CompilerTest {
protected:
  // Runs the case; `expectKernel` ("registers", "cluster", "online") checks which kernel the
  // planner picked.
  void run(const SoftmaxCase &c, const char *expectKernel = nullptr) {
    SCOPED_TRACE(c.str());
    DeviceRun r(c, tritium::testing::freshSeed());
    rt::Stream stream;
    SoftmaxPlan plan = r.launch(stream.get());
    stream.sync();
    if (expectKernel) {
      EXPECT_EQ(plan.str().rfind(expectKernel, 0), 0u) << plan.str();
    }
    r.check();
  }
};

constexpr auto kFwd = SoftmaxDirection::Forward;
constexpr auto kBwd = SoftmaxDirection::Backward;

std::function<void(SoftmaxPlan &)> forceOnline() {
  return [](SoftmaxPlan &p) { p = kernels::planOnline(p.direction); };
}

} // namespace

// --- long rows (the online kernel) ------------------------------------------------------------

TEST_F(SoftmaxVariantsGpuTest, LongRows32768) {
  SKIP_WITHOUT_GPU();
  run({.direction = kFwd, .rows = 300, .cols = 32768}, "registers"); // 32 values per thread
  run({.direction = kFwd, .rows = 300, .cols = 40000}, "cluster");
}

TEST_F(SoftmaxVariantsGpuTest, LongRows262144) {
  SKIP_WITHOUT_GPU();
  run({.direction = kFwd, .rows = 40, .cols = 262144}, "cluster"); // 8 x 32768
  run({.direction = kFwd, .rows = 5, .cols = 262144 + 1}, "online");
}

TEST_F(SoftmaxVariantsGpuTest, LongOddRowsWithStride) {
  SKIP_WITHOUT_GPU();
  run({.direction = kFwd, .rows = 77, .cols = 100003, .stride = 100100}, "cluster");
  run({.direction = kFwd, .rows = 77, .cols = 100003, .stride = 100100, .tweak = forceOnline()});
}

TEST_F(SoftmaxVariantsGpuTest, OnlineKernelOnShortRows) {
  SKIP_WITHOUT_GPU();
  // Fewer blocks than pipeline stages, a single masked block, one column.
  run({.direction = kFwd, .rows = 1000, .cols = 781, .tweak = forceOnline()});
  run({.direction = kFwd, .rows = 100, .cols = 1, .tweak = forceOnline()});
  run({.direction = kFwd, .rows = 100, .cols = 9000, .stride = 9001, .tweak = forceOnline()});
}

// --- backward ---------------------------------------------------------------------------------

TEST_F(SoftmaxVariantsGpuTest, BackwardInRegisters) {
  SKIP_WITHOUT_GPU();
  run({.direction = kBwd, .rows = 1823, .cols = 781}, "registers");
  run({.direction = kBwd, .rows = 512, .cols = 4096, .stride = 4100}, "registers");
  run({.direction = kBwd, .rows = 37, .cols = 3}, "registers");
}

TEST_F(SoftmaxVariantsGpuTest, BackwardOnline) {
  SKIP_WITHOUT_GPU();
  run({.direction = kBwd, .rows = 256, .cols = 20000, .tweak = forceOnline()});
  run({.direction = kBwd, .rows = 32, .cols = 262144 + 5}, "online");
  run({.direction = kBwd, .rows = 300, .cols = 2000, .tweak = forceOnline()});
}

TEST_F(SoftmaxVariantsGpuTest, WorkedExample) {
  SKIP_WITHOUT_GPU();
  rt::Stream stream;
  auto sync = [&] { stream.sync(); };
  tritium::testing::runWorkedExample<rt::DeviceBuffer>(stream.get(), sync);
  tritium::testing::runWorkedExample<rt::DeviceBuffer>(stream.get(), sync, forceOnline());
}

// --- fp16 and bf16 ----------------------------------------------------------------------------

TEST_F(SoftmaxVariantsGpuTest, HalfAndBfloatForward) {
  SKIP_WITHOUT_GPU();
  for (const char *dtype : {"fp16", "bf16"}) {
    run({.direction = kFwd, .dtype = dtype, .rows = 1823, .cols = 781}, "registers");
    run({.direction = kFwd, .dtype = dtype, .rows = 512, .cols = 16384}, "registers");
    run({.direction = kFwd, .dtype = dtype, .rows = 64, .cols = 65536 + 8}, "cluster");
    run({.direction = kFwd, .dtype = dtype, .rows = 64, .cols = 1001, .stride = 1003},
        "registers");
  }
}

TEST_F(SoftmaxVariantsGpuTest, HalfAndBfloatBackward) {
  SKIP_WITHOUT_GPU();
  for (const char *dtype : {"fp16", "bf16"}) {
    run({.direction = kBwd, .dtype = dtype, .rows = 1823, .cols = 781}, "registers");
    run({.direction = kBwd, .dtype = dtype, .rows = 64, .cols = 40000}, "cluster");
    run({.direction = kBwd, .dtype = dtype, .rows = 8, .cols = 200000}, "cluster 13");
    run({.direction = kBwd, .dtype = dtype, .rows = 4, .cols = 270000}, "online");
  }
}

// --- special values ---------------------------------------------------------------------------

TEST_F(SoftmaxVariantsGpuTest, SpecialValuesInRegisters) {
  SKIP_WITHOUT_GPU();
  for (const char *dtype : {"fp32", "fp16", "bf16"})
    run({.direction = kFwd, .dtype = dtype, .rows = 60, .cols = 1000, .values = Values::Special},
        "registers");
}

TEST_F(SoftmaxVariantsGpuTest, SpecialValuesOnline) {
  SKIP_WITHOUT_GPU();
  for (const char *dtype : {"fp32", "fp16", "bf16"})
    run({.direction = kFwd, .dtype = dtype, .rows = 60, .cols = 70000, .values = Values::Special,
         .tweak = forceOnline()});
}

// --- rows split over a thread-block cluster -----------------------------------------------------

TEST_F(SoftmaxVariantsGpuTest, ClusterForward) {
  SKIP_WITHOUT_GPU();
  run({.direction = kFwd, .rows = 1000, .cols = 65536}, "cluster");        // 2 x 32768
  run({.direction = kFwd, .rows = 333, .cols = 131072 - 5}, "cluster");    // 4 x 32768
  run({.direction = kFwd, .rows = 2, .cols = 262144 - 37}, "cluster"); // fewer rows than clusters
  // Every cluster size and small slices (more programs per SM).
  for (int size : {2, 3, 4, 5, 8})
    run({.direction = kFwd, .rows = 100, .cols = size * 4096 - 3, .stride = size * 4096 + 4,
         .tweak = [=](SoftmaxPlan &p) {
           p.online = false;
           p.prefetch = false; // the plain cluster kernel (the planner prefetches short rows)
           p.clusterSize = size;
           p.blockSize = 4096;
           p.numWarps = 4;
           p.programsPerCTA = 1;
         }});
  // PTX ISA 8.0 has no st.async: the exchanges go through a cluster barrier instead.
  run({.direction = kFwd, .rows = 333, .cols = 131072 - 5,
       .tweak = [](SoftmaxPlan &p) { p.ptxVersion = 80; }});
  run({.direction = kBwd, .rows = 77, .cols = 131072,
       .tweak = [](SoftmaxPlan &p) { p.ptxVersion = 80; }});
}

TEST_F(SoftmaxVariantsGpuTest, ClusterOnline) {
  SKIP_WITHOUT_GPU();
  auto clusterOnline = [](int size, int64_t block) {
    return [=](SoftmaxPlan &p) {
      p = kernels::planOnline(p.direction);
      p.clusterSize = size;
      p.blockSize = block;
    };
  };
  run({.direction = kFwd, .rows = 40, .cols = 262144, .tweak = clusterOnline(8, 4096)});
  run({.direction = kFwd, .rows = 7, .cols = 1 << 20, .tweak = clusterOnline(4, 8192)});
  run({.direction = kFwd, .rows = 77, .cols = 100003, .stride = 100100,
       .tweak = clusterOnline(8, 8192)}); // slices of 16384: the eighth is empty
  run({.direction = kFwd, .dtype = "bf16", .rows = 60, .cols = 70000, .values = Values::Special,
       .tweak = clusterOnline(4, 4096)});
  run({.direction = kBwd, .rows = 32, .cols = 262144, .tweak = clusterOnline(8, 4096)});
  run({.direction = kBwd, .rows = 50, .cols = 100003, .stride = 100100,
       .tweak = clusterOnline(16, 2048)});
}

TEST_F(SoftmaxVariantsGpuTest, ClusterBackward) {
  SKIP_WITHOUT_GPU();
  run({.direction = kBwd, .rows = 500, .cols = 32768}, "cluster");
  run({.direction = kBwd, .rows = 77, .cols = 131072}, "cluster"); // 8 x 16384
  run({.direction = kBwd, .rows = 50, .cols = 100003, .stride = 100100}, "cluster");
  // Clusters of 16 (Hopper's non-portable size): 16 x 16384, and a row that leaves the last
  // programs of the cluster with nothing but masked lanes.
  run({.direction = kBwd, .rows = 40, .cols = 262144}, "cluster 16");
  run({.direction = kBwd, .dtype = "bf16", .rows = 21, .cols = 250001}, "cluster 16");
}

TEST_F(SoftmaxVariantsGpuTest, ClusterSpecialValues) {
  SKIP_WITHOUT_GPU();
  for (const char *dtype : {"fp32", "fp16", "bf16"})
    run({.direction = kFwd, .dtype = dtype, .rows = 60, .cols = 70000, .values = Values::Special},
        "cluster");
}

TEST_F(SoftmaxVariantsGpuTest, ClusterWorkedExample) {
  SKIP_WITHOUT_GPU();
  rt::Stream stream;
  auto sync = [&] { stream.sync(); };
  tritium::testing::runWorkedExample<rt::DeviceBuffer>(
      stream.get(), sync, [](SoftmaxPlan &p) {
        p.online = false;
        p.prefetch = false;
        p.clusterSize = 2;
        p.blockSize = 2;
        p.numWarps = 1;
        p.programsPerCTA = 1; // cluster programs each take a CTA
      });
}

// --- the register prefetch, and blocks that are not a power of two -----------------------------

TEST_F(SoftmaxVariantsGpuTest, PrefetchedRows) {
  SKIP_WITHOUT_GPU();
  for (const char *dtype : {"fp32", "fp16"}) {
    // One row: the prefetch of the next one is masked off.
    run({.direction = kFwd, .dtype = dtype, .rows = 1, .cols = 1000, .tweak = prefetch(true)});
    // More programs than rows: some programs have no row at all.
    run({.direction = kFwd, .dtype = dtype, .rows = 7, .cols = 3000, .tweak = prefetch(true),
         .grid = 16});
    // Rows that are not a multiple of the grid, a stride, a masked tail in a 12288 block.
    run({.direction = kFwd, .dtype = dtype, .rows = 1001, .cols = 12160, .stride = 12300,
         .tweak = prefetch(true)});
    run({.direction = kFwd, .dtype = dtype, .rows = 2000, .cols = 12288}, "registers");
    run({.direction = kFwd, .dtype = dtype, .rows = 64, .cols = 1000, .values = Values::Special,
         .tweak = prefetch(true)});
  }
  // The cluster kernel with the prefetch.
  run({.direction = kFwd, .rows = 33, .cols = 65536 + 5, .tweak = prefetch(true)}, "cluster");
}

TEST_F(SoftmaxVariantsGpuTest, BlocksThatAreNotAPowerOfTwo) {
  SKIP_WITHOUT_GPU();
  // 12 halves per thread: 8-byte runs instead of 16.
  run({.direction = kFwd, .dtype = "fp16", .rows = 300, .cols = 6000,
       .tweak = withBlock(6144, 16, false)});
  // Through the cp.async ring: six tiles of 2048 per stage.
  run({.direction = kFwd, .rows = 300, .cols = 12288, .tweak = withBlock(12288, 16, false, 3)});
  run({.direction = kFwd, .dtype = "bf16", .rows = 300, .cols = 3001, .stride = 3008,
       .tweak = withBlock(3072, 4, true)});
}

// Rings of bulk copies (TMA). Rows of a multiple of 16 elements with 16-aligned strides qualify;
// the others fall back to cp.async per thread, which runs next to them.
TEST_F(SoftmaxVariantsGpuTest, BulkCopyRings) {
  SKIP_WITHOUT_GPU();
  for (bool bulk : {true, false}) {
    SCOPED_TRACE(bulk ? "bulk copies" : "cp.async per thread");
    // One row, three stages: the prologue's second copy is past the end.
    run({.direction = kFwd, .rows = 1, .cols = 1008, .tweak = ring(3, bulk)});
    // More programs than rows: programs that copy nothing still set up and retire the ring.
    run({.direction = kFwd, .rows = 7, .cols = 3072, .tweak = ring(3, bulk), .grid = 16});
    // A masked tail in a 12288 block, with a stride: each copy stops at the row's end.
    run({.direction = kFwd, .rows = 1001, .cols = 12160, .stride = 12304,
         .tweak = [bulk](SoftmaxPlan &p) {
           withBlock(12288, 16, false, 3)(p);
           p.bulkCopies = bulk;
         }});
    run({.direction = kFwd, .dtype = "fp16", .rows = 1001, .cols = 2960, .stride = 3008,
         .tweak = ring(4, bulk)});
    run({.direction = kFwd, .dtype = "bf16", .rows = 2000, .cols = 2048, .tweak = ring(2, bulk)});
    run({.direction = kFwd, .rows = 64, .cols = 4096, .values = Values::Special,
         .tweak = ring(3, bulk)});
    // Two loads per stage: one mbarrier counts both copies' bytes.
    run({.direction = kBwd, .rows = 500, .cols = 4096, .tweak = ring(3, bulk)});
    run({.direction = kBwd, .dtype = "bf16", .rows = 500, .cols = 8000, .stride = 8016,
         .tweak = ring(2, bulk)});
    // The online kernel: an inner ring per row, set up and retired once per row, and a row of
    // fewer blocks than stages.
    auto online = [bulk](SoftmaxPlan &p) {
      p = kernels::planOnline(p.direction);
      p.bulkCopies = bulk;
    };
    run({.direction = kFwd, .rows = 20, .cols = 100000, .tweak = online});
    run({.direction = kFwd, .rows = 100, .cols = 800, .tweak = online});
    run({.direction = kBwd, .rows = 20, .cols = 70000, .tweak = online});
    // A cluster of 4 slices of 16384 through a two-stage ring; the last slice is partly masked.
    run({.direction = kFwd, .rows = 33, .cols = 60000,
         .tweak = [bulk](SoftmaxPlan &p) {
           p.prefetch = false;
           p.online = false;
           p.splitOver(4, 60000);
           p.numStages = 2;
           p.bulkCopies = bulk;
         }},
        "cluster");
    // Odd rows: no 16-byte vectors, so no ring of either kind.
    run({.direction = kFwd, .rows = 300, .cols = 1001, .tweak = ring(3, bulk)});
  }
}

// One program (cluster) per row instead of the persistent grid, for kernels the planner runs on
// the persistent grid.
TEST_F(SoftmaxVariantsGpuTest, ProgramPerRow) {
  SKIP_WITHOUT_GPU();
  auto perRow = [](SoftmaxPlan &p) { p.programPerRow = true; };
  run({.direction = kFwd, .rows = 1001, .cols = 16384, .tweak = perRow});
  run({.direction = kFwd, .rows = 3, .cols = 256, .tweak = perRow});
  run({.direction = kFwd, .rows = 33, .cols = 100003, .tweak = perRow}, "cluster");
  run({.direction = kBwd, .dtype = "bf16", .rows = 500, .cols = 3000, .tweak = perRow});
  run({.direction = kBwd, .rows = 20, .cols = 70000, .tweak = perRow}, "cluster");
}

// Warp-sized programs side by side in one CTA (programsPerCTA), on the persistent grid and one
// program per row, with rows that leave the last CTA part empty.
TEST_F(SoftmaxVariantsGpuTest, ProgramsPerCTA) {
  SKIP_WITHOUT_GPU();
  for (const char *dtype : {"fp32", "fp16", "bf16"}) {
    run({.direction = kFwd, .dtype = dtype, .rows = 4099, .cols = 256,
         .tweak = perCTA(4, true, false)});
    run({.direction = kFwd, .dtype = dtype, .rows = 1001, .cols = 384,
         .tweak = perCTA(8, false, true)});
  }
  run({.direction = kFwd, .rows = 777, .cols = 1000, .stride = 1003,
       .tweak = perCTA(4, true, false), .grid = 50});
  run({.direction = kBwd, .rows = 3001, .cols = 512, .tweak = perCTA(4, false, false)});
}
