// Occupancy and persistent-grid arithmetic on a hand-written H200, ptxas log parsing, and the
// runtime's behaviour on a machine without an NVIDIA driver.
#include "runtime/Grid.h"
#include "runtime/Driver.h"
#include "runtime/Module.h"

#include <gtest/gtest.h>

#include <climits>

using namespace tritium::rt;

namespace {

DeviceProps h200() {
  DeviceProps d;
  d.ordinal = 0;
  d.name = "NVIDIA H200";
  d.smCount = 132;
  d.regsPerSM = 65536;
  d.regsPerBlock = 65536;
  d.sharedPerBlock = 49152;
  d.sharedPerBlockOptin = 232448;
  d.sharedPerSM = 233472;
  d.warpSize = 32;
  d.maxThreadsPerBlock = 1024;
  d.maxThreadsPerSM = 2048;
  d.maxBlocksPerSM = 32;
  d.ccMajor = 9;
  d.ccMinor = 0;
  d.l2Bytes = 50 * 1024 * 1024;
  return d;
}

} // namespace

TEST(GridTest, ArchString) { EXPECT_EQ(h200().arch(), "sm_90"); }

TEST(GridTest, ZeroSharedIsBoundByRegistersAndThreads) {
  // 32 regs x 256 threads = 8192 regs/block -> 8 blocks; 2048 / 256 threads -> 8 blocks.
  Occupancy o = occupancy(h200(), 32, 8, 0);
  EXPECT_EQ(o.byRegisters, 8);
  EXPECT_EQ(o.bySharedMemory, INT_MAX);
  EXPECT_EQ(o.byThreads, 8);
  EXPECT_EQ(o.blocksPerSM, 8);
  EXPECT_EQ(persistentGridSize(h200(), o, 1'000'000), 132 * 8);
}

TEST(GridTest, SharedMemoryBound) {
  // 128 regs x 128 threads = 16384 -> 4; 64 KiB shared: 233472 / 65536 = 3; threads: 16.
  Occupancy o = occupancy(h200(), 128, 4, 65536);
  EXPECT_EQ(o.byRegisters, 4);
  EXPECT_EQ(o.bySharedMemory, 3);
  EXPECT_EQ(o.byThreads, 16);
  EXPECT_EQ(o.blocksPerSM, 3);
  EXPECT_EQ(persistentGridSize(h200(), o, 4096), 396);
}

TEST(GridTest, FullOptinSharedGivesOneBlock) {
  Occupancy o = occupancy(h200(), 64, 4, 232448);
  EXPECT_EQ(o.bySharedMemory, 1);
  EXPECT_EQ(o.blocksPerSM, 1);
  EXPECT_EQ(persistentGridSize(h200(), o, 1 << 20), 132);
}

TEST(GridTest, BlockLimitCapsTinyKernels) {
  // 0 registers count as 1: 65536 / 64 = 1024; threads: 2048 / 64 = 32; the SM's cap is 32.
  Occupancy o = occupancy(h200(), 0, 2, 0);
  EXPECT_EQ(o.byRegisters, 1024);
  EXPECT_EQ(o.byThreads, 32);
  EXPECT_EQ(o.blocksPerSM, 32);
  // 1 warp: 2048 / 32 = 64 blocks by threads, still capped at 32.
  EXPECT_EQ(occupancy(h200(), 16, 1, 0).blocksPerSM, 32);
}

TEST(GridTest, OversizedKernelStillGetsOneBlock) {
  // 255 regs x 512 threads = 130560 > 65536 -> 0 by registers, clamped to 1.
  Occupancy o = occupancy(h200(), 255, 16, 0);
  EXPECT_EQ(o.byRegisters, 0);
  EXPECT_EQ(o.byThreads, 4);
  EXPECT_EQ(o.blocksPerSM, 1);
}

TEST(GridTest, GridIsCappedByRows) {
  Occupancy o = occupancy(h200(), 32, 8, 0); // 8 blocks per SM -> 1056 slots
  EXPECT_EQ(persistentGridSize(h200(), o, 1056), 1056);
  EXPECT_EQ(persistentGridSize(h200(), o, 1057), 1056);
  EXPECT_EQ(persistentGridSize(h200(), o, 100), 100);
  EXPECT_EQ(persistentGridSize(h200(), o, 1), 1);
  EXPECT_EQ(persistentGridSize(h200(), o, 0), 1);
}

TEST(GridTest, SpillBytesFromLog) {
  const std::string log = "ptxas info    : 0 bytes gmem\n"
                          "ptxas info    : Compiling entry function 'softmax' for 'sm_90'\n"
                          "ptxas info    : Function properties for softmax\n"
                          "    48 bytes stack frame, 40 bytes spill stores, 36 bytes spill loads\n"
                          "ptxas info    : Used 255 registers, 392 bytes cmem[0]\n"
                          "ptxas info    : Function properties for helper\n"
                          "    8 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n";
  EXPECT_EQ(spillBytesFromLog(log), 48);
  EXPECT_EQ(spillBytesFromLog("    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"),
            0);
  EXPECT_EQ(spillBytesFromLog("ptxas info    : Used 32 registers"), -1);
  EXPECT_EQ(spillBytesFromLog(""), -1);
  // The driver JIT's own layout (seen from driver 580 on an H200).
  EXPECT_EQ(spillBytesFromLog("ptxas info    : Function properties for add\n"
                              "ptxas         .     0 bytes stack frame, 12 bytes spill stores, "
                              "12 bytes spill loads\n"),
            12);
}

TEST(GridTest, NoDriverFailsCleanly) {
  std::string why;
  if (Driver::available(&why))
    GTEST_SKIP() << "a CUDA driver and device are present; the no-driver path is not testable";
  EXPECT_FALSE(why.empty());
  try {
    Driver::get();
    FAIL() << "Driver::get() should throw without a driver";
  } catch (const DriverError &e) {
    EXPECT_NE(std::string(e.what()).find("libcuda"), std::string::npos) << e.what();
  }
  // Every entry point reports the same clear error instead of crashing.
  EXPECT_THROW(Context::current(), DriverError);
  EXPECT_THROW(LoadedKernel::fromPTX(".version 8.0", "k", nullptr), DriverError);
  EXPECT_THROW(launchKernel(nullptr, 1, 1, 0, nullptr, nullptr), DriverError);
  EXPECT_THROW(driverOccupancy(nullptr, 128, 0), DriverError);
}
