// TMA copies of tensor-descriptor tiles in a pipelined loop's ring (gpu/ChooseTensorMaps.cpp).
// The ring keeps the cp.async ring's stages and schedule (LowerPipelinedLoop.cpp): S buffers,
// a stage refilled at the top of the iteration after the one that read it, a CTA barrier once
// the stage has landed. Only the copy changes: thread 0 announces the stage's bytes on the
// stage's mbarrier (expect_tx) and issues one cp.async.bulk.tensor per tile, or per 128-byte
// panel of a swizzled tile, which the hardware completes on that mbarrier; every thread waits
// for the phase of the iteration it reads (stage s is filled for the (i / S)-th time in
// iteration i). Elements outside the tensor arrive as zeros, which is the load's `other`.
// A multicast tile ({multicast_copies = C}, gpu/ChooseMulticastCopies.cpp) is copied a slice
// of its rows per program of the cluster, each slice into all C programs' buffers at once; the
// stage's bytes are still the whole tile's, since every program's copy completes on the
// mbarrier of the same offset in each destination.
#include "compiler/codegen/Mbarrier.h"
#include "compiler/codegen/Pipelining.h"
#include "compiler/ir/TensorMap.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

#include <algorithm>
#include <unordered_map>

namespace tritium::codegen {

namespace {

llvm::Value *barrierAddress(Lowering &l, const PipelinePlan &plan, llvm::Value *stage) {
  auto &b = l.b;
  return sharedAddress(l, b.CreateAdd(b.getInt32(int32_t(plan.tensorBarriers)),
                                      b.CreateMul(stage, b.getInt32(8))));
}

template <typename F>
void onThreadZero(Lowering &l, llvm::Value *cond, F body, bool wholeCta = false) {
  llvm::Value *first = l.isThreadZero(wholeCta);
  l.ifThen(cond ? l.b.CreateAnd(first, cond) : first, "tma.issue", body);
}

int64_t tileBytes(const ir::Op &load) {
  const ir::Type &t = load.result()->type();
  return t.numElements() * ir::byteWidth(t.kind());
}

} // namespace

std::unordered_set<const ir::Op *> opsOnlyCopiesFeed(const ir::Function &fn) {
  std::unordered_set<const ir::Op *> skipped;

  // Every use of every value, and the ops in program order (regions entered in place).
  std::unordered_map<const ir::Value *, std::vector<std::pair<const ir::Op *, unsigned>>> uses;
  std::vector<const ir::Op *> order;
  auto visit = [&](auto &&self, const ir::Block &block) -> void {
    for (const auto &op : block.ops()) {
      order.push_back(op.get());
      for (unsigned i = 0; i < op->numOperands(); ++i)
        uses[op->operand(i)].emplace_back(op.get(), i);
      for (unsigned r = 0; r < op->numRegions(); ++r)
        self(self, *op->region(r));
    }
  };
  visit(visit, fn.body());
  // A cp.async tile read in the body uses its mask and `other`, never its element pointers:
  // the copies issued ahead recompute the body's part of those (LowerPipelinedLoop.cpp), so
  // only ops of the loop's body may be skipped for them (`ringOnly`); what the loop takes
  // from outside is lowered.
  std::unordered_set<const ir::Op *> ringOnly;
  auto unread = [&](const ir::Op *op, const ir::Op *user, unsigned index, bool &ring) {
    bool sameBody = op->parentBlock() == user->parentBlock();
    if (user->hasAttr("tensor_map"))
      return !ir::tensorCopyReads(*user, index);
    if (user->hasAttr("pipelined"))
      return ring = index == 0 && sameBody;
    if (ringOnly.count(user))
      return ring = sameBody;
    return skipped.count(user) > 0;
  };
  // Users come after the values they use, so a pass from the end finds whole chains; passes
  // repeat until nothing changes.
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const ir::Op *op = *it;
      if (skipped.count(op) || op->numRegions() > 0 || ir::trait(*op) == ir::OpTrait::Effect ||
          op->results().empty())
        continue;
      bool dead = true, ring = false;
      for (const auto &r : op->results())
        for (const auto &[user, index] : uses[r.get()])
          dead = dead && unread(op, user, index, ring);
      if (dead) {
        skipped.insert(op);
        if (ring)
          ringOnly.insert(op);
        changed = true;
      }
    }
  }
  return skipped;
}

