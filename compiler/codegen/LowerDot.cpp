// Lowering of dot on the tensor cores: Hopper's warp-group wgmma.mma_async for the dots that
// ChooseDotInstructions.cpp marks {wgmma} (sm_90a), mma.sync otherwise (sm_80 and later;
// m16n8k16 for 16-bit floats, m16n8k8 for tf32, m16n8k32 for 8-bit integers and fp8).
//
// 1. The operands are in shared memory: 16-bit tiles that a cp.async ring of the loop brought
//    in are read from the ring (FeedDotsFromRings.cpp); others are staged there, whatever their
//    layouts. 16-bit operands sit as a [batch][M][K] and b [batch][K][N], swizzled
//    (swizzledOffset), as the rings hold them; other types as a [batch][M][K + pad] and b
//    transposed, [batch][N][K + pad] (dotStagedRow), both read along K. The swizzle or the
//    16-byte pad per row puts the eight rows of a fragment load on different banks.
// 2. The accumulator has dotAccumulatorLayout's blocked layout: a thread holds rows 2g and
//    2g + 1 of each 16-row tile and columns 2c, 2c + 1 of each 8-column tile (g = lane / 4,
//    c = lane % 4). The mma instruction's fragment rows g and g + 8 stand for those two rows;
//    the A fragments are read from the same rows, so the product lands where the layout says.
// 3. Per K step of the instruction, each warp reads the A fragments of its row tiles and the B
//    fragments of its column tiles (ldmatrix, and ldmatrix.trans for b, for 16-bit types;
//    32-bit shared loads otherwise) and issues one mma per tile pair, the accumulators staying
//    in registers.
//
// wgmma reads both operands from shared memory through matrix descriptors and leaves, in
// thread (warp w of its group, g = lane / 4), rows 16w + g and 16w + g + 8 of each 64-row
// slice: a's rows sit permuted within each 16 (dotTileOffset), so that those stand for block
// rows 16w + 2g and + 1, as in the blocked layout above. The warp group fences, issues the
// steps of 32 bytes of K of every slice and column run, commits, and waits before the dot's
// result is used. Operands other than 16-bit are read K-major (b staged transposed, or in
// place from the [N, K] tile under a trans).
//
// fp32 operands: "tf32" rounds them with cvt.rna.tf32.f32 (wgmma reads them as they are and
// drops the low mantissa bits); "tf32x3" splits each into a tf32
// high part and the tf32 of the rest and sums three products (hi*hi + hi*lo + lo*hi), close to
// fp32's accuracy; "ieee" is plain fp32 fmas from the staged operands, one per element and k.
#include "compiler/codegen/Lowering.h"
#include "compiler/codegen/Mbarrier.h"
#include "compiler/gpu/GpuPasses.h"
#include "compiler/support/Error.h"

#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <algorithm>
#include <map>

namespace tritium::codegen {

namespace {

using ir::ScalarKind;

// The mma.sync instruction for operands of kinds a, b accumulating in c, and its K step.
struct MmaInstruction {
  llvm::Intrinsic::ID id;
  int kStep;
};

MmaInstruction mmaFor(ScalarKind a, ScalarKind b, ScalarKind c, const SourceLoc &loc,
                      int sm, int ptxVersion) {
  using namespace llvm::Intrinsic;
  auto fp8 = [&](ID ee, ID em, ID me, ID mm) {
    if (sm < 89 || ptxVersion < 84)
      userError("dot of fp8 operands needs sm_89 or later and PTX ISA 8.4 or later (this "
                "kernel compiles for sm_" + std::to_string(sm) + " with PTX " +
                    std::to_string(ptxVersion / 10) + "." + std::to_string(ptxVersion % 10) +
                    ": set Specialization::ptxVersion = 84 or more)",
                loc);
    bool e4a = a == ScalarKind::F8E4M3, e4b = b == ScalarKind::F8E4M3;
    return MmaInstruction{e4a ? (e4b ? ee : em) : (e4b ? me : mm), 32};
  };
  switch (a) {
  case ScalarKind::BF16:
    return {nvvm_mma_m16n8k16_row_col_bf16, 16};
  case ScalarKind::F16:
    return {c == ScalarKind::F16 ? nvvm_mma_m16n8k16_row_col_f16_f16
                                 : nvvm_mma_m16n8k16_row_col_f32_f32,
            16};
  case ScalarKind::F32:
    return {nvvm_mma_m16n8k8_row_col_tf32, 8};
  case ScalarKind::I8:
    return {b == ScalarKind::I8 ? nvvm_mma_m16n8k32_row_col_s8 : nvvm_mma_m16n8k32_row_col_s8_u8,
            32};
  case ScalarKind::U8:
    return {b == ScalarKind::I8 ? nvvm_mma_m16n8k32_row_col_u8_s8 : nvvm_mma_m16n8k32_row_col_u8,
            32};
  case ScalarKind::F8E4M3:
  case ScalarKind::F8E5M2:
    return fp8(nvvm_mma_m16n8k32_row_col_f32_e4m3_e4m3_f32,
               nvvm_mma_m16n8k32_row_col_f32_e4m3_e5m2_f32,
               nvvm_mma_m16n8k32_row_col_f32_e5m2_e4m3_f32,
               nvvm_mma_m16n8k32_row_col_f32_e5m2_e5m2_f32);
  default:
    internalError("dot of unsupported operand kind reached the lowering");
  }
}

class DotLowering {
public:
  DotLowering(Lowering &l, const ir::Op &op) : l_(l), b_(l.b), op_(op) {
    const ir::Type &ta = op.operand(0)->type();
    rank_ = ta.rank();
    M_ = ta.shape()[size_t(rank_ - 2)];
    K_ = ta.shape()[size_t(rank_ - 1)];
    N_ = op.operand(1)->type().shape()[size_t(rank_ - 1)];
    bytes_ = std::max(1, ir::bitWidth(ta.kind()) / 8);
    row_ = dotStagedRow(K_, bytes_);
    precision_ = op.hasAttr("input_precision") ? op.strAttr("input_precision") : "";
    wgmma_ = op.hasAttr("wgmma");
    swizzled_ = dotStagesSwizzled(op);
    // wgmma reads 8- and 32-bit b K-major only: from the ring tile under a trans, or staged
    // transposed; so is a 16-bit b of fewer columns than a 64-column panel (a trans()).
    bKMajor_ = op.hasAttr("b_k_major") || (wgmma_ && (bytes_ != 2 || N_ % 64 != 0));
    aRegs_ = op.hasAttr("a_regs"); // a's fragments are in registers (KeepDotOperandsInRegisters)
    for (int i = aRegs_ ? 1 : 0; i < 2; ++i) {
      const char *staging = i == 0 ? "smem_offset" : "smem_b";
      llvm::Value *&base = i == 0 ? aBase_ : bBase_;
      // b K-major: the ring holds the [N, K] tile under the trans (FeedDotsFromRings.cpp).
      const ir::Value *tile = op.operand(unsigned(i));
      if (i == 1 && op.hasAttr("b_k_major"))
        tile = tile->definingOp()->operand(0);
      auto ring = l.ringTiles.find(tile);
      fromRing_[i] = op.hasAttr(i == 0 ? "ring_a" : "ring_b") && ring != l.ringTiles.end();
      if (fromRing_[i])
        base = ring->second;
      else if (op.hasAttr(staging))
        base = l.programSmem(op.intAttr(staging));
      else
        internalError("dot operand " + std::to_string(i) +
                      " has neither a ring nor a staging buffer");
    }
  }

