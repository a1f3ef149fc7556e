// The online, backward, fp16/bf16 and special-value softmax cases of
// tests/gpu/SoftmaxVariantsGpuTest.cpp, run through the CPU interpreter (so they run in CI) on
// smaller shapes, with small online blocks so that rows take many iterations, masked tails
// and loops shorter than their pipeline. Also the planner's choices and its errors.
#include "SoftmaxCase.h"
#include "TestSupport.h"

#include "interpreter/Interpreter.h"

#include <gtest/gtest.h>

using namespace tritium;
using kernels::SoftmaxDirection;
using kernels::SoftmaxPlan;
using tritium::testing::SoftmaxCase;
using tritium::testing::Values;
using tritium::testing::perCTA;
using tritium::testing::prefetch;
using tritium::testing::withBlock;

namespace {

using HostRun = tritium::testing::SoftmaxCaseRun<interpreter::HostBuffer>;

// Cluster plan with small slices, so that interpreted rows span several programs.
std::function<void(SoftmaxPlan &)> cluster(int size, int64_t block) {
  return [=](SoftmaxPlan &p) {
    p.prefetch = false; // the planner's choice for short fp32 rows
    p.online = false;
    p.clusterSize = size;
    p.blockSize = block;
    p.numWarps = 1;
    p.numStages = 1;
    p.programsPerCTA = 1; // cluster programs each take a CTA
  };
}

// Cluster plan whose programs stream their slices in small blocks.
std::function<void(SoftmaxPlan &)> clusterOnline(int size, int64_t block, int stages = 2) {
  return [=](SoftmaxPlan &p) {
    p.prefetch = false; // the planner's choice for short fp32 rows
    p.online = true;
    p.clusterSize = size;
    p.blockSize = block;
    p.numWarps = 1;
    p.numStages = stages;
    p.programsPerCTA = 1; // cluster programs each take a CTA
  };
}

// Online plan with a small block, so that interpreted rows take several iterations.
std::function<void(SoftmaxPlan &)> online(int64_t block, int stages = 3) {
  return [=](SoftmaxPlan &p) {
    p.prefetch = false; // the planner's choice for short fp32 rows
    p.online = true;
    p.blockSize = block;
    p.numWarps = 1;
    p.numStages = stages;
    p.programsPerCTA = 1; // the ring's shared memory is the CTA's
  };
}

class SoftmaxVariantsInterpreterTest : public tritium::testing::CompilerTest {
protected:
  void SetUp() override { setInterpret(true); }
  void TearDown() override { resetInterpret(); }

  void run(const SoftmaxCase &c) {
    SCOPED_TRACE(c.str());
    HostRun r(c, tritium::testing::freshSeed());
    r.launch(nullptr);
    r.check();
  }
};

constexpr auto kFwd = SoftmaxDirection::Forward;
constexpr auto kBwd = SoftmaxDirection::Backward;

} // namespace

// --- online forward ---------------------------------------------------------------------------

TEST_F(SoftmaxVariantsInterpreterTest, OnlineForwardWithMaskedTail) {
  run({.direction = kFwd, .rows = 37, .cols = 1000, .tweak = online(128)}); // 7 blocks + 104
}

TEST_F(SoftmaxVariantsInterpreterTest, OnlineForwardWithRowStride) {
  run({.direction = kFwd, .rows = 16, .cols = 300, .stride = 333, .tweak = online(64)});
}

TEST_F(SoftmaxVariantsInterpreterTest, OnlineForwardShorterThanItsPipeline) {
  run({.direction = kFwd, .rows = 8, .cols = 100, .tweak = online(64, 4)}); // 2 blocks, 4 stages
}

TEST_F(SoftmaxVariantsInterpreterTest, OnlineForwardOneColumn) {
  run({.direction = kFwd, .rows = 5, .cols = 1, .tweak = online(64)});
}

// --- backward ---------------------------------------------------------------------------------

TEST_F(SoftmaxVariantsInterpreterTest, BackwardInRegisters) {
  run({.direction = kBwd, .rows = 64, .cols = 781, .stride = 800});
}

TEST_F(SoftmaxVariantsInterpreterTest, BackwardOnline) {
  run({.direction = kBwd, .rows = 16, .cols = 1000, .tweak = online(128)});
}

