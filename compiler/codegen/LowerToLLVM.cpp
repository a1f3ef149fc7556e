// GIR -> LLVM IR for nvptx64: the kernel function and its arguments, thread indices, shared
// memory, structured loops, and dispatch of every other op to its family's lowering.
#include "compiler/codegen/Lowering.h"
#include "compiler/codegen/Mbarrier.h"
#include "compiler/codegen/Pipelining.h"
#include "compiler/gpu/GpuPasses.h"

#include "compiler/ir/Printer.h"
#include "compiler/ir/TensorMap.h"

#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <bit>

namespace tritium::codegen {

llvm::Type *Lowering::scalarType(ir::ScalarKind k) {
  switch (k) {
  case ir::ScalarKind::I1: return b.getInt1Ty();
  // fp8 values live in registers as their bits; casts convert them (LowerElementwise.cpp).
  case ir::ScalarKind::I8: case ir::ScalarKind::U8: case ir::ScalarKind::F8E4M3:
  case ir::ScalarKind::F8E5M2: return b.getInt8Ty();
  case ir::ScalarKind::I16: case ir::ScalarKind::U16: return b.getInt16Ty();
  case ir::ScalarKind::I32: case ir::ScalarKind::U32: return b.getInt32Ty();
  case ir::ScalarKind::I64: case ir::ScalarKind::U64: return b.getInt64Ty();
  case ir::ScalarKind::F16: return b.getHalfTy();
  case ir::ScalarKind::BF16: return b.getBFloatTy();
  case ir::ScalarKind::F32: return b.getFloatTy();
  }
  internalError("unknown scalar kind");
}

llvm::Type *Lowering::elementType(const ir::Type &t) {
  return t.isPtr() ? llvm::PointerType::get(ctx, 1) : scalarType(t.kind());
}

const Elements &Lowering::get(const ir::Value *v) const {
  auto it = values.find(v);
  if (it == values.end())
    internalError("lowering: value used before it was lowered");
  return it->second;
}

llvm::Value *Lowering::intrinsic(unsigned id, llvm::ArrayRef<llvm::Type *> types,
                                 llvm::ArrayRef<llvm::Value *> args) {
  llvm::Function *f = llvm::Intrinsic::getOrInsertDeclaration(&mod, id, types);
  return b.CreateCall(f, args);
}

void Lowering::barrier() {
  if (tensorStores)
    waitForTensorStoreReads(*this);
  if (programsPerCTA > 1) // each program is one warp (Pipeline.cpp checks): sync only it
    intrinsic(llvm::Intrinsic::nvvm_bar_warp_sync, {}, {b.getInt32(-1)});
  else if (consumersOnly && computeGroups > 1) // barriers 1 and 2: each group's own
    intrinsic(llvm::Intrinsic::nvvm_barrier_cta_sync_aligned_count, {},
              {b.CreateAdd(computeGroup, b.getInt32(1)), b.getInt32(threads())});
  else
    syncComputeWarps();
}

void Lowering::ctaBarrier() {
  if (tensorStores)
    waitForTensorStoreReads(*this);
  syncComputeWarps();
}

void Lowering::syncComputeWarps() {
  if (consumersOnly) // the compute warps, the producer warp gone: barrier 1, or 3 for groups
    intrinsic(llvm::Intrinsic::nvvm_barrier_cta_sync_aligned_count, {},
              {b.getInt32(computeGroups > 1 ? 3 : 1), b.getInt32(ctaThreads())});
  else
    intrinsic(llvm::Intrinsic::nvvm_barrier_cta_sync_aligned_all, {}, {b.getInt32(0)});
}

llvm::Value *Lowering::isThreadZero(bool wholeCta) {
  llvm::Value *first = b.CreateICmpEQ(tid, b.getInt32(0));
  if (computeGroups > 1 && (wholeCta || !consumersOnly))
    first = b.CreateAnd(first, b.CreateICmpEQ(computeGroup, b.getInt32(0)));
  return producer ? b.CreateAnd(first, b.CreateNot(producer)) : first;
}

// How far this thread's compute group's buffers sit from group 0's (i32 bytes).
static llvm::Value *groupShift(Lowering &l) {
  return l.b.CreateMul(l.computeGroup, l.b.getInt32(int32_t(l.groupSmemShift)));
}

llvm::Value *Lowering::programSmemBase() {
  if (computeGroups == 1)
    return smem;
  return b.CreateGEP(b.getInt8Ty(), smem, b.CreateZExt(groupShift(*this), b.getInt64Ty()),
                     "group.smem");
}

llvm::Value *Lowering::programSmem(int64_t offset) {
  return b.CreateGEP(b.getInt8Ty(), programSmemBase(), b.getInt64(offset));
}

llvm::Value *Lowering::programSharedAddress(llvm::Value *offset) {
  if (computeGroups > 1)
    offset = b.CreateAdd(offset, groupShift(*this));
  return sharedAddress(*this, offset);
}

namespace {

class FunctionLowering {
public:
  FunctionLowering(Lowering &l) : l_(l) {}

