// Lowering of cluster_sum and cluster_max of blocks (sm_90): every program of a cluster of C gets
// the element-wise sum (or maximum) of the C programs' blocks, combined in rank order, so all of
// them hold the same bits. Two rounds of bulk copies between the programs' shared memories, each
// moving one block's worth of bytes per program whatever C is (sending each whole block to every
// peer would move C times as many): program r owns strip r of the elements (S of them in
// row-major order, S a multiple of 4 so that a strip is whole 16-byte units). Each program
// stages its block in shared memory; in round 1 it copies strip q to program q, slot [r]; in
// round 2 program r combines the C copies of its strip, writes the result over its own strip of
// the staging area and copies it to the same place in every other program; all then read their
// elements back in their own layout.
//
// One bulk copy (cp.async.bulk.shared::cluster) per strip, not a store per element: element-wise
// st.async took 5 to 25 us on the H200 (docs/notes/column-sum.md, cluster sums). Each round's bytes
// complete a transaction on the receiver's mbarrier, and the receiver waits for the bytes it
// expects; no fence orders the program's earlier global stores. The op sits at the kernel's top
// level and runs once, so each of its two mbarriers (set up at the kernel's entry, before the
// entry's cluster barrier) completes one phase, of parity 0. The staging area takes the result
// in place: program r overwrites strip r only after its own round-1 copy of it has landed (its
// round-1 wait counts it), and a peer q writes strip q of it only after program r's round-1 copy
// of strip q has landed in q. A relaxed cluster barrier at the end keeps every program until its
// outgoing copies have been read out of its shared memory (each program passes it only after
// receiving everything).
#include "compiler/codegen/Mbarrier.h"
#include "compiler/gpu/GpuPasses.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

