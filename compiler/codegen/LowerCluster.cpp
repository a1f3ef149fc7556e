// Lowering of thread-block cluster ops (sm_90). A cluster reduction combines one uniform scalar
// per program: threads 0..C-1 of each program store its value into slot `rank` of program
// 0..C-1's shared memory (mapa + st.shared::cluster), a cluster barrier publishes the stores,
// and every program combines its own C slots in rank order, so all programs of the cluster get
// bit-identical results.
//
// Barrier phases: the kernel's entry arrives once (clusterEntry), each reduction waits for the
// previous phase before writing (every program has started, or has finished reading the slots
// of the previous reduction), arrives and waits around its stores, and arrives again after
// reading its slots; the kernel's exit waits for that last phase (clusterExit). So each
// reduction costs one barrier on its critical path, and slot reuse across loop iterations is
// safe without a second one.
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
  if (clusterSize(l.kernel) > 1 && hasClusterReduction(l.kernel))
    l.intrinsic(llvm::Intrinsic::nvvm_barrier_cluster_arrive_relaxed_aligned, {}, {});
}

void clusterExit(Lowering &l) {
  // No program may leave while a peer could still write into its shared memory.
  if (clusterSize(l.kernel) > 1 && hasClusterReduction(l.kernel))
    l.intrinsic(llvm::Intrinsic::nvvm_barrier_cluster_wait_aligned, {}, {});
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

  llvm::Value *slots =
      b.CreateGEP(b.getInt8Ty(), l.smem, b.getInt64(op.intAttr("smem_offset")));
  llvm::Value *rank = l.intrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_ctarank, {}, {});
  l.intrinsic(llvm::Intrinsic::nvvm_barrier_cluster_wait_aligned, {}, {});
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
  // Release: these reads happen before any peer's next store into the slots.
  l.intrinsic(llvm::Intrinsic::nvvm_barrier_cluster_arrive_aligned, {}, {});
  l.set(op.result(), {narrow ? b.CreateFPTrunc(total, resultTy) : total});
  return true;
}

} // namespace tritium::codegen
