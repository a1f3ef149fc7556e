// dot in the interpreter (tests/DotCases.h): the twins of tests/gpu/DotGpuTest.cpp, which run
// everywhere. Each kernel is also compiled to PTX, so the layout pass and the lowering see
// every operand type and shape here too.
#include "DotCases.h"
#include "DotScaledCases.h"
#include "MatmulLibraryCases.h"

#include "interpreter/Interpreter.h"

#include <functional>

using namespace tritium;
using namespace tritium::testing::tensorcores;
using interpreter::HostBuffer;
using ir::ScalarKind;

namespace {

class DotInterpreterTest : public tritium::testing::CompilerTest {
protected:
  void SetUp() override { setInterpret(true); }
  void TearDown() override { resetInterpret(); }
  std::function<void()> sync = [] {};
};

TEST_F(DotInterpreterTest, SixteenBitFloats) {
  for (ScalarKind in : {ScalarKind::F16, ScalarKind::BF16})
    checkMatmul<HostBuffer>(nullptr, sync,
                            {.in = in, .out = in, .M = 37, .N = 45, .K = 70, .stages = 2});
  checkMatmul<HostBuffer>(nullptr, sync,
                          {.in = ScalarKind::F16, .acc = ScalarKind::F16, .out = ScalarKind::F16,
                           .M = 32, .N = 16, .K = 48, .BM = 32, .BN = 16, .BK = 16});
}

TEST_F(DotInterpreterTest, Fp32Precisions) {
  for (const char *p : {"tf32", "tf32x3", "ieee"})
    checkMatmul<HostBuffer>(nullptr, sync,
                            {.in = ScalarKind::F32, .M = 20, .N = 33, .K = 40, .precision = p});
}

TEST_F(DotInterpreterTest, EightBitOperands) {
  checkMatmul<HostBuffer>(nullptr, sync, {.in = ScalarKind::I8, .acc = ScalarKind::I32,
                                          .out = ScalarKind::I32, .M = 33, .N = 17, .K = 64});
  checkMatmul<HostBuffer>(nullptr, sync,
                          {.in = ScalarKind::F8E4M3, .M = 16, .N = 40, .K = 50, .ptxVersion = 84});
}

TEST_F(DotInterpreterTest, TransposedOperandAndBatches) {
  checkMatmul<HostBuffer>(nullptr, sync,
                          {.in = ScalarKind::BF16, .M = 40, .N = 24, .K = 36, .bColumns = true});
  checkBatched<HostBuffer>(nullptr, sync, 2, 16, 32, 16, 4);
}

TEST_F(DotInterpreterTest, ChainedProducts) {
  checkChained<HostBuffer>(nullptr, sync, ScalarKind::BF16, 64, 64, 64, 64, 4, "sm_90a");
  checkChained<HostBuffer>(nullptr, sync, ScalarKind::F16, 32, 32, 64, 32, 4, "sm_90");
  checkChained<HostBuffer>(nullptr, sync, ScalarKind::F8E4M3, 64, 64, 64, 64, 4, "sm_90a");
  checkChained<HostBuffer>(nullptr, sync, ScalarKind::BF16, 64, 64, 64, 64, 4, "sm_90a",
                           ScalarKind::F8E4M3);
}

// The wgmma lowering (sm_90a) compiles each of these to PTX on the way: a ring-fed dot, a
// staged b read transposed, and a dot outside any ring.
TEST_F(DotInterpreterTest, WarpGroupTiles) {
  checkMatmul<HostBuffer>(nullptr, sync,
                          {.in = ScalarKind::BF16, .M = 70, .N = 66, .K = 80, .BM = 64, .BN = 64,
                           .BK = 64, .warps = 4, .stages = 2, .arch = "sm_90a"});
  checkMatmul<HostBuffer>(nullptr, sync,
                          {.in = ScalarKind::F16, .M = 64, .N = 64, .K = 64, .BM = 64, .BN = 64,
                           .BK = 64, .warps = 4, .stages = 1, .bColumns = true,
                           .arch = "sm_90a"});
}

// dot_scaled: every format on either side, with and without scales; each compiled for Hopper
// (wgmma) on the way and assembled by ptxas, without spills or serialized wgmma.
TEST_F(DotInterpreterTest, DotScaled) {
  for (std::string a : {"e2m1", "e4m3", "e5m2", "bf16", "fp16"})
    for (std::string b : {"e2m1", "e4m3", "e5m2", "bf16", "fp16"})
      checkDotScaled<HostBuffer>(nullptr, sync,
                                 {.aFormat = a, .bFormat = b, .arch = "sm_90a", .assemble = true});
  checkDotScaled<HostBuffer>(nullptr, sync, {.aScale = false, .M = 64, .N = 16, .K = 128});
  checkDotScaled<HostBuffer>(nullptr, sync,
                             {.aFormat = "e4m3", .bFormat = "e2m1", .bScale = false, .K = 32});
}

// Wrong formats, storage types and scale shapes are UserErrors at the call's line.
// max_num_imprecise_acc: the interpreter sums in fp32 whatever it says; the result is the
// product's.
TEST_F(DotInterpreterTest, ImpreciseAccumulation) {
  for (int every : {0, 32, 128})
    EXPECT_LE(impreciseAccumulationError<HostBuffer>(nullptr, sync, 512, every, ""), 1e-6)
        << "every " << every;
}

// max_num_imprecise_acc takes fp8 operands and a multiple of 32 of at most K, named at the
// call's line.
TEST_F(DotInterpreterTest, ImpreciseAccumulationRefusesBadOptions) {
  using namespace dsl;
  auto refuses = [&](const std::string &needle, const char *type, int every) {
    auto k = kernel(
        "bad_imprecise", +[](Ptr c, Ptr a, int N) {
          auto x = load(a + arange(0, 64)(_, None) * 64 + arange(0, 64)(None, _));
          store(c + arange(0, 64), sum(dot(x, x, zeros({64, 64}, float32),
                                           {.max_num_imprecise_acc = N}), 1));
        },
        {"c", "a", "N"});
    try {
      k.compile({.signature = {"*fp32", type}, .constexprs = {every}, .ptxVersion = 84});
      ADD_FAILURE() << "accepted; expected: " << needle;
    } catch (const UserError &e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("DotInterpreterTest.cpp"), std::string::npos)
          << e.what();
    }
  };
  refuses("max_num_imprecise_acc applies to fp8 operands only, not bf16", "*bf16", 32);
  refuses("max_num_imprecise_acc must be a positive multiple of 32 of at most K (64), got 48",
          "*fp8e4m3", 48);
  refuses("of at most K (64), got 128", "*fp8e4m3", 128);
}

