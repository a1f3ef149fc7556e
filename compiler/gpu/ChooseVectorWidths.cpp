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
    const AxisInfo &p = axes.get(ptr);
    int64_t vec = std::min<int64_t>({int64_t(ptr->layout()->sizePerThread[0]), p.contiguity,
                                     std::max<int64_t>(1, p.divisibility / bytes), 16 / bytes});
    unsigned maskIndex = op.kind() == ir::OpKind::Load ? 1 : 2;
    if (op.numOperands() > maskIndex)
      vec = std::min(vec, axes.get(op.operand(maskIndex)).constancy);
    // Blocks that are not a power of two long can make a run or constancy like 6: vectors are
    // 1, 2, 4, 8 or 16 elements.
    op.setAttr("vec", int64_t(std::bit_floor(uint64_t(std::max<int64_t>(1, vec)))));
  });
}

} // namespace tritium