  void run() {
    auto &b = l_.b;
    const ir::Block &body = l_.kernel.body();
    std::vector<llvm::Type *> params;
    for (auto &arg : body.arguments())
      params.push_back(l_.elementType(arg->type()));
    // The CUtensorMaps that the launch encodes (gpu/ChooseTensorMaps.cpp) follow the
    // arguments, 128 bytes each, passed by value and read in place (grid constants).
    size_t tensorMaps = ir::tensorMapsOf(l_.kernel).size();
    for (size_t i = 0; i < tensorMaps; ++i)
      params.push_back(llvm::PointerType::get(l_.ctx, 0));
    auto *fnType = llvm::FunctionType::get(b.getVoidTy(), params, false);
    l_.fn = llvm::Function::Create(fnType, llvm::Function::ExternalLinkage, l_.kernel.name(),
                                   l_.mod);
    l_.fn->setCallingConv(llvm::CallingConv::PTX_Kernel);
    l_.programsPerCTA = int(l_.kernel.intAttr("programs_per_cta").value_or(1));
    l_.producerWarps = int(l_.kernel.intAttr("producer_warps").value_or(0));
    l_.computeGroups = int(l_.kernel.intAttr("compute_groups").value_or(1));
    l_.groupSmemShift = l_.kernel.intAttr("group_smem_shift").value_or(0);
    l_.fn->addFnAttr("nvvm.reqntid", std::to_string(l_.ctaThreads() + 32 * l_.producerWarps));
    if (auto blocks = l_.kernel.intAttr("min_blocks_per_sm"))
      l_.fn->addFnAttr("nvvm.minctasm", std::to_string(*blocks)); // ptxas caps registers
    if (int64_t cluster = clusterSize(l_.kernel); cluster > 1)
      l_.fn->addFnAttr("nvvm.cluster_dim", std::to_string(cluster) + ",1,1");
    for (size_t i = body.arguments().size(); i < params.size(); ++i) {
      llvm::Argument *a = l_.fn->getArg(unsigned(i));
      a->setName("tensor_map_" + std::to_string(i - body.arguments().size()));
      llvm::Type *bytes = llvm::ArrayType::get(b.getInt8Ty(), 128);
      a->addAttr(llvm::Attribute::getWithByValType(l_.ctx, bytes));
      a->addAttr(llvm::Attribute::getWithAlignment(l_.ctx, llvm::Align(64)));
      a->addAttr(llvm::Attribute::get(l_.ctx, "nvvm.grid_constant"));
    }
    for (size_t i = 0; i < body.arguments().size(); ++i) {
      llvm::Argument *a = l_.fn->getArg(unsigned(i));
      a->setName(body.argument(unsigned(i))->name());
      l_.set(body.argument(unsigned(i)), {a});
    }
    l_.smem = new llvm::GlobalVariable(
        l_.mod, llvm::ArrayType::get(b.getInt8Ty(), 0), false,
        llvm::GlobalValue::ExternalLinkage, nullptr, "global_smem", nullptr,
        llvm::GlobalValue::NotThreadLocal, 3);
    // Dot tiles are swizzled by the address bits themselves (wgmma, TMA): their buffers sit at
    // multiples of kDotTileAlignment from this base, which must be aligned as much.
    l_.tensorStores = ir::findFirst(l_.kernel.body(), ir::OpKind::TensorStore) != nullptr;
    l_.smem->setAlignment(llvm::Align(
        ir::findFirst(l_.kernel.body(), ir::OpKind::Dot) || l_.tensorStores
            ? uint64_t(kDotTileAlignment)
            : 16));

    b.SetInsertPoint(llvm::BasicBlock::Create(l_.ctx, "entry", l_.fn));
    l_.tid = l_.intrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, {}, {});
    l_.programSlot = b.getInt32(0);
    if (l_.programsPerCTA > 1) { // threads() is a power of two
      l_.programSlot = b.CreateLShr(l_.tid, b.getInt32(std::countr_zero(unsigned(l_.threads()))),
                                    "program.slot");
      l_.tid = b.CreateAnd(l_.tid, b.getInt32(l_.threads() - 1), "program.tid");
    }
    if (l_.producerWarps)
      enterWithProducerWarp(l_);
    for (size_t i = 0; i < tensorMaps; ++i) // generic addresses of the parameters
      l_.tensorMaps.push_back(
          b.CreatePtrToInt(l_.fn->getArg(unsigned(body.arguments().size() + i)), b.getInt64Ty()));
    l_.laneId = b.CreateAnd(l_.tid, b.getInt32(31), "lane");
    l_.warpId = b.CreateLShr(l_.tid, b.getInt32(5), "warp");
    l_.reductionBank = b.CreateAlloca(b.getInt32Ty(), nullptr, "reduce.bank");
    b.CreateStore(b.getInt32(0), l_.reductionBank);
    clusterEntry(l_);
    l_.lowerRegion = [this](const ir::Block &region) { return lowerRegion(region); };
    l_.unlowered = opsOnlyCopiesFeed(l_.kernel);
    lowerBlock(body);
    if (l_.tensorStores)
      waitForTensorStores(l_);
    b.CreateRetVoid();
  }

private:
  void lowerBlock(const ir::Block &block) {
    // Products pending when the block starts were issued outside it: the block may leave them
    // in flight (it waits inside only for those it reads, before the op that reads them).
    size_t outer = l_.pendingWgmma.size();
    for (auto it = block.ops().begin(); it != block.ops().end(); ++it) {
      const auto &op = *it;
      if (l_.unlowered.count(op.get()))
        continue;
      if (!l_.pendingWgmma.empty())
        waitForWhatReads(*op);
      if (isClusterExchange(*op)) {
        lowerClusterExchanges(l_, exchangeBatch(it, block.ops().end(), isClusterExchange));
        continue;
      }
      if (isClusterBlockExchange(*op)) {
        lowerClusterBlockExchanges(l_,
                                   exchangeBatch(it, block.ops().end(), isClusterBlockExchange));
        continue;
      }
      // A turn spans the issues of the body's first products (LowerWarpSpecialization.cpp).
      bool turnEnds = l_.pingPong && op.get() == l_.pingPong->lastDot;
      if (l_.pingPong && op.get() == l_.pingPong->firstDot)
        awaitTurn(l_);
      if (op->kind() == ir::OpKind::For)
        lowerFor(*op);
      else if (op->kind() == ir::OpKind::If)
        lowerIf(*op);
      else if (op->kind() == ir::OpKind::While)
        lowerWhile(*op);
      else if (op->kind() == ir::OpKind::Yield)
        yields_.back() = op.get();
      else
        lowerOp(*op);
      if (turnEnds) // issued (waits deferred): the other group's products may queue
        passTurn(l_);
    }
    // Nothing issued in the block leaves it in flight. (A block that issues products starts
    // with none pending: the op holding it waited for all of them, waitForWhatReads.)
    if (l_.pendingWgmma.size() > outer) {
      if (outer != 0)
        internalError("a block issued wgmma products while outer ones were pending");
      waitForPendingWgmma(l_);
    }
  }