TEST_F(DotInterpreterTest, DotScaledRefusesBadOperands) {
  using namespace dsl;
  auto refuses = [&](const std::string &needle, auto body) {
    auto k = kernel("bad_dot_scaled", body, {"c", "a", "s"});
    try {
      k.compile({.signature = {"*fp32", "*u8", "*u8"}});
      ADD_FAILURE() << "accepted; expected: " << needle;
    } catch (const UserError &e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("DotInterpreterTest.cpp"), std::string::npos)
          << e.what();
    }
  };
  refuses("a_format must be \"e2m1\", \"e4m3\", \"e5m2\", \"bf16\" or \"fp16\", got \"e3m2\"",
          +[](Ptr c, Ptr a, Ptr s) {
            auto x = load(a + arange(0, 32)(_, None) * 16 + arange(0, 16)(None, _));
            store(c + arange(0, 32), sum(dot_scaled(x, std::nullopt, "e3m2", x, std::nullopt,
                                                    "e2m1"), 1));
          });
  refuses("but b_format \"e4m3\" takes f8e4m3", +[](Ptr c, Ptr a, Ptr s) {
    auto x = load(a + arange(0, 32)(_, None) * 16 + arange(0, 16)(None, _));
    store(c + arange(0, 32),
          sum(dot_scaled(x, std::nullopt, "e2m1", x, std::nullopt, "e4m3"), 1));
  });
  refuses("a has 32 elements along K", +[](Ptr c, Ptr a, Ptr s) {
    auto x = load(a + arange(0, 32)(_, None) * 16 + arange(0, 16)(None, _));
    auto y = load(a + arange(0, 64)(_, None) * 32 + arange(0, 32)(None, _));
    store(c + arange(0, 32), sum(dot_scaled(x, std::nullopt, "e2m1", y, std::nullopt, "e2m1"), 1));
  });
  refuses("a_scale must be a uint8 block [32, 1] (e8m0)", +[](Ptr c, Ptr a, Ptr s) {
    auto x = load(a + arange(0, 32)(_, None) * 16 + arange(0, 16)(None, _));
    auto y = load(a + arange(0, 16)(_, None) * 32 + arange(0, 32)(None, _));
    auto scale = load(s + arange(0, 32)(_, None) * 2 + arange(0, 2)(None, _));
    store(c + arange(0, 32), sum(dot_scaled(x, scale, "e2m1", y, std::nullopt, "e2m1"), 1));
  });
}

