// Software pipelining plan (GIR): in a `for` with num_stages >= 2, loads of 1-D or 2-D blocks
// (rows, tiles of rows) whose addresses, mask and `other` depend only on the induction variable,
// carried values that advance by a loop-invariant step (pointers `p += step`, block pointers
// advanced; analysis/AffineCarries.h), masked loads of those (a paged cache's block-table
// entries: loaded again for the later iteration when its copies are issued) and values from
// outside the loop are issued num_stages - 1 iterations ahead as asynchronous
// copies into shared memory. This pass picks those loads, sizes the ring of stages to fit the
// shared memory left, and records the plan as attributes that the lowering follows:
//   for  {pipeline_stages = S}
//   load {pipelined = 1, smem_offset = B, stage_bytes = N}
// Where every such load reads one contiguous, 16-byte aligned run whose valid lanes are a
// prefix of the block (no mask, or `index < bound` on a contiguous index), the whole block is
// one bulk copy (Hopper's TMA, cp.async.bulk) issued by one thread and tracked by mbarriers,
// instead of a 16-byte cp.async per thread and vector. Such a ring refills a buffer as soon as
// it has been read, so it needs S - 1 buffers, not S (codegen/Pipelining.h):
//   for  {pipeline_stages = S, bulk_barriers = O}   (2 x (S - 1) mbarriers from byte O)
// A load of such a loop whose address, mask and `other` do not depend on the induction variable
// at all (a row of weights read by every iteration) is not copied again each iteration: one
// buffer holds it, copied once before the loop, and every iteration reads it from there. It
// then neither holds registers across iterations nor goes back to L2 each iteration:
//   load {pipelined = 1, resident = 1, smem_offset = B, stage_bytes = N}
#include "compiler/analysis/AffineCarries.h"
#include "compiler/analysis/AxisInfo.h"
#include "compiler/gpu/GpuPasses.h"
#include "compiler/ir/Layout.h"
#include "compiler/support/Log.h"

#include <algorithm>
#include <unordered_set>