  // An op without regions.
  void lowerOp(const ir::Op &op) {
    if (!lowerElementwise(l_, op) && !lowerMemory(l_, op) && !lowerReduction(l_, op) &&
        !lowerShapes(l_, op) && !lowerMath(l_, op) && !lowerAtomic(l_, op) &&
        !lowerGeneralReduce(l_, op) && !lowerScan(l_, op) && !lowerInlineAsm(l_, op) &&
        !lowerDot(l_, op) && !lowerTensorStore(l_, op) && !lowerPrint(l_, op) &&
        !lowerAssume(l_, op) && !lowerCluster(l_, op) && !lowerGridDependency(l_, op) &&
        !lowerGridSync(l_, op))
      internalError(std::string("no lowering for '") + op.name() + "'");
  }

  // Waits for the pending wgmma dots' results that `op` reads, in its own operands or, for an
  // op holding regions, in any op inside them; an op whose regions issue wgmma products of
  // their own waits for every pending one first (so that the groups a region's waits count
  // are its own, and no wait for an outer product lands inside a branch). Products committed
  // after the newest one read stay in flight: FlashAttention-3's order, the softmax of one
  // step's scores under the next product, relies on it.
  void waitForWhatReads(const ir::Op &op) {
    PendingReads r = pendingReadsOf(op, l_.pendingWgmma);
    if (r.nestedProduct)
      waitForPendingWgmma(l_);
    else if (!r.read.empty())
      waitForPendingWgmma(l_, r.read);
  }

