// Feeding dot from the pipeliner's rings (GIR): a 16-bit dot operand, or any wgmma dot's
// operand (ChooseDotInstructions.cpp; its b K-major unless 16-bit), that is a tile loaded by
// a cp.async ring of the dot's own loop, [M, K] for a or [K, N] for b, is read by the dot
// straight from the ring's stage buffer, instead of from registers staged into shared memory
// again. Such a load gets {swizzle = 128}: its tile sits in the buffer row-major with each
// 16-byte chunk's index XORed with bits 7-9 of its offset (the layout TMA calls SWIZZLE_128B),
// so that the eight row addresses of an ldmatrix hit eight different bank groups; a tile of
// 64- or 32-byte rows gets {swizzle = 64} or {swizzle = 32}, TMA's SWIZZLE_64B and _32B. A load
// whose users all read it so (dots) also gets {dot_only = 1}: no thread reads it into registers. The
// dot records which operands it takes from rings: {ring_a = 1}, {ring_b = 1}. b may also be
// trans() of a [N, K] tile, as nn.Linear's weights are stored: the dot then reads that tile
// K-major ({b_k_major}), and the transpose is never made ({dot_only} on the trans, whatever
// else reads the tile).
//
// A wgmma dot (ChooseDotInstructions.cpp) reads its tiles through descriptors, in SWIZZLE_128B
// panels of 64 columns (codegen/LayoutIndexing.cpp, dotTileOffset), and a's rows permuted
// within each 16 ({permute_rows = 1}) so that its accumulator is the blocked layout mma.sync's
// is; a {byte_fragment_columns} dot's b has its rows permuted so too ({permute_rows = 2}).
// Its tiles' copies are made visible to the tensor cores' async proxy by a fence
// ({async_proxy}).
//
// Bulk rings are left out: a bulk buffer is refilled as soon as the body's pipelined loads
// have read it, before the dot would. A ring with such a tile waits for its stage and then
// synchronizes the CTA at the top of each iteration (codegen/LowerPipelinedLoop.cpp): every
// warp reads tiles other threads copied, and the refill of the previous iteration's stage must
// wait for every warp's reads of it.
#include "compiler/gpu/GpuPasses.h"

#include <algorithm>
#include <functional>
#include <unordered_map>

