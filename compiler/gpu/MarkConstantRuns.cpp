// Constant runs (GIR): an elementwise block value that the axis analysis proves constant over
// aligned groups of elements (a mask compared per 16-byte vector, `cols < n_cols` with n_cols
// divisible by 16) gets a "constancy" attribute, capped at the thread's contiguous run. The
// lowering then computes one element per group and reuses it for the others, instead of one
// index computation and one comparison per element, which LLVM cannot prove redundant.
#include "compiler/analysis/AxisInfo.h"
#include "compiler/gpu/GpuPasses.h"

#include <numeric>

namespace tritium {

void markConstantRuns(ir::Function &fn) {
  AxisAnalysis axes(fn);
  ir::walk(fn.body(), [&](ir::Op &op) {
    if (op.numResults() != 1 || ir::trait(op) != ir::OpTrait::Pure)
      return;
    // Constants and splats are one value already; an arange is never constant.
    if (op.kind() == ir::OpKind::Constant || op.kind() == ir::OpKind::Splat ||
        op.kind() == ir::OpKind::Arange)
      return;
    const ir::Value *res = op.result();
    if (!res->type().isBlock() || !res->layout())
      return;
    // Runs along the layout's fastest dimension are consecutive registers. Runs are powers of
    // two, so the gcd with one is a power of two that divides it.
    ir::LayoutMap map(*res->layout(), res->type().shape());
    int f = map.root().order()[0];
    int64_t run = 1;
    for (int d = 0; d < res->type().rank(); ++d)
      if (map.rootDim(d) == f)
        run = std::gcd(axes.get(res).constancy[size_t(d)], map.run(f));
    if (run > 1)
      op.setAttr("constancy", run);
  });
}

} // namespace tritium
