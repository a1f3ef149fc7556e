// Lowering of cp.async software pipelining, as planned by gpu/PipelineLoads.cpp. A loop with
// S stages keeps S shared-memory buffers per pipelined load: the prologue copies iterations
// 0..S-2 ahead; each iteration waits until its own copy has landed (cp.async.wait_group S-2),
// starts the copy for iteration + S-1, and reads its data from shared memory. Each thread copies
// exactly the elements it later reads, so no barrier is needed between copy and use. Lanes that
// are masked off, and iterations past the end, copy zero bytes (src-size 0); the mask then
// selects `other` for them, unless `other` is the zero the copy left. Rings of bulk copies
// (LowerBulkCopy.cpp) keep the same reads but move whole blocks, one instruction each,
// synchronise through mbarriers, and refill a buffer right after the body's last pipelined load
// has read it, so they need one buffer fewer. Loads that do not depend on the induction
// variable are copied once, before the prologue, as the oldest cp.async group, and read from
// their buffer in every iteration (a bulk ring waits for that group in each iteration, which
// costs nothing once it has landed).
#include "compiler/analysis/AffineCarries.h"
#include "compiler/codegen/Mbarrier.h"
#include "compiler/codegen/Pipelining.h"
#include "compiler/ir/TensorMap.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_set>
#include <variant>