  void run() {
    if (op_.numOperands() == 4)
      accumulate_ = l_.get(op_.operand(3))[0];
    stageOperands();
    if (precision_ == "ieee")
      fmaProduct();
    else if (wgmma_)
      wgmmaProduct();
    else
      mmaProduct();
  }

private:
  // --- 1. staging -----------------------------------------------------------------------------

  // The byte offset of element (batch, row, k) of a staged operand.
  llvm::Value *stagedOffset(llvm::Value *batch, int64_t rows, llvm::Value *row, llvm::Value *k) {
    llvm::Value *r = b_.CreateAdd(b_.CreateMul(batch, b_.getInt32(int32_t(rows))), row);
    llvm::Value *e = b_.CreateAdd(b_.CreateMul(r, b_.getInt32(int32_t(row_))), k);
    return b_.CreateMul(e, b_.getInt32(bytes_));
  }

  // The byte offset of element (batch, row, col) of a swizzled operand held as
  // [batch][rows][cols] (dotTileOffset, the batches' rows one after another); a wgmma dot's a
  // has its rows permuted.
  llvm::Value *tileOffset(llvm::Value *batch, int64_t rows, int64_t cols, llvm::Value *row,
                          llvm::Value *col, bool isA) {
    llvm::Value *r = b_.CreateAdd(b_.CreateMul(batch, b_.getInt32(int32_t(rows))), row);
    int64_t batches = rank_ == 3 ? op_.operand(0)->type().shape()[0] : 1;
    return dotTileOffset(l_, r, col, batches * rows, cols, bytes_,
                         dotOperandRowOrder(op_, isA ? 0 : 1));
  }

  void stageOperands() {
    if ((fromRing_[0] || aRegs_) && fromRing_[1])
      return;
    l_.barrier(); // the previous dot's reads of these buffers (in a loop) are done
    for (int which = 0; which < 2; ++which) {
      if (fromRing_[which] || (which == 0 && aRegs_))
        continue;
      const ir::Value *v = op_.operand(unsigned(which));
      const Elements &vals = l_.get(v);
      for (size_t k = 0; k < vals.size(); ++k) {
        std::vector<llvm::Value *> c = l_.coordinates(v, int64_t(k));
        llvm::Value *batch = rank_ == 3 ? c[0] : b_.getInt32(0);
        llvm::Value *x = c[size_t(rank_ - 2)], *y = c[size_t(rank_ - 1)];
        llvm::Value *off;
        if (swizzled_ && bKMajor_) // a[m][k]; b[k][n] at [n][k], K-major (wgmma)
          off = which == 0 ? tileOffset(batch, M_, K_, x, y, true)
                         : tileOffset(batch, N_, K_, y, x, false);
        else if (swizzled_) // a[m][k] and b[k][n] as they are, swizzled
          off = which == 0 ? tileOffset(batch, M_, K_, x, y, true)
                         : tileOffset(batch, K_, N_, x, y, false);
        else // a[m][k] at row m; b[k][n] at row n (transposed)
          off = which == 0 ? stagedOffset(batch, M_, x, y) : stagedOffset(batch, N_, y, x);
        llvm::Value *base = which == 0 ? aBase_ : bBase_;
        b_.CreateAlignedStore(vals[k], b_.CreateGEP(b_.getInt8Ty(), base, off),
                              llvm::Align(bytes_));
      }
    }
    if (wgmma_) // the tensor cores read these stores through the async proxy
      emitAsm(l_, "fence.proxy.async.shared::cta;", "", {});
    l_.barrier();
  }

  // --- 2. the accumulator's tiles ---------------------------------------------------------------

  // One 16 x 8 tile of a warp's accumulator: its registers (fragment order c0..c3: rows g and
  // g + 8, columns 2c and 2c + 1), the two block rows this thread's fragment rows stand for,
  // the tile's first column and its batch.
  struct Tile {
    int64_t regs[4];
    llvm::Value *rows[2], *colBase, *batch;
    int64_t rowKey, colKey; // which A and B fragments it reads (shared between tiles)
  };

  std::vector<Tile> tiles() {
    const ir::Value *acc = op_.result();
    ir::LayoutMap map(*acc->layout(), acc->type().shape());
    const ir::Layout &root = map.root();
    int dm = rank_ - 2, dn = rank_ - 1;
    // A {byte_fragment_columns} dot holds 4 columns a thread: its b's rows are permuted so
    // that the instruction's 16 x 8 tiles 2q and 2q + 1 of lane c are block columns 16q + 4c
    // .. + 1 and + 2 .. + 3, which are register columns 2(2q) + j and 2(2q + 1) + j as in the
    // two-column layout. (colBase is then unused: wgmma reads b through descriptors.)
    int64_t cols = op_.hasAttr("byte_fragment_columns") ? 4 : 2;
    if (root.sizePerThread()[size_t(dm)] != 2 || root.sizePerThread()[size_t(dn)] != cols ||
        root.threadsPerWarp()[size_t(dm)] != 8 || root.threadsPerWarp()[size_t(dn)] != 4)
      internalError("dot's accumulator is not in dotAccumulatorLayout: " + root.str());
    const std::vector<int64_t> &regs = map.registersPerDim();
    int64_t nb = rank_ == 3 ? regs[0] : 1;
    llvm::Value *c2 = b_.CreateMul(b_.CreateAnd(l_.laneId, b_.getInt32(3)), b_.getInt32(2));
    std::vector<Tile> out;
    for (int64_t rb = 0; rb < nb; ++rb)
      for (int64_t rm = 0; rm < regs[size_t(dm)]; rm += 2)
        for (int64_t rn = 0; rn < regs[size_t(dn)]; rn += 2) {
          Tile t;
          for (int h = 0; h < 2; ++h)
            for (int j = 0; j < 2; ++j) {
              std::vector<int64_t> index(regs.size(), 0);
              if (rank_ == 3)
                index[0] = rb;
              index[size_t(dm)] = rm + h;
              index[size_t(dn)] = rn + j;
              t.regs[h * 2 + j] = map.registerNumber(index);
            }
          std::vector<llvm::Value *> c0 = l_.coordinates(acc, t.regs[0]);
          std::vector<llvm::Value *> c2row = l_.coordinates(acc, t.regs[2]);
          t.rows[0] = c0[size_t(dm)];
          t.rows[1] = c2row[size_t(dm)];
          t.colBase = b_.CreateSub(c0[size_t(dn)], c2);
          t.batch = rank_ == 3 ? c0[0] : b_.getInt32(0);
          t.rowKey = rb * regs[size_t(dm)] + rm;
          t.colKey = rb * regs[size_t(dn)] + rn;
          out.push_back(t);
        }
    return out;
  }