TEST_F(SoftmaxVariantsInterpreterTest, WorkedExampleInRegisters) {
  tritium::testing::runWorkedExample<interpreter::HostBuffer>(nullptr, [] {});
}

TEST_F(SoftmaxVariantsInterpreterTest, WorkedExampleOnline) {
  tritium::testing::runWorkedExample<interpreter::HostBuffer>(nullptr, [] {}, online(2, 2));
}

// --- fp16 and bf16 ----------------------------------------------------------------------------

TEST_F(SoftmaxVariantsInterpreterTest, HalfAndBfloatForward) {
  for (const char *dtype : {"fp16", "bf16"}) {
    run({.direction = kFwd, .dtype = dtype, .rows = 32, .cols = 781});
    run({.direction = kFwd, .dtype = dtype, .rows = 8, .cols = 1000, .tweak = online(128)});
  }
}

TEST_F(SoftmaxVariantsInterpreterTest, HalfAndBfloatBackward) {
  for (const char *dtype : {"fp16", "bf16"}) {
    run({.direction = kBwd, .dtype = dtype, .rows = 32, .cols = 781});
    run({.direction = kBwd, .dtype = dtype, .rows = 8, .cols = 1000, .tweak = online(128)});
  }
}

// --- rows split over a thread-block cluster ------------------------------------------------------

TEST_F(SoftmaxVariantsInterpreterTest, ClusterForwardWithMaskedTail) {
  // 4 slices of 256: the last holds 232 columns; 3 x 256 leaves a slice fully masked off.
  run({.direction = kFwd, .rows = 13, .cols = 1000, .tweak = cluster(4, 256)});
  run({.direction = kFwd, .rows = 9, .cols = 700, .stride = 713, .tweak = cluster(4, 256)});
  run({.direction = kFwd, .rows = 5, .cols = 3, .tweak = cluster(3, 2)});
}

TEST_F(SoftmaxVariantsInterpreterTest, ClusterBackward) {
  run({.direction = kBwd, .rows = 11, .cols = 1000, .tweak = cluster(4, 256)});
  run({.direction = kBwd, .rows = 7, .cols = 999, .stride = 1001, .tweak = cluster(8, 128)});
  run({.direction = kBwd, .rows = 5, .cols = 1900, .tweak = cluster(16, 128)}); // last slice empty
}

TEST_F(SoftmaxVariantsInterpreterTest, ClusterHalfAndBfloat) {
  for (const char *dtype : {"fp16", "bf16"}) {
    run({.direction = kFwd, .dtype = dtype, .rows = 6, .cols = 1000, .tweak = cluster(2, 512)});
    run({.direction = kBwd, .dtype = dtype, .rows = 6, .cols = 1000, .tweak = cluster(2, 512)});
  }
}

TEST_F(SoftmaxVariantsInterpreterTest, ClusterSpecialValues) {
  // The -inf prefix of row 4 fills whole slices with -inf.
  for (const char *dtype : {"fp32", "bf16"})
    run({.direction = kFwd,
         .dtype = dtype,
         .rows = 12,
         .cols = 300,
         .values = Values::Special,
         .tweak = cluster(4, 128)});
}

TEST_F(SoftmaxVariantsInterpreterTest, ClusterWorkedExample) {
  tritium::testing::runWorkedExample<interpreter::HostBuffer>(nullptr, [] {}, cluster(2, 2));
  tritium::testing::runWorkedExample<interpreter::HostBuffer>(nullptr, [] {},
                                                              clusterOnline(4, 1));
}

TEST_F(SoftmaxVariantsInterpreterTest, ClusterOnline) {
  // 1000 columns over 4 programs: slices of 4 blocks of 64 (the last slice 232 columns, its last
  // block masked); over 8 programs of 128-column blocks one slice is empty.
  run({.direction = kFwd, .rows = 9, .cols = 1000, .tweak = clusterOnline(4, 64)});
  run({.direction = kFwd, .rows = 5, .cols = 900, .stride = 911, .tweak = clusterOnline(8, 128)});
  run({.direction = kBwd, .rows = 7, .cols = 1000, .tweak = clusterOnline(4, 64)});
  run({.direction = kBwd, .rows = 5, .cols = 900, .tweak = clusterOnline(8, 128, 1)});
  for (const char *dtype : {"fp32", "fp16"})
    run({.direction = kFwd,
         .dtype = dtype,
         .rows = 12,
         .cols = 300,
         .values = Values::Special,
         .tweak = clusterOnline(4, 32)});
}