namespace tritium {

void feedDotsFromRings(ir::Function &fn) {
  std::unordered_map<const ir::Value *, int> uses;
  ir::walk(fn.body(), [&](ir::Op &op) {
    for (const ir::Value *v : op.operands())
      ++uses[v];
  });
  std::unordered_map<ir::Op *, int> readInPlace; // a ring tile's uses that a dot reads in place
  ir::walk(fn.body(), [&](ir::Op &op) {
    if (op.kind() != ir::OpKind::Dot || op.operand(0)->type().rank() != 2 ||
        !dotStagesSwizzled(op))
      return;
    bool wgmma = op.hasAttr("wgmma");
    bool sixteenBit = ir::bitWidth(op.operand(0)->type().kind()) == 16;
    for (unsigned i = 0; i < 2; ++i) {
      ir::Op *load = op.operand(i)->definingOp();
      // b as trans() of a [N, K] tile: read in place, K-major ({b_k_major}).
      ir::Op *trans = nullptr;
      if (i == 1 && load && load->kind() == ir::OpKind::Trans &&
          uses[load->result()] == 1) {
        trans = load;
        load = trans->operand(0)->definingOp();
      } else if (i == 1 && !sixteenBit) {
        continue; // wgmma reads 8- and 32-bit b K-major only: it is staged transposed
      }
      // A resident load (one the loop does not change, copied once before it: attention's
      // query tile) is read in place from its buffer in every iteration.
      if (!load || load->kind() != ir::OpKind::Load || !load->hasAttr("pipelined") ||
          load->parentBlock() != op.parentBlock())
        continue;
      // The copies move 16-byte runs along the tile's rows, which the swizzled tile keeps
      // whole; a tile whose runs go down its columns keeps its plain ring.
      const ir::Value *tile = load->result();
      if (ir::LayoutMap(*tile->layout(), tile->type().shape()).root().order()[0] != 1)
        continue;
      const ir::Op *loop = load->parentBlock()->parentOp();
      if (!loop || loop->hasAttr("bulk_barriers"))
        continue;
      // A tile read by two dots must suit both: a wgmma dot's a has its rows permuted, and so
      // has the b of a dot whose accumulator is an 8-bit fragment (ByteFragmentColumns.cpp).
      RowOrder order = dotOperandRowOrder(op, i);
      if (load->hasAttr("swizzle") && rowOrderOf(*load) != order)
        continue;
      // (The span: 128 for rows of 128 bytes or more, else the row's 64 or 32 bytes.)
      int64_t rowBytes = tile->type().shape()[1] * ir::byteWidth(tile->type().kind());
      int64_t span = dotSwizzleBytes(rowBytes);
      load->setAttr("swizzle", span ? span : int64_t(128));
      if (order != RowOrder::AsIs)
        load->setAttr("permute_rows", int64_t(order));
      if (wgmma) // wgmma reads through the async proxy: the copies need a proxy fence
        load->setAttr("async_proxy", int64_t(1));
      ++readInPlace[load];
      if (trans) {
        trans->setAttr("dot_only", int64_t(1)); // nothing to transpose in registers
        op.setAttr("b_k_major", int64_t(1));
      }
      op.setAttr(i == 0 ? "ring_a" : "ring_b", int64_t(1));
    }
  });
  // A tile that every user reads in place (dots, directly or under a trans: the backward's
  // query tile feeds one product as it is and another transposed) is never read into
  // registers.
  for (auto &[load, n] : readInPlace)
    if (n == uses[load->result()])
      load->setAttr("dot_only", int64_t(1));
  // A wgmma dot that reads both tiles from its loop's ring, accumulates into the loop's carried
  // value and gives its result only to the next iteration stays in flight across iterations:
  // it waits for the previous iteration's wgmma, not its own ({in_flight} on the dot,
  // {wgmma_in_flight} on the loop, whose ring then refills the stage read two iterations ago).
  ir::walk(fn.body(), [&](ir::Op &op) {
    if (op.kind() != ir::OpKind::Dot || !op.hasAttr("wgmma") || !op.hasAttr("ring_a") ||
        !op.hasAttr("ring_b"))
      return;
    ir::Block *body = op.parentBlock();
    ir::Op *loop = body->parentOp();
    if (!loop || loop->kind() != ir::OpKind::For || loop->intAttr("pipeline_stages") < 3 ||
        uses[op.result()] != 1)
      return;
    const ir::Op *yield = body->ops().back().get();
    bool carried = false;
    for (unsigned i = 0; i < yield->numOperands(); ++i)
      carried = carried || (yield->operand(i) == op.result() &&
                            op.operand(2) == body->argument(i + 1) &&
                            uses[body->argument(i + 1)] == 1);
    unsigned wgmmas = 0;
    for (auto &other : body->ops())
      wgmmas += other->kind() == ir::OpKind::Dot && other->hasAttr("wgmma");
    if (!carried || wgmmas != 1 || yield->kind() != ir::OpKind::Yield)
      return;
    op.setAttr("in_flight", int64_t(1));
    loop->setAttr("wgmma_in_flight", int64_t(1));
  });
  // Any other wgmma dot that stages nothing (its tiles in rings, a in registers) is waited for
  // at its result's first use, not at once ({deferred_wait}, codegen/LowerToLLVM.cpp): the
  // ops between run while the tensor cores work, and independent products go out together
  // under one wait. A staged operand's buffer lies in the loop's staging pool, which the next
  // staging op may overwrite, so such dots wait at once.
  ir::walk(fn.body(), [&](ir::Op &op) {
    if (op.kind() == ir::OpKind::Dot && op.hasAttr("wgmma") && !op.hasAttr("in_flight") &&
        (op.hasAttr("ring_a") || op.hasAttr("a_regs")) && op.hasAttr("ring_b"))
      op.setAttr("deferred_wait", int64_t(1));
  });
  // Operands that allocateSharedMemory expected from a ring and that no ring brings in: in the
  // staging pool of the loop they run in where they fit beside the op's other buffer (the
  // pool's buffers live only while their op runs), else after everything.
  int64_t end = fn.intAttr("shared_bytes").value_or(0), start = end;
  // `allocate(at)` gives the op its buffer at the first aligned offset from `at` and returns
  // the buffer's end; a placement past the pool is made again after everything.
  auto place = [&](ir::Op &op, const std::function<int64_t(int64_t)> &allocate) {
    const ir::Op *top = &op;
    while (top->parentBlock() && top->parentBlock()->parentOp())
      top = top->parentBlock()->parentOp();
    if (top != &op && top->hasAttr("smem_pool")) {
      int64_t at = top->intAttr("smem_pool"), poolEnd = top->intAttr("smem_pool_end");
      if (op.kind() == ir::OpKind::Dot) // after the dot's other buffer, if it is there
        for (unsigned i = 0; i < 2; ++i)
          if (const char *attr = i == 0 ? "smem_offset" : "smem_b";
              op.hasAttr(attr) && op.intAttr(attr) >= at && op.intAttr(attr) < poolEnd)
            at = std::max(at, op.intAttr(attr) + dotStagingBytes(op, i));
      if (allocate(at) <= poolEnd)
        return;
    }
    end = allocate(end);
  };
  ir::walk(fn.body(), [&](ir::Op &op) {
    if (op.kind() == ir::OpKind::Trans && !op.hasAttr("dot_only") &&
        !op.hasAttr("smem_offset")) { // expected to feed a dot from a ring, and did not
      place(op, [&](int64_t at) { return allocateStagedBlock(op, at); });
      return;
    }
    if (op.kind() != ir::OpKind::Dot)
      return;
    for (unsigned i = 0; i < 2; ++i) {
      bool wanted = i == 0 ? !op.hasAttr("ring_a") && !op.hasAttr("smem_offset") &&
                                 !op.hasAttr("a_regs")
                           : !op.hasAttr("ring_b") && !op.hasAttr("smem_b");
      if (wanted)
        place(op, [&, i](int64_t at) { return allocateDotStaging(op, i, at); });
    }
  });
  if (end != start)
    fn.setAttr("shared_bytes", end);
}

} // namespace tritium