  // The cluster exchange at `it` and the ones of its kind (`isKind`) right after it that use
  // none of the batch's results; leaves `it` at the batch's last op.
  template <typename It>
  std::vector<const ir::Op *> exchangeBatch(It &it, It end, bool (*isKind)(const ir::Op &)) {
    std::vector<const ir::Op *> batch{it->get()};
    for (auto next = std::next(it); next != end && isKind(**next); ++next) {
      bool dependent = false;
      for (const ir::Value *operand : (*next)->operands())
        for (const ir::Op *earlier : batch)
          dependent = dependent || operand->definingOp() == earlier;
      if (dependent)
        break;
      batch.push_back(next->get());
      it = next;
    }
    return batch;
  }

  // Loop metadata that keeps LLVM's LICM out of the loop.
  static llvm::MDNode *licmDisabled(llvm::LLVMContext &ctx) {
    llvm::MDNode *off = llvm::MDNode::get(ctx, llvm::MDString::get(ctx, "llvm.licm.disable"));
    llvm::MDNode *id = llvm::MDNode::getDistinct(ctx, {nullptr, off});
    id->replaceOperandWith(0, id); // a loop's id names itself
    return id;
  }

  // for (iv = lb; iv < ub; iv += step) with carried values as phis in the header. A loop with
  // a pipelining plan also carries the ring's read and write stages and counts its iterations
  // (Pipelining.h).
  void lowerFor(const ir::Op &op) {
    auto &b = l_.b;
    llvm::Value *lb = l_.get(op.operand(0))[0];
    llvm::Value *ub = l_.get(op.operand(1))[0];
    llvm::Value *step = l_.get(op.operand(2))[0];
    std::optional<PipelinePlan> plan = pipelinePlan(op);
    // The warps split before a persistent kernel's loop over its tiles, whose inner loop's ring
    // (set up once, here) the producer fills across tiles; the inner loop counts its
    // iterations on from the tiles before (ringBase).
    const ir::Op *inner = op.hasAttr("warp_split") ? warpSpecializedLoopIn(op) : nullptr;
    std::optional<PipelinePlan> innerPlan;
    if (inner) {
      innerPlan = pipelinePlan(*inner);
      startRing(l_, *innerPlan);
      splitOffProducerAround(l_, *innerPlan, op, *inner, lb, ub, step,
                             [this](const ir::Op &o) { lowerOp(o); });
      if (l_.computeGroups > 1) { // group g takes iterations g, g + groups, ...
        l_.tileWalk = Lowering::TileWalk{&op, nullptr, lb, ub, step};
        llvm::Value *g = b.CreateZExtOrTrunc(l_.computeGroup, lb->getType());
        lb = b.CreateAdd(lb, b.CreateMul(g, step), "lb.group");
        step = b.CreateMul(step, llvm::ConstantInt::get(lb->getType(), l_.computeGroups),
                           "step.groups");
      }
    }
    bool acrossTiles = plan && plan->warpSpecialized() && l_.ringBase;
    // Rings of consecutive loops share shared memory (PipelineLoads): no thread may still be
    // reading an earlier loop's ring when this prologue starts writing. Loop bounds are
    // CTA-uniform scalars, so every thread reaches its barriers.
    if (plan) {
      if (!acrossTiles)
        startRing(l_, *plan);
      if (plan->warpSpecialized() && !acrossTiles)
        splitOffProducer(l_, *plan, op, lb, ub, step);
      issueResidents(l_, *plan, op, lb, ub);
      if (plan->warpSpecialized())
        awaitResidents(l_, *plan);
    }
    auto ivAt = [&](llvm::Value *from, int s) { // from + s x step
      return b.CreateAdd(from, b.CreateMul(step, llvm::ConstantInt::get(lb->getType(), s)));
    };
    if (plan && !plan->warpSpecialized()) // (the producer warp issues every iteration)
      for (int s = 0; s < plan->lookahead(); ++s)
        issueStage(l_, *plan, op, ivAt(lb, s), ub, b.getInt32(s), nullptr);
    // The block-table entries of the first iteration the body issues, loaded before the loop
    // (each iteration then loads those of the next: prefetchSliceLoads).
    bool prefetch = plan && prefetchesSliceLoads(*plan);
    SliceLoads prefetched;
    if (prefetch)
      prefetched = prefetchSliceLoads(l_, *plan, op, ivAt(lb, plan->lookahead()), ub);
    llvm::Value *base = acrossTiles ? l_.ringBase : nullptr;
    // With compute groups, each walks every groups-th tile of the ring's sequence, whose tiles
    // all take this loop's trip count (SpecializeWarps): this tile's iterations start after
    // those of the groups before it in its round.
    llvm::Value *tileTrips = nullptr;
    if (acrossTiles && l_.computeGroups > 1) {
      tileTrips = tripCount(op, lb, ub, step);
      base = b.CreateAdd(base, b.CreateMul(l_.computeGroup, tileTrips), "ring.base.group");
      awaitTileTurn(l_);
    }
    llvm::Value *firstStage =
        base ? b.CreateURem(base, b.getInt32(plan->buffers()), "stage.first") : b.getInt32(0);
    llvm::BasicBlock *pre = b.GetInsertBlock();
    auto *header = llvm::BasicBlock::Create(l_.ctx, "loop.header", l_.fn);
    auto *bodyBB = llvm::BasicBlock::Create(l_.ctx, "loop.body", l_.fn);
    auto *exit = llvm::BasicBlock::Create(l_.ctx, "loop.exit", l_.fn);
    b.CreateBr(header);

    b.SetInsertPoint(header);
    const ir::Block &body = *op.body();
    llvm::PHINode *iv = b.CreatePHI(lb->getType(), 2, "iv");
    iv->addIncoming(lb, pre);
    std::vector<std::vector<llvm::PHINode *>> carried;
    for (unsigned i = 3; i < op.numOperands(); ++i) {
      std::vector<llvm::PHINode *> phis;
      Elements elems;
      for (llvm::Value *init : l_.get(op.operand(i))) {
        llvm::PHINode *phi = b.CreatePHI(init->getType(), 2);
        phi->addIncoming(init, pre);
        phis.push_back(phi);
        elems.push_back(phi);
      }
      l_.set(body.argument(i - 2), elems);
      carried.push_back(phis);
    }
    l_.set(body.argument(0), {iv});
    if (inner && l_.tileWalk)
      l_.tileWalk->iv = iv;
    llvm::PHINode *ringBase = nullptr;
    if (inner) {
      ringBase = b.CreatePHI(b.getInt32Ty(), 2, "ring.base");
      ringBase->addIncoming(b.getInt32(0), pre);
      l_.ringBase = ringBase;
    }
    llvm::PHINode *readStage = nullptr, *writeStage = nullptr, *iteration = nullptr;
    if (plan) {
      readStage = b.CreatePHI(b.getInt32Ty(), 2, "stage.read");
      readStage->addIncoming(firstStage, pre);
      writeStage = b.CreatePHI(b.getInt32Ty(), 2, "stage.write");
      writeStage->addIncoming(b.getInt32(plan->lookahead() % plan->buffers()), pre);
      iteration = b.CreatePHI(b.getInt32Ty(), 2, "ring.iteration");
      iteration->addIncoming(b.getInt32(0), pre);
    }
    // A phi per element (LLVM merges those of a thread's copies of one entry), made in the
    // body's order of the loads, so that the output does not depend on where ops sit in memory.
    SliceLoads loaded;
    if (prefetch)
      for (const ir::Op *load : plan->slice)
        if (prefetched.count(load))
          for (llvm::Value *v : prefetched.at(load)) {
            llvm::PHINode *phi = b.CreatePHI(v->getType(), 2, "prefetched");
            phi->addIncoming(v, pre);
            loaded[load].push_back(phi);
          }
    SliceLoads nextLoaded; // the values the latch gives those phis
    bool isUnsigned = op.operand(0)->type().isUnsigned(); // u32/u64 bounds compare unsigned
    b.CreateCondBr(isUnsigned ? b.CreateICmpULT(iv, ub) : b.CreateICmpSLT(iv, ub), bodyBB, exit);

    b.SetInsertPoint(bodyBB);
    if (plan) {
      llvm::Value *aheadIv = b.CreateAdd(
          iv, b.CreateMul(step, llvm::ConstantInt::get(lb->getType(), plan->lookahead())));
      waitForStage(l_, *plan, readStage, base ? b.CreateAdd(base, iteration) : iteration);
      // cp.async refills the stage the previous iteration read (the one before it while a
      // wgmma is in flight: Pipelining.h); a bulk ring refills this
      // iteration's stage once it has been read (lowerPipelinedLoad).
      if (!plan->bulk() && !plan->warpSpecialized())
        issueStage(l_, *plan, op, aheadIv, ub, writeStage, nullptr,
                   prefetch ? &loaded : nullptr);
      if (prefetch) // the next iteration's entries, loaded under this one's compute
        nextLoaded = prefetchSliceLoads(l_, *plan, op, ivAt(aheadIv, 1), ub);
      l_.rings[&op] = {readStage, iteration, aheadIv, ub};
      if (op.hasAttr("ping_pong"))
        startPingPong(l_, op, iteration);
    }
    yields_.push_back(nullptr);
    lowerBlock(body);
    const ir::Op *yield = yields_.back();
    yields_.pop_back();
    if (plan && plan->warpSpecialized())
      releaseStage(l_, *plan, readStage, iteration);
    llvm::BasicBlock *latch = b.GetInsertBlock();
    iv->addIncoming(b.CreateAdd(iv, step, "iv.next"), latch);
    if (ringBase)
      ringBase->addIncoming(l_.ringBase, latch);
    if (plan) {
      auto next = [&](llvm::Value *stage) {
        llvm::Value *n = b.CreateAdd(stage, b.getInt32(1));
        return b.CreateSelect(b.CreateICmpEQ(n, b.getInt32(plan->buffers())), b.getInt32(0), n);
      };
      readStage->addIncoming(next(readStage), latch);
      writeStage->addIncoming(next(writeStage), latch);
      iteration->addIncoming(b.CreateAdd(iteration, b.getInt32(1)), latch);
      for (auto &[load, phis] : loaded)
        for (size_t k = 0; k < phis.size(); ++k)
          llvm::cast<llvm::PHINode>(phis[k])->addIncoming(nextLoaded.at(load)[k], latch);
    }
    for (unsigned i = 0; i < carried.size(); ++i) {
      const Elements &next = l_.get(yield->operand(i));
      for (size_t e = 0; e < next.size(); ++e)
        carried[i][e]->addIncoming(next[e], latch);
    }
    llvm::BranchInst *backEdge = b.CreateBr(header);
    // range(...).hoist_invariants(false), a persistent kernel's walk over its tiles: LICM
    // would keep a tile's per-thread rows and addresses live across its inner loop.
    if (op.hasAttr("no_hoist"))
      backEdge->setMetadata(llvm::LLVMContext::MD_loop, licmDisabled(l_.ctx));

    b.SetInsertPoint(exit);
    if (tileTrips) // every wait of this tile's ring is done
      passTileTurn(l_);
    for (unsigned i = 0; i < op.numResults(); ++i) {
      Elements out(carried[i].begin(), carried[i].end());
      // A wgmma left in flight by the last iteration (FeedDotsFromRings.cpp): wait for it
      // before anything reads its accumulators.
      const ir::Op *def = yield->operand(i)->definingOp();
      if (def && def->kind() == ir::OpKind::Dot && def->hasAttr("in_flight"))
        out = wgmmaWait(l_, out);
      l_.set(op.result(i), std::move(out));
    }
    if (l_.pingPong)
      endPingPong(l_, iteration);
    if (acrossTiles) {
      // The last iteration's stage, which its product read until the wait above, is free;
      // the next tile's iterations count on from this one's.
      if (plan->wgmmaInFlight)
        releaseStage(l_, *plan, readStage, iteration);
      // (With compute groups, past the other groups' tiles of this round too.)
      llvm::Value *ran =
          tileTrips ? b.CreateMul(tileTrips, b.getInt32(l_.computeGroups)) : iteration;
      l_.ringBase = b.CreateAdd(tileTrips ? l_.ringBase : base, ran, "ring.base.next");
    } else if (plan) {
      finishRing(l_, *plan);
    }
    if (plan && !acrossTiles && op.hasAttr("ring_reuses_smem")) // ops after it write over it
      l_.barrier();
    if (inner) {
      l_.ringBase = nullptr;
      l_.tileWalk.reset();
      finishRing(l_, *innerPlan);
    }
  }

