// Shared-memory allocation (GIR): two banks of one scratch slot per warp for each cross-warp
// reduction (LowerReduction.cpp alternates them), and two banks of one slot per program of the
// cluster for each cluster reduction (its peers write there; LowerCluster.cpp alternates the
// banks), plus one mbarrier per bank that counts the bytes the peers' writes bring in
// (kernel attribute cluster_barriers). Each reduction gets its own region, so consecutive
// reductions need no barrier between them for buffer reuse.
#include "compiler/gpu/GpuPasses.h"

#include <algorithm>

namespace tritium {

void allocateSharedMemory(ir::Function &fn, int numWarps) {
  int64_t clusterSize = fn.intAttr("cluster_size").value_or(1);
  int64_t offset = 0;
  bool exchanges = false;
  ir::walk(fn.body(), [&](ir::Op &op) {
    int64_t slots = 0;
    if (op.kind() == ir::OpKind::ReduceMax || op.kind() == ir::OpKind::ReduceSum)
      slots = numWarps > 1 ? 2 * numWarps : 0; // one warp needs only shuffles
    else if (op.kind() == ir::OpKind::ClusterMax || op.kind() == ir::OpKind::ClusterSum ||
             op.kind() == ir::OpKind::ClusterGather) {
      slots = clusterSize > 1 ? 2 * clusterSize : 0;
      exchanges = exchanges || slots > 0;
    }
    if (!slots)
      return;
    // Reductions compute in at least 32 bits (16-bit floats widen to f32).
    int64_t bytes = std::max(4, ir::bitWidth(op.result()->type().kind()) / 8);
    offset = (offset + bytes - 1) / bytes * bytes;
    op.setAttr("smem_offset", offset);
    offset += bytes * slots;
  });
  if (exchanges) { // two mbarriers of 8 bytes, 8-byte aligned
    offset = (offset + 7) / 8 * 8;
    fn.setAttr("cluster_barriers", offset);
    offset += 16;
  }
  fn.setAttr("shared_bytes", (offset + 15) / 16 * 16);
}

} // namespace tritium
