// A transformer block's memory-bound steps through the kernel library, forward and backward, as
// a C++ trainer would call them: RMSNorm -> dropout -> residual add -> cross-entropy, then the
// gradients back through each step. Every tensor is checked against a double-precision CPU
// reference that rounds where the kernels store (so the comparison is tight in every dtype), and
// on a GPU the whole step is timed. Without a GPU the same calls run in tritium's interpreter on
// a smaller shape.
//
// The language model's head (a matmul from the hidden size to the vocabulary) waits for
// tensor-core `dot`: here the residual stream itself stands in for the logits, so the
// cross-entropy runs over rows of `hidden` classes.
//
//   forward:  n = rmsnorm(x) w;  d = dropout(n, p, seed);  h = x + d;  loss = CE(h, targets)
//   backward: dh = dCE/dh (in place over h);  dn = dropout'(dh);  dx = dh + rmsnorm'(dn), dw
#include "frontend/Tritium.h"
#include "interpreter/Philox.h"
#include "kernels/CrossEntropy.h"
#include "kernels/Elementwise.h"
#include "kernels/Autotuner.h"
#include "kernels/HostDtype.h"
#include "kernels/Norms.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace tritium;
using kernels::Dtype;

namespace {

const char *kUsage = R"(usage: transformer_block [--dtype=fp32|fp16|bf16] [TOKENS HIDDEN]
  Runs RMSNorm, dropout, the residual add and cross-entropy forward and backward through
  tritium's kernel library on random data (default 4096 x 8192 on a GPU, 64 x 1024 in the
  interpreter), checks every output against a double-precision reference and, on a GPU, prints
  the step's time.
)";

constexpr double kDropP = 0.1;
constexpr int64_t kSeed = 20261124;
constexpr int64_t kIgnore = -100;

struct Problem {
  Dtype dtype = Dtype::bf16;
  std::string dtypeName = "bf16";
  int64_t tokens = 0, hidden = 0;
};

// Values as a tensor of the problem's dtype holds them.
struct Tensor {
  std::vector<unsigned char> raw;
  std::vector<double> values;
};

double roundTo(const std::string &dtype, double v) {
  unsigned char b[4];
  kernels::storeElement(dtype, float(v), b);
  return kernels::loadElement(dtype, b);
}

Tensor tensorOf(const std::string &dtype, const std::vector<double> &v) {
  Tensor t;
  size_t e = size_t(kernels::bytesOf(dtype));
  t.raw.resize(v.size() * e);
  for (size_t i = 0; i < v.size(); ++i) {
    kernels::storeElement(dtype, float(v[i]), &t.raw[i * e]);
    t.values.push_back(kernels::loadElement(dtype, &t.raw[i * e]));
  }
  return t;
}

// The CPU reference, in double, one step at a time: each step's reference starts from the
// tensors the kernels stored before it (so a one-ulp difference in a 16-bit intermediate does not
// grow into a mismatch downstream) and is rounded to the dtype where the kernel stores.
struct Reference {
  const Problem &p;
  const std::vector<double> &x, &w;
  std::vector<double> rstd;

  double rnd(double v) const { return roundTo(p.dtypeName, v); }
  static bool kept(size_t i) {
    static const uint64_t key = philox::seedFromI32(int32_t(kSeed));
    return philox::rand(key, int64_t(i), philox::OffsetWidth::I32) > float(kDropP);
  }
  static double scale() { return double(float(1.0 / (1.0 - kDropP))); }

