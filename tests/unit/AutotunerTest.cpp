// The autotuner without a GPU: the winner is the fastest candidate, it is recorded on disk and
// found again by a fresh tuner (another process), records that are corrupt, foreign or name a
// plan that is no longer a candidate are ignored, rejected candidates are skipped, and the
// candidate lists of the kernel library cover what they promise.
#include "kernels/Autotuner.h"
#include "TestSupport.h"
#include "compiler/support/Error.h"
#include "interpreter/Interpreter.h"
#include "kernels/Arguments.h"
#include "kernels/CrossEntropy.h"
#include "kernels/ElementwisePlan.h"
#include "kernels/RowPlan.h"

#include <atomic>
#include <fstream>
#include <set>
#include <thread>

using namespace tritium;
using namespace tritium::kernels;
using tritium::testing::ScopedTempDir;

namespace {

const std::vector<PlanFields> kCandidates = {{{"block", 1024}, {"warps", 4}},
                                             {{"block", 2048}, {"warps", 4}},
                                             {{"block", 4096}, {"warps", 8}}};
const TuningKey kKey{"layer_norm_forward", "bf16-cols4096-rows4096"};

void writeText(const std::filesystem::path &path, const std::string &text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

TEST(Autotuner, PicksTheFastestAndRecordsIt) {
  ScopedTempDir dir;
  Autotuner tuner(dir.path(), "NVIDIA H200-sm_90");
  std::vector<int> timed;
  size_t winner = tuner.tune(kKey, kCandidates, [&](size_t i) {
    timed.push_back(int(i));
    return i == 1 ? 0.5 : 1.0;
  });
  EXPECT_EQ(winner, 1u);
  EXPECT_EQ(timed, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(tuner.recorded(kKey, kCandidates), 1u);
  std::filesystem::path record = tuner.recordPath(kKey);
  EXPECT_TRUE(std::filesystem::exists(record)) << record;
  EXPECT_NE(record.string().find("NVIDIA-H200-sm_90"), std::string::npos) << record;

  // Another process: a fresh tuner on the same root finds the winner without timing anything.
  Autotuner again(dir.path(), "NVIDIA H200-sm_90");
  EXPECT_EQ(again.recorded(kKey, kCandidates), 1u);
  // The same winner among candidates listed in another order.
  std::vector<PlanFields> reordered = {kCandidates[2], kCandidates[0], kCandidates[1]};
  EXPECT_EQ(Autotuner(dir.path(), "NVIDIA H200-sm_90").recorded(kKey, reordered), 2u);
  // Another device or bucket has no record.
  EXPECT_FALSE(Autotuner(dir.path(), "NVIDIA H100-sm_90").recorded(kKey, kCandidates));
  EXPECT_FALSE(again.recorded({kKey.kernel, "bf16-cols8192-rows4096"}, kCandidates));
}

// With a margin (the planner's plan first), the first candidate keeps its place against one
// faster by less than the margin, not against one faster by more.
TEST(Autotuner, TheFirstCandidateKeepsItsPlaceWithinTheMargin) {
  ScopedTempDir dir;
  Autotuner tuner(dir.path(), "NVIDIA H200-sm_90");
  EXPECT_EQ(tuner.tune(kKey, kCandidates, [](size_t i) { return i == 0 ? 1.02 : i == 1 ? 1.0 : 1.5; },
                       0.03),
            0u);
  EXPECT_EQ(tuner.recorded(kKey, kCandidates), 0u);
  TuningKey other{kKey.kernel, "bf16-cols8192-rows4096"};
  EXPECT_EQ(tuner.tune(other, kCandidates, [](size_t i) { return i == 0 ? 1.05 : i == 1 ? 1.0 : 1.5; },
                       0.03),
            1u);
}

TEST(Autotuner, IgnoresRecordsThatDoNotNameACandidate) {
  ScopedTempDir dir;
  Autotuner tuner(dir.path(), "gpu");
  std::filesystem::path record = tuner.recordPath(kKey);
  const std::string cases[] = {
      "not json",
      "[1, 2]",
      R"({"kernel": "rms_norm_forward", "bucket": "bf16-cols4096-rows4096",
          "winner": {"block": 1024, "warps": 4}})",
      R"({"kernel": "layer_norm_forward", "bucket": "bf16-cols4096-rows4096"})",
      R"({"kernel": "layer_norm_forward", "bucket": "bf16-cols4096-rows4096",
          "winner": {"block": 1024, "warps": "four"}})",
      // A plan the library does not make (edited by hand, or from older code): never used.
      R"({"kernel": "layer_norm_forward", "bucket": "bf16-cols4096-rows4096",
          "winner": {"block": 999, "warps": 4}})",
      R"({"kernel": "layer_norm_forward", "bucket": "bf16-cols4096-rows4096",
          "winner": {"block": 1024}})",
  };
  for (const std::string &text : cases) {
    writeText(record, text);
    EXPECT_FALSE(Autotuner(dir.path(), "gpu").recorded(kKey, kCandidates)) << text;
  }
  writeText(record, R"({"kernel": "layer_norm_forward", "bucket": "bf16-cols4096-rows4096",
                        "winner": {"warps": 8, "block": 4096}})");
  EXPECT_EQ(Autotuner(dir.path(), "gpu").recorded(kKey, kCandidates), 2u);
}

