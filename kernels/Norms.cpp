// LayerNorm and RMSNorm in tritium's DSL. Each program walks tiles of rows with a
// persistent-grid stride (RowTile.h): one row at a time through a cp.async ring, or several
// short rows as a 2-D tile; a row too long for one program's registers is split over a
// thread-block cluster whose row sums go through distributed shared memory. The row is read
// once: mean and variance come from the registers (two steps, not E[x^2] - E[x]^2, which
// cancels). The backward loads each row's saved statistics one row ahead and keeps each
// program's weight-gradient sums in registers over all its rows (a tile's rows apart, added
// once at the end rather than across warps every step), writes them once as fp32 partial
// sums, and column_sum adds the programs' partials. The weights are held in registers, or, where
// the plan frees those registers for more warps (RowPlan::weightsEachRow), read each row from the
// shared-memory copy that the ring makes of a load the loop does not change.
#include "kernels/Norms.h"

#include "frontend/DSL.h"
#include "frontend/Kernel.h"
#include "interpreter/Interpreter.h"
#include "kernels/Arguments.h"
#include "kernels/ColumnSum.h"
#include "kernels/RowTile.h"
#include "runtime/Device.h"

#include <algorithm>
#include <functional>

namespace tritium::kernels {

using namespace tritium::dsl;

static void layer_norm_forward(Ptr y, Ptr mean_out, Ptr rstd_out, Ptr x, Ptr w, Ptr b, Int x_stride,
                               Int y_stride, Int n_rows, Int n_cols, Float eps, int BLOCK, int ROWS,
                               int CLUSTER, int num_stages, int HAS_BIAS, int STATS,
                               int WEIGHTS_EACH_ROW) {
  (void)CLUSTER; // the specialization's cluster size; cluster_rank() and cluster_sum() use it
  RowColumns cols(ROWS, BLOCK, n_cols);
  auto weights = [&] { return cast(load(w + cols.cols, cols.mask, 0.0), float32); };
  auto biases = [&] { return cast(load(b + cols.cols, cols.mask, 0.0), float32); };
  Value heldW = WEIGHTS_EACH_ROW ? Value() : weights();
  Value heldB = HAS_BIAS && !WEIGHTS_EACH_ROW ? biases() : Value();
  for (auto tile : range(firstTile(), tileCount(n_rows, ROWS), tileStep(), num_stages)) {
    RowTile t(cols, tile, n_rows);
    auto xv = cast(load(x + t.row * x_stride + cols.cols, t.mask, 0.0), float32);
    auto mean = t.rowSum(xv) / n_cols;
    auto xc = where(t.mask, xv - t.expand(mean), 0.0);
    auto rstd = rsqrt(t.rowSum(xc * xc) / n_cols + eps);
    auto wv = WEIGHTS_EACH_ROW ? weights() : heldW;
    Value bv = HAS_BIAS ? (WEIGHTS_EACH_ROW ? biases() : heldB) : Value();
    auto out = xc * t.expand(rstd) * wv;
    if (HAS_BIAS)
      out = out + bv;
    store(y + t.row * y_stride + cols.cols, cast(out, y.dtype()), t.mask);
    if (STATS) {
      t.storePerRow(mean_out, mean);
      t.storePerRow(rstd_out, rstd);
    }
  }
}

// The backwards read each row of x and dy once: first out of L2, so that the weights, the
// statistics and the partial sums column_sum reads next stay (LayerNorm's backward at 512 and
// 1024 columns 2-4% faster, docs/notes/norms.md). Rings of bulk copies keep the hint; those of
// cp.async (2-D tiles of short rows) drop it since 87c46e6 (compiler/codegen/LowerPipelinedLoop.cpp
// says why), 2-3% at 1024 columns.
const CacheHints kReadOnce{.evict = Evict::first};

// Whether the LayerNorm backward reads the weights again each row instead of holding them in
// registers: where the plan says so, and for CTAs of more than 8 warps over a cluster, whose
// threads get at most 128 registers. With 8 warps (255 registers) holding them is 4-13% faster at
// 16384-65536 columns and spares the fp16 kernel at 65536 a schedule 20% slower than bf16's
// (docs/notes/norms.md, "Held weights at 8 warps, and the fp16 backward at 65536").
static bool weightsEachRow(const RowPlan &p) {
  return p.weightsEachRow || (p.clusterSize > 1 && p.numWarps > 8);
}

// dx = rstd (w dy - (xhat mean(xhat w dy) + mean(w dy))), dw = sum dy xhat, db = sum dy.
static void layer_norm_backward(Ptr dx, Ptr partial, Ptr dy, Ptr x, Ptr w, Ptr mean, Ptr rstd,
                                Int dy_stride, Int x_stride, Int dx_stride, Int n_rows, Int n_cols,
                                int BLOCK, int ROWS, int CLUSTER, int num_stages, int HAS_BIAS,
                                int WEIGHTS_EACH_ROW) {
  (void)CLUSTER; // the specialization's cluster size; cluster_rank() and cluster_sum() use it
  RowColumns cols(ROWS, BLOCK, n_cols);
  auto weights = [&] { return cast(load(w + cols.cols, cols.mask, 0.0), float32); };
  Value wv = WEIGHTS_EACH_ROW ? Value() : weights();
  auto dw = zeros(cols.tileShape(), float32);
  auto db = zeros(cols.tileShape(), float32);
  auto ahead = [&](const Value &tile, const Value &p) {
    return RowTile::loadPerRowAhead(cols, tile, n_rows, p);
  };
  auto meanNext = ahead(firstTile(), mean), rstdNext = ahead(firstTile(), rstd);
  for (auto tile : range(firstTile(), tileCount(n_rows, ROWS), tileStep(), num_stages)) {
    RowTile t(cols, tile, n_rows);
    auto meanHere = meanNext, rstdHere = rstdNext;
    meanNext = ahead(tile + tileStep(), mean);
    rstdNext = ahead(tile + tileStep(), rstd);
    auto xv = cast(load(x + t.row * x_stride + cols.cols, t.mask, 0.0, kReadOnce), float32);
    auto g = cast(load(dy + t.row * dy_stride + cols.cols, t.mask, 0.0, kReadOnce), float32);
    auto rs = t.expand(rstdHere);
    // Masked columns need no select: their dy is 0, so wdy, the sums and the gradients'
    // terms are 0 there, and their dx is not stored.
    auto xhat = (xv - t.expand(meanHere)) * rs;
    // A CTA of 16 warps leaves a thread 128 registers, too few to hold x, dy, the two gradient
    // sums and the weights of 16 columns: there the weights are read again each row (from
    // shared memory, through the ring) rather than held, which spares ptxas the registers it
    // would otherwise spill (weightsEachRow).
    auto wdy = (WEIGHTS_EACH_ROW ? weights() : wv) * g;
    auto [s1, s2] = t.rowSums(xhat * wdy, wdy);
    auto c1 = s1 / n_cols;
    auto c2 = s2 / n_cols;
    auto dxv = (wdy - (xhat * t.expand(c1) + t.expand(c2))) * rs;
    store(dx + t.row * dx_stride + cols.cols, cast(dxv, dx.dtype()), t.mask);
    dw = dw + g * xhat;
    if (HAS_BIAS)
      db = db + g;
  }
  // column_sum may launch now, while the partial sums are written; it waits for this kernel's
  // end. Letting it launch first thing put its waiting programs beside the rows' and cost the
  // backward 1-7% at 1024-4096 columns (docs/notes/column-sum.md, "Overlapping its launch").
  griddep_launch_dependents();
  // Partial sums: dw for cluster c at row c, db at row clusters + c, of n_cols each.
  auto at = partial + firstTile() * n_cols + cols.flat;
  store(at, cols.columnSum(dw), cols.flatMask);
  if (HAS_BIAS)
    store(at + tileStep() * n_cols, cols.columnSum(db), cols.flatMask);
}

static void rms_norm_forward(Ptr y, Ptr rstd_out, Ptr x, Ptr w, Int x_stride, Int y_stride,
                             Int n_rows, Int n_cols, Float eps, int BLOCK, int ROWS, int CLUSTER,
                             int num_stages, int STATS, int WEIGHTS_EACH_ROW) {
  (void)CLUSTER;
  RowColumns cols(ROWS, BLOCK, n_cols);
  auto weights = [&] { return cast(load(w + cols.cols, cols.mask, 0.0), float32); };
  Value held = WEIGHTS_EACH_ROW ? Value() : weights();
  for (auto tile : range(firstTile(), tileCount(n_rows, ROWS), tileStep(), num_stages)) {
    RowTile t(cols, tile, n_rows);
    auto xv = cast(load(x + t.row * x_stride + cols.cols, t.mask, 0.0), float32);
    auto rstd = rsqrt(t.rowSum(xv * xv) / n_cols + eps);
    auto wv = WEIGHTS_EACH_ROW ? weights() : held;
    store(y + t.row * y_stride + cols.cols, cast(xv * t.expand(rstd) * wv, y.dtype()), t.mask);
    if (STATS)
      t.storePerRow(rstd_out, rstd);
  }
}

// dx = rstd (w dy - xhat mean(xhat w dy)), dw = sum dy xhat, with xhat = x rstd.
static void rms_norm_backward(Ptr dx, Ptr partial, Ptr dy, Ptr x, Ptr w, Ptr rstd, Int dy_stride,
                              Int x_stride, Int dx_stride, Int n_rows, Int n_cols, int BLOCK,
                              int ROWS, int CLUSTER, int num_stages, int WEIGHTS_EACH_ROW) {
  (void)CLUSTER;
  RowColumns cols(ROWS, BLOCK, n_cols);
  auto weights = [&] { return cast(load(w + cols.cols, cols.mask, 0.0), float32); };
  Value held = WEIGHTS_EACH_ROW ? Value() : weights();
  auto dw = zeros(cols.tileShape(), float32);
  auto rstdNext = RowTile::loadPerRowAhead(cols, firstTile(), n_rows, rstd);
  for (auto tile : range(firstTile(), tileCount(n_rows, ROWS), tileStep(), num_stages)) {
    RowTile t(cols, tile, n_rows);
    auto rstdHere = rstdNext;
    rstdNext = RowTile::loadPerRowAhead(cols, tile + tileStep(), n_rows, rstd);
    auto xv = cast(load(x + t.row * x_stride + cols.cols, t.mask, 0.0, kReadOnce), float32);
    auto g = cast(load(dy + t.row * dy_stride + cols.cols, t.mask, 0.0, kReadOnce), float32);
    auto rs = t.expand(rstdHere);
    auto xhat = xv * rs;
    auto wdy = (WEIGHTS_EACH_ROW ? weights() : held) * g;
    auto c1 = t.rowSum(xhat * wdy) / n_cols;
    store(dx + t.row * dx_stride + cols.cols, cast((wdy - xhat * t.expand(c1)) * rs, dx.dtype()),
          t.mask);
    dw = dw + g * xhat;
  }
  griddep_launch_dependents(); // column_sum may launch now (as in the LayerNorm backward)
  store(partial + firstTile() * n_cols + cols.flat, cols.columnSum(dw), cols.flatMask);
}

static const std::vector<std::string> kTileParams = {"BLOCK", "ROWS", "CLUSTER", "num_stages"};

static std::vector<std::string> params(std::vector<std::string> runtime,
                                       std::vector<std::string> more = {}) {
  runtime.insert(runtime.end(), kTileParams.begin(), kTileParams.end());
  runtime.insert(runtime.end(), more.begin(), more.end());
  return runtime;
}

static Kernel &layerNormForwardKernel() {
  static auto k = kernel("layer_norm_forward", layer_norm_forward,
                         params({"y", "mean", "rstd", "x", "w", "b", "x_stride", "y_stride",
                                 "n_rows", "n_cols", "eps"},
                                {"HAS_BIAS", "STATS", "WEIGHTS_EACH_ROW"}));
  return k;
}
static Kernel &layerNormBackwardKernel() {
  static auto k = kernel("layer_norm_backward", layer_norm_backward,
                         params({"dx", "partial", "dy", "x", "w", "mean", "rstd", "dy_stride",
                                 "x_stride", "dx_stride", "n_rows", "n_cols"},
                                {"HAS_BIAS", "WEIGHTS_EACH_ROW"}));
  return k;
}
static Kernel &rmsNormForwardKernel() {
  static auto k =
      kernel("rms_norm_forward", rms_norm_forward,
             params({"y", "rstd", "x", "w", "x_stride", "y_stride", "n_rows", "n_cols", "eps"},
                    {"STATS", "WEIGHTS_EACH_ROW"}));
  return k;
}
static Kernel &rmsNormBackwardKernel() {
  static auto k = kernel("rms_norm_backward", rms_norm_backward,
                         params({"dx", "partial", "dy", "x", "w", "rstd", "dy_stride", "x_stride",
                                 "dx_stride", "n_rows", "n_cols"},
                                {"WEIGHTS_EACH_ROW"}));
  return k;
}

// --- launches -------------------------------------------------------------------------------

namespace {

// The checks and argument types every norm shares.
struct RowLaunch {
  RowLaunch(const char *function, Dtype dtype, int64_t rows, int64_t cols, const RowPlan *given,
            bool backward)
      : args(function), dtype(dtype), rows(rows), cols(cols), given(given), backward(backward) {
    args.floatStorage("dtype", dtype);
    args.atLeast("rows", rows, 0);
    args.atLeast("cols", cols, 1);
    if (given && backward && !given->persistent)
      args.fail("the plan is not persistent (" + given->str() +
                "), but the backward's programs each keep a partial sum of the weight gradients");
    if (given && cols > given->maxCols())
      args.fail("rows of " + std::to_string(cols) + " columns are longer than the plan's " +
                std::to_string(given->maxCols()) + " (" + given->str() + ")");
    if (cols > std::numeric_limits<int32_t>::max())
      args.fail("cols is " + std::to_string(cols) + ", more than 2^31 - 1");
    if (!given && cols > maxNormCols(backward))
      args.fail("rows of " + std::to_string(cols) + " columns are longer than the " +
                std::to_string(maxNormCols(backward)) + " a 16-program cluster holds");
  }
  // The given plan, else the autotuner's (or the planner's) among the candidates that `fits`.
  RowPlan choose(const char *kernel, bool rerunSafe, CUstream stream,
                 const std::function<void(const RowPlan &)> &launch,
                 const std::function<bool(const RowPlan &)> &fits = nullptr,
                 int64_t workspaceBytes = 0) const {
    return choosePlan<RowPlan>(
        given,
        {kernel,
         {int64_t(dtype), rows, cols, workspaceBytes, aligned ? 1 : 0, weightArrays},
         rerunSafe},
        [&] { return rowBucket(dtype, rows, cols, aligned); }, stream,
        [&] {
          return backward ? planNormBackward(cols, dtype)
                          : planNormForward(cols, dtype, weightArrays);
        },
        [&] {
          std::vector<RowPlan> candidates;
          for (const RowPlan &p : normCandidates(cols, dtype, backward, weightArrays))
            if (!fits || fits(p))
              candidates.push_back(p);
          return candidates;
        },
        launch);
  }
  // The bytes a tensor of `rows` rows of this stride spans.
  Span span(const void *p, int64_t stride, int64_t elementBytes) const {
    return {p, rows ? ((rows - 1) * stride + cols) * elementBytes : 0};
  }
  Span tensor(const void *p, int64_t stride) const { return span(p, stride, dtypeBytes(dtype)); }
  Span vector(const void *p, int64_t elementBytes) const { return {p, cols * elementBytes}; }
  Span perRow(const void *p) const { return {p, rows * 4}; }

