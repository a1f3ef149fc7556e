// TMA stores and reductions (tensor_store, gpu/ChooseTensorStores.cpp). After a CTA barrier
// (earlier readers of the staging buffer are done), every thread writes the elements it holds
// to the op's staging buffer in the form TMA reads with the tile's tensor map (dotTileOffset:
// panels of 128 bytes of columns, swizzled), by stmatrix where the tile is 16-bit and laid out
// as the tensor cores' accumulator fragments, else a run of a row at a time, and fences its
// writes for the async proxy; after a second barrier, thread 0 issues one cp.async.bulk.tensor (or
// cp.reduce.async.bulk.tensor) per panel and commits them as one bulk group. A tile at a
// negative offset, which TMA refuses, the threads write from the staging buffer instead
// (storeStaged). TMA reads the buffer after the op has ended: the issuing thread waits for
// those reads (cp.async.bulk.wait_group.read) before every later CTA barrier, which any later
// write to that shared memory comes after (Lowering::barrier), and for the writes to complete
// before the kernel exits (waitForTensorStores) and before an atomic that releases them
// (completeTensorStores, which also fences them for the generic proxy).
#include "compiler/codegen/Mbarrier.h"
#include "compiler/gpu/GpuPasses.h"
#include "compiler/ir/TensorMap.h"

#include <llvm/IR/InlineAsm.h>

