// A warp-specialized ring (gpu/SpecializeWarps.cpp): the CTA's last warp group is the producer.
// Until the loop it runs the kernel's code as a double of warps 0-3 (that code only computes
// and reads), so that it has the loop's bounds and the tiles' offsets. At the loop it splits
// off and gives its registers back (setmaxnreg.dec, where the kernel says how many); its first
// lane walks the iterations, waits on a stage's "empty" mbarrier until every compute warp has
// released the stage's previous tiles, announces the bytes on the stage's "full" mbarrier and
// issues the TMA copies; then it leaves the kernel. The compute warps take the registers
// (setmaxnreg.inc), wait on "full" for each iteration's stage (parity: iteration / stages) and
// arrive on "empty" at the iteration's end, one arrival per warp; they meet at no CTA barrier
// in the loop, and the barriers after it name only them (barrier 1), the producer being gone.
// A loop nested in a persistent kernel's loop over its tiles ({warp_split} on the outer loop)
// splits the warps before the outer loop instead: the producer's lane walks the outer loop
// too, computing each tile's offsets (analysis/ProducerPrefix.h) and issuing its K steps, so
// that it fills the ring with the next tile's first steps while the compute warps run this
// tile's epilogue. The ring's iteration count, which gives the stages and the mbarriers'
// parities, then runs across tiles on both sides.
#include "compiler/analysis/ProducerPrefix.h"
#include "compiler/codegen/Mbarrier.h"
#include "compiler/codegen/Pipelining.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

