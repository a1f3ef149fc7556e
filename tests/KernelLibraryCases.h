// The kernel library (kernels/) against double-precision references, shared by the GPU tests
// (tests/gpu/KernelLibraryGpuTest.cpp) and their interpreter twins
// (tests/unit/KernelLibraryInterpreterTest.cpp): fresh random inputs in fp32, fp16 and bf16,
// padded row strides, a base one element past an aligned address, outputs poisoned with NaN
// before each run, extreme rows (large magnitudes, -inf logits, ignored targets) and finite
// differences of the forward kernels. `Buffer` is rt::DeviceBuffer or interpreter::HostBuffer.
#pragma once

#include "TestSupport.h"
#include "kernels/CrossEntropy.h"
#include "kernels/Elementwise.h"
#include "kernels/HostDtype.h"
#include "kernels/Norms.h"
#include "interpreter/Philox.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace tritium::testing::library {

using kernels::Dtype;
using Sync = std::function<void()>;

inline std::string name(Dtype d) { return kernels::dtypeName(d); }

// |got - want| <= atol + rtol |want| for outputs stored in d (fp32 math, approximate exp and
// rsqrt, then rounding to the storage type).
struct Tol {
  double atol, rtol;
};
inline Tol tolFor(Dtype d) {
  if (d == Dtype::fp16)
    return {2e-3, 4e-3};
  if (d == Dtype::bf16)
    return {2e-2, 2e-2};
  return {2e-5, 2e-4};
}

// A host tensor in a storage type: its bytes and the values they hold (after rounding).
struct HostTensor {
  Dtype dtype;
  std::vector<unsigned char> raw;
  std::vector<double> values;
  HostTensor(Dtype d, size_t n) : dtype(d), raw(n * size_t(kernels::dtypeBytes(d))), values(n) {}
  void set(size_t i, double v) {
    unsigned char *p = raw.data() + i * size_t(kernels::dtypeBytes(dtype));
    kernels::storeElement(name(dtype), float(v), p);
    values[i] = kernels::loadElement(name(dtype), p);
  }
};

inline HostTensor randomTensor(Dtype d, size_t n, std::mt19937 &rng, double scale = 1.0,
                               double shift = 0.0) {
  HostTensor t(d, n);
  std::normal_distribution<double> dist(0.0, scale);
  for (size_t i = 0; i < n; ++i)
    t.set(i, shift + dist(rng));
  return t;
}

// A device (or interpreter) allocation with `lead` spare elements before the data, so that
// the data starts `lead` elements past an aligned address.
template <typename Buffer> struct Placed {
  Buffer buffer;
  size_t offset; // bytes
  Placed(size_t bytes, size_t lead) : buffer(std::max<size_t>(4, bytes + lead + 64)), offset(lead) {
    buffer.fill32(kernels::kPoisonBits);
  }
  void *ptr() const { return reinterpret_cast<void *>(uintptr_t(buffer.ptr()) + offset); }
  float *f32() const { return static_cast<float *>(ptr()); }
  int64_t *i64() const { return static_cast<int64_t *>(ptr()); }
  void upload(const void *src, size_t bytes) {
    std::vector<unsigned char> all(buffer.bytes());
    buffer.download(all.data(), all.size());
    std::copy_n(static_cast<const unsigned char *>(src), bytes, all.begin() + long(offset));
    buffer.upload(all.data(), all.size());
  }
  std::vector<unsigned char> bytes(size_t n) const {
    std::vector<unsigned char> all(buffer.bytes());
    buffer.download(all.data(), all.size());
    return {all.begin() + long(offset), all.begin() + long(offset + n)};
  }
};

template <typename Buffer> Placed<Buffer> place(const HostTensor &t, size_t lead = 0) {
  Placed<Buffer> p(t.raw.size(), lead);
  p.upload(t.raw.data(), t.raw.size());
  return p;
}
template <typename Buffer> Placed<Buffer> placeFloats(const std::vector<float> &v) {
  Placed<Buffer> p(v.size() * 4, 0);
  p.upload(v.data(), v.size() * 4);
  return p;
}
template <typename Buffer> std::vector<double> valuesOf(const Placed<Buffer> &p, Dtype d, size_t n) {
  std::vector<unsigned char> raw = p.bytes(n * size_t(kernels::dtypeBytes(d)));
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = kernels::loadElement(name(d), raw.data() + i * size_t(kernels::dtypeBytes(d)));
  return v;
}
template <typename Buffer> std::vector<double> floatsOf(const Placed<Buffer> &p, size_t n) {
  return valuesOf(p, Dtype::fp32, n);
}

