// Tiles whose rows come from a table read in the loop (tests/PagedRowsCases.h), without a GPU:
// the interpreter twins of tests/gpu/PagedRowsGpuTest.cpp, and what the sweep compiles to. The
// tiles are a cp.async ring; the loop's body issues its copies from entries loaded the
// iteration before and then loads the next iteration's; ptxas takes every form.
#include "PagedRowsCases.h"
#include "PtxChecks.h"

#include "interpreter/Interpreter.h"

using namespace tritium;
using namespace tritium::testing::pagedrows;
using interpreter::HostBuffer;
using tritium::testing::count;
using tritium::testing::expectAssembles;

namespace {

class PagedRowsTest : public tritium::testing::CompilerTest {
protected:
  std::function<void()> sync = [] {};
};

TEST_F(PagedRowsTest, Interpreter) {
  setInterpret(true);
  checkPagedRows<HostBuffer>(nullptr, sync, {.n = 100, .BR = 32, .C = 8, .page = 16});
  checkPagedRows<HostBuffer>(nullptr, sync, {.n = 77, .BR = 16, .C = 16, .page = 3});
  checkPagedRows<HostBuffer>(nullptr, sync, {.n = 45, .BR = 16, .C = 4, .page = 1, .warps = 1});
  resetInterpret();
}

// Every form of the sweep: the tile is a ring, the body loads no entry before its copies are
// issued, and it loads the next iteration's after them.
TEST_F(PagedRowsTest, TilesAreRingsWithTheirEntriesLoadedAnIterationAhead) {
  for (int page : {1, 3, 16, 128})
    for (int warps : {1, 4, 8})
      for (int stages : {2, 3}) {
        PagedRowsCase c{.BR = 32, .C = 32, .page = page, .warps = warps, .stages = stages};
        SCOPED_TRACE(c.str());
        Artifacts a = pagedRowsKernelOf().compileTo(pagedRowsSpecialization(c), Stage::PTX);
        EXPECT_EQ(count(a.gir, "pipelined = 1"), 1u) << a.gir;
        size_t wait = a.ptx.find("cp.async.wait_group");
        ASSERT_NE(wait, std::string::npos) << a.ptx;
        size_t commit = a.ptx.find("cp.async.commit_group", wait);
        ASSERT_NE(commit, std::string::npos) << a.ptx;
        std::string beforeCopies = a.ptx.substr(wait, commit - wait);
        EXPECT_EQ(beforeCopies.find("ld.global"), std::string::npos) << beforeCopies;
        EXPECT_NE(a.ptx.find("ld.global.b32", commit), std::string::npos) << a.ptx;
        expectAssembles(a, "sm_90");
      }
}

} // namespace
