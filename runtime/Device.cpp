// Device properties from cuDeviceGetAttribute; the calling thread's current context, found
// through a thread-local cache and the context registry; primary contexts per device.
#include "runtime/Device.h"

#include "compiler/support/Error.h"
#include "compiler/support/Log.h"
#include "runtime/ContextRegistry.h"
#include "runtime/Driver.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

namespace tritium::rt {

std::string DeviceProps::arch() const {
  return "sm_" + std::to_string(ccMajor) + std::to_string(ccMinor);
}

std::string whyArchCannotRun(const std::string &compiledArch, const DeviceProps &device) {
  std::string deviceArch = device.arch();
  if (compiledArch == deviceArch)
    return "";
  bool exact = !compiledArch.empty() && compiledArch.back() == 'a';
  if (exact && compiledArch.substr(0, compiledArch.size() - 1) == deviceArch)
    return ""; // sm_90a on sm_90
  int compiled = compiledArch.rfind("sm_", 0) == 0 ? std::atoi(compiledArch.c_str() + 3) : 0;
  if (!exact && compiled > 0 && compiled <= device.ccMajor * 10 + device.ccMinor)
    return "";
  return "was compiled for " + compiledArch + " but device " + std::to_string(device.ordinal) +
         " ('" + device.name + "') is " + deviceArch +
         (exact ? " (" + compiledArch + " code runs on " + compiledArch.substr(0, compiledArch.size() - 1) + " only)"
                : "") +
         ": compile a specialization with .arch = \"" + deviceArch +
         "\" for it (rt::Context::current().props().arch())";
}

static int attribute(CUdevice dev, CUdevice_attribute attr, const char *what) {
  int value = 0;
  CUresult r = Driver::get().cuDeviceGetAttribute(&value, attr, dev);
  if (r != CUDA_SUCCESS)
    throw DriverError(std::string("cuDeviceGetAttribute(") + what + ") failed: " + describe(r), r);
  return value;
}

// The device of `ordinal`, after checking that it exists. Throws UserError / DriverError.
static CUdevice deviceOf(int ordinal) {
  int count = 0;
  TRITIUM_CU(cuDeviceGetCount(&count));
  if (ordinal < 0 || ordinal >= count)
    throw UserError("CUDA device " + std::to_string(ordinal) + " does not exist (" +
                    std::to_string(count) + " device(s) present)");
  CUdevice device = 0;
  TRITIUM_CU(cuDeviceGet(&device, ordinal));
  return device;
}

DeviceProps queryDevice(int ordinal) {
  Driver &d = Driver::get();
  CUdevice dev = deviceOf(ordinal);

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

namespace {

// The primary context of each device tritium made current, retained once and never released.
CUcontext primaryContext(int ordinal) {
  static std::mutex mutex;
  static std::map<int, CUcontext> retained;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = retained.find(ordinal); it != retained.end())
    return it->second;
  CUdevice device = deviceOf(ordinal);
  // The primary context is the one the CUDA runtime uses too, so tritium interoperates with
  // runtime-API code; it is retained for the life of the process.
  CUcontext context = nullptr;
  TRITIUM_CU(cuDevicePrimaryCtxRetain(&context, device));
  retained[ordinal] = context;
  return context;
}

// What Context::current last found on this thread. Trivially constructible, so reading it
// costs no initialisation check.
struct ThreadContext {
  CUcontext handle = nullptr;
  Context *context = nullptr;
  uint64_t epoch = 0;
};
thread_local ThreadContext threadContext;

// The slow path of Context::current: a context this thread has not seen in this epoch (or none).
Context &enterCurrent(CUcontext current) {
  ContextRegistry &registry = ContextRegistry::process();
  uint64_t epoch = registry.epoch(); // read first: a retirement from now on is noticed next time
  if (!current) {
    current = primaryContext(selectedOrdinal());
    TRITIUM_CU(cuCtxSetCurrent(current));
  }
  unsigned long long id = 0;
  TRITIUM_CU(cuCtxGetId(current, &id));
  CUdevice device = 0;
  TRITIUM_CU(cuCtxGetDevice(&device));
  Context &c = registry.enter(current, id, device);
  threadContext = {current, &c, epoch};
  return c;
}

} // namespace

Context &Context::current() {
  // The hot path (every launch): one driver call that reads the thread's current context, and a
  // compare with what this thread saw last.
  CUcontext current = nullptr;
  CUresult r = Driver::get().cuCtxGetCurrent(&current);
  if (r != CUDA_SUCCESS)
    check(r, "cuCtxGetCurrent");
  const ThreadContext &seen = threadContext;
  if (current && current == seen.handle && seen.epoch == ContextRegistry::process().epoch())
    return *seen.context;
  return enterCurrent(current);
}

bool Context::makeCurrentQuietly() noexcept {
  try {
    current();
    return true;
  } catch (...) {
    return false; // e.g. at process exit, after the driver shut down
  }
}

Context &useDevice(int ordinal) {
  CUcontext context = primaryContext(ordinal);
  TRITIUM_CU(cuCtxSetCurrent(context));
  return Context::current();
}

int deviceCount() noexcept {
  try {
    if (!Driver::available())
      return 0;
    int count = 0;
    return Driver::get().cuDeviceGetCount(&count) == CUDA_SUCCESS ? count : 0;
  } catch (...) {
    return 0;
  }
}

void forgetContext(CUcontext context) { ContextRegistry::process().retire(context); }

bool severalDevicesInUse() noexcept { return ContextRegistry::process().severalDevices(); }

ContextScope::ContextScope(CUcontext context) noexcept {
  try {
    Driver &d = Driver::get();
    CUcontext current = nullptr;
    if (!context || d.cuCtxGetCurrent(&current) != CUDA_SUCCESS || current == context)
      return;
    pushed_ = d.cuCtxPushCurrent(context) == CUDA_SUCCESS;
  } catch (...) {
    // no driver: nothing belongs to any context
  }
}

ContextScope::~ContextScope() {
  if (!pushed_)
    return;
  CUcontext popped = nullptr;
  Driver::get().cuCtxPopCurrent(&popped); // loaded, or nothing was pushed
}

} // namespace tritium::rt