  Reference(const Problem &p, const std::vector<double> &x, const std::vector<double> &w)
      : p(p), x(x), w(w), rstd(static_cast<size_t>(p.tokens)) {
    for (int64_t r = 0; r < p.tokens; ++r) {
      double ss = 0;
      for (int64_t c = 0; c < p.hidden; ++c)
        ss += x[size_t(r * p.hidden + c)] * x[size_t(r * p.hidden + c)];
      rstd[size_t(r)] = 1.0 / std::sqrt(ss / double(p.hidden) + 1e-6);
    }
  }
  std::vector<double> norm() const {
    std::vector<double> n(x.size());
    for (size_t i = 0; i < n.size(); ++i)
      n[i] = rnd(x[i] * rstd[i / size_t(p.hidden)] * w[i % size_t(p.hidden)]);
    return n;
  }
  std::vector<double> drop(const std::vector<double> &in) const {
    std::vector<double> out(in.size());
    for (size_t i = 0; i < in.size(); ++i)
      out[i] = kept(i) ? rnd(in[i] * scale()) : 0.0;
    return out;
  }
  std::vector<double> add(const std::vector<double> &a, const std::vector<double> &b) const {
    std::vector<double> out(a.size());
    for (size_t i = 0; i < a.size(); ++i)
      out[i] = rnd(a[i] + b[i]);
    return out;
  }
  // Per-row loss (0 where ignored), lse, and the mean over counted rows.
  void crossEntropy(const std::vector<double> &h, const std::vector<int64_t> &t,
                    std::vector<double> &loss, std::vector<double> &lse, double &count,
                    double &mean) const {
    const int64_t H = p.hidden;
    loss.assign(t.size(), 0.0), lse.assign(t.size(), 0.0);
    count = 0, mean = 0;
    for (size_t r = 0; r < t.size(); ++r) {
      const double *row = &h[r * size_t(H)];
      double m = *std::max_element(row, row + H), s = 0;
      for (int64_t c = 0; c < H; ++c)
        s += std::exp(row[c] - m);
      lse[r] = m + std::log(s);
      if (t[r] != kIgnore) {
        loss[r] = lse[r] - row[t[r]];
        mean += loss[r], count += 1;
      }
    }
    mean /= count;
  }
  std::vector<double> crossEntropyGrad(const std::vector<double> &h,
                                       const std::vector<int64_t> &t) const {
    std::vector<double> loss, lse, g(h.size());
    double count, mean;
    crossEntropy(h, t, loss, lse, count, mean);
    for (size_t i = 0; i < h.size(); ++i) {
      size_t r = i / size_t(p.hidden), c = i % size_t(p.hidden);
      double v = std::exp(h[i] - lse[r]) - (int64_t(c) == t[r] ? 1.0 : 0.0);
      g[i] = t[r] != kIgnore ? rnd(v / count) : 0.0;
    }
    return g;
  }
  // RMSNorm's dx and dw from dn.
  void normGrad(const std::vector<double> &dn, std::vector<double> &dx,
                std::vector<double> &dw) const {
    const int64_t H = p.hidden;
    dx.resize(dn.size()), dw.assign(size_t(H), 0.0);
    for (int64_t r = 0; r < p.tokens; ++r) {
      double dot = 0, rs = rstd[size_t(r)];
      for (int64_t c = 0; c < H; ++c) {
        size_t i = size_t(r * H + c);
        dot += x[i] * rs * w[size_t(c)] * dn[i];
      }
      for (int64_t c = 0; c < H; ++c) {
        size_t i = size_t(r * H + c);
        dx[i] = rnd(rs * (w[size_t(c)] * dn[i] - x[i] * rs * dot / double(H)));
        dw[size_t(c)] += dn[i] * x[i] * rs;
      }
    }
    for (double &v : dw)
      v = rnd(v);
  }
};

// Counts elements outside atol + rtol |ref| (NaN included) and prints the first few.
size_t compare(const char *what, const std::string &dtype, const std::vector<unsigned char> &raw,
               const std::vector<double> &ref, double atol, double rtol) {
  size_t e = size_t(kernels::bytesOf(dtype)), bad = 0;
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double got = kernels::loadElement(dtype, &raw[i * e]);
    double err = std::fabs(got - ref[i]);
    if (!(err <= atol + rtol * std::fabs(ref[i]))) {
      if (bad < 3)
        std::printf("  %s[%zu] = %g, reference %g\n", what, i, got, ref[i]);
      ++bad;
    }
    worst = std::isnan(err) ? INFINITY : std::max(worst, err);
  }
  std::printf("  %-6s %9zu elements, max |error| %.3g%s\n", what, ref.size(), worst,
              bad ? "  MISMATCH" : "");
  return bad;
}

template <typename Buffer> Buffer upload(const std::vector<unsigned char> &raw) {
  Buffer b(raw.size());
  b.upload(raw.data(), raw.size());
  return b;
}

template <typename Buffer> std::vector<unsigned char> download(const Buffer &b) {
  std::vector<unsigned char> raw(b.bytes());
  b.download(raw.data(), raw.size());
  return raw;
}

template <typename Buffer> void *addr(const Buffer &b) {
  return reinterpret_cast<void *>(uintptr_t(b.ptr()));
}