// --- special values (torch's behaviour) -------------------------------------------------------

TEST_F(SoftmaxVariantsInterpreterTest, SpecialValuesInRegisters) {
  for (const char *dtype : {"fp32", "fp16", "bf16"})
    run({.direction = kFwd, .dtype = dtype, .rows = 12, .cols = 300, .values = Values::Special});
}

TEST_F(SoftmaxVariantsInterpreterTest, SpecialValuesOnline) {
  // The -inf prefix (row 4) fills whole blocks with -inf before the first finite value.
  for (const char *dtype : {"fp32", "fp16", "bf16"})
    run({.direction = kFwd,
         .dtype = dtype,
         .rows = 12,
         .cols = 300,
         .values = Values::Special,
         .tweak = online(64)});
}

// --- the register prefetch, and blocks that are not a power of two -----------------------------

TEST_F(SoftmaxVariantsInterpreterTest, PrefetchedRows) {
  for (const char *dtype : {"fp32", "fp16"}) {
    run({.direction = kFwd, .dtype = dtype, .rows = 1, .cols = 100, .tweak = prefetch(true)});
    run({.direction = kFwd, .dtype = dtype, .rows = 7, .cols = 300, .tweak = prefetch(true),
         .grid = 16});
    run({.direction = kFwd, .dtype = dtype, .rows = 41, .cols = 380, .stride = 400,
         .tweak = prefetch(true), .grid = 6});
    run({.direction = kFwd, .dtype = dtype, .rows = 12, .cols = 300, .values = Values::Special,
         .tweak = prefetch(true), .grid = 5});
  }
  run({.direction = kFwd, .rows = 9, .cols = 1000,
       .tweak = [](SoftmaxPlan &p) {
         cluster(4, 256)(p);
         p.prefetch = true;
       },
       .grid = 8});
}

TEST_F(SoftmaxVariantsInterpreterTest, BlocksThatAreNotAPowerOfTwo) {
  run({.direction = kFwd, .dtype = "fp16", .rows = 10, .cols = 700, .tweak = withBlock(768, 2, false)});
  run({.direction = kFwd, .rows = 10, .cols = 384, .tweak = withBlock(384, 4, false, 3), .grid = 3});
  run({.direction = kFwd, .dtype = "bf16", .rows = 10, .cols = 301, .stride = 310,
       .tweak = withBlock(384, 1, true), .grid = 4});
}

// --- warp-sized programs side by side in one CTA -------------------------------------------------

// Several programs per CTA: each warp its own rows, program_id = ctaid x P + slot. Rows that do
// not fill the last CTA, grids that make programs walk several rows, and the prefetch kernel
// (whose loop runs a different number of times in each program of a CTA).

TEST_F(SoftmaxVariantsInterpreterTest, ProgramsPerCTA) {
  for (const char *dtype : {"fp32", "bf16"}) {
    run({.direction = kFwd, .dtype = dtype, .rows = 13, .cols = 256, .tweak = perCTA(4, true)});
    run({.direction = kFwd, .dtype = dtype, .rows = 37, .cols = 200, .stride = 210,
         .tweak = perCTA(4, true), .grid = 3});
    run({.direction = kFwd, .dtype = dtype, .rows = 9, .cols = 300, .tweak = perCTA(8, false),
         .grid = 1});
  }
  run({.direction = kFwd, .rows = 12, .cols = 300, .values = Values::Special,
       .tweak = perCTA(2, true), .grid = 2});
  run({.direction = kBwd, .rows = 11, .cols = 256, .tweak = [](SoftmaxPlan &p) {
         p.numWarps = 1;
         p.programsPerCTA = 4;
       }});
}

