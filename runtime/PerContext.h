// A table of one T per CUDA context (indexed by Context::slot()), read without a lock on the
// launch path: the first slots are atomic pointers, the rest (a process that saw more contexts)
// sit in a map behind a mutex. Entries are created by the owner under its own lock and never
// move; erase is for contexts being destroyed, with no launch in them still running.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

namespace tritium::rt {

template <typename T> class PerContext {
public:
  static constexpr uint32_t FastSlots = 16;

  // The entry for `slot`, or null. Lock-free for the first FastSlots contexts: one acquire load.
  T *find(uint32_t slot) const noexcept {
    if (slot < FastSlots)
      return fast_[slot].load(std::memory_order_acquire);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = all_.find(slot);
    return it == all_.end() ? nullptr : it->second.get();
  }

  // Stores the entry for a slot that has none (the caller checked under its own lock, so that
  // each context's entry is made once) and returns it.
  T &insert(uint32_t slot, std::unique_ptr<T> value) {
    std::lock_guard<std::mutex> lock(mutex_);
    T &stored = *(all_[slot] = std::move(value));
    if (slot < FastSlots)
      fast_[slot].store(&stored, std::memory_order_release);
    return stored;
  }

  // Drops the entry of a context being destroyed. Nothing may be using it.
  void erase(uint32_t slot) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (slot < FastSlots)
      fast_[slot].store(nullptr, std::memory_order_release);
    all_.erase(slot);
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return all_.size();
  }

  // Calls f(slot, T&) for each entry, under the table's lock.
  template <typename F> void forEach(F &&f) const {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto &[slot, value] : all_)
      f(slot, *value);
  }

private:
  std::array<std::atomic<T *>, FastSlots> fast_{};
  mutable std::mutex mutex_;
  std::map<uint32_t, std::unique_ptr<T>> all_;
};

} // namespace tritium::rt