// The library's matmul (kernels/Matmul.h): both layouts of b, the epilogue's bias and
// activations, strided rows, and the planner's small tiles for a few rows.
TEST_F(DotInterpreterTest, LibraryMatmul) {
  using kernels::Activation;
  using kernels::Dtype;
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.M = 37, .N = 45, .K = 70, .bias = true,
                                  .activation = Activation::Gelu});
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.in = Dtype::fp16, .out = Dtype::fp32, .M = 20, .N = 70,
                                  .K = 33, .lda = 40, .ldb = 48, .ldc = 72, .bTransposed = true,
                                  .activation = Activation::Silu});
  checkLibraryMatmul<HostBuffer>(nullptr, sync, {.M = 3, .N = 80, .K = 300});
}

// Every operand dtype and the whole epilogue: fp8 with row-wise scales, int8 exact into int32
// and dequantized, fp32 at each precision, a residual with its own row stride; tiles through
// descriptors (bases and row strides on 16 bytes) and through pointers (K = 70 int8 rows).
TEST_F(DotInterpreterTest, LibraryMatmulDtypesAndEpilogues) {
  using kernels::Activation;
  using kernels::Dtype;
  using kernels::Precision;
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.in = Dtype::fp8e4m3, .out = Dtype::bf16, .M = 33, .N = 40,
                                  .K = 96, .bTransposed = true, .bias = true, .scaleA = true,
                                  .scaleB = true});
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.in = Dtype::fp8e5m2, .out = Dtype::fp16, .M = 40, .N = 24,
                                  .K = 50, .alpha = 0.5f});
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.in = Dtype::fp8e4m3, .out = Dtype::bf16, .M = 33, .N = 64,
                                  .K = 300, .bTransposed = true, .maxImpreciseAcc = 64});
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.in = Dtype::int8, .out = Dtype::int32, .M = 20, .N = 36,
                                  .K = 70, .bTransposed = true});
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.in = Dtype::int8, .out = Dtype::fp32, .M = 17, .N = 48,
                                  .K = 64, .scaleA = true, .scaleB = true});
  for (Precision p : {Precision::tf32, Precision::tf32x3, Precision::ieee})
    checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                   {.in = Dtype::fp32, .out = Dtype::fp32, .M = 36, .N = 20,
                                    .K = 40, .residual = true, .precision = p});
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.M = 50, .N = 30, .K = 64, .ldr = 40, .bias = true,
                                  .activation = Activation::Silu, .residual = true,
                                  .alpha = 0.25f});
  // Descriptors on a given plan of 32 x 32 tiles (the planner gives these small products 64 x
  // 128 descriptor tiles with a producer warp group, which the interpreter runs as plain loops).
  kernels::MatmulPlan withDescriptors{.blockM = 32, .blockN = 32, .blockK = 32, .numWarps = 4,
                                      .numStages = 2, .descriptors = true};
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.M = 50, .N = 40, .K = 80, .bTransposed = true,
                                  .residual = true, .plan = withDescriptors});
  // fp8 out, quantized (saturating past the type's range with a large outScale), and amax.
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.in = Dtype::fp8e4m3, .out = Dtype::fp8e4m3, .M = 40, .N = 48,
                                  .K = 64, .bTransposed = true, .scaleA = true, .outScale = 0.5f,
                                  .amax = true});
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.out = Dtype::fp8e5m2, .M = 33, .N = 40, .K = 48, .bias = true,
                                  .residual = true, .amax = true});
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.out = Dtype::fp8e4m3, .M = 20, .N = 24, .K = 32,
                                  .outScale = 100.0f});
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.M = 50, .N = 30, .K = 64, .activation = Activation::Gelu,
                                  .amax = true});
  // SwiGLU: B of 2N columns (gate, then up), both layouts, both forms of the tiles.
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.M = 40, .N = 24, .K = 48, .bias = true,
                                  .activation = Activation::SwiGlu, .residual = true,
                                  .scaleB = true});
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.M = 50, .N = 40, .K = 80, .bTransposed = true,
                                  .activation = Activation::SwiGlu, .plan = withDescriptors});
  withDescriptors.blockK = 64;
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.in = Dtype::fp8e4m3, .out = Dtype::fp32, .M = 40, .N = 33,
                                  .K = 112, .scaleB = true, .plan = withDescriptors});
  // The C interface's options struct, every field in use: each must reach its MatmulArgs
  // field (row strides wider than the rows, B as [N, K], the epilogue, fp8's partial sums;
  // then tf32x3 operands into a SwiGLU, and an fp8 C with amax).
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.in = Dtype::fp8e4m3, .out = Dtype::bf16, .M = 33, .N = 40,
                                  .K = 160, .lda = 170, .ldb = 180, .ldc = 48, .ldr = 56,
                                  .bTransposed = true, .bias = true,
                                  .activation = Activation::Gelu, .residual = true,
                                  .scaleA = true, .scaleB = true, .alpha = 0.5f,
                                  .maxImpreciseAcc = 64, .throughCApi = true});
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.in = Dtype::fp32, .out = Dtype::fp32, .M = 30, .N = 24,
                                  .K = 40, .bias = true, .activation = Activation::SwiGlu,
                                  .precision = Precision::tf32x3, .throughCApi = true});
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.in = Dtype::fp8e4m3, .out = Dtype::fp8e4m3, .M = 40, .N = 48,
                                  .K = 64, .bTransposed = true, .outScale = 0.5f, .amax = true,
                                  .throughCApi = true});
}