  // How many iterations `loop` runs from lb to ub by step (i32; step > 0).
  llvm::Value *tripCount(const ir::Op &loop, llvm::Value *lb, llvm::Value *ub, llvm::Value *step) {
    auto &b = l_.b;
    llvm::Value *span = b.CreateSub(ub, lb);
    llvm::Value *n = b.CreateUDiv(b.CreateAdd(span, b.CreateSub(step, llvm::ConstantInt::get(
                                                                      step->getType(), 1))),
                                  step);
    llvm::Value *runs = below(l_, loop, lb, ub);
    return b.CreateTrunc(b.CreateSelect(runs, n, llvm::ConstantInt::get(n->getType(), 0)),
                         b.getInt32Ty(), "tile.trips");
  }

  // The warp-specialized loop in the body of a loop with {warp_split} (SpecializeWarps).
  static const ir::Op *warpSpecializedLoopIn(const ir::Op &outer) {
    for (const auto &op : outer.body()->ops())
      if (op->kind() == ir::OpKind::For && op->hasAttr("warp_specialized"))
        return op.get();
    internalError("a loop split for warp specialization holds no warp-specialized loop");
  }

  // Lowers a region and returns its yield (left in the insertion block it ends in).
  const ir::Op *lowerRegion(const ir::Block &region) {
    yields_.push_back(nullptr);
    lowerBlock(region);
    const ir::Op *yield = yields_.back();
    yields_.pop_back();
    return yield;
  }

