// The Value objects alive on this thread, so that a loop or branch can tell which variables
// its body assigned: Triton carries a variable assigned in a loop by its name; tritium, which
// traces C++ and sees no names, compares every variable that lived before the body with what it
// holds after it. Values are linked into a per-thread list on construction and unlinked on
// destruction; a Value must be destroyed on the thread that made it (as the trace is).
#pragma once

#include "frontend/DSL.h"

#include <vector>

namespace tritium::dsl {

class LiveValues {
public:
  // A variable and what it held when the snapshot was taken.
  struct Entry {
    Value *var;
    uint64_t serial;
    ir::Value *held;
  };
  // The variables holding values of the trace in progress: one kept from another trace (in a
  // static, say) is never carried, and its stale IR never read.
  static std::vector<Entry> snapshot();
  // The snapshot's variables that are still alive (same address and serial), with what they
  // hold now beside what they held.
  struct Change {
    Value *var;
    ir::Value *before, *after;
  };
  static std::vector<Change> compare(const std::vector<Entry> &before);
  // Makes `var` hold `v`, a value of the trace in progress.
  static void rebind(Value *var, ir::Value *v);
};

} // namespace tritium::dsl