namespace tritium::codegen {

namespace {

// Thread 0 of the compute warps runs `text` (no operands), predicated rather than branched
// over, so that it may sit anywhere in a block (Lowering::barrier).
void onThreadZeroInPlace(Lowering &l, const std::string &text) {
  llvm::Value *first = l.b.CreateZExt(l.isThreadZero(), l.b.getInt32Ty());
  emitAsm(l, "{\n\t.reg .pred first;\n\tsetp.ne.u32 first, $0, 0;\n\t@first " + text + "\n\t}",
          "r", {first});
}

// The PTX type suffix and register constraint of `red.<op>` on elements of `t`.
std::pair<std::string, std::string> reductionForm(ir::ScalarKind t, const std::string &op) {
  using K = ir::ScalarKind;
  int bits = ir::bitWidth(t);
  if (op == "and" || op == "or" || op == "xor")
    return {".b" + std::to_string(bits), bits == 64 ? "l" : "r"};
  if (t == K::F32)
    return {".f32", "f"};
  if (t == K::F16 || t == K::BF16)
    return {t == K::F16 ? ".noftz.f16" : ".noftz.bf16", "h"};
  return {ir::isUnsignedKind(t) ? ".u32" : ".s32", "r"};
}

// Where TMA cannot take the tile at run time (an offset below zero stops the kernel with an
// illegal instruction on the H200), the threads write, or combine, the staged tile themselves,
// row by row from the staging buffer (`offsetOf` gives an element's byte there): 16-byte
// pieces for a store, which the tile's column offset and the tensor's width (both on 16
// bytes: ChooseTensorStores.cpp) keep wholly inside or outside the tensor, single elements for
// a reduction.
template <typename Offset>
void storeStaged(Lowering &l, const ir::Op &op, llvm::Value *row, llvm::Value *col,
                 llvm::Value *staging, Offset offsetOf) {
  auto &b = l.b;
  const ir::Type &t = op.operand(0)->type();
  ir::ScalarKind kind = t.kind();
  int bytes = ir::byteWidth(kind);
  int64_t rows = t.shape()[0], cols = t.shape()[1];
  std::string reduce = op.hasAttr("reduce") ? op.strAttr("reduce") : "";
  int64_t piece = reduce.empty() ? 16 / bytes : 1; // elements a thread moves at once
  // What a thread runs per piece, and the type of the value it passes.
  std::string text = "@$0 st.global.v4.b32 [$1], {$2, $3, $4, $5};";
  std::string constraints = "b,l,r,r,r,r,~{memory}";
  llvm::Type *wordTy = b.getInt32Ty();
  if (!reduce.empty()) {
    auto [suffix, constraint] = reductionForm(kind, reduce);
    text = "@$0 red.relaxed.gpu.global." + reduce + suffix + " [$1], $2;";
    constraints = "b,l," + constraint + ",~{memory}";
    wordTy = constraint == "f" ? b.getFloatTy() : b.getIntNTy(unsigned(ir::bitWidth(kind)));
  }
  llvm::Value *base = l.get(ir::tensorBase(op))[0];
  llvm::Value *height = l.get(ir::tensorShape(op, 0))[0];
  llvm::Value *width = l.get(ir::tensorShape(op, 1))[0];
  llvm::Value *stride = l.get(ir::tensorStride(op, 0))[0];
  llvm::Type *elemTy = l.elementType(t);
  int64_t pieces = rows * cols / piece, perRow = cols / piece;
  for (int64_t first = 0; first < pieces; first += l.threads()) {
    llvm::Value *q = b.CreateAdd(l.tid, b.getInt32(int32_t(first)));
    llvm::Value *r = b.CreateUDiv(q, b.getInt32(int32_t(perRow)));
    llvm::Value *c = b.CreateMul(b.CreateURem(q, b.getInt32(int32_t(perRow))),
                                 b.getInt32(int32_t(piece)));
    llvm::Value *gr = b.CreateAdd(row, b.CreateZExt(r, b.getInt64Ty()));
    llvm::Value *gc = b.CreateAdd(col, b.CreateZExt(c, b.getInt64Ty()));
    llvm::Value *inside = b.CreateAnd(
        b.CreateAnd(b.CreateICmpSGE(gr, b.getInt64(0)), b.CreateICmpSLT(gr, height)),
        b.CreateAnd(b.CreateICmpSGE(gc, b.getInt64(0)), b.CreateICmpSLT(gc, width)));
    if (first + l.threads() > pieces) // the last round: some threads have no piece
      inside = b.CreateAnd(inside, b.CreateICmpULT(q, b.getInt32(int32_t(pieces))));
    llvm::Value *from = b.CreateGEP(b.getInt8Ty(), staging,
                                    b.CreateZExt(offsetOf(r, c), b.getInt64Ty()));
    llvm::Value *to = b.CreateGEP(elemTy, base, b.CreateAdd(b.CreateMul(gr, stride), gc));
    std::vector<llvm::Value *> args{inside, to};
    std::vector<llvm::Type *> types{b.getInt1Ty(), to->getType()};
    if (reduce.empty()) {
      llvm::Value *words = b.CreateAlignedLoad(llvm::FixedVectorType::get(b.getInt32Ty(), 4),
                                               from, llvm::Align(16));
      for (unsigned j = 0; j < 4; ++j) {
        args.push_back(b.CreateExtractElement(words, uint64_t(j)));
        types.push_back(b.getInt32Ty());
      }
    } else {
      llvm::Value *v = b.CreateAlignedLoad(elemTy, from, llvm::Align(uint64_t(bytes)));
      args.push_back(b.CreateBitCast(v, wordTy));
      types.push_back(wordTy);
    }
    auto *fnTy = llvm::FunctionType::get(b.getVoidTy(), types, false);
    b.CreateCall(llvm::InlineAsm::get(fnTy, text, constraints, true), args);
  }
}

// 16-bit tiles whose threads hold the tensor cores' accumulator fragments (lanes 8 x 4 over
// rows and columns, each lane 2 adjacent columns of one or two rows per tile) go to the staging
// buffer by stmatrix: one instruction moves four 8 x 8 matrices, a lane's 32-bit register of
// each, where element stores moved one register each and computed its address. The rows of a
// matrix are the 8 rows that one of a lane's row registers takes across the lanes (rows 2q +
// j with 2 rows a lane); lane i gives the address of row i % 8 of matrix i / 8, whose 8
// columns are one 16-byte chunk, which the staging buffer's swizzle keeps whole.
template <typename Offset>
bool storeByMatrices(Lowering &l, const ir::Value *value, Offset offsetOf, int64_t smemOffset) {
  auto &b = l.b;
  const ir::Type &t = value->type();
  if (t.rank() != 2 || ir::byteWidth(t.kind()) != 2)
    return false;
  ir::LayoutMap map(*value->layout(), t.shape());
  int rd = map.rootDim(0), cd = map.rootDim(1);
  const ir::Layout &root = map.root();
  // (Whole tiles: no thread holds copies, and a thread's run along the columns is its 2.)
  if (root.rank() != 2 || root.threadsPerWarp()[size_t(rd)] != 8 ||
      root.threadsPerWarp()[size_t(cd)] != 4 || map.laneStride(cd) != 1 ||
      map.laneStride(rd) != 4 || root.sizePerThread()[size_t(cd)] != 2 ||
      map.rootShape()[size_t(rd)] % root.tile(rd) != 0 ||
      map.rootShape()[size_t(cd)] % root.tile(cd) != 0)
    return false;
  int64_t rowRegs = map.registersPerDim()[size_t(rd)];
  int64_t colGroups = map.registersPerDim()[size_t(cd)] / 2;
  int64_t sptRows = root.sizePerThread()[size_t(rd)];
  if ((rowRegs * colGroups) % 4 != 0)
    return false;
  const Elements &vals = l.get(value);
  llvm::Type *pairTy = llvm::FixedVectorType::get(l.elementType(t), 2);
  // Matrix m: row register r, column group g (columns 8g .. 8g + 7 of the thread's tiles).
  std::vector<std::pair<int64_t, int64_t>> matrices;
  for (int64_t g = 0; g < colGroups; ++g)
    for (int64_t r = 0; r < rowRegs; ++r)
      matrices.push_back({r, g});
  auto reg = [&](int64_t r, int64_t c) {
    std::vector<int64_t> index(2);
    index[size_t(rd)] = r;
    index[size_t(cd)] = c;
    return vals[size_t(map.registerNumber(index))];
  };
  llvm::Value *q = b.CreateAnd(l.laneId, b.getInt32(7));
  llvm::Value *which = b.CreateLShr(l.laneId, b.getInt32(3));
  llvm::Value *rowBase = b.CreateAdd(b.CreateMul(q, b.getInt32(int32_t(sptRows))),
                                     b.CreateMul(l.warpCoordinate(map, rd),
                                                 b.getInt32(int32_t(sptRows * 8))));
  llvm::Value *colBase = b.CreateMul(l.warpCoordinate(map, cd), b.getInt32(8));
  for (size_t first = 0; first < matrices.size(); first += 4) {
    // This lane's row and column: matrix `which` of the four.
    llvm::Value *row = b.getInt32(0), *col = b.getInt32(0);
    std::vector<llvm::Value *> args{nullptr};
    for (int64_t m = 3; m >= 0; --m) {
      auto [r, g] = matrices[first + size_t(m)];
      llvm::Value *is = b.CreateICmpEQ(which, b.getInt32(int32_t(m)));
      row = b.CreateSelect(is, b.getInt32(int32_t(map.registerOffset(rd, r))), row);
      col = b.CreateSelect(is, b.getInt32(int32_t(map.registerOffset(cd, 2 * g))), col);
    }
    for (int64_t m = 0; m < 4; ++m) {
      auto [r, g] = matrices[first + size_t(m)];
      llvm::Value *pair = llvm::PoisonValue::get(pairTy);
      pair = b.CreateInsertElement(pair, reg(r, 2 * g), uint64_t(0));
      pair = b.CreateInsertElement(pair, reg(r, 2 * g + 1), uint64_t(1));
      args.push_back(b.CreateBitCast(pair, b.getInt32Ty()));
    }
    llvm::Value *offset = offsetOf(b.CreateAdd(rowBase, row), b.CreateAdd(colBase, col));
    args[0] = l.programSharedAddress(b.CreateAdd(offset, b.getInt32(int32_t(smemOffset))));
    emitAsm(l, "stmatrix.sync.aligned.m8n8.x4.shared.b16 [$0], {$1, $2, $3, $4};",
            "r,r,r,r,r,~{memory}", args);
  }
  return true;
}

// Each run of a row that one thread holds goes out as one vector of up to 16 bytes, which the
// swizzle (16-byte chunks) keeps contiguous.
template <typename Offset>
void storeByElements(Lowering &l, const ir::Value *value, llvm::Value *staging, Offset offsetOf) {
  auto &b = l.b;
  const ir::Type &t = value->type();
  int bytes = ir::byteWidth(t.kind());
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
    llvm::Value *v = vals[size_t(k)];
    if (vec > 1) {
      v = llvm::PoisonValue::get(llvm::FixedVectorType::get(elemTy, unsigned(vec)));
      for (int64_t j = 0; j < vec; ++j) {
        std::vector<int64_t> at = index;
        at[size_t(last)] += j;
        v = b.CreateInsertElement(v, vals[size_t(map.registerNumber(at))], uint64_t(j));
      }
    }
    llvm::Value *ptr = b.CreateGEP(b.getInt8Ty(), staging,
                                   b.CreateZExt(offsetOf(coords[0], coords[1]), b.getInt64Ty()));
    b.CreateAlignedStore(v, ptr, llvm::Align(uint64_t(vec * bytes)));
  }
}

} // namespace

