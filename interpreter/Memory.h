// The interpreter's memory model. Without a GPU, "device pointers" are host addresses; an
// interpreted kernel may touch only host ranges registered here (HostBuffers, or memory the
// caller registers with ScopedHostRange), and every access a mask does not switch off is checked
// against them before it happens, so an out-of-bounds access is an error, never a stray write.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tritium::interpreter {

// Host memory for interpreted kernels, registered for its lifetime; mirrors rt::DeviceBuffer
// (upload, download, fill32) so that code can use either. 64-byte aligned, zero-filled.
// Move-only.
class HostBuffer {
public:
  explicit HostBuffer(size_t bytes);
  HostBuffer(HostBuffer &&other) noexcept;
  HostBuffer &operator=(HostBuffer &&other) noexcept;
  HostBuffer(const HostBuffer &) = delete;
  HostBuffer &operator=(const HostBuffer &) = delete;
  ~HostBuffer();

  void *data() const { return data_; }
  uint64_t ptr() const { return uint64_t(reinterpret_cast<uintptr_t>(data_)); }
  size_t bytes() const { return bytes_; }

  // Copies of the first `bytes` bytes; UserError past the end.
  void upload(const void *src, size_t bytes);
  void download(void *dst, size_t bytes) const;
  void fill32(uint32_t pattern);

private:
  void release() noexcept;

  void *data_ = nullptr;
  size_t bytes_ = 0;
};

// Registers memory the caller owns (a std::vector's data, say) for its lifetime.
class ScopedHostRange {
public:
  ScopedHostRange(const void *begin, size_t bytes);
  ~ScopedHostRange();
  ScopedHostRange(const ScopedHostRange &) = delete;
  ScopedHostRange &operator=(const ScopedHostRange &) = delete;

private:
  uintptr_t begin_;
};

// The registered ranges at the start of a launch, for fast lookups while it runs. Safe to use
// from several threads at once (the programs of a cluster): the ranges are read-only after the
// snapshot and the one cached index is a relaxed atomic (a hint, any value of it is correct).
class MemoryView {
public:
  MemoryView(); // a snapshot of the registry

  // True when [addr, addr + bytes) lies inside one registered range.
  bool contains(uint64_t addr, uint64_t bytes) const;
  // Why an access is outside: the nearest range and how far from it, for error messages.
  std::string explain(uint64_t addr, uint64_t bytes) const;

private:
  struct Range {
    uint64_t begin, end;
  };
  std::vector<Range> ranges_;           // sorted by begin, disjoint
  mutable std::atomic<size_t> last_{0}; // the range of the previous hit: accesses come in runs
};

} // namespace tritium::interpreter