// Every element within tolerance (a NaN wanted must be a NaN got; a poison left behind is a
// NaN where a number was wanted). Reports the first few mismatches with the seed.
inline void expectClose(const std::string &what, const std::vector<double> &got,
                        const std::vector<double> &want, Tol tol, uint32_t seed) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0;
  std::ostringstream first;
  for (size_t i = 0; i < got.size(); ++i) {
    bool ok = std::isnan(want[i]) ? std::isnan(got[i])
              : std::isinf(want[i]) ? got[i] == want[i]
                                    : std::fabs(got[i] - want[i]) <= tol.atol + tol.rtol * std::fabs(want[i]);
    if (!ok && bad++ < 5)
      first << "  [" << i << "] got " << got[i] << ", want " << want[i] << "\n";
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size() << " wrong (seed " << seed
                     << "):\n"
                     << first.str();
}

// --- vector add and dropout ----------------------------------------------------------------------

template <typename Buffer>
void checkVectorAdd(CUstream stream, const Sync &sync, Dtype d, int64_t n, size_t lead,
                    const kernels::ElementwisePlan *plan = nullptr) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  HostTensor a = randomTensor(d, size_t(n), rng), b = randomTensor(d, size_t(n), rng);
  auto da = place<Buffer>(a, lead), db = place<Buffer>(b, lead);
  Placed<Buffer> out(a.raw.size(), lead);
  kernels::vectorAdd(d, out.ptr(), da.ptr(), db.ptr(), n, stream, plan);
  sync();
  std::vector<double> want(static_cast<size_t>(n));
  for (size_t i = 0; i < want.size(); ++i)
    want[i] = a.values[i] + b.values[i];
  expectClose("vectorAdd " + name(d) + " n=" + std::to_string(n), valuesOf(out, d, size_t(n)),
              want, tolFor(d), seed);
}

// The mask must be exactly tl.rand(seed, i) > p (interpreter/Philox.h is checked bit for bit
// against Triton 3.6, tests/data/triton_random.csv); kept values are x / (1 - p). The kept
// fraction is within 4 sigma of 1 - p, and the backward drops the same elements.
template <typename Buffer>
void checkDropout(CUstream stream, const Sync &sync, Dtype d, int64_t n, double p, int64_t seed,
                  const kernels::ElementwisePlan *plan = nullptr) {
  uint32_t dataSeed = freshSeed();
  std::mt19937 rng(dataSeed);
  HostTensor x = randomTensor(d, size_t(n), rng, 1.0, 3.0); // no zeros among the inputs
  auto dx = place<Buffer>(x);
  Placed<Buffer> y(x.raw.size(), 0), back(x.raw.size(), 0);
  kernels::dropout(d, y.ptr(), dx.ptr(), n, p, seed, stream, plan);
  kernels::dropoutBackward(d, back.ptr(), dx.ptr(), n, p, seed, stream, plan);
  sync();
  bool seed32 = seed >= INT32_MIN && seed <= INT32_MAX;
  uint64_t key = seed32 ? philox::seedFromI32(int32_t(seed)) : philox::seedFromI64(seed);
  std::vector<double> want(static_cast<size_t>(n));
  size_t kept = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    bool keep = philox::rand(key, int64_t(i), philox::OffsetWidth::I32) > float(p);
    kept += keep;
    want[i] = keep ? x.values[i] * double(float(1.0 / (1.0 - p))) : 0.0;
  }
  std::vector<double> got = valuesOf(y, d, size_t(n));
  size_t maskWrong = 0;
  for (size_t i = 0; i < got.size(); ++i)
    maskWrong += (got[i] == 0.0) != (want[i] == 0.0);
  EXPECT_EQ(maskWrong, 0u) << "dropout mask differs from tl.rand(seed, offset) > p (seed " << seed
                           << ", n " << n << ")";
  Tol tol = tolFor(d);
  expectClose("dropout " + name(d), got, want, tol, dataSeed);
  expectClose("dropout backward " + name(d), valuesOf(back, d, size_t(n)), want, tol, dataSeed);
  double q = 1.0 - p, sigma = std::sqrt(double(n) * p * q);
  EXPECT_LE(std::fabs(double(kept) - double(n) * q), 4 * sigma + 1) << "kept " << kept << " of " << n;
}

