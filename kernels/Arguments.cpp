#include "kernels/Arguments.h"

#include "compiler/support/Error.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace tritium::kernels {

void Arguments::fail(const std::string &message) const {
  throw UserError(std::string(function_) + ": " + message);
}

KernelArg Arguments::pointer(const char *name, const void *p) const {
  if (!p)
    fail(std::string(name) + " is null");
  return KernelArg::pointer(CUdeviceptr(reinterpret_cast<uintptr_t>(p)));
}

KernelArg Arguments::optionalPointer(const void *p) const {
  return KernelArg::pointer(CUdeviceptr(reinterpret_cast<uintptr_t>(p)));
}

void Arguments::atLeast(const char *name, int64_t value, int64_t min) const {
  if (value < min)
    fail(std::string(name) + " is " + std::to_string(value) + ", but must be at least " +
         std::to_string(min));
}

void Arguments::rowStride(const char *name, int64_t stride, int64_t cols) const {
  if (stride < cols)
    fail(std::string(name) + " is " + std::to_string(stride) + " elements, shorter than a row of " +
         std::to_string(cols));
}

void Arguments::fraction(const char *name, double value, bool oneAllowed) const {
  if (!(value >= 0.0) || value > 1.0 || (!oneAllowed && value == 1.0))
    fail(std::string(name) + " is " + std::to_string(value) + ", but must be in [0, 1" +
         (oneAllowed ? "]" : ")"));
}

bool on16ByteBoundaries(std::initializer_list<const void *> tensors) {
  return std::all_of(tensors.begin(), tensors.end(),
                     [](const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; });
}

bool anyOverlap(std::initializer_list<Span> outputs, std::initializer_list<Span> inputs) {
  auto overlap = [](const Span &a, const Span &b) {
    auto x = reinterpret_cast<uintptr_t>(a.p), y = reinterpret_cast<uintptr_t>(b.p);
    return a.p && b.p && x < y + uintptr_t(b.bytes) && y < x + uintptr_t(a.bytes);
  };
  for (const Span &o : outputs) {
    for (const Span &i : inputs)
      if (overlap(o, i))
        return true;
    for (const Span &other : outputs) // one output written through another
      if (&other != &o && overlap(o, other))
        return true;
  }
  return false;
}

int64_t Arguments::kvHeads(int64_t heads, int64_t kv) const {
  atLeast("heads", heads, 1);
  kv = kv ? kv : heads;
  atLeast("kv_heads", kv, 1);
  if (heads % kv != 0)
    fail("heads (" + std::to_string(heads) + ") must be a multiple of kv_heads (" +
         std::to_string(kv) + ")");
  return kv;
}

void Arguments::floatStorage(const char *name, Dtype dtype) const {
  if (!isFloatStorage(dtype))
    fail(std::string(name) + " must be fp32, fp16 or bf16, got " + dtypeName(dtype));
}

void Arguments::planBlock(int64_t block) const {
  if (block < 1 || !std::has_single_bit(uint64_t(block)))
    fail("the plan's block is " + std::to_string(block) + ", not a power of two");
}

std::string indexType(int64_t maxIndex) {
  return maxIndex > std::numeric_limits<int32_t>::max() ? "i64" : "i32";
}

} // namespace tritium::kernels
