// dot on the tensor cores (tests/DotCases.h) against double-precision references: every operand
// dtype and accumulator, fp32's three precisions, tiles of several sizes and warp counts,
// pipelined and plain loops, shapes that are not multiples of the tiles, b read transposed,
// batched dots. Skips, saying so, without a GPU; the interpreter twins run everywhere.
#include "DotCases.h"
#include "MatmulLibraryCases.h"
#include "DotScaledCases.h"
#include "GpuTestSupport.h"

#include "kernels/Autotuner.h"
#include "runtime/Device.h"
#include "runtime/Memory.h"

using namespace tritium;
using namespace tritium::testing::tensorcores;
using ir::ScalarKind;
using rt::DeviceBuffer;

namespace {

class DotGpuTest : public tritium::testing::GpuStreamTest {};

TEST_F(DotGpuTest, SixteenBitFloats) {
  SKIP_WITHOUT_GPU();
  for (ScalarKind in : {ScalarKind::F16, ScalarKind::BF16}) {
    checkMatmul<DeviceBuffer>(stream().get(), sync,
                              {.in = in, .M = 200, .N = 136, .K = 300, .BM = 64, .BN = 64,
                               .BK = 32, .warps = 4, .stages = 3});
    checkMatmul<DeviceBuffer>(stream().get(), sync,
                              {.in = in, .out = in, .M = 512, .N = 384, .K = 256, .BM = 128,
                               .BN = 128, .BK = 64, .warps = 8, .stages = 3});
    checkMatmul<DeviceBuffer>(stream().get(), sync,
                              {.in = in, .M = 16, .N = 16, .K = 16, .BM = 16, .BN = 16,
                               .BK = 16, .warps = 4});
  }
  // A long K loop through a 4-stage ring: every stage is refilled many times while other warps
  // read it (the dot reads tiles other threads copied).
  checkMatmul<DeviceBuffer>(stream().get(), sync,
                            {.in = ScalarKind::BF16, .M = 512, .N = 512, .K = 4096, .BM = 128,
                             .BN = 128, .BK = 32, .warps = 8, .stages = 4});
  checkMatmul<DeviceBuffer>(stream().get(), sync,
                            {.in = ScalarKind::F16, .acc = ScalarKind::F16, .out = ScalarKind::F16,
                             .M = 100, .N = 70, .K = 128, .BM = 64, .BN = 32, .BK = 32,
                             .warps = 2, .stages = 2});
}

TEST_F(DotGpuTest, Fp32Precisions) {
  SKIP_WITHOUT_GPU();
  for (const char *p : {"tf32", "tf32x3", "ieee"})
    checkMatmul<DeviceBuffer>(stream().get(), sync,
                              {.in = ScalarKind::F32, .M = 130, .N = 90, .K = 100, .BM = 64,
                               .BN = 32, .BK = 32, .warps = 4, .stages = 2, .precision = p});
}

TEST_F(DotGpuTest, EightBitOperands) {
  SKIP_WITHOUT_GPU();
  checkMatmul<DeviceBuffer>(stream().get(), sync,
                            {.in = ScalarKind::I8, .acc = ScalarKind::I32, .out = ScalarKind::I32,
                             .M = 150, .N = 100, .K = 256, .BM = 64, .BN = 64, .BK = 64,
                             .warps = 4, .stages = 2});
  checkMatmul<DeviceBuffer>(stream().get(), sync,
                            {.in = ScalarKind::U8, .acc = ScalarKind::I32, .out = ScalarKind::I32,
                             .M = 64, .N = 64, .K = 64, .BM = 32, .BN = 32, .BK = 32});
  for (ScalarKind in : {ScalarKind::F8E4M3, ScalarKind::F8E5M2})
    checkMatmul<DeviceBuffer>(stream().get(), sync,
                              {.in = in, .M = 128, .N = 96, .K = 160, .BM = 64, .BN = 32,
                               .BK = 64, .warps = 4, .stages = 2, .ptxVersion = 84});
}

TEST_F(DotGpuTest, TransposedOperandAndBatches) {
  SKIP_WITHOUT_GPU();
  checkMatmul<DeviceBuffer>(stream().get(), sync,
                            {.in = ScalarKind::BF16, .M = 96, .N = 80, .K = 72, .BM = 32,
                             .BN = 32, .BK = 32, .warps = 4, .stages = 2, .bColumns = true});
  for (int warps : {1, 4, 8})
    checkBatched<DeviceBuffer>(stream().get(), sync, 2, 16, 32, 16, warps);
  checkBatched<DeviceBuffer>(stream().get(), sync, 4, 64, 64, 32, 4);
}

// Hopper's wgmma (sm_90a): warp groups of 4 and 8 warps, one and two 64-row slices per warp
// group, 64 to 256 columns, masked edges, long K loops through 3- and 4-stage rings (the
// warp group's product in flight across iterations), b stored [N, K] and read K-major from
// its ring, and a dot without a ring.
TEST_F(DotGpuTest, WarpGroupMma) {
  SKIP_WITHOUT_GPU();
  if (rt::Context::current().props().arch() != "sm_90")
    GTEST_SKIP() << "wgmma needs an sm_90 GPU, this one is "
                 << rt::Context::current().props().arch();
  for (ScalarKind in : {ScalarKind::F16, ScalarKind::BF16}) {
    checkMatmul<DeviceBuffer>(stream().get(), sync,
                              {.in = in, .out = in, .M = 300, .N = 520, .K = 200, .BM = 128,
                               .BN = 256, .BK = 64, .warps = 8, .stages = 3, .arch = "sm_90a"});
    checkMatmul<DeviceBuffer>(stream().get(), sync,
                              {.in = in, .M = 192, .N = 192, .K = 192, .BM = 64, .BN = 64,
                               .BK = 64, .warps = 4, .stages = 2, .arch = "sm_90a"});
  }
  checkMatmul<DeviceBuffer>(stream().get(), sync,
                            {.in = ScalarKind::BF16, .M = 512, .N = 512, .K = 4096, .BM = 128,
                             .BN = 128, .BK = 64, .warps = 4, .stages = 4, .arch = "sm_90a"});
  checkMatmul<DeviceBuffer>(stream().get(), sync,
                            {.in = ScalarKind::BF16, .M = 256, .N = 384, .K = 1024, .BM = 128,
                             .BN = 128, .BK = 128, .warps = 8, .stages = 3, .arch = "sm_90a"});
  checkMatmul<DeviceBuffer>(stream().get(), sync,
                            {.in = ScalarKind::F16, .M = 130, .N = 200, .K = 150, .BM = 64,
                             .BN = 128, .BK = 64, .warps = 4, .stages = 2, .bColumns = true,
                             .arch = "sm_90a"});
  checkMatmul<DeviceBuffer>(stream().get(), sync,
                            {.in = ScalarKind::BF16, .M = 64, .N = 64, .K = 64, .BM = 64,
                             .BN = 64, .BK = 64, .warps = 4, .stages = 1, .arch = "sm_90a"});
  // K tiles of 32 and 16 (rows of 64 and 32 bytes, swizzled as wide), b either way round.
  for (bool bColumns : {false, true}) {
    checkMatmul<DeviceBuffer>(stream().get(), sync,
                              {.in = ScalarKind::BF16, .M = 200, .N = 264, .K = 333, .BM = 128,
                               .BN = 128, .BK = 32, .warps = 8, .stages = 3,
                               .bColumns = bColumns, .arch = "sm_90a"});
    checkMatmul<DeviceBuffer>(stream().get(), sync,
                              {.in = ScalarKind::F16, .out = ScalarKind::F16, .M = 130,
                               .N = 128, .K = 300, .BM = 64, .BN = 128, .BK = 16, .warps = 4,
                               .stages = 4, .bColumns = bColumns, .arch = "sm_90a"});
  }
  // b K-major of 32 and 16 columns (wgmma's n32 and n16), edges masked.
  checkMatmul<DeviceBuffer>(stream().get(), sync,
                            {.in = ScalarKind::BF16, .M = 300, .N = 90, .K = 500, .BM = 128,
                             .BN = 32, .BK = 64, .warps = 8, .stages = 3, .bColumns = true,
                             .arch = "sm_90a"});
  checkMatmul<DeviceBuffer>(stream().get(), sync,
                            {.in = ScalarKind::F8E4M3, .M = 100, .N = 40, .K = 300, .BM = 64,
                             .BN = 16, .BK = 128, .warps = 4, .stages = 3, .bColumns = true,
                             .ptxVersion = 84, .arch = "sm_90a"});
  // b stored [N, K] and read K-major from its ring, the group in flight across a long loop.
  checkMatmul<DeviceBuffer>(stream().get(), sync,
                            {.in = ScalarKind::BF16, .M = 333, .N = 520, .K = 1000, .BM = 128,
                             .BN = 256, .BK = 64, .warps = 8, .stages = 4, .bColumns = true,
                             .arch = "sm_90a"});
}

// A product of a product: the first's result, cast to 16 or 8 bits, is the second's a, which
// wgmma takes from registers in its accumulator fragments (one and two 64-row slices per warp, K of
// one and several register fragments), as attention's P; mma.sync stages it.
TEST_F(DotGpuTest, ChainedProducts) {
  SKIP_WITHOUT_GPU();
  bool hopper = rt::Context::current().props().arch() == "sm_90";
  for (ScalarKind in : {ScalarKind::BF16, ScalarKind::F16}) {
    if (hopper) {
      checkChained<DeviceBuffer>(stream().get(), sync, in, 64, 64, 64, 64, 4, "sm_90a");
      checkChained<DeviceBuffer>(stream().get(), sync, in, 128, 64, 128, 128, 8, "sm_90a");
      checkChained<DeviceBuffer>(stream().get(), sync, in, 128, 128, 64, 256, 4, "sm_90a");
    }
    checkChained<DeviceBuffer>(stream().get(), sync, in, 64, 64, 64, 64, 4, "sm_90");
  }
  // 8 bits: after fp8 operands the first product computes its columns in the 8-bit fragment's
  // order (its b's rows permuted in the staging); after bf16 ones the accumulator's pairs are
  // traded within each quad of lanes into wgmma's fragments.
  if (hopper) {
    checkChained<DeviceBuffer>(stream().get(), sync, ScalarKind::BF16, 64, 64, 64, 64, 4,
                               "sm_90a", ScalarKind::F8E4M3);
    checkChained<DeviceBuffer>(stream().get(), sync, ScalarKind::BF16, 128, 64, 128, 128, 8,
                               "sm_90a", ScalarKind::F8E4M3);
    checkChained<DeviceBuffer>(stream().get(), sync, ScalarKind::F8E4M3, 64, 64, 64, 64, 4,
                               "sm_90a");
    checkChained<DeviceBuffer>(stream().get(), sync, ScalarKind::F8E4M3, 128, 64, 128, 128, 8,
                               "sm_90a");
    checkChained<DeviceBuffer>(stream().get(), sync, ScalarKind::F8E4M3, 128, 128, 64, 256, 4,
                               "sm_90a");
  }
}

// fp8, 8-bit integers and tf32 on wgmma (sm_90a), 32 bytes of K per instruction: b stored
// [N, K] and read K-major from its ring, or stored [K, N] and staged transposed; edges masked;
// fp8 into bf16 as torch._scaled_mm gives it.
TEST_F(DotGpuTest, WarpGroupMmaOtherTypes) {
  SKIP_WITHOUT_GPU();
  if (rt::Context::current().props().arch() != "sm_90")
    GTEST_SKIP() << "wgmma needs an sm_90 GPU, this one is "
                 << rt::Context::current().props().arch();
  checkMatmul<DeviceBuffer>(stream().get(), sync,
                            {.in = ScalarKind::F8E4M3, .out = ScalarKind::BF16, .M = 300,
                             .N = 520, .K = 1000, .BM = 128, .BN = 256, .BK = 128, .warps = 8,
                             .stages = 4, .bColumns = true, .ptxVersion = 84, .arch = "sm_90a"});
  checkMatmul<DeviceBuffer>(stream().get(), sync,
                            {.in = ScalarKind::F8E5M2, .M = 200, .N = 136, .K = 300, .BM = 64,
                             .BN = 128, .BK = 128, .warps = 4, .stages = 3, .ptxVersion = 84,
                             .arch = "sm_90a"});
  checkMatmul<DeviceBuffer>(stream().get(), sync,
                            {.in = ScalarKind::I8, .acc = ScalarKind::I32, .out = ScalarKind::I32,
                             .M = 150, .N = 200, .K = 520, .BM = 128, .BN = 128, .BK = 128,
                             .warps = 8, .stages = 3, .bColumns = true, .arch = "sm_90a"});
  checkMatmul<DeviceBuffer>(stream().get(), sync,
                            {.in = ScalarKind::U8, .acc = ScalarKind::I32, .out = ScalarKind::I32,
                             .M = 64, .N = 64, .K = 256, .BM = 64, .BN = 64, .BK = 128,
                             .warps = 4, .stages = 2, .arch = "sm_90a"});
  for (bool bColumns : {true, false})
    checkMatmul<DeviceBuffer>(stream().get(), sync,
                              {.in = ScalarKind::F32, .M = 130, .N = 200, .K = 150, .BM = 64,
                               .BN = 64, .BK = 32, .warps = 4, .stages = 3,
                               .bColumns = bColumns, .arch = "sm_90a"});
  // Rows of 64 and 32 bytes (SWIZZLE_64B, SWIZZLE_32B): fp8 K tiles of 64 and 32, tf32 of 16.
  checkMatmul<DeviceBuffer>(stream().get(), sync,
                            {.in = ScalarKind::F8E4M3, .out = ScalarKind::BF16, .M = 200,
                             .N = 256, .K = 500, .BM = 128, .BN = 128, .BK = 64, .warps = 8,
                             .stages = 3, .bColumns = true, .ptxVersion = 84, .arch = "sm_90a"});
  checkMatmul<DeviceBuffer>(stream().get(), sync,
                            {.in = ScalarKind::F8E5M2, .M = 100, .N = 128, .K = 200, .BM = 64,
                             .BN = 64, .BK = 32, .warps = 4, .stages = 3, .ptxVersion = 84,
                             .arch = "sm_90a"});
  for (bool bColumns : {true, false})
    checkMatmul<DeviceBuffer>(stream().get(), sync,
                              {.in = ScalarKind::F32, .M = 96, .N = 192, .K = 100, .BM = 64,
                               .BN = 64, .BK = 16, .warps = 4, .stages = 3,
                               .bColumns = bColumns, .arch = "sm_90a"});
}

// max_num_imprecise_acc on wgmma: with all-positive fp8 operands over K = 8192 the tensor
// cores' own sum loses bits as it grows (and the fast form's error is far past the random-sign
// bound of the other tests); adding each 128 (or 32) of K into fp32 keeps them.
TEST_F(DotGpuTest, ImpreciseAccumulation) {
  SKIP_WITHOUT_GPU();
  if (rt::Context::current().props().arch() != "sm_90")
    GTEST_SKIP() << "wgmma needs an sm_90 GPU, this one is "
                 << rt::Context::current().props().arch();
  double fast = impreciseAccumulationError<DeviceBuffer>(stream().get(), sync, 8192, 0, "sm_90a");
  double every128 =
      impreciseAccumulationError<DeviceBuffer>(stream().get(), sync, 8192, 128, "sm_90a");
  double every32 =
      impreciseAccumulationError<DeviceBuffer>(stream().get(), sync, 8192, 32, "sm_90a");
  std::printf("fp8 sums over K = 8192, largest error / sum: %.3g fast, %.3g every 128, "
              "%.3g every 32\n", fast, every128, every32);
  // On the H200: 0.14 fast, 3.9e-5 every 128, 0 every 32 (partial sums of 32 such products
  // are exact in the tensor cores, and their fp32 sum is too).
  EXPECT_LT(every128, fast / 100);
  EXPECT_LE(every128, 1e-4);
  EXPECT_LE(every32, 1e-6);
}

// dot_scaled (microscaling operands upcast for dot): every format on either side, scaled and
// not, on the device's default target and, on Hopper, on wgmma.
TEST_F(DotGpuTest, DotScaled) {
  SKIP_WITHOUT_GPU();
  bool hopper = rt::Context::current().props().arch() == "sm_90";
  for (std::string a : {"e2m1", "e4m3", "e5m2", "bf16", "fp16"})
    for (std::string b : {"e2m1", "e4m3", "e5m2", "bf16", "fp16"}) {
      checkDotScaled<DeviceBuffer>(stream().get(), sync, {.aFormat = a, .bFormat = b});
      if (hopper)
        checkDotScaled<DeviceBuffer>(stream().get(), sync,
                                     {.aFormat = a, .bFormat = b, .M = 64, .N = 64, .K = 128,
                                      .arch = "sm_90a"});
    }
  checkDotScaled<DeviceBuffer>(stream().get(), sync,
                               {.aFormat = "e4m3", .bFormat = "e2m1", .bScale = false, .K = 32});
}

// The library's matmul (kernels/Matmul.h) on the planner's plans: 128 x 256 tiles on wgmma with
// a fused bias and GELU, nn.Linear's [N, K] weights read in place with SiLU into fp32, the
// small tiles of a small product, a decode shape on mma.sync, strided rows.
TEST_F(DotGpuTest, LibraryMatmul) {
  SKIP_WITHOUT_GPU();
  using kernels::Activation;
  using kernels::Dtype;
  kernels::setAutotune(false); // the planner's plans, each on its path
  checkLibraryMatmul<DeviceBuffer>(stream().get(), sync,
                                   {.M = 2100, .N = 4200, .K = 520, .bias = true,
                                    .activation = Activation::Gelu});
  checkLibraryMatmul<DeviceBuffer>(stream().get(), sync,
                                   {.in = Dtype::fp16, .out = Dtype::fp32, .M = 1000, .N = 384,
                                    .K = 512, .bTransposed = true, .activation = Activation::Silu});
  checkLibraryMatmul<DeviceBuffer>(stream().get(), sync, {.M = 300, .N = 200, .K = 100});
  checkLibraryMatmul<DeviceBuffer>(stream().get(), sync,
                                   {.M = 16, .N = 1024, .K = 2048, .bTransposed = true});
  checkLibraryMatmul<DeviceBuffer>(stream().get(), sync,
                                   {.in = Dtype::fp16, .out = Dtype::fp16, .M = 130, .N = 70,
                                    .K = 90, .lda = 96, .ldb = 80, .ldc = 72, .bias = true});
  kernels::resetAutotune();
}

// The producer warp group's plans (the autotuner's candidates): TMA tiles issued by their own
// warps, on shapes that are not multiples of any tile, b either way, with a bias, a residual
// and SwiGLU's two products.
TEST_F(DotGpuTest, LibraryMatmulWithAProducerWarpGroup) {
  SKIP_WITHOUT_GPU();
  using kernels::Activation;
  using kernels::MatmulPlan;
  // (64 x 128 x 128: K steps of 256 bytes, two 128-byte panels of each A and B row.)
  for (MatmulPlan plan : {MatmulPlan{128, 256, 64, 8, 4, true, true},
                          MatmulPlan{64, 128, 64, 4, 4, true, true},
                          MatmulPlan{64, 128, 128, 4, 4, true, true}}) {
    SCOPED_TRACE(kernels::describe(plan.fields()));
    checkLibraryMatmul<DeviceBuffer>(stream().get(), sync,
                                     {.M = 1000, .N = 1030, .K = 520, .bias = true,
                                      .residual = true, .plan = plan});
    checkLibraryMatmul<DeviceBuffer>(stream().get(), sync,
                                     {.M = 272, .N = 384, .K = 4096, .bTransposed = true,
                                      .plan = plan});
    checkLibraryMatmul<DeviceBuffer>(stream().get(), sync,
                                     {.in = kernels::Dtype::fp16, .out = kernels::Dtype::fp16,
                                      .M = 1024, .N = 1024, .K = 200, .plan = plan});
  }
  // (Two accumulators: the narrower tiles, as the planner halves them.)
  checkLibraryMatmul<DeviceBuffer>(stream().get(), sync,
                                   {.M = 200, .N = 96, .K = 256, .activation = Activation::SwiGlu,
                                    .plan = MatmulPlan{64, 128, 64, 4, 4, true, true}});
}

// Every operand dtype and the whole epilogue on the planner's plans: fp8 (both layouts of b,
// row-wise scales), int8 exact into int32 and dequantized into bf16, fp32 at each precision,
// a residual with alpha; tiles through descriptors (TMA) and, where a row stride is off 16
// bytes (lda 1001, K = 70 int8 rows), through pointers; M = 1 and K = 16.
TEST_F(DotGpuTest, LibraryMatmulDtypesAndEpilogues) {
  SKIP_WITHOUT_GPU();
  using kernels::Activation;
  using kernels::Dtype;
  using kernels::Precision;
  kernels::setAutotune(false);
  std::vector<LibraryMatmulCase> cases = {
      {.in = Dtype::fp8e4m3, .M = 1000, .N = 1500, .K = 1024, .bTransposed = true, .bias = true,
       .scaleA = true, .scaleB = true},
      {.in = Dtype::fp8e4m3, .out = Dtype::fp32, .M = 300, .N = 520, .K = 384},
      // fp8 partial sums added into fp32 every 64 of K (and, at 128, every K tile).
      {.in = Dtype::fp8e4m3, .M = 500, .N = 640, .K = 1000, .bTransposed = true,
       .maxImpreciseAcc = 64},
      // The same through the C interface's options struct, with every epilogue field.
      {.in = Dtype::fp8e4m3, .M = 500, .N = 640, .K = 1000, .lda = 1008, .ldb = 1016,
       .ldc = 648, .ldr = 656, .bTransposed = true, .bias = true,
       .activation = Activation::Gelu, .residual = true, .scaleA = true, .scaleB = true,
       .alpha = 0.5f, .maxImpreciseAcc = 64, .throughCApi = true},
      {.in = Dtype::fp8e5m2, .out = Dtype::fp32, .M = 256, .N = 256, .K = 4096,
       .maxImpreciseAcc = 128},
      {.in = Dtype::fp8e5m2, .out = Dtype::fp16, .M = 16, .N = 1024, .K = 2048,
       .bTransposed = true, .alpha = 0.5f},
      {.in = Dtype::int8, .out = Dtype::int32, .M = 700, .N = 600, .K = 512, .bTransposed = true},
      {.in = Dtype::int8, .out = Dtype::int32, .M = 130, .N = 90, .K = 70},
      {.in = Dtype::int8, .M = 500, .N = 384, .K = 256, .bTransposed = true, .scaleA = true,
       .scaleB = true},
      {.in = Dtype::fp32, .out = Dtype::fp32, .M = 600, .N = 520, .K = 300, .residual = true},
      {.in = Dtype::fp32, .out = Dtype::fp32, .M = 200, .N = 130, .K = 96,
       .precision = Precision::tf32x3},
      {.in = Dtype::fp32, .out = Dtype::fp32, .M = 70, .N = 130, .K = 64,
       .precision = Precision::ieee},
      {.M = 1000, .N = 2000, .K = 1001, .lda = 1001, .bias = true, .activation = Activation::Gelu,
       .residual = true, .alpha = 0.25f},
      {.M = 900, .N = 1100, .K = 640, .ldr = 1200, .residual = true},
      {.M = 1, .N = 300, .K = 16, .bTransposed = true},
      // fp8 out, quantized, with amax (one atomic per tile).
      {.in = Dtype::fp8e4m3, .out = Dtype::fp8e4m3, .M = 1000, .N = 1536, .K = 1024,
       .bTransposed = true, .scaleA = true, .scaleB = true, .outScale = 0.25f, .amax = true},
      {.out = Dtype::fp8e5m2, .M = 300, .N = 520, .K = 200, .bias = true, .residual = true,
       .amax = true},
      // SwiGLU of two halves (B of 2N columns): descriptors (the wide plan) and pointers.
      {.M = 1000, .N = 1408, .K = 1024, .bTransposed = true, .bias = true,
       .activation = Activation::SwiGlu},
      {.M = 300, .N = 520, .K = 200, .lda = 201, .activation = Activation::SwiGlu,
       .residual = true},
  };
  for (LibraryMatmulCase c : cases) {
    c.onWgmma = true; // Hopper: the bounds of wgmma's fp8 sums and tf32 truncation
    SCOPED_TRACE(c.str());
    checkLibraryMatmul<DeviceBuffer>(stream().get(), sync, c);
  }
  kernels::resetAutotune();
}

} // namespace