// Runs the block on `Buffer` memory; `timed` (GPU only) returns a median time in ms.
template <typename Buffer>
bool run(const Problem &p, CUstream stream, const std::function<void()> &sync,
         const std::function<double(const std::function<void()> &)> &timed) {
  const int64_t M = p.tokens, H = p.hidden;
  const std::string &dt = p.dtypeName;
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> xv(static_cast<size_t>(M * H)), wv(static_cast<size_t>(H));
  for (double &v : xv)
    v = normal(rng);
  for (double &v : wv)
    v = 1.0 + 0.1 * normal(rng);
  std::vector<int64_t> targets(static_cast<size_t>(M));
  std::uniform_int_distribution<int64_t> pick(0, H - 1);
  for (auto &t : targets)
    t = pick(rng);
  targets[0] = kIgnore; // padding tokens are ignored, as in a real batch
  Tensor x = tensorOf(dt, xv), w = tensorOf(dt, wv);
  Reference ref(p, x.values, w.values);

  size_t bytes = x.raw.size();
  Buffer bx = upload<Buffer>(x.raw), bw = upload<Buffer>(w.raw);
  Buffer bt(targets.size() * 8);
  bt.upload(targets.data(), targets.size() * 8);
  Buffer n(bytes), d(bytes), h(bytes), dn(bytes), dxn(bytes), dx(bytes),
      dw(size_t(H) * size_t(kernels::bytesOf(dt)));
  Buffer rstd(size_t(M) * 4), loss(size_t(M) * 4), lse(size_t(M) * 4), stats(8);
  size_t wsBytes = kernels::rmsNormBackwardWorkspaceBytes(M, H);
  Buffer ws(wsBytes);
  for (Buffer *b : {&n, &d, &h, &dn, &dxn, &dx, &dw, &loss})
    b->fill32(kernels::kPoisonBits);

  auto forward = [&] {
    kernels::rmsNormForward(p.dtype,
                            {.y = addr(n),
                             .rstd = static_cast<float *>(addr(rstd)),
                             .x = addr(bx),
                             .weight = addr(bw),
                             .rows = M,
                             .cols = H},
                            stream);
    kernels::dropout(p.dtype, addr(d), addr(n), M * H, kDropP, kSeed, stream);
    kernels::vectorAdd(p.dtype, addr(h), addr(bx), addr(d), M * H, stream);
    kernels::crossEntropyForward(p.dtype,
                                 {.loss = static_cast<float *>(addr(loss)),
                                  .lse = static_cast<float *>(addr(lse)),
                                  .stats = static_cast<float *>(addr(stats)),
                                  .logits = addr(h),
                                  .targets = static_cast<const int64_t *>(addr(bt)),
                                  .rows = M,
                                  .vocab = H,
                                  .ignoreIndex = kIgnore},
                                 stream);
  };
  auto backward = [&] {
    // The gradient of the mean loss, written over the logits (h is not needed again).
    kernels::crossEntropyBackward(p.dtype,
                                  {.dlogits = addr(h),
                                   .logits = addr(h),
                                   .targets = static_cast<const int64_t *>(addr(bt)),
                                   .lse = static_cast<const float *>(addr(lse)),
                                   .stats = static_cast<const float *>(addr(stats)),
                                   .rows = M,
                                   .vocab = H,
                                   .ignoreIndex = kIgnore},
                                  stream);
    kernels::dropoutBackward(p.dtype, addr(dn), addr(h), M * H, kDropP, kSeed, stream);
    kernels::rmsNormBackward(p.dtype,
                             {.dx = addr(dxn),
                              .dweight = addr(dw),
                              .dy = addr(dn),
                              .x = addr(bx),
                              .weight = addr(bw),
                              .rstd = static_cast<const float *>(addr(rstd)),
                              .rows = M,
                              .cols = H,
                              .workspace = addr(ws),
                              .workspaceBytes = wsBytes},
                             stream);
    kernels::vectorAdd(p.dtype, addr(dx), addr(h), addr(dxn), M * H, stream);
  };
  forward();
  sync();
  std::vector<unsigned char> nRaw = download(n), dRaw = download(d), hRaw = download(h);
  std::vector<float> lossGot(static_cast<size_t>(M)), statsGot(2);
  loss.download(lossGot.data(), size_t(M) * 4);
  stats.download(statsGot.data(), 8);
  backward();
  sync();
  std::vector<unsigned char> dhRaw = download(h), dnRaw = download(dn), dxnRaw = download(dxn);

  auto values = [&](const std::vector<unsigned char> &raw) {
    std::vector<double> v(raw.size() / size_t(kernels::bytesOf(dt)));
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = kernels::loadElement(dt, &raw[i * size_t(kernels::bytesOf(dt))]);
    return v;
  };
  kernels::Tolerance tol = kernels::toleranceFor(dt);
  std::printf("%s, %lld tokens x %lld hidden, dropout p=%g (each step against a reference from "
              "the tensors it read):\n",
              dt.c_str(), (long long)M, (long long)H, kDropP);
  size_t bad = 0;
  bad += compare("norm", dt, nRaw, ref.norm(), tol.atol, tol.rtol);
  bad += compare("drop", dt, dRaw, ref.drop(values(nRaw)), tol.atol, tol.rtol);
  bad += compare("h", dt, hRaw, ref.add(x.values, values(dRaw)), tol.atol, tol.rtol);
  std::vector<double> refLoss, refLse;
  double count = 0, mean = 0;
  ref.crossEntropy(values(hRaw), targets, refLoss, refLse, count, mean);
  // Gradients are of size 1/count: absolute tolerances scale with them, down to what the dtype
  // resolves there (fp16's subnormals are 6e-8 apart).
  double g = 1.0 / count;
  double gatol = std::max(tol.atol * g, dt == "fp16" ? 6e-8 : 0.0);
  bad +=
      compare("dh", dt, dhRaw, ref.crossEntropyGrad(values(hRaw), targets), gatol, tol.rtol);
  bad += compare("dn", dt, dnRaw, ref.drop(values(dhRaw)), gatol, tol.rtol);
  std::vector<double> refDxn, refDw;
  ref.normGrad(values(dnRaw), refDxn, refDw);
  bad += compare("dxn", dt, dxnRaw, refDxn, 2 * gatol, 2 * tol.rtol);
  bad += compare("dx", dt, download(dx), ref.add(values(dhRaw), values(dxnRaw)), gatol,
                 tol.rtol);
  bad +=
      compare("dw", dt, download(dw), refDw, 2 * gatol * std::sqrt(double(M)), 2 * tol.rtol);
  double lossErr = 0;
  for (int64_t r = 0; r < M; ++r)
    lossErr = std::max(lossErr, std::fabs(double(lossGot[size_t(r)]) - refLoss[size_t(r)]));
  // fp32 loss of rows of `hidden` terms: relative 1e-5 of the largest.
  bool lossOk = lossErr <= 1e-4 * (1 + std::fabs(mean)) &&
                std::fabs(statsGot[0] - mean) <= 1e-4 * (1 + std::fabs(mean)) &&
                statsGot[1] == float(count);
  std::printf("  loss   mean %.6f (reference %.6f), %g rows counted, max |error| %.3g%s\n",
              statsGot[0], mean, statsGot[1], lossErr, lossOk ? "" : "  MISMATCH");
  if (timed) {
    // The forward and backward with the same buffers; the backward overwrites h, so each
    // repetition runs both.
    double ms = timed([&] {
      forward();
      backward();
    });
    // Bytes each step reads and writes, as the peers' benchmarks count them.
    double moved = double(bytes) * (3 + 2 + 3 + 1 + 2 + 2 + 3 + 3) + double(M) * 4 * 6;
    std::printf("  forward + backward: %.3f ms, %.0f GB/s over %.2f GB moved\n", ms,
                moved / (ms * 1e-3) / 1e9, moved / 1e9);
  }
  return bad == 0 && lossOk;
}