// The cluster's barrier, every thread of each program that has not exited: a multicast ring's
// mbarriers are set up before any peer copies into this program, and no peer arrives on them
// once they are retired.
static void clusterBarrier(Lowering &l) {
  l.intrinsic(llvm::Intrinsic::nvvm_barrier_cluster_arrive_aligned, {}, {}); // release
  l.intrinsic(llvm::Intrinsic::nvvm_barrier_cluster_wait_aligned, {}, {});   // acquire
}

void initTensorBarriers(Lowering &l, const PipelinePlan &plan) {
  // The buffers may hold what threads wrote through the generic proxy (an earlier loop's
  // ring, the epilogue's buffers); TMA writes through the async proxy.
  emitAsm(l, "fence.proxy.async.shared::cta;", "", {});
  l.barrier();
  onThreadZero(l, nullptr, [&] {
    for (int s = 0; s < plan.stages; ++s) {
      emitAsm(l, "mbarrier.init.shared::cta.b64 [$0], 1;", "r",
              {barrierAddress(l, plan, l.b.getInt32(s))});
      if (plan.warpSpecialized()) // one arrival per compute warp (of each program multicast to)
        emitAsm(l,
                "mbarrier.init.shared::cta.b64 [$0], " +
                    std::to_string(l.numWarps * plan.multicast) + ";",
                "r", {emptyBarrierAddress(l, plan, l.b.getInt32(s))});
    }
    emitAsm(l, "fence.mbarrier_init.release.cluster;", "", {});
  }, /*wholeCta=*/true);
  if (plan.multicast > 1)
    clusterBarrier(l);
  else
    l.barrier();
}