TEST(Autotuner, SkipsRejectedCandidates) {
  ScopedTempDir dir;
  Autotuner tuner(dir.path(), "gpu");
  size_t winner = tuner.tune(kKey, kCandidates, [](size_t i) -> double {
    if (i == 0)
      throw UserError("too many registers");
    return double(i);
  });
  EXPECT_EQ(winner, 1u);
  EXPECT_THROW(
      tuner.tune(kKey, kCandidates, [](size_t) -> double { throw UserError("no candidate fits"); }),
      UserError);
}

TEST(Autotuner, RefusesKeysThatAreNotFileNames) {
  ScopedTempDir dir;
  Autotuner tuner(dir.path(), "gpu");
  for (TuningKey bad : {TuningKey{"../x", "b"}, TuningKey{"k", "a/b"}, TuningKey{"", "b"},
                        TuningKey{"k", ".hidden"}})
    EXPECT_THROW(tuner.recordPath(bad), InternalError) << bad.kernel << " " << bad.bucket;
}

// Processes tuning at once each write a whole record; whichever lands names a candidate.
TEST(Autotuner, ConcurrentTunersLeaveAValidRecord) {
  ScopedTempDir dir;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      Autotuner tuner(dir.path(), "gpu");
      for (int r = 0; r < 20; ++r)
        tuner.tune(kKey, kCandidates, [&](size_t i) { return i == size_t(t % 3) ? 0.0 : 1.0; });
    });
  for (auto &t : threads)
    t.join();
  EXPECT_TRUE(Autotuner(dir.path(), "gpu").recorded(kKey, kCandidates));
  for (auto &e : std::filesystem::recursive_directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename().string().rfind(".tmp.", 0), std::string::npos)
        << "temporary file left behind: " << e.path();
}

TEST(Autotuner, SwitchedOffByEnvironmentOrCall) {
  resetAutotune();
  ::setenv("TRITIUM_AUTOTUNE", "0", 1);
  EXPECT_FALSE(autotuneEnabled());
  ::setenv("TRITIUM_AUTOTUNE", "1", 1);
  EXPECT_TRUE(autotuneEnabled());
  setAutotune(false);
  EXPECT_FALSE(autotuneEnabled());
  resetAutotune();
  ::unsetenv("TRITIUM_AUTOTUNE");
  EXPECT_TRUE(autotuneEnabled());
  // The interpreter never tunes: the planner's choice, without asking the driver.
  setInterpret(true);
  EXPECT_FALSE(mayTune(nullptr));
  RowPlan planned = planNormForward(4096, Dtype::fp32);
  int made = 0;
  auto choose = [&] {
    return choosePlan<RowPlan>(
        nullptr, {kKey.kernel, {4096}, true}, [] { return kKey.bucket; }, nullptr,
        [&] {
          ++made;
          return planned;
        },
        [] { return normCandidates(4096, Dtype::fp32, false); },
        [](const RowPlan &) { FAIL() << "launched to tune"; });
  };
  EXPECT_EQ(choose().fields(), planned.fields());
  // The decision is remembered: the next call of the shape makes nothing.
  EXPECT_EQ(choose().fields(), planned.fields());
  EXPECT_EQ(made, 1);
  resetInterpret();
}

