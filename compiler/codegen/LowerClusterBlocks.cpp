// Lowering of cluster_sum and cluster_max of blocks (sm_90): every program of a cluster of C gets
// the element-wise sum (or maximum) of the C programs' blocks, combined in rank order, so all of
// them hold the same bits. Two rounds through distributed shared memory, each moving one block's
// worth of bytes per program whatever C is (sending each whole block to every peer would move C
// times as many): program r owns strip r of the elements (ceil(n / C) of them in row-major
// order); in round 1 each program sends every element it holds to the strip's owner, slot
// [sender][element]; in round 2 each owner combines its strip's C values per element and sends
// the result to every program, which then reads its elements back in its own layout.
//
// With st.async (PTX 8.1) a round's bytes complete a transaction on the receiver's mbarrier, and
// the receiver waits for the bytes it expects; no fence orders the program's earlier global
// stores (a cluster barrier's release would wait for them to land). The op sits at the kernel's
// top level and runs once, so each of its two mbarriers (set up at the kernel's entry, before
// the entry's cluster barrier) completes one phase, of parity 0, and no slot is written twice.
// A program never writes into a peer that has left: a peer leaves only after its round-2 bytes
// from every program have landed, and each program sends its round-1 bytes before its round-2
// ones. Without st.async (PTX 8.0), plain stores into the peers (st.shared::cluster) are
// published by a cluster barrier after each round.
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
  int64_t elements = 0, strip = 0, bytes = 0;
  int64_t stripOffset = 0, resultOffset = 0, barriersOffset = 0; // shared-memory bytes
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

llvm::Value *combine(Lowering &l, const BlockExchange &e, llvm::Value *x, llvm::Value *y) {
  auto &b = l.b;
  if (e.op->kind() == ir::OpKind::ClusterMax)
    return b.CreateBinaryIntrinsic(e.isFloat ? llvm::Intrinsic::maximum : llvm::Intrinsic::smax, x,
                                   y);
  return e.isFloat ? b.CreateFAdd(x, y) : b.CreateAdd(x, y);
}

// The 32-bit shared address of slot `index` (i32) of the region at byte `offset`.
llvm::Value *slotAddress(Lowering &l, const BlockExchange &e, int64_t offset, llvm::Value *index) {
  auto &b = l.b;
  return sharedAddress(l, b.CreateAdd(b.getInt32(int32_t(offset)),
                                      b.CreateMul(index, b.getInt32(int32_t(e.bytes)))));
}

llvm::Value *barrierAddress(Lowering &l, const BlockExchange &e, int round) {
  return sharedAddress(l, l.b.getInt32(int32_t(e.barriersOffset + 8 * round)));
}

// Writes `value` into slot `address` of program `peer`, where `enabled` (null: always): with
// st.async, counted by the peer's mbarrier at `barrier`.
void send(Lowering &l, const BlockExchange &e, bool async, llvm::Value *address,
          llvm::Value *barrier, llvm::Value *peer, llvm::Value *value, llvm::Value *enabled) {
  auto &b = l.b;
  bool wide = e.bytes == 8;
  llvm::Type *bitsTy = wide ? b.getInt64Ty() : b.getInt32Ty();
  llvm::Value *bits = value->getType() == bitsTy ? value : b.CreateBitCast(value, bitsTy);
  if (async) {
    llvm::Value *on = enabled ? b.CreateZExt(enabled, b.getInt32Ty()) : b.getInt32(1);
    emitAsm(l,
            std::string("{\n\t.reg .b32 slot, bar;\n\t.reg .pred on;\n\t"
                        "setp.ne.u32 on, $4, 0;\n\t"
                        "mapa.shared::cluster.u32 slot, $0, $2;\n\t"
                        "mapa.shared::cluster.u32 bar, $1, $2;\n\t"
                        "@on st.async.shared::cluster.mbarrier::complete_tx::bytes") +
                (wide ? ".b64" : ".b32") + " [slot], $3, [bar];\n\t}",
            wide ? "r,r,r,l,r" : "r,r,r,r,r", {address, barrier, peer, bits, on});
    return;
  }
  auto store = [&] {
    emitAsm(l,
            std::string("{\n\t.reg .b32 slot;\n\tmapa.shared::cluster.u32 slot, $0, $1;\n\t"
                        "st.shared::cluster") +
                (wide ? ".b64" : ".b32") + " [slot], $2;\n\t}",
            wide ? "r,r,l" : "r,r,r", {address, peer, bits});
  };
  if (enabled)
    l.ifThen(enabled, "cluster.block.send", store);
  else
    store();
}

