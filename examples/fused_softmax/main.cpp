// The main job: fused softmax through the whole tritium path. Plans the kernel for each row
// length (the row in registers, or the online kernel for long rows), compiles it, writes its
// cache entry, and on a GPU runs it on random matrices, checks every element against a CPU
// reference in double precision and prints the bandwidth. `--backward` runs the forward, then
// the fused backward on its output; `--dtype` picks fp32, fp16 or bf16 storage (fp32 math).
// Without a GPU (or with TRITIUM_INTERPRET=1) the same kernels run in tritium's CPU interpreter
// on smaller shapes and are checked the same way.
#include "kernels/Autotuner.h"
#include "kernels/HostDtype.h"
#include "kernels/SoftmaxPlan.h"
#include "kernels/SoftmaxReference.h"
#include "frontend/Tritium.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace tritium;
using kernels::SoftmaxPlan;

namespace {

const char *kUsage = R"(usage: fused_softmax [--backward] [--dtype=fp32|fp16|bf16] [ROWS COLS]
  Runs softmax (or its backward) on random ROWS x COLS matrices, checks every element against
  a double-precision reference and, on a GPU, prints GB/s. Without ROWS COLS it runs a set of
  shapes from 781 to 65536 columns. Without a GPU it runs in tritium's CPU interpreter.
)";

struct Options {
  bool backward = false;
  std::string dtype = "fp32";
  std::vector<kernels::SoftmaxShape> shapes;
  bool userShape = false;
};

using kernels::kPoisonBits;
using kernels::Tolerance;
using kernels::toleranceFor;

// Host data in the kernel's dtype, with the float values it holds after rounding.
struct HostMatrix {
  std::vector<unsigned char> raw;
  std::vector<float> values;
};

HostMatrix randomMatrix(const kernels::SoftmaxShape &s, const std::string &dtype,
                        std::mt19937 &rng, bool probabilities) {
  HostMatrix m;
  size_t n = size_t(s.rows * s.cols), e = size_t(kernels::bytesOf(dtype));
  m.raw.resize(n * e);
  m.values.resize(n);
  std::normal_distribution<float> dist(0.f, 2.f);
  std::uniform_real_distribution<float> prob(0.f, 2.f / float(s.cols));
  for (size_t i = 0; i < n; ++i) {
    kernels::storeElement(dtype, probabilities ? prob(rng) : dist(rng), &m.raw[i * e]);
    m.values[i] = kernels::loadElement(dtype, &m.raw[i * e]);
  }
  return m;
}

struct Check {
  double maxErr = 0;
  size_t bad = 0;
};

// Compares every element of `y` (raw, in dtype) with the reference of the inputs.
Check check(const Options &o, const kernels::SoftmaxShape &s, const std::vector<float> &a,
            const std::vector<float> *b, const std::vector<unsigned char> &y) {
  Check c;
  Tolerance tol = toleranceFor(o.dtype);
  size_t e = size_t(kernels::bytesOf(o.dtype));
  std::vector<double> ref(size_t(s.cols));
  for (int64_t r = 0; r < s.rows; ++r) {
    size_t row = size_t(r * s.cols);
    if (b)
      kernels::softmaxBackwardRowReference(&a[row], &(*b)[row], s.cols, ref.data());
    else
      kernels::softmaxRowReference(&a[row], s.cols, ref.data());
    for (int64_t col = 0; col < s.cols; ++col) {
      double got = kernels::loadElement(o.dtype, &y[(row + size_t(col)) * e]);
      double err = std::fabs(got - ref[size_t(col)]);
      if (!(err <= tol.atol + tol.rtol * std::fabs(ref[size_t(col)])))
        ++c.bad;
      c.maxErr = std::isnan(err) ? INFINITY : std::max(c.maxErr, err);
    }
  }
  if (c.bad)
    std::printf("  %zu of %zu elements differ from the reference by more than %g + %g|ref|\n",
                c.bad, size_t(s.rows * s.cols), tol.atol, tol.rtol);
  return c;
}

