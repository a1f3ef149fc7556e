// inline_asm_elementwise on the GPU against host references (tests/InlineAsmCases.h): one
// element per call with a broadcast scalar, four bytes packed per register, two results of
// four elements per call, f, h-pair and l registers, an asm that is not pure and one on scalars.
#include "GpuTestSupport.h"
#include "InlineAsmCases.h"

#include "runtime/Memory.h"

using namespace tritium;
using namespace tritium::testing::inline_asm;
using rt::DeviceBuffer;

namespace {

class InlineAsmGpuTest : public tritium::testing::GpuStreamTest {};

TEST_F(InlineAsmGpuTest, OneElementPerCallWithAScalar) {
  SKIP_WITHOUT_GPU();
  for (int block : {128, 1024})
    checkFunnelShift<DeviceBuffer>(stream().get(), sync, block);
}

// 1024 bytes: 8 per thread, two calls each; 128: one per thread, the call filled with zeros.
TEST_F(InlineAsmGpuTest, FourBytesPerRegister) {
  SKIP_WITHOUT_GPU();
  for (int block : {1024, 128})
    checkPackedBytes<DeviceBuffer>(stream().get(), sync, block);
}

TEST_F(InlineAsmGpuTest, TwoResultsOfFourElementsPerCall) {
  SKIP_WITHOUT_GPU();
  for (int block : {512, 128})
    checkTwoResults<DeviceBuffer>(stream().get(), sync, block);
}

TEST_F(InlineAsmGpuTest, FloatHalfPairAndWideRegisters) {
  SKIP_WITHOUT_GPU();
  for (int block : {512, 128})
    checkOtherRegisters<DeviceBuffer>(stream().get(), sync, block);
}

TEST_F(InlineAsmGpuTest, ImpureAsmAndScalars) {
  SKIP_WITHOUT_GPU();
  checkLanesAndScalars<DeviceBuffer>(stream().get(), sync);
}

} // namespace
