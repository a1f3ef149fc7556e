// Loop-carried values that advance by the same amount every iteration: a `for` whose body
// yields `arg + step` (add, or addptr for pointers) for a carried argument, where `step` does
// not depend on the loop. Such a value at iteration k is `init + k * step`, so it can be
// computed for any later iteration as the induction variable can: the pipeliner issues loads
// whose addresses follow from it ahead of time (Triton's `a_ptrs += BK * stride` and
// `advance(block_ptr, ...)` loops), and the axis analysis knows its alignment.
#pragma once

#include "compiler/ir/IR.h"

#include <vector>

namespace tritium {

struct AffineCarry {
  unsigned arg;            // the body argument (1 .. n; 0 is the induction variable)
  const ir::Value *step;   // what each iteration adds (not dependent on the loop)
  const ir::Value *next;   // the yielded value, arg + step
};

// The affine carries of `loop` (a `for`), in argument order.
std::vector<AffineCarry> affineCarries(const ir::Op &loop);

// Whether `v` is the same in every iteration of `body`: defined outside it, or made inside it
// by pure ops of such values.
bool invariantIn(const ir::Value *v, const ir::Block &body);

} // namespace tritium
