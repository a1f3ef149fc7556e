// Tiles whose rows come from a table read in the loop (tests/PagedRowsCases.h) on the GPU,
// against double-precision references: pages of 1, 3, 16 and 128 rows, tiles of 16 to 64
// rows, one to eight warps, two to four stages, row counts that stop inside a tile and a page.
// Skips, saying so, without a GPU.
#include "GpuTestSupport.h"
#include "PagedRowsCases.h"

#include "runtime/Memory.h"

using namespace tritium;
using namespace tritium::testing::pagedrows;
using rt::DeviceBuffer;

namespace {

class PagedRowsGpuTest : public tritium::testing::GpuStreamTest {};

TEST_F(PagedRowsGpuTest, SumsTheTilesOfEveryForm) {
  SKIP_WITHOUT_GPU();
  for (int page : {1, 3, 16, 128})
    for (int warps : {1, 4, 8})
      for (int stages : {2, 4})
        checkPagedRows<DeviceBuffer>(stream().get(), sync,
                                     {.n = 1000 + page, .BR = 32, .C = 32, .page = page,
                                      .warps = warps, .stages = stages});
  checkPagedRows<DeviceBuffer>(stream().get(), sync,
                               {.n = 333, .BR = 64, .C = 128, .page = 16, .warps = 4});
  checkPagedRows<DeviceBuffer>(stream().get(), sync,
                               {.n = 50, .BR = 16, .C = 4, .page = 5, .warps = 1, .stages = 3});
}

} // namespace
