// bench_softmax: tritium's fused softmax over Triton's tutorial sweep (M = 4096, N = 256..16384
// step 128), in GB/s = 2 * M * N * 4 / time, with the device-to-device copy of the same bytes
// as the ceiling. CUDA-event timing after warm-up, L2 flushed before every repetition, median
// of the repetitions. Also: host time per launch, and compile / first-call time.
#include "examples/kernels/Softmax.h"
#include "examples/kernels/SoftmaxReference.h"
#include "frontend/Tritium.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

using namespace tritium;
using Clock = std::chrono::steady_clock;

namespace {

const char *kUsage = R"(usage: bench_softmax [options]
  --quick              N in {256, 512, 1024, 2048, 4096, 8192, 12288, 16384} (default: the
                       tutorial's sweep, 256 to 16384 in steps of 128)
  --n=LIST             these N instead (comma separated)
  --rows=M             rows (default 4096)
  --num-warps=LIST     time each of these num_warps (comma separated) instead of the default
  --num-stages=LIST    time each of these num_stages (1 = no cp.async pipelining)
  --reps=R             timed repetitions per point (default 100)
  --csv=FILE           also write the table as CSV
  --host-overhead      host time per launch of a tiny softmax (1 x 128), plain and graph
  --compile-time       time from nothing to a finished first launch (compile or cache load)
)";

std::vector<int64_t> parseList(const std::string &s) {
  std::vector<int64_t> out;
  for (size_t pos = 0; pos < s.size();) {
    size_t comma = s.find(',', pos);
    out.push_back(std::atoll(s.substr(pos, comma - pos).c_str()));
    pos = comma == std::string::npos ? s.size() : comma + 1;
  }
  return out;
}

float median(std::vector<float> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// Median milliseconds of `fn` over `reps`, L2 flushed before each, after warm-up.
template <typename F> float timeMs(rt::Stream &s, int reps, F &&fn) {
  rt::Event start, stop;
  for (int i = 0; i < 5; ++i)
    fn();
  std::vector<float> ms;
  for (int i = 0; i < reps; ++i) {
    rt::l2Flush(s.get());
    start.record(s.get());
    fn();
    stop.record(s.get());
    ms.push_back(stop.msSince(start));
  }
  return median(ms);
}

struct Point {
  int64_t n;
  int warps, stages;
  double gbps, copyGbps, maxErr;
  int regs;
};

// Runs softmax once and compares a sample of rows with a double-precision reference.
double checkRows(const std::vector<float> &x, const std::vector<float> &y, int64_t rows,
                 int64_t cols) {
  double maxErr = 0;
  std::vector<double> ref(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; r += std::max<int64_t>(1, rows / 64)) {
    kernels::softmaxRowReference(&x[size_t(r * cols)], cols, ref.data());
    for (int64_t c = 0; c < cols; ++c) {
      double err = std::fabs(ref[size_t(c)] - double(y[size_t(r * cols + c)]));
      maxErr = std::isnan(err) ? INFINITY : std::max(maxErr, err);
    }
  }
  return maxErr;
}

std::vector<float> randomMatrix(int64_t rows, int64_t cols, std::mt19937 &rng) {
  std::vector<float> x(size_t(rows * cols));
  std::normal_distribution<float> dist(0.f, 2.f);
  for (float &v : x)
    v = dist(rng);
  return x;
}

Point benchOne(const std::vector<float> &x, int64_t rows, int64_t cols, int warps, int stages,
               int reps) {
  size_t n = size_t(rows * cols), bytes = n * sizeof(float);
  std::vector<float> y(n);
  rt::DeviceBuffer in(bytes), out(bytes);
  in.upload(x.data(), bytes);
  out.fill32(0x7fc00001u);
  rt::Stream s;
  Specialization spec = kernels::softmaxSpecialization(cols);
  if (warps > 0)
    spec.numWarps = warps;
  if (stages > 0)
    spec.constexprs[1] = spec.numStages = stages;
  int32_t c = int32_t(cols), r = int32_t(rows);
  spec = spec.specializedFor({out, in, c, c, r, c});
  CompiledKernel &k = kernels::softmaxKernel().compile(spec);
  int64_t grid = k.persistentGrid(rows);
  auto run = [&] { k.launch(grid, s.get(), {out, in, c, c, r, c}); };
  run();
  s.sync();
  out.download(y.data(), bytes);
  double err = checkRows(x, y, rows, cols);
  float ms = timeMs(s, reps, run);
  float copyMs =
      timeMs(s, reps, [&] { TRITIUM_CU(cuMemcpyDtoDAsync(out.ptr(), in.ptr(), bytes, s.get())); });
  return {cols,
          k.metadata().options.numWarps,
          k.metadata().options.numStages,
          2.0 * double(bytes) / (ms * 1e-3) / 1e9,
          2.0 * double(bytes) / (copyMs * 1e-3) / 1e9,
          err,
          k.info().numRegs};
}

int hostOverhead() {
  rt::DeviceBuffer in(128 * 4), out(128 * 4);
  rt::Stream s;
  Specialization spec = kernels::softmaxSpecialization(128).specializedFor(
      {out, in, int32_t(128), int32_t(128), int32_t(1), int32_t(128)});
  CompiledKernel &k = kernels::softmaxKernel().compile(spec);
  auto launch = [&] {
    k.launch(1, s.get(), {out, in, int32_t(128), int32_t(128), int32_t(1), int32_t(128)});
  };
  for (int i = 0; i < 1000; ++i)
    launch();
  s.sync();
  // Host time alone: batches short enough never to fill the launch queue, timed around the
  // launch calls only, synchronising between batches.
  const int calls = 20000, batch = 200;
  double hostSeconds = 0;
  for (int done = 0; done < calls; done += batch) {
    auto b0 = Clock::now();
    for (int i = 0; i < batch; ++i)
      launch();
    hostSeconds += std::chrono::duration<double>(Clock::now() - b0).count();
    s.sync();
  }
  double hostUs = hostSeconds * 1e6 / calls;
  // The same measurement for the bare driver call with prepared arguments: the floor that
  // tritium's checks and argument packing sit on.
  CUdeviceptr outPtr = out.ptr(), inPtr = in.ptr();
  int32_t cols = 128, rowCount = 1;
  void *params[] = {&outPtr, &inPtr, &cols, &cols, &rowCount, &cols};
  CUfunction fn = k.function();
  double rawSeconds = 0;
  for (int done = 0; done < calls; done += batch) {
    auto b0 = Clock::now();
    for (int i = 0; i < batch; ++i)
      rt::launchKernel(fn, 1, unsigned(k.numThreads()), unsigned(k.metadata().sharedBytes),
                       s.get(), params);
    rawSeconds += std::chrono::duration<double>(Clock::now() - b0).count();
    s.sync();
  }
  double rawUs = rawSeconds * 1e6 / calls;
  // Back to back without synchronising: bounded by the GPU's rate of tiny kernels.
  auto t0 = Clock::now();
  for (int i = 0; i < calls; ++i)
    launch();
  s.sync();
  auto t2 = Clock::now();
  double totalUs = std::chrono::duration<double, std::micro>(t2 - t0).count() / calls;
  // The same launches captured once into a CUDA graph and replayed.
  rt::Graph g = rt::Graph::capture(s.get(), [&] {
    for (int i = 0; i < 100; ++i)
      launch();
  });
  g.launch(s.get());
  s.sync();
  auto t3 = Clock::now();
  for (int i = 0; i < calls / 100; ++i)
    g.launch(s.get());
  s.sync();
  double graphUs = std::chrono::duration<double, std::micro>(Clock::now() - t3).count() / calls;
  std::printf("host_us_per_launch %.2f\ncuLaunchKernel_alone_us %.2f\n"
              "back_to_back_us_per_launch %.2f\n"
              "graph_replay_us_per_launch %.2f\n",
              hostUs, rawUs, totalUs, graphUs);
  return 0;
}

int compileTime(Clock::time_point start) {
  // The anchor's kernel: 64 x 1000, BLOCK_SIZE 1024, num_warps 8, num_stages 4.
  rt::DeviceBuffer in(64 * 1000 * 4), out(64 * 1000 * 4);
  rt::Stream s;
  Specialization spec = kernels::softmaxSpecialization(1000);
  spec.numWarps = 8;
  auto t0 = Clock::now();
  CompiledKernel &k = kernels::softmaxKernel().compile(spec);
  auto t1 = Clock::now();
  k.launch(k.persistentGrid(64), s.get(),
           {out, in, int32_t(1000), int32_t(1000), int32_t(64), int32_t(1000)});
  s.sync();
  auto t2 = Clock::now();
  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  std::printf("%s compile_ms %.2f load_and_first_launch_ms %.2f total_ms %.2f "
              "(process start to here %.2f)\n",
              k.metadata().fromCache ? "warm-cache" : "cold-cache", ms(t0, t1), ms(t1, t2),
              ms(t0, t2), ms(start, t2));
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  auto start = Clock::now();
  std::vector<int64_t> ns, warps = {0}, stages = {0};
  int64_t rows = 4096;
  int reps = 100;
  std::string csv;
  bool quick = false;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto value = [&] { return a.substr(a.find('=') + 1); };
      if (a == "--help" || a == "-h") {
        std::fputs(kUsage, stdout);
        return 0;
      } else if (a == "--quick") {
        quick = true;
      } else if (a.rfind("--n=", 0) == 0) {
        ns = parseList(value());
      } else if (a.rfind("--rows=", 0) == 0) {
        rows = std::atoll(value().c_str());
      } else if (a.rfind("--num-warps=", 0) == 0) {
        warps = parseList(value());
      } else if (a.rfind("--num-stages=", 0) == 0) {
        stages = parseList(value());
      } else if (a.rfind("--reps=", 0) == 0) {
        reps = std::atoi(value().c_str());
      } else if (a.rfind("--csv=", 0) == 0) {
        csv = value();
      } else if (a == "--host-overhead") {
        return hostOverhead();
      } else if (a == "--compile-time") {
        return compileTime(start);
      } else {
        std::fprintf(stderr, "bench_softmax: unknown argument '%s'\n%s", a.c_str(), kUsage);
        return 2;
      }
    }
    std::string why;
    if (!rt::Driver::available(&why)) {
      std::fprintf(stderr, "bench_softmax: no GPU (%s)\n", why.c_str());
      return 1;
    }
    if (ns.empty()) {
      if (quick)
        ns = {256, 512, 1024, 2048, 4096, 8192, 12288, 16384};
      else
        for (int64_t n = 256; n <= 16384; n += 128)
          ns.push_back(n);
    }
    std::mt19937 rng(std::random_device{}());
    std::vector<Point> points;
    size_t total = ns.size() * warps.size() * stages.size(), done = 0;
    for (int64_t n : ns) {
      std::vector<float> x = randomMatrix(rows, n, rng); // fresh data for each N
      for (int64_t w : warps)
        for (int64_t st : stages) {
          std::fprintf(stderr, "\r[%zu/%zu] N=%lld warps=%lld stages=%lld   ", ++done, total,
                       (long long)n, (long long)w, (long long)st);
          try {
            points.push_back(benchOne(x, rows, n, int(w), int(st), reps));
          } catch (const UserError &e) { // e.g. too many elements per thread for few warps
            std::fprintf(stderr, "\nskipped N=%lld num_warps=%lld: %s\n", (long long)n,
                         (long long)w, e.what());
          }
        }
    }
    std::fprintf(stderr, "\n");
    std::printf("%6s %6s %5s %6s %5s %10s %10s %7s %9s\n", "M", "N", "warps", "stages", "regs",
                "GB/s", "copy GB/s", "of copy", "max|err|");
    std::ofstream f;
    if (!csv.empty()) {
      f.open(csv);
      f << "M,N,num_warps,num_stages,regs,tritium_GBps,copy_GBps,max_err\n";
    }
    bool ok = true;
    for (const Point &p : points) {
      std::printf("%6lld %6lld %5d %6d %5d %10.1f %10.1f %6.1f%% %9.1e%s\n", (long long)rows,
                  (long long)p.n, p.warps, p.stages, p.regs, p.gbps, p.copyGbps,
                  100 * p.gbps / p.copyGbps, p.maxErr, p.maxErr <= 1e-5 ? "" : "  WRONG");
      ok = ok && p.maxErr <= 1e-5;
      if (f)
        f << rows << "," << p.n << "," << p.warps << "," << p.stages << "," << p.regs << ","
          << p.gbps << "," << p.copyGbps << "," << p.maxErr << "\n";
    }
    return ok ? 0 : 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "bench_softmax: %s\n", e.what());
    return 1;
  }
}
