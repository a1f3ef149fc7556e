// The main job: fused softmax through the whole tritium path. Compiles the tutorial kernel,
// writes its cache entry, and on a GPU runs it on random matrices, checks each against a CPU
// reference in double precision and prints the bandwidth. Without a GPU (or with
// TRITIUM_INTERPRET=1) it runs the same kernel in tritium's CPU interpreter on smaller shapes
// and checks those instead.
#include "examples/kernels/Softmax.h"
#include "examples/kernels/SoftmaxReference.h"
#include "frontend/Tritium.h"
#include "runtime/Grid.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace tritium;

namespace {

struct Shape {
  int64_t rows, cols;
};

std::vector<float> randomMatrix(const Shape &s, std::mt19937 &rng) {
  std::vector<float> x(size_t(s.rows * s.cols));
  std::normal_distribution<float> dist(0.f, 2.f);
  for (float &v : x)
    v = dist(rng);
  return x;
}

constexpr uint32_t kPoison = 0x7fc00001u; // a NaN that an unwritten element keeps
constexpr double kTolerance = 1e-5;

struct Check {
  double maxErr = 0;
  size_t bad = 0; // elements off by more than kTolerance (NaN included)
};

// Compares every element of `y` with the double-precision reference of `x`.
Check check(const std::vector<float> &x, const std::vector<float> &y, const Shape &s) {
  Check c;
  std::vector<double> ref(static_cast<size_t>(s.cols));
  for (int64_t r = 0; r < s.rows; ++r) {
    kernels::softmaxRowReference(&x[size_t(r * s.cols)], s.cols, ref.data());
    for (int64_t col = 0; col < s.cols; ++col) {
      double err = std::fabs(double(y[size_t(r * s.cols + col)]) - ref[size_t(col)]);
      if (!(err <= kTolerance))
        ++c.bad;
      c.maxErr = std::isnan(err) ? INFINITY : std::max(c.maxErr, err);
    }
  }
  if (c.bad)
    std::printf("  %zu of %zu elements differ from the reference by more than %g\n", c.bad,
                y.size(), kTolerance);
  return c;
}

// Runs one shape; returns false when the result is wrong.
bool runShape(const Shape &shape, std::mt19937 &rng) {
  auto [rows, cols] = shape;
  std::vector<float> x = randomMatrix(shape, rng);
  size_t n = x.size(), bytes = n * sizeof(float);

  rt::DeviceBuffer in(bytes), out(bytes);
  // Specialized on the arguments' divisibility by 16, as Triton does at launch.
  CompiledKernel &k =
      kernels::softmaxKernel().compile(kernels::softmaxSpecialization(cols).specializedFor(
          {out, in, int32_t(cols), int32_t(cols), int32_t(rows), int32_t(cols)}));
  in.upload(x.data(), bytes);
  out.fill32(kPoison);
  rt::Stream stream;
  int64_t grid = k.persistentGrid(rows);
  // Correctness first, on the poisoned output.
  k.launch(grid, stream.get(),
           {out, in, int32_t(cols), int32_t(cols), int32_t(rows), int32_t(cols)});
  stream.sync();
  std::vector<float> y(n);
  out.download(y.data(), bytes);
  Check c = check(x, y, shape);

  // Bandwidth: median of repetitions with L2 flushed before each.
  auto timed = [&] {
    rt::l2Flush(stream.get());
    rt::Event start, stop;
    start.record(stream.get());
    k.launch(grid, stream.get(),
             {out, in, int32_t(cols), int32_t(cols), int32_t(rows), int32_t(cols)});
    stop.record(stream.get());
    return stop.msSince(start);
  };
  for (int i = 0; i < 5; ++i)
    timed();
  std::vector<float> ms;
  for (int i = 0; i < 50; ++i)
    ms.push_back(timed());
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  double median = ms[ms.size() / 2];
  double gbps = 2.0 * double(bytes) / (median * 1e-3) / 1e9;
  const rt::KernelInfo &info = k.info();
  std::printf("%6lld x %-6lld  BLOCK %-6lld warps %-2d grid %-5lld regs %-3d  max|err| %.2e  "
              "%s  %8.1f GB/s  (%.4f ms)\n",
              (long long)rows, (long long)cols, (long long)kernels::softmaxConfig(cols).blockSize,
              k.metadata().options.numWarps, (long long)grid, info.numRegs, c.maxErr,
              c.bad ? "FAIL" : "ok", gbps, median);
  return c.bad == 0;
}

// --- Without a GPU: the interpreter ----------------------------------------------------------

// Runs one shape through the interpreter over host buffers and checks it like runShape does.
bool runShapeInterpreted(const Shape &shape, std::mt19937 &rng) {
  auto [rows, cols] = shape;
  std::vector<float> x = randomMatrix(shape, rng), y(x.size());
  size_t bytes = x.size() * sizeof(float);
  interpreter::HostBuffer in(bytes), out(bytes);
  in.upload(x.data(), bytes);
  out.fill32(kPoison);
  CompiledKernel &k =
      kernels::softmaxKernel().compile(kernels::softmaxSpecialization(cols).specializedFor(
          {out, in, int32_t(cols), int32_t(cols), int32_t(rows), int32_t(cols)}));
  int64_t grid = k.persistentGrid(rows);
  auto start = std::chrono::steady_clock::now();
  k.launch(grid, nullptr, {out, in, int32_t(cols), int32_t(cols), int32_t(rows), int32_t(cols)});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.download(y.data(), bytes);
  Check c = check(x, y, shape);
  std::printf("%6lld x %-6lld  BLOCK %-6lld grid %-4lld  max|err| %.2e  %s  (interpreted in "
              "%.2f s)\n",
              (long long)rows, (long long)cols, (long long)kernels::softmaxConfig(cols).blockSize,
              (long long)grid, c.maxErr, c.bad ? "FAIL" : "ok", seconds);
  return c.bad == 0;
}

// The interpreter's run of the main job: smaller shapes, so that it takes seconds on a CPU.
int runInterpreted(const std::vector<Shape> &requested, bool userShape) {
  std::vector<Shape> shapes =
      userShape ? requested : std::vector<Shape>{{1823, 781}, {4096, 256}, {64, 4096}, {16, 12288}};
  setInterpret(true);
  std::printf("running in tritium's CPU interpreter (TRITIUM_INTERPRET), not on a GPU: results "
              "are checked, there is no bandwidth to report\n");
  std::mt19937 rng(std::random_device{}());
  bool ok = true;
  for (const Shape &s : shapes)
    ok = runShapeInterpreted(s, rng) && ok;
  std::printf(ok ? "all results match the reference (interpreter)\n"
                 : "MISMATCH against the reference (interpreter)\n");
  return ok ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<Shape> shapes = {{1823, 781}, {4096, 256}, {4096, 1024}, {4096, 4096}, {4096, 12288}};
  if (argc == 3)
    shapes = {{std::atoll(argv[1]), std::atoll(argv[2])}};
  else if (argc != 1) {
    std::fprintf(stderr, "usage: %s [ROWS COLS]\n", argv[0]);
    return 2;
  }
  try {
    // Compile first: this works on any machine and leaves the cache entry with every stage.
    for (const Shape &s : shapes) {
      CompiledKernel &k = kernels::softmaxKernel().compile(kernels::softmaxSpecialization(s.cols));
      std::printf("compiled softmax_kernel for N=%lld (%s): %s\n", (long long)s.cols,
                  k.metadata().fromCache ? "from the disk cache" : "fresh",
                  k.metadata().cacheDir.string().c_str());
    }
    if (interpreting())
      return runInterpreted(shapes, argc == 3);
    std::string why;
    if (!rt::Driver::available(&why)) {
      std::printf("no usable GPU on this machine (%s): the kernels above were compiled to PTX and "
                  "cached, and now run in the interpreter instead.\n",
                  why.c_str());
      return runInterpreted(shapes, argc == 3);
    }
    std::printf("device: %s (%s, %d SMs)\n", rt::Context::current().props().name.c_str(),
                rt::Context::current().props().arch().c_str(),
                rt::Context::current().props().smCount);
    std::mt19937 rng(std::random_device{}());
    bool ok = true;
    for (const Shape &s : shapes)
      ok = runShape(s, rng) && ok;
    std::printf(ok ? "all results match the reference\n" : "MISMATCH against the reference\n");
    return ok ? 0 : 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
