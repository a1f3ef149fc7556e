// The register scan's PTX without a GPU: cumsum along the rows of a [16, 2048] fp32 block and of
// an i32 one in one kernel compiles for sm_90 with a few KiB of shared memory (it once staged
// both blocks, 263168 bytes, more than a CTA may have) and ptxas assembles it; warps along the
// axis cost one barrier per scan, a line within a warp none; reversed scans shuffle down.
#include "PtxChecks.h"
#include "ScanCases.h"

using namespace tritium;
using namespace tritium::testing;
using namespace tritium::testing::scans;

namespace {

class ScanPtxTest : public CompilerTest {};

size_t barriers(const std::string &ptx) { return count(ptx, "bar.sync") + count(ptx, "barrier.sync"); }

TEST_F(ScanPtxTest, WideRowCumsumsFitSm90) {
  Artifacts a = kernel("wide_cumsums", wideCumsums, {"sums", "counts", "x", "k", "BM", "BN"})
                    .compileTo({.signature = {"*fp32:16", "*i32:16", "*fp32:16", "*i32:16"},
                                .constexprs = {16, 2048},
                                .numWarps = 4},
                               Stage::PTX);
  // Aligned rows are read in runs of 4, so the tile spans 512 columns. Per scan: 16 rows x 4
  // repetitions of the tile x 4 warps of 4-byte totals, in two banks.
  EXPECT_EQ(a.sharedBytes, 2 * 2 * 16 * 4 * 4 * 4);
  EXPECT_EQ(barriers(a.ptx), 2u) << a.ptx;
  EXPECT_GE(count(a.ptx, "shfl.sync.up"), 2u * 5u) << "five Hillis-Steele steps per scan";
  if (ptxasPath().empty())
    GTEST_SKIP() << "ptxas was not found at configure time; the PTX was not assembled";
  PtxasResult r = runPtxas(a.ptx, "sm_90");
  EXPECT_EQ(r.exitCode, 0) << r.output;
}

TEST_F(ScanPtxTest, LinesWithinAWarpNeedNoBarrier) {
  // 8 x 256 with one warp: each row over registers, lanes and two repetitions of the tile,
  // whose totals come by shfl.idx.
  for (int reverse : {0, 1}) {
    Artifacts a = kernel("typed_cumsum", typedCumsum, {"out", "x", "BM", "BN", "REVERSE"})
                      .compileTo({.signature = {"*fp32", "*fp32"},
                                  .constexprs = {8, 256, reverse},
                                  .numWarps = 1},
                                 Stage::PTX);
    EXPECT_EQ(barriers(a.ptx), 0u) << a.ptx;
    EXPECT_EQ(a.sharedBytes, 0);
    EXPECT_GT(count(a.ptx, "shfl.sync.idx"), 0u) << a.ptx;
    EXPECT_GT(count(a.ptx, reverse ? "shfl.sync.down" : "shfl.sync.up"), 0u) << a.ptx;
    EXPECT_EQ(count(a.ptx, reverse ? "shfl.sync.up" : "shfl.sync.down"), 0u) << a.ptx;
    expectAssembles(a, "sm_90");
  }
}

} // namespace