void waitForTensorStoreReads(Lowering &l) {
  onThreadZeroInPlace(l, "cp.async.bulk.wait_group.read 0;");
}

void waitForTensorStores(Lowering &l) { onThreadZeroInPlace(l, "cp.async.bulk.wait_group 0;"); }

void completeTensorStores(Lowering &l) {
  onThreadZeroInPlace(l, "cp.async.bulk.wait_group 0;");
  onThreadZeroInPlace(l, "fence.proxy.async.global;");
}

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

  llvm::Value *row64 = l.get(ir::tensorOffset(op, 0))[0];
  llvm::Value *col64 = l.get(ir::tensorOffset(op, 1))[0];
  llvm::Value *staging = l.programSmem(smemOffset);
  auto offsetOf = [&](llvm::Value *r, llvm::Value *c) {
    return span ? dotTileOffset(l, r, c, rows, cols, bytes, RowOrder::AsIs)
                : b.CreateAdd(b.CreateMul(r, b.getInt32(int32_t(cols * bytes))),
                              b.CreateMul(c, b.getInt32(bytes))); // unswizzled rows
  };

  l.barrier();
  if (!storeByMatrices(l, value, offsetOf, smemOffset))
    storeByElements(l, value, staging, offsetOf);

  // A negative offset (uniform: the offsets are scalars): the threads write the staged tile.
  llvm::Value *negative = b.CreateOr(b.CreateICmpSLT(row64, b.getInt64(0)),
                                     b.CreateICmpSLT(col64, b.getInt64(0)));
  auto *byTma = llvm::BasicBlock::Create(l.ctx, "tma.store.tile", l.fn);
  auto *byThreads = llvm::BasicBlock::Create(l.ctx, "tma.store.threads", l.fn);
  auto *done = llvm::BasicBlock::Create(l.ctx, "tma.store.done", l.fn);
  b.CreateCondBr(negative, byThreads, byTma);
  b.SetInsertPoint(byThreads);
  l.barrier();
  storeStaged(l, op, row64, col64, staging, offsetOf);
  b.CreateBr(done);

  b.SetInsertPoint(byTma);
  emitAsm(l, "fence.proxy.async.shared::cta;", "", {});
  l.barrier();

  llvm::Value *row = b.CreateTrunc(row64, b.getInt32Ty());
  llvm::Value *col = b.CreateTrunc(col64, b.getInt32Ty());
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
          l.programSharedAddress(b.getInt32(int32_t(smemOffset + p * rows * panelCols * bytes)));
      llvm::Value *x = b.CreateAdd(col, b.getInt32(int32_t(p * panelCols)));
      emitAsm(l, instruction + " [$0, {$1, $2}], [$3];", "l,r,r,r", {map64, x, row, src});
    }
    emitAsm(l, "cp.async.bulk.commit_group;", "", {});
  });
  b.CreateBr(done);
  b.SetInsertPoint(done);
  return true;
}

} // namespace tritium::codegen
