// Lowering of thread-block cluster ops (sm_90). A cluster reduction combines one uniform scalar
// per program: threads 0..C-1 of each program store its value into slot `rank` of program
// 0..C-1's shared memory (mapa + st.shared::cluster), one cluster barrier (arrive.release,
// wait.acquire) publishes the stores, and every program combines its own C slots in rank order,
// so all programs of the cluster get bit-identical results.
//
// One barrier per reduction is enough because each reduction site has two banks of slots and
// consecutive cluster reductions alternate between them (a counter kept in a local variable,
// which SROA turns into a register). A bank is written again only two reductions later, and the
// barrier of the reduction in between orders every program's reads of the old values before
// any peer's writes of the new ones. The kernel's entry has one barrier so that no program
// writes into a peer that has not started; no barrier is needed at the exit, because all writes
// into a program land before its last reduction's barrier completes.
#include "compiler/codegen/Lowering.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

#include <limits>

namespace tritium::codegen {

namespace {

bool isClusterReduction(const ir::Op &op) {
  return op.kind() == ir::OpKind::ClusterMax || op.kind() == ir::OpKind::ClusterSum;
}

bool hasClusterReduction(const ir::Function &fn) {
  bool found = false;
  ir::walk(const_cast<ir::Block &>(fn.body()),
           [&](ir::Op &op) { found = found || isClusterReduction(op); });
  return found;
}

} // namespace

int64_t clusterSize(const ir::Function &fn) { return fn.intAttr("cluster_size").value_or(1); }

void clusterEntry(Lowering &l) {
  if (clusterSize(l.kernel) == 1 || !hasClusterReduction(l.kernel))
    return;
  auto &b = l.b;
  l.intrinsic(llvm::Intrinsic::nvvm_barrier_cluster_arrive_relaxed_aligned, {}, {});
  l.intrinsic(llvm::Intrinsic::nvvm_barrier_cluster_wait_aligned, {}, {});
  l.clusterBank = b.CreateAlloca(b.getInt32Ty(), nullptr, "cluster.bank");
  b.CreateStore(b.getInt32(0), l.clusterBank);
}

bool lowerCluster(Lowering &l, const ir::Op &op) {
  auto &b = l.b;
  int64_t size = clusterSize(l.kernel);
  if (op.kind() == ir::OpKind::ClusterRank) {
    l.set(op.result(), {size > 1 ? l.intrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_ctarank,
                                               {}, {})
                                 : b.getInt32(0)});
    return true;
  }
  if (!isClusterReduction(op))
    return false;
  llvm::Value *in = l.get(op.operand(0))[0];
  if (size == 1) {
    l.set(op.result(), {in});
    return true;
  }
  llvm::Type *resultTy = in->getType();
  bool isFloat = op.operand(0)->type().isFloat();
  bool narrow = isFloat && !resultTy->isFloatTy(); // f16/bf16 combine in f32
  llvm::Type *accTy = narrow ? b.getFloatTy() : resultTy;
  llvm::Value *acc = narrow ? b.CreateFPExt(in, accTy) : in;
  bool isMax = op.kind() == ir::OpKind::ClusterMax;
  auto combine = [&](llvm::Value *x, llvm::Value *y) -> llvm::Value * {
    if (isMax)
      return b.CreateBinaryIntrinsic(isFloat ? llvm::Intrinsic::maximum : llvm::Intrinsic::smax,
                                     x, y);
    return isFloat ? b.CreateFAdd(x, y) : b.CreateAdd(x, y);
  };

  // This reduction's bank of slots, and the next reduction's.
  llvm::Value *bank = b.CreateLoad(b.getInt32Ty(), l.clusterBank);
  b.CreateStore(b.CreateXor(bank, b.getInt32(1)), l.clusterBank);
  llvm::Value *site = b.CreateGEP(b.getInt8Ty(), l.smem, b.getInt64(op.intAttr("smem_offset")));
  llvm::Value *slots = b.CreateGEP(accTy, site, b.CreateMul(bank, b.getInt32(int32_t(size))));
  llvm::Value *rank = l.intrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_ctarank, {}, {});
  auto *write = llvm::BasicBlock::Create(l.ctx, "cluster.write", l.fn);
  auto *join = llvm::BasicBlock::Create(l.ctx, "cluster.join", l.fn);
  b.CreateCondBr(b.CreateICmpULT(l.tid, b.getInt32(int32_t(size))), write, join);
  b.SetInsertPoint(write);
  llvm::Value *mine = b.CreateGEP(accTy, slots, rank);
  llvm::Value *remote = l.intrinsic(llvm::Intrinsic::nvvm_mapa_shared_cluster, {}, {mine, l.tid});
  b.CreateStore(acc, remote);
  b.CreateBr(join);
  b.SetInsertPoint(join);
  l.intrinsic(llvm::Intrinsic::nvvm_barrier_cluster_arrive_aligned, {}, {}); // release
  l.intrinsic(llvm::Intrinsic::nvvm_barrier_cluster_wait_aligned, {}, {});   // acquire
  llvm::Value *total = nullptr;
  for (int64_t r = 0; r < size; ++r) {
    llvm::Value *part = b.CreateLoad(accTy, b.CreateGEP(accTy, slots, b.getInt32(int32_t(r))));
    total = total ? combine(total, part) : part;
  }
  l.set(op.result(), {narrow ? b.CreateFPTrunc(total, resultTy) : total});
  return true;
}

} // namespace tritium::codegen
