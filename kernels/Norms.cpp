// LayerNorm and RMSNorm in tritium's DSL. Each program walks tiles of rows with a
// persistent-grid stride (RowTile.h): one row at a time through a cp.async ring, or several
// short rows as a 2-D tile; a row too long for one program's registers is split over a
// thread-block cluster whose row sums go through distributed shared memory. The row is read
// once: mean and variance come from the registers (two steps, not E[x^2] - E[x]^2, which
// cancels). The backward keeps each program's weight-gradient sums in registers over all its
// rows, writes them once as fp32 partial sums, and column_sum adds the programs' partials.
#include "kernels/Norms.h"

#include "kernels/Arguments.h"
#include "kernels/ColumnSum.h"
#include "kernels/RowTile.h"
#include "frontend/DSL.h"
#include "frontend/Kernel.h"

#include <algorithm>

namespace tritium::kernels {

using namespace tritium::dsl;

static void layer_norm_forward(Ptr y, Ptr mean_out, Ptr rstd_out, Ptr x, Ptr w, Ptr b,
                               Int x_stride, Int y_stride, Int n_rows, Int n_cols, Float eps,
                               int BLOCK, int ROWS, int CLUSTER, int num_stages, int HAS_BIAS,
                               int STATS) {
  (void)CLUSTER; // the specialization's cluster size; cluster_rank() and cluster_sum() use it
  RowColumns cols(ROWS, BLOCK, n_cols);
  auto wv = cast(load(w + cols.cols, cols.mask, 0.0), float32);
  Value bv = HAS_BIAS ? cast(load(b + cols.cols, cols.mask, 0.0), float32) : Value();
  for (auto tile : range(firstTile(), tileCount(n_rows, ROWS), tileStep(), num_stages)) {
    RowTile t(cols, tile, n_rows);
    auto xv = cast(load(x + t.row * x_stride + cols.cols, t.mask, 0.0), float32);
    auto mean = t.rowSum(xv) / n_cols;
    auto xc = where(t.mask, xv - t.expand(mean), 0.0);
    auto rstd = rsqrt(t.rowSum(xc * xc) / n_cols + eps);
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

// dx = rstd (w dy - (xhat mean(xhat w dy) + mean(w dy))), dw = sum dy xhat, db = sum dy.
static void layer_norm_backward(Ptr dx, Ptr partial, Ptr dy, Ptr x, Ptr w, Ptr mean, Ptr rstd,
                                Int dy_stride, Int x_stride, Int dx_stride, Int n_rows,
                                Int n_cols, int BLOCK, int ROWS, int CLUSTER, int num_stages,
                                int HAS_BIAS) {
  (void)CLUSTER;
  RowColumns cols(ROWS, BLOCK, n_cols);
  auto wv = cast(load(w + cols.cols, cols.mask, 0.0), float32);
  auto dw = zeros({BLOCK}, float32);
  auto db = zeros({BLOCK}, float32);
  for (auto tile : range(firstTile(), tileCount(n_rows, ROWS), tileStep(), num_stages)) {
    RowTile t(cols, tile, n_rows);
    auto xv = cast(load(x + t.row * x_stride + cols.cols, t.mask, 0.0), float32);
    auto g = cast(load(dy + t.row * dy_stride + cols.cols, t.mask, 0.0), float32);
    auto rs = t.expand(t.loadPerRow(rstd));
    auto xhat = where(t.mask, (xv - t.expand(t.loadPerRow(mean))) * rs, 0.0);
    auto wdy = wv * g;
    auto c1 = t.rowSum(xhat * wdy) / n_cols;
    auto c2 = t.rowSum(wdy) / n_cols;
    auto dxv = (wdy - (xhat * t.expand(c1) + t.expand(c2))) * rs;
    store(dx + t.row * dx_stride + cols.cols, cast(dxv, dx.dtype()), t.mask);
    dw = dw + t.columnSum(g * xhat);
    if (HAS_BIAS)
      db = db + t.columnSum(g);
  }
  // Partial sums: dw for cluster c at row c, db at row clusters + c, of n_cols each.
  auto at = partial + firstTile() * n_cols + cols.flat;
  store(at, dw, cols.flatMask);
  if (HAS_BIAS)
    store(at + tileStep() * n_cols, db, cols.flatMask);
}

static void rms_norm_forward(Ptr y, Ptr rstd_out, Ptr x, Ptr w, Int x_stride, Int y_stride,
                             Int n_rows, Int n_cols, Float eps, int BLOCK, int ROWS, int CLUSTER,
                             int num_stages, int STATS) {
  (void)CLUSTER;
  RowColumns cols(ROWS, BLOCK, n_cols);
  auto wv = cast(load(w + cols.cols, cols.mask, 0.0), float32);
  for (auto tile : range(firstTile(), tileCount(n_rows, ROWS), tileStep(), num_stages)) {
    RowTile t(cols, tile, n_rows);
    auto xv = cast(load(x + t.row * x_stride + cols.cols, t.mask, 0.0), float32);
    auto rstd = rsqrt(t.rowSum(xv * xv) / n_cols + eps);
    store(y + t.row * y_stride + cols.cols, cast(xv * t.expand(rstd) * wv, y.dtype()), t.mask);
    if (STATS)
      t.storePerRow(rstd_out, rstd);
  }
}

// dx = rstd (w dy - xhat mean(xhat w dy)), dw = sum dy xhat, with xhat = x rstd.
static void rms_norm_backward(Ptr dx, Ptr partial, Ptr dy, Ptr x, Ptr w, Ptr rstd,
                              Int dy_stride, Int x_stride, Int dx_stride, Int n_rows, Int n_cols,
                              int BLOCK, int ROWS, int CLUSTER, int num_stages) {
  (void)CLUSTER;
  RowColumns cols(ROWS, BLOCK, n_cols);
  auto wv = cast(load(w + cols.cols, cols.mask, 0.0), float32);
  auto dw = zeros({BLOCK}, float32);
  for (auto tile : range(firstTile(), tileCount(n_rows, ROWS), tileStep(), num_stages)) {
    RowTile t(cols, tile, n_rows);
    auto xv = cast(load(x + t.row * x_stride + cols.cols, t.mask, 0.0), float32);
    auto g = cast(load(dy + t.row * dy_stride + cols.cols, t.mask, 0.0), float32);
    auto rs = t.expand(t.loadPerRow(rstd));
    auto xhat = xv * rs;
    auto wdy = wv * g;
    auto c1 = t.rowSum(xhat * wdy) / n_cols;
    store(dx + t.row * dx_stride + cols.cols, cast((wdy - xhat * t.expand(c1)) * rs, dx.dtype()),
          t.mask);
    dw = dw + t.columnSum(g * xhat);
  }
  store(partial + firstTile() * n_cols + cols.flat, dw, cols.flatMask);
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
                                {"HAS_BIAS", "STATS"}));
  return k;
}
static Kernel &layerNormBackwardKernel() {
  static auto k = kernel("layer_norm_backward", layer_norm_backward,
                         params({"dx", "partial", "dy", "x", "w", "mean", "rstd", "dy_stride",
                                 "x_stride", "dx_stride", "n_rows", "n_cols"},
                                {"HAS_BIAS"}));
  return k;
}
static Kernel &rmsNormForwardKernel() {
  static auto k = kernel("rms_norm_forward", rms_norm_forward,
                         params({"y", "rstd", "x", "w", "x_stride", "y_stride", "n_rows",
                                 "n_cols", "eps"},
                                {"STATS"}));
  return k;
}
static Kernel &rmsNormBackwardKernel() {
  static auto k = kernel("rms_norm_backward", rms_norm_backward,
                         params({"dx", "partial", "dy", "x", "w", "rstd", "dy_stride",
                                 "x_stride", "dx_stride", "n_rows", "n_cols"}));
  return k;
}

// --- launches -------------------------------------------------------------------------------

namespace {

// The checks and argument types every norm shares.
struct RowLaunch {
  RowLaunch(const char *function, Dtype dtype, int64_t rows, int64_t cols, const RowPlan *given,
            bool backward)
      : args(function), dtype(dtype), rows(rows), cols(cols) {
    args.atLeast("rows", rows, 0);
    args.atLeast("cols", cols, 1);
    plan = given ? *given : backward ? planNormBackward(cols, dtype) : planNormForward(cols, dtype);
    if (cols > plan.maxCols())
      args.fail("rows of " + std::to_string(cols) + " columns are longer than the plan's " +
                std::to_string(plan.maxCols()) + " (" + plan.str() + ")");
    if (cols > std::numeric_limits<int32_t>::max())
      args.fail("cols is " + std::to_string(cols) + ", more than 2^31 - 1");
  }
  // A stride argument (0: cols), checked; all strides share one index type.
  int64_t stride(const char *name, int64_t s) {
    s = s ? s : cols;
    args.rowStride(name, s, cols);
    maxOffset = std::max(maxOffset, rows * s);
    return s;
  }
  KernelArg index(int64_t v) const {
    return indexType(maxOffset) == "i64" ? KernelArg(v) : KernelArg(int32_t(v));
  }
  std::string tensor() const { return "*" + dtypeName(dtype); }
  std::string idx() const { return indexType(maxOffset); }

