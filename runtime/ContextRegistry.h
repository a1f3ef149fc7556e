// The table of CUDA contexts tritium has seen: one Context per live context handle, device
// properties queried once per device and shared, and an epoch that moves whenever a context is
// retired so that threads' cached lookups (Context::current) know to look again. It calls no
// driver function itself (the caller passes what the driver said), so it is tested with made-up
// handles.
#pragma once

#include "runtime/Device.h"

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace tritium::rt {

class ContextRegistry {
public:
  using QueryProps = std::function<DeviceProps(int ordinal)>;
  explicit ContextRegistry(QueryProps query) : query_(std::move(query)) {}

  // The process's registry, whose properties come from the driver (queryDevice).
  static ContextRegistry &process();

  // The Context for `handle` with driver id `id` on `device` (its ordinal), registered on first
  // sight. A known handle with another id is a new context in a destroyed one's place: the old
  // entry is retired first. Thread-safe; takes a lock (only on a thread's first sight).
  Context &enter(CUcontext handle, unsigned long long id, CUdevice device);
  // The live Context for `handle`, or null.
  Context *find(CUcontext handle) const;
  // Marks the context dead and forgets its handle (rt::forgetContext). No-op when unknown.
  void retire(CUcontext handle);

  // Moves on every retirement: a cached (handle -> Context) from an older epoch must be looked up
  // again.
  uint64_t epoch() const noexcept { return epoch_.load(std::memory_order_acquire); }
  // Whether contexts of two or more devices have been entered.
  bool severalDevices() const noexcept { return severalDevices_.load(std::memory_order_relaxed); }
  size_t liveContexts() const;

private:
  void retireLocked(std::map<CUcontext, Context *>::iterator it);

  QueryProps query_;
  mutable std::mutex mutex_;
  std::map<int, std::unique_ptr<DeviceProps>> props_;
  std::vector<std::unique_ptr<Context>> all_; // never shrinks: Context references stay valid
  std::map<CUcontext, Context *> live_;
  int firstDevice_ = -1;
  std::atomic<uint64_t> epoch_{0};
  std::atomic<bool> severalDevices_{false};
};

} // namespace tritium::rt
