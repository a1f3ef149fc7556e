// Shared-memory allocation (GIR): dot's staged operands (smem_offset, smem_b; 1024-byte
// aligned, none for operands a ring will likely bring in), two banks of one scratch slot per
// result element and warp along the axis for each cross-warp reduction (LowerReduction.cpp
// alternates them), two banks of warp totals for each scan with several warps along its axis
// (LowerScan.cpp shares the reductions' alternation), a staging
// buffer for each convert_layout, reshape and trans (LowerShapes.cpp) and for each
// tensor_store's tile (LowerTensorStore.cpp; 1024-byte aligned for TMA's swizzle), and two banks of one slot
// per program of the cluster for each cluster reduction (its peers write there; LowerCluster.cpp
// alternates the banks), plus one mbarrier per bank that counts the bytes the peers' writes bring
// in (kernel attribute cluster_barriers). A cluster reduction of a block gets its block in strips
// (then its result), the strip it combines from every program and two mbarriers of its own (op
// attributes smem_offset, smem_gather and smem_barriers). Each reduction gets its own region, so
// consecutive reductions need no barrier between them for buffer reuse.
#include "compiler/gpu/GpuPasses.h"
#include "compiler/support/Error.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tritium {

int64_t reduceSlotBytes(const ir::Type &t) {
  return t.isPtr() ? 8 : std::max(4, ir::bitWidth(t.kind()) / 8);
}

int64_t scanTotalSlots(const ir::Op &scan) {
  const ir::Value *in = scan.operand(0);
  ir::LayoutMap map(*in->layout(), in->type().shape());
  int64_t axis = scan.intAttr("axis");
  ir::LayoutMap::Spread sp = map.spread(map.rootDim(int(axis)));
  if (sp.warps == 1)
    return 0;
  int64_t lines = in->type().numElements() / in->type().shape()[size_t(axis)];
  return lines * sp.reps * sp.warps;
}

int64_t clusterBlockStrip(const ir::Type &t, int64_t clusterSize) {
  int64_t strip = (t.numElements() + clusterSize - 1) / clusterSize;
  return (strip + 3) / 4 * 4;
}

int64_t stagedElements(const ir::Type &t) {
  // One padding element after each row of 32 elements or more, so that threads reading a
  // column hit different banks.
  int64_t row = t.shape().back();
  return t.numElements() + (t.rank() > 1 && row >= 32 ? t.numElements() / row : 0);
}

int64_t dotStagingBytes(const ir::Op &dot, unsigned i) {
  const ir::Type &a = dot.operand(0)->type(), &b = dot.operand(1)->type();
  int r = a.rank();
  int bytes = std::max(1, ir::bitWidth(a.kind()) / 8);
  int64_t batches = r == 3 ? a.shape()[0] : 1, K = a.shape()[size_t(r - 1)];
  int64_t row = (dotStagesSwizzled(dot) ? K : dotStagedRow(K, bytes)) * bytes;
  return batches * (i == 0 ? a.shape()[size_t(r - 2)] : b.shape()[size_t(r - 1)]) * row;
}

int64_t tensorStoreStagingBytes(const ir::Op &store) {
  const ir::Type &t = store.operand(0)->type();
  return t.numElements() * ir::byteWidth(t.kind());
}

int64_t stagedBlockBytes(const ir::Op &op) {
  const ir::Type &t = op.result()->type();
  int64_t bytes = t.isPtr() ? 8 : std::max(1, ir::bitWidth(t.kind()) / 8);
  return bytes * stagedElements(t);
}

int64_t allocateStagedBlock(ir::Op &op, int64_t offset) {
  offset = (offset + 15) / 16 * 16;
  op.setAttr("smem_offset", offset);
  return offset + stagedBlockBytes(op);
}

