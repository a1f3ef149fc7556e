// Finding the variables a traced region assigned (loop bodies, branches), for Range, if_ and
// while_: each becomes a carried value or a result, as Triton carries variables by name.
#pragma once

#include "frontend/LiveValues.h"

namespace tritium::dsl {

// The variables of `before` (a snapshot) that now hold another value, skipping `skip`.
std::vector<LiveValues::Change> assignedVariables(const std::vector<LiveValues::Entry> &before,
                                                  const std::vector<Value *> &skip = {});

// Before the uses of a carried variable's old value inside `regions` are rewritten to the
// region's argument: a UserError at `loc` when that old value is also held by another live
// variable, since a read of it inside the body could be either.
void checkUnambiguous(const std::vector<LiveValues::Change> &carried,
                      const std::vector<LiveValues::Entry> &before,
                      const std::vector<ir::Block *> &regions, const char *what,
                      const SourceLoc &loc);

// A carried value and the region argument that stands for it inside the region.
struct CarriedArgument {
  ir::Value *before;
  ir::Value *argument;
};

// What a carried variable yields at the end of the region: its value after the body, except a
// value that a carried variable held before the region, which inside it is that variable's
// current value, its argument (`prev = cur; cur = next(cur)` yields cur's argument for prev).
// A UserError at `loc` when that value was also held by another variable.
ir::Value *yieldedValue(ir::Value *after, const std::vector<CarriedArgument> &carried,
                        const std::vector<LiveValues::Entry> &before, const char *what,
                        const SourceLoc &loc);

} // namespace tritium::dsl
