// Each program sums a strip of BLOCK_C columns over all parts, BLOCK_P parts at a time as one
// 2-D tile, so that a few hundred parts take a few steps of wide loads rather than hundreds of
// dependent ones. Short rows take narrow strips (down to 8 columns: one 32-byte sector per part)
// and tall tiles, so that a row of 512 columns still spreads over 64 programs. The second array of
// partial sums (LayerNorm's bias gradient) is summed by the same launch, along grid axis 1:
// one kernel between the backward and its results instead of two. The launch overlaps the
// backward's (programmatic dependent launch, sm_90): the backward lets it start launching once
// its rows are done, and every program waits (griddep_wait) before it reads a partial sum, which
// hides most of the ~2.75 us a dependent launch costs (docs/notes/column-sum.md, "Overlapping
// its launch").
#include "kernels/ColumnSum.h"

#include "kernels/Arguments.h"
#include "frontend/DSL.h"
#include "frontend/Kernel.h"

#include <algorithm>
#include <bit>

namespace tritium::kernels {

using namespace tritium::dsl;

static void column_sum_kernel(Ptr out0, Ptr out1, Ptr partial, Int parts, Int cols, int BLOCK_P,
                              int BLOCK_C) {
  auto array = program_id(1); // 0: out0's partial sums, 1: out1's, right after them
  auto c = program_id(0) * BLOCK_C + arange(0, BLOCK_C);
  auto cmask = c < cols;
  auto part = arange(0, BLOCK_P);
  // The tile's column offsets and mask come before the wait, so that their layout conversions
  // (shared memory and barriers) run while the backward finishes: 1% off the norm backwards at
  // 512-2048 columns on the H200 (docs/notes/column-sum.md, "Work before the wait").
  auto at = partial + array * parts * cols + part(_, None) * cols + c(None, _);
  auto colMask = cmask(None, _);
  auto acc = zeros({BLOCK_P, BLOCK_C}, float32);
  griddep_wait(); // the partial sums are the previous kernel's output
  for (auto p0 : range(0, parts, BLOCK_P)) {
    auto mask = (p0 + part < parts)(_, None) & colMask;
    acc = acc + load(at + p0 * cols, mask, 0.0);
  }
  auto total = cast(sum(acc, 0), out0.dtype());
  store(out0 + c, total, cmask & (array == 0));
  store(out1 + c, total, cmask & (array == 1));
}

static Kernel &columnSumKernel() {
  static auto k = kernel("column_sum", column_sum_kernel,
                         {"out0", "out1", "partial", "parts", "cols", "BLOCK_P", "BLOCK_C"});
  return k;
}

ColumnSumTile columnSumTile(int64_t parts, int64_t cols, int64_t arrays) {
  // 4 warps over a [BLOCK_P, BLOCK_C] tile of at most 4096 values: up to 32 loads in flight per
  // thread, each step. Strips narrow enough for about 256 programs over both arrays (8 columns,
  // one 32-byte sector per part, at the least): short rows then take all 512 parts in one step
  // on 128 SMs, where 32-column strips took 4 steps on 32 of them (LayerNorm backward at 512
  // columns 14.3 us instead of 15.1 on an H100). Strips narrow further so that up to 512
  // parts take one step: each step waits a full round trip to L2 or DRAM, and 132 parts in
  // tiles of 128 took a second, nearly empty one (RMSNorm backward at 8192 fp32 columns:
  // column_sum 5.0 us for 4.3 MB). docs/notes/column-sum.md, "The design as kept".
  const int64_t strip = int64_t(std::bit_floor(uint64_t(cols * arrays / 256 + 1)));
  const int64_t allParts = std::clamp<int64_t>(int64_t(std::bit_ceil(uint64_t(parts))), 1, 512);
  const int64_t blockC =
      std::clamp<int64_t>(std::min(strip, 4096 / allParts), 8, cols <= 8192 ? 32 : 64);
  const int64_t blockP =
      std::clamp<int64_t>(int64_t(std::bit_ceil(uint64_t(parts))), 1, 4096 / blockC);
  return {blockP, blockC};
}

void columnSums(Dtype outType, void *out0, void *out1, const float *partial, int64_t parts,
                int64_t cols, CUstream stream) {
  Arguments args("columnSum");
  args.floatStorage("outType", outType);
  KernelArg o0 = args.pointer("out0", out0), p = args.pointer("partial", partial);
  KernelArg o1 = out1 ? args.pointer("out1", out1) : o0; // never stored through without out1
  const int64_t arrays = out1 ? 2 : 1;
  const ColumnSumTile tile = columnSumTile(parts, cols, arrays);
  const int64_t blockP = tile.parts, blockC = tile.cols;
  std::string index = indexType(2 * parts * cols);
  auto integer = [&](int64_t v) { return index == "i64" ? KernelArg(v) : KernelArg(int32_t(v)); };
  KernelArg n = integer(parts), c = integer(cols);
  std::string out = "*" + dtypeName(outType);
  // Not awaitPreviousKernel, unlike the library's other kernels: the kernel waits itself, after
  // its addresses and masks are made (column_sum_kernel).
  Specialization spec = Specialization{.signature = {out, out, "*fp32", index, index},
                                       .constexprs = {blockP, blockC},
                                       .numWarps = 4}
                            .specializedFor({o0, o1, p, n, c});
  columnSumKernel().compile(spec).launch(Grid3{(cols + blockC - 1) / blockC, arrays},
                                         stream, {o0, o1, p, n, c});
}

} // namespace tritium::kernels
