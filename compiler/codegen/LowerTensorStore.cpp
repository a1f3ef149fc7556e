// TMA stores and reductions (tensor_store, gpu/ChooseTensorStores.cpp). After a CTA barrier
// (earlier readers of the staging buffer are done), every thread writes the elements it holds
// to the op's staging buffer in the form TMA reads with the tile's tensor map (dotTileOffset:
// panels of 128 bytes of columns, swizzled), a run of a row at a time, and fences its writes
// for the async proxy; after a second barrier, thread 0 issues one cp.async.bulk.tensor (or
// cp.reduce.async.bulk.tensor) per panel and commits them as one bulk group. TMA reads the
// buffer after the op has ended: the issuing thread waits for those reads
// (cp.async.bulk.wait_group.read) before every later CTA barrier, which any later write to
// that shared memory comes after (Lowering::barrier), and for the writes to complete before
// the kernel exits (waitForTensorStores).
#include "compiler/codegen/Mbarrier.h"
#include "compiler/gpu/GpuPasses.h"
#include "compiler/ir/TensorMap.h"

namespace tritium::codegen {

namespace {

// Thread 0 of the compute warps runs `text` (no operands), predicated rather than branched
// over, so that it may sit anywhere in a block (Lowering::barrier).
void onThreadZeroInPlace(Lowering &l, const std::string &text) {
  llvm::Value *first = l.b.CreateZExt(l.isThreadZero(), l.b.getInt32Ty());
  emitAsm(l, "{\n\t.reg .pred first;\n\tsetp.ne.u32 first, $0, 0;\n\t@first " + text + "\n\t}",
          "r", {first});
}

} // namespace

void waitForTensorStoreReads(Lowering &l) {
  onThreadZeroInPlace(l, "cp.async.bulk.wait_group.read 0;");
}

void waitForTensorStores(Lowering &l) { onThreadZeroInPlace(l, "cp.async.bulk.wait_group 0;"); }

bool lowerTensorStore(Lowering &l, const ir::Op &op) {
  if (op.kind() != ir::OpKind::TensorStore)
    return false;
  auto &b = l.b;
  const ir::Value *value = op.operand(0);
  const ir::Type &t = value->type();
  int bytes = ir::byteWidth(t.kind());
  int64_t rows = t.shape()[0], cols = t.shape()[1];
  int64_t span = dotSwizzleBytes(cols * bytes);
  int64_t smemOffset = op.intAttr("smem_offset");

  l.barrier();
  // Each run of a row that one thread holds goes out as one vector of up to 16 bytes, which the
  // swizzle (16-byte chunks) keeps contiguous.
  ir::LayoutMap map(*value->layout(), t.shape());
  int last = map.rootDim(1);
  int64_t vec = 1;
  while (vec * 2 <= map.run(last) && vec * 2 * bytes <= 16)
    vec *= 2;
  const Elements &vals = l.get(value);
  llvm::Type *elemTy = l.elementType(t);
  for (int64_t k = 0; k < int64_t(vals.size()); ++k) {
    std::vector<int64_t> index = map.registerIndex(k);
    if (index[size_t(last)] % vec != 0)
      continue; // written with the run's first element
    std::vector<llvm::Value *> coords = l.coordinates(value, k);
    llvm::Value *offset =
        span ? dotTileOffset(l, coords[0], coords[1], rows, cols, bytes, false)
             : b.CreateAdd(b.CreateMul(coords[0], b.getInt32(int32_t(cols * bytes))),
                           b.CreateMul(coords[1], b.getInt32(bytes))); // unswizzled rows
    llvm::Value *v = vals[size_t(k)];
    if (vec > 1) {
      v = llvm::PoisonValue::get(llvm::FixedVectorType::get(elemTy, unsigned(vec)));
      for (int64_t j = 0; j < vec; ++j) {
        std::vector<int64_t> at = index;
        at[size_t(last)] += j;
        v = b.CreateInsertElement(v, vals[size_t(map.registerNumber(at))], uint64_t(j));
      }
    }
    llvm::Value *ptr = b.CreateGEP(
        b.getInt8Ty(), l.smem,
        b.CreateZExt(b.CreateAdd(offset, b.getInt32(int32_t(smemOffset))), b.getInt64Ty()));
    b.CreateAlignedStore(v, ptr, llvm::Align(uint64_t(vec * bytes)));
  }
  emitAsm(l, "fence.proxy.async.shared::cta;", "", {});
  l.barrier();

  llvm::Value *row = b.CreateTrunc(l.get(ir::tensorOffset(op, 0))[0], b.getInt32Ty());
  llvm::Value *col = b.CreateTrunc(l.get(ir::tensorOffset(op, 1))[0], b.getInt32Ty());
  llvm::Value *map64 = l.tensorMaps.at(size_t(op.intAttr("tensor_map")));
  int64_t panelCols = span ? span / bytes : cols;
  std::string instruction =
      op.hasAttr("reduce")
          ? "cp.reduce.async.bulk.tensor.2d.global.shared::cta." + op.strAttr("reduce") +
                ".tile.bulk_group"
          : std::string("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group");
  l.ifThen(l.isThreadZero(), "tma.store", [&] {
    for (int64_t p = 0; p < cols / panelCols; ++p) {
      llvm::Value *src =
          sharedAddress(l, b.getInt32(int32_t(smemOffset + p * rows * panelCols * bytes)));
      llvm::Value *x = b.CreateAdd(col, b.getInt32(int32_t(p * panelCols)));
      emitAsm(l, instruction + " [$0, {$1, $2}], [$3];", "l,r,r,r", {map64, x, row, src});
    }
    emitAsm(l, "cp.async.bulk.commit_group;", "", {});
  });
  return true;
}

} // namespace tritium::codegen
