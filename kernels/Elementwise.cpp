// The elementwise kernels: one program per block of BLOCK elements, as Triton's tutorials
// launch them, 16-byte vector accesses where n and the pointers allow (the launch specializes
// on them). Offsets are 64-bit only when n passes 2^31.
#include "kernels/Elementwise.h"

#include "frontend/DSL.h"
#include "frontend/Kernel.h"
#include "kernels/Arguments.h"
#include "kernels/ElementwisePlan.h"

#include <functional>
#include <initializer_list>
#include <limits>

namespace tritium::kernels {

using namespace tritium::dsl;

// This program's offsets: BLOCK of them from program_id(0) * BLOCK, in i64 when WIDE.
static Value blockOffsets(int BLOCK, int WIDE) {
  auto pid = WIDE ? cast(program_id(0), int64) : program_id(0);
  return pid * BLOCK + arange(0, BLOCK);
}

static void vector_add_kernel(Ptr out, Ptr a, Ptr b, Int n, int BLOCK, int WIDE) {
  auto offs = blockOffsets(BLOCK, WIDE);
  auto mask = offs < n;
  auto sum = cast(load(a + offs, mask, 0.0), float32) + cast(load(b + offs, mask, 0.0), float32);
  store(out + offs, cast(sum, out.dtype()), mask);
}

// keep = rand(seed, offs) > p, Triton's test, decided on the integers: rand folds the random
// word onto [0, 2^31) (a negative x becomes -x - 1, which is ~x, so x ^ (x >> 31)) and scales
// it, a non-decreasing map, so rand > p exactly when the folded word is above `last`, the
// largest one whose uniform is not above p (dropoutLastDropped). That spares each element the
// conversion to float, the multiply and the float compare.
static void dropout_kernel(Ptr out, Ptr x, Int n, Int last, Float scale, Int seed, int BLOCK,
                           int WIDE) {
  auto offs = blockOffsets(BLOCK, WIDE);
  auto mask = offs < n;
  auto v = cast(load(x + offs, mask, 0.0), float32);
  auto word = bitcast(randint(seed, offs), int32);
  auto keep = (word ^ (word >> 31)) > last;
  store(out + offs, cast(where(keep, v * scale, 0.0), out.dtype()), mask);
}

Kernel &vectorAddKernel() {
  static auto k = kernel("vector_add", vector_add_kernel, {"out", "a", "b", "n", "BLOCK", "WIDE"});
  return k;
}

Kernel &dropoutKernel() {
  static auto k =
      kernel("dropout", dropout_kernel, {"out", "x", "n", "last", "scale", "seed", "BLOCK", "WIDE"});
  return k;
}

// The given plan, else the autotuner's or the planner's.
// Tensors off 16-byte boundaries are tuned and remembered apart.
static ElementwisePlan choose(const char *kernel, const ElementwisePlan *given, Dtype dtype,
                              int64_t n, ElementwiseKind kind,
                              std::initializer_list<const void *> tensors, bool rerunSafe,
                              CUstream stream,
                              const std::function<void(const ElementwisePlan &)> &launch) {
  bool aligned = on16ByteBoundaries(tensors);
  return choosePlan<ElementwisePlan>(
      given, {kernel, {int64_t(dtype), n, aligned ? 1 : 0}, rerunSafe},
      [&] { return elementwiseBucket(dtype, n, aligned); }, stream,
      [&] { return planElementwise(n, dtype, kind); },
      [&] { return elementwiseCandidates(n, dtype, kind); }, launch);
}

void vectorAdd(Dtype dtype, void *out, const void *a, const void *b, int64_t n, CUstream stream,
               const ElementwisePlan *given) {
  Arguments args("vectorAdd");
  args.floatStorage("dtype", dtype);
  KernelArg o = args.pointer("out", out), x = args.pointer("a", a), y = args.pointer("b", b);
  args.atLeast("n", n, 0);
  if (n == 0)
    return;
  if (given)
    args.planBlock(given->block);
  auto launch = [&](const ElementwisePlan &plan) {
    bool wide = plan.wide(n);
    std::string t = "*" + dtypeName(dtype), idx = wide ? "i64" : "i32";
    KernelArg count = wide ? KernelArg(n) : KernelArg(int32_t(n));
    Specialization spec = Specialization{.signature = {t, t, t, idx},
                                         .constexprs = {plan.block, wide ? 1 : 0},
                                         .numWarps = plan.numWarps,
                                         .minBlocksPerSM = plan.minBlocksPerSM,
                                         .awaitPreviousKernel = true}
                              .specializedFor({o, x, y, count});
    vectorAddKernel().compile(spec).launch(plan.grid(n), stream, {o, x, y, count});
  };
  int64_t bytes = n * dtypeBytes(dtype);
  bool rerunSafe = !anyOverlap({{out, bytes}}, {{a, bytes}, {b, bytes}});
  launch(choose("vector_add", given, dtype, n, ElementwiseKind::Add, {out, a, b}, rerunSafe, stream,
                launch));
}

// The largest word w in [0, 2^31) whose uniform, fp32(w) x fp32(kUniformScale32) rounded as
// the GPU rounds, is not above fp32(p): the words above it are the kept ones.
int32_t dropoutLastDropped(double p) {
  const float limit = float(p), scale = float(dsl::kUniformScale32);
  auto uniform = [&](int64_t w) { return float(int32_t(w)) * scale; };
  int64_t lo = 0, hi = std::numeric_limits<int32_t>::max(); // uniform(lo) = 0 <= limit
  if (uniform(hi) <= limit)
    return int32_t(hi); // nothing kept
  while (hi - lo > 1) { // uniform(lo) <= limit < uniform(hi)
    int64_t mid = lo + (hi - lo) / 2;
    (uniform(mid) <= limit ? lo : hi) = mid;
  }
  return int32_t(lo);
}

void dropout(Dtype dtype, void *out, const void *x, int64_t n, double p, int64_t seed,
             CUstream stream, const ElementwisePlan *given) {
  Arguments args("dropout");
  args.floatStorage("dtype", dtype);
  KernelArg o = args.pointer("out", out), in = args.pointer("x", x);
  args.atLeast("n", n, 0);
  args.fraction("p", p, false);
  if (n == 0)
    return;
  if (given)
    args.planBlock(given->block);
  bool seed32 = seed >= INT32_MIN && seed <= INT32_MAX;
  KernelArg seedArg = seed32 ? KernelArg(int32_t(seed)) : KernelArg(seed);
  KernelArg lastArg{dropoutLastDropped(p)}, scale{float(1.0 / (1.0 - p))};
  auto launch = [&](const ElementwisePlan &plan) {
    bool wide = plan.wide(n);
    std::string t = "*" + dtypeName(dtype), idx = wide ? "i64" : "i32";
    KernelArg count = wide ? KernelArg(n) : KernelArg(int32_t(n));
    Specialization spec =
        Specialization{.signature = {t, t, idx, "i32", "fp32", seed32 ? "i32" : "i64"},
                       .constexprs = {plan.block, wide ? 1 : 0},
                       .numWarps = plan.numWarps,
                       .minBlocksPerSM = plan.minBlocksPerSM,
                       .awaitPreviousKernel = true}
            .specializedFor({o, in, count, lastArg, scale, seedArg});
    dropoutKernel().compile(spec).launch(plan.grid(n), stream,
                                         {o, in, count, lastArg, scale, seedArg});
  };
  int64_t bytes = n * dtypeBytes(dtype);
  bool rerunSafe = !anyOverlap({{out, bytes}}, {{x, bytes}});
  launch(choose("dropout", given, dtype, n, ElementwiseKind::Dropout, {out, x}, rerunSafe, stream,
                launch));
}

} // namespace tritium::kernels