namespace tritium::codegen {

bool isClusterBlockExchange(const ir::Op &op) {
  return (op.kind() == ir::OpKind::ClusterMax || op.kind() == ir::OpKind::ClusterSum) &&
         op.result()->type().isBlock();
}

namespace {

// One op of the batch and where its bytes go.
struct BlockExchange {
  const ir::Op *op = nullptr;
  const ir::Value *in = nullptr;
  llvm::Type *elementTy = nullptr, *slotTy = nullptr; // slotTy: what travels (32 or 64 bits)
  bool isFloat = false;
  int64_t strip = 0, bytes = 0;
  int64_t stageOffset = 0, gatherOffset = 0, barriersOffset = 0; // shared-memory bytes
};

llvm::Value *toSlot(Lowering &l, const BlockExchange &e, llvm::Value *v) {
  auto &b = l.b;
  if (e.slotTy == e.elementTy)
    return v;
  return e.isFloat ? b.CreateFPExt(v, e.slotTy) : b.CreateSExt(v, e.slotTy);
}

llvm::Value *fromSlot(Lowering &l, const BlockExchange &e, llvm::Value *v) {
  auto &b = l.b;
  if (e.slotTy == e.elementTy)
    return v;
  return e.isFloat ? b.CreateFPTrunc(v, e.elementTy) : b.CreateTrunc(v, e.elementTy);
}

// Byte `offset` plus slot `index` (i32) of shared memory: its 32-bit address, or a pointer.
llvm::Value *slotOffset(Lowering &l, const BlockExchange &e, int64_t offset, llvm::Value *index) {
  auto &b = l.b;
  return b.CreateAdd(b.getInt32(int32_t(offset)), b.CreateMul(index, b.getInt32(int32_t(e.bytes))));
}
llvm::Value *slotPointer(Lowering &l, const BlockExchange &e, int64_t offset, llvm::Value *index) {
  auto &b = l.b;
  return b.CreateGEP(b.getInt8Ty(), l.smem,
                     b.CreateZExt(slotOffset(l, e, offset, index), b.getInt64Ty()));
}

llvm::Value *barrierAddress(Lowering &l, const BlockExchange &e, int round) {
  return sharedAddress(l, l.b.getInt32(int32_t(e.barriersOffset + 8 * round)));
}

// Copies `bytes` from this program's shared memory at `from` to program `peer`'s at `to` (both
// shared offsets, i32), counted by the peer's mbarrier at this program's offset `barrier`.
void copyToPeer(Lowering &l, llvm::Value *to, llvm::Value *from, llvm::Value *barrier,
                llvm::Value *peer, int64_t bytes) {
  emitAsm(
      l,
      "{\n\t.reg .b32 dst, bar;\n\t"
      "mapa.shared::cluster.u32 dst, $0, $3;\n\t"
      "mapa.shared::cluster.u32 bar, $2, $3;\n\t"
      "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes "
      "[dst], [$1], $4, [bar];\n\t}",
      "r,r,r,r,r",
      {sharedAddress(l, to), sharedAddress(l, from), barrier, peer, l.b.getInt32(int32_t(bytes))});
}

// Every thread's writes to shared memory so far become visible to bulk copies (the async
// proxy) that one thread issues after the CTA barrier.
void publishToCopies(Lowering &l) {
  emitAsm(l, "fence.proxy.async.shared::cta;", "", {});
  l.barrier();
}

} // namespace

void clusterBlockEntry(Lowering &l, const ir::Op &op) {
  // Two mbarriers, one arrival each (thread 0's expect_tx); the caller, thread 0, publishes
  // them with the entry's fence and cluster barrier.
  BlockExchange e;
  e.barriersOffset = op.intAttr("smem_barriers");
  for (int round = 0; round < 2; ++round)
    emitAsm(l, "mbarrier.init.shared::cta.b64 [$0], 1;", "r", {barrierAddress(l, e, round)});
}

void lowerClusterBlockExchanges(Lowering &l, const std::vector<const ir::Op *> &batch) {
  auto &b = l.b;
  int64_t size = clusterSize(l.kernel);
  if (size == 1) { // every block is the program's own
    for (const ir::Op *op : batch)
      l.set(op->result(), l.get(op->operand(0)));
    return;
  }
  llvm::Value *rank = l.intrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_ctarank, {}, {});
  std::vector<BlockExchange> exchanges;
  for (const ir::Op *op : batch) {
    BlockExchange e;
    e.op = op;
    e.in = op->operand(0);
    const ir::Type &t = e.in->type();
    e.isFloat = t.isFloat();
    e.bytes = reduceSlotBytes(t);
    e.elementTy = l.elementType(t);
    e.slotTy = e.isFloat ? (e.bytes == 8 ? b.getDoubleTy() : b.getFloatTy())
                         : (e.bytes == 8 ? b.getInt64Ty() : b.getInt32Ty());
    e.strip = clusterBlockStrip(t, size);
    e.stageOffset = op->intAttr("smem_offset");
    e.gatherOffset = op->intAttr("smem_gather");
    e.barriersOffset = op->intAttr("smem_barriers");
    exchanges.push_back(e);
  }
  llvm::Value *isThread0 = b.CreateICmpEQ(l.tid, b.getInt32(0));
  // Thread 0 announces both rounds' bytes: a strip from every program, then every other
  // program's strip of the result.
  l.ifThen(isThread0, "cluster.block.announce", [&] {
    for (const BlockExchange &e : exchanges) {
      int64_t strip = e.strip * e.bytes;
      emitAsm(l, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r",
              {barrierAddress(l, e, 0), b.getInt32(int32_t(size * strip))});
      emitAsm(l, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r",
              {barrierAddress(l, e, 1), b.getInt32(int32_t((size - 1) * strip))});
    }
  });
  // Round 1: the block staged in row-major order (copies of an element write the same value),
  // then strip q to program q, slot [rank], one thread per peer.
  for (const BlockExchange &e : exchanges) {
    const Elements &values = l.get(e.in);
    for (int64_t k = 0; k < int64_t(values.size()); ++k)
      b.CreateStore(toSlot(l, e, values[size_t(k)]),
                    slotPointer(l, e, e.stageOffset, l.rowMajorIndex(e.in, k)));
  }
  publishToCopies(l);
  l.ifThen(b.CreateICmpULT(l.tid, b.getInt32(int32_t(size))), "cluster.block.scatter", [&] {
    for (const BlockExchange &e : exchanges) {
      llvm::Value *strip = b.getInt32(int32_t(e.strip));
      copyToPeer(l, slotOffset(l, e, e.gatherOffset, b.CreateMul(rank, strip)),
                 slotOffset(l, e, e.stageOffset, b.CreateMul(l.tid, strip)),
                 barrierAddress(l, e, 0), l.tid, e.strip * e.bytes);
    }
  });
  // Round 2: this program's strip combined in rank order over its own strip of the staging
  // area, then copied to every other program.
  for (const BlockExchange &e : exchanges) {
    waitParity(l, barrierAddress(l, e, 0), b.getInt32(0));
    llvm::Value *start = b.CreateMul(rank, b.getInt32(int32_t(e.strip)));
    int64_t perThread = (e.strip + l.threads() - 1) / l.threads();
    for (int64_t j = 0; j < perThread; ++j) {
      llvm::Value *i = b.CreateAdd(l.tid, b.getInt32(int32_t(j * l.threads())));
      l.ifThen(b.CreateICmpULT(i, b.getInt32(int32_t(e.strip))), "cluster.block.combine", [&] {
        llvm::Value *total = nullptr;
        for (int64_t q = 0; q < size; ++q) {
          llvm::Value *slot = b.CreateAdd(b.getInt32(int32_t(q * e.strip)), i);
          llvm::Value *part = b.CreateLoad(e.slotTy, slotPointer(l, e, e.gatherOffset, slot));
          total = total ? combineInCluster(l, *e.op, e.isFloat, total, part) : part;
        }
        b.CreateStore(total, slotPointer(l, e, e.stageOffset, b.CreateAdd(start, i)));
      });
    }
  }
  publishToCopies(l);
  llvm::Value *toPeer =
      b.CreateAnd(b.CreateICmpULT(l.tid, b.getInt32(int32_t(size))), b.CreateICmpNE(l.tid, rank));
  l.ifThen(toPeer, "cluster.block.gather", [&] {
    for (const BlockExchange &e : exchanges) {
      llvm::Value *at =
          slotOffset(l, e, e.stageOffset, b.CreateMul(rank, b.getInt32(int32_t(e.strip))));
      copyToPeer(l, at, at, barrierAddress(l, e, 1), l.tid, e.strip * e.bytes);
    }
  });
  // Every program's result, read back in this program's layout.
  for (const BlockExchange &e : exchanges) {
    waitParity(l, barrierAddress(l, e, 1), b.getInt32(0));
    Elements out;
    for (int64_t k = 0; k < l.elementsPerThread(e.in); ++k)
      out.push_back(fromSlot(
          l, e,
          b.CreateLoad(e.slotTy, slotPointer(l, e, e.stageOffset, l.rowMajorIndex(e.in, k)))));
    l.set(e.op->result(), std::move(out));
  }
  // No program leaves while a peer's copy may still read its shared memory.
  l.intrinsic(llvm::Intrinsic::nvvm_barrier_cluster_arrive_relaxed_aligned, {}, {});
  l.intrinsic(llvm::Intrinsic::nvvm_barrier_cluster_wait_aligned, {}, {});
}

} // namespace tritium::codegen