// --- norms ---------------------------------------------------------------------------------------

struct NormShape {
  int64_t rows, cols, stride;
};

// Double-precision LayerNorm (rms = false) or RMSNorm, forward and backward, of rows of x.
struct NormReference {
  std::vector<double> y, mean, rstd, dx, dw, db;
  NormReference(const HostTensor &x, const HostTensor &w, const HostTensor *b, const HostTensor &dy,
                NormShape s, double eps, bool rms) {
    size_t R = size_t(s.rows), C = size_t(s.cols), S = size_t(s.stride);
    y.assign(R * C, 0), mean.assign(R, 0), rstd.assign(R, 0), dx.assign(R * C, 0);
    dw.assign(C, 0), db.assign(C, 0);
    for (size_t r = 0; r < R; ++r) {
      double mu = 0, var = 0;
      for (size_t c = 0; c < C; ++c)
        mu += x.values[r * S + c];
      mu = rms ? 0.0 : mu / double(C);
      for (size_t c = 0; c < C; ++c)
        var += (x.values[r * S + c] - mu) * (x.values[r * S + c] - mu);
      double rs = 1.0 / std::sqrt(var / double(C) + eps);
      mean[r] = mu, rstd[r] = rs;
      double c1 = 0, c2 = 0;
      for (size_t c = 0; c < C; ++c) {
        double xhat = (x.values[r * S + c] - mu) * rs;
        y[r * C + c] = xhat * w.values[c] + (b ? b->values[c] : 0.0);
        double wdy = w.values[c] * dy.values[r * S + c];
        c1 += xhat * wdy, c2 += wdy;
        dw[c] += dy.values[r * S + c] * xhat, db[c] += dy.values[r * S + c];
      }
      c1 /= double(C), c2 /= double(C);
      for (size_t c = 0; c < C; ++c) {
        double xhat = (x.values[r * S + c] - mu) * rs;
        double wdy = w.values[c] * dy.values[r * S + c];
        dx[r * C + c] = (wdy - (xhat * c1 + (rms ? 0.0 : c2))) * rs;
      }
    }
  }
};

// Rows of y (stride S) as a dense vector.
inline std::vector<double> rowsOf(const std::vector<double> &v, NormShape s) {
  std::vector<double> out(size_t(s.rows * s.cols));
  for (int64_t r = 0; r < s.rows; ++r)
    for (int64_t c = 0; c < s.cols; ++c)
      out[size_t(r * s.cols + c)] = v[size_t(r * s.stride + c)];
  return out;
}

// The weight gradients sum over rows: their tolerance grows with the number of rows summed
// (each term rounded to the storage type of the output).
inline Tol sumTol(Dtype d, int64_t rows) {
  Tol t = tolFor(d);
  return {t.atol * std::sqrt(double(rows)) * 4, t.rtol};
}