// Runs one shape on `Buffer` (rt::DeviceBuffer, or interpreter::HostBuffer with a null stream);
// `timed` measures the kernel's median time in ms (GPU only). Returns false on a mismatch.
template <typename Buffer>
bool runShape(const Options &o, const kernels::SoftmaxShape &s, std::mt19937 &rng,
              CUstream stream, const std::function<void()> &sync,
              const std::function<double(const std::function<void()> &)> &timed) {
  size_t bytes = size_t(s.rows * s.cols) * size_t(kernels::bytesOf(o.dtype));
  HostMatrix x = randomMatrix(s, o.dtype, rng, false);
  Buffer in(bytes), out(bytes);
  in.upload(x.raw.data(), bytes);
  out.fill32(kPoisonBits);
  SoftmaxPlan fwd = kernels::planSoftmax(s.cols, o.dtype);
  auto start = std::chrono::steady_clock::now();
  CompiledKernel *k = &kernels::softmaxForward(fwd, o.dtype, out, in, s, s.cols, s.cols, stream);
  sync();
  std::vector<unsigned char> y(bytes);
  out.download(y.data(), bytes);
  SoftmaxPlan plan = fwd;
  Check c;
  std::function<void()> again;
  int64_t grid = fwd.grid(*k, s.rows);
  KernelArg rows(s.rows), cols(s.cols);
  std::unique_ptr<Buffer> dout, dx;
  if (!o.backward) {
    c = check(o, s, x.values, nullptr, y);
    again = [&] { k->launch(grid, stream, {out, in, cols, cols, rows, cols}); };
  } else {
    // dX from the forward's output as stored, and a random gradient.
    std::vector<float> ov(size_t(s.rows * s.cols));
    for (size_t i = 0; i < ov.size(); ++i)
      ov[i] = kernels::loadElement(o.dtype, &y[i * size_t(kernels::bytesOf(o.dtype))]);
    HostMatrix g = randomMatrix(s, o.dtype, rng, false);
    dout = std::make_unique<Buffer>(bytes);
    dx = std::make_unique<Buffer>(bytes);
    dout->upload(g.raw.data(), bytes);
    dx->fill32(kPoisonBits);
    plan = kernels::planSoftmaxBackward(s.cols, o.dtype);
    start = std::chrono::steady_clock::now();
    k = &kernels::softmaxBackward(plan, o.dtype, *dx, out, *dout, s, s.cols, s.cols, s.cols,
                                  stream);
    sync();
    dx->download(y.data(), bytes);
    c = check(o, s, ov, &g.values, y);
    grid = plan.grid(*k, s.rows);
    again = [&] { k->launch(grid, stream, {*dx, out, *dout, cols, cols, cols, rows, cols}); };
  }
  double firstMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("%-8s %-4s %6lld x %-6lld  %-34s grid %-5lld max|err| %.2e  %s", 
              o.backward ? "backward" : "forward", o.dtype.c_str(), (long long)s.rows,
              (long long)s.cols, plan.str().c_str(), (long long)grid, c.maxErr,
              c.bad ? "FAIL" : "ok  ");
  if (timed) {
    double ms = timed(again);
    double moved = double(bytes) * (o.backward ? 3 : 2);
    std::printf("  %8.1f GB/s (%.4f ms)\n", moved / (ms * 1e-3) / 1e9, ms);
  } else {
    std::printf("  (compiled and interpreted in %.0f ms)\n", firstMs);
  }
  return c.bad == 0;
}

// Median ms of `fn` over 50 repetitions after 5 warm-ups, L2 flushed before each.
double medianMs(CUstream stream, const std::function<void()> &fn) {
  return kernels::timeLaunches(stream, fn, 50, 5);
}

