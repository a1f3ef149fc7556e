// The context table behind Context::current (runtime/ContextRegistry.h says what it holds).
#include "runtime/ContextRegistry.h"

#include "compiler/support/Log.h"

namespace tritium::rt {

ContextRegistry &ContextRegistry::process() {
  // Leaked on purpose: Contexts are referenced by objects destroyed at process exit.
  static ContextRegistry *registry = new ContextRegistry(queryDevice);
  return *registry;
}

Context &ContextRegistry::enter(CUcontext handle, unsigned long long id, CUdevice device) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = live_.find(handle); it != live_.end()) {
    if (it->second->id() == id)
      return *it->second;
    log().debug("CUDA context {} was destroyed and its handle reused; forgetting its modules",
                static_cast<void *>(handle));
    retireLocked(it);
  }
  int ordinal = static_cast<int>(device); // a CUdevice is the device's ordinal
  std::unique_ptr<DeviceProps> &props = props_[ordinal];
  if (!props) {
    props = std::make_unique<DeviceProps>(query_(ordinal)); // may throw: nothing changed yet
    log().debug("using CUDA device {} '{}' ({}, {} SMs, {} KiB L2)", ordinal, props->name,
                props->arch(), props->smCount, props->l2Bytes / 1024);
  }
  auto context = std::make_unique<Context>(handle, id, device, props.get(),
                                           static_cast<uint32_t>(all_.size()));
  Context &c = *context;
  all_.push_back(std::move(context));
  live_[handle] = &c;
  if (firstDevice_ < 0)
    firstDevice_ = ordinal;
  else if (firstDevice_ != ordinal)
    severalDevices_.store(true, std::memory_order_relaxed);
  return c;
}

Context *ContextRegistry::find(CUcontext handle) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(handle);
  return it == live_.end() ? nullptr : it->second;
}

void ContextRegistry::retire(CUcontext handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = live_.find(handle); it != live_.end())
    retireLocked(it);
}

void ContextRegistry::retireLocked(std::map<CUcontext, Context *>::iterator it) {
  it->second->alive_.store(false, std::memory_order_release);
  live_.erase(it);
  epoch_.fetch_add(1, std::memory_order_acq_rel);
}

size_t ContextRegistry::liveContexts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_.size();
}

} // namespace tritium::rt
