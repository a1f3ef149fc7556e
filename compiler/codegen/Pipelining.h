// The pieces of software pipelining that the loop lowering calls: cp.async per thread
// (LowerPipelinedLoop.cpp) or bulk copies tracked by mbarriers (LowerBulkCopy.cpp).
#pragma once

#include "compiler/codegen/Lowering.h"

#include <optional>

namespace tritium::codegen {

struct PipelinePlan {
  int stages = 0;
  std::vector<const ir::Op *> loads; // the pipelined loads of the body
  std::vector<const ir::Op *> slice; // body ops their operands need, in program order
  int64_t bulkBarriers = -1;         // bulk copies: the mbarriers' shared-memory offset
  bool bulk() const { return bulkBarriers >= 0; }
};

// The plan recorded on a `for` by gpu/PipelineLoads.cpp, if any.
std::optional<PipelinePlan> pipelinePlan(const ir::Op &loop);
// Before the prologue: no thread may still read an earlier loop's ring that shares these bytes
// (and bulk rings set up their mbarriers).
void startRing(Lowering &l, const PipelinePlan &plan);
// Starts the copies of the loop's iteration `iv` into buffer `stage`. Inside the loop,
// `iteration` counts the iterations this run of the loop has started (0, 1, ...): the buffer
// was last read by iteration - 1. In the prologue it is null (buffers not yet read).
void issueStage(Lowering &l, const PipelinePlan &plan, const ir::Op &loop, llvm::Value *iv,
                llvm::Value *ub, llvm::Value *stage, llvm::Value *iteration);
// Waits until this iteration's data (buffer `stage`) has landed.
void waitForStage(Lowering &l, const PipelinePlan &plan, llvm::Value *stage,
                  llvm::Value *iteration);
// After the loop: waits for every outstanding copy and retires the ring.
void finishRing(Lowering &l, const PipelinePlan &plan);
// A pipelined load inside the body: reads buffer `stage` and applies the mask.
void lowerPipelinedLoad(Lowering &l, const ir::Op &load, llvm::Value *stage);

// Bulk-copy rings (LowerBulkCopy.cpp).
void initBulkBarriers(Lowering &l, const PipelinePlan &plan);
void issueBulkStage(Lowering &l, const PipelinePlan &plan, llvm::Value *inRange,
                    llvm::Value *stage, llvm::Value *iteration);
void waitForBulkStage(Lowering &l, const PipelinePlan &plan, llvm::Value *stage,
                      llvm::Value *iteration);
// Every thread, once it has read buffer `stage` for this iteration.
void releaseBulkStage(Lowering &l, const PipelinePlan &plan, llvm::Value *stage);
void invalidateBulkBarriers(Lowering &l, const PipelinePlan &plan);

} // namespace tritium::codegen
