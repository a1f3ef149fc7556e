// Axis analysis, as Triton's AxisInfo: for every integer or pointer value, what is known about
// runs of its elements along each dimension of its block. It decides how wide loads and stores
// can be: a run of 4 contiguous, 16-byte-aligned f32 addresses along the fastest dimension,
// under one mask value, is one ld.global.v4.
#pragma once

#include "compiler/ir/IR.h"

#include <unordered_map>
#include <vector>

namespace tritium {

// One entry per dimension (a scalar has one dimension of extent 1).
struct AxisInfo {
  // Along dim d, elements come in runs of this many consecutive values (addresses for
  // pointers: consecutive elements).
  std::vector<int64_t> contiguity;
  // Along dim d, the first element of each run is divisible by this (bytes for pointers). A
  // power of two. Where the contiguity is 1, every element is.
  std::vector<int64_t> divisibility;
  // Along dim d, elements come in runs of this many equal values.
  std::vector<int64_t> constancy;

  static AxisInfo unknown(int rank);
  int rank() const { return int(contiguity.size()); }
  // A power of two that divides every element.
  int64_t elementDivisibility() const;
};

class AxisAnalysis {
public:
  explicit AxisAnalysis(const ir::Function &fn);
  AxisInfo get(const ir::Value *v) const;

private:
  void visit(const ir::Op &op);
  std::unordered_map<const ir::Value *, AxisInfo> info_;
};

} // namespace tritium