  // --- 3. fragments and mma ---------------------------------------------------------------------

  llvm::Value *loadI32(llvm::Value *base, llvm::Value *offset) {
    return b_.CreateAlignedLoad(b_.getInt32Ty(), b_.CreateGEP(b_.getInt8Ty(), base, offset),
                                llvm::Align(4));
  }

  // A fragment: four 32-bit registers of the 16 x kStep tile at `kk`, register i holding row
  // (g + 8 (i % 2)) and the elements of k from (kStep / 2)(i / 2) + (4 / bytes) c.
  std::vector<llvm::Value *> loadA(const Tile &t, int64_t kk, int kStep) {
    llvm::Value *lane = l_.laneId;
    if (bytes_ == 2) {
      // ldmatrix.x4: lane s gives the address of row s % 8 of matrix s / 8 (matrices: rows
      // 0-7 and 8-15 at k, then both at k + 8); fragment row r stands for block row base +
      // 2r (r < 8) or base + 2(r - 8) + 1, base = this thread's rows[0] - 2g.
      llvm::Value *g2 = b_.CreateMul(b_.CreateLShr(lane, b_.getInt32(2)), b_.getInt32(2));
      llvm::Value *base = b_.CreateSub(t.rows[0], g2);
      llvm::Value *r = b_.CreateAnd(lane, b_.getInt32(7));
      llvm::Value *q = b_.CreateLShr(lane, b_.getInt32(3));
      llvm::Value *row = b_.CreateAdd(b_.CreateAdd(base, b_.CreateMul(r, b_.getInt32(2))),
                                      b_.CreateAnd(q, b_.getInt32(1)));
      llvm::Value *k = b_.CreateAdd(b_.getInt32(int32_t(kk)),
                                    b_.CreateMul(b_.CreateLShr(q, b_.getInt32(1)), b_.getInt32(8)));
      return ldmatrix(aBase_, tileOffset(t.batch, M_, K_, row, k, true), 4, false);
    }
    int epr = 4 / bytes_;
    llvm::Value *c = b_.CreateMul(b_.CreateAnd(lane, b_.getInt32(3)), b_.getInt32(epr));
    std::vector<llvm::Value *> out;
    for (int i = 0; i < 4; ++i) {
      llvm::Value *k = b_.CreateAdd(b_.getInt32(int32_t(kk + (kStep / 2) * (i / 2))), c);
      out.push_back(loadI32(aBase_, stagedOffset(t.batch, M_, t.rows[i % 2], k)));
    }
    return out;
  }

  // B fragment: two 32-bit registers of the kStep x 8 tile at `kk`, register i holding column
  // g and the elements of k from (kStep / 2) i + (4 / bytes) c (b is staged as [n][k]).
  std::vector<llvm::Value *> loadB(const Tile &t, int64_t kk, int kStep) {
    llvm::Value *lane = l_.laneId;
    if (bKMajor_) {
      // ldmatrix.x2 over b[n][k]: lanes 0-7 give rows n .. n + 7 at k, lanes 8-15 at k + 8;
      // lane l gets row g (column g of b) at k 2c and 2c + 1 of each, b's two registers.
      llvm::Value *n = b_.CreateAdd(t.colBase, b_.CreateAnd(lane, b_.getInt32(7)));
      llvm::Value *k = b_.CreateAdd(
          b_.getInt32(int32_t(kk)),
          b_.CreateMul(b_.CreateAnd(b_.CreateLShr(lane, b_.getInt32(3)), b_.getInt32(1)),
                       b_.getInt32(8)));
      return ldmatrix(bBase_, tileOffset(t.batch, N_, K_, n, k, false), 2, false);
    }
    if (bytes_ == 2) {
      // ldmatrix.x2.trans over b[k][n]: lanes 0-7 give rows k .. k + 7 of the tile's eight
      // columns, lanes 8-15 rows k + 8 .. k + 15; transposed, lane l gets column g of rows
      // 2c and 2c + 1 of each, b's two fragment registers.
      llvm::Value *k = b_.CreateAdd(b_.getInt32(int32_t(kk)), b_.CreateAnd(lane, b_.getInt32(15)));
      return ldmatrix(bBase_, tileOffset(t.batch, K_, N_, k, t.colBase, false), 2, true);
    }
    int epr = 4 / bytes_;
    llvm::Value *n = b_.CreateAdd(t.colBase, b_.CreateLShr(lane, b_.getInt32(2)));
    llvm::Value *c = b_.CreateMul(b_.CreateAnd(lane, b_.getInt32(3)), b_.getInt32(epr));
    std::vector<llvm::Value *> out;
    for (int i = 0; i < 2; ++i) {
      llvm::Value *k = b_.CreateAdd(b_.getInt32(int32_t(kk + (kStep / 2) * i)), c);
      out.push_back(loadI32(bBase_, stagedOffset(t.batch, N_, n, k)));
    }
    return out;
  }

