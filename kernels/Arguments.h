// Checks of the library's launch arguments: each mistake is a tritium::UserError whose message
// names the function and the argument ("layerNormForward: x is null"), raised before anything
// is compiled or launched.
#pragma once

#include "frontend/CompiledKernel.h"
#include "kernels/Dtype.h"

#include <cstdint>
#include <initializer_list>
#include <string>

namespace tritium::kernels {

class Arguments {
public:
  explicit Arguments(const char *function) : function_(function) {}

  // A device pointer that must not be null.
  KernelArg pointer(const char *name, const void *p) const;
  // A device pointer that may be null (an output the caller does not want): 0 then.
  KernelArg optionalPointer(const void *p) const;
  // A size that must be at least `min`.
  void atLeast(const char *name, int64_t value, int64_t min) const;
  // A row stride (elements) that must be at least the row length.
  void rowStride(const char *name, int64_t stride, int64_t cols) const;
  // A probability in [0, 1) (dropout) or [0, 1] (label smoothing).
  void fraction(const char *name, double value, bool oneAllowed) const;
  // A tensor's dtype that must be fp32, fp16 or bf16 (every kernel but the matmul).
  void floatStorage(const char *name, Dtype dtype) const;
  // Attention's heads: `heads` at least 1 and a multiple of the K/V heads (`kvHeads`, 0 meaning
  // as many as `heads`); returns the K/V heads.
  int64_t kvHeads(int64_t heads, int64_t kvHeads) const;
  // A given plan's block (elements or columns per step): a power of two.
  void planBlock(int64_t block) const;
  [[noreturn]] void fail(const std::string &message) const;

private:
  const char *function_;
};

// Bytes a launch reads or writes from `p` on: the autotuner launches a kernel several times on
// the caller's arguments, which is safe only when no output overlaps an input.
struct Span {
  const void *p = nullptr;
  int64_t bytes = 0;
};
bool anyOverlap(std::initializer_list<Span> outputs, std::initializer_list<Span> inputs);

// Whether every tensor starts on a 16-byte boundary (null counts as aligned): the unit the
// specialization marks pointers by, so the kernels compiled for such tensors move wider vectors
// and may want other plans.
bool on16ByteBoundaries(std::initializer_list<const void *> tensors);

// "i32" when every index below `maxIndex` fits 32 bits, else "i64": the type of the strides
// and sizes a kernel computes its offsets in (32-bit offsets are cheaper; past 2^31 they wrap).
std::string indexType(int64_t maxIndex);

} // namespace tritium::kernels
