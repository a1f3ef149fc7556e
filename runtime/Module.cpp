// Kernel loading through the driver: the JIT linker turns PTX into a cubin (keeping ptxas'
// verbose log for register and spill reports), cuModuleLoadData loads it, and the function's
// attributes are read once.
#include "runtime/Module.h"

#include "compiler/support/Error.h"
#include "compiler/support/Log.h"
#include "runtime/Device.h"
#include "runtime/Driver.h"
#include "runtime/JitWarmUp.h"

#include <atomic>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>

namespace tritium::rt {

namespace {

std::atomic<int64_t> liveModules{0}, ptxLoads{0}, cubinLoads{0};

constexpr size_t LogBytes = 64 * 1024; // ptxas' verbose log for one kernel fits easily

void *optionValue(size_t v) { return reinterpret_cast<void *>(static_cast<uintptr_t>(v)); }

// A log buffer the driver wrote a NUL-terminated string into (or nothing).
std::string logText(const std::string &buffer) {
  return std::string(buffer.data(), strnlen(buffer.data(), buffer.size()));
}

// Destroys the link state on every path; the cubin it owns must be copied out before.
struct LinkState {
  CUlinkState state = nullptr;
  ~LinkState() {
    if (state)
      Driver::get().cuLinkDestroy(state); // nothing useful to do on failure
  }
};

} // namespace

LoadedKernel LoadedKernel::fromPTX(const std::string &ptx, const std::string &entry,
                                   std::string *cubinOut) {
  if (ptx.empty())
    internalError("LoadedKernel::fromPTX: empty PTX for '" + entry + "'");
  Driver &d = Driver::get();
  Context &context = Context::current(); // the JIT targets the current context's device
  waitForJitWarmUp();  // one JIT at a time: the warm-up has done the driver's start-up

  std::string infoLog(LogBytes, '\0'), errorLog(LogBytes, '\0');
  // The option arrays must outlive the link state: the driver writes the logs at completion.
  CUjit_option options[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_LOG_VERBOSE};
  void *values[] = {infoLog.data(), optionValue(LogBytes - 1), errorLog.data(),
                    optionValue(LogBytes - 1), optionValue(1)};
  constexpr unsigned NumOptions = sizeof(options) / sizeof(options[0]);

  std::string cubin;
  {
    LinkState link;
    check(d.cuLinkCreate(NumOptions, options, values, &link.state), "cuLinkCreate");
    auto failed = [&](CUresult r, const char *call) {
      std::string log = logText(errorLog);
      if (log.empty())
        log = logText(infoLog);
      return DriverError(std::string(call) + " failed for kernel '" + entry + "': " + describe(r) +
                             (log.empty() ? "" : "\nJIT log:\n" + log),
                         r);
    };
    // The PTX is passed with its terminating NUL, as the driver expects for text input.
    CUresult r = d.cuLinkAddData(link.state, CU_JIT_INPUT_PTX, const_cast<char *>(ptx.c_str()),
                                 ptx.size() + 1, (entry + ".ptx").c_str(), 0, nullptr, nullptr);
    if (r != CUDA_SUCCESS)
      throw failed(r, "cuLinkAddData");
    void *image = nullptr;
    size_t imageBytes = 0;
    r = d.cuLinkComplete(link.state, &image, &imageBytes);
    if (r != CUDA_SUCCESS)
      throw failed(r, "cuLinkComplete");
    if (!image || imageBytes == 0)
      throw DriverError("cuLinkComplete produced no cubin for kernel '" + entry + "'");
    cubin.assign(static_cast<const char *>(image), imageBytes);
  }

  LoadedKernel k;
  CUresult r = d.cuModuleLoadData(&k.module_, cubin.data());
  if (r != CUDA_SUCCESS) {
    k.module_ = nullptr;
    check(r, "cuModuleLoadData");
  }
  k.context_ = &context;
  liveModules.fetch_add(1, std::memory_order_relaxed);
  ptxLoads.fetch_add(1, std::memory_order_relaxed);
  std::string log = logText(infoLog);
  if (std::string warnings = logText(errorLog); !warnings.empty())
    log += (log.empty() ? "" : "\n") + warnings;
  k.bind(entry, std::move(log));
  if (cubinOut)
    *cubinOut = std::move(cubin);
  return k;
}

LoadedKernel LoadedKernel::fromCubin(const std::string &cubin, const std::string &entry) {
  if (cubin.empty())
    internalError("LoadedKernel::fromCubin: empty cubin for '" + entry + "'");
  Driver &d = Driver::get();
  Context &context = Context::current();

  std::string errorLog(LogBytes, '\0');
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {errorLog.data(), optionValue(LogBytes - 1)};
  LoadedKernel k;
  CUresult r = d.cuModuleLoadDataEx(&k.module_, cubin.data(), 2, options, values);
  if (r != CUDA_SUCCESS) {
    k.module_ = nullptr;
    std::string log = logText(errorLog);
    throw DriverError("cuModuleLoadDataEx failed for kernel '" + entry + "': " + describe(r) +
                          (log.empty() ? "" : "\n" + log),
                      r);
  }
  k.context_ = &context;
  liveModules.fetch_add(1, std::memory_order_relaxed);
  cubinLoads.fetch_add(1, std::memory_order_relaxed);
  k.bind(entry, "");
  return k;
}

void LoadedKernel::bind(const std::string &entry, std::string jitLog) {
  Driver &d = Driver::get();
  CUresult r = d.cuModuleGetFunction(&function_, module_, entry.c_str());
  if (r != CUDA_SUCCESS)
    throw DriverError("cuModuleGetFunction failed for kernel '" + entry + "': " + describe(r), r);
  auto attr = [&](CUfunction_attribute a, const char *what) {
    int v = 0;
    CUresult res = d.cuFuncGetAttribute(&v, a, function_);
    if (res != CUDA_SUCCESS)
      throw DriverError(std::string("cuFuncGetAttribute(") + what + ") failed: " + describe(res),
                        res);
    return v;
  };
  info_.numRegs = attr(CU_FUNC_ATTRIBUTE_NUM_REGS, "NUM_REGS");
  info_.localBytes = attr(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, "LOCAL_SIZE_BYTES");
  info_.staticSharedBytes = attr(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "SHARED_SIZE_BYTES");
  info_.maxThreadsPerBlock = attr(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "MAX_THREADS_PER_BLOCK");
  maxDynamicShared_ =
      attr(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, "MAX_DYNAMIC_SHARED_SIZE_BYTES");
  info_.jitLog = std::move(jitLog);
  tritium::log().debug("loaded kernel '{}': {} registers, {} local bytes, {} static shared bytes, "
                       "max {} threads/block, spill stores {}",
                       entry, info_.numRegs, info_.localBytes, info_.staticSharedBytes,
                       info_.maxThreadsPerBlock, spillBytesFromLog(info_.jitLog));
}

void LoadedKernel::setDynamicShared(int bytes) {
  if (bytes <= maxDynamicShared_)
    return;
  const DeviceProps &props = context_->props();
  if (bytes + info_.staticSharedBytes > props.sharedPerBlockOptin)
    throw UserError("kernel needs " + std::to_string(bytes) + " bytes of dynamic shared memory (+" +
                    std::to_string(info_.staticSharedBytes) + " static), but " + props.arch() +
                    " allows at most " + std::to_string(props.sharedPerBlockOptin) + " per block");
  TRITIUM_CU(cuFuncSetAttribute(function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes));
  maxDynamicShared_ = bytes;
}

void LoadedKernel::allowNonPortableClusters() {
  TRITIUM_CU(cuFuncSetAttribute(function_, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
}

LoadedKernel::LoadedKernel(LoadedKernel &&other) noexcept
    : context_(std::exchange(other.context_, nullptr)),
      module_(std::exchange(other.module_, nullptr)),
      function_(std::exchange(other.function_, nullptr)), info_(std::move(other.info_)),
      maxDynamicShared_(other.maxDynamicShared_) {}

LoadedKernel &LoadedKernel::operator=(LoadedKernel &&other) noexcept {
  if (this != &other) {
    reset();
    context_ = std::exchange(other.context_, nullptr);
    module_ = std::exchange(other.module_, nullptr);
    function_ = std::exchange(other.function_, nullptr);
    info_ = std::move(other.info_);
    maxDynamicShared_ = other.maxDynamicShared_;
  }
  return *this;
}

LoadedKernel::~LoadedKernel() { reset(); }

void LoadedKernel::reset() noexcept {
  if (!module_)
    return;
  liveModules.fetch_sub(1, std::memory_order_relaxed);
  // A destroyed context took its modules with it: the handle may even name another module now.
  if (context_ && context_->alive()) {
    // A module only exists if the driver loaded, so get() cannot throw here; failures at
    // process exit (driver already shut down) are harmless and only logged.
    ContextScope scope(context_->handle()); // cuModuleUnload acts on the module's context
    CUresult r = Driver::get().cuModuleUnload(module_);
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_DEINITIALIZED)
      tritium::log().debug("cuModuleUnload failed: {}", describe(r));
  }
  module_ = nullptr;
  function_ = nullptr;
}

ModuleCounts moduleCounts() noexcept {
  return {liveModules.load(std::memory_order_relaxed), ptxLoads.load(std::memory_order_relaxed),
          cubinLoads.load(std::memory_order_relaxed)};
}

int spillBytesFromLog(const std::string &jitLog) {
  static constexpr std::string_view Marker = " bytes spill stores";
  bool found = false;
  long total = 0;
  for (size_t at = jitLog.find(Marker); at != std::string::npos;
       at = jitLog.find(Marker, at + Marker.size())) {
    size_t begin = at;
    while (begin > 0 && std::isdigit(static_cast<unsigned char>(jitLog[begin - 1])))
      --begin;
    if (begin == at)
      continue; // no number before the marker
    total += std::stol(jitLog.substr(begin, at - begin));
    found = true;
  }
  return found ? static_cast<int>(total) : -1;
}

void launchKernel(CUfunction f, unsigned grid, unsigned block, unsigned sharedBytes,
                  CUstream stream, void **params) {
  check(Driver::get().cuLaunchKernel(f, grid, 1, 1, block, 1, 1, sharedBytes, stream, params,
                                     nullptr),
        "cuLaunchKernel");
}

// TRITIUM_GRID_DEPENDENCY=0 launches kernels that wait in plain stream order (their waits then
// return at once): a switch for measuring what the overlap gains, or for ruling it out. Read
// once, and only by launches of such kernels: the ordinary launch path pays nothing for it.
static bool overlapAllowed() {
  static const bool allowed = [] {
    const char *v = std::getenv("TRITIUM_GRID_DEPENDENCY");
    return !(v && std::string_view(v) == "0");
  }();
  return allowed;
}

void launchKernelPacked(CUfunction f, unsigned grid, unsigned block, unsigned sharedBytes,
                        CUstream stream, void *args, size_t argBytes, unsigned gridY,
                        unsigned gridZ, bool programmatic, void **cooperativeArgs,
                        void **argPointers) {
  const bool cooperative = cooperativeArgs != nullptr;
  void **params = cooperative ? cooperativeArgs : argPointers;
  void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, args, CU_LAUNCH_PARAM_BUFFER_SIZE, &argBytes,
                   CU_LAUNCH_PARAM_END};
  bool overlap = programmatic && overlapAllowed();
  if (overlap || cooperative) {
    CUlaunchAttribute attrs[2]{};
    unsigned count = 0;
    if (overlap) {
      attrs[count].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      attrs[count++].value.programmaticStreamSerializationAllowed = 1;
    }
    if (cooperative) { // every CTA resident at once, and the grid barrier's word (grid_sync)
      attrs[count].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
      attrs[count++].value.cooperative = 1;
    }
    CUlaunchConfig config{};
    config.gridDimX = grid;
    config.gridDimY = gridY;
    config.gridDimZ = gridZ;
    config.blockDimX = block;
    config.blockDimY = config.blockDimZ = 1;
    config.sharedMemBytes = sharedBytes;
    config.hStream = stream;
    config.attrs = attrs;
    config.numAttrs = count;
    CUresult r = params ? Driver::get().cuLaunchKernelEx(&config, f, params, nullptr)
                        : Driver::get().cuLaunchKernelEx(&config, f, nullptr, extra);
    if (r == CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE)
      throw DriverError("cuLaunchKernelEx: a grid of " +
                            std::to_string(uint64_t(grid) * gridY * gridZ) +
                            " CTAs is more than the GPU holds at once, and the kernel calls "
                            "grid_sync, which needs every CTA resident (use a grid of at most "
                            "CompiledKernel::persistentGrid's CTAs)",
                        r);
    check(r, "cuLaunchKernelEx");
    return;
  }
  check(Driver::get().cuLaunchKernel(f, grid, gridY, gridZ, block, 1, 1, sharedBytes, stream,
                                     params, params ? nullptr : extra),
        "cuLaunchKernel");
}

} // namespace tritium::rt
