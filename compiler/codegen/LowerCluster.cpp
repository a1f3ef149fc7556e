// Lowering of thread-block cluster ops (sm_90). A cluster exchange shares one uniform scalar per
// program: threads 0..C-1 of each program send its value into slot `rank` of program 0..C-1's
// shared memory with st.async, whose bytes complete a transaction on that program's mbarrier;
// every program waits until its own mbarrier has counted C values per exchange, then reads its C
// slots: a reduction combines them in rank order, so all programs of the cluster get
// bit-identical results; a gather keeps them. Adjacent exchanges that do not use each other's
// results form one batch that shares one mbarrier phase.
//
// No cluster barrier per batch: its release semantics made every thread wait until its earlier
// global stores (the previous row's output) had landed, which stalled long rows (ncu: "membar").
// Reuse of the slots is safe without it. Each exchange site has two banks of slots, each bank
// its own mbarrier, and consecutive batches alternate between them (a batch counter kept in a
// local variable, which SROA turns into a register). A bank is written again only two batches
// later: a peer sends batch j + 2 only after it has received batch j + 1 from this program, which
// this program sends only after a CTA barrier that follows every thread's reads of batch j. The
// mbarrier's phase parity is (j / 2) % 2, and a phase cannot complete early: bytes for batch
// j + 2 cannot arrive before this program has passed batch j's wait. The kernel's entry sets up
// the mbarriers and has one cluster barrier, so that no program writes into a peer that has not
// started; none is needed at the exit, because a program exits only after its last exchange
// has counted every peer's bytes into it.
#include "compiler/codegen/Mbarrier.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

#include <limits>
#include <optional>

namespace tritium::codegen {

bool isClusterExchange(const ir::Op &op) {
  return (op.kind() == ir::OpKind::ClusterMax || op.kind() == ir::OpKind::ClusterSum ||
          op.kind() == ir::OpKind::ClusterGather) &&
         !isClusterBlockExchange(op);
}

namespace {

bool hasClusterExchange(const ir::Function &fn) {
  bool found = false;
  ir::walk(const_cast<ir::Block &>(fn.body()), [&](ir::Op &op) {
    found = found || isClusterExchange(op) || isClusterBlockExchange(op);
  });
  return found;
}

// One op of a batch: its value as exchanged (16-bit floats widen to f32) and its slots in the
// bank this batch uses.
struct Exchange {
  const ir::Op *op = nullptr;
  llvm::Type *resultTy = nullptr, *slotTy = nullptr;
  llvm::Value *value = nullptr, *slots = nullptr;
  bool isFloat = false;
};

llvm::Value *narrow(Lowering &l, const Exchange &e, llvm::Value *v) {
  return e.slotTy == e.resultTy ? v : l.b.CreateFPTrunc(v, e.resultTy);
}

} // namespace

int64_t clusterSize(const ir::Function &fn) { return fn.intAttr("cluster_size").value_or(1); }

llvm::Value *combineInCluster(Lowering &l, const ir::Op &op, bool isFloat, llvm::Value *x,
                              llvm::Value *y) {
  auto &b = l.b;
  if (op.kind() == ir::OpKind::ClusterMax)
    return b.CreateBinaryIntrinsic(isFloat ? llvm::Intrinsic::maximum : llvm::Intrinsic::smax, x,
                                   y);
  return isFloat ? b.CreateFAdd(x, y) : b.CreateAdd(x, y);
}

// The mbarrier of bank `bank` (i32), as a shared address.
static llvm::Value *bankBarrier(Lowering &l, llvm::Value *bank) {
  auto &b = l.b;
  std::optional<int64_t> barriers = l.kernel.intAttr("cluster_barriers");
  if (!barriers)
    internalError("cluster exchanges need the 'shared' pass (no cluster_barriers attribute)");
  return sharedAddress(l, b.CreateAdd(b.getInt32(int32_t(*barriers)),
                                      b.CreateMul(bank, b.getInt32(8))));
}

// Exchanges go by st.async (PTX ISA 8.1) and mbarriers, or else by a cluster barrier each.
static bool asyncExchanges(const Lowering &l) { return l.ptxVersion >= 81; }

void clusterEntry(Lowering &l) {
  if (clusterSize(l.kernel) == 1 || !hasClusterExchange(l.kernel))
    return;
  auto &b = l.b;
  std::vector<const ir::Op *> blocks;
  ir::walk(const_cast<ir::Block &>(l.kernel.body()), [&](ir::Op &op) {
    if (isClusterBlockExchange(op))
      blocks.push_back(&op);
  });
  bool banks = asyncExchanges(l) && l.kernel.intAttr("cluster_barriers");
  if (banks || !blocks.empty()) {
    // Thread 0 sets up both banks' mbarriers (one arrival each: its own expect_tx), and those
    // of each block exchange; the cluster barrier (release, acquire) publishes them to the peers
    // before any peer sends.
    l.ifThen(b.CreateICmpEQ(l.tid, b.getInt32(0)), "cluster.init", [&] {
      if (banks)
        for (int bank = 0; bank < 2; ++bank)
          emitAsm(l, "mbarrier.init.shared::cta.b64 [$0], 1;", "r",
                  {bankBarrier(l, b.getInt32(bank))});
      for (const ir::Op *op : blocks)
        clusterBlockEntry(l, *op);
      emitAsm(l, "fence.mbarrier_init.release.cluster;", "", {});
    });
    l.intrinsic(llvm::Intrinsic::nvvm_barrier_cluster_arrive_aligned, {}, {});
  } else { // only that every peer has started
    l.intrinsic(llvm::Intrinsic::nvvm_barrier_cluster_arrive_relaxed_aligned, {}, {});
  }
  l.intrinsic(llvm::Intrinsic::nvvm_barrier_cluster_wait_aligned, {}, {});
  // In the entry block, where SROA turns it into a register: an alloca after the set-up's
  // branches would stay in local memory, read and written at every exchange.
  llvm::BasicBlock &entry = l.fn->getEntryBlock();
  llvm::IRBuilder<> atEntry(&entry, entry.getFirstInsertionPt());
  l.clusterBatch = atEntry.CreateAlloca(b.getInt32Ty(), nullptr, "cluster.batch");
  b.CreateStore(b.getInt32(0), l.clusterBatch);
}

bool lowerCluster(Lowering &l, const ir::Op &op) {
  if (op.kind() != ir::OpKind::ClusterRank)
    return false;
  l.set(op.result(), {clusterSize(l.kernel) > 1
                          ? l.intrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_ctarank, {}, {})
                          : l.b.getInt32(0)});
  return true;
}

