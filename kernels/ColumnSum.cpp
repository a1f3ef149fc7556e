// Each program sums a strip of BLOCK_C columns over all parts, BLOCK_P parts at a time as one
// 2-D tile, so that a few hundred parts take a few steps of wide loads rather than hundreds of
// dependent ones. Short rows take narrow strips (32 columns: one 128-byte line per part) and
// tall tiles, so that a row of 1024 columns still spreads over 32 programs.
#include "kernels/ColumnSum.h"

#include "kernels/Arguments.h"
#include "frontend/DSL.h"
#include "frontend/Kernel.h"

#include <algorithm>
#include <bit>

namespace tritium::kernels {

using namespace tritium::dsl;

static void column_sum_kernel(Ptr out, Ptr partial, Int parts, Int cols, int BLOCK_P,
                              int BLOCK_C) {
  auto c = program_id(0) * BLOCK_C + arange(0, BLOCK_C);
  auto cmask = c < cols;
  auto acc = zeros({BLOCK_P, BLOCK_C}, float32);
  for (auto p0 : range(0, parts, BLOCK_P)) {
    auto p = p0 + arange(0, BLOCK_P);
    auto mask = (p < parts)(_, None) & cmask(None, _);
    acc = acc + load(partial + p(_, None) * cols + c(None, _), mask, 0.0);
  }
  store(out + c, cast(sum(acc, 0), out.dtype()), cmask);
}

static Kernel &columnSumKernel() {
  static auto k = kernel("column_sum", column_sum_kernel,
                         {"out", "partial", "parts", "cols", "BLOCK_P", "BLOCK_C"});
  return k;
}

void columnSum(Dtype outType, void *out, const float *partial, int64_t parts, int64_t cols,
               CUstream stream) {
  Arguments args("columnSum");
  KernelArg o = args.pointer("out", out), p = args.pointer("partial", partial);
  // 4 warps over a [BLOCK_P, BLOCK_C] tile of at most 4096 values: up to 32 loads in flight per
  // thread, each step.
  const int64_t blockC = cols <= 8192 ? 32 : 64;
  const int64_t blockP =
      std::clamp<int64_t>(int64_t(std::bit_ceil(uint64_t(parts))), 1, 4096 / blockC);
  KernelArg n{int32_t(parts)}, c{int32_t(cols)};
  Specialization spec = Specialization{.signature = {"*" + dtypeName(outType), "*fp32", "i32",
                                                     "i32"},
                                       .constexprs = {blockP, blockC},
                                       .numWarps = 4}
                            .specializedFor({o, p, n, c});
  columnSumKernel().compile(spec).launch((cols + blockC - 1) / blockC, stream, {o, p, n, c});
}

} // namespace tritium::kernels
