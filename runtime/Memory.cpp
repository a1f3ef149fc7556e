// RAII wrappers over cuMemAlloc, streams, events and graph capture, and the L2 flush the
// benchmark runs between repetitions. Destructors never throw: failures there are only logged.
#include "runtime/Memory.h"

#include "compiler/support/Error.h"
#include "compiler/support/Log.h"
#include "runtime/Device.h"
#include "runtime/Driver.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace tritium::rt {

namespace {

// Logs a failed release unless the driver has already shut down at process exit.
void releaseCheck(CUresult r, const char *call) noexcept {
  if (r != CUDA_SUCCESS && r != CUDA_ERROR_DEINITIALIZED) {
    try {
      tritium::log().warn("{} failed during cleanup: {}", call, describe(r));
    } catch (...) {
    }
  }
}

} // namespace

// ---- DeviceBuffer -----------------------------------------------------------------------------

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  context_ = &Context::current();
  if (bytes == 0)
    return; // cuMemAlloc rejects 0 bytes; an empty buffer has the null pointer
  TRITIUM_CU(cuMemAlloc(&ptr_, bytes));
}

DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept
    : context_(std::exchange(other.context_, nullptr)), ptr_(std::exchange(other.ptr_, 0)),
      bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    release();
    context_ = std::exchange(other.context_, nullptr);
    ptr_ = std::exchange(other.ptr_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() { release(); }

void DeviceBuffer::release() noexcept {
  if (ptr_ && context_->alive()) { // a destroyed context freed its memory itself
    ContextScope scope(context_->handle());
    releaseCheck(Driver::get().cuMemFree(ptr_), "cuMemFree");
  }
  ptr_ = 0;
  bytes_ = 0;
}

void DeviceBuffer::upload(const void *src, size_t bytes) {
  if (bytes > bytes_)
    throw UserError("upload of " + std::to_string(bytes) + " bytes into a device buffer of " +
                    std::to_string(bytes_));
  if (bytes == 0)
    return;
  if (!src)
    throw UserError("upload from a null host pointer");
  ContextScope scope(context_->handle());
  TRITIUM_CU(cuMemcpyHtoD(ptr_, src, bytes));
}

void DeviceBuffer::download(void *dst, size_t bytes) const {
  if (bytes > bytes_)
    throw UserError("download of " + std::to_string(bytes) + " bytes from a device buffer of " +
                    std::to_string(bytes_));
  if (bytes == 0)
    return;
  if (!dst)
    throw UserError("download into a null host pointer");
  ContextScope scope(context_->handle());
  TRITIUM_CU(cuMemcpyDtoH(dst, ptr_, bytes));
}

void DeviceBuffer::fill32(uint32_t pattern) {
  size_t words = bytes_ / 4;
  if (words == 0)
    return;
  ContextScope scope(context_->handle());
  TRITIUM_CU(cuMemsetD32(ptr_, pattern, words));
}

// ---- Stream -----------------------------------------------------------------------------------

Stream::Stream() {
  context_ = &Context::current();
  // CU_STREAM_DEFAULT (not NON_BLOCKING): the stream orders with the legacy stream that the
  // synchronous cuMemcpy/cuMemset calls use, so results are never read before a kernel ends.
  TRITIUM_CU(cuStreamCreate(&stream_, CU_STREAM_DEFAULT));
}

Stream::Stream(Stream &&other) noexcept
    : context_(std::exchange(other.context_, nullptr)),
      stream_(std::exchange(other.stream_, nullptr)) {}

Stream &Stream::operator=(Stream &&other) noexcept {
  if (this != &other) {
    release();
    context_ = std::exchange(other.context_, nullptr);
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

Stream::~Stream() { release(); }

void Stream::release() noexcept {
  if (stream_ && context_->alive()) {
    ContextScope scope(context_->handle());
    releaseCheck(Driver::get().cuStreamDestroy(stream_), "cuStreamDestroy");
  }
  stream_ = nullptr;
}

void Stream::sync() { TRITIUM_CU(cuStreamSynchronize(stream_)); }

// ---- Event ------------------------------------------------------------------------------------

Event::Event() {
  context_ = &Context::current();
  TRITIUM_CU(cuEventCreate(&event_, CU_EVENT_DEFAULT)); // DEFAULT keeps timing enabled
}

Event::Event(Event &&other) noexcept
    : context_(std::exchange(other.context_, nullptr)),
      event_(std::exchange(other.event_, nullptr)) {}

Event &Event::operator=(Event &&other) noexcept {
  if (this != &other) {
    release();
    context_ = std::exchange(other.context_, nullptr);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

Event::~Event() { release(); }

void Event::release() noexcept {
  if (event_ && context_->alive()) {
    ContextScope scope(context_->handle());
    releaseCheck(Driver::get().cuEventDestroy(event_), "cuEventDestroy");
  }
  event_ = nullptr;
}

void Event::record(CUstream stream) { TRITIUM_CU(cuEventRecord(event_, stream)); }

float Event::msSince(const Event &start) {
  TRITIUM_CU(cuEventSynchronize(event_));
  float ms = 0.0f;
  TRITIUM_CU(cuEventElapsedTime(&ms, start.event_, event_));
  return ms;
}

// ---- Graph ------------------------------------------------------------------------------------

Graph Graph::capture(CUstream stream, const std::function<void()> &launches) {
  if (!stream)
    throw UserError("Graph::capture needs a created stream, not the null stream");
  Context &context = Context::current();
  Driver &d = Driver::get();
  // THREAD_LOCAL: only this thread's unsafe calls (e.g. synchronous copies) break the capture.
  TRITIUM_CU(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  try {
    launches();
  } catch (...) {
    // Leave the stream usable: end the (possibly invalidated) capture and drop its graph.
    CUgraph partial = nullptr;
    d.cuStreamEndCapture(stream, &partial);
    if (partial)
      d.cuGraphDestroy(partial);
    throw;
  }
  Graph g;
  g.context_ = &context;
  TRITIUM_CU(cuStreamEndCapture(stream, &g.graph_));
  TRITIUM_CU(cuGraphInstantiate(&g.exec_, g.graph_, 0));
  return g;
}

Graph::Graph(Graph &&other) noexcept
    : context_(std::exchange(other.context_, nullptr)),
      graph_(std::exchange(other.graph_, nullptr)), exec_(std::exchange(other.exec_, nullptr)) {}

Graph &Graph::operator=(Graph &&other) noexcept {
  if (this != &other) {
    release();
    context_ = std::exchange(other.context_, nullptr);
    graph_ = std::exchange(other.graph_, nullptr);
    exec_ = std::exchange(other.exec_, nullptr);
  }
  return *this;
}

Graph::~Graph() { release(); }

void Graph::release() noexcept {
  if ((graph_ || exec_) && context_ && context_->alive()) {
    ContextScope scope(context_->handle());
    if (exec_)
      releaseCheck(Driver::get().cuGraphExecDestroy(exec_), "cuGraphExecDestroy");
    if (graph_)
      releaseCheck(Driver::get().cuGraphDestroy(graph_), "cuGraphDestroy");
  }
  exec_ = nullptr;
  graph_ = nullptr;
}

void Graph::launch(CUstream stream) { TRITIUM_CU(cuGraphLaunch(exec_, stream)); }

// ---- L2 flush ---------------------------------------------------------------------------------

void l2Flush(CUstream stream) {
  Context &context = Context::current();
  // One per context, leaked on purpose: freeing at process exit could run after the driver shut
  // down.
  static std::mutex mutex;
  static std::map<uint32_t, DeviceBuffer *> scratches;
  DeviceBuffer *scratch = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex);
    DeviceBuffer *&s = scratches[context.slot()];
    if (!s)
      s = new DeviceBuffer(
          std::max<size_t>(2 * static_cast<size_t>(context.props().l2Bytes), 1 << 20));
    scratch = s;
  }
  TRITIUM_CU(cuMemsetD32Async(scratch->ptr(), 0, scratch->bytes() / 4, stream));
}

} // namespace tritium::rt