// The planner's rule is the tuner's winners on an H100 (docs/notes/norms.md) and, for rows over
// a cluster, the H200's: the plans it gives where tuning is off.
TEST(Autotuner, NormPlannerGivesTheTunersWinners) {
  auto fields = [](int64_t block, int rows, int cluster, int warps, int stages) {
    return RowPlan{.block = block, .rowsPerTile = rows, .clusterSize = cluster,
                   .numWarps = warps, .numStages = stages}
        .fields();
  };
  // Short rows: tiles of rows through a ring of 2 (the H200's winners).
  EXPECT_EQ(planNormBackward(512, Dtype::bf16).fields(), fields(512, 2, 1, 2, 2));
  EXPECT_EQ(planNormBackward(256, Dtype::bf16).fields(), fields(256, 4, 1, 2, 1));
  EXPECT_EQ(planNormBackward(1024, Dtype::bf16).fields(), fields(1024, 2, 1, 4, 2));
  EXPECT_EQ(planNormBackward(700, Dtype::bf16).fields(), fields(1024, 2, 1, 4, 2));
  EXPECT_EQ(planNormBackward(2048, Dtype::bf16).fields(), fields(2048, 1, 1, 4, 3));
  EXPECT_EQ(planNormBackward(8192, Dtype::bf16).fields(), fields(8192, 1, 1, 16, 2));
  // Rows over a cluster: 8-warp CTAs of 32 values per thread, a ring of 4 (the H200's
  // winners).
  EXPECT_EQ(planNormBackward(16384, Dtype::bf16).fields(), fields(8192, 1, 2, 8, 4));
  EXPECT_EQ(planNormBackward(65536, Dtype::bf16).fields(), fields(8192, 1, 8, 8, 4));
  EXPECT_EQ(planNormBackward(131072, Dtype::bf16).fields(), fields(8192, 1, 16, 8, 4));
  EXPECT_EQ(planNormForward(512, Dtype::bf16).fields(), fields(512, 2, 1, 1, 1));
  // 1025-4096 columns: tiles of two rows over 4 warps, a ring of 3, 3 CTAs per SM (the H200's
  // near-winners).
  RowPlan pairs{
      .block = 4096, .rowsPerTile = 2, .numWarps = 4, .numStages = 3, .minBlocksPerSM = 3};
  EXPECT_EQ(planNormForward(4096, Dtype::bf16).fields(), pairs.fields());
  EXPECT_EQ(planNormForward(4096, Dtype::fp16, 2).fields(), pairs.fields());
  pairs.block = 2048;
  EXPECT_EQ(planNormForward(1500, Dtype::bf16).fields(), pairs.fields());
  EXPECT_EQ(planNormForward(1024, Dtype::bf16).minBlocksPerSM, 1);
  EXPECT_EQ(planNormForward(65536, Dtype::bf16).fields(), fields(16384, 1, 4, 16, 2));
  // One array of weights (RMSNorm) at 8192 or 16384 columns: a program per row, no ring, the
  // weights read each row, two CTAs per SM (the H200's winners); other
  // lengths keep the persistent ring.
  auto perRow = [](int64_t block, int warps) {
    return RowPlan{.block = block,
                   .numWarps = warps,
                   .numStages = 1,
                   .weightsEachRow = true,
                   .minBlocksPerSM = 2,
                   .persistent = false}
        .fields();
  };
  EXPECT_EQ(planNormForward(16384, Dtype::bf16).fields(), perRow(16384, 16));
  EXPECT_EQ(planNormForward(8192, Dtype::bf16).fields(), perRow(8192, 8));
  EXPECT_TRUE(planNormForward(12000, Dtype::bf16).persistent);
  EXPECT_TRUE(planNormForward(16385, Dtype::bf16).persistent);
  EXPECT_TRUE(planNormForward(8192, Dtype::bf16, 2).persistent);
  // LayerNorm's weight and bias from 16384 columns on: 8-warp CTAs of 8192 columns over a
  // cluster, a ring of 2, the weights read each row, two CTAs per SM; one array is held.
  auto eachRow = [](int64_t block, int cluster) {
    return RowPlan{.block = block,
                   .clusterSize = cluster,
                   .numWarps = 8,
                   .numStages = 2,
                   .weightsEachRow = true,
                   .minBlocksPerSM = 2}
        .fields();
  };
  EXPECT_EQ(planNormForward(16384, Dtype::bf16, 2).fields(), eachRow(8192, 2));
  EXPECT_EQ(planNormForward(65536, Dtype::bf16, 2).fields(), eachRow(8192, 8));
  EXPECT_EQ(planNormForward(131072, Dtype::bf16, 2).fields(), eachRow(8192, 16));
  EXPECT_TRUE(planNormForward(maxNormCols(false), Dtype::bf16, 2).weightsEachRow);
  EXPECT_FALSE(planNormForward(8192, Dtype::bf16, 2).weightsEachRow);
  EXPECT_FALSE(planNormForward(65536, Dtype::bf16, 1).weightsEachRow);
  // Past 16 programs of 16 warps, CTAs of up to 32 warps still cover the row.
  EXPECT_GE(planNormBackward(maxNormCols(true), Dtype::bf16).maxCols(), maxNormCols(true));
  EXPECT_GE(planNormForward(maxNormCols(false), Dtype::bf16).maxCols(), maxNormCols(false));
}