template <typename Buffer>
void checkNorm(CUstream stream, const Sync &sync, Dtype d, NormShape s, bool rms, bool bias,
               size_t lead = 0, const kernels::RowPlan *plan = nullptr) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  size_t n = size_t(s.rows * s.stride);
  HostTensor x = randomTensor(d, n, rng, 2.0, 0.5), dy = randomTensor(d, n, rng);
  HostTensor w = randomTensor(d, size_t(s.cols), rng, 0.5, 1.0),
             b = randomTensor(d, size_t(s.cols), rng);
  NormReference ref(x, w, bias ? &b : nullptr, dy, s, rms ? 1e-6 : 1e-5, rms);
  auto px = place<Buffer>(x, lead), pdy = place<Buffer>(dy, lead), pw = place<Buffer>(w),
       pb = place<Buffer>(b);
  size_t bytes = n * size_t(kernels::dtypeBytes(d));
  Placed<Buffer> py(bytes, lead), pdx(bytes, lead), pdw(size_t(s.cols) * 4, 0),
      pdb(size_t(s.cols) * 4, 0), mean(size_t(s.rows) * 4, 0), rstd(size_t(s.rows) * 4, 0);
  // A forward plan of one program per tile has no backward twin: the backward takes its own.
  const kernels::RowPlan *back = plan && plan->persistent ? plan : nullptr;
  size_t wsBytes = rms ? kernels::rmsNormBackwardWorkspaceBytes(s.rows, s.cols, back)
                       : kernels::layerNormBackwardWorkspaceBytes(s.rows, s.cols, back);
  Placed<Buffer> ws(wsBytes, 0);
  if (rms) {
    kernels::rmsNormForward(d, {.y = py.ptr(), .rstd = rstd.f32(), .x = px.ptr(),
                                .weight = pw.ptr(), .rows = s.rows, .cols = s.cols,
                                .xStride = s.stride, .yStride = s.stride},
                            stream, plan);
    kernels::rmsNormBackward(d, {.dx = pdx.ptr(), .dweight = pdw.ptr(), .dy = pdy.ptr(),
                                 .x = px.ptr(), .weight = pw.ptr(), .rstd = rstd.f32(),
                                 .rows = s.rows, .cols = s.cols, .dyStride = s.stride,
                                 .xStride = s.stride, .dxStride = s.stride,
                                 .workspace = ws.ptr(), .workspaceBytes = wsBytes},
                             stream, back);
  } else {
    kernels::layerNormForward(d, {.y = py.ptr(), .mean = mean.f32(),
                                  .rstd = rstd.f32(), .x = px.ptr(), .weight = pw.ptr(),
                                  .bias = bias ? pb.ptr() : nullptr, .rows = s.rows,
                                  .cols = s.cols, .xStride = s.stride, .yStride = s.stride},
                              stream, plan);
    kernels::layerNormBackward(d, {.dx = pdx.ptr(), .dweight = pdw.ptr(),
                                   .dbias = bias ? pdb.ptr() : nullptr, .dy = pdy.ptr(),
                                   .x = px.ptr(), .weight = pw.ptr(), .mean = mean.f32(),
                                   .rstd = rstd.f32(), .rows = s.rows, .cols = s.cols,
                                   .dyStride = s.stride, .xStride = s.stride,
                                   .dxStride = s.stride, .workspace = ws.ptr(),
                                   .workspaceBytes = wsBytes},
                               stream, back);
  }
  sync();
  std::string what = std::string(rms ? "rmsNorm " : "layerNorm ") + name(d) + " " +
                     std::to_string(s.rows) + "x" + std::to_string(s.cols) + " stride " +
                     std::to_string(s.stride);
  Tol tol = tolFor(d);
  expectClose(what + " y", rowsOf(valuesOf(py, d, n), s), ref.y, tol, seed);
  expectClose(what + " rstd", floatsOf(rstd, size_t(s.rows)), ref.rstd, {1e-6, 2e-4}, seed);
  if (!rms)
    expectClose(what + " mean", floatsOf(mean, size_t(s.rows)), ref.mean, {1e-5, 1e-4}, seed);
  // Padding between rows stays poisoned (NaN): nothing is written past a row.
  if (s.stride > s.cols) {
    std::vector<double> all = valuesOf(py, d, n);
    EXPECT_TRUE(std::isnan(all[size_t(s.cols)])) << what << ": wrote into the row padding";
  }
  Tol gtol = {tol.atol * 4, tol.rtol * 4}; // dx goes through two row sums
  expectClose(what + " dx", rowsOf(valuesOf(pdx, d, n), s), ref.dx, gtol, seed);
  expectClose(what + " dweight", valuesOf(pdw, d, size_t(s.cols)), ref.dw, sumTol(d, s.rows), seed);
  if (!rms && bias)
    expectClose(what + " dbias", valuesOf(pdb, d, size_t(s.cols)), ref.db, sumTol(d, s.rows), seed);
}