// Sends the batch with st.async into the peers' slots, counted by this bank's mbarrier
// (`barrier`), and waits until the peers' `bytes` have landed here.
static void sendAsync(Lowering &l, const std::vector<Exchange> &exchanges, llvm::Value *rank,
                      llvm::Value *barrier, llvm::Value *parity, int64_t bytes) {
  auto &b = l.b;
  int64_t size = clusterSize(l.kernel);
  // Every thread has read this bank's previous batch (two batches ago) before any peer can be
  // sent this one, which lets it send the next batch into the bank (see the top of the file).
  l.barrier();
  // Thread 0 announces the bytes this bank will receive; threads 0..C-1 send every value of the
  // batch into program `tid`'s slot `rank`.
  l.ifThen(b.CreateICmpEQ(l.tid, b.getInt32(0)), "cluster.announce", [&] {
    emitAsm(l, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r",
            {barrier, b.getInt32(int32_t(bytes))});
  });
  l.ifThen(b.CreateICmpULT(l.tid, b.getInt32(int32_t(size))), "cluster.write", [&] {
    for (const Exchange &e : exchanges) {
      llvm::Value *mine = b.CreateGEP(e.slotTy, e.slots, rank);
      llvm::Value *slot = b.CreateTrunc(b.CreatePtrToInt(mine, b.getInt64Ty()), b.getInt32Ty());
      bool wide = l.mod.getDataLayout().getTypeStoreSize(e.slotTy) == 8;
      llvm::Type *bitsTy = wide ? b.getInt64Ty() : b.getInt32Ty();
      llvm::Value *bits = e.slotTy == bitsTy ? e.value : b.CreateBitCast(e.value, bitsTy);
      emitAsm(l,
              std::string("{\n\t.reg .b32 slot, bar;\n\t"
                          "mapa.shared::cluster.u32 slot, $0, $2;\n\t"
                          "mapa.shared::cluster.u32 bar, $1, $2;\n\t"
                          "st.async.shared::cluster.mbarrier::complete_tx::bytes") +
                  (wide ? ".b64" : ".b32") + " [slot], $3, [bar];\n\t}",
              wide ? "r,r,r,l" : "r,r,r,r", {slot, barrier, l.tid, bits});
    }
  });
  waitParity(l, barrier, parity);
}

