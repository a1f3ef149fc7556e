// A background thread that JIT-links and loads an empty kernel (runtime/JitWarmUp.h says why).
#include "runtime/JitWarmUp.h"

#include "compiler/support/Log.h"
#include "runtime/Device.h"
#include "runtime/Driver.h"

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

namespace tritium::rt {

namespace {

class WarmUp {
public:
  void start(int ptxVersion) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (started_)
      return;
    started_ = true;
    // The caller's context, if it has one: warming up in it touches no other device (a primary
    // context of device 0 made for nothing would also switch on the several-device checks).
    CUcontext caller = nullptr;
    if (Driver::get().cuCtxGetCurrent(&caller) != CUDA_SUCCESS)
      caller = nullptr;
    thread_ = std::thread([this, ptxVersion, caller] { run(ptxVersion, caller); });
  }

  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    done_cv_.wait(lock, [&] { return !started_ || done_; });
  }

  // At exit, a warm-up still running finishes before the statics it uses are destroyed; the
  // driver stays loaded for the life of the process (runtime/Driver.cpp).
  ~WarmUp() {
    if (thread_.joinable())
      thread_.join();
  }

private:
  void run(int ptxVersion, CUcontext caller) {
    auto start = std::chrono::steady_clock::now();
    try {
      if (caller)
        TRITIUM_CU(cuCtxSetCurrent(caller));
      const DeviceProps &props = Context::current().props();
      std::string ptx = ".version " + std::to_string(ptxVersion / 10) + "." +
                        std::to_string(ptxVersion % 10) + "\n.target " + props.arch() +
                        "\n.address_size 64\n.visible .entry tritium_jit_warm_up()\n{\n  ret;\n}\n";
      // The path LoadedKernel::fromPTX takes: the JIT linker, then loading its cubin. The
      // linker has a start-up of its own beyond the PTX compiler's (docs/notes/compile-time.md),
      // so a plain cuModuleLoadData of PTX would warm only part of it.
      Driver &d = Driver::get();
      CUlinkState link = nullptr;
      void *cubin = nullptr;
      size_t cubinBytes = 0;
      CUresult r = d.cuLinkCreate(0, nullptr, nullptr, &link);
      if (r == CUDA_SUCCESS)
        r = d.cuLinkAddData(link, CU_JIT_INPUT_PTX, const_cast<char *>(ptx.c_str()),
                            ptx.size() + 1, "tritium_jit_warm_up.ptx", 0, nullptr, nullptr);
      if (r == CUDA_SUCCESS)
        r = d.cuLinkComplete(link, &cubin, &cubinBytes);
      CUmodule module = nullptr;
      if (r == CUDA_SUCCESS)
        r = d.cuModuleLoadData(&module, cubin);
      if (module)
        d.cuModuleUnload(module);
      if (link)
        d.cuLinkDestroy(link);
      if (r != CUDA_SUCCESS)
        log().debug("JIT warm-up failed: {}", describe(r));
    } catch (const std::exception &e) {
      log().debug("JIT warm-up skipped: {}", e.what());
    }
    log().debug("JIT warm-up took {} us", std::chrono::duration_cast<std::chrono::microseconds>(
                                              std::chrono::steady_clock::now() - start)
                                              .count());
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
    done_cv_.notify_all();
  }

  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool started_ = false, done_ = false;
  std::thread thread_;
};

WarmUp &warmUp() {
  static WarmUp w;
  return w;
}

bool disabledByEnvironment() {
  const char *env = std::getenv("TRITIUM_JIT_WARMUP");
  return env && std::strcmp(env, "0") == 0;
}

} // namespace

void startJitWarmUp(int ptxVersion) {
  if (disabledByEnvironment())
    return;
  // Loading the driver here, not on the thread, keeps its exit handlers registered before this
  // file's static, so they run after the thread has been joined.
  if (!Driver::available())
    return;
  warmUp().start(ptxVersion);
}

void waitForJitWarmUp() { warmUp().wait(); }

} // namespace tritium::rt
