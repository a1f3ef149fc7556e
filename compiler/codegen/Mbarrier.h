// Hopper's asynchronous-transaction barriers (mbarrier) and the inline PTX that drives them,
// shared by bulk-copy rings (LowerBulkCopy.cpp) and cluster exchanges (LowerCluster.cpp). An
// mbarrier completes a phase when its pending arrivals reach zero and every byte announced by
// expect_tx has landed (complete_tx); waiters name the phase by its parity.
#pragma once

#include "compiler/codegen/Lowering.h"

#include <string>

namespace tritium::codegen {

// Inline PTX with side effects that clobbers memory (so LLVM keeps loads and stores around it;
// also used by LowerGridDependency.cpp).
void emitAsm(Lowering &l, const std::string &text, const std::string &constraints,
             llvm::ArrayRef<llvm::Value *> args);
// The 32-bit shared-memory address of byte `offset` (i32) of the kernel's dynamic shared memory.
llvm::Value *sharedAddress(Lowering &l, llvm::Value *offset);
// Spins until the mbarrier at `barrier` (a shared address) has completed the phase of `parity`.
void waitParity(Lowering &l, llvm::Value *barrier, llvm::Value *parity);

} // namespace tritium::codegen
