// Occupancy arithmetic for the persistent grid of Triton's softmax tutorial: how many blocks of
// a kernel fit on one SM, and so how many programs to launch. Pure functions, testable off-GPU.
#pragma once

#include "runtime/Device.h"

#include <cuda.h>

#include <cstdint>

namespace tritium::rt {

// Blocks per SM as each resource alone allows, and the resulting limit.
struct Occupancy {
  int byRegisters = 0;
  int bySharedMemory = 0; // INT_MAX when the kernel uses no shared memory
  int byThreads = 0;
  int blocksPerSM = 1; // min of the above and the device's block limit, at least 1
};

Occupancy occupancy(const DeviceProps &d, int regsPerThread, int numWarps, int sharedBytesPerBlock);

// Programs to launch so that every SM is filled once: min(smCount * blocksPerSM, rows), >= 1.
int64_t persistentGridSize(const DeviceProps &d, const Occupancy &o, int64_t rows);

// The driver's own answer (cuOccupancyMaxActiveBlocksPerMultiprocessor), which also knows the
// hardware's allocation granularities. Throws DriverError.
int driverOccupancy(CUfunction f, int blockThreads, int dynamicShared);

// How many clusters of `clusterSize` blocks of a kernel with a compiled-in cluster size can be
// resident on the whole GPU at once (cuOccupancyMaxActiveClusters: clusters must fit within
// one GPC, so this is not simply SMs / clusterSize); 0 when not even one fits. Throws
// DriverError.
int driverActiveClusters(CUfunction f, int clusterSize, int blockThreads, int dynamicShared);

} // namespace tritium::rt