TEST_F(DotInterpreterTest, LibraryMatmulRefusesBadArguments) {
  auto refuses = [](const kernels::MatmulArgs &a, const std::string &needle) {
    try {
      kernels::matmul(a, nullptr);
      ADD_FAILURE() << "accepted; expected: " << needle;
    } catch (const UserError &e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  HostBuffer x(4096);
  kernels::MatmulArgs ok{.c = x.data(), .a = x.data(), .b = x.data(), .M = 8, .N = 8, .K = 8};
  kernels::MatmulArgs a = ok;
  a.b = nullptr;
  refuses(a, "matmul: b is null");
  a = ok;
  a.ldb = 4;
  refuses(a, "ldb");
  a = ok;
  a.out = kernels::Dtype::int32;
  refuses(a, "out is i32, which only i8 operands give (in is bf16)");
  a.in = kernels::Dtype::int8;
  a.bias = x.data();
  refuses(a, "the exact int8 product takes no epilogue");
  a = ok;
  a.in = kernels::Dtype::int32;
  refuses(a, "in must be fp16, bf16, fp8e4m3, fp8e5m2, i8 or fp32, got i32");
  a = ok;
  a.out = kernels::Dtype::int8;
  refuses(a, "out must be fp32, fp16, bf16, fp8e4m3 or fp8e5m2 (or i32 for i8 operands), got i8");
  a = ok;
  a.outScale = 2;
  refuses(a, "outScale quantizes an fp8 out only (out is bf16)");
  a = ok;
  a.precision = kernels::Precision::ieee;
  refuses(a, "precision applies to fp32 operands only (in is bf16)");
  a = ok;
  a.maxImpreciseAcc = 128;
  refuses(a, "maxImpreciseAcc applies to fp8 operands only (in is bf16)");
  a.in = kernels::Dtype::fp8e4m3;
  a.maxImpreciseAcc = 48;
  refuses(a, "maxImpreciseAcc must be 0 or a positive multiple of 32, got 48");
  a = ok;
  a.residual = x.data();
  a.ldr = 3;
  refuses(a, "ldr");
  a = ok;
  a.K = 0;
  refuses(a, "K");
  kernels::MatmulPlan bad{.blockM = 48};
  try {
    kernels::matmul(ok, nullptr, &bad);
    ADD_FAILURE() << "a 48-row tile was accepted";
  } catch (const UserError &e) {
    EXPECT_NE(std::string(e.what()).find("powers of two of at least 16, got 48 x 256 x 64"),
              std::string::npos)
        << e.what();
  }
  auto refusesPlan = [&](const kernels::MatmulArgs &a, kernels::MatmulPlan plan,
                         const std::string &needle) {
    try {
      kernels::matmul(a, nullptr, &plan);
      ADD_FAILURE() << "accepted; expected: " << needle;
    } catch (const UserError &e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  kernels::MatmulPlan split{.blockM = 16, .blockN = 16, .blockK = 16, .splitK = 2};
  refusesPlan(ok, split,
              "matmul: the plan splits K 2 ways: workspace holds 0 bytes, 512 needed");
  HostBuffer room(512);
  a = ok;
  a.workspace = room.data();
  a.workspaceBytes = 256;
  refusesPlan(a, split, "workspace holds 256 bytes, 512 needed");
  a.workspace = x.data(); // where A, B and C lie
  a.workspaceBytes = 512;
  refusesPlan(a, split, "workspace overlaps an operand or C");
  a.workspace = room.data();
  split.persistent = true;
  refusesPlan(a, split, "a plan either splits K or is persistent, not both");
  split.persistent = false;
  split.splitK = 0;
  refusesPlan(a, split, "a plan's splitK is 1 to 64, got 0");
  a.workspaceBytes = -1;
  refusesPlan(a, split, "workspaceBytes");
  kernels::MatmulPlan streamK{.blockM = 16, .blockN = 16, .blockK = 16, .persistent = true,
                              .streamK = true};
  refusesPlan(ok, streamK,
              "the plan shares K steps between programs (stream-K): workspace holds 0 bytes");
  streamK.persistent = false;
  refusesPlan(ok, streamK, "a stream-K plan is persistent");
}

} // namespace

// Split-K plans (MatmulPlan::splitK): slices of unequal length (10 steps in 3: 4, 4, 2), an
// empty slice (3 steps in 4), through descriptors and pointers, with the whole epilogue run by
// the sum; int8's exact int32 partials; SwiGLU's two products; amax; and the planner's own
// split for a few rows and a long K once a workspace is given.
TEST_F(DotInterpreterTest, LibraryMatmulSplitK) {
  using kernels::Activation;
  using kernels::Dtype;
  kernels::MatmulPlan three{.blockM = 32, .blockN = 32, .blockK = 32, .numWarps = 4,
                            .numStages = 2, .descriptors = true, .splitK = 3};
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.M = 37, .N = 45, .K = 300, .bias = true,
                                  .activation = Activation::Gelu, .residual = true,
                                  .plan = three, .workspace = true});
  kernels::MatmulPlan four{.blockM = 32, .blockN = 32, .blockK = 32, .numWarps = 4,
                           .numStages = 2, .descriptors = false, .splitK = 4};
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.in = Dtype::fp16, .out = Dtype::fp32, .M = 40, .N = 36,
                                  .K = 70, .ldc = 40, .bTransposed = true, .scaleA = true,
                                  .plan = four, .workspace = true});
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.in = Dtype::int8, .out = Dtype::int32, .M = 20, .N = 36,
                                  .K = 200, .plan = three, .workspace = true});
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.M = 33, .N = 24, .K = 128, .bTransposed = true,
                                  .activation = Activation::SwiGlu, .scaleB = true,
                                  .plan = four, .workspace = true});
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.out = Dtype::fp8e4m3, .M = 30, .N = 40, .K = 160,
                                  .outScale = 0.5f, .amax = true, .plan = three,
                                  .workspace = true});
  // The planner: 3 rows of 80 columns on 16 x 64 tiles leave 130 of 132 SMs idle, so with a
  // workspace K's 16 steps of 256 split 4 ways (each slice keeps 4 steps).
  const void *aligned = reinterpret_cast<const void *>(uintptr_t(256)); // read for alignment only
  kernels::MatmulArgs few{.a = aligned, .b = aligned, .M = 3, .N = 80, .K = 4096};
  EXPECT_EQ(kernels::planMatmul(3, 80, 4096, 132, {.canSplitK = true}).splitK, 4);
  EXPECT_EQ(kernels::planMatmul(3, 80, 4096, 132, {}).splitK, 1);
  // More rows: 64 x 128 tiles with K steps of 256 bytes, split until the programs fill the
  // SMs (32 tiles 4 ways); not where the tiles fill a wave already (128 of them at 1024 x 1024
  // x 4096), nor at 1024^3, whose K is too short. Where 128 x 256 tiles fill half the SMs and
  // K is short, those (2048 x 2048 x 1024).
  kernels::MatmulPlan skinny = kernels::planMatmul(512, 512, 16384, 132, {.canSplitK = true});
  EXPECT_EQ(skinny.blockM * skinny.blockN * skinny.splitK, 64 * 128 * 4);
  EXPECT_EQ(skinny.blockK, 128);
  EXPECT_EQ(kernels::planMatmul(1024, 1024, 4096, 132, {.canSplitK = true}).splitK, 1);
  EXPECT_EQ(kernels::planMatmul(1024, 1024, 1024, 132, {.canSplitK = true}).splitK, 1);
  kernels::MatmulPlan half = kernels::planMatmul(2048, 2048, 1024, 132, {.canSplitK = true});
  EXPECT_TRUE(half.blockM == 128 && half.blockN == 256 && half.splitK == 1 && !half.persistent);
  EXPECT_EQ(kernels::maxSplitK(1024, 1024, 1024, 132, {.canSplitK = true}), 4);
  EXPECT_GE(kernels::matmulWorkspaceBytes(few), 4 * 3 * 80 * 4);
  EXPECT_EQ(kernels::matmulWorkspaceBytes({.a = aligned, .b = aligned, .M = 4096, .N = 4096,
                                           .K = 4096}),
            0);
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.M = 3, .N = 80, .K = 4096, .bias = true, .workspace = true});
}

