// Warp specialization (GIR, after ChooseTensorMaps): a loop written `range(...)
// .warp_specialize()` whose ring is copied by TMA alone gets a producer warp group of its own.
// The CTA gains 4 warps past num_warps; one lane of them issues the ring's copies, running ahead
// of the compute warps by as many stages as the ring holds, and waits for a stage to be released
// before it refills it. The compute warps then neither issue copies nor meet at a CTA barrier
// each iteration: each waits for its stage's "full" mbarrier and, once done with the stage,
// arrives on its "empty" mbarrier (one arrival per warp), so that warp groups may drift apart.
// The producer is a whole warp group so that, on sm_90a, `setmaxnreg` can hand its registers
// to the compute warps: with 8 + 1 warps ptxas gave the attention forward 168 registers a
// thread and spilled, where it needs about 210 (docs/notes/tensor-cores.md). Recorded as
//   kernel {producer_warps = 4, producer_registers = 24, compute_registers = 240}
//   for    {warp_specialized = 1, empty_barriers = O}   (one mbarrier per stage, from byte O)
// Asked with range(...).ping_pong() ({ping_pong_asked}), two compute warp groups whose loop
// body runs two or more wgmma products (attention's S = Q K^T and O += P V) take turns at the
// tensor cores ("ping-pong", as FlashAttention-3 schedules them): group g waits for its turn
// before the body's last product and hands the turn over after the first product of its next
// iteration, so that one group's softmax runs while the other's products do. Named barriers 2
// and 3 carry the turns; the body must then need no CTA barrier of its own (no op in it holds
// shared memory besides the ring's tiles):
//   for    {ping_pong = 1}    or    {ping_pong_skipped = "reason"}
// Where a loop asks and cannot have it, the loop keeps its plain ring and says why:
//   for    {warp_specialize_skipped = "reason"}
// The producer runs the kernel's code before the loop as a double of warps 0-3 (it needs the
// loop's bounds and the tiles' offsets), so that code may only compute and read: the loop must
// be at the kernel's top level with no store, atomic, print, ring or other loop before it.
// A persistent kernel nests the loop in one top-level loop over its tiles, the epilogue after
// it: the warps then split before that outer loop, whose iterations the producer walks too,
// running the outer body's scalar code that the inner loop's bounds and tiles need (no more),
// so that it fills the ring with the next tile's first steps while the compute warps run this
// tile's epilogue (LowerWarpSpecialization.cpp). The outer loop carries nothing but its
// induction variable, its body before the inner loop only computes and reads, and no other
// loop in it has a ring:
//   for    {warp_split = 1}   (the outer loop; the ring's stages count across its iterations)
// Asked on that outer loop (range(...).ping_pong() on the tile walk), the kernel, traced for one
// warp group (num_warps 4), gets two compute warp groups that take alternate iterations of the
// walk, each a program with its own accumulators and its own copy of the buffers below the
// ring (group 1's after everything); both take their tiles from the one ring, which the
// producer fills in the walk's order (CUTLASS's ping-pong kernel):
//   kernel {compute_groups = 2, group_smem_shift = S}   for {ping_pong = 1}   (the walk)
// It needs the inner loop's bounds to be the same for every tile (a group finds its tile's
// place in the ring from the trip count), no clusters, no resident tiles and no buffer past
// the ring; elsewhere the walk says why: {ping_pong_skipped = "reason"}.
#include "compiler/analysis/ProducerPrefix.h"
#include "compiler/gpu/GpuPasses.h"

#include <algorithm>
#include <string>