  std::vector<llvm::Value *> ldmatrix(llvm::Value *base, llvm::Value *offset, int count,
                                      bool trans) {
    using namespace llvm::Intrinsic;
    auto id = count == 4 ? (trans ? nvvm_ldmatrix_sync_aligned_m8n8_x4_trans_b16
                                  : nvvm_ldmatrix_sync_aligned_m8n8_x4_b16)
                         : (trans ? nvvm_ldmatrix_sync_aligned_m8n8_x2_trans_b16
                                  : nvvm_ldmatrix_sync_aligned_m8n8_x2_b16);
    llvm::Value *ptr = b_.CreateGEP(b_.getInt8Ty(), base, offset);
    llvm::Value *res = l_.intrinsic(id, {ptr->getType()}, {ptr});
    std::vector<llvm::Value *> out;
    for (int i = 0; i < count; ++i)
      out.push_back(b_.CreateExtractValue(res, unsigned(i)));
    return out;
  }

  // tf32 of fp32 bits (cvt.rna.tf32.f32), and the tf32 of what that leaves out.
  llvm::Value *tf32(llvm::Value *bits) {
    return l_.intrinsic(llvm::Intrinsic::nvvm_f2tf32_rna, {},
                        {b_.CreateBitCast(bits, b_.getFloatTy())});
  }
  llvm::Value *tf32Rest(llvm::Value *bits, llvm::Value *hi) {
    llvm::Value *x = b_.CreateBitCast(bits, b_.getFloatTy());
    llvm::Value *rest = b_.CreateFSub(x, b_.CreateBitCast(hi, b_.getFloatTy()));
    return l_.intrinsic(llvm::Intrinsic::nvvm_f2tf32_rna, {}, {rest});
  }

  // acc = mma(a, b, acc) for one tile: the accumulator as the instruction's C operands (f16
  // accumulators travel in pairs) and back.
  void mma(llvm::Function *f, const std::vector<llvm::Value *> &a,
           const std::vector<llvm::Value *> &bf, Elements &acc, const Tile &t, bool halfAcc) {
    llvm::FunctionType *fty = f->getFunctionType();
    std::vector<llvm::Value *> args;
    unsigned p = 0;
    for (llvm::Value *v : a)
      args.push_back(b_.CreateBitCast(v, fty->getParamType(p++)));
    for (llvm::Value *v : bf)
      args.push_back(b_.CreateBitCast(v, fty->getParamType(p++)));
    if (halfAcc) {
      for (int h = 0; h < 2; ++h) {
        llvm::Type *pair = fty->getParamType(p++);
        llvm::Value *v = llvm::PoisonValue::get(pair);
        v = b_.CreateInsertElement(v, acc[size_t(t.regs[h * 2])], uint64_t(0));
        v = b_.CreateInsertElement(v, acc[size_t(t.regs[h * 2 + 1])], uint64_t(1));
        args.push_back(v);
      }
    } else {
      for (int i = 0; i < 4; ++i)
        args.push_back(acc[size_t(t.regs[i])]);
    }
    llvm::Value *d = b_.CreateCall(f, args);
    if (halfAcc) {
      for (int h = 0; h < 2; ++h) {
        llvm::Value *pair = b_.CreateExtractValue(d, unsigned(h));
        acc[size_t(t.regs[h * 2])] = b_.CreateExtractElement(pair, uint64_t(0));
        acc[size_t(t.regs[h * 2 + 1])] = b_.CreateExtractElement(pair, uint64_t(1));
      }
    } else {
      for (int i = 0; i < 4; ++i)
        acc[size_t(t.regs[i])] = b_.CreateExtractValue(d, unsigned(i));
    }
  }

  // The accumulator the product adds to: acc, or zeros where the accumulate operand is false
  // (wgmma takes that flag as its scale-d instead).
  Elements startingAccumulator() {
    Elements acc = l_.get(op_.operand(2));
    if (accumulate_)
      for (llvm::Value *&v : acc)
        v = b_.CreateSelect(accumulate_, v, llvm::Constant::getNullValue(v->getType()));
    return acc;
  }

  void mmaProduct() {
    ScalarKind ka = op_.operand(0)->type().kind(), kb = op_.operand(1)->type().kind();
    ScalarKind kc = op_.result()->type().kind();
    MmaInstruction inst = mmaFor(ka, kb, kc, op_.loc(), l_.sm, l_.ptxVersion);
    llvm::Function *f = llvm::Intrinsic::getOrInsertDeclaration(&l_.mod, inst.id);
    bool halfAcc = kc == ScalarKind::F16;
    bool split = precision_ == "tf32x3";
    Elements acc = startingAccumulator();
    std::vector<Tile> ts = tiles();
    for (int64_t kk = 0; kk < K_; kk += inst.kStep) {
      // Each fragment once per K step, however many tiles read it.
      std::map<int64_t, std::vector<llvm::Value *>> as, bs, aRest, bRest;
      // fp32 operands become tf32 (and, for tf32x3, the tf32 of what that leaves out).
      auto toTf32 = [&](std::vector<llvm::Value *> &frag, std::vector<llvm::Value *> &rest) {
        if (ka != ScalarKind::F32)
          return;
        for (auto &v : frag) {
          llvm::Value *hi = tf32(v);
          if (split)
            rest.push_back(tf32Rest(v, hi));
          v = hi;
        }
      };
      for (const Tile &t : ts) {
        if (!as.count(t.rowKey)) {
          as[t.rowKey] = loadA(t, kk, inst.kStep);
          toTf32(as[t.rowKey], aRest[t.rowKey]);
        }
        if (!bs.count(t.colKey)) {
          bs[t.colKey] = loadB(t, kk, inst.kStep);
          toTf32(bs[t.colKey], bRest[t.colKey]);
        }
      }
      for (const Tile &t : ts) {
        if (split) { // the small products first
          mma(f, aRest[t.rowKey], bs[t.colKey], acc, t, halfAcc);
          mma(f, as[t.rowKey], bRest[t.colKey], acc, t, halfAcc);
        }
        mma(f, as[t.rowKey], bs[t.colKey], acc, t, halfAcc);
      }
    }
    l_.set(op_.result(), std::move(acc));
  }

  // --- wgmma (sm_90a) ----------------------------------------------------------------------------

