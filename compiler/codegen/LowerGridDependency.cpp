// Lowering of programmatic dependent launch (griddepcontrol, sm_90, PTX ISA 7.8): the wait and
// the early trigger for the next kernel. Both are inline PTX that clobbers memory rather than
// LLVM's intrinsics, which are declared as touching no memory: nothing may move a load of the
// previous kernel's output above the wait. Below sm_90 neither instruction exists and both
// lower to nothing: the runtime then launches the kernel in plain stream order, which the wait
// would only have relaxed (compileTIR reports waitsOnPriorKernel for sm_90 and later only).
#include "compiler/codegen/Mbarrier.h"

namespace tritium::codegen {

bool lowerGridDependency(Lowering &l, const ir::Op &op) {
  const char *text;
  if (op.kind() == ir::OpKind::GridDepWait)
    text = "griddepcontrol.wait;";
  else if (op.kind() == ir::OpKind::GridDepLaunchDependents)
    text = "griddepcontrol.launch_dependents;";
  else
    return false;
  if (l.sm >= 90)
    emitAsm(l, text, "", {});
  return true;
}

} // namespace tritium::codegen
