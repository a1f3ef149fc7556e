// dot's accumulator layout. An mma.sync m16n8 instruction leaves, in lane l of a warp, the
// accumulator elements of rows g and g + 8 (g = l / 4) and columns 2(l % 4) and + 1 of its
// 16 x 8 tile. Which 16 rows of the block the tile's rows stand for is the lowering's choice,
// as long as the A fragments are read from the same rows: taking rows 2g and 2g + 1 makes the
// placement a blocked layout, two rows by two columns per thread, 8 x 4 lanes per warp, and
// the warps tiled over M and N. The epilogue then needs no layout of its own. wgmma leaves
// rows g and g + 8 of each warp's 16 rows in the same registers; the lowering permutes A's
// rows in shared memory so that they too stand for rows 2g and 2g + 1 (LowerDot.cpp).
// A wgmma dot whose result becomes an 8-bit a (ByteFragmentColumns.cpp) has its b's rows
// permuted too, so that lane c holds columns 4c .. 4c + 3 of each 16, where wgmma's 8-bit a
// fragment wants them: the blocked layout of 2 x 4 elements a thread.
#include "compiler/gpu/GpuPasses.h"

namespace tritium {

ir::Layout dotAccumulatorLayout(const std::vector<int64_t> &shape, int numWarps,
                                bool warpGroups) {
  int rank = int(shape.size());
  // wgmma: warp w of a warp group owns rows 16w .. 16w + 15 of the group's 64-row slice, so
  // the warps go along M only (ChooseDotInstructions.cpp checks that M has room for them).
  if (warpGroups && rank == 2)
    return ir::Layout::blocked({2, 2}, {8, 4}, {numWarps, 1}, {1, 0});
  int64_t batches = rank == 3 ? shape[0] : 1, M = shape[size_t(rank - 2)],
          N = shape[size_t(rank - 1)];
  // Warps split the larger side of each warp's tile in two, while a tile of 16 x 8 per warp is
  // left; then the batch; then rows again (copies: more warps than tiles).
  int wm = 1, wn = 1, wb = 1;
  while (wm * wn * wb < numWarps) {
    if (M / wm >= N / wn && M / wm > 16)
      wm *= 2;
    else if (N / wn > 8)
      wn *= 2;
    else if (batches / wb > 1)
      wb *= 2;
    else
      wm *= 2;
  }
  if (rank == 3)
    return ir::Layout::blocked({1, 2, 2}, {1, 8, 4}, {wb, wm, wn}, {2, 1, 0});
  return ir::Layout::blocked({2, 2}, {8, 4}, {wm, wn}, {1, 0});
}

ir::Layout dotByteFragmentLayout(int numWarps) {
  return ir::Layout::blocked({2, 4}, {8, 4}, {numWarps, 1}, {1, 0});
}

ir::Layout dotAccumulatorLayout(const ir::Op &dot, int numWarps) {
  if (dot.hasAttr("byte_fragment_columns"))
    return dotByteFragmentLayout(numWarps);
  return dotAccumulatorLayout(dot.result()->type().shape(), numWarps, dot.hasAttr("wgmma"));
}

RowOrder rowOrderOf(const ir::Op &load) {
  return load.hasAttr("permute_rows") ? RowOrder(load.intAttr("permute_rows")) : RowOrder::AsIs;
}

RowOrder dotOperandRowOrder(const ir::Op &dot, unsigned operand) {
  if (!dot.hasAttr("wgmma"))
    return RowOrder::AsIs;
  if (operand == 0)
    return RowOrder::WgmmaA;
  return dot.hasAttr("byte_fragment_columns") ? RowOrder::ByteFragmentColumns : RowOrder::AsIs;
}

int64_t dotStagedRow(int64_t K, int bytes) { return K + 16 / bytes; }

} // namespace tritium