  // if/else on a program-uniform scalar: every thread takes the same branch, so the branches
  // may hold barriers. The results are phis of each branch's yield.
  void lowerIf(const ir::Op &op) {
    auto &b = l_.b;
    auto *thenBB = llvm::BasicBlock::Create(l_.ctx, "if.then", l_.fn);
    auto *elseBB = llvm::BasicBlock::Create(l_.ctx, "if.else", l_.fn);
    auto *merge = llvm::BasicBlock::Create(l_.ctx, "if.end", l_.fn);
    b.CreateCondBr(l_.get(op.operand(0))[0], thenBB, elseBB);
    std::vector<std::pair<llvm::BasicBlock *, std::vector<Elements>>> arms;
    for (auto [bb, r] : {std::pair{thenBB, 0u}, std::pair{elseBB, 1u}}) {
      b.SetInsertPoint(bb);
      const ir::Op *yield = lowerRegion(*op.region(r));
      std::vector<Elements> vals;
      for (unsigned i = 0; i < op.numResults(); ++i)
        vals.push_back(l_.get(yield->operand(i)));
      arms.emplace_back(b.GetInsertBlock(), std::move(vals));
      b.CreateBr(merge);
    }
    b.SetInsertPoint(merge);
    for (unsigned i = 0; i < op.numResults(); ++i) {
      Elements out;
      for (size_t e = 0; e < arms[0].second[i].size(); ++e) {
        llvm::PHINode *phi = b.CreatePHI(arms[0].second[i][e]->getType(), 2);
        for (auto &[bb, vals] : arms)
          phi->addIncoming(vals[i].at(e), bb);
        out.push_back(phi);
      }
      l_.set(op.result(i), std::move(out));
    }
  }

