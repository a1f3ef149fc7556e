// Lowering of scan (an inclusive scan along one axis with a combine region) through shared
// memory: the block is staged with the axis innermost (rows of L elements); each row is split
// into chunks of contiguous elements, one chunk per thread, scanned in place; a thread then
// combines the totals of the chunks before its own and applies that prefix to its chunk; the
// result is read back under the block's layout. Three barriers; serial work per thread is
// bounded by the elements per thread plus the chunks per row.
#include "compiler/codegen/Lowering.h"
#include "compiler/gpu/GpuPasses.h"

#include <optional>

namespace tritium::codegen {

namespace {

using Group = std::vector<llvm::Value *>;

struct ScanLowering {
  Lowering &l;
  const ir::Op &op;
  size_t n;
  int64_t L, R, threads;
  std::vector<int64_t> base; // each component's rows; its totals follow them
  std::vector<llvm::Type *> types;

  ScanLowering(Lowering &lw, const ir::Op &o) : l(lw), op(o), n(o.numOperands()) {
    const ir::Type &t = op.operand(0)->type();
    L = t.shape()[size_t(op.intAttr("axis"))];
    R = t.numElements() / L;
    threads = l.threads();
    int64_t at = op.intAttr("smem_offset");
    for (size_t i = 0; i < n; ++i) {
      const ir::Type &ti = op.result(unsigned(i))->type();
      base.push_back(at);
      at += (ti.numElements() + threads) * reduceSlotBytes(ti);
      types.push_back(l.elementType(ti));
    }
  }

  int64_t slotBytes(size_t i) const { return reduceSlotBytes(op.result(unsigned(i))->type()); }

  llvm::Value *address(size_t i, llvm::Value *index) {
    auto &b = l.b;
    llvm::Value *bytes = b.CreateMul(b.CreateZExt(index, b.getInt64Ty()), b.getInt64(slotBytes(i)));
    return b.CreateGEP(b.getInt8Ty(), l.smem, b.CreateAdd(b.getInt64(base[i]), bytes));
  }
  llvm::Value *rowElement(size_t i, llvm::Value *row, llvm::Value *pos) {
    auto &b = l.b;
    return address(i, b.CreateAdd(b.CreateMul(row, b.getInt32(int32_t(L))), pos));
  }
  llvm::Value *total(size_t i, llvm::Value *slot) {
    return address(i, l.b.CreateAdd(slot, l.b.getInt32(int32_t(R * L))));
  }

  Group load(const std::function<llvm::Value *(size_t)> &at) {
    Group g;
    for (size_t i = 0; i < n; ++i)
      g.push_back(l.b.CreateLoad(types[i], at(i)));
    return g;
  }
  void store(const Group &g, const std::function<llvm::Value *(size_t)> &at) {
    for (size_t i = 0; i < n; ++i)
      l.b.CreateStore(g[i], at(i));
  }

  Group combine(const Group &a, const Group &c) {
    const ir::Block &region = *op.region(0);
    for (size_t i = 0; i < n; ++i) {
      l.set(region.argument(unsigned(i)), {a[i]});
      l.set(region.argument(unsigned(i + n)), {c[i]});
    }
    const ir::Op *yield = l.lowerRegion(region);
    Group out;
    for (size_t i = 0; i < n; ++i)
      out.push_back(l.get(yield->operand(unsigned(i)))[0]);
    return out;
  }

  // The row and position along the axis of a thread's k-th element of `v`.
  std::pair<llvm::Value *, llvm::Value *> rowAndPosition(const ir::Value *v, int64_t k) {
    auto &b = l.b;
    std::vector<llvm::Value *> c = l.coordinates(v, k);
    int64_t axis = op.intAttr("axis");
    llvm::Value *row = b.getInt32(0);
    for (size_t d = 0; d < c.size(); ++d)
      if (int64_t(d) != axis)
        row = b.CreateAdd(b.CreateMul(row, b.getInt32(int32_t(v->type().shape()[d]))), c[d]);
    return {row, c[size_t(axis)]};
  }

  // Scans positions [first, first + count) of `row` in place, starting from `carry` if given;
  // returns the last value.
  Group scanRun(llvm::Value *row, llvm::Value *first, int64_t count, std::optional<Group> carry) {
    auto &b = l.b;
    Group acc;
    for (int64_t j = 0; j < count; ++j) {
      llvm::Value *pos = b.CreateAdd(first, b.getInt32(int32_t(j)));
      Group v = load([&](size_t i) { return rowElement(i, row, pos); });
      acc = carry ? combine(*carry, v) : v;
      store(acc, [&](size_t i) { return rowElement(i, row, pos); });
      carry = acc;
    }
    return acc;
  }

