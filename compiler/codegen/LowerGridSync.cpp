// Lowering of grid_sync: a barrier across the whole grid, on the barrier word of the grid
// workspace the driver gives a cooperative launch (its address in %envreg1:%envreg2, the word
// 4 bytes in: CUDA's own cooperative groups read it there, cooperative_groups/details/
// driver_abi.h). Each CTA's thread 0 adds to the word once, with release semantics: 1, except
// CTA 0, which adds 2^31 - (CTAs - 1). The sum of all arrivals is 2^31, so the top bit flips
// exactly when the last CTA arrives, whatever the word held before; each leader polls with
// acquire loads until the bit differs from the one it saw. The word needs no reset between
// barriers or launches. CTA barriers around it carry the CTA's writes into the release and the
// acquire out to every thread.
#include "compiler/codegen/Mbarrier.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

namespace tritium::codegen {

bool lowerGridSync(Lowering &l, const ir::Op &op) {
  if (op.kind() != ir::OpKind::GridSync)
    return false;
  auto &b = l.b;
  auto sreg = [&](llvm::Intrinsic::ID id) { return l.intrinsic(id, {}, {}); };
  namespace I = llvm::Intrinsic;
  llvm::Value *ctas = b.CreateMul(
      b.CreateMul(sreg(I::nvvm_read_ptx_sreg_nctaid_x), sreg(I::nvvm_read_ptx_sreg_nctaid_y)),
      sreg(I::nvvm_read_ptx_sreg_nctaid_z));
  llvm::Value *first = b.CreateICmpEQ(b.CreateOr(b.CreateOr(sreg(I::nvvm_read_ptx_sreg_ctaid_x),
                                                            sreg(I::nvvm_read_ptx_sreg_ctaid_y)),
                                                 sreg(I::nvvm_read_ptx_sreg_ctaid_z)),
                                      b.getInt32(0));
  llvm::Value *arrival = b.CreateSelect(
      first, b.CreateSub(b.getInt32(0x80000000u), b.CreateSub(ctas, b.getInt32(1))), b.getInt32(1));
  llvm::Value *leader = b.CreateICmpEQ(sreg(I::nvvm_read_ptx_sreg_tid_x), b.getInt32(0));
  l.barrier();
  // The labels are local to the braces, so every copy of this text may use the same ones.
  emitAsm(l,
          "{\n\t.reg .pred leader, flipped;\n\t.reg .b32 lo, hi, old, now;\n\t.reg .b64 word;\n\t"
          "setp.ne.b32 leader, $0, 0;\n\t"
          "@!leader bra done;\n\t"
          "mov.b32 hi, %envreg1;\n\tmov.b32 lo, %envreg2;\n\t"
          "mov.b64 word, {lo, hi};\n\tadd.u64 word, word, 4;\n\t"
          "atom.release.gpu.add.u32 old, [word], $1;\n"
          "poll:\n\t"
          "ld.acquire.gpu.u32 now, [word];\n\t"
          "xor.b32 now, now, old;\n\t"
          "setp.lt.s32 flipped, now, 0;\n\t" // the top bits differ: every CTA has arrived
          "@!flipped bra poll;\n"
          "done:\n\t}",
          "r,r", {b.CreateZExt(leader, b.getInt32Ty()), arrival});
  l.barrier();
  return true;
}

} // namespace tritium::codegen