namespace tritium::codegen {

void enterWithProducerWarp(Lowering &l) {
  auto &b = l.b;
  l.hardwareTid = l.tid;
  l.producer = b.CreateICmpUGE(l.tid, b.getInt32(l.ctaThreads()), "producer");
  llvm::Value *threads = b.getInt32(l.threads());
  if (l.computeGroups > 1) { // groups of a power of two threads (SpecializeWarps)
    l.computeGroup = b.CreateSelect(l.producer, b.getInt32(0), b.CreateUDiv(l.tid, threads),
                                    "compute.group");
    l.tid = b.CreateURem(l.tid, threads, "tid.in.group"); // the producer's: group 0's double
    return;
  }
  l.tid = b.CreateSelect(l.producer, b.CreateURem(b.CreateSub(l.tid, threads), threads), l.tid,
                         "tid.as.compute");
}

llvm::Value *emptyBarrierAddress(Lowering &l, const PipelinePlan &plan, llvm::Value *stage) {
  auto &b = l.b;
  return sharedAddress(l, b.CreateAdd(b.getInt32(int32_t(plan.emptyBarriers)),
                                      b.CreateMul(stage, b.getInt32(8))));
}

namespace {

// setmaxnreg for the whole warp group, where the kernel gives the count ({producer_registers},
// {compute_registers}: sm_90a).
void setMaxRegisters(Lowering &l, const char *action, const char *attr) {
  if (std::optional<int64_t> n = l.kernel.intAttr(attr))
    emitAsm(l, std::string("setmaxnreg.") + action + ".sync.aligned.u32 " + std::to_string(*n) + ";",
            "", {});
}

} // namespace

namespace {

// Lowers what `lower` emits as the compute warps' thread 0 would, in the producer's lane.
template <typename F> void asThreadZero(Lowering &l, F lower) {
  llvm::Value *tid = l.tid, *producer = l.producer;
  l.tid = l.b.getInt32(0);
  l.producer = nullptr;
  lower();
  l.tid = tid;
  l.producer = producer;
}

// The producer's walk of `loop`'s iterations lb, lb + step, ... < ub, from the ring's iteration
// n (counted across every run of the loop) in `stage`: for each, wait until the compute warps
// have released the stage, then issue its copies. Leaves the insertion point after the loop
// and returns n and the stage there.
std::pair<llvm::Value *, llvm::Value *> issueEveryIteration(Lowering &l, const PipelinePlan &plan,
                                                            const ir::Op &loop, llvm::Value *lb,
                                                            llvm::Value *ub, llvm::Value *step,
                                                            llvm::Value *n0, llvm::Value *stage0) {
  auto &b = l.b;
  llvm::BasicBlock *pre = b.GetInsertBlock();
  auto *header = llvm::BasicBlock::Create(l.ctx, "producer.header", l.fn);
  auto *body = llvm::BasicBlock::Create(l.ctx, "producer.body", l.fn);
  auto *done = llvm::BasicBlock::Create(l.ctx, "producer.done", l.fn);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  llvm::PHINode *iv = b.CreatePHI(lb->getType(), 2, "producer.iv");
  iv->addIncoming(lb, pre);
  llvm::PHINode *stage = b.CreatePHI(b.getInt32Ty(), 2, "producer.stage");
  stage->addIncoming(stage0, pre);
  llvm::PHINode *n = b.CreatePHI(b.getInt32Ty(), 2, "producer.iteration");
  n->addIncoming(n0, pre);
  b.CreateCondBr(below(l, loop, iv, ub), body, done);

  b.SetInsertPoint(body);
  // Iteration n reuses the stage of iteration n - stages: the (n / stages - 1)-th release of
  // that stage's "empty" mbarrier.
  llvm::Value *S = b.getInt32(plan.stages);
  l.ifThen(b.CreateICmpUGE(n, S), "producer.wait", [&] {
    llvm::Value *parity = b.CreateAnd(b.CreateSub(b.CreateUDiv(n, S), b.getInt32(1)), b.getInt32(1));
    waitParity(l, emptyBarrierAddress(l, plan, stage), parity);
  });
  // The copies: issued by "thread 0", which this lane is here.
  asThreadZero(l, [&] { issueStage(l, plan, loop, iv, ub, stage, nullptr); });
  llvm::Value *next = b.CreateAdd(stage, b.getInt32(1));
  stage->addIncoming(b.CreateSelect(b.CreateICmpEQ(next, S), b.getInt32(0), next),
                     b.GetInsertBlock());
  n->addIncoming(b.CreateAdd(n, b.getInt32(1)), b.GetInsertBlock());
  iv->addIncoming(b.CreateAdd(iv, step), b.GetInsertBlock());
  b.CreateBr(header);
  b.SetInsertPoint(done);
  return {n, stage};
}

// Branches the producer warp group off (it gives its registers back; one lane runs
// `producerWork`, then all leave the kernel) and continues with the compute warps, which take
// the registers and from then on meet at barriers of their own.
template <typename F> void split(Lowering &l, F producerWork) {
  auto &b = l.b;
  auto *producerBB = llvm::BasicBlock::Create(l.ctx, "producer", l.fn);
  auto *work = llvm::BasicBlock::Create(l.ctx, "producer.lane", l.fn);
  auto *leave = llvm::BasicBlock::Create(l.ctx, "producer.exit", l.fn);
  auto *compute = llvm::BasicBlock::Create(l.ctx, "compute", l.fn);
  b.CreateCondBr(l.producer, producerBB, compute);

  // One lane issues; the group's others leave at once.
  b.SetInsertPoint(producerBB);
  setMaxRegisters(l, "dec", "producer_registers");
  b.CreateCondBr(b.CreateICmpEQ(l.hardwareTid, b.getInt32(l.ctaThreads())), work, leave);
  b.SetInsertPoint(work);
  producerWork();
  b.CreateBr(leave);
  b.SetInsertPoint(leave);
  b.CreateRetVoid();

  // The compute warps: tid is the hardware's again, and barriers count them alone.
  b.SetInsertPoint(compute);
  setMaxRegisters(l, "inc", "compute_registers");
  if (l.computeGroups > 1)
    l.computeGroup = b.CreateUDiv(l.hardwareTid, b.getInt32(l.threads()), "compute.group");
  else
    l.tid = l.hardwareTid;
  l.producer = nullptr;
  l.consumersOnly = true;
}

} // namespace

void splitOffProducer(Lowering &l, const PipelinePlan &plan, const ir::Op &loop, llvm::Value *lb,
                      llvm::Value *ub, llvm::Value *step) {
  if (!l.producer)
    internalError("a warp-specialized loop in a kernel without a producer warp");
  split(l, [&] {
    issueEveryIteration(l, plan, loop, lb, ub, step, l.b.getInt32(0), l.b.getInt32(0));
  });
}

void splitOffProducerAround(Lowering &l, const PipelinePlan &plan, const ir::Op &outer,
                            const ir::Op &inner, llvm::Value *lb, llvm::Value *ub,
                            llvm::Value *step,
                            const std::function<void(const ir::Op &)> &lowerOp) {
  auto &b = l.b;
  if (!l.producer)
    internalError("a warp-specialized loop in a kernel without a producer warp");
  split(l, [&] {
    // The outer loop, its body the ops the ring's copies need, then the inner loop's copies;
    // the ring's iteration and stage carry on from tile to tile.
    llvm::BasicBlock *pre = b.GetInsertBlock();
    auto *header = llvm::BasicBlock::Create(l.ctx, "producer.outer", l.fn);
    auto *body = llvm::BasicBlock::Create(l.ctx, "producer.outer.body", l.fn);
    auto *done = llvm::BasicBlock::Create(l.ctx, "producer.outer.done", l.fn);
    b.CreateBr(header);
    b.SetInsertPoint(header);
    llvm::PHINode *iv = b.CreatePHI(lb->getType(), 2, "producer.tile");
    iv->addIncoming(lb, pre);
    llvm::PHINode *n = b.CreatePHI(b.getInt32Ty(), 2, "producer.ring.iteration");
    n->addIncoming(b.getInt32(0), pre);
    llvm::PHINode *stage = b.CreatePHI(b.getInt32Ty(), 2, "producer.ring.stage");
    stage->addIncoming(b.getInt32(0), pre);
    b.CreateCondBr(below(l, outer, iv, ub), body, done);

    b.SetInsertPoint(body);
    // Scalars alone (SpecializeWarps): what one lane computes is what every thread would.
    l.set(outer.body()->argument(0), {iv});
    asThreadZero(l, [&] {
      for (const ir::Op *op : producerPrefix(outer, inner))
        lowerOp(*op);
    });
    auto [nOut, stageOut] = issueEveryIteration(l, plan, inner, l.get(inner.operand(0))[0],
                                                l.get(inner.operand(1))[0],
                                                l.get(inner.operand(2))[0], n, stage);
    n->addIncoming(nOut, b.GetInsertBlock());
    stage->addIncoming(stageOut, b.GetInsertBlock());
    iv->addIncoming(b.CreateAdd(iv, step), b.GetInsertBlock());
    b.CreateBr(header);
    b.SetInsertPoint(done);
  });
}

void awaitResidents(Lowering &l, const PipelinePlan &plan) {
  if (plan.residents.empty())
    return;
  // Each thread copied its own elements; a dot reads all of them, through the async proxy.
  l.intrinsic(llvm::Intrinsic::nvvm_cp_async_wait_all, {}, {});
  if (std::any_of(plan.residents.begin(), plan.residents.end(),
                  [](const ir::Op *load) { return load->hasAttr("async_proxy"); }))
    emitAsm(l, "fence.proxy.async.shared::cta;", "", {});
  l.barrier();
}

void releaseStage(Lowering &l, const PipelinePlan &plan, llvm::Value *stage,
                  llvm::Value *iteration) {
  auto &b = l.b;
  llvm::Value *cond = b.CreateICmpEQ(l.laneId, b.getInt32(0));
  if (plan.wgmmaInFlight) { // this iteration's wgmma still reads its stage: free the previous
    stage = b.CreateSelect(b.CreateICmpEQ(stage, b.getInt32(0)), b.getInt32(plan.stages - 1),
                           b.CreateSub(stage, b.getInt32(1)));
    cond = b.CreateAnd(cond, b.CreateICmpUGT(iteration, b.getInt32(0)));
  }
  // Every lane's reads of the stage come before its first lane's arrival.
  l.intrinsic(llvm::Intrinsic::nvvm_bar_warp_sync, {}, {b.getInt32(-1)});
  l.ifThen(cond, "release", [&] {
    llvm::Value *empty = emptyBarrierAddress(l, plan, stage);
    emitAsm(l, "mbarrier.arrive.shared::cta.b64 _, [$0];", "r", {empty});
    if (plan.multicast == 1)
      return;
    // Every program's producer writes this stage of each program of the cluster: release it
    // to the others too, through the same offset in each one's shared memory.
    llvm::Value *rank = l.intrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_ctarank, {}, {});
    // (The default semantics, release at CTA scope: with .release.cluster here and an
    // acquire.cluster wait in the producer a 128 x 256 matmul ran 20% slower on an H200.)
    for (int64_t r = 1; r < plan.multicast; ++r)
      emitAsm(l,
              "{\n\t.reg .b32 peer;\n\tmapa.shared::cluster.u32 peer, $0, $1;\n\t"
              "mbarrier.arrive.shared::cluster.b64 _, [peer];\n\t}",
              "r,r",
              {empty, b.CreateURem(b.CreateAdd(rank, b.getInt32(int32_t(r))),
                                   b.getInt32(int32_t(plan.multicast)))});
  });
}

