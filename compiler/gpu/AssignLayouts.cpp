// Layout assignment (TIR -> GIR). All blocks of one shape share one layout, so elementwise ops
// need no data movement; the run per thread is sized for the narrowest element that is loaded
// or stored at that shape, so each thread's run is one 16-byte access.
#include "compiler/gpu/GpuPasses.h"

#include <algorithm>
#include <numeric>
#include <map>

namespace tritium {

namespace {

constexpr int kWarpSize = 32;
constexpr int kVectorBytes = 16;

int elementBytes(const ir::Type &t) {
  return t.isPtr() ? 8 : std::max(1, ir::bitWidth(t.kind()) / 8);
}

} // namespace

void assignLayouts(ir::Function &fn, int numWarps) {
  // The narrowest memory element per shape decides the vector run.
  std::map<std::vector<int64_t>, int> narrowest;
  ir::walk(fn.body(), [&](ir::Op &op) {
    if (op.kind() != ir::OpKind::Load && op.kind() != ir::OpKind::Store)
      return;
    const ir::Type &ptr = op.operand(0)->type();
    if (!ptr.isBlock())
      return;
    int bytes = ir::byteWidth(ptr.kind());
    auto [it, inserted] = narrowest.emplace(ptr.shape(), bytes);
    if (!inserted)
      it->second = std::min(it->second, bytes);
  });

  const int64_t threads = int64_t(kWarpSize) * numWarps;
  auto layoutFor = [&](const ir::Type &t, const SourceLoc &loc) {
    if (t.rank() != 1)
      userError("blocks of rank " + std::to_string(t.rank()) + " (" + t.str() +
                    ") are not supported yet: tritium lowers 1-D blocks",
                loc);
    int64_t n = t.shape()[0];
    if (!ir::hasBlockedLayout(n, threads))
      userError(t.str() + ": a block size must be a power of two or a multiple of 32 x " +
                    "num_warps = " + std::to_string(threads),
                loc);
    int64_t perThread = std::max<int64_t>(1, n / threads);
    if (perThread > kMaxElementsPerThread)
      userError(t.str() + " needs " + std::to_string(perThread) + " elements per thread with " +
                    "num_warps=" + std::to_string(numWarps) + " (at most " +
                    std::to_string(kMaxElementsPerThread) +
                    "): raise num_warps or loop over smaller blocks",
                loc);
    auto it = narrowest.find(t.shape());
    int bytes = it != narrowest.end() ? it->second : elementBytes(t);
    // The run is a power of two that divides the thread's elements (12 fp16 take runs of 4).
    int64_t spt = std::gcd(perThread, int64_t(std::max(1, kVectorBytes / bytes)));
    return ir::Layout{{int(spt)}, {kWarpSize}, {numWarps}};
  };

  auto assign = [&](ir::Value *v, const SourceLoc &loc) {
    if (v->type().isBlock())
      v->setLayout(layoutFor(v->type(), loc));
  };
  for (auto &arg : fn.body().arguments())
    assign(arg.get(), fn.loc());
  ir::walk(fn.body(), [&](ir::Op &op) {
    for (auto &r : op.results())
      assign(r.get(), op.loc());
    if (op.body())
      for (auto &arg : op.body()->arguments())
        assign(arg.get(), op.loc());
  });
  fn.setAttr("num_warps", int64_t(numWarps));
}

} // namespace tritium