// Plans whose C tile goes through a tensor descriptor (MatmulPlan::tmaStore): what the
// interpreter runs is the descriptor's store, masked at C's edges, for every output form.
TEST_F(DotInterpreterTest, LibraryMatmulTmaStore) {
  using kernels::Activation;
  using kernels::Dtype;
  kernels::MatmulPlan small{.blockM = 16, .blockN = 32, .blockK = 32, .numWarps = 4,
                            .numStages = 3, .tmaStore = true};
  kernels::MatmulPlan persistent = small;
  persistent.persistent = true;
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.M = 50, .N = 70, .K = 72, .bias = true, .residual = true,
                                  .plan = small});
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.in = Dtype::int8, .out = Dtype::int32, .M = 33, .N = 40,
                                  .K = 64, .bTransposed = true, .plan = small});
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.M = 40, .N = 48, .K = 40, .activation = Activation::SwiGlu,
                                  .plan = small});
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.M = 200, .N = 176, .K = 72, .ldc = 181, .plan = persistent});
  kernels::MatmulPlan elements = small;
  elements.tmaStore = false;
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.M = 50, .N = 70, .K = 72, .bias = true, .plan = elements});
}

// Persistent plans (MatmulPlan::persistent): more tiles than programs (one per SM, 132 in the
// interpreter), so programs walk two tiles, a K loop and an epilogue each; K not a multiple of
// the step; the epilogue's bias, residual, amax and SwiGLU's two products; with a producer.
TEST_F(DotInterpreterTest, LibraryMatmulPersistent) {
  using kernels::Activation;
  using kernels::Dtype;
  kernels::MatmulPlan persistent{.blockM = 16, .blockN = 16, .blockK = 32, .numWarps = 4,
                                 .numStages = 3, .descriptors = true, .persistent = true};
  const void *aligned = reinterpret_cast<const void *>(uintptr_t(256)); // read for alignment only
  EXPECT_EQ(kernels::matmulGrid({.a = aligned, .b = aligned, .M = 200, .N = 176, .K = 72},
                                persistent, 132),
            132);
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.M = 200, .N = 176, .K = 72, .bias = true, .residual = true,
                                  .plan = persistent});
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.out = Dtype::fp8e4m3, .M = 180, .N = 200, .K = 40,
                                  .bTransposed = true, .amax = true, .plan = persistent});
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.M = 150, .N = 240, .K = 64, .activation = Activation::SwiGlu,
                                  .plan = persistent});
  kernels::MatmulPlan producer = persistent;
  producer.warpSpecialize = true;
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.M = 200, .N = 176, .K = 72, .residual = true, .plan = producer});
  // The planner takes the ping-pong plan (persistent, a producer, two warp groups taking
  // alternate 128 x 128 tiles) for at most 16 K steps over at least two 128 x 256 tiles a SM,
  // where C's staging leaves the ring room (16-bit C, not fp32); SwiGLU's two products keep
  // 128 x 128 tiles on both groups.
  kernels::MatmulPlan shortK = kernels::planMatmul(8192, 8192, 512, 132);
  EXPECT_TRUE(shortK.persistent && shortK.warpSpecialize && shortK.pingPong &&
              shortK.numWarps == 4 && shortK.numStages == 5 && shortK.blockM == 128 &&
              shortK.blockN == 128);
  kernels::MatmulPlan swiglu = kernels::planMatmul(8192, 8192, 512, 132, {.twoProducts = true});
  EXPECT_TRUE(swiglu.persistent && swiglu.warpSpecialize && !swiglu.pingPong &&
              swiglu.numWarps == 8 && swiglu.numStages == 3 && swiglu.blockN == 128);
  EXPECT_TRUE(kernels::planMatmul(4096, 4096, 1024, 132).persistent);
  // Long K over as many tiles: the wide tiles walked by one program per SM, 3 stages.
  kernels::MatmulPlan longK = kernels::planMatmul(4096, 4096, 2048, 132);
  EXPECT_TRUE(longK.persistent && longK.warpSpecialize && !longK.pingPong &&
              longK.blockN == 256 && longK.numStages == 3);
  EXPECT_FALSE(kernels::planMatmul(4096, 4096, 2048, 132, {.twoProducts = true}).persistent);
  EXPECT_FALSE(kernels::planMatmul(8192, 8192, 512, 132, {.outBytes = 4}).persistent);
  EXPECT_FALSE(kernels::planMatmul(2048, 2048, 512, 132).persistent); // 128 tiles
}

