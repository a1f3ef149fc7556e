// Software pipelining plan (GIR): in a `for` with num_stages >= 2, loads whose addresses, mask
// and `other` depend only on the induction variable and values from outside the loop are
// issued num_stages - 1 iterations ahead as cp.async copies into shared memory. This pass picks
// those loads, sizes the ring of stages to fit the shared memory left, and records the plan as
// attributes that the lowering follows:
//   for  {pipeline_stages = S}
//   load {pipelined = 1, smem_offset = B, stage_bytes = N}
#include "compiler/gpu/GpuPasses.h"

#include <algorithm>
#include <unordered_set>

namespace tritium {

namespace {

// Ops the lowering can evaluate again for a later iteration: pure and elementwise.
bool recomputable(ir::OpKind k) {
  switch (k) {
  case ir::OpKind::Constant: case ir::OpKind::ProgramId: case ir::OpKind::NumPrograms:
  case ir::OpKind::ClusterRank:
  case ir::OpKind::Arange: case ir::OpKind::Splat: case ir::OpKind::Add: case ir::OpKind::Sub:
  case ir::OpKind::Mul: case ir::OpKind::Div: case ir::OpKind::Rem: case ir::OpKind::Minimum:
  case ir::OpKind::Maximum: case ir::OpKind::And: case ir::OpKind::Or: case ir::OpKind::Cmp:
  case ir::OpKind::Select: case ir::OpKind::Neg: case ir::OpKind::Cast: case ir::OpKind::AddPtr:
    return true;
  default:
    return false;
  }
}

// True when every value `v` depends on inside `body` is the induction variable or comes from a
// recomputable op of the body.
bool dependsOnlyOnInductionVariable(const ir::Value *v, const ir::Block &body,
                                    std::unordered_set<const ir::Value *> &seen) {
  if (!seen.insert(v).second)
    return true;
  if (v->ownerBlock() == &body)
    return v == body.argument(0);
  const ir::Op *def = v->definingOp();
  if (!def || def->parentBlock() != &body)
    return true; // defined outside the loop: invariant
  if (!recomputable(def->kind()))
    return false;
  for (const ir::Value *o : def->operands())
    if (!dependsOnlyOnInductionVariable(o, body, seen))
      return false;
  return true;
}

// Plans one loop whose rings may start at `base`; returns the bytes its rings take.
int64_t planLoop(ir::Function &fn, ir::Op &loop, int64_t threads, int64_t base,
                 int64_t maxSharedBytes) {
  if (loop.intAttr("num_stages") < 2)
    return 0;
  const ir::Block &body = *loop.body();
  std::vector<ir::Op *> loads;
  int64_t bytesPerStage = 0;
  for (auto &op : loop.body()->ops()) {
    if (op->kind() != ir::OpKind::Load || !op->result()->type().isBlock())
      continue;
    const ir::Type &t = op->result()->type();
    if (t.numElements() < threads) // copies held by several threads: not worth a ring
      continue;
    int64_t bytes = std::max(1, ir::bitWidth(t.kind()) / 8);
    // Only whole 16-byte vectors (cp.async.cg): narrower copies cost as many instructions as
    // plain loads and push register pressure into spills.
    if (bytes * op->intAttr("vec") != 16)
      continue;
    std::unordered_set<const ir::Value *> seen;
    bool ok = true;
    for (const ir::Value *o : op->operands())
      ok = ok && dependsOnlyOnInductionVariable(o, body, seen);
    if (!ok)
      continue;
    loads.push_back(op.get());
    bytesPerStage += (t.numElements() * bytes + 15) / 16 * 16;
  }
  if (loads.empty())
    return 0;
  int64_t fit = bytesPerStage ? (maxSharedBytes - base) / bytesPerStage : 0;
  int64_t stages = std::min<int64_t>(loop.intAttr("num_stages"), fit);
  if (stages < 2)
    return 0; // not even double buffering fits: the loop stays plain
  loop.setAttr("pipeline_stages", stages);
  int64_t offset = base;
  for (ir::Op *load : loads) {
    const ir::Type &t = load->result()->type();
    int64_t bytes = (t.numElements() * std::max(1, ir::bitWidth(t.kind()) / 8) + 15) / 16 * 16;
    load->setAttr("pipelined", int64_t(1));
    load->setAttr("smem_offset", offset);
    load->setAttr("stage_bytes", bytes);
    offset += bytes * stages;
  }
  return offset - base;
}

// Loops of one block run one after another, so their rings share the space from `base` (the
// lowering puts a barrier before each prologue); a nested loop's rings go after its parent's.
// Returns the end of the highest ring.
int64_t planBlock(ir::Function &fn, ir::Block &block, int64_t threads, int64_t base,
                  int64_t maxSharedBytes) {
  int64_t end = base;
  for (auto &op : block.ops()) {
    if (op->kind() != ir::OpKind::For)
      continue;
    int64_t own = planLoop(fn, *op, threads, base, maxSharedBytes);
    end = std::max({end, base + own,
                    planBlock(fn, *op->body(), threads, base + own, maxSharedBytes)});
  }
  return end;
}

} // namespace

void pipelineLoads(ir::Function &fn, int numWarps, int64_t maxSharedBytes) {
  int64_t used = fn.intAttr("shared_bytes").value_or(0);
  int64_t end = planBlock(fn, fn.body(), 32 * int64_t(numWarps), (used + 15) / 16 * 16,
                          maxSharedBytes);
  if (end > used)
    fn.setAttr("shared_bytes", end);
}

} // namespace tritium