namespace tritium::codegen {

namespace {

int64_t elementBytes(const ir::Type &t) { return ir::byteWidth(t.kind()); }

void collectSlice(const ir::Value *v, const ir::Block &body,
                  std::unordered_set<const ir::Op *> &slice) {
  const ir::Op *def = v->definingOp();
  if (!def || def->parentBlock() != &body || !slice.insert(def).second)
    return;
  for (const ir::Value *o : def->operands())
    collectSlice(o, body, slice);
}

// Address of element `k` of this thread in the stage buffer: the element's row-major index in
// the block, so a thread's vector run (along the last dimension) lands contiguously.
llvm::Value *stageAddress(Lowering &l, const ir::Op &load, llvm::Value *stage, int64_t k) {
  auto &b = l.b;
  const ir::Value *res = load.result();
  int64_t offset = load.intAttr("smem_offset"), stageBytes = load.intAttr("stage_bytes");
  llvm::Value *byte = b.CreateAdd(
      b.CreateMul(b.CreateZExt(stage, b.getInt64Ty()), b.getInt64(stageBytes)),
      b.getInt64(offset));
  llvm::Value *inTile;
  if (load.hasAttr("swizzle")) { // a dot's operand (FeedDotsFromRings.cpp)
    const std::vector<int64_t> &shape = res->type().shape();
    std::vector<llvm::Value *> c = l.coordinates(res, k);
    inTile = b.CreateZExt(dotTileOffset(l, c[0], c[1], shape[0], shape[1],
                                        int(elementBytes(res->type())),
                                        rowOrderOf(load)),
                          b.getInt64Ty());
  } else {
    llvm::Value *index = b.CreateZExt(l.rowMajorIndex(res, k), b.getInt64Ty());
    inTile = b.CreateMul(index, b.getInt64(elementBytes(res->type())));
  }
  return b.CreateGEP(b.getInt8Ty(), l.smem, b.CreateAdd(byte, inTile));
}

// Each thread copies its own 16-byte vectors of `loads` (those TMA does not copy), as one
// commit group.
void issueThreadCopies(Lowering &l, const std::vector<const ir::Op *> &loads, llvm::Value *inRange,
                       llvm::Value *stage) {
  auto &b = l.b;
  for (const ir::Op *load : loads) {
    if (load->hasAttr("tensor_map"))
      continue;
    int64_t vec = load->intAttr("vec");
    int64_t bytes = elementBytes(load->result()->type()) * vec;
    if (bytes != 16)
      internalError("pipelined loads move 16-byte vectors");
    // The load's cache operator, as far as cp.async takes it: .ca keeps the line in L1 (.cg, the
    // default, does not). An eviction priority is dropped here: the ptxas of the CUDA 13.0
    // driver (and, as Triton and Marlin report, of toolkits up to 13.3) can compile cp.async's
    // .L2::cache_hint to an LDGSTS that reads its policy from a uniform register never written,
    // and the kernel stops with an illegal instruction (BlocksGpuTest.EvictFirstRingAfterNested-
    // RingOfSums; docs/notes/hardware.md, "ptxas miscompiles cp.async's L2 cache hint"). Bulk
    // copies keep their policy.
    // PipelineLoads leaves loads with other cache operators (cs, lu, cv) out of rings.
    bool ca = load->hasAttr("cache") && load->strAttr("cache") == "ca";
    unsigned id = ca ? llvm::Intrinsic::nvvm_cp_async_ca_shared_global_16_s
                     : llvm::Intrinsic::nvvm_cp_async_cg_shared_global_16_s;
    const Elements &ptrs = l.get(load->operand(0));
    for (size_t k = 0; k < ptrs.size(); k += size_t(vec)) {
      llvm::Value *pred = inRange;
      if (ir::hasMask(*load))
        pred = b.CreateAnd(pred, l.get(load->operand(1))[k]);
      llvm::Value *size = b.CreateSelect(pred, b.getInt32(int32_t(bytes)), b.getInt32(0));
      l.intrinsic(id, {}, {stageAddress(l, *load, stage, int64_t(k)), ptrs[k], size});
    }
  }
  l.intrinsic(llvm::Intrinsic::nvvm_cp_async_commit_group, {}, {});
}

} // namespace

std::optional<PipelinePlan> pipelinePlan(const ir::Op &loop) {
  if (!loop.hasAttr("pipeline_stages"))
    return std::nullopt;
  PipelinePlan plan;
  plan.stages = int(loop.intAttr("pipeline_stages"));
  if (loop.hasAttr("bulk_barriers"))
    plan.bulkBarriers = loop.intAttr("bulk_barriers");
  if (loop.hasAttr("tensor_barriers"))
    plan.tensorBarriers = loop.intAttr("tensor_barriers");
  plan.wgmmaInFlight = loop.hasAttr("wgmma_in_flight");
  if (loop.hasAttr("warp_specialized"))
    plan.emptyBarriers = loop.intAttr("empty_barriers");
  const ir::Block &body = *loop.body();
  std::unordered_set<const ir::Op *> slice, residentSlice;
  for (const auto &op : body.ops())
    if (op->hasAttr("pipelined")) {
      if (op->hasAttr("multicast_copies"))
        plan.multicast = op->intAttr("multicast_copies");
      bool resident = op->hasAttr("resident");
      (resident ? plan.residents : plan.loads).push_back(op.get());
      for (unsigned i = 0; i < op->numOperands(); ++i)
        if (!op->hasAttr("tensor_map") || ir::tensorCopyReads(*op, i))
          collectSlice(op->operand(i), body, resident ? residentSlice : slice);
    }
  for (const auto &op : body.ops()) { // program order
    if (slice.count(op.get()))
      plan.slice.push_back(op.get());
    if (residentSlice.count(op.get()))
      plan.residentSlice.push_back(op.get());
  }
  return plan;
}

bool PipelinePlan::threadCopies() const {
  return std::any_of(loads.begin(), loads.end(),
                     [](const ir::Op *load) { return !load->hasAttr("tensor_map"); });
}

void startRing(Lowering &l, const PipelinePlan &plan) {
  if (plan.bulk())
    initBulkBarriers(l, plan);
  else if (plan.tensorCopies())
    initTensorBarriers(l, plan);
  else
    l.barrier();
}

namespace {

// Lowers an op of a load's slice again (PipelineLoads' recomputable kinds): elementwise ops,
// cluster_rank, the register-only shape changes that spread a tile's rows, and masked loads
// that addresses depend on, whose mask `inRange` also cuts (an iteration past the loop's end
// reads nothing its own mask might not exclude).
bool recompute(Lowering &l, const ir::Op &op, llvm::Value *inRange) {
  switch (op.kind()) {
  case ir::OpKind::Load: {
    const ir::Value *mask = op.operand(1);
    Elements own = l.get(mask), cut;
    std::map<llvm::Value *, llvm::Value *> cutOf; // one `and` per distinct mask value
    for (llvm::Value *m : own) {
      llvm::Value *&c = cutOf[m];
      if (!c)
        c = inRange ? l.b.CreateAnd(m, inRange) : m;
      cut.push_back(c);
    }
    l.set(mask, cut);
    bool lowered = lowerMemory(l, op);
    l.set(mask, std::move(own));
    return lowered;
  }
  case ir::OpKind::ClusterRank:
    return lowerCluster(l, op);
  case ir::OpKind::ExpandDims:
  case ir::OpKind::Broadcast:
    return lowerShapes(l, op);
  default:
    return lowerElementwise(l, op);
  }
}

// Evaluates `slice` (body ops) for iteration `iv`, runs `issue`, then gives the body's own
// values back: a bulk ring issues in the middle of the body, where the body's values of the
// slice (and the induction variable) are still in use; unset in the prologue, before the loop
// exists.
// The loop's affine carries (analysis/AffineCarries.h) at iteration `iv`: init + k x step, k =
// (iv - lb) / loop step, with the steps' own ops (invariant, made in the body) lowered first.
void setAffineCarries(Lowering &l, const ir::Op &loop, const std::vector<AffineCarry> &carries,
                      llvm::Value *iv) {
  auto &b = l.b;
  const ir::Block &body = *loop.body();
  std::unordered_set<const ir::Op *> steps;
  for (const AffineCarry &c : carries)
    collectSlice(c.step, body, steps);
  for (const auto &op : body.ops()) // program order
    if (steps.count(op.get()) && !recompute(l, *op, nullptr))
      internalError(std::string("pipelining: cannot recompute '") + op->name() + "'");
  llvm::Value *k = b.CreateSDiv(b.CreateSub(iv, l.get(loop.operand(0))[0]),
                                l.get(loop.operand(2))[0]);
  for (const AffineCarry &c : carries) {
    const ir::Value *arg = body.argument(c.arg);
    const Elements &init = l.get(loop.operand(2 + c.arg)), &step = l.get(c.step);
    bool zext = c.step->type().isUnsigned() && ir::bitWidth(c.step->type().kind()) < 64;
    Elements out;
    for (size_t e = 0; e < init.size(); ++e) {
      llvm::Value *s = step[step.size() == 1 ? 0 : e];
      llvm::Value *by = b.CreateMul(b.CreateSExtOrTrunc(k, s->getType()), s);
      if (arg->type().isPtr())
        out.push_back(b.CreateGEP(l.scalarType(arg->type().kind()), init[e],
                                  zext ? b.CreateZExt(by, b.getInt64Ty()) : by));
      else
        out.push_back(b.CreateAdd(init[e], by));
    }
    l.set(arg, std::move(out));
  }
}


// `loaded` gives the slice's loads' values, loaded before (prefetchSliceLoads), instead of
// loading them again.
template <typename F>
void atIteration(Lowering &l, const ir::Op &loop, const std::vector<const ir::Op *> &slice,
                 llvm::Value *iv, llvm::Value *ub, F issue, const SliceLoads *loaded = nullptr) {
  std::vector<AffineCarry> carries = affineCarries(loop);
  std::vector<const ir::Value *> recomputed{loop.body()->argument(0)};
  for (const AffineCarry &c : carries) {
    recomputed.push_back(loop.body()->argument(c.arg));
    std::unordered_set<const ir::Op *> steps;
    collectSlice(c.step, *loop.body(), steps);
    for (const ir::Op *op : steps)
      recomputed.push_back(op->result());
  }
  for (const ir::Op *op : slice)
    recomputed.push_back(op->result());
  std::vector<std::optional<Elements>> saved;
  for (const ir::Value *v : recomputed) {
    auto it = l.values.find(v);
    saved.push_back(it == l.values.end() ? std::nullopt : std::optional<Elements>(it->second));
  }
  l.set(recomputed[0], {iv});
  setAffineCarries(l, loop, carries, iv);
  // Made for the slice's loads alone (other slices lower as they always have).
  bool loads = std::any_of(slice.begin(), slice.end(),
                           [](const ir::Op *op) { return op->kind() == ir::OpKind::Load; });
  llvm::Value *inRange = loads ? below(l, loop, iv, ub) : nullptr;
  for (const ir::Op *op : slice) {
    if (loaded && loaded->count(op)) {
      l.set(op->result(), loaded->at(op));
      continue;
    }
    if (!recompute(l, *op, inRange))
      internalError(std::string("pipelining: cannot recompute '") + op->name() + "'");
  }
  issue();
  for (size_t i = 0; i < recomputed.size(); ++i)
    if (saved[i])
      l.set(recomputed[i], *saved[i]);
    else
      l.values.erase(recomputed[i]);
}

} // namespace

llvm::Value *below(Lowering &l, const ir::Op &loop, llvm::Value *iv, llvm::Value *ub) {
  return loop.operand(0)->type().isUnsigned() ? l.b.CreateICmpULT(iv, ub)
                                              : l.b.CreateICmpSLT(iv, ub);
}

void issueResidents(Lowering &l, const PipelinePlan &plan, const ir::Op &loop, llvm::Value *lb,
                    llvm::Value *ub) {
  if (plan.residents.empty())
    return;
  // Not for a loop that does not run: its loads need not be valid then.
  atIteration(l, loop, plan.residentSlice, lb, ub, [&] {
    issueThreadCopies(l, plan.residents, below(l, loop, lb, ub), l.b.getInt32(0));
  });
}

bool prefetchesSliceLoads(const PipelinePlan &plan) {
  if (plan.bulk() || plan.warpSpecialized() || !plan.threadCopies())
    return false;
  bool any = false;
  for (const ir::Op *op : plan.slice) {
    if (op->kind() != ir::OpKind::Load)
      continue;
    any = true;
    std::unordered_set<const ir::Op *> feeds; // what its own operands need
    for (const ir::Value *o : op->operands())
      collectSlice(o, *op->parentBlock(), feeds);
    if (std::any_of(feeds.begin(), feeds.end(),
                    [](const ir::Op *f) { return f->kind() == ir::OpKind::Load; }))
      return false; // a chain of loads would wait within the prefetch instead
  }
  return any;
}

SliceLoads prefetchSliceLoads(Lowering &l, const PipelinePlan &plan, const ir::Op &loop,
                              llvm::Value *iv, llvm::Value *ub) {
  SliceLoads out;
  std::vector<const ir::Op *> upToLoads; // the slice's ops the loads need, and the loads
  std::unordered_set<const ir::Op *> needed;
  for (const ir::Op *op : plan.slice)
    if (op->kind() == ir::OpKind::Load)
      collectSlice(op->result(), *loop.body(), needed);
  for (const ir::Op *op : plan.slice)
    if (needed.count(op))
      upToLoads.push_back(op);
  atIteration(l, loop, upToLoads, iv, ub, [&] {
    for (const ir::Op *op : upToLoads)
      if (op->kind() == ir::OpKind::Load)
        out[op] = l.get(op->result());
  });
  return out;
}

void issueStage(Lowering &l, const PipelinePlan &plan, const ir::Op &loop, llvm::Value *iv,
                llvm::Value *ub, llvm::Value *stage, llvm::Value *readBy,
                const SliceLoads *loaded) {
  atIteration(l, loop, plan.slice, iv, ub, [&] {
    llvm::Value *inRange = below(l, loop, iv, ub);
    if (plan.bulk()) {
      issueBulkStage(l, plan, inRange, stage, readBy);
      return;
    }
    if (plan.threadCopies())
      issueThreadCopies(l, plan.loads, inRange, stage);
    if (plan.tensorCopies())
      issueTensorCopies(l, plan, inRange, stage);
  }, loaded);
}

void waitForStage(Lowering &l, const PipelinePlan &plan, llvm::Value *stage,
                  llvm::Value *iteration) {
  if (plan.warpSpecialized()) { // the mbarrier alone: no refill waits on the other warps
    waitForTensorCopies(l, plan, stage, iteration);
    return;
  }
  if (plan.bulk()) {
    waitForBulkStage(l, plan, stage, iteration);
    if (!plan.residents.empty()) // the residents' group, the only cp.async one
      l.intrinsic(llvm::Intrinsic::nvvm_cp_async_wait_all, {}, {});
  } else {
    if (plan.tensorCopies())
      waitForTensorCopies(l, plan, stage, iteration);
    if (plan.threadCopies()) // the oldest outstanding group is this iteration's
      l.intrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {},
                  {l.b.getInt32(plan.lookahead() - 1)});
    else if (!plan.residents.empty()) // (the residents' is older still)
      l.intrinsic(llvm::Intrinsic::nvvm_cp_async_wait_all, {}, {});
    // A tile that a dot reads in place is read by every warp, not by the threads that copied
    // it: the barrier makes every thread's copies visible, and keeps the refill issued after
    // it (the previous iteration's stage) behind every warp's reads of that stage. The same
    // holds for a tile TMA copies, which one thread refills for all.
    // A wgmma reads through the async proxy, which the copies' writes must be fenced for
    // before the barrier.
    if (std::any_of(plan.loads.begin(), plan.loads.end(), [](const ir::Op *load) {
          return load->hasAttr("async_proxy") && !load->hasAttr("tensor_map");
        }))
      emitAsm(l, "fence.proxy.async.shared::cta;", "", {});
    if (plan.tensorCopies() ||
        std::any_of(plan.loads.begin(), plan.loads.end(),
                    [](const ir::Op *load) { return load->hasAttr("swizzle"); }))
      l.barrier();
  }
}

