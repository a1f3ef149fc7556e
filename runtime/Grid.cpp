// The tutorial's occupancy model (registers, shared memory and threads each bound the blocks an
// SM holds) and the persistent grid size derived from it.
#include "runtime/Grid.h"

#include "runtime/Driver.h"

#include <algorithm>
#include <climits>

namespace tritium::rt {

Occupancy occupancy(const DeviceProps &d, int regsPerThread, int numWarps,
                    int sharedBytesPerBlock) {
  // Guard the divisors: a kernel reported with 0 registers still occupies its threads, and a
  // hand-written DeviceProps may leave warpSize or the block limit unset.
  int64_t regs = std::max(regsPerThread, 1);
  int64_t warps = std::max(numWarps, 1);
  int64_t warpSize = d.warpSize > 0 ? d.warpSize : 32;
  int64_t threads = warpSize * warps;

  Occupancy o;
  o.byRegisters = static_cast<int>(d.regsPerSM / (regs * threads));
  o.bySharedMemory = sharedBytesPerBlock <= 0 ? INT_MAX : d.sharedPerSM / sharedBytesPerBlock;
  o.byThreads = static_cast<int>(d.maxThreadsPerSM / threads);
  int blocks = std::min({o.byRegisters, o.bySharedMemory, o.byThreads});
  if (d.maxBlocksPerSM > 0)
    blocks = std::min(blocks, d.maxBlocksPerSM);
  o.blocksPerSM = std::max(blocks, 1); // a kernel that fits nowhere still runs one block
  return o;
}

int64_t persistentGridSize(const DeviceProps &d, const Occupancy &o, int64_t rows) {
  int64_t slots = static_cast<int64_t>(std::max(d.smCount, 1)) * std::max(o.blocksPerSM, 1);
  return std::max<int64_t>(std::min(slots, rows), 1);
}

int driverOccupancy(CUfunction f, int blockThreads, int dynamicShared) {
  Context::current();
  int blocks = 0;
  TRITIUM_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, blockThreads,
                                                         static_cast<size_t>(dynamicShared)));
  return blocks;
}

int driverActiveClusters(CUfunction f, int clusterSize, int blockThreads, int dynamicShared) {
  Context::current();
  CUlaunchConfig config{};
  config.gridDimX = unsigned(clusterSize); // any multiple of the cluster size
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = unsigned(blockThreads);
  config.blockDimY = config.blockDimZ = 1;
  config.sharedMemBytes = unsigned(dynamicShared);
  // No cluster attribute: the kernel's compiled-in .reqnctapercluster gives the size.
  int clusters = 0;
  TRITIUM_CU(cuOccupancyMaxActiveClusters(&clusters, f, &config));
  return clusters;
}

} // namespace tritium::rt
