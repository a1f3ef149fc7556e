// Where a thread's elements sit in their block, under its layout (compiler/ir/Layout.h): the
// thread's lane and warp coordinates per dimension, plus each register's constant offset,
// wrapped to the block's extent where the block is smaller than the layout's tile.
#include "compiler/codegen/Lowering.h"

namespace tritium::codegen {

int64_t Lowering::elementsPerThread(const ir::Value *v) const {
  if (!v->type().isBlock())
    return 1;
  return ir::LayoutMap(*v->layout(), v->type().shape()).elementsPerThread();
}

llvm::Value *Lowering::laneCoordinate(const ir::LayoutMap &map, int d) {
  int64_t count = map.root().threadsPerWarp()[size_t(d)];
  if (count == 1)
    return b.getInt32(0);
  llvm::Value *c = laneId;
  if (map.laneStride(d) > 1)
    c = b.CreateUDiv(c, b.getInt32(int32_t(map.laneStride(d))));
  if (map.laneStride(d) * count < 32)
    c = b.CreateURem(c, b.getInt32(int32_t(count)));
  return c;
}

llvm::Value *Lowering::warpCoordinate(const ir::LayoutMap &map, int d) {
  int64_t count = map.root().warpsPerCTA()[size_t(d)];
  if (count == 1)
    return b.getInt32(0);
  llvm::Value *c = warpId;
  if (map.warpStride(d) > 1)
    c = b.CreateUDiv(c, b.getInt32(int32_t(map.warpStride(d))));
  if (map.warpStride(d) * count < numWarps)
    c = b.CreateURem(c, b.getInt32(int32_t(count)));
  return c;
}

llvm::Value *Lowering::unwrappedCoordinate(const ir::LayoutMap &map, int d, int64_t reg) {
  const ir::Layout &root = map.root();
  int64_t spt = root.sizePerThread()[size_t(d)], tpw = root.threadsPerWarp()[size_t(d)];
  llvm::Value *threadPart;
  if (tpw == 32 && root.warpsPerCTA()[size_t(d)] == numWarps && map.laneStride(d) == 1 &&
      map.warpStride(d) == 1) {
    threadPart = b.CreateMul(tid, b.getInt32(int32_t(spt))); // every thread along this dim
  } else {
    threadPart = b.CreateAdd(
        b.CreateMul(laneCoordinate(map, d), b.getInt32(int32_t(spt))),
        b.CreateMul(warpCoordinate(map, d), b.getInt32(int32_t(spt * tpw))));
  }
  return b.CreateAdd(threadPart, b.getInt32(int32_t(map.registerOffset(d, reg))));
}

std::vector<llvm::Value *> Lowering::coordinates(const ir::Value *v, int64_t k) {
  ir::LayoutMap map(*v->layout(), v->type().shape());
  std::vector<int64_t> regs = map.registerIndex(k);
  std::vector<llvm::Value *> coords;
  for (int i = 0; i < v->type().rank(); ++i) {
    int d = map.rootDim(i);
    int64_t extent = map.rootShape()[size_t(d)];
    llvm::Value *c = unwrappedCoordinate(map, d, regs[size_t(d)]);
    if (extent < map.root().tile(d)) // smaller than the tile: threads wrap around it
      c = (extent & (extent - 1)) == 0 ? b.CreateAnd(c, b.getInt32(int32_t(extent - 1)))
                                       : b.CreateURem(c, b.getInt32(int32_t(extent)));
    coords.push_back(c);
  }
  return coords;
}

llvm::Value *Lowering::rowMajorIndex(const std::vector<llvm::Value *> &coords,
                                     const std::vector<int64_t> &shape) {
  llvm::Value *flat = b.getInt32(0);
  for (size_t d = 0; d < coords.size(); ++d)
    flat = b.CreateAdd(b.CreateMul(flat, b.getInt32(int32_t(shape[d]))), coords[d]);
  return flat;
}

llvm::Value *Lowering::rowMajorIndex(const ir::Value *v, int64_t k) {
  return rowMajorIndex(coordinates(v, k), v->type().shape());
}

llvm::Value *Lowering::elementIndex(const ir::Value *v, int64_t k) {
  if (v->type().rank() != 1)
    internalError("elementIndex of a block of rank " + std::to_string(v->type().rank()));
  return coordinates(v, k)[0];
}

llvm::Value *Lowering::ownsElement(const ir::Value *v, int64_t k, int rootDimOnly) {
  ir::LayoutMap map(*v->layout(), v->type().shape());
  std::vector<int64_t> regs = map.registerIndex(k);
  llvm::Value *owns = nullptr;
  for (int d = 0; d < int(regs.size()); ++d) {
    if (rootDimOnly >= 0 && d != rootDimOnly)
      continue;
    int64_t extent = map.rootShape()[size_t(d)];
    if (extent >= map.root().tile(d))
      continue;
    llvm::Value *c = unwrappedCoordinate(map, d, regs[size_t(d)]);
    llvm::Value *inside = b.CreateICmpULT(c, b.getInt32(int32_t(extent)));
    owns = owns ? b.CreateAnd(owns, inside) : inside;
  }
  return owns;
}

llvm::Value *swizzledOffset(Lowering &l, llvm::Value *offset, int64_t rowBytes) {
  auto &b = l.b;
  llvm::Type *ty = offset->getType();
  if (rowBytes == 32 || rowBytes == 64) { // bits 4 (.. 5) ^= bits 7 (.. 8)
    llvm::Value *phase = b.CreateAnd(b.CreateLShr(offset, llvm::ConstantInt::get(ty, 7)),
                                     llvm::ConstantInt::get(ty, rowBytes / 16 - 1));
    return b.CreateXor(offset, b.CreateShl(phase, llvm::ConstantInt::get(ty, 4)));
  }
  int shift = 7;
  for (int64_t r = 128; r < rowBytes; r *= 2)
    ++shift; // the row's index for rows of 128 bytes or more
  llvm::Value *phase = b.CreateAnd(b.CreateLShr(offset, llvm::ConstantInt::get(ty, shift)),
                                   llvm::ConstantInt::get(ty, 7));
  return b.CreateXor(offset, b.CreateShl(phase, llvm::ConstantInt::get(ty, 4)));
}

llvm::Value *dotTileOffset(Lowering &l, llvm::Value *row, llvm::Value *col, int64_t rows,
                           int64_t cols, int elementBytes, RowOrder order) {
  auto &b = l.b;
  auto c = [&](int64_t v) { return b.getInt32(int32_t(v)); };
  if (order == RowOrder::WgmmaA) // row 2j + h of each 16 at j + 8h
    row = b.CreateOr(b.CreateAnd(row, c(~int64_t(15))),
                     b.CreateOr(b.CreateShl(b.CreateAnd(row, c(1)), c(3)),
                                b.CreateAnd(b.CreateLShr(row, c(1)), c(7))));
  else if (order == RowOrder::ByteFragmentColumns) // row 4c + 2j + h of each 16 at 8j + 2c + h
    row = b.CreateOr(
        b.CreateOr(b.CreateAnd(row, c(~int64_t(15))), b.CreateAnd(row, c(1))),
        b.CreateOr(b.CreateShl(b.CreateAnd(row, c(2)), c(2)),
                   b.CreateAnd(b.CreateLShr(row, c(1)), c(6))));
  int64_t rowBytes = cols * elementBytes;
  llvm::Value *colBytes = b.CreateMul(col, c(elementBytes));
  llvm::Value *offset;
  if (rowBytes <= 128)
    offset = b.CreateAdd(b.CreateMul(row, c(rowBytes)), colBytes);
  else // panels of 128-byte rows, one per 128 bytes of columns
    offset = b.CreateAdd(
        b.CreateAdd(b.CreateMul(b.CreateLShr(colBytes, c(7)), c(rows * 128)),
                    b.CreateShl(row, c(7))),
        b.CreateAnd(colBytes, c(127)));
  return swizzledOffset(l, offset, std::min<int64_t>(rowBytes, 128));
}

} // namespace tritium::codegen
