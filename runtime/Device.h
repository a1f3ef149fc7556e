// The GPU tritium runs on: its properties (for occupancy and the persistent grid) and the
// device's primary context, made current on whichever thread asks for it.
#pragma once

#include <cuda.h>

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

// The device's primary context (shared with the CUDA runtime, never destroyed). The device is
// 0, or the ordinal in the environment variable TRITIUM_DEVICE.
class Context {
public:
  // Retains the primary context once (thread-safe) and makes it current on the calling thread
  // on every call, so any thread may use tritium. Throws DriverError / UserError.
  static Context &current();
  // current() for destructors: never throws, reports whether the context is now current.
  static bool makeCurrentQuietly() noexcept;

  const DeviceProps &props() const { return props_; }
  CUcontext handle() const { return context_; }
  CUdevice device() const { return device_; }

  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;

private:
  explicit Context(int ordinal);

  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  DeviceProps props_;
};

} // namespace tritium::rt
