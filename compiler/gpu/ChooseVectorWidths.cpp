// Vector widths (GIR): each block load and store gets a "vec" attribute, the number of
// elements one thread moves with one instruction. It is bounded by the thread's contiguous run
// (the layout), by the addresses' contiguity and alignment (axis analysis), by the mask's
// constancy (one predicate per vector) and by 16 bytes, the widest global access.
#include "compiler/analysis/AxisInfo.h"
#include "compiler/gpu/GpuPasses.h"

#include <algorithm>
#include <bit>

namespace tritium {

void chooseVectorWidths(ir::Function &fn) {
  AxisAnalysis axes(fn);
  ir::walk(fn.body(), [&](ir::Op &op) {
    if (op.kind() != ir::OpKind::Load && op.kind() != ir::OpKind::Store)
      return;
    const ir::Value *ptr = op.operand(0);
    if (!ptr->type().isBlock())
      return;
    int64_t bytes = ir::byteWidth(ptr->type().kind());
    AxisInfo p = axes.get(ptr);
    // Vectors run along the layout's fastest dimension; a sliced one holds single elements.
    ir::LayoutMap map(*ptr->layout(), ptr->type().shape());
    int f = map.root().order()[0];
    int d = -1;
    for (int i = 0; i < ptr->type().rank(); ++i)
      if (map.rootDim(i) == f)
        d = i;
    int64_t vec = 1;
    if (d >= 0) {
      vec = std::min<int64_t>({map.run(f), p.contiguity[size_t(d)],
                               std::max<int64_t>(1, p.divisibility[size_t(d)] / bytes),
                               16 / bytes});
      unsigned maskIndex = op.kind() == ir::OpKind::Load ? 1 : 2;
      if (op.numOperands() > maskIndex)
        vec = std::min(vec, axes.get(op.operand(maskIndex)).constancy[size_t(d)]);
    }
    // Blocks that are not a power of two long can make a run or constancy like 6: vectors are
    // 1, 2, 4, 8 or 16 elements.
    op.setAttr("vec", int64_t(std::bit_floor(uint64_t(std::max<int64_t>(1, vec)))));
  });
}

} // namespace tritium