  // while: a header of phis for the carried values runs the condition region, then the body
  // region loops back to it.
  void lowerWhile(const ir::Op &op) {
    auto &b = l_.b;
    llvm::BasicBlock *pre = b.GetInsertBlock();
    auto *header = llvm::BasicBlock::Create(l_.ctx, "while.cond", l_.fn);
    auto *bodyBB = llvm::BasicBlock::Create(l_.ctx, "while.body", l_.fn);
    auto *exit = llvm::BasicBlock::Create(l_.ctx, "while.end", l_.fn);
    b.CreateBr(header);
    b.SetInsertPoint(header);
    std::vector<std::vector<llvm::PHINode *>> phis;
    for (unsigned i = 0; i < op.numOperands(); ++i) {
      std::vector<llvm::PHINode *> ps;
      Elements elems;
      for (llvm::Value *init : l_.get(op.operand(i))) {
        llvm::PHINode *phi = b.CreatePHI(init->getType(), 2);
        phi->addIncoming(init, pre);
        ps.push_back(phi);
        elems.push_back(phi);
      }
      l_.set(op.region(0)->argument(i), elems);
      l_.set(op.region(1)->argument(i), elems);
      l_.set(op.result(i), elems);
      phis.push_back(ps);
    }
    const ir::Op *check = lowerRegion(*op.region(0));
    b.CreateCondBr(l_.get(check->operand(0))[0], bodyBB, exit);
    b.SetInsertPoint(bodyBB);
    const ir::Op *yield = lowerRegion(*op.region(1));
    llvm::BasicBlock *latch = b.GetInsertBlock();
    for (unsigned i = 0; i < op.numOperands(); ++i) {
      const Elements &next = l_.get(yield->operand(i));
      for (size_t e = 0; e < next.size(); ++e)
        phis[i][e]->addIncoming(next[e], latch);
    }
    b.CreateBr(header);
    b.SetInsertPoint(exit);
  }

  Lowering &l_;
  std::vector<const ir::Op *> yields_;
};

} // namespace

std::unique_ptr<llvm::Module> lowerToLLVM(const ir::Function &kernel, llvm::LLVMContext &ctx,
                                          int numWarps, int ptxVersion, int sm) {
  auto mod = std::make_unique<llvm::Module>(kernel.name(), ctx);
  Lowering l(*mod, kernel, numWarps, ptxVersion, sm);
  FunctionLowering(l).run();
  std::string err;
  llvm::raw_string_ostream os(err);
  if (llvm::verifyModule(*mod, &os))
    internalError("lowering produced invalid LLVM IR: " + err + "\n--- GIR ---\n" +
                  ir::print(kernel));
  return mod;
}

} // namespace tritium::codegen