namespace tritium {

namespace {

constexpr int64_t kProducerWarps = 4, kProducerRegisters = 24;

int64_t alignTo(int64_t bytes, int64_t align) { return (bytes + align - 1) / align * align; }

// Whether the producer may run `op` as the compute warps do: it computes or reads.
bool harmless(const ir::Op &op) {
  return op.numRegions() == 0 &&
         (ir::trait(op) != ir::OpTrait::Effect || op.kind() == ir::OpKind::Assume ||
          op.kind() == ir::OpKind::GridDepWait);
}

// Why the code of `block` before `until` cannot run in the producer too, or "".
std::string impureBefore(const ir::Block &block, const ir::Op &until, const char *where) {
  for (const auto &op : block.ops()) {
    if (op.get() == &until)
      break;
    if (!harmless(*op))
      return std::string("'") + op->name() + "' before the " + where +
             ": the producer warp runs that code too, so it may only compute and read";
  }
  return "";
}

// Why the outer loop `outer` of a nested warp-specialized `loop` cannot be split before (see
// above), or "".
std::string nestedRefusal(const ir::Op &outer, const ir::Op &loop) {
  if (outer.kind() != ir::OpKind::For)
    return "only a loop at the kernel's top level, or in a top-level loop, is warp-specialized";
  if (outer.numOperands() > 3)
    return "the outer loop carries values, which the producer warp cannot compute";
  if (std::string why = impureBefore(*outer.body(), loop, "inner loop"); !why.empty())
    return why;
  // Loops after the inner one run in the compute warps alone (a stream-K tile's wait for the
  // partial products of other programs); one with a ring of its own would need the producer.
  std::string other;
  ir::walk(*outer.body(), [&](ir::Op &op) {
    if (op.kind() == ir::OpKind::For && &op != &loop && op.hasAttr("pipeline_stages"))
      other = "another loop with a ring in the outer loop: the producer walks the inner loop's "
              "ring alone";
  });
  if (!other.empty())
    return other;
  // The producer evaluates, in one lane, the outer body's ops that the inner loop's bounds and
  // the tiles' offsets need: scalars alone.
  std::string block;
  for (const ir::Op *op : producerPrefix(outer, loop))
    if (op->numResults() > 0 && op->result()->type().rank() > 0)
      block = std::string("'") + op->name() + "' gives the ring's offsets a block, not a scalar";
  return block;
}

// Why `loop` (asking for warp specialization) cannot have it, or "" where it can.
std::string refusal(const ir::Function &fn, const ir::Op &loop, bool claimed) {
  if (claimed)
    return "another loop of the kernel has the producer warp";
  const ir::Op *outer = loop.parentBlock()->parentOp();
  bool nested = loop.parentBlock() != &fn.body();
  if (nested && (!outer || outer->parentBlock() != &fn.body()))
    return "only a loop at the kernel's top level, or in a top-level loop, is warp-specialized";
  // Clusters alone are fine (a multicast ring's producers fill each other's stages); their
  // reductions count every warp of each program.
  bool clusterReductions = ir::findFirst(fn.body(), ir::OpKind::ClusterMax) ||
                           ir::findFirst(fn.body(), ir::OpKind::ClusterSum) ||
                           ir::findFirst(fn.body(), ir::OpKind::ClusterGather);
  if (fn.intAttr("programs_per_cta").value_or(1) > 1 || clusterReductions)
    return "programs per CTA and cluster reductions keep every warp computing";
  if (!loop.hasAttr("tensor_barriers"))
    return "the loop's tiles are not copied by TMA (tensor descriptors on sm_90)";
  for (const auto &op : loop.body()->ops())
    if (op->hasAttr("pipelined") && !op->hasAttr("resident") && !op->hasAttr("tensor_map"))
      return "a load of the ring is copied per thread (cp.async), not by TMA";
  std::string why = impureBefore(fn.body(), nested ? *outer : loop, "loop");
  if (why.empty() && nested)
    why = nestedRefusal(*outer, loop);
  return why;
}

// Why the compute warp groups of `loop` cannot take turns at its products (see above), or "".
std::string noPingPong(const ir::Op &loop, int numWarps) {
  if (numWarps != 8)
    return "ping-pong takes two compute warp groups (num_warps 8)";
  int products = 0;
  for (const auto &op : loop.body()->ops()) {
    // A region that only computes (a mask applied on some steps) runs within either turn.
    std::string inner;
    for (unsigned r = 0; r < op->numRegions(); ++r)
      ir::walk(*op->region(r), [&](ir::Op &o) {
        if (o.kind() == ir::OpKind::Dot || o.numRegions() > 0 || o.hasAttr("smem_offset") ||
            o.hasAttr("smem_b") ||
            (ir::trait(o) == ir::OpTrait::Effect && o.kind() != ir::OpKind::Yield))
          inner = std::string("'") + o.name() + "' in a region of the body";
      });
    if (!inner.empty())
      return inner + ": only a region that computes in registers may run in a turn";
    if (op->kind() == ir::OpKind::Dot) {
      if (!op->hasAttr("wgmma"))
        return "a product of the body does not run on wgmma";
      ++products;
    }
    // Staging or exchanges through shared memory meet at CTA barriers, which the groups, half
    // an iteration apart, would reach out of turn.
    if ((op->hasAttr("smem_offset") && !op->hasAttr("pipelined")) || op->hasAttr("smem_b"))
      return std::string("'") + op->name() + "' in the body goes through shared memory";
  }
  return products >= 2 ? "" : "the body runs fewer than two products";
}

// Whether `v`, used in the body of `outer`, depends on its induction variable.
bool dependsOnInduction(const ir::Op &outer, const ir::Value *v) {
  if (v == outer.body()->argument(0))
    return true;
  const ir::Op *def = v->definingOp();
  if (!def || def->parentBlock() != outer.body())
    return false; // defined outside the outer loop (or a block argument of another op)
  for (const ir::Value *operand : def->operands())
    if (dependsOnInduction(outer, operand))
      return true;
  return false;
}

// Where the inner loop's ring starts: its tiles' stages and full mbarriers.
int64_t ringStart(const ir::Op &loop) {
  int64_t start = loop.intAttr("tensor_barriers");
  for (const auto &op : loop.body()->ops())
    if (op->hasAttr("pipelined"))
      start = std::min(start, op->intAttr("smem_offset"));
  return start;
}

// Why the compute warps of the persistent kernel around `loop` cannot form groups that take
// alternate tiles (see above), or "".
std::string noTileGroups(ir::Function &fn, const ir::Op &outer, const ir::Op &loop,
                         int numWarps) {
  if (numWarps != 4)
    return "alternate tiles take compute groups of one warp group each (num_warps 4)";
  if (fn.intAttr("cluster_size").value_or(1) > 1)
    return "alternate tiles and clusters do not go together";
  for (unsigned i = 0; i < 3; ++i)
    if (dependsOnInduction(outer, loop.operand(i)))
      return "the inner loop's bounds change from tile to tile: each group must know where "
             "the other's tiles leave the ring";
  for (const auto &op : loop.body()->ops())
    if (op->hasAttr("resident"))
      return "a resident tile of the inner loop would be the groups' to share";
  // Each group has its own copy of the buffers below the ring (the second copy goes after
  // everything); one placed past the ring would need its own.
  int64_t start = ringStart(loop);
  std::string past;
  ir::walk(fn.body(), [&](ir::Op &op) {
    if (op.hasAttr("pipelined"))
      return;
    for (const char *attr : {"smem_offset", "smem_b"})
      if (op.hasAttr(attr) && op.intAttr(attr) >= start)
        past = std::string("'") + op.name() + "' has a buffer past the ring";
  });
  return past;
}

} // namespace

void specializeWarps(ir::Function &fn, const std::string &arch, int numWarps,
                     int64_t maxSharedBytes) {
  bool claimed = false;
  ir::walk(fn.body(), [&](ir::Op &loop) {
    if (loop.kind() != ir::OpKind::For || !loop.hasAttr("warp_specialize") ||
        !loop.hasAttr("pipeline_stages"))
      return;
    std::string why = refusal(fn, loop, claimed);
    int64_t stages = loop.intAttr("pipeline_stages");
    int64_t at = alignTo(fn.intAttr("shared_bytes").value_or(0), 8);
    if (why.empty() && at + 8 * stages > maxSharedBytes)
      why = "no shared memory is left for the stages' empty mbarriers";
    if (!why.empty()) {
      loop.setAttr("warp_specialize_skipped", why);
      return;
    }
    claimed = true;
    if (loop.parentBlock() != &fn.body())
      loop.parentBlock()->parentOp()->setAttr("warp_split", int64_t(1));
    loop.setAttr("warp_specialized", int64_t(1));
    loop.setAttr("empty_barriers", at);
    if (loop.hasAttr("ping_pong_asked")) {
      std::string no = noPingPong(loop, numWarps);
      if (no.empty())
        loop.setAttr("ping_pong", int64_t(1));
      else
        loop.setAttr("ping_pong_skipped", no);
    }
    fn.setAttr("shared_bytes", at + 8 * stages);
    fn.setAttr("producer_warps", int64_t(kProducerWarps));
    int64_t groups = 1;
    if (ir::Op *outer = loop.parentBlock()->parentOp(); outer && outer->hasAttr("ping_pong_asked")) {
      std::string no = noTileGroups(fn, *outer, loop, numWarps);
      // Group 1's buffers: a copy of those below the ring, after everything (1024-aligned, as
      // swizzled tiles need).
      int64_t below = ringStart(loop), shift = alignTo(at + 8 * stages, 1024);
      if (no.empty() && shift + below > maxSharedBytes)
        no = "no shared memory is left for the second group's buffers (" +
             std::to_string(below) + " bytes)";
      if (no.empty()) {
        groups = 2;
        outer->setAttr("ping_pong", int64_t(1));
        fn.setAttr("compute_groups", groups);
        fn.setAttr("group_smem_shift", shift);
        fn.setAttr("shared_bytes", shift + below);
      } else {
        outer->setAttr("ping_pong_skipped", no);
      }
    }
    if (arch.size() > 1 && arch.back() == 'a') { // setmaxnreg: sm_90a and its kin
      // The register file's 64K, less the producer's, shared by the compute warps, in
      // steps of 8 and at most 240 (what FlashAttention-3 gives its two consumer groups).
      int64_t compute =
          (65536 - 32 * kProducerWarps * kProducerRegisters) / (32 * numWarps * groups);
      fn.setAttr("producer_registers", kProducerRegisters);
      fn.setAttr("compute_registers", std::min<int64_t>(240, compute / 8 * 8));
    }
  });
  // A tile walk asking for groups whose inner loop got no producer says so too.
  ir::walk(fn.body(), [&](ir::Op &loop) {
    if (loop.kind() == ir::OpKind::For && loop.hasAttr("ping_pong_asked") &&
        !loop.hasAttr("pipeline_stages") && !loop.hasAttr("ping_pong") &&
        !loop.hasAttr("ping_pong_skipped"))
      loop.setAttr("ping_pong_skipped",
                   std::string("no warp-specialized loop in its body takes the tiles"));
  });
}

} // namespace tritium