int64_t allocateDotStaging(ir::Op &dot, unsigned i, int64_t offset) {
  offset = (offset + kDotTileAlignment - 1) / kDotTileAlignment * kDotTileAlignment;
  dot.setAttr(i == 0 ? "smem_offset" : "smem_b", offset);
  return offset + dotStagingBytes(dot, i);
}

bool dotOperandMayComeFromRing(const ir::Op &dot, unsigned i) {
  if (dot.operand(0)->type().rank() != 2 || !dotStagesSwizzled(dot))
    return false;
  const ir::Op *load = dot.operand(i)->definingOp();
  if (i == 1 && load && load->kind() == ir::OpKind::Trans) // b as trans() of a [N, K] tile
    load = load->operand(0)->definingOp();
  else if (i == 1 && ir::bitWidth(dot.operand(0)->type().kind()) != 16)
    return false; // wgmma reads other types' b K-major only: staged transposed
  if (!load || load->kind() != ir::OpKind::Load || load->parentBlock() != dot.parentBlock())
    return false;
  const ir::Op *loop = load->parentBlock()->parentOp();
  return loop && loop->kind() == ir::OpKind::For && loop->hasAttr("num_stages") &&
         loop->intAttr("num_stages") >= 2;
}

// Whether `trans` has one user, a dot that will likely read the tile under it from a ring:
// then it gets no staging buffer (feedDotsFromRings gives it one if not).
static bool transMayFeedDotFromRing(
    const ir::Op &trans,
    const std::unordered_map<const ir::Value *, std::vector<const ir::Op *>> &users) {
  auto it = users.find(trans.result());
  if (it == users.end() || it->second.size() != 1)
    return false;
  const ir::Op *dot = it->second.front();
  return dot->kind() == ir::OpKind::Dot && dot->operand(1) == trans.result() &&
         dotOperandMayComeFromRing(*dot, 1);
}

// What to change when `op`'s buffer is the one that does not fit.
static std::string sharedMemoryAdvice(const ir::Op &op) {
  switch (op.kind()) {
  case ir::OpKind::Scan:
    return "a scan keeps one total per line, repetition and warp along its axis: put fewer "
           "warps along the axis, or scan a smaller block";
  case ir::OpKind::ConvertLayout:
  case ir::OpKind::Reshape:
  case ir::OpKind::Trans:
    return "the block passes through shared memory to change its layout: make it smaller, or "
           "keep its producer and its users in one layout";
  case ir::OpKind::Dot:
    return "the operands are staged in shared memory: use smaller tiles (BLOCK_M, BLOCK_N, "
           "BLOCK_K)";
  case ir::OpKind::TensorStore:
    return "the tile is staged in shared memory for its TMA store: store a smaller block_shape";
  default:
    return "make the block smaller, or use fewer warps along the reduced axis";
  }
}

