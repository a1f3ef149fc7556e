// A persistent kernel's warp-specialized loop nests in a top-level loop over the program's tiles
// ({warp_split} on the outer loop, gpu/SpecializeWarps.cpp). The producer warp walks the outer
// loop too, but runs only what the ring's copies need from each outer iteration: the inner
// loop's bounds and what the TMA copies' tile offsets are made of.
#pragma once

#include "compiler/ir/IR.h"

#include <vector>

namespace tritium {

// The ops of `outer`'s body that the producer runs for the nested `inner` loop, in program
// order: those that inner's bounds need, and those that the ops the ring's copies read need
// (the copies' operands, ir::tensorCopyReads; the inner body's ops they are computed by, and
// the initial values of the inner loop's affine carries among those).
std::vector<const ir::Op *> producerPrefix(const ir::Op &outer, const ir::Op &inner);

} // namespace tritium