  // A stride argument (0: cols), checked; all strides share one index type.
  int64_t stride(const char *name, int64_t s) {
    s = s ? s : cols;
    args.rowStride(name, s, cols);
    maxOffset = std::max(maxOffset, rows * s);
    aligned = aligned && s * dtypeBytes(dtype) % 16 == 0;
    return s;
  }
  // The tensors' bases: those off 16-byte boundaries take plans apart (rowBucket).
  void bases(std::initializer_list<const void *> tensors) {
    aligned = aligned && on16ByteBoundaries(tensors);
  }
  KernelArg index(int64_t v) const {
    return indexType(maxOffset) == "i64" ? KernelArg(v) : KernelArg(int32_t(v));
  }
  std::string tensorType() const { return "*" + dtypeName(dtype); }
  std::string idx() const { return indexType(maxOffset); }

  Arguments args;
  Dtype dtype;
  int64_t rows, cols;
  const RowPlan *given;
  bool backward;
  int64_t maxOffset = 0;
  bool aligned = true; // every base and row stride on 16 bytes
  int weightArrays = 1; // per-column arrays a forward multiplies by (LayerNorm's bias: 2)
};

} // namespace

void layerNormForward(Dtype dtype, const LayerNormForwardArgs &a, CUstream stream,
                      const RowPlan *plan) {
  RowLaunch l("layerNormForward", dtype, a.rows, a.cols, plan, false);
  KernelArg y = l.args.pointer("y", a.y), x = l.args.pointer("x", a.x),
            w = l.args.pointer("weight", a.weight), b = l.args.optionalPointer(a.bias);
  bool stats = a.mean || a.rstd;
  if (stats && !(a.mean && a.rstd))
    l.args.fail("mean and rstd must both be given or both be null");
  KernelArg mean = l.args.optionalPointer(a.mean), rstd = l.args.optionalPointer(a.rstd);
  int64_t xs = l.stride("xStride", a.xStride), ys = l.stride("yStride", a.yStride);
  l.bases({a.y, a.x, a.weight, a.bias});
  l.weightArrays = a.bias ? 2 : 1;
  if (a.rows == 0)
    return;
  KernelArg sx = l.index(xs), sy = l.index(ys), r(int32_t(a.rows)), c(int32_t(a.cols)), eps(a.eps);
  std::string t = l.tensorType();
  auto launch = [&](const RowPlan &p) {
    Specialization spec =
        p.specialization({t, "*fp32", "*fp32", t, t, t, l.idx(), l.idx(), "i32", "i32", "fp32"},
                         {a.bias ? 1 : 0, stats ? 1 : 0, p.weightsEachRow ? 1 : 0})
            .specializedFor({y, mean, rstd, x, w, b, sx, sy, r, c, eps});
    CompiledKernel &k = layerNormForwardKernel().compile(spec);
    k.launch(p.forwardGrid(k, a.rows), stream, {y, mean, rstd, x, w, b, sx, sy, r, c, eps});
  };
  int64_t e = dtypeBytes(dtype);
  bool rerunSafe = !anyOverlap({l.tensor(a.y, ys), l.perRow(a.mean), l.perRow(a.rstd)},
                               {l.tensor(a.x, xs), l.vector(a.weight, e), l.vector(a.bias, e)});
  launch(l.choose("layer_norm_forward", rerunSafe, stream, launch));
}

// The partial sums of the given plan, or of any plan the autotuner may choose.
static int64_t maxPartials(int64_t rows, int64_t cols, const RowPlan *plan) {
  if (plan)
    return plan->maxPartials(rows);
  int64_t most = 1;
  for (Dtype d : {Dtype::fp32, Dtype::fp16, Dtype::bf16})
    for (const RowPlan &p : normCandidates(cols, d, true))
      most = std::max(most, p.maxPartials(rows));
  return most;
}

size_t layerNormBackwardWorkspaceBytes(int64_t rows, int64_t cols, const RowPlan *plan) {
  return size_t(maxPartials(rows, cols, plan) * cols * 4 * 2);
}

size_t rmsNormBackwardWorkspaceBytes(int64_t rows, int64_t cols, const RowPlan *plan) {
  return size_t(maxPartials(rows, cols, plan) * cols * 4);
}

// The backward's grid (whole clusters, at most maxPartials of them), after checking that the
// workspace holds `arrays` partial sums per cluster.
static int64_t backwardGrid(RowLaunch &l, const RowPlan &p, CompiledKernel &k,
                            size_t workspaceBytes, int arrays, int64_t *clusters) {
  int64_t partials = tritium::interpreting()
                         ? p.maxPartials(l.rows)
                         : p.partialsOn(l.rows, rt::Context::current().props().smCount);
  int64_t grid = k.persistentGrid(partials);
  *clusters = grid / p.clusterSize;
  size_t need = size_t(*clusters * l.cols * 4 * arrays);
  if (workspaceBytes < need)
    l.args.fail("workspaceBytes is " + std::to_string(workspaceBytes) + ", but this launch needs " +
                std::to_string(need) + " (see the WorkspaceBytes function)");
  return grid;
}

template <typename Args> static void zeroGradients(RowLaunch &l, const Args &a, CUstream stream) {
  const float *none = static_cast<const float *>(a.workspace);
  void *dbias = nullptr;
  if constexpr (requires { a.dbias; })
    dbias = a.dbias;
  columnSums(l.dtype, a.dweight, dbias, none, 0, a.cols, stream);
}

void layerNormBackward(Dtype dtype, const LayerNormBackwardArgs &a, CUstream stream,
                       const RowPlan *plan) {
  RowLaunch l("layerNormBackward", dtype, a.rows, a.cols, plan, true);
  KernelArg dx = l.args.pointer("dx", a.dx), dy = l.args.pointer("dy", a.dy),
            x = l.args.pointer("x", a.x), w = l.args.pointer("weight", a.weight),
            mean = l.args.pointer("mean", a.mean), rstd = l.args.pointer("rstd", a.rstd),
            ws = l.args.pointer("workspace", a.workspace);
  l.args.pointer("dweight", a.dweight);
  int64_t gs = l.stride("dyStride", a.dyStride), xs = l.stride("xStride", a.xStride),
          ds = l.stride("dxStride", a.dxStride);
  l.bases({a.dx, a.dy, a.x, a.weight});
  if (a.rows == 0) { // no rows: zero weight gradients (a sum over no parts)
    zeroGradients(l, a, stream);
    return;
  }
  KernelArg sg = l.index(gs), sx = l.index(xs), sd = l.index(ds), r(int32_t(a.rows)),
            c(int32_t(a.cols));
  std::string t = l.tensorType(), i = l.idx();
  int arrays = a.dbias ? 2 : 1;
  auto launch = [&](const RowPlan &p) {
    Specialization spec =
        p.specialization({t, "*fp32", t, t, t, "*fp32", "*fp32", i, i, i, "i32", "i32"},
                         {a.dbias ? 1 : 0, weightsEachRow(p) ? 1 : 0})
            .specializedFor({dx, ws, dy, x, w, mean, rstd, sg, sx, sd, r, c});
    CompiledKernel &k = layerNormBackwardKernel().compile(spec);
    int64_t clusters = 0;
    int64_t grid = backwardGrid(l, p, k, a.workspaceBytes, arrays, &clusters);
    k.launch(grid, stream, {dx, ws, dy, x, w, mean, rstd, sg, sx, sd, r, c});
    const float *partial = static_cast<const float *>(a.workspace);
    columnSums(dtype, a.dweight, a.dbias, partial, clusters, a.cols, stream);
  };
  int64_t e = dtypeBytes(dtype);
  bool rerunSafe = !anyOverlap({l.tensor(a.dx, ds),
                                l.vector(a.dweight, e),
                                l.vector(a.dbias, e),
                                {a.workspace, int64_t(a.workspaceBytes)}},
                               {l.tensor(a.dy, gs), l.tensor(a.x, xs), l.vector(a.weight, e),
                                l.perRow(a.mean), l.perRow(a.rstd)});
  auto fits = [&](const RowPlan &p) {
    return size_t(p.maxPartials(a.rows) * a.cols * 4 * arrays) <= a.workspaceBytes;
  };
  launch(
      l.choose("layer_norm_backward", rerunSafe, stream, launch, fits, int64_t(a.workspaceBytes)));
}

void rmsNormForward(Dtype dtype, const RMSNormForwardArgs &a, CUstream stream,
                    const RowPlan *plan) {
  RowLaunch l("rmsNormForward", dtype, a.rows, a.cols, plan, false);
  KernelArg y = l.args.pointer("y", a.y), x = l.args.pointer("x", a.x),
            w = l.args.pointer("weight", a.weight), rstd = l.args.optionalPointer(a.rstd);
  int64_t xs = l.stride("xStride", a.xStride), ys = l.stride("yStride", a.yStride);
  l.bases({a.y, a.x, a.weight});
  if (a.rows == 0)
    return;
  KernelArg sx = l.index(xs), sy = l.index(ys), r(int32_t(a.rows)), c(int32_t(a.cols)), eps(a.eps);
  std::string t = l.tensorType();
  auto launch = [&](const RowPlan &p) {
    Specialization spec =
        p.specialization({t, "*fp32", t, t, l.idx(), l.idx(), "i32", "i32", "fp32"},
                         {a.rstd ? 1 : 0, p.weightsEachRow ? 1 : 0})
            .specializedFor({y, rstd, x, w, sx, sy, r, c, eps});
    CompiledKernel &k = rmsNormForwardKernel().compile(spec);
    k.launch(p.forwardGrid(k, a.rows), stream, {y, rstd, x, w, sx, sy, r, c, eps});
  };
  bool rerunSafe = !anyOverlap({l.tensor(a.y, ys), l.perRow(a.rstd)},
                               {l.tensor(a.x, xs), l.vector(a.weight, dtypeBytes(dtype))});
  launch(l.choose("rms_norm_forward", rerunSafe, stream, launch));
}

void rmsNormBackward(Dtype dtype, const RMSNormBackwardArgs &a, CUstream stream,
                     const RowPlan *plan) {
  RowLaunch l("rmsNormBackward", dtype, a.rows, a.cols, plan, true);
  KernelArg dx = l.args.pointer("dx", a.dx), dy = l.args.pointer("dy", a.dy),
            x = l.args.pointer("x", a.x), w = l.args.pointer("weight", a.weight),
            rstd = l.args.pointer("rstd", a.rstd), ws = l.args.pointer("workspace", a.workspace);
  l.args.pointer("dweight", a.dweight);
  int64_t gs = l.stride("dyStride", a.dyStride), xs = l.stride("xStride", a.xStride),
          ds = l.stride("dxStride", a.dxStride);
  l.bases({a.dx, a.dy, a.x, a.weight});
  if (a.rows == 0) { // no rows: zero weight gradients (a sum over no parts)
    zeroGradients(l, a, stream);
    return;
  }
  KernelArg sg = l.index(gs), sx = l.index(xs), sd = l.index(ds), r(int32_t(a.rows)),
            c(int32_t(a.cols));
  std::string t = l.tensorType(), i = l.idx();
  auto launch = [&](const RowPlan &p) {
    Specialization spec = p.specialization({t, "*fp32", t, t, t, "*fp32", i, i, i, "i32", "i32"},
                                           {p.weightsEachRow ? 1 : 0})
                              .specializedFor({dx, ws, dy, x, w, rstd, sg, sx, sd, r, c});
    CompiledKernel &k = rmsNormBackwardKernel().compile(spec);
    int64_t clusters = 0;
    int64_t grid = backwardGrid(l, p, k, a.workspaceBytes, 1, &clusters);
    k.launch(grid, stream, {dx, ws, dy, x, w, rstd, sg, sx, sd, r, c});
    columnSums(dtype, a.dweight, nullptr, static_cast<const float *>(a.workspace), clusters,
               a.cols, stream);
  };
  int64_t e = dtypeBytes(dtype);
  bool rerunSafe = !anyOverlap(
      {l.tensor(a.dx, ds), l.vector(a.dweight, e), {a.workspace, int64_t(a.workspaceBytes)}},
      {l.tensor(a.dy, gs), l.tensor(a.x, xs), l.vector(a.weight, e), l.perRow(a.rstd)});
  auto fits = [&](const RowPlan &p) {
    return size_t(p.maxPartials(a.rows) * a.cols * 4) <= a.workspaceBytes;
  };
  launch(l.choose("rms_norm_backward", rerunSafe, stream, launch, fits, int64_t(a.workspaceBytes)));
}

} // namespace tritium::kernels
