// The TIR and GIR passes, one per file, each a free function that rewrites a kernel in place.
#pragma once

#include "compiler/ir/IR.h"

namespace tritium {

// TIR: merges pure ops that compute the same thing from the same operands.
void eliminateCommonSubexpressions(ir::Function &fn);
// TIR: removes ops whose results nobody uses and that have no effect.
void eliminateDeadCode(ir::Function &fn);
// TIR: a loop's reset of a dot's carried accumulator to zeros (under an if) becomes the dot's
// `accumulate` operand, carried as a flag, so that no instruction writes zeros into the
// registers of a product in flight (FoldAccumulatorResets.cpp).
void foldAccumulatorResets(ir::Function &fn);

} // namespace tritium
