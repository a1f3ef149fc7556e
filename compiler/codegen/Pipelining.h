// The pieces of cp.async software pipelining that the loop lowering calls (see
// LowerPipelinedLoop.cpp for the scheme).
#pragma once

#include "compiler/codegen/Lowering.h"

#include <optional>

namespace tritium::codegen {

struct PipelinePlan {
  int stages = 0;
  std::vector<const ir::Op *> loads; // the pipelined loads of the body
  std::vector<const ir::Op *> slice; // body ops their operands need, in program order
};

// The plan recorded on a `for` by gpu/PipelineLoads.cpp, if any.
std::optional<PipelinePlan> pipelinePlan(const ir::Op &loop);
// Starts the copies of iteration `iv` into buffer `stage` and commits them as one group.
void issueStage(Lowering &l, const PipelinePlan &plan, const ir::Op &loop, llvm::Value *iv,
                llvm::Value *ub, llvm::Value *stage);
// Waits until the oldest outstanding group (this iteration's data) has landed.
void waitForOldestStage(Lowering &l, const PipelinePlan &plan);
// Waits for every outstanding copy (after the loop).
void drainStages(Lowering &l);
// A pipelined load inside the body: reads buffer `stage` and applies the mask.
void lowerPipelinedLoad(Lowering &l, const ir::Op &load, llvm::Value *stage);

} // namespace tritium::codegen