// Cluster plans (MatmulPlan::cluster): programs in pairs on neighbouring row tiles, B's tile a
// multicast load, which the interpreter checks every program of a pair loads alike. An odd
// count of row tiles (the last pair's second tile past M computes zeros and stores nothing),
// per tile and persistent (pairs walking two or more tiles), B either way round, SwiGLU's two
// B tiles; the plan's checks.
TEST_F(DotInterpreterTest, LibraryMatmulCluster) {
  using kernels::Activation;
  kernels::MatmulPlan pairs{.blockM = 16, .blockN = 16, .blockK = 32, .numWarps = 4,
                            .numStages = 3, .descriptors = true, .warpSpecialize = true,
                            .cluster = 2};
  kernels::MatmulPlan persistent = pairs;
  persistent.persistent = true;
  const void *aligned = reinterpret_cast<const void *>(uintptr_t(256)); // read for alignment only
  kernels::MatmulArgs shape{.a = aligned, .b = aligned, .M = 200, .N = 176, .K = 72};
  EXPECT_EQ(kernels::matmulGrid(shape, pairs, 132), 2 * 7 * 11); // 13 row tiles: 7 pairs
  EXPECT_EQ(kernels::matmulGrid(shape, persistent, 132), 132);
  for (const kernels::MatmulPlan &plan : {pairs, persistent}) {
    SCOPED_TRACE(plan.persistent ? "persistent" : "a program per tile");
    checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                   {.M = 200, .N = 176, .K = 72, .bias = true, .residual = true,
                                    .plan = plan});
    checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                   {.M = 300, .N = 400, .K = 40, .bTransposed = true, .plan = plan});
    checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                   {.M = 150, .N = 240, .K = 64,
                                    .activation = Activation::SwiGlu, .plan = plan});
  }
  HostBuffer x(1 << 16);
  kernels::MatmulArgs ok{.c = x.data(), .a = x.data(), .b = x.data(), .M = 64, .N = 64, .K = 64};
  auto refuses = [&](kernels::MatmulPlan p, const std::string &needle) {
    try {
      kernels::matmul(ok, nullptr, &p);
      ADD_FAILURE() << "accepted; expected: " << needle;
    } catch (const UserError &e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  kernels::MatmulPlan three = pairs;
  three.cluster = 3;
  refuses(three, "a plan's cluster is 1 or 2, got 3");
  kernels::MatmulPlan noProducer = pairs;
  noProducer.warpSpecialize = false;
  refuses(noProducer, "it takes warpSpecialize, and neither splitK nor streamK");
}

// Ping-pong plans (MatmulPlan::pingPong): a persistent walk whose tiles two warp groups take
// in turn on the GPU; the interpreter runs the walk as written, so this checks the plan's grid
// (two tiles at a time a program, odd tile counts included) and its refusals.
TEST_F(DotInterpreterTest, LibraryMatmulPingPong) {
  using kernels::Activation;
  kernels::MatmulPlan plan{.blockM = 16, .blockN = 16, .blockK = 32, .numWarps = 4,
                           .numStages = 3, .descriptors = true, .warpSpecialize = true,
                           .persistent = true, .pingPong = true};
  const void *aligned = reinterpret_cast<const void *>(uintptr_t(256)); // read for alignment only
  kernels::MatmulArgs shape{.a = aligned, .b = aligned, .M = 200, .N = 176, .K = 72};
  EXPECT_EQ(kernels::matmulGrid(shape, plan, 132), 72); // 13 x 11 tiles, two a program
  kernels::MatmulArgs few{.a = aligned, .b = aligned, .M = 48, .N = 80, .K = 72};
  EXPECT_EQ(kernels::matmulGrid(few, plan, 132), 8); // 15 tiles: 8 programs
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.M = 200, .N = 176, .K = 72, .bias = true, .residual = true,
                                  .plan = plan});
  checkLibraryMatmul<HostBuffer>(nullptr, sync, {.M = 48, .N = 80, .K = 40, .plan = plan});
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.M = 150, .N = 240, .K = 64, .bTransposed = true,
                                  .activation = Activation::SwiGlu, .plan = plan});
  HostBuffer x(1 << 16);
  kernels::MatmulArgs ok{.c = x.data(), .a = x.data(), .b = x.data(), .M = 64, .N = 64, .K = 64};
  for (auto change : std::vector<std::function<void(kernels::MatmulPlan &)>>{
           [](kernels::MatmulPlan &p) { p.numWarps = 8; },
           [](kernels::MatmulPlan &p) { p.persistent = false; },
           [](kernels::MatmulPlan &p) { p.warpSpecialize = false; },
           [](kernels::MatmulPlan &p) { p.cluster = 2; }}) {
    kernels::MatmulPlan p = plan;
    change(p);
    try {
      kernels::matmul(ok, nullptr, &p);
      ADD_FAILURE() << "accepted";
    } catch (const UserError &e) {
      EXPECT_NE(std::string(e.what()).find("a ping-pong plan's two warp groups take alternate "
                                           "tiles of a persistent walk"),
                std::string::npos)
          << e.what();
    }
  }
}