TEST_F(SoftmaxVariantsInterpreterTest, ProgramsPerCTAMistakesAreUserErrors) {
  interpreter::HostBuffer a(1 << 16), b(1 << 16);
  auto expectError = [&](SoftmaxPlan plan, int64_t cols, const std::string &what,
                         int64_t grid = 0) {
    try {
      kernels::softmaxForward(plan, "fp32", a, b, {4, cols}, cols, cols, nullptr, grid);
      ADD_FAILURE() << "no error for " << plan.str();
    } catch (const UserError &e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  SoftmaxPlan twoWarps = kernels::planSoftmax(256);
  twoWarps.numWarps = 2;
  twoWarps.programsPerCTA = 4;
  expectError(twoWarps, 256, "need warp-sized programs (num_warps 1, no cluster)");
  SoftmaxPlan tooMany = kernels::planSoftmax(256);
  tooMany.numWarps = 1;
  tooMany.programsPerCTA = 33;
  expectError(tooMany, 256, "programsPerCTA must be from 1 to 32, got 33");
  // A cp.async ring needs shared memory the programs of a CTA cannot share; the error points
  // at the ring's loop in the kernel's source.
  SoftmaxPlan ring = kernels::planSoftmax(1024);
  ring.numWarps = 1;
  ring.prefetch = false;
  ring.numStages = 3;
  ring.programPerRow = false;
  ring.programsPerCTA = 4;
  ring.fitBlock(1024, "fp32");
  expectError(ring, 1024, "Softmax.cpp:22: error: kernel 'softmax_kernel' needs");
  // A grid whose programs program_id (32 bits) cannot number is refused before it runs.
  SoftmaxPlan four = kernels::planSoftmax(256);
  four.programsPerCTA = 4;
  expectError(four, 256, "more than program_id can count", int64_t(1) << 30);
}

// --- the planner --------------------------------------------------------------------------------

TEST(SoftmaxPlanTest, RegistersThenClustersThenOnline) {
  for (int64_t n : {1, 256, 781, 4096, 16384, 32768}) {
    SoftmaxPlan p = kernels::planSoftmax(n);
    EXPECT_TRUE(!p.online && !p.cluster()) << n << ": " << p.str();
  }
  for (int64_t n : {32769, 65536, 100003, 262144}) {
    SoftmaxPlan p = kernels::planSoftmax(n);
    EXPECT_TRUE(p.cluster()) << n << ": " << p.str();
    EXPECT_GE(p.maxCols(), n) << p.str();
    EXPECT_LE(p.clusterSize, 8) << p.str();
  }
  for (int64_t n : {262145, 1 << 22})
    EXPECT_TRUE(kernels::planSoftmax(n).online) << n;
  // Slices of 8192 through a ring two rows deep up to 6 x 8192, then 16384 and 32768 with
  // rings one row deep.
  EXPECT_EQ(kernels::planSoftmax(40000).str(), "cluster 5 x BLOCK 8192 warps 4 stages 3");
  EXPECT_EQ(kernels::planSoftmax(49152).str(), "cluster 6 x BLOCK 8192 warps 4 stages 3");
  EXPECT_EQ(kernels::planSoftmax(49153).str(), "cluster 4 x BLOCK 16384 warps 8 stages 2");
  EXPECT_EQ(kernels::planSoftmax(65536).str(), "cluster 4 x BLOCK 16384 warps 8 stages 2");
  SoftmaxPlan p = kernels::planSoftmax(65536 + 8);
  EXPECT_EQ(p.clusterSize, 5) << p.str();
  EXPECT_EQ(p.blockSize, 16384) << p.str();
  EXPECT_EQ(kernels::planSoftmax(131072).str(), "cluster 8 x BLOCK 16384 warps 8 stages 2");
  EXPECT_EQ(kernels::planSoftmax(131073).str(), "cluster 5 x BLOCK 32768 warps 16 stages 2");
  EXPECT_EQ(kernels::planSoftmax(262144).str(), "cluster 8 x BLOCK 32768 warps 16 stages 2");
  EXPECT_TRUE(kernels::planSoftmaxBackward(20000).cluster());
  EXPECT_TRUE(kernels::planSoftmaxBackward(131072).cluster());
  // The backward goes on to clusters of 16 x 16384 (Hopper's non-portable size), then online.
  EXPECT_EQ(kernels::planSoftmaxBackward(262144).str(), "cluster 16 x BLOCK 16384 warps 16 stages 1");
  EXPECT_EQ(kernels::planSoftmaxBackward(131072).clusterSize, 8);
  EXPECT_TRUE(kernels::planSoftmaxBackward(262145).online);
  EXPECT_EQ(kernels::planSoftmax(262144 + 1).clusterSize, 1); // the forward stops at 8
  EXPECT_FALSE(kernels::planSoftmaxBackward(1000).online);
  // Short rows: warp-sized programs, several per CTA, up to 512 columns (fp32).
  EXPECT_EQ(kernels::planSoftmax(781).str(), "registers BLOCK 1024 warps 2 stages 1 prefetch");
  EXPECT_EQ(kernels::planSoftmax(256).str(), "registers BLOCK 256 warps 1 stages 1 programs-per-cta 8");
  EXPECT_EQ(kernels::planSoftmax(300).str(), "registers BLOCK 384 warps 1 stages 1 programs-per-cta 16");
  EXPECT_EQ(kernels::planSoftmax(300, "fp16").str(),
            "registers BLOCK 512 warps 1 stages 1 programs-per-cta 16");
  EXPECT_EQ(kernels::planSoftmax(1000, "bf16").str(),
            "registers BLOCK 1024 warps 1 stages 1 program-per-row programs-per-cta 16");
  // Rows that are not a power of two take a multiple of the CTA's tile when it is smaller.
  EXPECT_EQ(kernels::planSoftmax(12288).blockSize, 12288);
  EXPECT_EQ(kernels::planSoftmax(12160).blockSize, 12288);
  EXPECT_EQ(kernels::planSoftmax(12288, "bf16").blockSize, 12288);
  EXPECT_EQ(kernels::planSoftmax(3000).blockSize, 3072);
  EXPECT_EQ(kernels::planSoftmax(4097).blockSize, 4608); // 4 warps: tiles of 512, not 1024
  EXPECT_EQ(kernels::planSoftmax(2304).str(),
            "registers BLOCK 2560 warps 4 stages 1 program-per-row");
  EXPECT_EQ(kernels::planSoftmax(3072).str(),
            "registers BLOCK 3072 warps 8 stages 1 program-per-row");
  EXPECT_EQ(kernels::planSoftmax(7680).str(),
            "registers BLOCK 7680 warps 4 stages 1 program-per-row min-blocks 3");
  // A program per row from 2048 to 12288 columns; short rows and rows above 12288 keep the
  // persistent grid and the prefetch.
  EXPECT_TRUE(kernels::planSoftmax(1024).prefetch);
  EXPECT_FALSE(kernels::planSoftmax(1024).programPerRow);
  EXPECT_TRUE(kernels::planSoftmax(2048).programPerRow);
  EXPECT_EQ(kernels::planSoftmax(12288).str(),
            "registers BLOCK 12288 warps 8 stages 1 program-per-row min-blocks 3");
  EXPECT_EQ(kernels::planSoftmax(12289).str(),
            "registers BLOCK 14336 warps 16 stages 1 program-per-row min-blocks 2");
  EXPECT_EQ(kernels::planSoftmax(16384).str(),
            "registers BLOCK 16384 warps 16 stages 1 program-per-row min-blocks 2");
  EXPECT_TRUE(kernels::planSoftmax(4096, "bf16").programPerRow);
  EXPECT_EQ(kernels::planSoftmax(12288, "fp16").str(),
            "registers BLOCK 12288 warps 8 stages 1 program-per-row min-blocks 3");
  // 16-bit rows with 8 warps: as many CTAs per SM as their values per thread leave registers for.
  EXPECT_EQ(kernels::planSoftmax(6144, "fp16").str(),
            "registers BLOCK 6144 warps 8 stages 1 program-per-row min-blocks 5");
  EXPECT_EQ(kernels::planSoftmax(8192, "bf16").str(),
            "registers BLOCK 8192 warps 8 stages 1 program-per-row min-blocks 4");
  EXPECT_EQ(kernels::planSoftmax(10240, "fp16").minBlocksPerSM, 4);
  EXPECT_EQ(kernels::planSoftmax(8192).minBlocksPerSM, 3); // fp32 keeps its table
  EXPECT_EQ(kernels::planSoftmax(16384, "bf16").str(),
            "registers BLOCK 16384 warps 16 stages 1 program-per-row min-blocks 2");
  // No registers for a second row of 32768, and a one-buffer ring is no faster: 32 warps.
  EXPECT_EQ(kernels::planSoftmax(32768).str(), "registers BLOCK 32768 warps 32 stages 1");
  EXPECT_EQ(kernels::planSoftmax(20000).blockSize, 20480);
  EXPECT_EQ(kernels::planSoftmax(262144).specialization("fp32", 10, 262144).clusterSize, 8);
  EXPECT_EQ(kernels::planOnline(SoftmaxDirection::Forward).specialization("fp32", 1, 1).clusterSize,
            1);
}

// The library's softmax plans await the stream's previous kernel; the tutorial kernel's own
// specialization (softmaxSpecialization, tritiumc's default kernel) stays a plain launch.
TEST(SoftmaxPlanTest, LibraryPlansAwaitThePreviousKernel) {
  for (int64_t n : {128, 1024, 32768, 262144}) {
    EXPECT_TRUE(kernels::planSoftmax(n).specialization("fp32", 10, n).awaitPreviousKernel) << n;
    EXPECT_TRUE(kernels::planSoftmaxBackward(n).specialization("bf16", 10, n).awaitPreviousKernel)
        << n;
  }
  EXPECT_FALSE(kernels::softmaxSpecialization(1024).awaitPreviousKernel);
}

TEST(SoftmaxPlanTest, WideStridesBecomeI64) {
  SoftmaxPlan p = kernels::planSoftmax(262144);
  EXPECT_EQ(p.specialization("fp32", 4096, 262144).signature[2], "i32");
  EXPECT_EQ(p.specialization("bf16", 16384, 262144).signature[2], "i64");
  EXPECT_EQ(p.specialization("bf16", 16384, 262144).signature[0], "*bf16");
  EXPECT_EQ(kernels::planSoftmaxBackward(100).specialization("fp16", 1, 100).signature.size(), 8u);
}

TEST_F(SoftmaxVariantsInterpreterTest, PlanMistakesAreUserErrors) {
  interpreter::HostBuffer a(4096), b(4096), c(4096);
  SoftmaxPlan fwd = kernels::planSoftmax(100);
  try {
    kernels::softmaxBackward(fwd, "fp32", a, b, c, {1, 100}, 100, 100, 100, nullptr);
    ADD_FAILURE() << "no error for a forward plan given to softmaxBackward";
  } catch (const UserError &e) {
    EXPECT_NE(std::string(e.what()).find("plan for the other direction"), std::string::npos)
        << e.what();
  }
  try {
    kernels::softmaxForward(fwd, "fp32", a, b, {1, 1000}, 1000, 1000, nullptr);
    ADD_FAILURE() << "no error for rows longer than the plan's block";
  } catch (const UserError &e) {
    EXPECT_NE(std::string(e.what()).find("rows of 1000 columns do not fit"), std::string::npos)
        << e.what();
  }
  // The prefetch replaces the ring and exists for the one-pass forward only: a plan that asks
  // for more is refused rather than half obeyed.
  SoftmaxPlan ring = kernels::planSoftmax(100);
  ring.prefetch = true;
  ring.numStages = 3;
  SoftmaxPlan backward = kernels::planSoftmaxBackward(100);
  backward.prefetch = true;
  for (auto [plan, launch] :
       {std::pair{ring, true}, std::pair{backward, false}}) {
    try {
      if (launch)
        kernels::softmaxForward(plan, "fp32", a, b, {1, 100}, 100, 100, nullptr);
      else
        kernels::softmaxBackward(plan, "fp32", a, b, c, {1, 100}, 100, 100, 100, nullptr);
      ADD_FAILURE() << "no error for " << plan.str();
    } catch (const UserError &e) {
      EXPECT_NE(std::string(e.what()).find("the prefetch applies to the one-pass forward"),
                std::string::npos)
          << e.what();
    }
  }
}