void allocateSharedMemory(ir::Function &fn, int numWarps, int64_t maxSharedBytes) {
  int64_t clusterSize = fn.intAttr("cluster_size").value_or(1);
  int64_t offset = 0;
  bool exchanges = false;
  std::unordered_set<const ir::Value *> used;
  std::unordered_map<const ir::Value *, std::vector<const ir::Op *>> users;
  ir::walk(fn.body(), [&](ir::Op &op) {
    for (const ir::Value *v : op.operands()) {
      used.insert(v);
      users[v].push_back(&op);
    }
  });
  auto allocate = [&](ir::Op &op) {
    int64_t slots = 0;
    // An atomic's old values reach every thread through shared memory when one thread does the
    // operation for several (a scalar, or a block with copies): LowerAtomics.cpp.
    if ((op.kind() == ir::OpKind::AtomicRMW || op.kind() == ir::OpKind::AtomicCAS) &&
        used.count(op.result())) {
      const ir::Type &t = op.result()->type();
      int64_t bytes = std::max(4, ir::bitWidth(t.kind()) / 8);
      int64_t elements = 0;
      if (!t.isBlock())
        elements = 1;
      else if (ir::LayoutMap(*op.result()->layout(), t.shape()).replicates())
        elements = stagedElements(t);
      if (!elements)
        return;
      offset = (offset + 15) / 16 * 16;
      op.setAttr("smem_offset", offset);
      offset += bytes * elements;
      return;
    }
    if (op.kind() == ir::OpKind::Dot) {
      // 16-bit: a as [batch][M][K], b as [batch][K][N] (dotTileOffset); wgmma's other types:
      // a as [M][K], b as [N][K], swizzled alike; mma.sync's other types: a as
      // [batch][M][row], b transposed as [batch][N][row] (dotStagedRow; LowerDot.cpp).
      // Operands that a ring of the dot's loop will likely bring in are read from the ring and
      // get no buffer here (feedDotsFromRings adds one if the ring does not come about); nor
      // does an a that the instruction takes from registers ({a_regs}).
      for (unsigned i = op.hasAttr("a_regs") ? 1 : 0; i < 2; ++i)
        if (!dotOperandMayComeFromRing(op, i))
          offset = allocateDotStaging(op, i, offset);
      return;
    }
    if (op.kind() == ir::OpKind::TensorStore) {
      // The tile as TMA reads it (LowerTensorStore.cpp), aligned for its swizzle.
      offset = (offset + kDotTileAlignment - 1) / kDotTileAlignment * kDotTileAlignment;
      op.setAttr("smem_offset", offset);
      offset += tensorStoreStagingBytes(op);
      return;
    }
    if (op.kind() == ir::OpKind::Scan) {
      // Each component's two banks of warp totals, one region after another.
      int64_t perBank = scanTotalSlots(op);
      if (!perBank)
        return;
      offset = (offset + 7) / 8 * 8;
      op.setAttr("smem_offset", offset);
      for (auto &r : op.results())
        offset += 2 * perBank * reduceSlotBytes(r->type());
      return;
    }
    if (op.kind() == ir::OpKind::Reduce) {
      // Each component's slots, [bank][element][warp], one region after another.
      const ir::Value *in = op.operand(0);
      ir::LayoutMap map(*in->layout(), in->type().shape());
      int axis = map.rootDim(int(op.intAttr("axis")));
      int64_t warps = map.root().warpsPerCTA()[size_t(axis)];
      if (warps == 1)
        return;
      int64_t elements = op.result()->type().isBlock() ? op.result()->type().numElements() : 1;
      offset = (offset + 7) / 8 * 8;
      op.setAttr("smem_offset", offset);
      for (auto &r : op.results())
        offset += 2 * elements * warps * reduceSlotBytes(r->type());
      return;
    }
    if (op.kind() == ir::OpKind::ReduceMax || op.kind() == ir::OpKind::ReduceMin ||
        op.kind() == ir::OpKind::ReduceSum) {
      const ir::Value *in = op.operand(0);
      ir::LayoutMap map(*in->layout(), in->type().shape());
      int axis = map.rootDim(int(op.intAttr("axis")));
      int64_t warps = map.root().warpsPerCTA()[size_t(axis)];
      int64_t elements = op.result()->type().isBlock() ? op.result()->type().numElements() : 1;
      slots = warps > 1 ? 2 * elements * warps : 0; // warps off the axis need only shuffles
    } else if ((op.kind() == ir::OpKind::ConvertLayout || op.kind() == ir::OpKind::Reshape ||
                op.kind() == ir::OpKind::Trans) &&
               !op.hasAttr("in_place") && // in place: nothing staged
               !(op.kind() == ir::OpKind::Trans && transMayFeedDotFromRing(op, users))) {
      offset = allocateStagedBlock(op, offset);
      return;
    } else if ((op.kind() == ir::OpKind::ClusterMax || op.kind() == ir::OpKind::ClusterSum) &&
               op.result()->type().isBlock()) {
      if (clusterSize == 1)
        return;
      // A block's exchange (LowerClusterBlocks.cpp): the block in strips (the result later in
      // the same place), the strip this program combines from every program, and two
      // mbarriers of its own.
      int64_t bytes = reduceSlotBytes(op.result()->type());
      int64_t region = bytes * clusterSize * clusterBlockStrip(op.result()->type(), clusterSize);
      offset = (offset + 15) / 16 * 16;
      op.setAttr("smem_offset", offset);
      offset += region;
      op.setAttr("smem_gather", offset);
      offset += region;
      op.setAttr("smem_barriers", offset);
      offset += 16;
      return;
    } else if (op.kind() == ir::OpKind::ClusterMax || op.kind() == ir::OpKind::ClusterSum ||
               op.kind() == ir::OpKind::ClusterGather) {
      slots = clusterSize > 1 ? 2 * clusterSize : 0;
      exchanges = exchanges || slots > 0;
    }
    if (!slots)
      return;
    // Reductions compute in at least 32 bits (16-bit floats widen to f32).
    int64_t bytes = std::max(4, ir::bitWidth(op.result()->type().kind()) / 8);
    offset = (offset + bytes - 1) / bytes * bytes;
    op.setAttr("smem_offset", offset);
    offset += bytes * slots;
  };
  // Buffers are laid out in program order. In a kernel with a dot, each top-level loop records
  // where the buffers of the ops before it and in it end ({smem_live}): its rings may start
  // there, over the buffers of the ops after it, which run once the ring is done (a matmul's
  // epilogue staging shares the ring's space; PipelineLoads.cpp).
  bool dots = ir::findFirst(fn.body(), ir::OpKind::Dot) != nullptr;
  // The op whose buffer is the largest, named if the kernel does not fit.
  const ir::Op *largest = nullptr;
  int64_t largestBytes = 0;
  auto allocateAndTrack = [&](ir::Op &op) {
    int64_t before = offset;
    allocate(op);
    if (offset - before > largestBytes)
      largestBytes = offset - before, largest = &op;
  };
  // Inside a top-level op's regions (a loop's body), the staging buffers of layout changes and
  // of dots share one pool: each such op writes its buffer after a barrier, reads it back
  // before the next barrier and is done with it when it ends (LowerShapes.cpp, LowerDot.cpp:
  // a staged dot waits for its wgmma), so the pool needs only the largest of them. The other
  // buffers (reductions and scans alternate their banks without a barrier between
  // consecutive ops) come first, each its own. The pool is recorded on the op ({smem_pool},
  // {smem_pool_end}) for the staging that feedDotsFromRings adds later.
  // A tensor_store's buffer joins the pool too: TMA may still read it after the op, but its
  // issuing thread waits for those reads before every later barrier (LowerTensorStore.cpp).
  auto pooled = [](const ir::Op &op) {
    return op.kind() == ir::OpKind::ConvertLayout || op.kind() == ir::OpKind::Reshape ||
           op.kind() == ir::OpKind::Trans || op.kind() == ir::OpKind::Dot ||
           op.kind() == ir::OpKind::TensorStore;
  };
  for (auto &top : fn.body().ops()) {
    allocateAndTrack(*top);
    if (top->numRegions()) {
      for (unsigned r = 0; r < top->numRegions(); ++r)
        ir::walk(*top->region(r), [&](ir::Op &op) {
          if (!pooled(op))
            allocateAndTrack(op);
        });
      int64_t pool = (offset + kDotTileAlignment - 1) / kDotTileAlignment * kDotTileAlignment;
      int64_t poolEnd = offset;
      for (unsigned r = 0; r < top->numRegions(); ++r)
        ir::walk(*top->region(r), [&](ir::Op &op) {
          if (!pooled(op))
            return;
          offset = pool;
          allocateAndTrack(op);
          if (offset != pool)
            poolEnd = std::max(poolEnd, offset);
        });
      offset = poolEnd;
      if (poolEnd > pool) {
        top->setAttr("smem_pool", pool);
        top->setAttr("smem_pool_end", poolEnd);
      }
    }
    if (dots && top->kind() == ir::OpKind::For)
      top->setAttr("smem_live", offset);
  }
  if (exchanges) { // two mbarriers of 8 bytes, 8-byte aligned
    offset = (offset + 7) / 8 * 8;
    fn.setAttr("cluster_barriers", offset);
    offset += 16;
  }
  int64_t total = (offset + 15) / 16 * 16;
  if (maxSharedBytes > 0 && total > maxSharedBytes && largest) {
    const ir::Type &t = largest->numOperands() ? largest->operand(0)->type()
                                                : largest->result()->type();
    userError("kernel '" + fn.name() + "' needs " + std::to_string(total) +
                  " bytes of shared memory, more than the " + std::to_string(maxSharedBytes) +
                  " a CTA may have; the most, " + std::to_string(largestBytes) +
                  " bytes, goes to this " + largest->name() + " of " + t.str() + ": " +
                  sharedMemoryAdvice(*largest),
              largest->loc());
  }
  fn.setAttr("shared_bytes", total);
}