void issueTensorCopies(Lowering &l, const PipelinePlan &plan, llvm::Value *inRange,
                       llvm::Value *stage) {
  auto &b = l.b;
  // The tiles' offsets are uniform scalars: every thread has them; thread 0 uses them.
  struct Copy {
    llvm::Value *dst, *map;
    std::vector<llvm::Value *> coords;
    bool multicast = false;
  };
  // A multicast tile's slice: this program's rank in the cluster picks its rows.
  llvm::Value *rank = nullptr;
  if (plan.multicast > 1)
    rank = l.intrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_ctarank, {}, {});
  std::vector<Copy> copies;
  int64_t total = 0;
  for (const ir::Op *load : plan.loads) {
    if (!load->hasAttr("tensor_map"))
      continue;
    total += tileBytes(*load);
    const ir::Type &t = load->result()->type();
    int64_t bytes = ir::byteWidth(t.kind()), rows = t.shape()[0], cols = t.shape()[1];
    llvm::Value *row = b.CreateTrunc(l.get(ir::tensorOffset(*load, 0))[0], b.getInt32Ty());
    llvm::Value *col = b.CreateTrunc(l.get(ir::tensorOffset(*load, 1))[0], b.getInt32Ty());
    llvm::Value *buffer = b.CreateAdd(
        b.getInt32(int32_t(load->intAttr("smem_offset"))),
        b.CreateMul(stage, b.getInt32(int32_t(load->intAttr("stage_bytes")))));
    llvm::Value *map = l.tensorMaps.at(size_t(load->intAttr("tensor_map")));
    // A swizzled tile is copied a panel of 128 bytes of columns at a time, each panel
    // [rows][128 bytes] after the other (dotTileOffset); rows of 64 or 32 bytes at once.
    int64_t panelCols =
        load->hasAttr("swizzle") ? std::min<int64_t>(128, cols * bytes) / bytes : cols;
    // Slice r of C holds rows [r rows / C, (r + 1) rows / C) of each panel; the rows of a
    // permuted tile lie in groups of 16, whole groups a slice.
    int64_t ctas = load->hasAttr("multicast_copies") ? load->intAttr("multicast_copies") : 1;
    llvm::Value *sliceRow = nullptr, *sliceBytes = nullptr;
    if (ctas > 1) {
      sliceRow = b.CreateMul(rank, b.getInt32(int32_t(rows / ctas)));
      sliceBytes = b.CreateMul(sliceRow, b.getInt32(int32_t(panelCols * bytes)));
    }
    auto plus = [&](llvm::Value *v, llvm::Value *slice) {
      return slice ? b.CreateAdd(v, slice) : v;
    };
    llvm::Value *y = plus(row, sliceRow);
    for (int64_t p = 0; p < cols / panelCols; ++p) {
      Copy c;
      c.dst = sharedAddress(
          l, plus(b.CreateAdd(buffer, b.getInt32(int32_t(p * rows * panelCols * bytes))),
                  sliceBytes));
      c.map = map;
      c.multicast = ctas > 1;
      llvm::Value *x = b.CreateAdd(col, b.getInt32(int32_t(p * panelCols)));
      llvm::Value *zero = b.getInt32(0), *group = b.CreateAShr(y, b.getInt32(4));
      if (rowOrderOf(*load) == RowOrder::WgmmaA) // (column, 8 rows 2 apart, 2 rows, groups of 16)
        c.coords = {x, zero, zero, group};
      else if (rowOrderOf(*load) == RowOrder::ByteFragmentColumns) // (column, 2, 4, 2, groups)
        c.coords = {x, zero, zero, zero, group};
      else
        c.coords = {x, y};
      copies.push_back(std::move(c));
    }
  }
  onThreadZero(l, inRange, [&] {
    llvm::Value *full = barrierAddress(l, plan, stage);
    emitAsm(l, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r",
            {full, b.getInt32(int32_t(total))});
    for (const Copy &c : copies) {
      size_t n = c.coords.size();
      std::string coords, constraints = "r,l";
      std::vector<llvm::Value *> args{c.dst, c.map};
      for (size_t i = 0; i < n; ++i) {
        coords += (i ? ", $" : "$") + std::to_string(2 + i);
        constraints += ",r";
        args.push_back(c.coords[i]);
      }
      constraints += ",r";
      args.push_back(full);
      std::string multicast;
      if (c.multicast) { // into every program of the cluster
        constraints += ",h";
        args.push_back(b.getInt16(uint16_t((1u << plan.multicast) - 1)));
        multicast = ".multicast::cluster";
      }
      emitAsm(l,
              "cp.async.bulk.tensor." + std::to_string(n) +
                  "d.shared::cluster.global.tile.mbarrier::complete_tx::bytes" + multicast +
                  " [$0], [$1, {" + coords + "}], [$" + std::to_string(2 + n) + "]" +
                  (c.multicast ? ", $" + std::to_string(3 + n) : "") + ";",
              constraints, args);
    }
  });
}

void waitForTensorCopies(Lowering &l, const PipelinePlan &plan, llvm::Value *stage,
                         llvm::Value *iteration) {
  auto &b = l.b;
  llvm::Value *parity =
      b.CreateAnd(b.CreateUDiv(iteration, b.getInt32(plan.stages)), b.getInt32(1));
  waitParity(l, barrierAddress(l, plan, stage), parity);
}

void invalidateTensorBarriers(Lowering &l, const PipelinePlan &plan) {
  // Every copy issued was for an iteration that ran and waited for it; no thread may still
  // wait on an mbarrier that thread 0 invalidates, nor, multicast, a peer's warp arrive on it.
  if (plan.multicast > 1)
    clusterBarrier(l);
  else if (l.computeGroups > 1) // every compute group's warps
    l.ctaBarrier();
  else
    l.barrier();
  onThreadZero(l, nullptr, [&] {
    for (int s = 0; s < plan.stages; ++s) {
      emitAsm(l, "mbarrier.inval.shared::cta.b64 [$0];", "r",
              {barrierAddress(l, plan, l.b.getInt32(s))});
      if (plan.warpSpecialized())
        emitAsm(l, "mbarrier.inval.shared::cta.b64 [$0];", "r",
                {emptyBarrierAddress(l, plan, l.b.getInt32(s))});
    }
  }, /*wholeCta=*/true);
}

} // namespace tritium::codegen
