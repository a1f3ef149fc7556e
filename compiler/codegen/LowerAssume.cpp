// Lowering of assume: one llvm.assume per element of the thread's condition. LLVM may use it
// (known bits, ranges, alignment) and drops it before code generation; a false assumption
// makes the kernel's behaviour undefined, as Triton's tl.assume does.
#include "compiler/codegen/Lowering.h"

namespace tritium::codegen {

bool lowerAssume(Lowering &l, const ir::Op &op) {
  if (op.kind() != ir::OpKind::Assume)
    return false;
  for (llvm::Value *holds : l.get(op.operand(0)))
    l.b.CreateAssumption(holds);
  return true;
}

} // namespace tritium::codegen