  // A shared-memory matrix descriptor: the start address, the leading and stride byte offsets
  // (each >> 4) and the swizzle mode of a `span`-byte swizzle (1: SWIZZLE_128B, 2: 64B, 3:
  // 32B).
  llvm::Value *descriptor(llvm::Value *base, llvm::Value *byteOffset, int64_t leading,
                          int64_t stride, int64_t span = 128) {
    llvm::Value *p = b_.CreateGEP(b_.getInt8Ty(), base, byteOffset);
    llvm::Value *addr = b_.CreatePtrToInt(p, b_.getInt64Ty());
    llvm::Value *start = b_.CreateAnd(b_.CreateLShr(addr, b_.getInt64(4)), b_.getInt64(0x3FFF));
    uint64_t mode = span == 128 ? 1 : span == 64 ? 2 : 3;
    uint64_t fixed = (uint64_t(leading >> 4) << 16) | (uint64_t(stride >> 4) << 32) |
                     (mode << 62);
    return b_.CreateOr(start, b_.getInt64(fixed));
  }

  // PTX's name of an operand type of wgmma.
  static const char *wgmmaType(ScalarKind k) {
    switch (k) {
    case ScalarKind::BF16: return "bf16";
    case ScalarKind::F16: return "f16";
    case ScalarKind::F8E4M3: return "e4m3";
    case ScalarKind::F8E5M2: return "e5m2";
    case ScalarKind::I8: return "s8";
    case ScalarKind::U8: return "u8";
    case ScalarKind::F32: return "tf32";
    default: internalError("wgmma takes no operands of " + ir::dtypeName(k));
    }
  }

  // One wgmma.mma_async of the warp group: the accumulator registers `regs` (in the
  // instruction's order) += a (descriptor) x b (descriptor), m64 n k(32 bytes).
  // With a from registers, `aFragment` holds its four 32-bit registers and descA is unused.
  // `scaleD`, when given, is the accumulate flag (i1): false ignores the accumulator.
  void wgmmaInstruction(Elements &acc, const std::vector<int64_t> &regs, llvm::Value *descA,
                        llvm::Value *descB, int64_t n,
                        const std::vector<llvm::Value *> &aFragment = {},
                        llvm::Value *scaleD = nullptr) {
    ScalarKind ka = op_.operand(0)->type().kind(), kb = op_.operand(1)->type().kind();
    bool integer = op_.result()->type().kind() == ScalarKind::I32;
    size_t count = regs.size();
    llvm::Type *accTy = integer ? b_.getInt32Ty() : b_.getFloatTy();
    std::vector<llvm::Type *> outs(count, accTy);
    auto *ret = llvm::StructType::get(l_.ctx, outs);
    bool regA = !aFragment.empty();
    std::vector<llvm::Type *> ins;
    if (regA)
      ins.assign(aFragment.size(), b_.getInt32Ty());
    ins.push_back(b_.getInt64Ty());
    if (!regA)
      ins.push_back(b_.getInt64Ty());
    ins.insert(ins.end(), count, accTy);
    if (scaleD)
      ins.push_back(b_.getInt32Ty());
    std::string text = "wgmma.mma_async.sync.aligned.m64n" + std::to_string(n) + "k" +
                       std::to_string(32 / bytes_) + (integer ? ".s32." : ".f32.") +
                       wgmmaType(ka) + "." + wgmmaType(kb) + " {";
    std::string constraints;
    for (size_t i = 0; i < count; ++i) {
      text += (i ? ", $" : "$") + std::to_string(i);
      constraints += integer ? "=r," : "=f,";
    }
    // scale-d 1 (accumulate); floats: a and b not negated; 16-bit: a K-major (a from
    // registers takes no major order), b N-major (transposed) or K-major (other types are
    // K-major only and take no transpose operands).
    size_t next = count; // the first input operand's number
    if (regA) {
      text += "}, {";
      for (size_t i = 0; i < aFragment.size(); ++i) {
        text += (i ? ", $" : "$") + std::to_string(next++);
        constraints += "r,";
      }
      text += "}";
    } else {
      text += "}, $" + std::to_string(next++);
      constraints += "l,";
    }
    text += ", $" + std::to_string(next++);
    constraints += "l";
    // scale-d: a predicate made from the flag's register (the last operand) in the asm's own
    // scope, or the immediate 1.
    text += scaleD ? ", p" : ", 1";
    if (!integer)
      text += ", 1, 1";
    text += bytes_ != 2 ? ";" : regA ? (bKMajor_ ? ", 0;" : ", 1;")
                      : bKMajor_ ? ", 0, 0;" : ", 0, 1;";
    for (size_t i = 0; i < count; ++i)
      constraints += "," + std::to_string(i);
    if (scaleD) {
      constraints += ",r";
      text = "{\n.reg .pred p;\nsetp.ne.b32 p, $" + std::to_string(next + count) + ", 0;\n" +
             text + "\n}";
    }
    constraints += ",~{memory}"; // it reads the tiles in shared memory
    std::vector<llvm::Value *> args;
    if (regA)
      args = aFragment;
    else
      args.push_back(descA);
    args.push_back(descB);
    for (int64_t r : regs)
      args.push_back(acc[size_t(r)]);
    if (scaleD)
      args.push_back(b_.CreateZExt(scaleD, b_.getInt32Ty()));
    auto *asmFn = llvm::InlineAsm::get(llvm::FunctionType::get(ret, ins, false), text,
                                       constraints, /*hasSideEffects=*/true);
    llvm::Value *d = b_.CreateCall(asmFn, args);
    for (size_t i = 0; i < count; ++i)
      acc[size_t(regs[i])] = b_.CreateExtractValue(d, unsigned(i));
  }

  // a's fragment from registers for the 16 columns of K at `kk` of the slice whose rows are
  // the accumulator's register rows rowKey, rowKey + 1 (a has the accumulator's layout over
  // [M, K], so the same register rows): wgmma's a0..a3 hold, as pairs of 16-bit values, row
  // g at columns 2c, 2c + 1; row g + 8 at those; row g at 2c + 8, 2c + 9; row g + 8 at those.
  // Column tile t (8 columns) of a's layout holds its pair in registers 2t, 2t + 1 along K.
  std::vector<llvm::Value *> registerFragment(int64_t rowKey, int64_t kk) {
    if (bytes_ == 1)
      return byteRegisterFragment(rowKey, kk);
    const ir::Value *a = op_.operand(0);
    ir::LayoutMap map(*a->layout(), a->type().shape());
    const Elements &vals = l_.get(a);
    llvm::Type *half = vals.front()->getType();
    auto *pairTy = llvm::FixedVectorType::get(half, 2);
    std::vector<llvm::Value *> out;
    for (int64_t t = kk / 8; t < kk / 8 + 2; ++t)
      for (int64_t h = 0; h < 2; ++h) {
        llvm::Value *pair = llvm::PoisonValue::get(pairTy);
        for (int64_t j = 0; j < 2; ++j) {
          int64_t r = map.registerNumber({rowKey + h, 2 * t + j});
          pair = b_.CreateInsertElement(pair, vals[size_t(r)], b_.getInt32(int32_t(j)));
        }
        out.push_back(b_.CreateBitCast(pair, b_.getInt32Ty()));
      }
    return out;
  }

