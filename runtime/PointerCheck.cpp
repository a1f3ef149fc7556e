// The foreign-pointer decision and the driver queries behind it (runtime/PointerCheck.h).
#include "runtime/PointerCheck.h"

#include "runtime/Device.h"
#include "runtime/Driver.h"

#include <cstdlib>
#include <cstring>

namespace tritium::rt {

std::string pointerProblem(const PointerFacts &f, int launchDevice) {
  if (!f.known)
    return "is not an address CUDA knows (host memory from malloc or new? a freed buffer?): "
           "pass device memory, or pin host memory with cuMemHostRegister";
  if (f.managed || f.hostMemory || f.device == launchDevice)
    return "";
  std::string where = "lives on device " + std::to_string(f.device) +
                      " but the kernel runs on device " + std::to_string(launchDevice);
  if (f.access > 0)
    return ""; // peer access enabled
  if (f.access < 0 && f.peerPossible)
    return ""; // the driver cannot say whether peer access is on: let the launch try
  if (!f.peerPossible)
    return where + ", which cannot reach it (no peer access between the two): copy the data to "
                   "device " + std::to_string(launchDevice) + " first";
  return where + ", which has no peer access to it: enable it (cuCtxEnablePeerAccess from "
                 "device " + std::to_string(launchDevice) + "'s context) or copy the data";
}

PointerFacts queryPointer(CUdeviceptr ptr, int launchDevice) noexcept {
  PointerFacts f;
  try {
    Driver &d = Driver::get();
    unsigned memoryType = 0, managed = 0;
    int device = -1;
    CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                        CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    void *values[] = {&memoryType, &managed, &device};
    // An address CUDA does not know gives success with every value left at zero.
    if (d.cuPointerGetAttributes(3, attributes, values, ptr) != CUDA_SUCCESS || memoryType == 0)
      return f;
    f.known = true;
    f.managed = managed != 0;
    f.hostMemory = memoryType == CU_MEMORYTYPE_HOST;
    f.device = device;
    if (f.managed || f.hostMemory || device == launchDevice)
      return f;
    // CU_POINTER_ATTRIBUTE_ACCESS_FLAGS says read-write for cuMemAlloc memory of a peer whether
    // peer access is on or not (two H100s, docs/notes/hardware.md). The address through which
    // the current context's kernels reach the memory exists only while peer access is on.
    CUdeviceptr reachable = 0;
    CUresult r = d.cuPointerGetAttribute(&reachable, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, ptr);
    if (r == CUDA_SUCCESS)
      f.access = 1;
    else if (r == CUDA_ERROR_INVALID_VALUE)
      f.access = 0;
    int can = 0;
    if (d.cuDeviceCanAccessPeer(&can, launchDevice, device) == CUDA_SUCCESS)
      f.peerPossible = can != 0;
  } catch (...) {
  }
  return f;
}

bool pointerChecksOn() noexcept {
  // -1: follow the devices in use; 0 or 1: TRITIUM_CHECK_POINTERS said.
  static const int forced = [] {
    const char *v = std::getenv("TRITIUM_CHECK_POINTERS");
    if (!v || !*v)
      return -1;
    return std::strcmp(v, "0") == 0 ? 0 : 1;
  }();
  return forced < 0 ? severalDevicesInUse() : forced == 1;
}

} // namespace tritium::rt
