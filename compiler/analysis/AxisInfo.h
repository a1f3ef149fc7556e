// Axis analysis, as Triton's AxisInfo: for every integer or pointer value, what is known about
// runs of its elements along the (single) block axis. It decides how wide loads and stores can
// be: a run of 4 contiguous, 16-byte-aligned f32 addresses under one mask value is one
// ld.global.v4.
#pragma once

#include "compiler/ir/IR.h"

#include <unordered_map>

namespace tritium {

struct AxisInfo {
  // Elements come in runs of this many consecutive values (addresses for pointers: consecutive
  // elements).
  int64_t contiguity = 1;
  // The first element of each run is divisible by this (bytes for pointers). A power of two.
  int64_t divisibility = 1;
  // Elements come in runs of this many equal values.
  int64_t constancy = 1;
};

class AxisAnalysis {
public:
  explicit AxisAnalysis(const ir::Function &fn);
  const AxisInfo &get(const ir::Value *v) const;

private:
  void visit(const ir::Op &op);
  std::unordered_map<const ir::Value *, AxisInfo> info_;
};

} // namespace tritium
