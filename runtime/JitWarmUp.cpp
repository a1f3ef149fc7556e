// A background thread that JIT-compiles and loads an empty kernel (runtime/JitWarmUp.h says why).
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
    thread_ = std::thread([this, ptxVersion] { run(ptxVersion); });
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
  void run(int ptxVersion) {
    auto start = std::chrono::steady_clock::now();
    try {
      const DeviceProps &props = Context::current().props();
      std::string ptx = ".version " + std::to_string(ptxVersion / 10) + "." +
                        std::to_string(ptxVersion % 10) + "\n.target " + props.arch() +
                        "\n.address_size 64\n.visible .entry tritium_jit_warm_up()\n{\n  ret;\n}\n";
      Driver &d = Driver::get();
      CUmodule module = nullptr;
      CUresult r = d.cuModuleLoadData(&module, ptx.c_str());
      if (r == CUDA_SUCCESS)
        d.cuModuleUnload(module);
      else
        log().debug("JIT warm-up: cuModuleLoadData failed: {}", describe(r));
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