void finishRing(Lowering &l, const PipelinePlan &plan) {
  if (plan.bulk())
    invalidateBulkBarriers(l, plan);
  if (plan.tensorCopies())
    invalidateTensorBarriers(l, plan);
  if ((!plan.bulk() && plan.threadCopies()) || !plan.residents.empty())
    l.intrinsic(llvm::Intrinsic::nvvm_cp_async_wait_all, {}, {});
}

void lowerPipelinedLoad(Lowering &l, const ir::Op &load, const Lowering::RingPosition &at) {
  auto &b = l.b;
  // Masked lanes of a cp.async ring were filled with zeros (src-size 0): an `other` of 0 needs
  // no select. A bulk ring leaves them as they were.
  const ir::Op &loop = *load.parentBlock()->parentOp();
  std::optional<PipelinePlan> plan = pipelinePlan(loop);
  bool resident = load.hasAttr("resident"); // copied per thread, into one buffer
  bool zeroFilled =
      ir::hasMask(load) && ir::isPositiveZero(load.operand(2)) && (resident || !plan->bulk());
  llvm::Value *stage = resident ? b.getInt32(0) : at.stage;
  const ir::Value *res = load.result();
  llvm::Type *ty = l.elementType(res->type());
  int64_t vec = load.intAttr("vec");
  auto *vecTy = llvm::FixedVectorType::get(ty, unsigned(vec));
  if (load.hasAttr("swizzle")) { // the dot reads the tile from here
    llvm::Value *byte = b.CreateAdd(
        b.CreateMul(b.CreateZExt(stage, b.getInt64Ty()), b.getInt64(load.intAttr("stage_bytes"))),
        b.getInt64(load.intAttr("smem_offset")));
    l.ringTiles[res] = b.CreateGEP(b.getInt8Ty(), l.smem, byte);
  }
  Elements out;
  for (int64_t k = 0; !load.hasAttr("dot_only") && k < l.elementsPerThread(res); k += vec) {
    // Volatile: the data arrives behind LLVM's back (cp.async), so the read must stay after the
    // wait and may not be merged with an earlier one; a resident load is read again in each
    // iteration rather than held in registers across them.
    llvm::LoadInst *v = b.CreateAlignedLoad(vecTy, stageAddress(l, load, stage, k),
                                            llvm::Align(uint64_t(elementBytes(res->type()) * vec)),
                                            /*isVolatile=*/true);
    for (int64_t j = 0; j < vec; ++j) {
      llvm::Value *e = b.CreateExtractElement(v, uint64_t(j));
      if (ir::hasMask(load) && !zeroFilled)
        e = b.CreateSelect(l.get(load.operand(1))[size_t(k + j)], e,
                           l.get(load.operand(2))[size_t(k + j)]);
      out.push_back(e);
    }
  }
  l.set(res, std::move(out));
  // A bulk ring's buffer is free once every thread has read it: after the body's last
  // pipelined load (the reads above are volatile, so they stay before the arrival). The
  // producer then refills it with the iteration num_stages - 1 ahead.
  if (plan->bulk() && !resident && plan->loads.back() == &load) {
    releaseBulkStage(l, *plan, stage);
    issueStage(l, *plan, loop, at.aheadIv, at.ub, stage, at.iteration);
  }
}

} // namespace tritium::codegen
