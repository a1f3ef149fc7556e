// Lowering of bulk-copy rings (Hopper's TMA, cp.async.bulk), the pipelining scheme that
// gpu/PipelineLoads.cpp picks when each pipelined load reads one contiguous run. The ring has
// B = num_stages - 1 buffers. Thread 0 is the producer: it copies iteration i's whole block into
// buffer i % B with one instruction per load, and the buffer's "full" mbarrier counts the bytes
// in (expect_tx / complete_tx). Every thread waits on "full" before reading the buffer, and
// arrives on its "empty" mbarrier once it has read it; the producer then waits on "empty" and
// at once copies iteration i + B into the same buffer, while the threads compute on iteration i.
// Lanes past the prefix the mask allows are not copied: the read's mask selects `other` there.
#include "compiler/codegen/Mbarrier.h"
#include "compiler/codegen/Pipelining.h"

#include <algorithm>

namespace tritium::codegen {

namespace {

int64_t elementBytes(const ir::Type &t) { return ir::byteWidth(t.kind()); }

// mbarriers: "full" of buffer s at barriers + 8 s, "empty" at barriers + 8 (B + s).
llvm::Value *barrierAddress(Lowering &l, const PipelinePlan &plan, bool empty,
                            llvm::Value *stage) {
  auto &b = l.b;
  llvm::Value *index = empty ? b.CreateAdd(stage, b.getInt32(plan.buffers())) : stage;
  return sharedAddress(l, b.CreateAdd(b.getInt32(int32_t(plan.bulkBarriers)),
                                      b.CreateMul(index, b.getInt32(8))));
}

// Runs `body` on thread 0 only, when `cond` (if any) holds.
template <typename F> void onProducer(Lowering &l, llvm::Value *cond, F body) {
  llvm::Value *isProducer = l.b.CreateICmpEQ(l.tid, l.b.getInt32(0));
  l.ifThen(cond ? l.b.CreateAnd(isProducer, cond) : isProducer, "producer", body);
}

// The parity of the phase an mbarrier of the ring completes for iteration `i`: buffer i % B is
// used for the (i / B)-th time.
llvm::Value *phaseParity(Lowering &l, const PipelinePlan &plan, llvm::Value *i) {
  return l.b.CreateAnd(l.b.CreateUDiv(i, l.b.getInt32(plan.buffers())), l.b.getInt32(1));
}

// Bytes that `load` copies from the thread-0 element values of its operands: the whole block,
// or the prefix where `index < bound` holds (gpu/PipelineLoads.cpp checked the pattern).
llvm::Value *copiedBytes(Lowering &l, const ir::Op &load) {
  auto &b = l.b;
  const ir::Type &t = load.result()->type();
  int64_t n = t.numElements(), bytes = elementBytes(t);
  if (load.numOperands() == 1)
    return b.getInt32(int32_t(n * bytes));
  const ir::Op &cmp = *load.operand(1)->definingOp();
  llvm::Value *index = l.get(cmp.operand(0))[0], *bound = l.get(cmp.operand(1))[0];
  llvm::Value *count = b.CreateSub(bound, index);
  llvm::Type *ty = count->getType();
  count = b.CreateSelect(b.CreateICmpSLT(count, llvm::ConstantInt::get(ty, 0)),
                         llvm::ConstantInt::get(ty, 0), count);
  count = b.CreateSelect(b.CreateICmpSGT(count, llvm::ConstantInt::get(ty, n)),
                         llvm::ConstantInt::get(ty, n), count);
  return b.CreateMul(b.CreateTrunc(count, b.getInt32Ty()), b.getInt32(int32_t(bytes)));
}

} // namespace

void initBulkBarriers(Lowering &l, const PipelinePlan &plan) {
  auto &b = l.b;
  // The ring may reuse bytes that threads wrote through the generic proxy (an earlier loop's
  // ring); the copies write through the async proxy.
  emitAsm(l, "fence.proxy.async.shared::cta;", "", {});
  l.barrier();
  onProducer(l, nullptr, [&] {
    for (int s = 0; s < plan.buffers(); ++s) {
      emitAsm(l, "mbarrier.init.shared::cta.b64 [$0], 1;", "r",
              {barrierAddress(l, plan, false, b.getInt32(s))});
      emitAsm(l, "mbarrier.init.shared::cta.b64 [$0], $1;", "r,r",
              {barrierAddress(l, plan, true, b.getInt32(s)), b.getInt32(l.threads())});
    }
    emitAsm(l, "fence.mbarrier_init.release.cluster;", "", {});
  });
  l.barrier();
}

void issueBulkStage(Lowering &l, const PipelinePlan &plan, llvm::Value *inRange,
                    llvm::Value *stage, llvm::Value *readBy) {
  auto &b = l.b;
  // Elements 0 of the recomputed operands: thread 0 holds element 0 of every block.
  std::vector<llvm::Value *> sizes, sources;
  for (const ir::Op *load : plan.loads) {
    sizes.push_back(copiedBytes(l, *load));
    sources.push_back(l.get(load->operand(0))[0]);
  }
  onProducer(l, inRange, [&] {
    if (readBy) // every thread must have read the buffer (and arrived on "empty")
      waitParity(l, barrierAddress(l, plan, true, stage), phaseParity(l, plan, readBy));
    llvm::Value *total = b.getInt32(0);
    for (llvm::Value *size : sizes)
      total = b.CreateAdd(total, size);
    llvm::Value *full = barrierAddress(l, plan, false, stage);
    emitAsm(l, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r", {full, total});
    for (size_t i = 0; i < plan.loads.size(); ++i) {
      const ir::Op &load = *plan.loads[i];
      llvm::Value *dst = b.CreateAdd(
          b.getInt32(int32_t(load.intAttr("smem_offset"))),
          b.CreateMul(stage, b.getInt32(int32_t(load.intAttr("stage_bytes")))));
      // Bulk copies go through L2 only, so of the load's cache hints only an eviction
      // priority applies (as an L2 cache policy).
      std::vector<llvm::Value *> args{sharedAddress(l, dst), sources[i], sizes[i], full};
      llvm::Value *policy = cachePolicy(l, load);
      if (policy)
        args.push_back(policy);
      emitAsm(l,
              std::string("{\n\t.reg .pred some;\n\tsetp.ne.u32 some, $2, 0;\n\t"
                          "@some cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes") +
                  (policy ? ".L2::cache_hint [$0], [$1], $2, [$3], $4;" : " [$0], [$1], $2, [$3];") +
                  "\n\t}",
              policy ? "r,l,r,r,l" : "r,l,r,r", args);
    }
  });
}

void waitForBulkStage(Lowering &l, const PipelinePlan &plan, llvm::Value *stage,
                      llvm::Value *iteration) {
  waitParity(l, barrierAddress(l, plan, false, stage), phaseParity(l, plan, iteration));
}

void releaseBulkStage(Lowering &l, const PipelinePlan &plan, llvm::Value *stage) {
  // Release semantics (the default): this thread's reads of the stage come before the arrival.
  emitAsm(l, "mbarrier.arrive.shared::cta.b64 _, [$0];", "r",
          {barrierAddress(l, plan, true, stage)});
}

void invalidateBulkBarriers(Lowering &l, const PipelinePlan &plan) {
  auto &b = l.b;
  // Every copy issued was for an iteration that ran and waited for it; the barrier makes sure
  // no thread still waits on or arrives at an mbarrier that thread 0 invalidates.
  l.barrier();
  onProducer(l, nullptr, [&] {
    for (int s = 0; s < 2 * plan.buffers(); ++s)
      emitAsm(l, "mbarrier.inval.shared::cta.b64 [$0];", "r",
              {sharedAddress(l, b.getInt32(int32_t(plan.bulkBarriers + 8 * s)))});
  });
}

} // namespace tritium::codegen