namespace tritium {

namespace {

// Ring buffers start on 128-byte lines: a bulk copy into a buffer that starts mid-line measured
// 2-20% slower on the H200 (the cluster kernels' 640 bytes of reduction slots plus 16 of
// mbarriers put the ring at byte 656), and 16-byte vector reads of it cross one line more.
// In a kernel with a dot, every buffer starts on kDotTileAlignment instead: a dot may read its
// tiles in place (FeedDotsFromRings.cpp), and wgmma swizzles by the address bits themselves.
int64_t alignTo(int64_t bytes, int64_t align) { return (bytes + align - 1) / align * align; }

// The bytes one buffer of `load`'s block takes.
int64_t bufferBytes(const ir::Op &load, int64_t align) {
  const ir::Type &t = load.result()->type();
  return alignTo(t.numElements() * ir::byteWidth(t.kind()), align);
}

// Ops the lowering can evaluate again for a later iteration: pure and elementwise.
bool recomputable(ir::OpKind k) {
  switch (k) {
  case ir::OpKind::Constant: case ir::OpKind::ProgramId: case ir::OpKind::NumPrograms:
  case ir::OpKind::ClusterRank:
  case ir::OpKind::Arange: case ir::OpKind::Splat: case ir::OpKind::Add: case ir::OpKind::Sub:
  case ir::OpKind::Mul: case ir::OpKind::Div: case ir::OpKind::Rem: case ir::OpKind::Minimum:
  case ir::OpKind::Maximum: case ir::OpKind::And: case ir::OpKind::Or: case ir::OpKind::Cmp:
  case ir::OpKind::Select: case ir::OpKind::Neg: case ir::OpKind::Cast: case ir::OpKind::AddPtr:
  case ir::OpKind::Hint: // multiple_of on a row's aligned start: the value itself
  case ir::OpKind::ExpandDims:
  case ir::OpKind::Broadcast: // registers only (a tile's rows)
    return true;
  default:
    return false;
  }
}

// Whether `op` is a load a ring may take, by its own kind (its addresses aside): rows (1-D
// blocks) or tiles of rows (2-D), each element held by one thread, in whole 16-byte vectors;
// blocks of higher rank load directly.
bool ringCandidate(const ir::Op &op, int64_t threads) {
  if (op.kind() != ir::OpKind::Load || op.result()->type().rank() < 1 ||
      op.result()->type().rank() > 2)
    return false;
  const ir::Type &t = op.result()->type();
  if (t.numElements() < threads) // copies held by several threads: not worth a ring
    return false;
  // Each element has one owner, which copies it and alone reads it: a thread that has read
  // its buffer may refill it without waiting for the others.
  if (ir::LayoutMap(*op.result()->layout(), t.shape()).replicates())
    return false;
  // Only whole 16-byte vectors (cp.async.cg): narrower copies cost as many instructions as
  // plain loads and push register pressure into spills. (Tensor-descriptor tiles at offsets
  // of other alignments stay plain loads too: as TMA copies, such tiles stopped the H200
  // with an illegal instruction; docs/notes/tensor-cores.md.)
  if (ir::byteWidth(t.kind()) * op.intAttr("vec") != 16)
    return false;
  // cp.async caches at all levels (.ca) or in L2 only (.cg); a load asking for streaming,
  // last-use or volatile reads (cs, lu, cv) keeps its own ld.global.
  return !op.hasAttr("cache") || op.strAttr("cache") == "ca" || op.strAttr("cache") == "cg";
}

// What a value inside `body` depends on: values from outside the loop only (invariant), the
// induction variable through recomputable ops of the body, or anything else (not pipelined).
enum class Dependence { Invariant, InductionVariable, Other };

Dependence combine(Dependence a, Dependence b) { return std::max(a, b); }

// A carried value that advances by a loop-invariant step (`affine`, AffineCarries.h) counts as
// the induction variable: the lowering computes it for any iteration.
Dependence dependence(const ir::Value *v, const ir::Block &body,
                      std::unordered_set<const ir::Value *> &seen,
                      const std::unordered_set<const ir::Value *> &affine, int64_t threads) {
  if (!seen.insert(v).second)
    return Dependence::Invariant; // already counted
  if (v->ownerBlock() == &body)
    return v == body.argument(0) || affine.count(v) ? Dependence::InductionVariable
                                                    : Dependence::Other;
  const ir::Op *def = v->definingOp();
  if (!def || def->parentBlock() != &body)
    return Dependence::Invariant; // defined outside the loop
  // A masked load in an address (a paged cache's block-table entry) is loaded again for the
  // later iteration when its copies are issued, its mask also cut to iterations in range (a
  // load that no ring takes: one a ring took would be read from its stage instead).
  bool indirect = def->kind() == ir::OpKind::Load && def->numOperands() >= 2 &&
                  !def->hasAttr("tensor_rank") && !ringCandidate(*def, threads);
  if (!recomputable(def->kind()) && !indirect)
    return Dependence::Other;
  Dependence d = Dependence::Invariant;
  for (const ir::Value *o : def->operands())
    d = combine(d, dependence(o, body, seen, affine, threads));
  return d;
}

// True when `load` can be one bulk copy per stage: its addresses are one contiguous run over the
// whole block, 16-byte aligned, and the lanes it reads are a prefix whose length in bytes is a
// multiple of 16 (the copy's granule): no mask, or `index < bound` with `index` contiguous and
// both sides divisible by 16 bytes' worth of elements.
bool bulkCopyable(const ir::Op &load, const AxisAnalysis &axis) {
  const ir::Type &t = load.result()->type();
  if (t.rank() != 1) // a tile of rows is no single run
    return false;
  int64_t n = t.numElements(), bytes = ir::byteWidth(t.kind());
  AxisInfo ptr = axis.get(load.operand(0));
  if (ptr.contiguity[0] < n || ptr.divisibility[0] < 16 || n * bytes % 16 != 0)
    return false;
  if (load.numOperands() == 1)
    return true;
  const ir::Op *cmp = load.operand(1)->definingOp();
  if (!cmp || cmp->kind() != ir::OpKind::Cmp || cmp->strAttr("pred") != "lt")
    return false;
  AxisInfo index = axis.get(cmp->operand(0)), bound = axis.get(cmp->operand(1));
  int64_t granule = 16 / std::min<int64_t>(bytes, 16);
  return index.contiguity[0] >= n && bound.constancy[0] >= n &&
         index.divisibility[0] % granule == 0 && bound.divisibility[0] % granule == 0;
}

// Plans one loop whose rings may start at `base`; returns the bytes its rings take.
int64_t planLoop(ir::Function &fn, ir::Op &loop, const AxisAnalysis &axis, bool bulk,
                 int64_t threads, int64_t base, int64_t maxSharedBytes, int64_t align) {
  if (loop.intAttr("num_stages") < 2)
    return 0;
  const ir::Block &body = *loop.body();
  std::unordered_set<const ir::Value *> affine;
  for (const AffineCarry &c : affineCarries(loop))
    affine.insert(body.argument(c.arg));
  std::vector<ir::Op *> loads, residents;
  int64_t bytesPerStage = 0, residentBytes = 0;
  for (auto &op : loop.body()->ops()) {
    if (!ringCandidate(*op, threads))
      continue;
    std::unordered_set<const ir::Value *> seen;
    Dependence d = Dependence::Invariant;
    for (const ir::Value *o : op->operands())
      d = combine(d, dependence(o, body, seen, affine, threads));
    if (d == Dependence::Other)
      continue;
    (d == Dependence::Invariant ? residentBytes : bytesPerStage) += bufferBytes(*op, align);
    (d == Dependence::Invariant ? residents : loads).push_back(op.get());
  }
  if (loads.empty()) // a loop without a ring keeps its invariant loads as they are
    return 0;
  // Resident loads are copied per thread (cp.async) whatever the ring's kind.
  bulk = bulk && std::all_of(loads.begin(), loads.end(),
                             [&](const ir::Op *load) { return bulkCopyable(*load, axis); });
  // Bulk rings end with one "full" and one "empty" mbarrier (8 bytes each) per buffer.
  int64_t barrierBytesPerBuffer = bulk ? 16 : 0;
  int64_t spare = bulk ? 1 : 0; // stages without a buffer of their own
  int64_t left = maxSharedBytes - base - residentBytes; // for the ring's stages
  int64_t fit = left / (bytesPerStage + barrierBytesPerBuffer);
  int64_t buffers = std::min<int64_t>(loop.intAttr("num_stages") - spare, fit);
  if (buffers + spare < 2) {
    // Not even double buffering fits: the loop stays plain, its loads synchronous and held in
    // registers, which can cost far more than the ring would have saved (a persistent head_dim
    // 256 attention walk spilled 1740 bytes and ran 12 times slower; docs/notes/attention.md,
    // "Persistent forward"). Said, not thrown: the kernel still computes the right result.
    std::string where = loop.loc().known() ? loop.loc().str() : "kernel '" + fn.name() + "'";
    log().warn("{}: a loop with num_stages = {} runs unpipelined: its ring ({} bytes a stage) "
               "does not fit in the {} bytes of shared memory left beside the kernel's other "
               "buffers ({} a CTA); use smaller tiles or fewer stages",
               where, loop.intAttr("num_stages"), bytesPerStage + barrierBytesPerBuffer,
               std::max<int64_t>(0, left), maxSharedBytes);
    return 0;
  }
  loop.setAttr("pipeline_stages", buffers + spare);
  int64_t offset = base;
  for (ir::Op *load : residents) {
    int64_t bytes = bufferBytes(*load, align);
    load->setAttr("pipelined", int64_t(1));
    load->setAttr("resident", int64_t(1));
    load->setAttr("smem_offset", offset);
    load->setAttr("stage_bytes", bytes);
    offset += bytes;
  }
  for (ir::Op *load : loads) {
    int64_t bytes = bufferBytes(*load, align);
    load->setAttr("pipelined", int64_t(1));
    load->setAttr("smem_offset", offset);
    load->setAttr("stage_bytes", bytes);
    offset += bytes * buffers;
  }
  if (bulk) {
    loop.setAttr("bulk_barriers", offset);
    offset += barrierBytesPerBuffer * buffers;
  }
  return offset - base;
}

// Loops of one block run one after another, so their rings share the space from `base` (the
// lowering puts a barrier before each prologue); a nested loop's rings go after its parent's.
// Returns the end of the highest ring (0 when none was planned).
int64_t planBlock(ir::Function &fn, ir::Block &block, const AxisAnalysis &axis, bool bulk,
                  int64_t threads, int64_t base, int64_t maxSharedBytes, int64_t align) {
  int64_t end = 0;
  for (auto &op : block.ops()) {
    if (op->kind() != ir::OpKind::For)
      continue;
    // A top-level loop of a kernel with a dot may put its rings over the buffers of the ops
    // after it (allocateSharedMemory's {smem_live}); the lowering then synchronizes the CTA
    // when the loop ends ({ring_reuses_smem}). Cluster mbarriers stay live throughout.
    int64_t at = base;
    if (op->hasAttr("smem_live") && !fn.intAttr("cluster_barriers"))
      at = std::min(base, alignTo(op->intAttr("smem_live"), align));
    int64_t own = planLoop(fn, *op, axis, bulk, threads, at, maxSharedBytes, align);
    if (own > 0 && at < base)
      op->setAttr("ring_reuses_smem", int64_t(1));
    end = std::max({end, own > 0 ? at + own : 0,
                    planBlock(fn, *op->body(), axis, bulk, threads, at + own, maxSharedBytes,
                              align)});
  }
  return end;
}

} // namespace

void pipelineLoads(ir::Function &fn, int numWarps, int64_t maxSharedBytes, bool bulkCopies) {
  int64_t used = fn.intAttr("shared_bytes").value_or(0);
  AxisAnalysis axis(fn);
  int64_t align = ir::findFirst(fn.body(), ir::OpKind::Dot) ? kDotTileAlignment : 128;
  int64_t base = alignTo(used, align);
  int64_t end = planBlock(fn, fn.body(), axis, bulkCopies, 32 * int64_t(numWarps), base,
                          maxSharedBytes, align);
  if (end > used) // some ring was planned past the other buffers
    fn.setAttr("shared_bytes", end);
}

} // namespace tritium
