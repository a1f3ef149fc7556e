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

// The library's cumsum of a long 1-D array: one element, lengths around the 4096-element
// block, and more blocks than the sums' scan takes in one step (1024); in place too.
TEST_F(ScanInterpreterTest, LongCumsumAcrossPrograms) {
  for (int64_t n : {1, 4095, 4097, 4096 * 1030 + 5})
    checkLongCumsum<HostBuffer>(nullptr, sync, kernels::Dtype::fp32, n, false);
  checkLongCumsum<HostBuffer>(nullptr, sync, kernels::Dtype::int32, 4096 * 1030 + 5, false);
  checkLongCumsum<HostBuffer>(nullptr, sync, kernels::Dtype::bf16, 10000, true);
  checkLongCumsum<HostBuffer>(nullptr, sync, kernels::Dtype::fp16, 9000, false);
}

TEST_F(ScanInterpreterTest, LongCumsumRefusesBadArguments) {
  float x[4] = {};
  auto refuses = [&](const char *what, kernels::Dtype d, void *out, int64_t n, void *ws,
                     int64_t wsBytes) {
    try {
      kernels::cumsum(d, out, x, n, ws, wsBytes, nullptr);
      ADD_FAILURE() << "no error for " << what;
    } catch (const UserError &e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  refuses("cumsum: dtype must be fp32, fp16, bf16 or int32, got i8", kernels::Dtype::int8, x, 4,
          x, 16);
  refuses("cumsum: out is null", kernels::Dtype::fp32, nullptr, 4, x, 16);
  refuses("cumsum: n is -1, but must be at least 0", kernels::Dtype::fp32, x, -1, x, 16);
  refuses("cumsum: workspace is null", kernels::Dtype::fp32, x, 4, nullptr, 16);
  refuses("cumsum: workspaceBytes is 4, but this call needs 8", kernels::Dtype::fp32, x, 4097, x,
          4);
}

} // namespace
