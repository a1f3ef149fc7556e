// Scans in the interpreter (tests/ScanCases.h): the twins of tests/gpu/ScanGpuTest.cpp, which
// run everywhere. Each kernel is also compiled to PTX, so the register scan's lowering sees every
// layout here too.
#include "ScanCases.h"

#include "interpreter/Interpreter.h"

using namespace tritium;
using namespace tritium::testing::scans;
using interpreter::HostBuffer;

namespace {

class ScanInterpreterTest : public tritium::testing::CompilerTest {
protected:
  void SetUp() override { setInterpret(true); }
  void TearDown() override { resetInterpret(); }
  std::function<void()> sync = [] {};
};

struct Tile {
  int BM, BN, warps;
  bool colMajor;
};
const Tile kTiles[] = {{8, 64, 1, false},  {8, 64, 4, false},   {64, 8, 4, false},
                       {2, 512, 8, false}, {16, 1024, 4, false}, {4, 4, 4, false},
                       {32, 16, 4, true},  {16, 256, 4, true}};

TEST_F(ScanInterpreterTest, RegisterScansAlongEveryLayout) {
  for (const Tile &t : kTiles)
    for (bool reverse : {false, true})
      checkScanTile<HostBuffer>(nullptr, sync, t.BM, t.BN, t.warps, t.colMajor, reverse);
}

TEST_F(ScanInterpreterTest, CumsumOfEveryDtype) {
  for (const char *dtype : {"fp32", "fp16", "bf16", "i32", "u32", "i64", "u64", "i8", "u16"})
    for (bool reverse : {false, true})
      checkTypedCumsum<HostBuffer>(nullptr, sync, dtype, 4, 256, 4, reverse);
}

TEST_F(ScanInterpreterTest, WideRowCumsumsOfFloatsAndIntegers) {
  checkWideCumsums<HostBuffer>(nullptr, sync);
}

} // namespace
