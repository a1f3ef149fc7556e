// Multicast tiles on the GPU (tests/MulticastCases.h): every program of a cluster of 2 or 4 sums
// the same tiles, each program's producer copying 1/C of each tile into all C programs, against
// a double-precision reference; the last tile reaches past the tensor (zeros). Skips, saying
// so, without a Hopper GPU; MulticastTest runs the same kernel in the interpreter.
#include "GpuTestSupport.h"
#include "MulticastCases.h"

#include "runtime/Device.h"
#include "runtime/Memory.h"

#include <random>

using namespace tritium;
using tritium::testing::clustertiles::runClusterTileSum;

namespace {

class MulticastGpuTest : public tritium::testing::GpuStreamTest {};

TEST_F(MulticastGpuTest, EveryProgramOfTheClusterGetsTheWholeTile) {
  SKIP_WITHOUT_GPU();
  if (rt::Context::current().props().arch() != "sm_90")
    GTEST_SKIP() << "multicast copies are Hopper's TMA";
  const int rows = 1000; // 16 tiles of 64 rows, the last partly outside the tensor
  std::mt19937 rng(std::random_device{}());
  auto x = tritium::testing::clustertiles::tileSumInput(rows, rng);
  for (int cluster : {2, 4}) {
    SCOPED_TRACE("clusters of " + std::to_string(cluster));
    const int grid = 4 * cluster;
    std::vector<float> got = runClusterTileSum<rt::DeviceBuffer>(cluster, grid, 0, x.raw, rows);
    for (size_t e = 0; e < got.size(); ++e)
      ASSERT_NEAR(got[e], x.want[e % (64 * 64)], 1e-3 * (1 + std::abs(x.want[e % (64 * 64)])))
          << "program " << e / (64 * 64) << ", element " << e % (64 * 64);
  }
}

} // namespace