void startPingPong(Lowering &l, const ir::Op &loop, llvm::Value *iteration) {
  Lowering::PingPong p;
  // The turn spans the issues of the products at the body's head: from its first product to the
  // last one issued before anything reads a product's result (FlashAttention-3's scheduler
  // barrier). In the serial order that is the scores' product alone, in the overlapped one the
  // scores' and the previous step's P V. One group's products then queue behind the other's, and
  // each group's softmax runs while the other's products do.
  // (The ops that end it are the ones the lowering waits at: waitForWhatReads.)
  std::vector<const ir::Value *> issued;
  for (const auto &op : loop.body()->ops()) {
    if (!p.firstDot && op->kind() != ir::OpKind::Dot)
      continue;
    if (pendingReadsOf(*op, issued).any())
      break;
    if (op->kind() == ir::OpKind::Dot) {
      p.firstDot = p.firstDot ? p.firstDot : op.get();
      p.lastDot = op.get();
      issued.push_back(op->result());
    }
  }
  p.group = l.b.CreateLShr(l.hardwareTid, l.b.getInt32(7), "warp.group");
  p.iteration = iteration;
  l.pingPong = p;
}

// Group g's turn is named barrier 2 + g, of both groups' 256 threads: g syncs on it, the other
// group arrives. Group 0 goes first: its first turn needs no hand-over.
void awaitTurn(Lowering &l) {
  auto &b = l.b;
  l.ifThen(b.CreateOr(b.CreateICmpEQ(l.pingPong->group, b.getInt32(1)),
                      b.CreateICmpUGT(l.pingPong->iteration, b.getInt32(0))),
           "await.turn", [&] {
             emitAsm(l, "bar.sync $0, 256;", "r",
                     {b.CreateAdd(l.pingPong->group, b.getInt32(2))});
           });
}

