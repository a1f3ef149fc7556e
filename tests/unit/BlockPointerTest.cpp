// Block pointers in the interpreter (tests/BlockPointerCases.h): the twins of
// tests/gpu/BlockPointerGpuTest.cpp, which run everywhere; and what a block-pointer matmul
// compiles to on sm_90a without a GPU.
#include "BlockPointerCases.h"
#include "PtxChecks.h"

#include "interpreter/Interpreter.h"

using namespace tritium;
using namespace tritium::testing::blockpointers;
using interpreter::HostBuffer;
using ir::ScalarKind;

namespace {

class BlockPointerTest : public tritium::testing::CompilerTest {
protected:
  void SetUp() override { setInterpret(true); }
  void TearDown() override { resetInterpret(); }
  std::function<void()> sync = [] {};
};

TEST_F(BlockPointerTest, MatmulAdvancingThroughK) {
  checkBlockPointerMatmul<HostBuffer>(nullptr, sync, {.M = 70, .N = 50, .K = 90});
  checkBlockPointerMatmul<HostBuffer>(nullptr, sync,
                                      {.in = ScalarKind::BF16, .M = 33, .N = 64, .K = 40,
                                       .BM = 32, .BN = 32, .BK = 16, .stages = 3,
                                       .bColumns = true});
  checkBlockPointerMatmul<HostBuffer>(nullptr, sync,
                                      {.M = 40, .N = 72, .K = 100, .stages = 3,
                                       .carriedPointers = true});
}

TEST_F(BlockPointerTest, BoundaryCheckAndPadding) {
  checkBlockPointerShift<HostBuffer>(nullptr, sync, 32, 64, -5, 0, false, false);
  checkBlockPointerShift<HostBuffer>(nullptr, sync, 32, 64, 7, -9, true, false);
  checkBlockPointerShift<HostBuffer>(nullptr, sync, 16, 32, -3, 20, true, true);
}

// Carried values that advance by a loop-invariant step (block pointers, pointer blocks) are
// computed for the iterations ahead: their tiles come through the cp.async ring as 16-byte
// copies, and on sm_90a the dot reads them in place on wgmma.
TEST_F(BlockPointerTest, AdvancedPointersArePipelined) {
  resetInterpret();
  for (bool carried : {false, true}) {
    SCOPED_TRACE(carried ? "carried pointers" : "block pointers");
    auto blockPointers = blockPointerMatmulKernelOf();
    auto carriedPointers = carriedPointerMatmulKernelOf();
    Kernel &k = carried ? static_cast<Kernel &>(carriedPointers) : blockPointers;
    // As a launch on multiples of 16 specializes it (the masks then keep 16-byte runs whole).
    Specialization spec{.signature = {"*fp32:16", "*bf16:16", "*bf16:16", "i32:16", "i32:16",
                                      "i32:16", "i32:16", "i32:16", "i32:16"},
                        .constexprs = {128, 128, 64, 0, 3},
                        .numWarps = 8,
                        .arch = "sm_90a"};
    if (carried)
      spec.constexprs = {128, 128, 64, 3};
    Artifacts a = k.compileTo(spec, Stage::PTX);
    EXPECT_EQ(tritium::testing::count(a.gir, "pipelined = 1"), 2u) << a.gir;
    EXPECT_NE(a.gir.find("ring_a = 1"), std::string::npos) << a.gir;
    EXPECT_NE(a.ptx.find("cp.async.cg.shared.global"), std::string::npos);
    EXPECT_NE(a.ptx.find("wgmma.mma_async"), std::string::npos);
    tritium::testing::expectAssembles(a, "sm_90a");
  }
}

} // namespace
