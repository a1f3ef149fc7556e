// Block pointers on the GPU (tests/BlockPointerCases.h) against double-precision references:
// the matmul advancing its pointers through K (b row- and column-major; on Hopper with wgmma),
// and tiles read past the tensor's edges with rows, or rows and columns, checked and padded
// with zeros or NaNs. Skips, saying so, without a GPU.
#include "BlockPointerCases.h"
#include "GpuTestSupport.h"

#include "runtime/Device.h"
#include "runtime/Memory.h"

using namespace tritium;
using namespace tritium::testing::blockpointers;
using ir::ScalarKind;
using rt::DeviceBuffer;

namespace {

class BlockPointerGpuTest : public tritium::testing::GpuStreamTest {};

TEST_F(BlockPointerGpuTest, MatmulAdvancingThroughK) {
  SKIP_WITHOUT_GPU();
  checkBlockPointerMatmul<DeviceBuffer>(stream().get(), sync, {.M = 300, .N = 200, .K = 333});
  checkBlockPointerMatmul<DeviceBuffer>(stream().get(), sync,
                                        {.in = ScalarKind::BF16, .M = 257, .N = 130, .K = 96,
                                         .BM = 128, .BN = 128, .BK = 64, .warps = 8,
                                         .bColumns = true});
  // Pipelined: the advanced pointers computed for the iterations ahead, on mma.sync and, on
  // Hopper, wgmma.
  for (const char *arch : {"", "sm_90a"}) {
    if (std::string(arch) == "sm_90a" && rt::Context::current().props().arch() != "sm_90")
      continue;
    for (bool carried : {false, true})
      checkBlockPointerMatmul<DeviceBuffer>(stream().get(), sync,
                                            {.in = ScalarKind::BF16, .M = 300, .N = 520,
                                             .K = 1000, .BM = 128, .BN = 128, .BK = 64,
                                             .warps = 8, .stages = 4,
                                             .carriedPointers = carried, .arch = arch});
  }
}

TEST_F(BlockPointerGpuTest, BoundaryCheckAndPadding) {
  SKIP_WITHOUT_GPU();
  checkBlockPointerShift<DeviceBuffer>(stream().get(), sync, 32, 64, -5, 0, false, false);
  checkBlockPointerShift<DeviceBuffer>(stream().get(), sync, 32, 64, 7, -9, true, false);
  checkBlockPointerShift<DeviceBuffer>(stream().get(), sync, 16, 32, -3, 20, true, true);
}

} // namespace
