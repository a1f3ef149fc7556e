// Tensor descriptors in the interpreter (tests/TensorDescriptorCases.h): the twins of
// tests/gpu/TensorDescriptorGpuTest.cpp, which run everywhere. Each kernel is also compiled to
// PTX for its target on the way.
#include "TensorDescriptorCases.h"

#include "interpreter/Interpreter.h"

using namespace tritium;
using namespace tritium::testing::descriptors;
using interpreter::HostBuffer;
using ir::ScalarKind;

namespace {

class TensorDescriptorInterpreterTest : public tritium::testing::CompilerTest {
protected:
  void SetUp() override { setInterpret(true); }
  void TearDown() override { resetInterpret(); }
  std::function<void()> sync = [] {};
};

TEST_F(TensorDescriptorInterpreterTest, Matmul) {
  checkDescriptorMatmul<HostBuffer>(nullptr, sync, {.M = 80, .N = 70, .K = 100, .BM = 64,
                                                    .BN = 64, .BK = 64, .arch = "sm_90a"});
  checkDescriptorMatmul<HostBuffer>(nullptr, sync,
                                    {.in = ScalarKind::F16, .out = ScalarKind::F16, .M = 33,
                                     .N = 40, .K = 48, .BM = 32, .BN = 32, .BK = 16,
                                     .stages = 2, .bColumns = true, .extraLead = 3});
}

TEST_F(TensorDescriptorInterpreterTest, TilesOutsideTheTensorReadZeros) {
  checkDescriptorShift<HostBuffer>(nullptr, sync, ScalarKind::F32, 40, 50, 56, -3, 5, 16, 32,
                                   3, 4);
  checkDescriptorShift<HostBuffer>(nullptr, sync, ScalarKind::BF16, 20, 64, 64, 7, -70, 8, 64,
                                   2, 4);
}

// Overlapping tiles of several programs combined by each atomic, some of them reaching before
// the tensor's start and past its end (rows and columns), with padding past the columns.
TEST_F(TensorDescriptorInterpreterTest, AtomicsCombineOverlappingTiles) {
  checkDescriptorAtomic<HostBuffer>(nullptr, sync, 0, ScalarKind::F32, 6, 40, 30, 36, -5, -3, 16,
                                    32);
  // A product's accumulator (the GPU test's [128, 64] tiles on 8 warps).
  checkDescriptorAtomic<HostBuffer>(nullptr, sync, 0, ScalarKind::F32, 3, 200, 61, 64, 5, 3, 128,
                                    64, "", 8, true);
  for (int op = 0; op < 6; ++op)
    checkDescriptorAtomic<HostBuffer>(nullptr, sync, op, ScalarKind::I32, 5, 33, 20, 24, 3, 7,
                                      16, 16);
}

TEST_F(TensorDescriptorInterpreterTest, StoresClipAtTheTensorsEdges) {
  checkDescriptorAtomic<HostBuffer>(nullptr, sync, 6, ScalarKind::F32, 6, 40, 30, 36, -5, -3, 16,
                                    32);
  checkDescriptorAtomic<HostBuffer>(nullptr, sync, 6, ScalarKind::I32, 5, 33, 20, 24, 3, 7, 8,
                                    16);
}

} // namespace