// Finite differences of the library's own forward (fp32) against its backward: for a few
// elements x_i, (L(x + h e_i) - L(x - h e_i)) / 2h with L = sum(y * dy) equals dx_i.
// Plans that read the weights each row (RowPlan::weightsEachRow): one CTA holding the row
// through a ring, rows split over clusters, registers capped for two CTAs per SM, and a program
// per row without a ring (the backward then takes its own plan), for both kernels, with and
// without bias, each direction, on rows whose length is no power of two and padded strides.
template <typename Buffer>
void checkNormsReadingTheWeightsEachRow(CUstream stream, const Sync &sync, NormShape s) {
  for (kernels::RowPlan p :
       {kernels::RowPlan{.block = 16384, .numWarps = 16, .numStages = 3},
        kernels::RowPlan{.block = 8192, .clusterSize = 2, .numWarps = 8},
        kernels::RowPlan{.block = 4096, .clusterSize = 4, .numWarps = 8, .numStages = 1},
        kernels::RowPlan{.block = 8192, .clusterSize = 2, .numWarps = 8, .minBlocksPerSM = 2},
        kernels::RowPlan{.block = 16384, .numWarps = 16, .numStages = 1, .minBlocksPerSM = 2,
                         .persistent = false}}) {
    if (p.maxCols() < s.cols)
      continue;
    p.weightsEachRow = true;
    SCOPED_TRACE(p.str());
    checkNorm<Buffer>(stream, sync, Dtype::bf16, s, false, true, 0, &p);
    checkNorm<Buffer>(stream, sync, Dtype::fp32, s, true, false, 0, &p);
  }
}

template <typename Buffer>
void checkNormFiniteDifferences(CUstream stream, const Sync &sync, bool rms) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  NormShape s{3, 40, 40};
  size_t n = size_t(s.rows * s.cols);
  HostTensor x = randomTensor(Dtype::fp32, n, rng), dy = randomTensor(Dtype::fp32, n, rng);
  HostTensor w = randomTensor(Dtype::fp32, size_t(s.cols), rng, 0.5, 1.0),
             b = randomTensor(Dtype::fp32, size_t(s.cols), rng);
  auto pw = place<Buffer>(w), pb = place<Buffer>(b), pdy = place<Buffer>(dy);
  auto loss = [&](const HostTensor &in) {
    auto px = place<Buffer>(in);
    Placed<Buffer> py(n * 4, 0);
    if (rms)
      kernels::rmsNormForward(Dtype::fp32, {.y = py.ptr(), .x = px.ptr(), .weight = pw.ptr(),
                                            .rows = s.rows, .cols = s.cols},
                              stream);
    else
      kernels::layerNormForward(Dtype::fp32, {.y = py.ptr(), .x = px.ptr(), .weight = pw.ptr(),
                                              .bias = pb.ptr(), .rows = s.rows, .cols = s.cols},
                                stream);
    sync();
    std::vector<double> y = floatsOf(py, n);
    double l = 0;
    for (size_t i = 0; i < n; ++i)
      l += y[i] * dy.values[i];
    return l;
  };
  NormReference ref(x, w, &b, dy, s, rms ? 1e-6 : 1e-5, rms);
  const double h = 1e-2;
  for (size_t i : {size_t(0), size_t(7), size_t(45), n - 1}) {
    HostTensor plus = x, minus = x;
    plus.set(i, x.values[i] + h);
    minus.set(i, x.values[i] - h);
    double fd = (loss(plus) - loss(minus)) / (plus.values[i] - minus.values[i]);
    EXPECT_NEAR(fd, ref.dx[i], 2e-3 + 1e-2 * std::fabs(ref.dx[i]))
        << (rms ? "rmsNorm" : "layerNorm") << " dx[" << i << "] by finite differences (seed "
        << seed << ")";
  }
}

// --- cross-entropy -------------------------------------------------------------------------------

struct EntropyCase {
  int64_t rows, vocab, stride;
  float smoothing;
  bool inPlace;
  // Logits and gradients start on 16-byte boundaries (else one element past one), so that rows
  // of a stride that is no multiple of 16 bytes take the kernels' aligned path.
  bool alignedBases = false;
};