TEST(Autotuner, NormCandidatesCoverTheRowAndIncludeThePlanner) {
  for (int arrays : {1, 2})
    for (bool backward : {false, true})
      for (int64_t cols : {1, 100, 512, 4096, 5000, 32768, 65536, 131072}) {
        std::vector<RowPlan> c = normCandidates(cols, Dtype::bf16, backward, arrays);
        ASSERT_FALSE(c.empty()) << cols;
        RowPlan planned = backward ? planNormBackward(cols, Dtype::bf16)
                                   : planNormForward(cols, Dtype::bf16, arrays);
        EXPECT_EQ(c[0].fields(), planned.fields()) << cols;
        for (size_t i = 0; i < c.size(); ++i) {
          EXPECT_GE(c[i].maxCols(), cols) << c[i].str();
          EXPECT_LE(c[i].numWarps, 32) << c[i].str();
          EXPECT_LE(c[i].clusterSize, 16) << c[i].str();
          for (size_t j = 0; j < i; ++j)
            EXPECT_NE(c[i].fields(), c[j].fields()) << "duplicate " << c[i].str();
        }
        if (cols >= 100) { // a row of one column has one sensible plan
          EXPECT_GE(c.size(), 2u) << cols;
        }
        // The forwards of long rows may also read the weights each row; backwards and short rows
        // keep them in registers.
        size_t eachRow = size_t(
            std::count_if(c.begin(), c.end(), [](const RowPlan &p) { return p.weightsEachRow; }));
        EXPECT_EQ(eachRow > 0, !backward && cols > 4096) << cols;
        // Forwards that read the weights each row are also tried with registers capped for two
        // CTAs per SM, and one-CTA copies of those with a program per tile and no ring; so are
        // the forwards' tiles of two rows of 2048-4096 columns (3-8 CTAs per SM).
        int cappedPairs = 0;
        for (const RowPlan &p : c) {
          bool pairOfRows = !backward && p.rowsPerTile == 2 && p.block >= 2048 && p.block <= 4096 &&
                            p.numStages == 3;
          if (p.minBlocksPerSM > 1 && p.fields() != c[0].fields()) {
            EXPECT_TRUE((!backward && p.weightsEachRow && p.numWarps <= 16) || pairOfRows)
                << p.str();
            cappedPairs += pairOfRows;
          }
          if (!p.persistent) {
            EXPECT_TRUE(!backward && p.clusterSize == 1 && p.rowsPerTile == 1 && p.numStages == 1 &&
                        p.minBlocksPerSM == 2)
                << p.str();
          }
        }
        EXPECT_EQ(cappedPairs > 0, !backward && cols == 4096) << cols; // of the columns here
        size_t perTile = size_t(
            std::count_if(c.begin(), c.end(), [](const RowPlan &p) { return !p.persistent; }));
        EXPECT_EQ(perTile > 0, !backward && cols > 4096 && cols <= 16384) << cols;
      }
  EXPECT_EQ(rowBucket(Dtype::fp16, 4000, 3000), "fp16-cols4096-rows4096");
  EXPECT_EQ(rowBucket(Dtype::fp32, 1 << 20, 1), "fp32-cols1-rows65536");
  EXPECT_EQ(rowBucket(Dtype::bf16, 4096, 5000, false), "bf16-cols8192-rows4096-unaligned");
}

