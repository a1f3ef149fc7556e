// The CUDA driver API, reached through dlopen("libcuda.so.1") at run time so that tritium builds
// and loads on machines without a GPU and fails with a clear DriverError only when asked to run.
#pragma once

#include <cuda.h>

#include <stdexcept>
#include <string>

namespace tritium::rt {

// A failed driver call, or no usable driver. result() is CUDA_SUCCESS when no call failed
// (for instance when libcuda.so.1 is missing).
class DriverError : public std::runtime_error {
public:
  explicit DriverError(const std::string &message, CUresult result = CUDA_SUCCESS)
      : std::runtime_error(message), result_(result) {}
  CUresult result() const { return result_; }

private:
  CUresult result_;
};

// The driver entry points tritium uses. cuda.h #defines many API names to versioned symbols
// (cuMemAlloc -> cuMemAlloc_v2, cuGraphInstantiate -> cuGraphInstantiateWithFlags, ...); the
// list below is expanded after those macros, so each member is named and typed after the
// versioned function and dlsym asks for the versioned symbol, matching what a linked program
// would call. Callers write the plain names (Driver::get().cuMemAlloc(...)) and get the same
// expansion.
#define TRITIUM_DRIVER_FUNCTIONS(X)                                                                \
  X(cuGetErrorName)                                                                                \
  X(cuGetErrorString)                                                                              \
  X(cuInit)                                                                                        \
  X(cuDriverGetVersion)                                                                            \
  X(cuDeviceGet)                                                                                   \
  X(cuDeviceGetCount)                                                                              \
  X(cuDeviceGetName)                                                                               \
  X(cuDeviceGetAttribute)                                                                          \
  X(cuDevicePrimaryCtxRetain)                                                                      \
  X(cuCtxSetCurrent)                                                                               \
  X(cuCtxGetCurrent)                                                                               \
  X(cuCtxGetDevice)                                                                                \
  X(cuCtxGetId)                                                                                    \
  X(cuCtxCreate)                                                                                   \
  X(cuCtxDestroy)                                                                                  \
  X(cuCtxPushCurrent)                                                                              \
  X(cuCtxPopCurrent)                                                                               \
  X(cuCtxEnablePeerAccess)                                                                         \
  X(cuCtxDisablePeerAccess)                                                                        \
  X(cuDeviceCanAccessPeer)                                                                         \
  X(cuPointerGetAttribute)                                                                         \
  X(cuPointerGetAttributes)                                                                        \
  X(cuMemGetInfo)                                                                                  \
  X(cuCtxSynchronize)                                                                              \
  X(cuModuleLoadData)                                                                              \
  X(cuModuleLoadDataEx)                                                                            \
  X(cuModuleUnload)                                                                                \
  X(cuModuleGetFunction)                                                                           \
  X(cuFuncGetAttribute)                                                                            \
  X(cuFuncSetAttribute)                                                                            \
  X(cuLinkCreate)                                                                                  \
  X(cuLinkAddData)                                                                                 \
  X(cuLinkComplete)                                                                                \
  X(cuLinkDestroy)                                                                                 \
  X(cuLaunchKernel)                                                                                \
  X(cuLaunchKernelEx)                                                                              \
  X(cuMemAlloc)                                                                                    \
  X(cuMemFree)                                                                                     \
  X(cuMemcpyHtoD)                                                                                  \
  X(cuMemcpyDtoH)                                                                                  \
  X(cuMemcpyDtoD)                                                                                  \
  X(cuMemcpyDtoDAsync)                                                                             \
  X(cuMemsetD8)                                                                                    \
  X(cuMemsetD32)                                                                                   \
  X(cuMemsetD32Async)                                                                              \
  X(cuMemsetD8Async)                                                                               \
  X(cuStreamCreate)                                                                                \
  X(cuStreamDestroy)                                                                               \
  X(cuStreamSynchronize)                                                                           \
  X(cuStreamIsCapturing)                                                                           \
  X(cuStreamBeginCapture)                                                                          \
  X(cuStreamEndCapture)                                                                            \
  X(cuGraphInstantiate)                                                                            \
  X(cuGraphLaunch)                                                                                 \
  X(cuGraphExecDestroy)                                                                            \
  X(cuGraphDestroy)                                                                                \
  X(cuEventCreate)                                                                                 \
  X(cuEventRecord)                                                                                 \
  X(cuEventSynchronize)                                                                            \
  X(cuEventElapsedTime)                                                                            \
  X(cuEventDestroy)                                                                                \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                                                   \
  X(cuOccupancyMaxActiveClusters)                                                                  \
  X(cuTensorMapEncodeTiled)

struct Driver {
#define TRITIUM_DRIVER_MEMBER(fn) decltype(&::fn) fn = nullptr;
  TRITIUM_DRIVER_FUNCTIONS(TRITIUM_DRIVER_MEMBER)
#undef TRITIUM_DRIVER_MEMBER

  int version = 0; // cuDriverGetVersion, e.g. 13000

  // The process-wide driver: loads libcuda.so.1 and calls cuInit(0) once (thread-safe); throws
  // DriverError with the reason on every call if that failed.
  static Driver &get();
  // Whether get() succeeds and at least one device exists. Never throws; cached.
  static bool available(std::string *whyNot = nullptr);
};

// Throws DriverError("<call> failed: CUDA_ERROR_X (description)") unless r is CUDA_SUCCESS.
// `call` may be a whole call expression's text; only the name before '(' is reported.
void check(CUresult r, const char *call);

// "CUDA_ERROR_X (description)" for a result code, usable whenever the driver is loaded.
std::string describe(CUresult r);

} // namespace tritium::rt

// TRITIUM_CU(cuMemAlloc(&p, n)) calls the driver's cuMemAlloc_v2 and throws on failure with a
// message naming "cuMemAlloc" (# does not expand its operand; the call itself is expanded).
#define TRITIUM_CU(call) ::tritium::rt::check(::tritium::rt::Driver::get().call, #call)