template <typename Buffer>
void checkCrossEntropy(CUstream stream, const Sync &sync, Dtype d, EntropyCase e,
                       const kernels::CrossEntropyPlan *plan = nullptr) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  const int64_t ignore = -100;
  size_t n = size_t(e.rows * e.stride);
  HostTensor x = randomTensor(d, n, rng, 2.0);
  std::vector<int64_t> t(size_t(e.rows));
  std::uniform_int_distribution<int64_t> pick(0, e.vocab - 1);
  for (auto &v : t)
    v = pick(rng);
  // Extreme rows: ignored targets, large magnitudes, -inf logits beside the target.
  if (e.rows > 2)
    t[1] = ignore;
  if (e.rows > 3)
    for (int64_t c = 0; c < e.vocab; ++c)
      x.set(size_t(3 * e.stride + c), (c % 7 == 0 ? 1.0 : -1.0) * (d == Dtype::fp16 ? 6e4 : 1e4) *
                                          double(c % 5) / 4.0);
  if (e.rows > 4 && e.smoothing == 0) // with smoothing a -inf logit makes the loss infinite
    for (int64_t c = 0; c < e.vocab; c += 3)
      if (c != t[4])
        x.set(size_t(4 * e.stride + c), -INFINITY);
  // Reference in double.
  std::vector<double> loss(size_t(e.rows)), lse(size_t(e.rows)), grad(size_t(e.rows * e.vocab));
  double total = 0, count = 0;
  for (int64_t r = 0; r < e.rows; ++r) {
    const double *row = x.values.data() + r * e.stride;
    double m = -INFINITY, s = 0;
    for (int64_t c = 0; c < e.vocab; ++c)
      m = std::max(m, row[c]);
    for (int64_t c = 0; c < e.vocab; ++c)
      s += std::exp(row[c] - m);
    lse[size_t(r)] = m + std::log(s);
    bool counted = t[size_t(r)] != ignore;
    double l = lse[size_t(r)] - row[t[size_t(r)] < 0 ? 0 : t[size_t(r)]];
    if (e.smoothing != 0) {
      // PyTorch: eps * (lse - mean of logits); a -inf logit makes it +inf.
      double smooth = 0;
      for (int64_t c = 0; c < e.vocab; ++c)
        smooth += lse[size_t(r)] - row[c];
      l = (1 - double(e.smoothing)) * l + double(e.smoothing) * smooth / double(e.vocab);
    }
    loss[size_t(r)] = counted ? l : 0.0;
    if (counted)
      total += l, count += 1;
  }
  // One element past an aligned address, unless the case asks for aligned bases.
  size_t lead = e.alignedBases ? 0 : size_t(kernels::dtypeBytes(d));
  auto px = place<Buffer>(x, lead);
  Placed<Buffer> pt(t.size() * 8, 0), ploss(size_t(e.rows) * 4, 0), plse(size_t(e.rows) * 4, 0),
      stats(8, 0), pdx(n * size_t(kernels::dtypeBytes(d)), lead);
  pt.upload(t.data(), t.size() * 8);
  kernels::crossEntropyForward(d, {.loss = ploss.f32(), .lse = plse.f32(),
                                   .stats = stats.f32(), .logits = px.ptr(),
                                   .targets = pt.i64(), .rows = e.rows, .vocab = e.vocab,
                                   .logitsStride = e.stride, .ignoreIndex = ignore,
                                   .labelSmoothing = e.smoothing},
                               stream, plan);
  void *dst = e.inPlace ? px.ptr() : pdx.ptr();
  kernels::crossEntropyBackward(d, {.dlogits = dst, .logits = px.ptr(),
                                    .targets = pt.i64(), .lse = plse.f32(),
                                    .stats = stats.f32(), .rows = e.rows, .vocab = e.vocab,
                                    .logitsStride = e.stride, .dlogitsStride = e.stride,
                                    .ignoreIndex = ignore, .labelSmoothing = e.smoothing},
                                stream, plan);
  sync();
  std::string what = "crossEntropy " + name(d) + " " + std::to_string(e.rows) + "x" +
                     std::to_string(e.vocab) + (e.smoothing != 0 ? " smoothed" : "") +
                     (e.inPlace ? " in place" : "") + (e.alignedBases ? " aligned" : "");
  // Loss and lse in fp32 from logits of up to 1e4: relative 1e-5 of the largest term.
  expectClose(what + " lse", floatsOf(plse, size_t(e.rows)), lse, {2e-4, 2e-5}, seed);
  expectClose(what + " loss", floatsOf(ploss, size_t(e.rows)), loss, {2e-3, 1e-4}, seed);
  std::vector<double> st = floatsOf(stats, 2);
  EXPECT_EQ(st[1], count) << what << ": counted rows";
  EXPECT_NEAR(st[0], total / count, 1e-3 + 1e-4 * std::fabs(total / count)) << what << ": mean";
  // The gradient from the lse the forward gave (checked above), as the backward computes it: an
  // lse of 1e4 is off by up to half an fp32 ulp (2^-11), and exp(x - lse) by as much relatively.
  std::vector<double> given = floatsOf(plse, size_t(e.rows));
  for (int64_t r = 0; r < e.rows; ++r)
    for (int64_t c = 0; c < e.vocab; ++c) {
      bool counted = t[size_t(r)] != ignore;
      double p = std::exp(x.values[size_t(r * e.stride + c)] - given[size_t(r)]);
      double g = p - (c == t[size_t(r)] ? 1 - double(e.smoothing) : 0.0) -
                 double(e.smoothing) / double(e.vocab);
      grad[size_t(r * e.vocab + c)] = counted ? g / count : 0.0;
    }
  std::vector<double> g = valuesOf(e.inPlace ? px : pdx, d, n);
  NormShape shape{e.rows, e.vocab, e.stride};
  Tol tol = tolFor(d);
  expectClose(what + " dlogits", rowsOf(g, shape), grad, {tol.atol / double(count), tol.rtol}, seed);
}

