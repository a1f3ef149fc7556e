// The TIR and GIR passes, one per file, each a free function that rewrites a kernel in place.
#pragma once

#include "compiler/ir/IR.h"

namespace tritium {

// TIR: merges pure ops that compute the same thing from the same operands.
void eliminateCommonSubexpressions(ir::Function &fn);
// TIR: removes ops whose results nobody uses and that have no effect.
void eliminateDeadCode(ir::Function &fn);

} // namespace tritium