void passTurn(Lowering &l) {
  auto &b = l.b;
  emitAsm(l, "bar.arrive $0, 256;", "r", {b.CreateSub(b.getInt32(3), l.pingPong->group)});
}

void awaitTileTurn(Lowering &l) {
  auto &b = l.b;
  const Lowering::TileWalk &w = *l.tileWalk;
  // Group g's turn is barrier 4 + g, of both groups' threads; the walk's first tile needs none.
  l.ifThen(b.CreateICmpNE(w.iv, w.lb), "await.tile.turn", [&] {
    emitAsm(l, "bar.sync $0, " + std::to_string(l.ctaThreads()) + ";", "r",
            {b.CreateAdd(l.computeGroup, b.getInt32(4))});
  });
}

void passTileTurn(Lowering &l) {
  auto &b = l.b;
  const Lowering::TileWalk &w = *l.tileWalk;
  // To the other group, where the walk has a next tile (so that every sync meets its arrival).
  l.ifThen(below(l, *w.loop, b.CreateAdd(w.iv, w.step), w.ub), "pass.tile.turn", [&] {
    emitAsm(l, "bar.arrive $0, " + std::to_string(l.ctaThreads()) + ";", "r",
            {b.CreateSub(b.getInt32(5), l.computeGroup)});
  });
}

void endPingPong(Lowering &l, llvm::Value *iterations) {
  auto &b = l.b;
  // (The body's own value does not dominate the loop's exit.) Each group's syncs on its turn
  // must meet the other's arrivals: group 1's last hand-over is still to be taken.
  llvm::Value *group0 = b.CreateICmpULT(l.hardwareTid, b.getInt32(128));
  l.ifThen(b.CreateAnd(group0, b.CreateICmpUGT(iterations, b.getInt32(0))), "pass.last",
           [&] { emitAsm(l, "bar.sync 2, 256;", "", {}); });
  l.pingPong.reset();
}

} // namespace tritium::codegen