  // a's fragment from registers for the 32 columns of K at `kk`, 8-bit types. wgmma's a0..a3
  // hold four bytes each: row g at columns 4c .. 4c + 3, row g + 8 at those, row g at
  // 16 + 4c .. 19 + 4c, row g + 8 at those. The accumulator's layout gives this thread, per
  // 8-column tile t, the pair 8t + 2c, 8t + 2c + 1: the same rows, other columns. Per row, the
  // lanes c of a quad trade pairs: c reads tiles c / 2 and 2 + c / 2 of lanes 2 (c % 2) and
  // 2 (c % 2) + 1. Two shuffles a row do it, each lane's sources a permutation of the quad:
  // the first from lane 2 (c % 2) + c / 2, the second from 2 (c % 2) + 1 - c / 2; a source of
  // parity p sends tiles (p, 2 + p) in the first and (1 - p, 3 - p) in the second.
  std::vector<llvm::Value *> byteRegisterFragment(int64_t rowKey, int64_t kk) {
    const ir::Value *a = op_.operand(0);
    ir::LayoutMap map(*a->layout(), a->type().shape());
    const Elements &vals = l_.get(a);
    // The byte fragment's own layout (dotByteFragmentLayout: its product computed its columns
    // in this order, ByteFragmentColumns.cpp): register columns 4q .. 4q + 3 are block
    // columns 16q + 4c .. + 3, one register's four bytes.
    if (map.root().sizePerThread()[1] == 4) {
      // Two 16-bit halves (in which LLVM sees a paired fp8 conversion's result again), one
      // register made of the two (mov.b32 {lo, hi}).
      auto word = [&](int64_t r, int64_t q) {
        auto *pairTy = llvm::FixedVectorType::get(b_.getInt16Ty(), 2);
        llvm::Value *halves = llvm::PoisonValue::get(pairTy);
        for (int64_t h = 0; h < 2; ++h) {
          llvm::Value *half = nullptr;
          for (int64_t e = 0; e < 2; ++e) {
            llvm::Value *v = vals[size_t(map.registerNumber({r, 4 * q + 2 * h + e}))];
            if (!v->getType()->isIntegerTy(8))
              v = b_.CreateBitCast(v, b_.getInt8Ty());
            v = b_.CreateShl(b_.CreateZExt(v, b_.getInt16Ty()), uint64_t(8 * e));
            half = half ? b_.CreateOr(half, v) : v;
          }
          halves = b_.CreateInsertElement(halves, half, b_.getInt32(int32_t(h)));
        }
        return b_.CreateBitCast(halves, b_.getInt32Ty());
      };
      int64_t q = kk / 16;
      return {word(rowKey, q), word(rowKey + 1, q), word(rowKey, q + 1), word(rowKey + 1, q + 1)};
    }
    llvm::Value *c = b_.CreateAnd(l_.laneId, b_.getInt32(3));
    llvm::Value *odd = b_.CreateICmpNE(b_.CreateAnd(c, b_.getInt32(1)), b_.getInt32(0));
    llvm::Value *high = b_.CreateICmpUGE(c, b_.getInt32(2)); // c / 2
    llvm::Value *quad = b_.CreateAnd(l_.laneId, b_.getInt32(~3));
    llvm::Value *twice = b_.CreateShl(b_.CreateAnd(c, b_.getInt32(1)), 1); // 2 (c % 2)
    llvm::Value *half = b_.CreateZExt(high, b_.getInt32Ty());
    llvm::Value *from1 = b_.CreateOr(quad, b_.CreateAdd(twice, half));
    llvm::Value *from2 = b_.CreateOr(quad, b_.CreateSub(b_.CreateAdd(twice, b_.getInt32(1)), half));
    // prmt's selector: bytes 0-3 are r1's, 4-7 r2's.
    llvm::Value *selLow = b_.CreateSelect(high, b_.getInt32(0x1054), b_.getInt32(0x5410));
    llvm::Value *selHigh = b_.CreateSelect(high, b_.getInt32(0x3276), b_.getInt32(0x7632));
    int64_t t0 = kk / 8;
    // The 32-bit word of this thread's pairs of tiles t0 + i and t0 + i + 2 on row `r`.
    // (Shifts and ors, not a vector: LLVM then sees the two bytes of a paired fp8 conversion
    // as its 16 bits again.)
    auto pairs = [&](int64_t r, int64_t i) {
      llvm::Value *w = nullptr;
      for (int64_t j = 0; j < 4; ++j) {
        int64_t reg = map.registerNumber({r, 2 * (t0 + i + 2 * (j / 2)) + j % 2});
        llvm::Value *v = vals[size_t(reg)];
        if (!v->getType()->isIntegerTy(8))
          v = b_.CreateBitCast(v, b_.getInt8Ty());
        v = b_.CreateShl(b_.CreateZExt(v, b_.getInt32Ty()), uint64_t(8 * j));
        w = w ? b_.CreateOr(w, v) : v;
      }
      return w;
    };
    std::vector<llvm::Value *> out(4);
    for (int64_t h = 0; h < 2; ++h) {
      llvm::Value *even = pairs(rowKey + h, 0), *oddPairs = pairs(rowKey + h, 1);
      llvm::Value *r1 = shuffle(l_, b_.CreateSelect(odd, oddPairs, even), Shuffle::Index, from1);
      llvm::Value *r2 = shuffle(l_, b_.CreateSelect(odd, even, oddPairs), Shuffle::Index, from2);
      // Lane 2 (c % 2)'s pair first: r1's where c < 2, r2's where c >= 2 (one prmt each,
      // its byte selector chosen per lane).
      out[size_t(h)] = l_.intrinsic(llvm::Intrinsic::nvvm_prmt, {}, {r1, r2, selLow});
      out[size_t(2 + h)] = l_.intrinsic(llvm::Intrinsic::nvvm_prmt, {}, {r1, r2, selHigh});
    }
    return out;
  }

