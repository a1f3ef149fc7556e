// The pieces of software pipelining that the loop lowering calls: cp.async per thread
// (LowerPipelinedLoop.cpp) or bulk copies tracked by mbarriers (LowerBulkCopy.cpp).
#pragma once

#include "compiler/codegen/Lowering.h"

#include <functional>
#include <map>
#include <optional>
#include <unordered_set>

namespace tritium::codegen {

// A ring of S = num_stages stages keeps the copies of S - 1 iterations in flight. Per-thread
// cp.async needs S buffers: a stage is refilled at the top of the iteration after the one that
// read it. A bulk ring refills a stage as soon as every thread has read it (its "empty"
// mbarrier says when), in the same iteration, so S - 1 buffers carry the same lookahead: a
// ring of 2 stages is one buffer that holds the next iteration while this one computes.
// Loads that do not depend on the induction variable ("resident") are copied once, before the
// prologue, into a buffer of their own, as one cp.async group of their own.
struct PipelinePlan {
  int stages = 0;
  std::vector<const ir::Op *> loads;         // the pipelined loads of the body
  std::vector<const ir::Op *> slice;         // body ops their operands need, in program order
  std::vector<const ir::Op *> residents;     // the loads copied once
  std::vector<const ir::Op *> residentSlice; // body ops the residents' operands need
  int64_t bulkBarriers = -1; // bulk copies: the mbarriers' shared-memory offset
  // Tiles copied by TMA ({tensor_map} loads, LowerTensorCopy.cpp): their mbarriers' offset,
  // one per stage. The ring's other loads stay cp.async copies.
  int64_t tensorBarriers = -1;
  // A wgmma left in flight across iterations ({wgmma_in_flight} on the loop,
  // FeedDotsFromRings.cpp) still reads the previous iteration's stage: the ring then refills
  // the stage read two iterations ago, and runs one iteration less ahead.
  bool wgmmaInFlight = false;
  // A producer warp issues the ring's TMA copies ({warp_specialized}, gpu/SpecializeWarps.cpp):
  // the offset of the stages' "empty" mbarriers, which the compute warps arrive on.
  int64_t emptyBarriers = -1;
  // The programs of the cluster whose rings the producers fill together: C where some tile is
  // multicast ({multicast_copies = C}, gpu/ChooseMulticastCopies.cpp), else 1. The "empty"
  // mbarriers then count every program's compute warps, which arrive on all C programs'.
  int64_t multicast = 1;
  bool warpSpecialized() const { return emptyBarriers >= 0; }
  bool bulk() const { return bulkBarriers >= 0; }
  bool tensorCopies() const { return tensorBarriers >= 0; }
  // Whether some load of the ring is copied per thread (cp.async), each stage a commit group.
  bool threadCopies() const;
  int buffers() const { return bulk() ? stages - 1 : stages; }
  // Iterations whose copies are in flight ahead of the one computing.
  int lookahead() const { return stages - 1 - (wgmmaInFlight ? 1 : 0); }
};

// The plan recorded on a `for` by gpu/PipelineLoads.cpp, if any.
std::optional<PipelinePlan> pipelinePlan(const ir::Op &loop);
// Before the prologue: no thread may still read an earlier loop's ring that shares these bytes
// (and bulk rings set up their mbarriers).
void startRing(Lowering &l, const PipelinePlan &plan);
// Whether `iv` is below the bound `ub` of `loop` (a `for`): unsigned bounds compare unsigned.
llvm::Value *below(Lowering &l, const ir::Op &loop, llvm::Value *iv, llvm::Value *ub);
// Before the prologue: copies the resident loads, if the loop runs at least once (lb < ub).
void issueResidents(Lowering &l, const PipelinePlan &plan, const ir::Op &loop, llvm::Value *lb,
                    llvm::Value *ub);
// The values of the slice's loads (a block-table entry that a ring tile's address reads), by
// load, for one iteration.
using SliceLoads = std::map<const ir::Op *, Elements>;
// Starts the copies of the loop's iteration `iv` into buffer `stage`. `readBy` is the
// iteration of this run of the loop that last read the buffer (0, 1, ...; a bulk producer waits
// until every thread has), or null in the prologue and for cp.async. `loaded`, where given,
// holds the slice's loads for `iv`, loaded an iteration before (prefetchSliceLoads).
void issueStage(Lowering &l, const PipelinePlan &plan, const ir::Op &loop, llvm::Value *iv,
                llvm::Value *ub, llvm::Value *stage, llvm::Value *readBy,
                const SliceLoads *loaded = nullptr);
// Whether the ring's copies wait on loads of their own slice that can be issued an iteration
// earlier: cp.async rings (thread copies, no producer warp) whose slice loads read no other
// slice load's value.
bool prefetchesSliceLoads(const PipelinePlan &plan);
// The slice's loads for iteration `iv` (masked off past the loop's end), issued now: the
// iteration before the one that issues `iv`'s copies loads their block-table entries, so the
// copies do not wait for them.
SliceLoads prefetchSliceLoads(Lowering &l, const PipelinePlan &plan, const ir::Op &loop,
                              llvm::Value *iv, llvm::Value *ub);
// Waits until this iteration's data (buffer `stage`) has landed.
void waitForStage(Lowering &l, const PipelinePlan &plan, llvm::Value *stage,
                  llvm::Value *iteration);
// After the loop: waits for every outstanding copy and retires the ring.
void finishRing(Lowering &l, const PipelinePlan &plan);
// A pipelined load inside the body: reads this iteration's buffer and applies the mask. After
// the body's last pipelined load a bulk ring releases the buffer and refills it.
void lowerPipelinedLoad(Lowering &l, const ir::Op &load, const Lowering::RingPosition &at);

// Bulk-copy rings (LowerBulkCopy.cpp).
void initBulkBarriers(Lowering &l, const PipelinePlan &plan);
void issueBulkStage(Lowering &l, const PipelinePlan &plan, llvm::Value *inRange,
                    llvm::Value *stage, llvm::Value *readBy);
void waitForBulkStage(Lowering &l, const PipelinePlan &plan, llvm::Value *stage,
                      llvm::Value *iteration);
// Every thread, once it has read buffer `stage` for this iteration.
void releaseBulkStage(Lowering &l, const PipelinePlan &plan, llvm::Value *stage);
void invalidateBulkBarriers(Lowering &l, const PipelinePlan &plan);

// TMA copies of tensor-descriptor tiles (LowerTensorCopy.cpp).
void initTensorBarriers(Lowering &l, const PipelinePlan &plan);
void issueTensorCopies(Lowering &l, const PipelinePlan &plan, llvm::Value *inRange,
                       llvm::Value *stage);
void waitForTensorCopies(Lowering &l, const PipelinePlan &plan, llvm::Value *stage,
                         llvm::Value *iteration);
void invalidateTensorBarriers(Lowering &l, const PipelinePlan &plan);

// Warp-specialized rings (LowerWarpSpecialization.cpp).
// At the kernel's entry: the producer warp, past the program's warps, runs the code before its
// loop as a double of warp 0 (the loop's bounds and the tiles' offsets are its inputs too).
void enterWithProducerWarp(Lowering &l);
// At the loop, after startRing: the producer warp's first lane issues every iteration's
// copies, each into its stage once the compute warps have released the stage's previous
// contents, and leaves the kernel. The compute warps go on; their CTA barriers from here on
// count them alone (Lowering::consumersOnly).
void splitOffProducer(Lowering &l, const PipelinePlan &plan, const ir::Op &loop, llvm::Value *lb,
                      llvm::Value *ub, llvm::Value *step);
// The same for a loop nested in a persistent kernel's loop over its tiles (`outer`, with
// {warp_split}), before the outer loop: the producer's lane walks the outer loop too, running
// the outer body's ops that the copies need (lowered by `lowerOp`), and carries the ring's
// iteration and stage from tile to tile.
void splitOffProducerAround(Lowering &l, const PipelinePlan &plan, const ir::Op &outer,
                            const ir::Op &inner, llvm::Value *lb, llvm::Value *ub,
                            llvm::Value *step,
                            const std::function<void(const ir::Op &)> &lowerOp);
// After issueResidents: the compute warps wait for the resident copies once, before the loop.
void awaitResidents(Lowering &l, const PipelinePlan &plan);
// The "empty" mbarrier of `stage` (an i32 value), and the compute warps' arrival on it at the
// end of an iteration: one per warp, once the warp is done with the stage (the previous
// iteration's, while a wgmma is left in flight).
llvm::Value *emptyBarrierAddress(Lowering &l, const PipelinePlan &plan, llvm::Value *stage);
void releaseStage(Lowering &l, const PipelinePlan &plan, llvm::Value *stage,
                  llvm::Value *iteration);
// Ping-pong ({ping_pong}): set up Lowering::pingPong for the body, then, around the body's
// products, wait for this group's turn (before the last) and pass it on (after the first;
// group 0 not in iteration 0); after the loop group 0 passes once more, so that every wait
// has its pass.
void startPingPong(Lowering &l, const ir::Op &loop, llvm::Value *iteration);
void awaitTurn(Lowering &l);
void passTurn(Lowering &l);
void endPingPong(Lowering &l, llvm::Value *iterations);
// Compute groups that take alternate tiles ({compute_groups}) wait on the ring's "full"
// mbarriers in the walk's order: a group waits for its turn before its tile's K loop and hands
// it on once the loop's waits are done (named barriers 4 and 5). An mbarrier's parity tells
// only the phase after the one a waiter last saw: a group running a whole tile ahead of the
// other would take a stage's earlier fill for its own.
void awaitTileTurn(Lowering &l);
void passTileTurn(Lowering &l);
// The ops whose values feed nothing but what the rings' reads do not use: a descriptor tile's
// per-element addresses and masks (TMA copies), a cp.async tile's element pointers. The
// lowering skips them: LLVM would delete them, but only after its passes had worked through
// them (a third of a 128 x 256 x 64 matmul's IR), and it cannot delete a masked load (volatile
// assembly) such as a paged cache's block-table entries, which the copies load ahead.
std::unordered_set<const ir::Op *> opsOnlyCopiesFeed(const ir::Function &fn);

} // namespace tritium::codegen