  void run() {
    auto &b = l.b;
    // 1. Stage the operands, rows of L elements.
    l.barrier(); // an earlier round of this buffer (a loop) has been read
    for (int64_t k = 0; k < l.elementsPerThread(op.operand(0)); ++k) {
      auto [row, pos] = rowAndPosition(op.operand(0), k);
      for (size_t i = 0; i < n; ++i)
        b.CreateStore(l.get(op.operand(unsigned(i)))[size_t(k)], rowElement(i, row, pos));
    }
    l.barrier();
    // 2. Scan the rows.
    if (R >= threads) { // whole rows per thread
      for (int64_t r = 0; r < R / threads; ++r)
        scanRun(b.CreateAdd(l.tid, b.getInt32(int32_t(r * threads))), b.getInt32(0), L, {});
    } else {
      int64_t P = std::min(L, threads / R), chunk = L / P;
      llvm::Value *row = b.CreateUDiv(l.tid, b.getInt32(int32_t(P)));
      llvm::Value *part = b.CreateURem(l.tid, b.getInt32(int32_t(P)));
      llvm::Value *first = b.CreateMul(part, b.getInt32(int32_t(chunk)));
      llvm::Value *active = b.CreateICmpULT(l.tid, b.getInt32(int32_t(R * P)));
      l.ifThen(active, "scan.chunk", [&] {
        Group last = scanRun(row, first, chunk, {});
        store(last, [&](size_t i) { return total(i, l.tid); });
      });
      l.barrier();
      // The chunks before this one, combined in order, then applied to this chunk.
      l.ifThen(b.CreateAnd(active, b.CreateICmpUGT(part, b.getInt32(0))), "scan.prefix", [&] {
        llvm::Value *rowStart = b.CreateMul(row, b.getInt32(int32_t(P)));
        Group prefix = load([&](size_t i) { return total(i, rowStart); });
        llvm::BasicBlock *pre = b.GetInsertBlock();
        auto *header = llvm::BasicBlock::Create(l.ctx, "scan.totals", l.fn);
        auto *body = llvm::BasicBlock::Create(l.ctx, "scan.totals.body", l.fn);
        auto *done = llvm::BasicBlock::Create(l.ctx, "scan.totals.done", l.fn);
        b.CreateBr(header);
        b.SetInsertPoint(header);
        llvm::PHINode *q = b.CreatePHI(b.getInt32Ty(), 2);
        q->addIncoming(b.getInt32(1), pre);
        std::vector<llvm::PHINode *> accPhis;
        Group acc;
        for (size_t i = 0; i < n; ++i) {
          accPhis.push_back(b.CreatePHI(types[i], 2));
          accPhis.back()->addIncoming(prefix[i], pre);
          acc.push_back(accPhis.back());
        }
        b.CreateCondBr(b.CreateICmpULT(q, part), body, done);
        b.SetInsertPoint(body);
        Group next = combine(acc, load([&](size_t i) { return total(i, b.CreateAdd(rowStart, q)); }));
        llvm::BasicBlock *latch = b.GetInsertBlock();
        q->addIncoming(b.CreateAdd(q, b.getInt32(1)), latch);
        for (size_t i = 0; i < n; ++i)
          accPhis[i]->addIncoming(next[i], latch);
        b.CreateBr(header);
        b.SetInsertPoint(done);
        for (int64_t j = 0; j < chunk; ++j) {
          llvm::Value *pos = b.CreateAdd(first, b.getInt32(int32_t(j)));
          Group v = load([&](size_t i) { return rowElement(i, row, pos); });
          store(combine(acc, v), [&](size_t i) { return rowElement(i, row, pos); });
        }
      });
    }
    l.barrier();
    // 3. Read back under the result's layout.
    for (size_t i = 0; i < n; ++i) {
      const ir::Value *res = op.result(unsigned(i));
      Elements out;
      for (int64_t k = 0; k < l.elementsPerThread(res); ++k) {
        auto [row, pos] = rowAndPosition(res, k);
        out.push_back(b.CreateLoad(types[i], rowElement(i, row, pos)));
      }
      l.set(res, std::move(out));
    }
  }
};

} // namespace

bool lowerScan(Lowering &l, const ir::Op &op) {
  if (op.kind() != ir::OpKind::Scan)
    return false;
  ScanLowering(l, op).run();
  return true;
}

} // namespace tritium::codegen
