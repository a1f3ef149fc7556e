// Which wgmma dots leave their accumulator as an 8-bit a fragment (GIR, after
// ChooseDotInstructions, before layout assignment).
//
// fp8 attention casts its scores S = Q K^T to e4m3 as P and hands P to P V's wgmma in
// registers. wgmma's 8-bit a fragment holds, per 16 columns of K, columns 4c .. 4c + 3 in lane
// c of each quad; a wgmma accumulator holds the pairs 2c, 2c + 1 of each 8. Computed as they
// are, the scores then need the lanes of each quad to trade their pairs (two shuffles a
// fragment row, LowerDot.cpp). The product can instead compute its columns in another order:
// with b's rows ([N, K], K-major) permuted within each 16 so that row 8j + 2c + h of the tile
// in shared memory holds row 4c + 2j + h (RowOrder::ByteFragmentColumns), accumulator column
// 8j + 2c + h of lane c is block column 4c + 2j + h, and lane c holds 4c .. 4c + 3, the 8-bit
// fragment's columns. The accumulator's layout says so (dotByteFragmentLayout: blocked, 2 x 4
// elements a thread), so everything computed from it (the softmax, the masks over column
// indices, the row reductions) follows from the layout, and P goes to the next product with
// one byte packing a register and no shuffle.
//
// Such a dot gets {byte_fragment_columns = 1}: a wgmma dot whose b is read K-major whatever
// the rings become (8- and 32-bit operands) and whose result reaches the a of an 8-bit wgmma
// dot of the same shape through elementwise ops and the branches of an if.
// Its b is then placed so by every path that writes it to shared memory: TMA (a 5-D box,
// ChooseTensorMaps.cpp), the cp.async ring's copies and the staging (dotTileOffset).
#include "compiler/gpu/GpuPasses.h"

#include <unordered_set>

namespace tritium {

namespace {

// wgmma reads 8- and 32-bit b K-major always; a 16-bit b only where a ring holds it under a
// trans, which is known after the rings are planned, so 16-bit products keep their columns.
bool readsBKMajor(const ir::Op &dot) {
  return ir::byteWidth(dot.operand(0)->type().kind()) != 2;
}

// The wgmma dots whose results reach `v` through elementwise ops of v's shape and the
// branches of ifs (a masked step's scores), at most `depth` ops back.
void producerDots(const ir::Value *v, int depth, std::unordered_set<ir::Op *> &out,
                  std::unordered_set<const ir::Value *> &seen) {
  if (depth == 0 || !seen.insert(v).second)
    return;
  ir::Op *def = const_cast<ir::Op *>(v->definingOp());
  if (!def)
    return;
  if (def->kind() == ir::OpKind::Dot) {
    if (def->hasAttr("wgmma") && def->operand(0)->type().rank() == 2 && readsBKMajor(*def))
      out.insert(def);
    return;
  }
  if (def->kind() == ir::OpKind::If) {
    for (unsigned i = 0; i < def->numResults(); ++i)
      if (def->result(i) == v)
        for (unsigned r = 0; r < def->numRegions(); ++r)
          producerDots(def->region(r)->terminator()->operand(i), depth - 1, out, seen);
    return;
  }
  if (!ir::isElementwise(def->kind()) || def->kind() == ir::OpKind::InlineAsm)
    return;
  for (const ir::Value *operand : def->operands())
    if (operand->type().isBlock() && operand->type().shape() == v->type().shape())
      producerDots(operand, depth - 1, out, seen);
}

} // namespace

void chooseByteFragmentColumns(ir::Function &fn) {
  ir::walk(fn.body(), [&](ir::Op &op) {
    if (op.kind() != ir::OpKind::Dot || !op.hasAttr("wgmma") ||
        ir::bitWidth(op.operand(0)->type().kind()) != 8)
      return;
    std::unordered_set<ir::Op *> dots;
    std::unordered_set<const ir::Value *> seen;
    producerDots(op.operand(0), 32, dots, seen);
    for (ir::Op *dot : dots)
      dot->setAttr("byte_fragment_columns", int64_t(1));
  });
}

} // namespace tritium