namespace {

// Split-K plans (MatmulPlan::splitK): each tile's K range in slices over programs, the slices'
// partial products summed by a second kernel that runs the epilogue. The planner's split for a
// few rows and a long K once a workspace is given (and the autotuner's choice among split
// candidates), given splits on wgmma with and without a producer, on mma.sync for 16 rows,
// uneven and empty slices, fp8, int8 exact and SwiGLU.
TEST_F(DotGpuTest, LibraryMatmulSplitK) {
  SKIP_WITHOUT_GPU();
  using kernels::Activation;
  using kernels::Dtype;
  using kernels::MatmulPlan;
  bool hopper = rt::Context::current().props().arch() == "sm_90";
  MatmulPlan wide{.splitK = 4}, producer{.warpSpecialize = true, .splitK = 3},
      small{.blockM = 64, .blockN = 128, .blockK = 64, .numWarps = 4, .splitK = 5},
      few{.blockM = 16, .blockN = 64, .blockK = 256, .numWarps = 4, .numStages = 3,
          .descriptors = false, .splitK = 8},
      fp8{.blockK = 128, .splitK = 2};
  std::vector<LibraryMatmulCase> cases = {
      {.M = 64, .N = 512, .K = 8192, .bias = true, .workspace = true},
      {.M = 300, .N = 500, .K = 3000, .bias = true, .activation = Activation::Gelu,
       .residual = true, .plan = wide, .workspace = true},
      {.in = Dtype::fp16, .out = Dtype::fp32, .M = 200, .N = 256, .K = 2050,
       .bTransposed = true, .plan = producer, .workspace = true},
      // 5 slices of K's 3 steps: two are empty.
      {.M = 100, .N = 130, .K = 192, .scaleA = true, .plan = small, .workspace = true},
      {.M = 16, .N = 1024, .K = 8192, .bTransposed = true, .plan = few, .workspace = true},
      {.in = Dtype::fp8e4m3, .M = 256, .N = 512, .K = 4096, .bTransposed = true,
       .scaleA = true, .amax = true, .plan = fp8, .workspace = true},
      {.in = Dtype::int8, .out = Dtype::int32, .M = 128, .N = 256, .K = 4096,
       .bTransposed = true, .plan = fp8, .workspace = true},
      {.M = 96, .N = 384, .K = 2048, .bTransposed = true, .activation = Activation::SwiGlu,
       .plan = MatmulPlan{.blockM = 128, .blockN = 128, .splitK = 4}, .workspace = true},
  };
  for (bool tuned : {false, true}) {
    kernels::setAutotune(tuned);
    for (LibraryMatmulCase c : cases) {
      if (tuned && c.plan)
        continue;
      c.onWgmma = hopper;
      SCOPED_TRACE(c.str() + (tuned ? " autotuned" : ""));
      checkLibraryMatmul<DeviceBuffer>(stream().get(), sync, c);
    }
  }
  kernels::resetAutotune();
}

// Persistent plans (MatmulPlan::persistent): more tiles than SMs, so programs walk several
// tiles, each with its own K loop and epilogue; K not a multiple of the step; the epilogue's
// bias, residual and amax; fp8 operands read K-major; SwiGLU's two products; and with a
// producer warp group whose ring runs on across the tiles (one K step a tile, three, many).
TEST_F(DotGpuTest, LibraryMatmulPersistent) {
  SKIP_WITHOUT_GPU();
  if (rt::Context::current().props().arch() != "sm_90")
    GTEST_SKIP() << "persistent plans read their tiles through TMA descriptors on Hopper";
  using kernels::Activation;
  using kernels::Dtype;
  // (128 x 256 tiles keep C's staging beside the ring, so 3 stages fit where 4 did not.)
  kernels::MatmulPlan wide{.numStages = 3, .persistent = true},
      narrow{.blockM = 128, .blockN = 128, .persistent = true},
      producer{.numStages = 3, .warpSpecialize = true, .persistent = true},
      fp8{.blockK = 128, .numStages = 3, .persistent = true},
      fp8Producer{.blockK = 128, .numStages = 3, .warpSpecialize = true, .persistent = true},
      narrowProducer{.blockM = 128, .blockN = 128, .warpSpecialize = true, .persistent = true};
  std::vector<LibraryMatmulCase> cases = {
      {.M = 2100, .N = 2200, .K = 200, .bias = true, .residual = true, .plan = wide},
      {.in = Dtype::fp16, .out = Dtype::fp16, .M = 4096, .N = 4096, .K = 512, .plan = wide},
      {.M = 2000, .N = 3000, .K = 1000, .bTransposed = true, .amax = true, .plan = producer},
      {.in = Dtype::fp8e4m3, .M = 1500, .N = 2560, .K = 384, .bTransposed = true,
       .scaleA = true, .plan = fp8},
      {.M = 1500, .N = 1408, .K = 512, .bTransposed = true, .bias = true,
       .activation = Activation::SwiGlu, .plan = narrow},
      // The producer's ring runs across tiles: K of 1, 3 and many steps, tiles at the edges.
      {.M = 1100, .N = 2100, .K = 40, .residual = true, .plan = producer},
      {.in = Dtype::fp16, .out = Dtype::fp16, .M = 4096, .N = 4096, .K = 136, .plan = producer},
      {.M = 300, .N = 700, .K = 3000, .bias = true, .plan = producer},
      {.in = Dtype::fp8e4m3, .M = 1500, .N = 2560, .K = 384, .bTransposed = true,
       .scaleA = true, .plan = fp8Producer},
      {.M = 1500, .N = 1408, .K = 512, .bTransposed = true, .bias = true,
       .activation = Activation::SwiGlu, .plan = narrowProducer},
      // SwiGLU's up tile through TMA at columns N + j of B's 2 x N: N no multiple of the tile.
      {.M = 1000, .N = 1000, .K = 200, .activation = Activation::SwiGlu, .residual = true,
       .plan = narrowProducer},
  };
  for (LibraryMatmulCase c : cases) {
    c.onWgmma = true;
    SCOPED_TRACE(c.str());
    checkLibraryMatmul<DeviceBuffer>(stream().get(), sync, c);
  }
}

// Cluster plans (MatmulPlan::cluster): pairs of programs on neighbouring row tiles, B's tiles
// multicast by TMA into both (each program copying half), the ring's stages released across
// the pair. Odd row-tile counts (the pair's second tile past M), one K step and many, B either
// way round, per tile and persistent, every epilogue form, fp8 and fp16.
TEST_F(DotGpuTest, LibraryMatmulCluster) {
  SKIP_WITHOUT_GPU();
  if (rt::Context::current().props().arch() != "sm_90")
    GTEST_SKIP() << "cluster plans multicast their tiles by TMA on Hopper";
  using kernels::Activation;
  using kernels::Dtype;
  kernels::MatmulPlan wide{.numStages = 4, .warpSpecialize = true, .cluster = 2},
      widePersistent{.numStages = 3, .warpSpecialize = true, .persistent = true, .cluster = 2},
      narrow{.blockM = 128, .blockN = 128, .warpSpecialize = true, .persistent = true,
             .cluster = 2},
      fp8{.blockK = 128, .numStages = 3, .warpSpecialize = true, .persistent = true,
          .cluster = 2};
  std::vector<LibraryMatmulCase> cases = {
      {.M = 2100, .N = 2200, .K = 200, .bias = true, .residual = true, .plan = wide},
      {.M = 100, .N = 300, .K = 40, .plan = wide},
      {.in = Dtype::fp16, .out = Dtype::fp16, .M = 4096, .N = 4096, .K = 512,
       .plan = widePersistent},
      {.M = 2000, .N = 3000, .K = 1000, .bTransposed = true, .amax = true,
       .plan = widePersistent},
      {.M = 1100, .N = 2100, .K = 40, .residual = true, .plan = widePersistent},
      {.M = 300, .N = 700, .K = 3000, .bias = true, .plan = narrow},
      {.M = 1500, .N = 1408, .K = 512, .bTransposed = true, .bias = true,
       .activation = Activation::SwiGlu, .plan = narrow},
      {.in = Dtype::fp8e4m3, .M = 1500, .N = 2560, .K = 384, .bTransposed = true,
       .scaleA = true, .plan = fp8},
  };
  for (LibraryMatmulCase c : cases) {
    c.onWgmma = true;
    SCOPED_TRACE(c.str());
    checkLibraryMatmul<DeviceBuffer>(stream().get(), sync, c);
  }
}

// Ping-pong plans (MatmulPlan::pingPong): two warp groups take alternate tiles of each
// program's walk from one producer's ring, each staging its own C tile. Odd tile counts (the
// last program's second group idle), fewer tiles than two per SM, K of one step and of many,
// every epilogue form, fp16, fp8 and both layouts of B.
TEST_F(DotGpuTest, LibraryMatmulPingPong) {
  SKIP_WITHOUT_GPU();
  if (rt::Context::current().props().arch() != "sm_90")
    GTEST_SKIP() << "ping-pong plans issue their tiles from a producer warp group on Hopper";
  using kernels::Activation;
  using kernels::Dtype;
  kernels::MatmulPlan square{.blockN = 128, .numWarps = 4, .warpSpecialize = true,
                             .persistent = true, .pingPong = true},
      wide{.blockM = 64, .blockN = 256, .numWarps = 4, .numStages = 3, .warpSpecialize = true,
           .persistent = true, .pingPong = true},
      half{.blockN = 64, .numWarps = 4, .warpSpecialize = true, .persistent = true,
           .pingPong = true}, // SwiGLU's two accumulators
      fp8{.blockN = 128, .blockK = 128, .numWarps = 4, .numStages = 3, .warpSpecialize = true,
          .persistent = true, .pingPong = true};
  std::vector<LibraryMatmulCase> cases = {
      {.M = 2100, .N = 2200, .K = 200, .bias = true, .residual = true, .plan = square},
      {.M = 100, .N = 300, .K = 40, .plan = square},
      {.M = 384, .N = 128, .K = 64, .plan = square}, // 3 tiles, one K step
      {.in = Dtype::fp16, .out = Dtype::fp16, .M = 4096, .N = 4096, .K = 512, .plan = square},
      {.M = 2000, .N = 3000, .K = 1000, .bTransposed = true, .amax = true, .plan = square},
      {.M = 1100, .N = 2100, .K = 3000, .residual = true, .plan = wide},
      {.M = 1500, .N = 1408, .K = 512, .bTransposed = true, .bias = true,
       .activation = Activation::SwiGlu, .plan = half},
      {.M = 1000, .N = 1000, .K = 1000, .activation = Activation::Gelu, .plan = wide},
      {.in = Dtype::fp8e4m3, .M = 1500, .N = 2560, .K = 384, .bTransposed = true,
       .scaleA = true, .plan = fp8},
  };
  for (LibraryMatmulCase c : cases) {
    c.onWgmma = true;
    SCOPED_TRACE(c.str());
    checkLibraryMatmul<DeviceBuffer>(stream().get(), sync, c);
  }
}

// Stream-K plans (MatmulPlan::streamK): the SMs share the tiles' K steps, so tiles are split
// between programs at any step and finished by the program holding their last step, which
// waits for the others' partial products in the (poisoned) workspace. Shapes whose tiles fill
// their last wave partly, few and many K steps a program, with and without the producer warp
// group, every epilogue form; the first case again on a workspace whose every flag says
// "ready" (the call zeroes the flags before the programs start). Row strides lie on 16 bytes,
// as the plan's tensor descriptors need.
TEST_F(DotGpuTest, LibraryMatmulStreamK) {
  SKIP_WITHOUT_GPU();
  if (rt::Context::current().props().arch() != "sm_90")
    GTEST_SKIP() << "stream-K plans read their tiles through TMA descriptors on Hopper";
  using kernels::Activation;
  using kernels::Dtype;
  kernels::MatmulPlan producer{.blockM = 128, .blockN = 128, .warpSpecialize = true,
                               .persistent = true, .streamK = true},
      plain{.blockM = 128, .blockN = 128, .persistent = true, .streamK = true},
      fp8{.blockM = 128, .blockN = 128, .blockK = 128, .numStages = 3, .warpSpecialize = true,
          .persistent = true, .streamK = true};
  std::vector<LibraryMatmulCase> cases = {
      // 12 x 12 tiles (1.09 waves), and 30 x 29 (6.6 waves: 5 tiles each, then 342 shared).
      {.M = 1536, .N = 1536, .K = 1024, .plan = producer},
      {.M = 3800, .N = 3704, .K = 200, .bias = true, .residual = true, .plan = producer},
      {.M = 300, .N = 700, .K = 3000, .bTransposed = true, .amax = true, .plan = producer},
      {.in = Dtype::fp16, .out = Dtype::fp16, .M = 1000, .N = 1000, .K = 1000, .plan = plain},
      {.M = 1500, .N = 1408, .K = 512, .bTransposed = true, .bias = true,
       .activation = Activation::SwiGlu, .plan = producer},
      {.M = 777, .N = 1500, .K = 4104, .activation = Activation::Gelu, .plan = producer},
      {.in = Dtype::fp8e4m3, .M = 1500, .N = 2560, .K = 384, .bTransposed = true,
       .scaleA = true, .plan = fp8},
      {.in = Dtype::int8, .out = Dtype::int32, .M = 1000, .N = 900, .K = 2048, .bTransposed = true,
       .plan = producer},
      {.M = 1536, .N = 1536, .K = 1024, .plan = producer, .workspaceWord = 0x3f800000u},
  };
  for (LibraryMatmulCase c : cases) {
    c.onWgmma = true;
    c.workspace = true;
    SCOPED_TRACE(c.str());
    checkLibraryMatmul<DeviceBuffer>(stream().get(), sync, c);
  }
}

// Plans whose C tile leaves by one TMA store (MatmulPlan::tmaStore, the default): partial
// tiles at both edges (TMA drops what lies past C), every output type, the epilogue's bias and
// residual, SwiGLU, persistent programs storing a tile per pass of the loop (the staging
// buffer reused only once TMA has read it), a C whose ldc TMA cannot take (element stores),
// and a plan that asks for element stores.
TEST_F(DotGpuTest, LibraryMatmulTmaStore) {
  SKIP_WITHOUT_GPU();
  if (rt::Context::current().props().arch() != "sm_90")
    GTEST_SKIP() << "TMA stores are Hopper's";
  using kernels::Activation;
  using kernels::Dtype;
  kernels::MatmulPlan wide{.tmaStore = true},
      narrow{.blockM = 128, .blockN = 128, .numStages = 3, .tmaStore = true},
      persistent{.numStages = 3, .persistent = true, .tmaStore = true},
      producer{.numStages = 3, .warpSpecialize = true, .persistent = true, .tmaStore = true},
      fp8{.blockK = 128, .tmaStore = true}, elements{.tmaStore = false};
  std::vector<LibraryMatmulCase> cases = {
      {.M = 2100, .N = 2200, .K = 200, .bias = true, .residual = true, .plan = wide},
      {.in = Dtype::fp16, .out = Dtype::fp16, .M = 1000, .N = 1032, .K = 512, .plan = narrow},
      {.out = Dtype::fp32, .M = 333, .N = 264, .K = 96, .plan = narrow},
      {.in = Dtype::int8, .out = Dtype::int32, .M = 300, .N = 520, .K = 256,
       .bTransposed = true, .plan = narrow},
      {.in = Dtype::fp8e4m3, .M = 1500, .N = 2560, .K = 384, .bTransposed = true,
       .scaleA = true, .plan = fp8},
      {.M = 1500, .N = 1408, .K = 512, .bTransposed = true, .bias = true,
       .activation = Activation::SwiGlu, .plan = narrow},
      {.M = 4000, .N = 4100, .K = 520, .residual = true, .plan = persistent},
      {.M = 2000, .N = 3000, .K = 1000, .bTransposed = true, .plan = producer},
      {.M = 700, .N = 900, .K = 128, .ldc = 903, .plan = wide}, // rows not on 16 bytes
      {.M = 2100, .N = 2200, .K = 200, .bias = true, .plan = elements},
  };
  for (LibraryMatmulCase c : cases) {
    c.onWgmma = true;
    SCOPED_TRACE(c.str());
    checkLibraryMatmul<DeviceBuffer>(stream().get(), sync, c);
  }
}

} // namespace
