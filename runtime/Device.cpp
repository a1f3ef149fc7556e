// Device properties from cuDeviceGetAttribute, and the primary context that every tritium
// allocation, module and launch uses.
#include "runtime/Device.h"

#include "compiler/support/Error.h"
#include "compiler/support/Log.h"
#include "runtime/Driver.h"

#include <cstdlib>
#include <string>

namespace tritium::rt {

std::string DeviceProps::arch() const {
  return "sm_" + std::to_string(ccMajor) + std::to_string(ccMinor);
}

static int attribute(CUdevice dev, CUdevice_attribute attr, const char *what) {
  int value = 0;
  CUresult r = Driver::get().cuDeviceGetAttribute(&value, attr, dev);
  if (r != CUDA_SUCCESS)
    throw DriverError(std::string("cuDeviceGetAttribute(") + what + ") failed: " + describe(r), r);
  return value;
}

DeviceProps queryDevice(int ordinal) {
  Driver &d = Driver::get();
  int count = 0;
  TRITIUM_CU(cuDeviceGetCount(&count));
  if (ordinal < 0 || ordinal >= count)
    throw UserError("CUDA device " + std::to_string(ordinal) + " does not exist (" +
                    std::to_string(count) + " device(s) present)");
  CUdevice dev = 0;
  TRITIUM_CU(cuDeviceGet(&dev, ordinal));

  DeviceProps p;
  p.ordinal = ordinal;
  char name[256] = {};
  check(d.cuDeviceGetName(name, sizeof(name) - 1, dev), "cuDeviceGetName");
  p.name = name;
#define TRITIUM_ATTR(field, attr) p.field = attribute(dev, attr, #attr)
  TRITIUM_ATTR(smCount, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  TRITIUM_ATTR(regsPerSM, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  TRITIUM_ATTR(regsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  TRITIUM_ATTR(sharedPerBlock, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  TRITIUM_ATTR(sharedPerBlockOptin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  TRITIUM_ATTR(sharedPerSM, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  TRITIUM_ATTR(warpSize, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  TRITIUM_ATTR(maxThreadsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  TRITIUM_ATTR(maxThreadsPerSM, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  TRITIUM_ATTR(maxBlocksPerSM, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  TRITIUM_ATTR(ccMajor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  TRITIUM_ATTR(ccMinor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  TRITIUM_ATTR(l2Bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
#undef TRITIUM_ATTR
  // Old parts could leave the opt-in limit at 0; the plain limit is then the real one.
  if (p.sharedPerBlockOptin < p.sharedPerBlock)
    p.sharedPerBlockOptin = p.sharedPerBlock;
  return p;
}

// TRITIUM_DEVICE selects the GPU; anything but a non-negative integer is the user's mistake.
static int selectedOrdinal() {
  const char *env = std::getenv("TRITIUM_DEVICE");
  if (!env || !*env)
    return 0;
  char *end = nullptr;
  long v = std::strtol(env, &end, 10);
  if (*end != '\0' || v < 0 || v > 1 << 16)
    throw UserError(std::string("TRITIUM_DEVICE must be a device ordinal, not '") + env + "'");
  return static_cast<int>(v);
}

Context::Context(int ordinal) : props_(queryDevice(ordinal)) {
  TRITIUM_CU(cuDeviceGet(&device_, ordinal));
  // The primary context is the one the CUDA runtime uses too, so tritium interoperates with
  // runtime-API code; it is retained for the life of the process and never released.
  TRITIUM_CU(cuDevicePrimaryCtxRetain(&context_, device_));
  tritium::log().debug("using CUDA device {} '{}' ({}, {} SMs, {} KiB L2)", ordinal, props_.name,
                       props_.arch(), props_.smCount, props_.l2Bytes / 1024);
}

Context &Context::current() {
  // If construction throws, the next call tries again (a function-local static's rule).
  static Context ctx(selectedOrdinal());
  TRITIUM_CU(cuCtxSetCurrent(ctx.context_));
  return ctx;
}

bool Context::makeCurrentQuietly() noexcept {
  try {
    current();
    return true;
  } catch (...) {
    return false; // e.g. at process exit, after the driver shut down
  }
}

} // namespace tritium::rt
