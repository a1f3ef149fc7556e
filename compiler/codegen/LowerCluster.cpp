// Lowering of thread-block cluster ops (sm_90). A cluster exchange shares one uniform scalar per
// program: threads 0..C-1 of each program store its value into slot `rank` of program 0..C-1's
// shared memory (mapa + st.shared::cluster), one cluster barrier (arrive.release, wait.acquire)
// publishes the stores, and every program reads its own C slots: a reduction combines them in
// rank order, so all programs of the cluster get bit-identical results; a gather keeps them.
// Adjacent exchanges that do not use each other's results form one batch with one barrier.
//
// One barrier per batch is enough because each exchange site has two banks of slots and
// consecutive batches alternate between them (a counter kept in a local variable,
// which SROA turns into a register). A bank is written again only two batches later, and the
// barrier of the batch in between orders every program's reads of the old values before
// any peer's writes of the new ones. The kernel's entry has one barrier so that no program
// writes into a peer that has not started; no barrier is needed at the exit, because all writes
// into a program land before its last reduction's barrier completes.
#include "compiler/codegen/Lowering.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

#include <limits>

namespace tritium::codegen {

bool isClusterExchange(const ir::Op &op) {
  return op.kind() == ir::OpKind::ClusterMax || op.kind() == ir::OpKind::ClusterSum ||
         op.kind() == ir::OpKind::ClusterGather;
}

namespace {

bool hasClusterExchange(const ir::Function &fn) {
  bool found = false;
  ir::walk(const_cast<ir::Block &>(fn.body()),
           [&](ir::Op &op) { found = found || isClusterExchange(op); });
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

llvm::Value *combine(Lowering &l, const Exchange &e, llvm::Value *x, llvm::Value *y) {
  auto &b = l.b;
  if (e.op->kind() == ir::OpKind::ClusterMax)
    return b.CreateBinaryIntrinsic(e.isFloat ? llvm::Intrinsic::maximum : llvm::Intrinsic::smax,
                                   x, y);
  return e.isFloat ? b.CreateFAdd(x, y) : b.CreateAdd(x, y);
}

llvm::Value *narrow(Lowering &l, const Exchange &e, llvm::Value *v) {
  return e.slotTy == e.resultTy ? v : l.b.CreateFPTrunc(v, e.resultTy);
}

} // namespace

int64_t clusterSize(const ir::Function &fn) { return fn.intAttr("cluster_size").value_or(1); }

void clusterEntry(Lowering &l) {
  if (clusterSize(l.kernel) == 1 || !hasClusterExchange(l.kernel))
    return;
  auto &b = l.b;
  l.intrinsic(llvm::Intrinsic::nvvm_barrier_cluster_arrive_relaxed_aligned, {}, {});
  l.intrinsic(llvm::Intrinsic::nvvm_barrier_cluster_wait_aligned, {}, {});
  l.clusterBank = b.CreateAlloca(b.getInt32Ty(), nullptr, "cluster.bank");
  b.CreateStore(b.getInt32(0), l.clusterBank);
}

bool lowerCluster(Lowering &l, const ir::Op &op) {
  if (op.kind() != ir::OpKind::ClusterRank)
    return false;
  l.set(op.result(), {clusterSize(l.kernel) > 1
                          ? l.intrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_ctarank, {}, {})
                          : l.b.getInt32(0)});
  return true;
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
  // This batch's bank of slots, and the next batch's.
  llvm::Value *bank = b.CreateLoad(b.getInt32Ty(), l.clusterBank);
  b.CreateStore(b.CreateXor(bank, b.getInt32(1)), l.clusterBank);
  llvm::Value *rank = l.intrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_ctarank, {}, {});
  std::vector<Exchange> exchanges;
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
    exchanges.push_back(e);
  }

  // Threads 0..C-1 store every value of the batch into program `tid`'s slot `rank`.
  auto *write = llvm::BasicBlock::Create(l.ctx, "cluster.write", l.fn);
  auto *join = llvm::BasicBlock::Create(l.ctx, "cluster.join", l.fn);
  b.CreateCondBr(b.CreateICmpULT(l.tid, b.getInt32(int32_t(size))), write, join);
  b.SetInsertPoint(write);
  for (const Exchange &e : exchanges) {
    llvm::Value *mine = b.CreateGEP(e.slotTy, e.slots, rank);
    b.CreateStore(e.value,
                  l.intrinsic(llvm::Intrinsic::nvvm_mapa_shared_cluster, {}, {mine, l.tid}));
  }
  b.CreateBr(join);
  b.SetInsertPoint(join);
  l.intrinsic(llvm::Intrinsic::nvvm_barrier_cluster_arrive_aligned, {}, {}); // release
  l.intrinsic(llvm::Intrinsic::nvvm_barrier_cluster_wait_aligned, {}, {});   // acquire

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
      total = total ? combine(l, e, total, part) : part;
    }
    l.set(e.op->result(), {narrow(l, e, total)});
  }
}

} // namespace tritium::codegen