// Stream-K plans (MatmulPlan::streamK): the programs (132 in the interpreter, fewer where there
// are fewer K steps) take whole tiles but for the last one or two waves' worth, whose K steps
// they share, so that tiles are split between programs at any step, the program that ends a
// tile adding the others' partials from the workspace, whose flags start poisoned (the call
// zeroes them). Every row stride lies on 16 bytes, as tensor descriptors need (else the plan
// runs a program per tile through pointers).
TEST_F(DotInterpreterTest, LibraryMatmulStreamK) {
  using kernels::Activation;
  using kernels::Dtype;
  kernels::MatmulPlan streamK{.blockM = 32, .blockN = 32, .blockK = 16, .numWarps = 4,
                              .numStages = 3, .descriptors = true, .persistent = true,
                              .streamK = true};
  const void *aligned = reinterpret_cast<const void *>(uintptr_t(256)); // read for alignment only
  // 7 x 6 tiles of 13 K steps: 546 steps, 5 a program (4 for the last), so most tiles end in
  // a program that did not start them.
  kernels::MatmulArgs shape{.a = aligned, .b = aligned, .M = 200, .N = 176, .K = 200};
  EXPECT_EQ(kernels::matmulGrid(shape, streamK, 132), 132);
  EXPECT_EQ(kernels::matmulWorkspaceBytes(shape, streamK), 132 * (32 * 32 + 1) * 4);
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.M = 200, .N = 176, .K = 200, .bias = true, .residual = true,
                                  .plan = streamK, .workspace = true});
  // 4 tiles of 40 steps on 132 programs: one step a program, 40 programs to a tile.
  EXPECT_EQ(kernels::matmulGrid({.a = aligned, .b = aligned, .M = 64, .N = 64, .K = 640},
                                streamK, 132),
            132);
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.M = 64, .N = 64, .K = 640, .bTransposed = true,
                                  .plan = streamK, .workspace = true});
  // 18 x 18 tiles: a whole tile each first (tiles pid), then the last 192 tiles' 3 steps
  // shared, 5 a program.
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.M = 560, .N = 568, .K = 48, .bias = true, .plan = streamK,
                                  .workspace = true});
  // Fewer K steps than SMs: a program a step.
  EXPECT_EQ(kernels::matmulGrid({.a = aligned, .b = aligned, .M = 40, .N = 40, .K = 48},
                                streamK, 132),
            12);
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.M = 40, .N = 40, .K = 48, .plan = streamK, .workspace = true});
  // Two products (SwiGLU: two slots a program), int8 into int32, fp8 C with amax, a producer.
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.M = 150, .N = 120, .K = 160, .activation = Activation::SwiGlu,
                                  .plan = streamK, .workspace = true});
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.in = Dtype::int8, .out = Dtype::int32, .M = 96, .N = 80,
                                  .K = 320, .plan = streamK, .workspace = true});
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.out = Dtype::fp8e4m3, .M = 100, .N = 96, .K = 304,
                                  .amax = true, .plan = streamK, .workspace = true});
  kernels::MatmulPlan producer = streamK;
  producer.warpSpecialize = true;
  checkLibraryMatmul<HostBuffer>(nullptr, sync,
                                 {.M = 200, .N = 176, .K = 200, .residual = true,
                                  .plan = producer, .workspace = true});
  // The autotuner's candidates: stream-K where 128 x 256 tiles fill their last wave badly
  // (3072^2: 288 tiles, 2.18 waves), with a workspace only; not at 4096^2 (512 tiles, 3.9).
  auto streamKCandidates = [](int64_t M, int64_t N, int64_t K, bool workspace) {
    int n = 0;
    for (const kernels::MatmulPlan &p :
         kernels::matmulCandidates(M, N, K, 132, {.canSplitK = workspace}, true))
      n += p.streamK;
    return n;
  };
  EXPECT_GE(streamKCandidates(3072, 3072, 4096, true), 1);
  // The workspace a call asks for covers the candidate's slots and flags (132 programs).
  EXPECT_EQ(kernels::matmulWorkspaceBytes({.a = aligned, .b = aligned, .M = 3072, .N = 3072,
                                           .K = 4096}),
            132 * (128 * 128 + 1) * 4);
  EXPECT_EQ(streamKCandidates(3072, 3072, 4096, false), 0);
  EXPECT_EQ(streamKCandidates(4096, 4096, 4096, true), 0);
}
