// The kernel library in the interpreter (tests/KernelLibraryCases.h): the twins of
// tests/gpu/KernelLibraryGpuTest.cpp on smaller shapes, so that CI runs every kernel, dtype and
// direction without a GPU. Each kernel is also compiled to PTX on the way.
#include "KernelLibraryCases.h"

#include "compiler/support/Error.h"
#include "interpreter/Interpreter.h"

using namespace tritium;
using namespace tritium::testing::library;
using interpreter::HostBuffer;

namespace {

class KernelLibraryInterpreterTest : public tritium::testing::CompilerTest {
protected:
  void SetUp() override { setInterpret(true); }
  void TearDown() override { resetInterpret(); }
  Sync sync = [] {};
};

const Dtype kDtypes[] = {Dtype::fp32, Dtype::fp16, Dtype::bf16};

TEST_F(KernelLibraryInterpreterTest, VectorAdd) {
  for (Dtype d : kDtypes) {
    checkVectorAdd<HostBuffer>(nullptr, sync, d, 5000, 0);
    checkVectorAdd<HostBuffer>(nullptr, sync, d, 777, size_t(kernels::dtypeBytes(d)));
  }
}

TEST_F(KernelLibraryInterpreterTest, DropoutMatchesTritonsMask) {
  for (Dtype d : kDtypes)
    checkDropout<HostBuffer>(nullptr, sync, d, 3000, 0.5, 1234);
  checkDropout<HostBuffer>(nullptr, sync, Dtype::fp32, 2049, 0.1, -7);
  checkDropout<HostBuffer>(nullptr, sync, Dtype::fp32, 1000, 0.9, int64_t(1) << 40);
}

// The dropout kernel keeps a word when its fold is above dropoutLastDropped(p): that word's
// uniform (the host model of tl.rand's conversion) is at most p and the next one's above it.
TEST_F(KernelLibraryInterpreterTest, DropoutThresholdIsTritonsCompare) {
  for (double p : {0.0, 1e-9, 1e-7, 0.1, 0.25, 0.5, 0.9, 0.999, 0.99999994, 0.9999999}) {
    int32_t last = kernels::dropoutLastDropped(p);
    EXPECT_LE(philox::uint32ToUniformFloat(uint32_t(last)), float(p)) << p;
    if (last != std::numeric_limits<int32_t>::max()) {
      EXPECT_GT(philox::uint32ToUniformFloat(uint32_t(last) + 1), float(p)) << p;
    }
    // A negative word folds onto ~word: the same test.
    EXPECT_LE(philox::uint32ToUniformFloat(~uint32_t(last)), float(p)) << p;
  }
  EXPECT_EQ(kernels::dropoutLastDropped(0.0), 0); // only the word 0 (uniform 0) is dropped
}

TEST_F(KernelLibraryInterpreterTest, LayerNorm) {
  for (Dtype d : kDtypes) {
    checkNorm<HostBuffer>(nullptr, sync, d, {7, 100, 100}, false, true);
    checkNorm<HostBuffer>(nullptr, sync, d, {5, 600, 608}, false, true,
                          size_t(kernels::dtypeBytes(d)));
  }
  checkNorm<HostBuffer>(nullptr, sync, Dtype::fp32, {9, 33, 40}, false, false);
}

TEST_F(KernelLibraryInterpreterTest, RMSNorm) {
  for (Dtype d : kDtypes) {
    checkNorm<HostBuffer>(nullptr, sync, d, {7, 100, 100}, true, false);
    checkNorm<HostBuffer>(nullptr, sync, d, {5, 600, 608}, true, false);
  }
}

// Rows longer than one program's registers: the cluster path (3 programs per row).
TEST_F(KernelLibraryInterpreterTest, NormsOfLongRowsUseClusters) {
  checkNorm<HostBuffer>(nullptr, sync, Dtype::bf16, {2, 20000, 20000}, false, true);
  checkNorm<HostBuffer>(nullptr, sync, Dtype::fp32, {2, 20000, 20008}, true, false);
}

// Over a cluster, the LayerNorm backward holds the weights in registers with CTAs of 8 warps and
// reads them again each row with 16 (two specializations of one kernel): both, in fp16 and bf16.
TEST_F(KernelLibraryInterpreterTest, LayerNormBackwardOverAClusterHoldsOrRereadsTheWeights) {
  for (int warps : {8, 16})
    for (Dtype d : {Dtype::fp16, Dtype::bf16}) {
      kernels::RowPlan p{.block = 8192, .clusterSize = 3, .numWarps = warps, .numStages = 2};
      SCOPED_TRACE(p.str());
      checkNorm<HostBuffer>(nullptr, sync, d, {3, 20000, 20008}, false, true, 0, &p);
    }
}

TEST_F(KernelLibraryInterpreterTest, CrossEntropyGradientsByFiniteDifferences) {
  checkCrossEntropyFiniteDifferences<HostBuffer>(nullptr, sync, 0.0f);
  checkCrossEntropyFiniteDifferences<HostBuffer>(nullptr, sync, 0.1f);
}

TEST_F(KernelLibraryInterpreterTest, NormGradientsByFiniteDifferences) {
  checkNormFiniteDifferences<HostBuffer>(nullptr, sync, false);
  checkNormFiniteDifferences<HostBuffer>(nullptr, sync, true);
}

TEST_F(KernelLibraryInterpreterTest, CrossEntropy) {
  for (Dtype d : kDtypes) {
    checkCrossEntropy<HostBuffer>(nullptr, sync, d, {9, 1000, 1000, 0.0f, false});
    checkCrossEntropy<HostBuffer>(nullptr, sync, d, {6, 5000, 5008, 0.1f, true});
    // Packed rows on 16-byte boundaries, ending mid-vector: the planner's backward reads them
    // flat; and, but for fp32, ending on a whole vector too.
    checkCrossEntropy<HostBuffer>(nullptr, sync, d, {3, 8200, 8200, 0.1f, false, true});
    checkCrossEntropy<HostBuffer>(nullptr, sync, d, {5, 4096, 4096, 0.0f, false, true});
  }
}

// The backward over packed rows read flat (CrossEntropyPlan::flat), as given plans: chunks that
// straddle two rows, a chunk as long as a row, the last chunk partial (and owned by a program
// whose run is empty), ignored rows, -inf logits, in place, persistent or in runs of chunks.
TEST_F(KernelLibraryInterpreterTest, CrossEntropyFlat) {
  for (int stages : {1, 2})
    for (int run : {0, 1, 3, 8}) { // 0: a persistent grid
      kernels::CrossEntropyPlan p{.block = 256,
                                  .numWarps = 4,
                                  .numStages = stages,
                                  .persistent = run == 0,
                                  .flat = true,
                                  .flatRun = std::max(run, 1)};
      SCOPED_TRACE(kernels::describe(p.fields()));
      checkCrossEntropyCases<HostBuffer>(nullptr, sync,
                                         {{Dtype::bf16, {5, 1000, 1000, 0.1f, false, true}},
                                          {Dtype::fp32, {6, 256, 256, 0.0f, true, true}},
                                          {Dtype::fp16, {7, 301, 301, 0.0f, false, true}},
                                          {Dtype::bf16, {5, 777, 777, 0.1f, true, true}}},
                                         &p);
    }
}

// The backward's rows in runs of blocks, a step each (CrossEntropyPlan::rowParts), as given
// plans: runs of unequal length and empty ones, with whole blocks and a tail (a vocabulary
// that ends mid-vector), with peeled heads, in place, and on a persistent grid.
TEST_F(KernelLibraryInterpreterTest, CrossEntropyRowsInRuns) {
  for (int parts : {2, 3, 5})
    for (bool persistent : {false, true}) {
      kernels::CrossEntropyPlan p{
          .block = 256, .numWarps = 8, .numStages = 2, .persistent = persistent, .rowParts = parts};
      SCOPED_TRACE("runs " + std::to_string(parts) + (persistent ? ", persistent" : ""));
      checkCrossEntropyCases<HostBuffer>(nullptr, sync,
                                         {{Dtype::bf16, {5, 4000, 4000, 0.1f, false, true}},
                                          {Dtype::fp32, {4, 3001, 3008, 0.0f, true, true}},
                                          {Dtype::bf16, {6, 1301, 1305, 0.1f, false, true}},
                                          {Dtype::fp16, {3, 700, 700, 0.0f, false}}},
                                         &p);
    }
}

// Every plan the autotuner may pick on a GPU, on rows that start anywhere (the backward's
// peeled head) and rows on 16-byte boundaries.
TEST_F(KernelLibraryInterpreterTest, EveryCrossEntropyPlanIsCorrect) {
  // Each dtype's candidates (their groups differ: 16 bytes of logits) on both dtypes.
  for (Dtype candidatesOf : {Dtype::bf16, Dtype::fp32}) {
    int perRowGrids = 0;
    for (const kernels::CrossEntropyPlan &p : kernels::crossEntropyCandidates(32000, candidatesOf)) {
      // A plan with one program per row runs its persistent twin's code on another grid: one
      // of them is enough here (the GPU test takes every plan).
      if (!p.persistent && perRowGrids++ > 0)
        continue;
      SCOPED_TRACE(kernels::describe(p.fields()));
      if (p.flat) { // packed rows only, no shorter than a chunk
        checkCrossEntropy<HostBuffer>(nullptr, sync, Dtype::bf16,
                                      {3, 8195, 8195, 0.1f, false, true}, &p);
        continue;
      }
      checkCrossEntropy<HostBuffer>(nullptr, sync, Dtype::bf16, {7, 301, 301, 0.0f, false, true},
                                    &p);
      checkCrossEntropy<HostBuffer>(nullptr, sync, Dtype::fp32, {5, 1000, 1000, 0.1f, true, true},
                                    &p);
      // Rows on 16-byte boundaries whose vocabulary ends mid-vector: whole blocks, then a tail.
      checkCrossEntropy<HostBuffer>(nullptr, sync, Dtype::bf16, {3, 3001, 3008, 0.0f, true, true},
                                    &p);
      // Rows that start anywhere from an aligned base: the forward's and backward's peeled
      // heads, with smoothing (the head's sum of logits).
      checkCrossEntropy<HostBuffer>(nullptr, sync, Dtype::bf16, {6, 301, 305, 0.1f, false, true},
                                    &p);
    }
  }
}

// Every norm plan the autotuner may pick, on rows whose length is no power of two (blocks of
// 3072 columns beside 4096) and padded strides.
TEST_F(KernelLibraryInterpreterTest, EveryNormPlanIsCorrect) {
  NormShape s{5, 2500, 2504};
  for (bool backward : {false, true})
    for (const kernels::RowPlan &p : kernels::normCandidates(s.cols, Dtype::bf16, backward)) {
      SCOPED_TRACE(p.str());
      checkNorm<HostBuffer>(nullptr, sync, Dtype::bf16, s, false, true, 0, &p);
      checkNorm<HostBuffer>(nullptr, sync, Dtype::fp32, s, true, false, 0, &p);
    }
}

TEST_F(KernelLibraryInterpreterTest, NormsReadingTheWeightsEachRowAreCorrect) {
  checkNormsReadingTheWeightsEachRow<HostBuffer>(nullptr, sync, NormShape{3, 9000, 9016});
}

TEST_F(KernelLibraryInterpreterTest, MistakesNameTheArgument) {
  auto message = [](const std::function<void()> &f) {
    try {
      f();
    } catch (const UserError &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  HostBuffer a(64), b(64);
  EXPECT_NE(message([&] {
              kernels::vectorAdd(Dtype::fp32, nullptr, a.data(), b.data(), 4, nullptr);
            }).find("vectorAdd: out is null"),
            std::string::npos);
  EXPECT_NE(message([&] {
              kernels::vectorAdd(Dtype::fp8e4m3, a.data(), a.data(), b.data(), 4, nullptr);
            }).find("vectorAdd: dtype must be fp32, fp16 or bf16, got fp8e4m3"),
            std::string::npos);
  EXPECT_NE(message([&] {
              kernels::dropout(Dtype::fp32, a.data(), b.data(), 4, 1.0, 0, nullptr);
            }).find("dropout: p is 1"),
            std::string::npos);
  EXPECT_NE(
      message([&] {
        kernels::layerNormForward(
            Dtype::fp32,
            {.y = a.data(), .x = b.data(), .weight = a.data(), .rows = 2, .cols = 8, .xStride = 4},
            nullptr);
      }).find("layerNormForward: xStride is 4 elements, shorter than a row of 8"),
      std::string::npos);
  // An RMSNorm backward of 2 rows of 8 columns with the given workspace size and plan.
  auto rmsBackward = [&](size_t workspaceBytes, const kernels::RowPlan *plan) {
    return message([&] {
      kernels::rmsNormBackward(Dtype::fp32,
                               {.dx = a.data(),
                                .dweight = a.data(),
                                .dy = a.data(),
                                .x = a.data(),
                                .weight = a.data(),
                                .rstd = (float *)b.data(),
                                .rows = 2,
                                .cols = 8,
                                .workspace = b.data(),
                                .workspaceBytes = workspaceBytes},
                               nullptr, plan);
    });
  };
  EXPECT_NE(rmsBackward(4, nullptr).find("rmsNormBackward: workspaceBytes is 4"),
            std::string::npos);
  kernels::RowPlan perTile{.block = 8, .persistent = false};
  EXPECT_NE(rmsBackward(64, &perTile).find("rmsNormBackward: the plan is not persistent"),
            std::string::npos);
  EXPECT_NE(message([&] {
              kernels::crossEntropyForward(Dtype::fp32,
                                           {.loss = (float *)a.data(),
                                            .lse = (float *)a.data(),
                                            .logits = b.data(),
                                            .targets = nullptr,
                                            .rows = 1,
                                            .vocab = 4},
                                           nullptr);
            }).find("crossEntropyForward: targets is null"),
            std::string::npos);
  kernels::ElementwisePlan oddBlock{.block = 1000};
  EXPECT_NE(message([&] {
              kernels::vectorAdd(Dtype::fp32, a.data(), a.data(), b.data(), 4, nullptr, &oddBlock);
            }).find("vectorAdd: the plan's block is 1000, not a power of two"),
            std::string::npos);
  int64_t target = 0;
  // A one-row forward with `plan`: what it throws.
  auto forwardWith = [&](const kernels::CrossEntropyPlan &plan) {
    return message([&] {
      kernels::crossEntropyForward(Dtype::fp32,
                                   {.loss = (float *)a.data(),
                                    .lse = (float *)a.data(),
                                    .logits = b.data(),
                                    .targets = &target,
                                    .rows = 1,
                                    .vocab = 4},
                                   nullptr, &plan);
    });
  };
  EXPECT_NE(forwardWith({.block = 3000})
                .find("crossEntropyForward: the plan's block is 3000, not a power of two"),
            std::string::npos);
  EXPECT_NE(forwardWith({.block = 1024, .rowsPerStep = 2, .numStages = 3})
                .find("crossEntropyForward: the plan takes 2 rows per step with 3 stages"),
            std::string::npos);
  EXPECT_NE(forwardWith({.block = 1024, .rowParts = 0})
                .find("crossEntropyForward: the plan's rowParts is 0, not from 1 to 1024"),
            std::string::npos);
  EXPECT_NE(forwardWith({.block = 1024, .rowsPerStep = 2, .numStages = 1, .rowParts = 4})
                .find("the plan splits rows into 4 runs and takes 2 rows per step"),
            std::string::npos);
  // Flat plans: packed rows (strides equal to the vocabulary) on 16-byte boundaries, chunks no
  // longer than a row, one row per step.
  std::vector<float> logits(64, 0.0f), lse(4, 0.0f);
  auto flatBackward = [&](const kernels::CrossEntropyPlan &plan, int64_t stride, void *base) {
    return message([&] {
      kernels::crossEntropyBackward(Dtype::fp32,
                                    {.dlogits = base,
                                     .logits = base,
                                     .targets = &target,
                                     .lse = lse.data(),
                                     .rows = 1,
                                     .vocab = 16,
                                     .logitsStride = stride,
                                     .dlogitsStride = stride},
                                    nullptr, &plan);
    });
  };
  kernels::CrossEntropyPlan flat{.block = 16, .flat = true};
  EXPECT_NE(flatBackward(flat, 20, logits.data())
                .find("crossEntropyBackward: the plan reads the rows flat, which needs packed rows "
                      "(logitsStride and dlogitsStride equal to vocab, here 20 and 20 for 16)"),
            std::string::npos);
  EXPECT_NE(flatBackward(flat, 16, logits.data() + 1).find("16-byte boundaries (they are not)"),
            std::string::npos);
  kernels::CrossEntropyPlan longChunks{.block = 32, .flat = true};
  EXPECT_NE(
      flatBackward(longChunks, 16, logits.data())
          .find("the plan reads the rows flat in chunks of 32, more than the vocabulary of 16"),
      std::string::npos);
  kernels::CrossEntropyPlan noRun{.block = 16, .flat = true, .flatRun = 0};
  EXPECT_NE(flatBackward(noRun, 16, logits.data())
                .find("crossEntropyBackward: the plan's flatRun is 0, not from 1 to 1024"),
            std::string::npos);
  kernels::CrossEntropyPlan flatTiles{.block = 16, .rowsPerStep = 2, .numStages = 1, .flat = true};
  EXPECT_NE(flatBackward(flatTiles, 16, logits.data())
                .find("the plan reads the rows flat and takes 2 rows per step: flat plans take "
                      "one (rowsPerStep 1)"),
            std::string::npos);
  kernels::CrossEntropyPlan flatRuns{.block = 16, .rowParts = 2, .flat = true};
  EXPECT_NE(flatBackward(flatRuns, 16, logits.data())
                .find("the plan reads the rows flat and splits each row into 2 runs"),
            std::string::npos);
  kernels::CrossEntropyPlan manyRuns{.block = 1024, .rowParts = 1024};
  EXPECT_NE(message([&] {
              kernels::crossEntropyBackward(Dtype::fp32,
                                            {.dlogits = b.data(),
                                             .logits = b.data(),
                                             .targets = &target,
                                             .lse = (float *)a.data(),
                                             .rows = int64_t(1) << 22,
                                             .vocab = 4},
                                            nullptr, &manyRuns);
            })
                .find("crossEntropyBackward: rows x the plan's rowParts (4194304 x 1024) must stay "
                      "below 2^31"),
            std::string::npos);
}

} // namespace
