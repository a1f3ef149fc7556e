// Loading compiled kernels into the current context: PTX through the driver's JIT linker (which
// also yields the cubin for the disk cache) or a cached cubin directly, plus the launch wrapper.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>

namespace tritium::rt {

class Context;

// What the driver reports about a loaded kernel.
struct KernelInfo {
  int numRegs = 0;
  int localBytes = 0; // local memory (spills and stack) per thread
  int staticSharedBytes = 0;
  int maxThreadsPerBlock = 0;
  std::string jitLog; // ptxas' verbose info log (empty when loaded from a cubin)
};

// One kernel in its own CUmodule of the context current when it was loaded; unloads the module
// (in that context) when destroyed, unless the context was destroyed first. Move-only.
class LoadedKernel {
public:
  // JIT-compiles `ptx` for the current device and loads entry point `entry`. When cubinOut is
  // non-null it receives the linked cubin so later runs can use fromCubin. Throws DriverError
  // carrying the JIT error log on failure.
  static LoadedKernel fromPTX(const std::string &ptx, const std::string &entry,
                              std::string *cubinOut);
  // Loads a cubin produced earlier for this device. Throws DriverError.
  static LoadedKernel fromCubin(const std::string &cubin, const std::string &entry);

  LoadedKernel(LoadedKernel &&other) noexcept;
  LoadedKernel &operator=(LoadedKernel &&other) noexcept;
  LoadedKernel(const LoadedKernel &) = delete;
  LoadedKernel &operator=(const LoadedKernel &) = delete;
  ~LoadedKernel();

  CUfunction function() const { return function_; }
  const KernelInfo &info() const { return info_; }
  Context *context() const { return context_; }

  // Allows `bytes` of dynamic shared memory per launch, opting in above the default limit
  // (48 KiB less static shared). Free when already allowed. Throws UserError past the device's
  // opt-in limit, DriverError if the driver refuses.
  void setDynamicShared(int bytes);
  // Allows clusters of more than 8 blocks (up to 16 on Hopper): the driver refuses them
  // otherwise, even when the size is compiled into the kernel. Throws DriverError.
  void allowNonPortableClusters();

private:
  LoadedKernel() = default;
  void reset() noexcept;
  void bind(const std::string &entry, std::string jitLog);

  Context *context_ = nullptr;
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
  KernelInfo info_;
  int maxDynamicShared_ = 0; // what the driver currently allows without another attribute call
};

// Modules loaded by tritium in this process, for leak checks (tools/stress_gpus.cpp) and the
// tests that a second context reuses the first one's cubin.
struct ModuleCounts {
  int64_t live = 0;       // loaded and not yet unloaded
  int64_t fromPTX = 0;    // loads that ran the driver's JIT on PTX, ever
  int64_t fromCubin = 0;  // loads of a cubin, ever
};
ModuleCounts moduleCounts() noexcept;

// Bytes of spill stores in a ptxas verbose log, summed over every function it reports;
// -1 when the log has no "N bytes spill stores" line.
int spillBytesFromLog(const std::string &jitLog);

// cuLaunchKernel with a 1-D grid and block; checked, allocates nothing. The context must be
// current on this thread (Context::current()).
void launchKernel(CUfunction f, unsigned grid, unsigned block, unsigned sharedBytes,
                  CUstream stream, void **params);
// The same with the arguments already laid out as the kernel's parameter block (each at its
// natural alignment), passed as one buffer (CU_LAUNCH_PARAM_BUFFER_POINTER): the driver copies
// it whole instead of following a pointer per argument. `programmatic`: the kernel calls
// griddepcontrol.wait, so it is launched with programmatic stream serialization and may start
// before the stream's previous kernel has finished (cuLaunchKernelEx; sm_90 and later).
// `cooperativeArgs`, given when the kernel calls grid_sync: it is launched cooperatively (every
// CTA resident at once; a larger grid is a DriverError saying so), with these pointers to each
// argument in `args` (a cooperative launch in stream capture refuses the packed buffer).
// `argPointers`, given for a kernel that takes CUtensorMaps by value: the arguments are passed
// through these pointers (kernelParams), each copied at the offset the kernel's own parameter
// layout gives it.
void launchKernelPacked(CUfunction f, unsigned grid, unsigned block, unsigned sharedBytes,
                        CUstream stream, void *args, size_t argBytes, unsigned gridY = 1,
                        unsigned gridZ = 1, bool programmatic = false,
                        void **cooperativeArgs = nullptr, void **argPointers = nullptr);

} // namespace tritium::rt
