// The registry of host ranges an interpreted kernel may access, and HostBuffer. The registry is
// global (launches name plain addresses) and locked; a launch works on a snapshot.
#include "interpreter/Memory.h"

#include "compiler/support/Error.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace tritium::interpreter {

namespace {

struct Registry {
  std::mutex mutex;
  std::map<uintptr_t, size_t> ranges; // begin -> bytes
};

Registry &registry() {
  static Registry r;
  return r;
}

void add(uintptr_t begin, size_t bytes) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  // Overlapping registrations would make "inside one range" ambiguous: refuse them.
  auto next = r.ranges.lower_bound(begin);
  bool overlaps =
      (next != r.ranges.end() && next->first < begin + bytes) ||
      (next != r.ranges.begin() && std::prev(next)->first + std::prev(next)->second > begin);
  if (overlaps)
    throw UserError("interpreter: the host range at " + std::to_string(begin) + " of " +
                    std::to_string(bytes) + " bytes overlaps one already registered");
  r.ranges[begin] = bytes;
}

void remove(uintptr_t begin) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.ranges.erase(begin);
}

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)v);
  return buf;
}

} // namespace

HostBuffer::HostBuffer(size_t bytes) : bytes_(bytes) {
  size_t rounded = std::max<size_t>(64, (bytes + 63) / 64 * 64);
  data_ = std::aligned_alloc(64, rounded);
  if (!data_)
    throw UserError("interpreter: cannot allocate a host buffer of " + std::to_string(bytes) +
                    " bytes");
  std::memset(data_, 0, rounded);
  if (bytes)
    add(reinterpret_cast<uintptr_t>(data_), bytes);
}

HostBuffer::HostBuffer(HostBuffer &&o) noexcept : data_(o.data_), bytes_(o.bytes_) {
  o.data_ = nullptr;
  o.bytes_ = 0;
}

HostBuffer &HostBuffer::operator=(HostBuffer &&o) noexcept {
  if (this != &o) {
    release();
    data_ = o.data_;
    bytes_ = o.bytes_;
    o.data_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

HostBuffer::~HostBuffer() { release(); }

void HostBuffer::release() noexcept {
  if (!data_)
    return;
  if (bytes_)
    remove(reinterpret_cast<uintptr_t>(data_));
  std::free(data_);
  data_ = nullptr;
}

void HostBuffer::upload(const void *src, size_t bytes) {
  if (bytes > bytes_)
    throw UserError("upload of " + std::to_string(bytes) + " bytes into a host buffer of " +
                    std::to_string(bytes_));
  if (bytes)
    std::memcpy(data_, src, bytes);
}

void HostBuffer::download(void *dst, size_t bytes) const {
  if (bytes > bytes_)
    throw UserError("download of " + std::to_string(bytes) + " bytes from a host buffer of " +
                    std::to_string(bytes_));
  if (bytes)
    std::memcpy(dst, data_, bytes);
}

void HostBuffer::fill32(uint32_t pattern) {
  auto *words = static_cast<uint32_t *>(data_);
  std::fill(words, words + bytes_ / 4, pattern);
}

ScopedHostRange::ScopedHostRange(const void *begin, size_t bytes)
    : begin_(reinterpret_cast<uintptr_t>(begin)) {
  add(begin_, bytes);
}

ScopedHostRange::~ScopedHostRange() { remove(begin_); }

MemoryView::MemoryView() {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (auto &[begin, bytes] : r.ranges)
    ranges_.push_back({uint64_t(begin), uint64_t(begin + bytes)});
}

bool MemoryView::contains(uint64_t addr, uint64_t bytes) const {
  size_t last = last_.load(std::memory_order_relaxed);
  if (last < ranges_.size() && ranges_[last].begin <= addr && addr + bytes <= ranges_[last].end)
    return true;
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), addr,
                             [](uint64_t a, const Range &r) { return a < r.begin; });
  if (it == ranges_.begin())
    return false;
  --it;
  if (addr + bytes > it->end || addr + bytes < addr)
    return false;
  last_.store(size_t(it - ranges_.begin()), std::memory_order_relaxed);
  return true;
}

std::string MemoryView::explain(uint64_t addr, uint64_t bytes) const {
  if (ranges_.empty())
    return "no memory is registered with the interpreter (allocate with "
           "tritium::interpreter::HostBuffer or register with ScopedHostRange)";
  // The range whose end or start is nearest to the access.
  const Range *best = nullptr;
  uint64_t bestDistance = UINT64_MAX;
  for (const Range &r : ranges_) {
    uint64_t d = addr >= r.end ? addr - r.end : addr + bytes <= r.begin ? r.begin - addr : 0;
    if (d < bestDistance) {
      bestDistance = d;
      best = &r;
    }
  }
  std::string size =
      std::to_string(best->end - best->begin) + "-byte buffer at " + hex(best->begin);
  if (addr == best->end)
    return "just past the end of the " + size;
  if (addr > best->end)
    return std::to_string(addr - best->end) + " bytes past the end of the " + size;
  if (addr < best->begin)
    return std::to_string(best->begin - addr) + " bytes before the start of the " + size;
  return "straddling the end of the " + size;
}

} // namespace tritium::interpreter
