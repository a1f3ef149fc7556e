// Scans on the GPU against references in double precision and wrapping integers
// (tests/ScanCases.h): cumsum, cumprod and a non-commutative associative_scan along lines that
// lie in one thread, across lanes, warps and repetitions of the tile, forward and reversed;
// cumsum of every element type; the [16, 2048] fp32 and i32 cumsums of one kernel.
#include "GpuTestSupport.h"
#include "ScanCases.h"

#include "runtime/Memory.h"

using namespace tritium;
using namespace tritium::testing::scans;
using rt::DeviceBuffer;

namespace {

class ScanGpuTest : public tritium::testing::GpuStreamTest {};

struct Tile {
  int BM, BN, warps;
  bool colMajor;
};
// One thread, lanes, warps and repetitions along the axis; lane strides (column-major); copies.
const Tile kTiles[] = {{8, 64, 1, false},  {8, 64, 4, false},    {64, 8, 4, false},
                       {2, 512, 8, false}, {16, 1024, 4, false}, {1, 4096, 4, false},
                       {4, 4, 4, false},   {32, 16, 4, true},    {16, 256, 4, true}};

TEST_F(ScanGpuTest, RegisterScansAlongEveryLayout) {
  SKIP_WITHOUT_GPU();
  for (const Tile &t : kTiles)
    for (bool reverse : {false, true})
      checkScanTile<DeviceBuffer>(stream().get(), sync, t.BM, t.BN, t.warps, t.colMajor, reverse);
}

TEST_F(ScanGpuTest, CumsumOfEveryDtype) {
  SKIP_WITHOUT_GPU();
  for (const char *dtype : {"fp32", "fp16", "bf16", "i32", "u32", "i64", "u64", "i8", "u16"})
    for (bool reverse : {false, true}) {
      checkTypedCumsum<DeviceBuffer>(stream().get(), sync, dtype, 4, 256, 4, reverse);
      checkTypedCumsum<DeviceBuffer>(stream().get(), sync, dtype, 2, 64, 8, reverse);
    }
}

TEST_F(ScanGpuTest, WideRowCumsumsOfFloatsAndIntegers) {
  SKIP_WITHOUT_GPU();
  checkWideCumsums<DeviceBuffer>(stream().get(), sync);
}

TEST_F(ScanGpuTest, LongCumsumAcrossPrograms) {
  SKIP_WITHOUT_GPU();
  for (int64_t n : {int64_t(1), int64_t(4097), int64_t(1) << 24, (int64_t(1) << 24) + 4099})
    for (kernels::Dtype d : {kernels::Dtype::fp32, kernels::Dtype::int32})
      checkLongCumsum<DeviceBuffer>(stream().get(), sync, d, n, false);
  checkLongCumsum<DeviceBuffer>(stream().get(), sync, kernels::Dtype::bf16, 1 << 20, true);
}

} // namespace
