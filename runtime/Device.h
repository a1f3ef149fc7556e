// The GPUs tritium runs on: each device's properties (for occupancy and the persistent grid),
// and the CUDA contexts tritium has seen. Every allocation, module and launch acts in the
// calling thread's current context (docs/GPUS.md): tritium never overrides a context the caller
// made current, and makes the default device's primary context current only on a thread that
// has none.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <string>

namespace tritium::rt {

struct DeviceProps {
  int ordinal = 0;
  std::string name;
  int smCount = 0;
  int regsPerSM = 0;
  int regsPerBlock = 0;
  int sharedPerBlock = 0;      // without opt-in (48 KiB)
  int sharedPerBlockOptin = 0; // the most one block may use after cuFuncSetAttribute
  int sharedPerSM = 0;
  int warpSize = 32;
  int maxThreadsPerBlock = 0;
  int maxThreadsPerSM = 0;
  int maxBlocksPerSM = 0;
  int ccMajor = 0;
  int ccMinor = 0;
  int l2Bytes = 0;

  // "sm_90" for compute capability 9.0.
  std::string arch() const;
};

// Reads every property of device `ordinal` from the driver. Throws DriverError.
DeviceProps queryDevice(int ordinal);

// Why code compiled for `compiledArch` ("sm_80", "sm_90a") cannot run on `device`, or "": PTX
// runs on its own architecture and newer ones (the driver JITs it), an "a" architecture on its
// own only.
std::string whyArchCannotRun(const std::string &compiledArch, const DeviceProps &device);

// A CUDA context tritium has seen current on some thread (the registry, runtime/
// ContextRegistry.h, owns these and never frees them, so references stay valid for the
// process). Modules are loaded per context; allocations, streams and events remember theirs.
class Context {
public:
  // The calling thread's current context, registered on first sight. A thread with no current
  // context gets the default device's primary context made current (device 0, or the ordinal
  // in TRITIUM_DEVICE). Costs one cuCtxGetCurrent and a thread-local compare once the context
  // is known. Throws DriverError / UserError.
  static Context &current();
  // current() for destructors: never throws, reports whether a context is now current.
  static bool makeCurrentQuietly() noexcept;

  const DeviceProps &props() const { return *props_; }
  CUcontext handle() const { return handle_; }
  CUdevice device() const { return device_; }
  int ordinal() const { return props_->ordinal; }
  // A small number, never reused within the process: the index of per-context tables.
  uint32_t slot() const { return slot_; }
  // The driver's unique id of the context (cuCtxGetId): tells a new context from a destroyed
  // one whose handle the driver reused.
  unsigned long long id() const { return id_; }
  // False once tritium knows the context was destroyed (rt::forgetContext, or its handle seen
  // again with another id): what belonged to it is gone and must not be freed or unloaded.
  bool alive() const { return alive_.load(std::memory_order_acquire); }

  Context(CUcontext handle, unsigned long long id, CUdevice device, const DeviceProps *props,
          uint32_t slot)
      : handle_(handle), id_(id), device_(device), props_(props), slot_(slot) {}
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;

private:
  friend class ContextRegistry;

  CUcontext handle_;
  unsigned long long id_;
  CUdevice device_;
  const DeviceProps *props_; // shared by every context of the device
  uint32_t slot_;
  std::atomic<bool> alive_{true};
};

// Makes device `ordinal`'s primary context (retained once, for the life of the process; the
// one the CUDA runtime uses too) current on the calling thread, and returns it. Throws
// UserError for an ordinal that does not exist, DriverError otherwise.
Context &useDevice(int ordinal);

// The number of CUDA devices (0 without a driver). Never throws.
int deviceCount() noexcept;

// Tells tritium that `context` is about to be destroyed (call it before cuCtxDestroy): its
// modules and allocations are forgotten rather than freed later in a dead context, and every
// thread looks its context up again. Launches in it must have ended. Harmless for a context
// tritium never saw.
void forgetContext(CUcontext context);

// Whether contexts of more than one device have been used in this process: launches then check
// that pointer arguments live where the kernel runs (runtime/PointerCheck.h).
bool severalDevicesInUse() noexcept;

// Makes `context` current for the scope when another one is (freeing, copying or unloading
// what belongs to a context from a thread that may be in another). Never throws.
class ContextScope {
public:
  explicit ContextScope(CUcontext context) noexcept;
  ~ContextScope();
  ContextScope(const ContextScope &) = delete;
  ContextScope &operator=(const ContextScope &) = delete;

private:
  bool pushed_ = false;
};

} // namespace tritium::rt