void checkSharedMemoryFits(ir::Function &fn, int64_t maxSharedBytes) {
  int64_t total = fn.intAttr("shared_bytes").value_or(0);
  if (maxSharedBytes <= 0 || total <= maxSharedBytes)
    return;
  // The first op (in program order) with a buffer past the limit: a staged dot operand or
  // block that no ring brought in (feedDotsFromRings adds those after the rings), else the
  // loop whose ring or mbarriers end past it.
  const ir::Op *culprit = nullptr;
  std::string what;
  ir::walk(fn.body(), [&](ir::Op &op) {
    if (culprit)
      return;
    auto past = [&](const char *attr, int64_t bytes) {
      return op.hasAttr(attr) && op.intAttr(attr) + bytes > maxSharedBytes;
    };
    if (op.kind() == ir::OpKind::Dot) {
      for (unsigned i = 0; i < 2 && !culprit; ++i)
        if (past(i == 0 ? "smem_offset" : "smem_b", dotStagingBytes(op, i))) {
          culprit = &op;
          what = std::string("the staging of its operand ") + (i == 0 ? "a" : "b") + " (" +
                 std::to_string(dotStagingBytes(op, i)) + " bytes)";
        }
    } else if ((op.kind() == ir::OpKind::ConvertLayout || op.kind() == ir::OpKind::Reshape ||
                op.kind() == ir::OpKind::Trans) &&
               past("smem_offset", stagedBlockBytes(op))) {
      culprit = &op;
      what = "its staging buffer (" + std::to_string(stagedBlockBytes(op)) + " bytes)";
    } else if (op.kind() == ir::OpKind::TensorStore &&
               past("smem_offset", tensorStoreStagingBytes(op))) {
      culprit = &op;
      what = "its staging buffer (" + std::to_string(tensorStoreStagingBytes(op)) + " bytes)";
    } else if (op.hasAttr("pipeline_stages") &&
               (past("tensor_barriers", 0) || past("bulk_barriers", 0))) {
      culprit = &op;
      what = "the mbarriers of its pipelined loads' ring";
    }
  });
  std::string head = "kernel '" + fn.name() + "' needs " + std::to_string(total) +
                     " bytes of shared memory with its pipelined loads' rings, more than the " +
                     std::to_string(maxSharedBytes) + " a CTA may have";
  if (!culprit)
    userError(head + ": use fewer stages (num_stages) or smaller tiles", fn.loc());
  userError(head + "; " + what + " of this " + culprit->name() + " lies past the limit: " +
                sharedMemoryAdvice(*culprit) +
                (culprit->kind() == ir::OpKind::Dot || culprit->hasAttr("pipeline_stages")
                     ? ", or fewer stages (num_stages)"
                     : ""),
            culprit->loc());
}

} // namespace tritium