Options parseOptions(int argc, char **argv) {
  Options o;
  std::vector<int64_t> numbers;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (a == "--backward") {
      o.backward = true;
    } else if (a.rfind("--dtype=", 0) == 0) {
      o.dtype = a.substr(8);
      if (!kernels::isSoftmaxDtype(o.dtype)) {
        std::fprintf(stderr, "fused_softmax: --dtype must be fp32, fp16 or bf16, got '%s'\n",
                     o.dtype.c_str());
        std::exit(2);
      }
    } else {
      char *end = nullptr;
      long long v = std::strtoll(a.c_str(), &end, 10);
      if (a.empty() || *end || v < 1) {
        std::fprintf(stderr, "fused_softmax: '%s' is not a positive row or column count\n%s",
                     a.c_str(), kUsage);
        std::exit(2);
      }
      numbers.push_back(v);
    }
  }
  if (numbers.size() == 2) {
    o.shapes = {{numbers[0], numbers[1]}};
    o.userShape = true;
  } else if (!numbers.empty()) {
    std::fprintf(stderr, "fused_softmax: give both ROWS and COLS\n%s", kUsage);
    std::exit(2);
  } else {
    o.shapes = {{1823, 781}, {4096, 256}, {4096, 1024}, {4096, 4096}, {4096, 12288},
                {1024, 65536}};
  }
  return o;
}

} // namespace

int main(int argc, char **argv) {
  Options o = parseOptions(argc, argv);
  try {
    // Compile first: this works on any machine and leaves the cache entry with every stage.
    for (const auto &s : o.shapes) {
      SoftmaxPlan plan = o.backward ? kernels::planSoftmaxBackward(s.cols, o.dtype)
                                    : kernels::planSoftmax(s.cols, o.dtype);
      CompiledKernel &k =
          plan.kernel().compile(plan.specialization(o.dtype, s.rows, s.cols));
      std::printf("compiled %s for N=%lld (%s, %s): %s\n", k.metadata().name.c_str(),
                  (long long)s.cols, plan.str().c_str(),
                  k.metadata().fromCache ? "from the disk cache" : "fresh",
                  k.metadata().cacheDir.string().c_str());
    }
    std::mt19937 rng(std::random_device{}());
    std::string why;
    bool gpu = !interpreting() && rt::Driver::available(&why);
    bool ok = true;
    if (!gpu) {
      if (!interpreting())
        std::printf("no usable GPU on this machine (%s): the kernels above were compiled to "
                    "PTX and cached, and now run in the interpreter instead.\n",
                    why.c_str());
      setInterpret(true);
      std::printf("running in tritium's CPU interpreter (TRITIUM_INTERPRET), not on a GPU: "
                  "results are checked, there is no bandwidth to report\n");
      // Smaller shapes, so that the interpreter takes seconds.
      std::vector<kernels::SoftmaxShape> shapes =
          o.userShape ? o.shapes
                      : std::vector<kernels::SoftmaxShape>{{1823, 781}, {256, 256}, {16, 4096},
                                                           {4, 40000}};
      for (const auto &s : shapes)
        ok = runShape<interpreter::HostBuffer>(o, s, rng, nullptr, [] {}, {}) && ok;
      std::printf(ok ? "all results match the reference (interpreter)\n"
                     : "MISMATCH against the reference (interpreter)\n");
      return ok ? 0 : 1;
    }
    std::printf("device: %s (%s, %d SMs)\n", rt::Context::current().props().name.c_str(),
                rt::Context::current().props().arch().c_str(),
                rt::Context::current().props().smCount);
    rt::Stream stream;
    for (const auto &s : o.shapes)
      ok = runShape<rt::DeviceBuffer>(
               o, s, rng, stream.get(), [&] { stream.sync(); },
               [&](const std::function<void()> &fn) { return medianMs(stream.get(), fn); }) &&
           ok;
    std::printf(ok ? "all results match the reference\n" : "MISMATCH against the reference\n");
    return ok ? 0 : 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