// Every norm plan, the planner's and each candidate, specializes its kernel to await the stream's
// previous kernel (Specialization::awaitPreviousKernel), so that consecutive library calls
// overlap each launch with the previous kernel's end (docs/KERNELS.md).
TEST(Autotuner, NormPlansAwaitThePreviousKernel) {
  for (bool backward : {false, true})
    for (int64_t cols : {512, 4096, 65536}) {
      std::vector<RowPlan> plans = normCandidates(cols, Dtype::bf16, backward);
      plans.push_back(backward ? planNormBackward(cols, Dtype::bf16)
                               : planNormForward(cols, Dtype::bf16));
      for (const RowPlan &p : plans)
        EXPECT_TRUE(p.specialization({"*bf16"}).awaitPreviousKernel) << p.str();
    }
}

TEST(Autotuner, ElementwiseAndCrossEntropyCandidatesIncludeThePlanner) {
  auto e = elementwiseCandidates(1 << 24, Dtype::fp16, ElementwiseKind::Add);
  EXPECT_EQ(e[0].fields(), planElementwise(1 << 24, Dtype::fp16, ElementwiseKind::Add).fields());
  EXPECT_GE(e.size(), 8u);
  // Vector add never caps registers; dropout's planner does (8 elements per thread, 8 CTAs of 4
  // warps per SM), and its candidates add capped plans of 8 and 16 elements per thread.
  for (const ElementwisePlan &p : e)
    EXPECT_EQ(p.minBlocksPerSM, 1);
  auto d = elementwiseCandidates(1 << 28, Dtype::fp32, ElementwiseKind::Dropout);
  ElementwisePlan dp = planElementwise(1 << 28, Dtype::fp32, ElementwiseKind::Dropout);
  EXPECT_EQ(d[0].fields(), dp.fields());
  EXPECT_EQ(dp.block / (32 * dp.numWarps), 8);
  EXPECT_EQ(dp.minBlocksPerSM * dp.numWarps, 32);
  int cappedDropouts = 0;
  for (const ElementwisePlan &p : d) {
    cappedDropouts += p.minBlocksPerSM != 1;
    int64_t threads = 32 * int64_t(p.numWarps);
    EXPECT_LE(threads * p.minBlocksPerSM, 2048) << "more threads than an SM holds";
  }
  EXPECT_EQ(cappedDropouts, 5);
  auto c = crossEntropyCandidates(128256, Dtype::bf16);
  EXPECT_EQ(c[0].fields(), planCrossEntropy(128256, Dtype::bf16).fields());
  EXPECT_GE(c.size(), 8u);
  // Capped registers (three CTAs per SM) only on the forward's groups of 8 warps without a
  // ring, persistent and a program per row; the backward drops group plans.
  int capped = 0;
  for (const CrossEntropyPlan &p : c)
    if (p.minBlocksPerSM != 1) {
      ++capped;
      EXPECT_TRUE(p.minBlocksPerSM == 3 && p.group > 1 && p.numWarps == 8 && p.numStages == 1);
    }
  EXPECT_EQ(capped, 6); // blocks of 2048, 4096 and 8192, each both ways
  // The backward's runs: rows of 128256 in runs of about 8 and 16 blocks, only from one-row
  // plans of 8 warps with a program per row and no forward-only field.
  EXPECT_EQ(crossEntropyRowParts(128256, 4096), 4);
  EXPECT_EQ(crossEntropyRowParts(256000, 4096), 8);
  EXPECT_EQ(crossEntropyRowParts(256000, 2048), 16);
  EXPECT_EQ(crossEntropyRowParts(32000, 2048), 2);
  EXPECT_EQ(crossEntropyRowParts(32000, 4096), 1);
  EXPECT_EQ(crossEntropyRowParts(1, 4096), 1);
  std::set<int> runs;
  for (const CrossEntropyPlan &p : c)
    if (p.rowParts != 1) {
      runs.insert(p.rowParts);
      EXPECT_TRUE(!p.persistent && p.numWarps == 8 && p.rowsPerStep == 1 && p.group == 1 &&
                  !p.prefetch && p.minBlocksPerSM == 1);
      EXPECT_TRUE(p.rowParts == crossEntropyRowParts(128256, p.block) ||
                  p.rowParts == crossEntropyRowParts(128256, p.block) / 2);
    }
  EXPECT_EQ(runs, (std::set<int>{2, 4, 8}));
  for (const CrossEntropyPlan &p : crossEntropyCandidates(8000, Dtype::bf16))
    EXPECT_EQ(p.rowParts, 1) << "rows of 8000 columns: fewer than 12 blocks of 2048 or more";
  // The backward's flat plans: chunks of 2048 or 4096 (no longer than the rows) over 4 or 8
  // warps, runs of 8 or 16 chunks, rings of 3 or 6, one row per step, no runs of rows, no
  // forward-only field.
  auto flatBlocks = [](int64_t vocab) {
    std::multiset<int64_t> blocks;
    for (const CrossEntropyPlan &p : crossEntropyCandidates(vocab, Dtype::bf16))
      if (p.flat) {
        blocks.insert(p.block);
        EXPECT_TRUE(p.rowsPerStep == 1 && p.rowParts == 1 && p.group == 1 && !p.prefetch &&
                    p.minBlocksPerSM == 1 && p.block <= vocab && !p.persistent &&
                    (p.numStages == 3 || p.numStages == 6) &&
                    (p.numWarps == 4 || p.numWarps == 8) && (p.flatRun == 8 || p.flatRun == 16));
      }
    return blocks;
  };
  EXPECT_EQ(flatBlocks(128256), (std::multiset<int64_t>{2048, 2048, 4096, 4096, 4096}));
  EXPECT_EQ(flatBlocks(5000), (std::multiset<int64_t>{2048, 2048, 4096, 4096, 4096}));
  EXPECT_EQ(flatBlocks(4000), (std::multiset<int64_t>{2048, 2048}));
  EXPECT_TRUE(flatBlocks(2000).empty());
  EXPECT_EQ(elementwiseBucket(Dtype::bf16, 1000000), "bf16-n1048576");
  EXPECT_EQ(elementwiseBucket(Dtype::bf16, 1000000, false), "bf16-n1048576-unaligned");
}

TEST(Autotuner, OverlapDecidesWhetherALaunchMayRunTwice) {
  std::vector<char> memory(4096);
  char *m = memory.data();
  EXPECT_FALSE(anyOverlap({{m, 100}}, {{m + 100, 100}}));
  EXPECT_TRUE(anyOverlap({{m, 101}}, {{m + 100, 100}}));
  EXPECT_TRUE(anyOverlap({{m + 150, 10}}, {{m + 100, 100}}));
  EXPECT_TRUE(anyOverlap({{m, 100}, {m + 50, 10}}, {}));        // outputs over each other
  EXPECT_FALSE(anyOverlap({{nullptr, 100}}, {{nullptr, 100}})); // absent optional tensors
}

} // namespace