// Without st.async: every program's writes of a round land before any program reads them.
void clusterBarrier(Lowering &l) {
  l.intrinsic(llvm::Intrinsic::nvvm_barrier_cluster_arrive_aligned, {}, {}); // release
  l.intrinsic(llvm::Intrinsic::nvvm_barrier_cluster_wait_aligned, {}, {});   // acquire
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
  bool async = l.ptxVersion >= 81;
  llvm::Value *rank = l.intrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_ctarank, {}, {});
  std::vector<BlockExchange> exchanges;
  for (const ir::Op *op : batch) {
    BlockExchange e;
    e.op = op;
    e.in = op->operand(0);
    const ir::Type &t = e.in->type();
    e.isFloat = t.isFloat();
    e.bytes = clusterBlockSlotBytes(t);
    e.elementTy = l.elementType(t);
    e.slotTy = e.isFloat ? (e.bytes == 8 ? b.getDoubleTy() : b.getFloatTy())
                         : (e.bytes == 8 ? b.getInt64Ty() : b.getInt32Ty());
    e.elements = t.numElements();
    e.strip = (e.elements + size - 1) / size;
    e.stripOffset = op->intAttr("smem_offset");
    e.resultOffset = op->intAttr("smem_result");
    e.barriersOffset = op->intAttr("smem_barriers");
    exchanges.push_back(e);
  }
  // This program's strip: elements [rank * strip, min(n, (rank + 1) * strip)).
  auto stripLength = [&](const BlockExchange &e) {
    llvm::Value *left = b.CreateSub(b.getInt32(int32_t(e.elements)),
                                    b.CreateMul(rank, b.getInt32(int32_t(e.strip))));
    llvm::Value *clamped = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, left, b.getInt32(0));
    return b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, clamped, b.getInt32(int32_t(e.strip)));
  };
  if (async) // thread 0 announces both rounds' bytes: its strip from every program, then all
    l.ifThen(b.CreateICmpEQ(l.tid, b.getInt32(0)), "cluster.block.announce", [&] {
      for (const BlockExchange &e : exchanges) {
        llvm::Value *round1 = b.CreateMul(stripLength(e), b.getInt32(int32_t(size * e.bytes)));
        emitAsm(l, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r",
                {barrierAddress(l, e, 0), round1});
        emitAsm(l, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r",
                {barrierAddress(l, e, 1), b.getInt32(int32_t(e.elements * e.bytes))});
      }
    });
  // Round 1: each element this thread holds (one copy of each) to its strip's owner.
  for (const BlockExchange &e : exchanges) {
    const Elements &values = l.get(e.in);
    llvm::Value *barrier = barrierAddress(l, e, 0);
    for (int64_t k = 0; k < int64_t(values.size()); ++k) {
      llvm::Value *index = l.rowMajorIndex(e.in, k);
      llvm::Value *owner = b.CreateUDiv(index, b.getInt32(int32_t(e.strip)));
      llvm::Value *within = b.CreateURem(index, b.getInt32(int32_t(e.strip)));
      llvm::Value *slot = b.CreateAdd(b.CreateMul(rank, b.getInt32(int32_t(e.strip))), within);
      send(l, e, async, slotAddress(l, e, e.stripOffset, slot), barrier, owner,
           toSlot(l, e, values[size_t(k)]), l.ownsElement(e.in, k));
    }
  }
  if (!async)
    clusterBarrier(l);
  // Round 2: this program's strip combined in rank order, sent to every program.
  for (const BlockExchange &e : exchanges) {
    if (async)
      waitParity(l, barrierAddress(l, e, 0), b.getInt32(0));
    llvm::Value *length = stripLength(e);
    llvm::Value *start = b.CreateMul(rank, b.getInt32(int32_t(e.strip)));
    int64_t perThread = (e.strip + l.threads() - 1) / l.threads();
    for (int64_t j = 0; j < perThread; ++j) {
      llvm::Value *i = b.CreateAdd(l.tid, b.getInt32(int32_t(j * l.threads())));
      l.ifThen(b.CreateICmpULT(i, length), "cluster.block.combine", [&] {
        llvm::Value *total = nullptr;
        for (int64_t q = 0; q < size; ++q) {
          llvm::Value *slot = b.CreateAdd(b.getInt32(int32_t(q * e.strip)), i);
          llvm::Value *at =
              b.CreateGEP(b.getInt8Ty(), l.smem,
                          b.CreateZExt(b.CreateAdd(b.getInt32(int32_t(e.stripOffset)),
                                                   b.CreateMul(slot, b.getInt32(int32_t(e.bytes)))),
                                       b.getInt64Ty()));
          llvm::Value *part = b.CreateLoad(e.slotTy, at);
          total = total ? combine(l, e, total, part) : part;
        }
        llvm::Value *address = slotAddress(l, e, e.resultOffset, b.CreateAdd(start, i));
        llvm::Value *barrier = barrierAddress(l, e, 1);
        for (int64_t p = 0; p < size; ++p)
          send(l, e, async, address, barrier, b.getInt32(int32_t(p)), total, nullptr);
      });
    }
  }
  if (!async)
    clusterBarrier(l);
  // Every program's result, read back in this program's layout.
  for (const BlockExchange &e : exchanges) {
    if (async)
      waitParity(l, barrierAddress(l, e, 1), b.getInt32(0));
    Elements out;
    for (int64_t k = 0; k < l.elementsPerThread(e.in); ++k) {
      llvm::Value *at =
          b.CreateGEP(b.getInt8Ty(), l.smem,
                      b.CreateZExt(b.CreateAdd(b.getInt32(int32_t(e.resultOffset)),
                                               b.CreateMul(l.rowMajorIndex(e.in, k),
                                                           b.getInt32(int32_t(e.bytes)))),
                                   b.getInt64Ty()));
      out.push_back(fromSlot(l, e, b.CreateLoad(e.slotTy, at)));
    }
    l.set(e.op->result(), std::move(out));
  }
}

} // namespace tritium::codegen