  Arguments args;
  Dtype dtype;
  int64_t rows, cols;
  RowPlan plan;
  int64_t maxOffset = 0;
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
  if (a.rows == 0)
    return;
  KernelArg sx = l.index(xs), sy = l.index(ys), r(int32_t(a.rows)), c(int32_t(a.cols)),
            eps(a.eps);
  std::string t = l.tensor();
  Specialization spec =
      l.plan.specialization({t, "*fp32", "*fp32", t, t, t, l.idx(), l.idx(), "i32", "i32",
                             "fp32"},
                            {a.bias ? 1 : 0, stats ? 1 : 0})
          .specializedFor({y, mean, rstd, x, w, b, sx, sy, r, c, eps});
  CompiledKernel &k = layerNormForwardKernel().compile(spec);
  k.launch(k.persistentGrid(l.plan.tiles(a.rows)), stream,
           {y, mean, rstd, x, w, b, sx, sy, r, c, eps});
}

size_t layerNormBackwardWorkspaceBytes(int64_t rows, int64_t cols, const RowPlan *plan) {
  RowPlan p = plan ? *plan : planNormBackward(cols, Dtype::fp32);
  return size_t(p.maxPartials(rows) * cols * 4 * 2);
}

size_t rmsNormBackwardWorkspaceBytes(int64_t rows, int64_t cols, const RowPlan *plan) {
  RowPlan p = plan ? *plan : planNormBackward(cols, Dtype::fp32);
  return size_t(p.maxPartials(rows) * cols * 4);
}

// The backward's grid (whole clusters, at most maxPartials of them), after checking that the
// workspace holds `arrays` partial sums per cluster.
static int64_t backwardGrid(RowLaunch &l, CompiledKernel &k, size_t workspaceBytes, int arrays,
                            int64_t *clusters) {
  int64_t grid = k.persistentGrid(l.plan.maxPartials(l.rows));
  *clusters = grid / l.plan.clusterSize;
  size_t need = size_t(*clusters * l.cols * 4 * arrays);
  if (workspaceBytes < need)
    l.args.fail("workspaceBytes is " + std::to_string(workspaceBytes) + ", but this launch needs " +
                std::to_string(need) + " (see the WorkspaceBytes function)");
  return grid;
}

template <typename Args>
static void zeroGradients(RowLaunch &l, const Args &a, CUstream stream) {
  const float *none = static_cast<const float *>(a.workspace);
  columnSum(l.dtype, a.dweight, none, 0, a.cols, stream);
  if constexpr (requires { a.dbias; })
    if (a.dbias)
      columnSum(l.dtype, a.dbias, none, 0, a.cols, stream);
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
  if (a.rows == 0) { // no rows: zero weight gradients (a sum over no parts)
    zeroGradients(l, a, stream);
    return;
  }
  KernelArg sg = l.index(gs), sx = l.index(xs), sd = l.index(ds), r(int32_t(a.rows)),
            c(int32_t(a.cols));
  std::string t = l.tensor(), i = l.idx();
  Specialization spec =
      l.plan.specialization({t, "*fp32", t, t, t, "*fp32", "*fp32", i, i, i, "i32", "i32"},
                            {a.dbias ? 1 : 0})
          .specializedFor({dx, ws, dy, x, w, mean, rstd, sg, sx, sd, r, c});
  CompiledKernel &k = layerNormBackwardKernel().compile(spec);
  int64_t clusters = 0;
  int64_t grid = backwardGrid(l, k, a.workspaceBytes, a.dbias ? 2 : 1, &clusters);
  k.launch(grid, stream, {dx, ws, dy, x, w, mean, rstd, sg, sx, sd, r, c});
  const float *partial = static_cast<const float *>(a.workspace);
  columnSum(dtype, a.dweight, partial, clusters, a.cols, stream);
  if (a.dbias)
    columnSum(dtype, a.dbias, partial + clusters * a.cols, clusters, a.cols, stream);
}

void rmsNormForward(Dtype dtype, const RMSNormForwardArgs &a, CUstream stream,
                    const RowPlan *plan) {
  RowLaunch l("rmsNormForward", dtype, a.rows, a.cols, plan, false);
  KernelArg y = l.args.pointer("y", a.y), x = l.args.pointer("x", a.x),
            w = l.args.pointer("weight", a.weight), rstd = l.args.optionalPointer(a.rstd);
  int64_t xs = l.stride("xStride", a.xStride), ys = l.stride("yStride", a.yStride);
  if (a.rows == 0)
    return;
  KernelArg sx = l.index(xs), sy = l.index(ys), r(int32_t(a.rows)), c(int32_t(a.cols)),
            eps(a.eps);
  std::string t = l.tensor();
  Specialization spec =
      l.plan.specialization({t, "*fp32", t, t, l.idx(), l.idx(), "i32", "i32", "fp32"},
                            {a.rstd ? 1 : 0})
          .specializedFor({y, rstd, x, w, sx, sy, r, c, eps});
  CompiledKernel &k = rmsNormForwardKernel().compile(spec);
  k.launch(k.persistentGrid(l.plan.tiles(a.rows)), stream, {y, rstd, x, w, sx, sy, r, c, eps});
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
  if (a.rows == 0) { // no rows: zero weight gradients (a sum over no parts)
    zeroGradients(l, a, stream);
    return;
  }
  KernelArg sg = l.index(gs), sx = l.index(xs), sd = l.index(ds), r(int32_t(a.rows)),
            c(int32_t(a.cols));
  std::string t = l.tensor(), i = l.idx();
  Specialization spec =
      l.plan.specialization({t, "*fp32", t, t, t, "*fp32", i, i, i, "i32", "i32"})
          .specializedFor({dx, ws, dy, x, w, rstd, sg, sx, sd, r, c});
  CompiledKernel &k = rmsNormBackwardKernel().compile(spec);
  int64_t clusters = 0;
  int64_t grid = backwardGrid(l, k, a.workspaceBytes, 1, &clusters);
  k.launch(grid, stream, {dx, ws, dy, x, w, rstd, sg, sx, sd, r, c});
  columnSum(dtype, a.dweight, static_cast<const float *>(a.workspace), clusters, a.cols, stream);
}

} // namespace tritium::kernels