// Each case of `cases` under one plan.
template <typename Buffer>
void checkCrossEntropyCases(CUstream stream, const Sync &sync,
                            std::initializer_list<std::pair<Dtype, EntropyCase>> cases,
                            const kernels::CrossEntropyPlan *plan) {
  for (const auto &[d, e] : cases)
    checkCrossEntropy<Buffer>(stream, sync, d, e, plan);
}

// Finite differences of the library's own forward (the mean loss, stats[0], fp32) against its
// backward's dlogits, with label smoothing and an ignored row: the two kernels agree on the
// gradient of the quantity they compute, whatever the reference says.
template <typename Buffer>
void checkCrossEntropyFiniteDifferences(CUstream stream, const Sync &sync, float smoothing) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  const int64_t rows = 5, vocab = 300, ignore = -100;
  size_t n = size_t(rows * vocab);
  HostTensor x = randomTensor(Dtype::fp32, n, rng, 2.0);
  std::vector<int64_t> t = {3, ignore, 299, 0, 150};
  Placed<Buffer> pt(t.size() * 8, 0), loss(size_t(rows) * 4, 0), lse(size_t(rows) * 4, 0),
      stats(8, 0), dx(n * 4, 0);
  pt.upload(t.data(), t.size() * 8);
  auto forward = [&](const Placed<Buffer> &px) {
    kernels::crossEntropyForward(Dtype::fp32, {.loss = loss.f32(), .lse = lse.f32(),
                                               .stats = stats.f32(), .logits = px.ptr(),
                                               .targets = pt.i64(), .rows = rows, .vocab = vocab,
                                               .ignoreIndex = ignore,
                                               .labelSmoothing = smoothing},
                                 stream);
    sync();
    return floatsOf(stats, 2)[0];
  };
  auto px = place<Buffer>(x);
  forward(px);
  kernels::crossEntropyBackward(Dtype::fp32, {.dlogits = dx.ptr(), .logits = px.ptr(),
                                              .targets = pt.i64(), .lse = lse.f32(),
                                              .stats = stats.f32(), .rows = rows, .vocab = vocab,
                                              .ignoreIndex = ignore, .labelSmoothing = smoothing},
                                stream);
  sync();
  std::vector<double> grad = floatsOf(dx, n);
  const double h = 1e-2;
  for (size_t i : {size_t(3), size_t(10), size_t(vocab + 5), size_t(2 * vocab + 299),
                   size_t(3 * vocab), size_t(4 * vocab + 150), n - 1}) {
    HostTensor plus = x, minus = x;
    plus.set(i, x.values[i] + h);
    minus.set(i, x.values[i] - h);
    double lp = forward(place<Buffer>(plus)), lm = forward(place<Buffer>(minus));
    double fd = (lp - lm) / (plus.values[i] - minus.values[i]);
    EXPECT_NEAR(fd, grad[i], 1e-4 + 1e-2 * std::fabs(grad[i]))
        << "crossEntropy dlogits[" << i << "] by finite differences, smoothing " << smoothing
        << " (seed " << seed << ")";
  }
}

} // namespace tritium::testing::library