  // The warp group's product from shared memory: per K step of 32 bytes, per 64-row slice of
  // the warp group and per run of at most 256 columns, one wgmma. a's tile sits K-major in
  // panels of 128 bytes of columns (leading offset unused, 8-row groups 1024 bytes apart), or
  // in rows of 64 or 32 bytes swizzled as wide (8-row groups 512 or 256 bytes apart); b's
  // K-major alike, or (16-bit only) N-major, the transposed form, in panels of 64 columns
  // [K][64] one after another (leading offset: a panel, K x 128 bytes; stride: 8 rows of K,
  // 1024 bytes). The accumulator's tile registers are the instruction's in order: 16 x 8 tile
  // j of the run holds registers 4j .. 4j + 3.
  void wgmmaProduct() {
    Elements acc = l_.get(op_.operand(2));
    const int64_t kStep = 32 / bytes_; // 32 bytes of K per instruction
    const int64_t span = dotSwizzleBytes(K_ * bytes_); // of the K-major tiles' swizzle
    std::vector<Tile> ts = tiles();
    std::map<int64_t, std::vector<const Tile *>> slices; // rowKey -> tiles by column
    for (const Tile &t : ts)
      slices[t.rowKey].push_back(&t);
    int64_t n = std::min<int64_t>(N_, 256);
    // a's register fragments are made before the fence, which takes them as operands so that
    // none is computed between the products (ptxas would then fence each product itself).
    std::map<std::pair<int64_t, int64_t>, std::vector<llvm::Value *>> fragments; // rowKey, kk
    std::vector<llvm::Value *> fenced;
    if (aRegs_)
      for (int64_t kk = 0; kk < K_; kk += kStep)
        for (auto &entry : slices) {
          auto &f = fragments[{entry.first, kk}] = registerFragment(entry.first, kk);
          fenced.insert(fenced.end(), f.begin(), f.end());
        }
    if (!aRegs_) {
      l_.intrinsic(llvm::Intrinsic::nvvm_wgmma_fence_sync_aligned, {}, {});
    } else {
      std::string constraints;
      for (size_t i = 0; i < fenced.size(); ++i)
        constraints += i ? ",r" : "r";
      emitAsm(l_, "wgmma.fence.sync.aligned;", constraints, fenced);
    }
    // fp8 with max_num_imprecise_acc = N: the products of each N of K are summed by the tensor
    // cores from zero into registers of their own, waited for and added to the fp32 sum.
    int64_t promoteEvery =
        op_.hasAttr("max_num_imprecise_acc") ? op_.intAttr("max_num_imprecise_acc") : 0;
    Elements total;
    if (promoteEvery > 0) {
      total = acc;
      if (accumulate_) // the carried reset: false starts the sum from zero
        for (llvm::Value *&v : total)
          v = b_.CreateSelect(accumulate_, v, llvm::ConstantFP::get(v->getType(), 0.0));
    }
    for (int64_t kk = 0; kk < K_; kk += kStep) {
      bool chunkStart = promoteEvery > 0 && kk % promoteEvery == 0;
      if (chunkStart && kk > 0)
        l_.intrinsic(llvm::Intrinsic::nvvm_wgmma_fence_sync_aligned, {}, {});
      int64_t kb = kk * bytes_; // the step's first byte along a row
      for (auto &[rowKey, row] : slices) {
        // The slice's first row: this thread's row with the warp's and lane's part cleared.
        llvm::Value *first = b_.CreateAnd(row.front()->rows[0], b_.getInt32(~63));
        llvm::Value *aOff =
            b_.CreateAdd(b_.getInt32(int32_t((kb / span) * M_ * span + kb % span)),
                         b_.CreateMul(first, b_.getInt32(int32_t(span))));
        llvm::Value *descA = aRegs_ ? nullptr : descriptor(aBase_, aOff, 16, 8 * span, span);
        std::vector<llvm::Value *> aFragment;
        if (aRegs_)
          aFragment = fragments.at({rowKey, kk});
        for (int64_t c = 0; c < N_ / n; ++c) {
          // b N-major ([K][N] in 64-column panels), or K-major ([N][K] as a is [M][K]).
          llvm::Value *descB =
              bKMajor_ ? descriptor(bBase_,
                                    b_.getInt32(int32_t((kb / span) * N_ * span + c * n * span +
                                                        kb % span)),
                                    16, 8 * span, span)
                       : descriptor(bBase_,
                                    b_.getInt32(int32_t((c * n * 2 / 128) * K_ * 128 + kk * 128)),
                                    K_ * 128, 1024);
          std::vector<int64_t> regs;
          for (int64_t j = 0; j < n / 8; ++j) {
            const Tile *t = row.at(size_t(c * n / 8 + j));
            regs.insert(regs.end(), t->regs, t->regs + 4);
          }
          // Only the first K step may start from zeros; the later ones add to it.
          wgmmaInstruction(acc, regs, descA, descB, n, aFragment,
                           chunkStart ? b_.getFalse() : kk == 0 ? accumulate_ : nullptr);
        }
      }
      if (promoteEvery > 0 && ((kk + kStep) % promoteEvery == 0 || kk + kStep >= K_)) {
        l_.intrinsic(llvm::Intrinsic::nvvm_wgmma_commit_group_sync_aligned, {}, {});
        acc = wgmmaWait(l_, acc);
        for (size_t i = 0; i < total.size(); ++i)
          total[i] = b_.CreateFAdd(total[i], acc[i]);
      }
    }
    if (promoteEvery > 0) { // every group was waited for
      l_.set(op_.result(), std::move(total));
      return;
    }
    l_.intrinsic(llvm::Intrinsic::nvvm_wgmma_commit_group_sync_aligned, {}, {});
    // In flight ({in_flight}): only the next iteration's wgmma reads the result, so this waits
    // for the previous iteration's group alone, and the loop's end for the last
    // (LowerToLLVM.cpp).
    // Deferred ({deferred_wait}): the work after it that does not read it runs under it; the
    // block's lowering waits before the first op that reads it (waitForPendingWgmma).
    if (op_.hasAttr("in_flight"))
      l_.intrinsic(llvm::Intrinsic::nvvm_wgmma_wait_group_sync_aligned, {}, {b_.getInt64(1)});
    else if (op_.hasAttr("deferred_wait"))
      l_.pendingWgmma.push_back(op_.result());
    else
      acc = wgmmaWait(l_, acc);
    l_.set(op_.result(), std::move(acc));
  }