// Median ms of `fn` over 21 repetitions after a warm-up (and autotuning on the first call of
// each shape), L2 flushed before each.
double medianMs(CUstream stream, const std::function<void()> &fn) {
  return kernels::timeLaunches(stream, fn, 21, 1);
}

} // namespace

int main(int argc, char **argv) {
  Problem p;
  std::vector<int64_t> shape;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--dtype=", 0) == 0 && kernels::isSoftmaxDtype(a.substr(8))) {
      p.dtypeName = a.substr(8);
      p.dtype = p.dtypeName == "fp32"   ? Dtype::fp32
                : p.dtypeName == "fp16" ? Dtype::fp16
                                        : Dtype::bf16;
    } else if (!a.empty() && std::isdigit(static_cast<unsigned char>(a[0])) && shape.size() < 2) {
      shape.push_back(std::atoll(a.c_str()));
    } else {
      std::fprintf(stderr, "transformer_block: unknown argument '%s'\n%s", a.c_str(), kUsage);
      return 2;
    }
  }
  if (shape.size() == 1 || (shape.size() == 2 && (shape[0] < 2 || shape[1] < 1))) {
    std::fprintf(stderr, "transformer_block: give TOKENS (at least 2) and HIDDEN\n%s", kUsage);
    return 2;
  }
  try {
    std::string why;
    bool gpu = !interpreting() && rt::Driver::available(&why);
    p.tokens = shape.empty() ? (gpu ? 4096 : 64) : shape[0];
    p.hidden = shape.empty() ? (gpu ? 8192 : 1024) : shape[1];
    bool ok;
    if (!gpu) {
      if (!interpreting())
        std::printf("no usable GPU on this machine (%s): running in tritium's CPU interpreter\n",
                    why.c_str());
      setInterpret(true);
      ok = run<interpreter::HostBuffer>(p, nullptr, [] {}, {});
    } else {
      std::printf("device: %s\n", rt::Context::current().props().name.c_str());
      rt::Stream stream;
      ok = run<rt::DeviceBuffer>(
          p, stream.get(), [&] { stream.sync(); },
          [&](const std::function<void()> &fn) { return medianMs(stream.get(), fn); });
    }
    std::printf(ok ? "all results match the reference\n" : "MISMATCH against the reference\n");
    return ok ? 0 : 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