// PTX ISA 8.0 has no st.async: plain stores into the peers' slots (mapa, st.shared::cluster),
// published by a cluster barrier (arrive.release, wait.acquire). The barrier of the batch in
// between also orders every program's reads of a bank before its next writes.
static void storeThenSync(Lowering &l, const std::vector<Exchange> &exchanges,
                          llvm::Value *rank) {
  auto &b = l.b;
  l.ifThen(b.CreateICmpULT(l.tid, b.getInt32(int32_t(clusterSize(l.kernel)))), "cluster.write",
           [&] {
             for (const Exchange &e : exchanges) {
               llvm::Value *mine = b.CreateGEP(e.slotTy, e.slots, rank);
               b.CreateStore(e.value, l.intrinsic(llvm::Intrinsic::nvvm_mapa_shared_cluster, {},
                                                  {mine, l.tid}));
             }
           });
  l.intrinsic(llvm::Intrinsic::nvvm_barrier_cluster_arrive_aligned, {}, {}); // release
  l.intrinsic(llvm::Intrinsic::nvvm_barrier_cluster_wait_aligned, {}, {});   // acquire
}

void lowerClusterExchanges(Lowering &l, const std::vector<const ir::Op *> &batch) {
  auto &b = l.b;
  int64_t size = clusterSize(l.kernel);
  if (size == 1) { // every value is the program's own
    for (const ir::Op *op : batch) {
      llvm::Value *x = l.get(op->operand(0))[0];
      l.set(op->result(), {x}); // a gather's block<1> holds one element per thread: x
    }
    return;
  }
  // This batch's number j: bank j % 2, whose mbarrier completes phase j / 2 for it.
  llvm::Value *number = b.CreateLoad(b.getInt32Ty(), l.clusterBatch);
  b.CreateStore(b.CreateAdd(number, b.getInt32(1)), l.clusterBatch);
  llvm::Value *bank = b.CreateAnd(number, b.getInt32(1));
  llvm::Value *parity = b.CreateAnd(b.CreateLShr(number, b.getInt32(1)), b.getInt32(1));
  llvm::Value *rank = l.intrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_ctarank, {}, {});
  std::vector<Exchange> exchanges;
  int64_t batchBytes = 0;
  for (const ir::Op *op : batch) {
    Exchange e;
    e.op = op;
    llvm::Value *in = l.get(op->operand(0))[0];
    e.isFloat = op->operand(0)->type().isFloat();
    e.resultTy = in->getType();
    e.slotTy = e.isFloat && !e.resultTy->isFloatTy() ? b.getFloatTy() : e.resultTy;
    e.value = e.slotTy == e.resultTy ? in : b.CreateFPExt(in, e.slotTy);
    llvm::Value *site = b.CreateGEP(b.getInt8Ty(), l.smem, b.getInt64(op->intAttr("smem_offset")));
    e.slots = b.CreateGEP(e.slotTy, site, b.CreateMul(bank, b.getInt32(int32_t(size))));
    batchBytes += int64_t(l.mod.getDataLayout().getTypeStoreSize(e.slotTy));
    exchanges.push_back(e);
  }
  if (asyncExchanges(l))
    sendAsync(l, exchanges, rank, bankBarrier(l, bank), parity, batchBytes * size);
  else
    storeThenSync(l, exchanges, rank);

  for (const Exchange &e : exchanges) {
    if (e.op->kind() == ir::OpKind::ClusterGather) {
      // This thread's lane r of the block: program r's value, or `other` past the cluster.
      llvm::Value *r = l.elementIndex(e.op->result(), 0);
      llvm::Value *inCluster = b.CreateICmpULT(r, b.getInt32(int32_t(size)));
      llvm::Value *slot = b.CreateSelect(inCluster, r, b.getInt32(0));
      llvm::Value *v = narrow(l, e, b.CreateLoad(e.slotTy, b.CreateGEP(e.slotTy, e.slots, slot)));
      l.set(e.op->result(), {b.CreateSelect(inCluster, v, l.get(e.op->operand(1))[0])});
      continue;
    }
    llvm::Value *total = nullptr;
    for (int64_t r = 0; r < size; ++r) {
      llvm::Value *part =
          b.CreateLoad(e.slotTy, b.CreateGEP(e.slotTy, e.slots, b.getInt32(int32_t(r))));
      total = total ? combineInCluster(l, *e.op, e.isFloat, total, part) : part;
    }
    l.set(e.op->result(), {narrow(l, e, total)});
  }
}

} // namespace tritium::codegen