  // "ieee": each accumulator element sums its row of a times its column of b with fp32 fmas,
  // in a loop over k.
  void fmaProduct() {
    const ir::Value *res = op_.result();
    Elements init = startingAccumulator();
    std::vector<llvm::Value *> aRow, bRow;
    for (size_t e = 0; e < init.size(); ++e) {
      std::vector<llvm::Value *> c = l_.coordinates(res, int64_t(e));
      llvm::Value *batch = rank_ == 3 ? c[0] : b_.getInt32(0);
      aRow.push_back(stagedOffset(batch, M_, c[size_t(rank_ - 2)], b_.getInt32(0)));
      bRow.push_back(stagedOffset(batch, N_, c[size_t(rank_ - 1)], b_.getInt32(0)));
    }
    llvm::BasicBlock *pre = b_.GetInsertBlock();
    auto *loop = llvm::BasicBlock::Create(l_.ctx, "dot.k", l_.fn);
    auto *done = llvm::BasicBlock::Create(l_.ctx, "dot.k.done", l_.fn);
    b_.CreateBr(loop);
    b_.SetInsertPoint(loop);
    llvm::PHINode *k = b_.CreatePHI(b_.getInt32Ty(), 2);
    k->addIncoming(b_.getInt32(0), pre);
    std::vector<llvm::PHINode *> phis;
    Elements next;
    for (size_t e = 0; e < init.size(); ++e) {
      llvm::PHINode *p = b_.CreatePHI(b_.getFloatTy(), 2);
      p->addIncoming(init[e], pre);
      phis.push_back(p);
    }
    llvm::Value *kBytes = b_.CreateMul(k, b_.getInt32(4));
    for (size_t e = 0; e < init.size(); ++e) {
      auto load = [&](llvm::Value *base, llvm::Value *rowOff) {
        return b_.CreateAlignedLoad(
            b_.getFloatTy(), b_.CreateGEP(b_.getInt8Ty(), base, b_.CreateAdd(rowOff, kBytes)),
            llvm::Align(4));
      };
      next.push_back(l_.intrinsic(llvm::Intrinsic::fma, {b_.getFloatTy()},
                                  {load(aBase_, aRow[e]), load(bBase_, bRow[e]), phis[e]}));
    }
    llvm::Value *k1 = b_.CreateAdd(k, b_.getInt32(1));
    llvm::BasicBlock *latch = b_.GetInsertBlock();
    k->addIncoming(k1, latch);
    for (size_t e = 0; e < init.size(); ++e)
      phis[e]->addIncoming(next[e], latch);
    b_.CreateCondBr(b_.CreateICmpULT(k1, b_.getInt32(int32_t(K_))), loop, done);
    b_.SetInsertPoint(done);
    l_.set(res, Elements(next.begin(), next.end()));
  }

  Lowering &l_;
  llvm::IRBuilder<> &b_;
  const ir::Op &op_;
  int rank_ = 2;
  int64_t M_ = 0, N_ = 0, K_ = 0, row_ = 0;
  int bytes_ = 2;
  std::string precision_;
  llvm::Value *aBase_ = nullptr, *bBase_ = nullptr;
  bool fromRing_[2] = {false, false};
  bool aRegs_ = false; // a from registers, wgmma's register form ({a_regs})
  bool wgmma_ = false;
  bool swizzled_ = false; // operands staged as swizzled tiles (dotStagesSwizzled)
  bool bKMajor_ = false;  // b read K-major: [N][K], from a ring under a trans or staged so
  llvm::Value *accumulate_ = nullptr; // the accumulate operand (i1), if the dot has one
};

} // namespace

Elements wgmmaWait(Lowering &l, const Elements &acc, int64_t inFlight) {
  auto &b = l.b;
  std::vector<llvm::Type *> types;
  std::string constraints;
  for (size_t i = 0; i < acc.size(); ++i) {
    types.push_back(acc[i]->getType());
    constraints += acc[i]->getType()->isIntegerTy() ? "=r," : "=f,";
  }
  for (size_t i = 0; i < acc.size(); ++i)
    constraints += std::to_string(i) + (i + 1 < acc.size() ? "," : "");
  auto *fnTy = llvm::FunctionType::get(llvm::StructType::get(l.ctx, types), types, false);
  llvm::Value *d = b.CreateCall(
      llvm::InlineAsm::get(fnTy,
                           "wgmma.wait_group.sync.aligned " + std::to_string(inFlight) + ";",
                           constraints, true),
      std::vector<llvm::Value *>(acc.begin(), acc.end()));
  Elements out;
  for (size_t i = 0; i < acc.size(); ++i)
    out.push_back(b.CreateExtractValue(d, unsigned(i)));
  return out;
}

PendingReads pendingReadsOf(const ir::Op &op, const std::vector<const ir::Value *> &pending) {
  PendingReads r;
  auto note = [&](const ir::Op &o) {
    r.nestedProduct =
        r.nestedProduct || (&o != &op && o.kind() == ir::OpKind::Dot && o.hasAttr("wgmma"));
    for (const ir::Value *v : o.operands())
      if (std::find(pending.begin(), pending.end(), v) != pending.end())
        r.read.push_back(v);
  };
  note(op);
  for (unsigned i = 0; i < op.numRegions(); ++i)
    ir::walk(*op.region(i), [&](ir::Op &inner) { note(inner); });
  return r;
}

void waitForPendingWgmma(Lowering &l, const std::vector<const ir::Value *> &needed) {
  auto &pending = l.pendingWgmma;
  size_t upTo = needed.empty() ? pending.size() : 0; // pending[0, upTo) are waited for
  for (const ir::Value *v : needed)
    if (auto at = std::find(pending.begin(), pending.end(), v); at != pending.end())
      upTo = std::max(upTo, size_t(at - pending.begin()) + 1);
  if (upTo == 0)
    return;
  Elements all;
  for (size_t i = 0; i < upTo; ++i) {
    const Elements &e = l.get(pending[i]);
    all.insert(all.end(), e.begin(), e.end());
  }
  Elements waited = wgmmaWait(l, all, int64_t(pending.size() - upTo));
  size_t at = 0;
  for (size_t i = 0; i < upTo; ++i) {
    size_t n = l.get(pending[i]).size();
    l.set(pending[i], Elements(waited.begin() + long(at), waited.begin() + long(at + n)));
    at += n;
  }
  pending.erase(pending.begin(), pending.begin() + long(upTo));
}

bool lowerDot(Lowering &l, const ir::Op &op) {
  if (op.kind() != ir::OpKind::Dot)
    return false;
  DotLowering(l, op).run();
  return true;
}

} // namespace tritium::codegen
