// The support code of generated launchers, as text (LauncherRuntime.h). It reproduces what
// frontend/CompiledKernel.cpp does at JIT time: the same thread count, dynamic shared memory
// opt-in, non-portable clusters above 8, the same grid checks and the same persistent grid.
#include "aot/LauncherRuntime.h"

namespace tritium::aot {

const char *launcherRuntimeText() {
  return R"AOT(// ---- Support code (the same in every file tritium generates) -------------------------------

// The message of the last failed call on this thread (<name>_last_error()).
thread_local std::string lastError;

CUresult fail(CUresult r, std::string message) {
  lastError = std::move(message);
  return r;
}

std::string describe(CUresult r) {
  const char *name = nullptr, *text = nullptr;
  std::string s = cuGetErrorName(r, &name) == CUDA_SUCCESS && name
                      ? std::string(name)
                      : "CUDA error " + std::to_string(int(r));
  if (cuGetErrorString(r, &text) == CUDA_SUCCESS && text)
    s += " (" + std::string(text) + ")";
  return s;
}

// One CUtensorMap of a TMA tile (a recipe of the kernel's, its numbers from the arguments),
// checked as tritium's runtime checks it (runtime/TensorMap.cpp). `what` names the launcher
// and the recipe; dims and box innermost first; strides in bytes, of dims 1 .. rank - 1.
[[maybe_unused]] CUresult encodeTensorMap(const std::string &what, CUtensorMap *out,
                                          CUtensorMapDataType type, unsigned rank,
                                          uint64_t base, const int64_t *dims,
                                          const int64_t *strides, const unsigned *box,
                                          CUtensorMapSwizzle swizzle) {
  if ((base & 15) != 0)
    return fail(CUDA_ERROR_INVALID_VALUE, what + ": the base is not 16-byte aligned, which TMA "
                                                 "requires");
  cuuint64_t d[5], s[4];
  cuuint32_t b[5], one[5];
  for (unsigned i = 0; i < rank; ++i) {
    if (dims[i] < 1 || dims[i] > (int64_t(1) << 32))
      return fail(CUDA_ERROR_INVALID_VALUE, what + ": " + std::to_string(dims[i]) +
                                                " elements along a dimension; TMA takes 1 to 2^32");
    d[i] = cuuint64_t(dims[i]);
    b[i] = box[i];
    one[i] = 1;
  }
  for (unsigned i = 0; i + 1 < rank; ++i) {
    if (strides[i] < 16 || (strides[i] & 15) != 0 || strides[i] >= (int64_t(1) << 40))
      return fail(CUDA_ERROR_INVALID_VALUE, what + ": a stride of " + std::to_string(strides[i]) +
                                                " bytes; TMA takes multiples of 16 below 2^40");
    s[i] = cuuint64_t(strides[i]);
  }
  CUresult r = cuTensorMapEncodeTiled(out, type, rank, reinterpret_cast<void *>(base), d, s, b,
                                      one, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return fail(r, what + ": cuTensorMapEncodeTiled: " + describe(r));
  return CUDA_SUCCESS;
}

// One embedded kernel: its code and how it must be launched.
struct Image {
  const char *name;  // the launcher's name
  const char *entry; // the kernel's entry point in the cubin and the PTX
  const char *arch;
  const unsigned char *cubin;
  const char *ptx;
  unsigned threads;      // 32 x num_warps x programs per CTA, plus a producer warp's 32
  unsigned sharedBytes;  // dynamic shared memory per CTA
  int clusterSize;       // compiled into the kernel (.reqnctapercluster)
  int programsPerCTA;
  int numWarps;
  bool persistent;       // the grid rule: persistent, else one program per count
  bool programmatic;     // waits on the previous kernel (griddep_wait): launched so that it
                         // may start before that kernel ends, as tritium's runtime does
  bool cooperative;      // calls grid_sync: every CTA resident at once (cooperative launch)
};

// A kernel loaded in one context.
struct Loaded {
  unsigned long long context = 0; // cuCtxGetId: unique for the process's life, unlike handles
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  bool fromPtx = false;
  int64_t residentCTAs = -1; // the persistent grid's cap, asked once (-1: not yet)
};

// The contexts an image is loaded in. Entries live until the process ends.
struct Slot {
  std::mutex mutex;
  std::vector<std::unique_ptr<Loaded>> loaded;
};

CUresult deviceAttribute(int *value, CUdevice_attribute a, CUdevice device, const Image &img,
                         const char *what) {
  CUresult r = cuDeviceGetAttribute(value, a, device);
  if (r != CUDA_SUCCESS)
    return fail(r, std::string(img.name) + ": cuDeviceGetAttribute(" + what + "): " + describe(r));
  return CUDA_SUCCESS;
}

CUresult functionAttribute(int *value, CUfunction_attribute a, CUfunction f, const Image &img,
                           const char *what) {
  CUresult r = cuFuncGetAttribute(value, a, f);
  if (r != CUDA_SUCCESS)
    return fail(r, std::string(img.name) + ": cuFuncGetAttribute(" + what + "): " + describe(r));
  return CUDA_SUCCESS;
}

// Loads `img` into `ctx` (the cubin; its PTX when the driver has no binary for this GPU) and
// prepares it for launches as tritium's runtime does.
CUresult loadInto(const Image &img, Loaded &k) {
  std::string name = img.name;
  CUresult r = cuModuleLoadData(&k.module, img.cubin);
  if (r == CUDA_ERROR_NO_BINARY_FOR_GPU || r == CUDA_ERROR_INVALID_IMAGE) {
    // The PTX fallback: the driver compiles it for this GPU, which works for GPUs at least as
    // new as the target (and not for sm_90a, whose PTX runs on sm_90 alone).
    char log[8192] = {0};
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {log, reinterpret_cast<void *>(uintptr_t(sizeof log - 1))};
    CUresult cubinError = r;
    r = cuModuleLoadDataEx(&k.module, img.ptx, 2, options, values);
    if (r != CUDA_SUCCESS)
      return fail(r, name + ": the cubin for " + img.arch + " does not load on this GPU (" +
                         describe(cubinError) + ") and its PTX fallback failed: " + describe(r) +
                         (log[0] ? std::string("\n") + log : std::string()) +
                         "\n(the PTX runs only on GPUs at least as new as " + img.arch + ")");
    k.fromPtx = true;
  } else if (r != CUDA_SUCCESS) {
    return fail(r, name + ": cuModuleLoadData: " + describe(r));
  }
  r = cuModuleGetFunction(&k.function, k.module, img.entry);
  if (r != CUDA_SUCCESS)
    return fail(r, name + ": cuModuleGetFunction('" + img.entry + "'): " + describe(r));
  int maxThreads = 0, regs = 0, maxDynamic = 0;
  if ((r = functionAttribute(&maxThreads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k.function, img,
                             "MAX_THREADS_PER_BLOCK")) ||
      (r = functionAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, k.function, img, "NUM_REGS")) ||
      (r = functionAttribute(&maxDynamic, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                             k.function, img, "MAX_DYNAMIC_SHARED_SIZE_BYTES")))
    return r;
  if (unsigned(maxThreads) < img.threads)
    return fail(CUDA_ERROR_INVALID_VALUE,
                name + ": the kernel needs " + std::to_string(img.threads) +
                    " threads per block but the GPU allows " + std::to_string(maxThreads) +
                    " with " + std::to_string(regs) + " registers per thread");
  // Above the default 48 KiB the kernel must opt in to its dynamic shared memory.
  if (int(img.sharedBytes) > maxDynamic) {
    r = cuFuncSetAttribute(k.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                           int(img.sharedBytes));
    if (r != CUDA_SUCCESS)
      return fail(r, name + ": the kernel needs " + std::to_string(img.sharedBytes) +
                         " bytes of dynamic shared memory, which this GPU refuses: " +
                         describe(r));
  }
  if (img.clusterSize > 8) {
    r = cuFuncSetAttribute(k.function, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
    if (r != CUDA_SUCCESS)
      return fail(r, name + ": clusters of " + std::to_string(img.clusterSize) +
                         " CTAs are not allowed on this GPU: " + describe(r));
  }
  return CUDA_SUCCESS;
}

// The image loaded in the calling thread's current context (loading it on first use).
CUresult load(const Image &img, Slot &slot, Loaded **out) {
  CUcontext ctx = nullptr;
  CUresult r = cuCtxGetCurrent(&ctx);
  if (r != CUDA_SUCCESS)
    return fail(r, std::string(img.name) + ": cuCtxGetCurrent: " + describe(r));
  if (!ctx)
    return fail(CUDA_ERROR_INVALID_CONTEXT,
                std::string(img.name) + ": no CUDA context is current on this thread; make one "
                                        "current (cuDevicePrimaryCtxRetain, cuCtxSetCurrent)");
  unsigned long long id = 0;
  r = cuCtxGetId(ctx, &id);
  if (r != CUDA_SUCCESS)
    return fail(r, std::string(img.name) + ": cuCtxGetId: " + describe(r));
  std::lock_guard<std::mutex> lock(slot.mutex);
  for (auto &k : slot.loaded)
    if (k->context == id) {
      *out = k.get();
      return CUDA_SUCCESS;
    }
  auto k = std::make_unique<Loaded>();
  k->context = id;
  r = loadInto(img, *k);
  if (r != CUDA_SUCCESS) {
    if (k->module)
      cuModuleUnload(k->module);
    return r;
  }
  slot.loaded.push_back(std::move(k));
  *out = slot.loaded.back().get();
  return CUDA_SUCCESS;
}

// How many CTAs of `img` fill the GPU once, as tritium's CompiledKernel::persistentGrid counts
// them: resident clusters x cluster size, or SMs x min(blocks by registers, by shared memory,
// by threads, the SM's block limit).
CUresult residentCTAs(const Image &img, Loaded &k, int64_t *out) {
  if (img.clusterSize > 1) {
    CUlaunchConfig config{};
    config.gridDimX = unsigned(img.clusterSize);
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = img.threads;
    config.blockDimY = config.blockDimZ = 1;
    config.sharedMemBytes = img.sharedBytes;
    int clusters = 0;
    CUresult r = cuOccupancyMaxActiveClusters(&clusters, k.function, &config);
    if (r != CUDA_SUCCESS)
      return fail(r, std::string(img.name) + ": cuOccupancyMaxActiveClusters: " + describe(r));
    if (clusters == 0)
      return fail(CUDA_ERROR_INVALID_VALUE,
                  std::string(img.name) + ": no cluster of " + std::to_string(img.clusterSize) +
                      " CTAs of " + std::to_string(img.threads) + " threads and " +
                      std::to_string(img.sharedBytes) +
                      " bytes of shared memory fits on this GPU at once");
    *out = int64_t(clusters) * img.clusterSize;
    return CUDA_SUCCESS;
  }
  CUdevice device = 0;
  CUresult r = cuCtxGetDevice(&device);
  if (r != CUDA_SUCCESS)
    return fail(r, std::string(img.name) + ": cuCtxGetDevice: " + describe(r));
  int sms = 0, regsPerSM = 0, sharedPerSM = 0, warpSize = 0, threadsPerSM = 0, blocksPerSM = 0;
  int regs = 0, staticShared = 0;
  if ((r = deviceAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device, img,
                           "MULTIPROCESSOR_COUNT")) ||
      (r = deviceAttribute(&regsPerSM, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
                           device, img, "MAX_REGISTERS_PER_MULTIPROCESSOR")) ||
      (r = deviceAttribute(&sharedPerSM, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
                           device, img, "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR")) ||
      (r = deviceAttribute(&warpSize, CU_DEVICE_ATTRIBUTE_WARP_SIZE, device, img, "WARP_SIZE")) ||
      (r = deviceAttribute(&threadsPerSM, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
                           device, img, "MAX_THREADS_PER_MULTIPROCESSOR")) ||
      (r = deviceAttribute(&blocksPerSM, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, device,
                           img, "MAX_BLOCKS_PER_MULTIPROCESSOR")) ||
      (r = functionAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, k.function, img, "NUM_REGS")) ||
      (r = functionAttribute(&staticShared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, k.function, img,
                             "SHARED_SIZE_BYTES")))
    return r;
  int64_t threads = std::max<int64_t>(img.threads, 32);
  int64_t byRegisters = regsPerSM / (std::max(regs, 1) * threads);
  int64_t shared = int64_t(img.sharedBytes) + staticShared;
  int64_t byShared = shared <= 0 ? INT32_MAX : sharedPerSM / shared;
  int64_t byThreads = threadsPerSM / threads;
  int64_t blocks = std::min({byRegisters, byShared, byThreads});
  if (blocksPerSM > 0)
    blocks = std::min<int64_t>(blocks, blocksPerSM);
  *out = int64_t(std::max(sms, 1)) * std::max<int64_t>(blocks, 1);
  return CUDA_SUCCESS;
}

// The grid of CTAs for `programs` programs under the image's grid rule.
CUresult gridFor(const Image &img, Slot &slot, Loaded &k, int64_t programs, uint32_t *grid) {
  if (programs < 0)
    return fail(CUDA_ERROR_INVALID_VALUE, std::string(img.name) + ": the program count " +
                                              std::to_string(programs) + " is negative");
  int64_t perCTA = img.programsPerCTA;
  int64_t ctas = std::max<int64_t>(1, (programs + perCTA - 1) / perCTA);
  int64_t x = 0;
  if (!img.persistent) {
    x = ctas * img.clusterSize;
  } else {
    int64_t resident = 0;
    {
      std::lock_guard<std::mutex> lock(slot.mutex);
      resident = k.residentCTAs;
    }
    if (resident < 0) {
      CUresult r = residentCTAs(img, k, &resident);
      if (r != CUDA_SUCCESS)
        return r;
      std::lock_guard<std::mutex> lock(slot.mutex);
      k.residentCTAs = resident;
    }
    if (img.clusterSize > 1) // one row per cluster at a time, at most one cluster per program
      x = std::max<int64_t>(1, std::min(resident / img.clusterSize, programs)) * img.clusterSize;
    else
      x = std::max<int64_t>(1, std::min(resident, ctas));
  }
  if (x > INT32_MAX)
    return fail(CUDA_ERROR_INVALID_VALUE, std::string(img.name) + ": " +
                                              std::to_string(programs) +
                                              " programs need a grid larger than 2^31-1");
  *grid = uint32_t(x);
  return CUDA_SUCCESS;
}

// Checks the grid as tritium's launch does, then launches in the current context.
CUresult launch(const Image &img, Slot &slot, Loaded *k, CUstream stream, uint32_t x, uint32_t y,
                uint32_t z, void **params) {
  std::string name = img.name;
  if (x < 1 || x > uint32_t(INT32_MAX))
    return fail(CUDA_ERROR_INVALID_VALUE,
                name + ": grid size " + std::to_string(x) + " is out of range (1 to 2^31-1)");
  if (y < 1 || y > 65535 || z < 1 || z > 65535)
    return fail(CUDA_ERROR_INVALID_VALUE, name + ": grid size along " + (y < 1 || y > 65535 ? "y " + std::to_string(y) : "z " + std::to_string(z)) +
                                              " is out of range (1 to 65535)");
  if (int64_t(x) * img.programsPerCTA > INT32_MAX)
    return fail(CUDA_ERROR_INVALID_VALUE, name + ": " + std::to_string(x) + " CTAs of " +
                                              std::to_string(img.programsPerCTA) +
                                              " programs are more than program_id can count");
  if (x % uint32_t(img.clusterSize) != 0)
    return fail(CUDA_ERROR_INVALID_VALUE, name + ": grid size " + std::to_string(x) +
                                              " is not a multiple of the cluster size " +
                                              std::to_string(img.clusterSize));
  CUresult r = k ? CUDA_SUCCESS : load(img, slot, &k);
  if (r != CUDA_SUCCESS)
    return r;
  // The cluster size is compiled into the kernel, so a plain launch runs whole clusters.
  if (img.programmatic || img.cooperative) {
    CUlaunchAttribute attrs[2] = {};
    unsigned count = 0;
    if (img.programmatic) {
      attrs[count].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      attrs[count++].value.programmaticStreamSerializationAllowed = 1;
    }
    if (img.cooperative) {
      attrs[count].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
      attrs[count++].value.cooperative = 1;
    }
    CUlaunchConfig config{};
    config.gridDimX = x;
    config.gridDimY = y;
    config.gridDimZ = z;
    config.blockDimX = img.threads;
    config.blockDimY = config.blockDimZ = 1;
    config.sharedMemBytes = img.sharedBytes;
    config.hStream = stream;
    config.attrs = attrs;
    config.numAttrs = count;
    r = cuLaunchKernelEx(&config, k->function, params, nullptr);
    if (r == CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE)
      return fail(r, name + ": a grid of " + std::to_string(uint64_t(x) * y * z) +
                         " CTAs is more than the GPU holds at once, and the kernel calls "
                         "grid_sync, which needs every CTA resident");
    if (r != CUDA_SUCCESS)
      return fail(r, name + ": cuLaunchKernelEx: " + describe(r));
    return CUDA_SUCCESS;
  }
  r = cuLaunchKernel(k->function, x, y, z, img.threads, 1, 1, img.sharedBytes, stream, params,
                     nullptr);
  if (r != CUDA_SUCCESS)
    return fail(r, name + ": cuLaunchKernel: " + describe(r));
  return CUDA_SUCCESS;
}

// The launch with a program count: the grid by the image's rule, then launch().
CUresult launchPrograms(const Image &img, Slot &slot, CUstream stream, int64_t programs,
                        void **params) {
  Loaded *k = nullptr;
  CUresult r = load(img, slot, &k);
  if (r != CUDA_SUCCESS)
    return r;
  uint32_t x = 0;
  if ((r = gridFor(img, slot, *k, programs, &x)) != CUDA_SUCCESS)
    return r;
  return launch(img, slot, k, stream, x, 1, 1, params);
}

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

)AOT";
}

} // namespace tritium::aot
