// Whether a kernel running on one device may use a pointer argument: memory of another device
// without peer access, or host memory CUDA does not know, would fault inside the kernel (or
// read garbage) instead of failing the launch. The decision is a pure function of what the
// driver says about the pointer, so it is tested without a GPU; the launch asks the driver only
// in processes that use several devices, or when TRITIUM_CHECK_POINTERS=1.
#pragma once

#include <cuda.h>

#include <string>

namespace tritium::rt {

// What the driver says about one address.
struct PointerFacts {
  bool known = false;          // allocated, mapped or registered through CUDA
  bool managed = false;        // cuMemAllocManaged: migrates to whichever device touches it
  bool hostMemory = false;     // pinned host memory (cuMemHostAlloc / cuMemHostRegister)
  int device = -1;             // the device it was allocated on (or registered against)
  // Whether kernels of the launching context reach it (CU_POINTER_ATTRIBUTE_DEVICE_POINTER
  // answers only while peer access is on): -1 unknown, 0 no, 1 yes. Asked only for memory of
  // another device.
  int access = -1;
  bool peerPossible = false;   // cuDeviceCanAccessPeer(launch device, device)
};

// "" when a kernel on `launchDevice` may use the pointer, else what is wrong, to follow
// "argument 2 ('x') ": e.g. "lives on device 1 but the kernel runs on device 0, which has no
// peer access to it: ...".
std::string pointerProblem(const PointerFacts &facts, int launchDevice);

// Asks the driver about `ptr` from a kernel's point of view on `launchDevice` (the current
// context's device). Never throws: a failed query leaves the fact unknown.
PointerFacts queryPointer(CUdeviceptr ptr, int launchDevice) noexcept;

// Whether launches check pointer arguments: TRITIUM_CHECK_POINTERS=1 always, =0 never, unset
// once several devices are in use (rt::severalDevicesInUse). One relaxed load when unset and a
// single device is in use: the single-device launch pays nothing else.
bool pointerChecksOn() noexcept;

} // namespace tritium::rt
