// Small RAII wrappers over device memory, streams, events and CUDA graphs, used by the tests,
// the examples and the benchmark harness.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <functional>

namespace tritium::rt {

class Context;

// A device allocation in the current context (Context::current()), freed in that context on
// destruction from any thread. Move-only.
class DeviceBuffer {
public:
  explicit DeviceBuffer(size_t bytes);
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer();

  CUdeviceptr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  Context *context() const { return context_; }

  // Synchronous copies of the first `bytes` bytes; throws UserError past the end.
  void upload(const void *src, size_t bytes);
  void download(void *dst, size_t bytes) const;
  // Fills every whole 32-bit word with `pattern` (e.g. a NaN to poison outputs).
  void fill32(uint32_t pattern);

private:
  void release() noexcept;

  Context *context_ = nullptr;
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

// A stream of the current context that orders with the legacy default stream, so the
// synchronous copies above need no extra synchronisation against kernels launched on it.
// Move-only.
class Stream {
public:
  Stream();
  Stream(Stream &&other) noexcept;
  Stream &operator=(Stream &&other) noexcept;
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;
  ~Stream();

  CUstream get() const { return stream_; }
  Context *context() const { return context_; }
  void sync();

private:
  void release() noexcept;

  Context *context_ = nullptr;
  CUstream stream_ = nullptr;
};

// A timing event. Move-only.
class Event {
public:
  Event();
  Event(Event &&other) noexcept;
  Event &operator=(Event &&other) noexcept;
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;
  ~Event();

  CUevent get() const { return event_; }
  void record(CUstream stream);
  // Milliseconds from `start` to this event; waits for this event to complete.
  float msSince(const Event &start);

private:
  void release() noexcept;

  Context *context_ = nullptr;
  CUevent event_ = nullptr;
};

// An instantiated CUDA graph captured from a sequence of launches. Move-only.
class Graph {
public:
  // Captures everything `launches` enqueues on `stream` (which must not be the null stream)
  // and instantiates it. Nothing runs during capture.
  static Graph capture(CUstream stream, const std::function<void()> &launches);

  Graph(Graph &&other) noexcept;
  Graph &operator=(Graph &&other) noexcept;
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;
  ~Graph();

  void launch(CUstream stream);

private:
  Graph() = default;
  void release() noexcept;

  Context *context_ = nullptr;
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
};

// Overwrites a buffer of twice the device's L2 size on `stream` (of the current context),
// evicting whatever a previous benchmark repetition left in L2. The buffer is allocated on first
// use in each context and kept.
void l2Flush(CUstream stream);

} // namespace tritium::rt
