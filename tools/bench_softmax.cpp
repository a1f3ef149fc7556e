// bench_softmax: tritium's fused softmax, forward or backward, fp32/fp16/bf16, in GB/s with the
// device-to-device copy as the ceiling. Default sweep: Triton's tutorial (M = 4096, N = 256..16384
// step 128); --long: N = 32768..262144 with 1 GiB inputs (the planner picks registers, cluster or online). Fwd:
// GB/s = 2 * M * N * bytes / time (one read, one write); backward: 3 * M * N * bytes / time (o
// and dout read, dx written). CUDA-event timing after warm-up, L2 flushed before every
// repetition, median of the repetitions. Each point runs the plan of kernels::planSoftmax /
// planSoftmaxBackward (overridable from the command line) and is checked against the
// double-precision reference on a sample of rows. Also: host time per launch, and compile /
// first-call time.
#include "kernels/HostDtype.h"
#include "kernels/Softmax.h"
#include "kernels/SoftmaxPlan.h"
#include "kernels/SoftmaxReference.h"
#include "frontend/Tritium.h"
#include "tools/CommandLine.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace tritium;
using Clock = std::chrono::steady_clock;

namespace {

const char *kUsage = R"(usage: bench_softmax [options]
  --quick              N in {256, 512, 1024, 2048, 4096, 8192, 12288, 16384} (default: the
                       tutorial's sweep, 256 to 16384 in steps of 128)
  --long               N in {32768, 65536, 131072, 262144}, M = ceil(2^30 / (N x bytes)) rows
                       so that each input is >= 1 GiB (unless --rows is given)
  --n=LIST             these N instead (comma separated)
  --rows=M             rows (default 4096; with --long, see above)
  --dtype=T            element type of every tensor: fp32 (default), fp16, bf16
  --backward           time the fused backward dx = o * (dout - sum(o * dout)) instead of the
                       forward; GB/s = 3 x M x N x bytes / time (forward: 2 x M x N x bytes)
  --online             force the online (two-pass) kernel; the planner's long-row block size,
                       num_warps and num_stages unless overridden below
  --block-size=LIST    time each of these BLOCK_SIZE (comma separated) instead of the plan's
  --num-warps=LIST     time each of these num_warps (comma separated) instead of the plan's
  --num-stages=LIST    time each of these num_stages (1 = no cp.async pipelining)
  --cluster-size=LIST  split each row over a thread-block cluster of these many programs
                       (1 to 16), each holding a power-of-two slice of ceil(N / size) columns
                       in registers, or with --online streaming its slice in blocks
  --prefetch=LIST      forward: 1 loads each program's next row into registers before reducing
                       this one (no cp.async ring), 0 does not (default: the plan's)
  --bulk=LIST          cp.async rings (num_stages > 1): 1 moves whole rows as one bulk copy (TMA)
                       per stage where they qualify, 0 one 16-byte cp.async per thread
                       (default 1)
  --min-blocks=B       ask ptxas to fit B blocks per SM (caps registers; default: the plan's,
                       1 with --cluster-size or a num_warps other than the plan's)
  --ptx-version=V      emit PTX ISA V (x 10; default 81). 80 has no st.async: cluster exchanges
                       go through a cluster barrier
  --program-per-row=LIST
                       1 launches one program (cluster) per row, as Triton does, 0 the
                       persistent grid of resident programs (default: the plan's)
  --programs-per-cta=LIST
                       run this many warp-sized programs (with --num-warps=1) side by side in
                       each CTA, each with its own rows (0: the plan's)
  --grid=LIST          launch this many CTAs (comma separated) instead of the plan's grid
                       (every program loops over rows; 0: the plan's)
  --reps=R             timed repetitions per point (default 100)
  --timing=MODE        queued (default): every repetition enqueued, one wait at the end, as
                       the peers are timed; synced: wait for each repetition before the next
  --export=DIR         write each timed kernel's cubin to DIR and how to launch it to
                       DIR/kernels.csv, for tools/peers_softmax.py --tritium=DIR
  --csv=FILE           also write the table as CSV (columns M, N, num_warps, num_stages, regs,
                       tritium_GBps, copy_GBps, max_err, dtype, direction, plan)
  --host-overhead      host time per launch of a tiny softmax (1 x 128): plain, typed
                       (Kernel::launch) and graph
  --compile-time       time from nothing to a finished first launch (compile or cache load)
)";

// A comma-separated list of integers given to `flag`; anything else is a usage error.
std::vector<int64_t> parseList(const std::string &flag, const std::string &s) {
  std::vector<int64_t> out;
  for (size_t pos = 0; pos <= s.size();) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos)
      comma = s.size();
    out.push_back(tools::parseInt("bench_softmax", flag, s.substr(pos, comma - pos)));
    pos = comma + 1;
  }
  return out;
}

float median(std::vector<float> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// How repetitions are timed. Queued (the default) enqueues every repetition - flush, start
// event, call, stop event - and waits once at the end, as Triton's do_bench and
// tools/peers_softmax.py do, so the peers and tritium are timed the same way. Synced waits for
// each repetition's stop event before enqueuing the next (the GPU idles between repetitions).
enum class Timing { Queued, Synced };

// Median milliseconds of `fn` over `reps`, L2 flushed before each, after warm-up.
template <typename F> float timeMs(rt::Stream &s, int reps, Timing timing, F &&fn) {
  // Warm-up for at least 25 ms of GPU time, flushes included (as Triton's do_bench and
  // tools/peers_softmax.py): the clocks need milliseconds to come back up after host work.
  rt::Event w0, w1;
  w0.record(s.get());
  for (int i = 0; i < 5; ++i) {
    rt::l2Flush(s.get());
    fn();
  }
  w1.record(s.get());
  float each = std::max(w1.msSince(w0) / 5, 1e-3f);
  for (int i = 0, n = int(std::ceil(25.0f / each)); i < n; ++i) {
    rt::l2Flush(s.get());
    fn();
  }
  std::vector<rt::Event> start(reps), stop(reps);
  std::vector<float> ms;
  for (int i = 0; i < reps; ++i) {
    rt::l2Flush(s.get());
    start[i].record(s.get());
    fn();
    stop[i].record(s.get());
    if (timing == Timing::Synced)
      ms.push_back(stop[i].msSince(start[i]));
  }
  if (timing == Timing::Queued)
    for (int i = 0; i < reps; ++i)
      ms.push_back(stop[i].msSince(start[i]));
  return median(ms);
}

using kernels::bytesOf;
using kernels::kPoisonBits;
using kernels::loadElement;
using kernels::storeElement;
using kernels::toleranceFor;
using kernels::Tolerance;

// --- inputs ---------------------------------------------------------------------------------------

enum class Fill {
  Normal,     // N(0, 2): softmax inputs, and the backward's dout
  Probability // uniform in (0, 2 / cols): a softmax-like positive row (the backward's o)
};

// A host matrix of rows x cols elements already in the dtype, as uploaded.
struct HostMatrix {
  std::unique_ptr<unsigned char[]> data;
  size_t bytes = 0;
};

// Random values generated in float and rounded to the dtype, on every CPU thread (the --long
// inputs are 1 GiB each): thread t fills a contiguous block of rows from its own generator.
HostMatrix randomMatrix(int64_t rows, int64_t cols, const std::string &dtype, Fill fill,
                        uint64_t seed) {
  size_t esize = bytesOf(dtype);
  HostMatrix m;
  m.bytes = size_t(rows) * size_t(cols) * esize;
  m.data = std::make_unique_for_overwrite<unsigned char[]>(m.bytes);
  int64_t threads = std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, 64);
  threads = std::min(threads, std::max<int64_t>(1, rows / 16));
  auto work = [&](int64_t t) {
    std::seed_seq seq{uint32_t(seed), uint32_t(seed >> 32), uint32_t(t)};
    std::mt19937 rng(seq);
    std::normal_distribution<float> normal(0.f, 2.f);
    std::uniform_real_distribution<float> prob(0.f, 2.f / float(cols));
    int64_t r0 = rows * t / threads, r1 = rows * (t + 1) / threads;
    unsigned char *p = m.data.get() + size_t(r0) * size_t(cols) * esize;
    for (int64_t i = 0, n = (r1 - r0) * cols; i < n; ++i, p += esize)
      storeElement(dtype, fill == Fill::Normal ? normal(rng) : prob(rng), p);
  };
  std::vector<std::thread> pool;
  for (int64_t t = 1; t < threads; ++t)
    pool.emplace_back(work, t);
  work(0);
  for (std::thread &th : pool)
    th.join();
  return m;
}

// Row r of a host matrix, back in float: the values the kernel actually read.
std::vector<float> rowAsFloat(const HostMatrix &m, int64_t r, int64_t cols,
                              const std::string &dtype) {
  size_t esize = bytesOf(dtype);
  std::vector<float> v(static_cast<size_t>(cols));
  const unsigned char *p = m.data.get() + size_t(r) * size_t(cols) * esize;
  for (int64_t c = 0; c < cols; ++c)
    v[size_t(c)] = loadElement(dtype, p + size_t(c) * esize);
  return v;
}

// --- one point --------------------------------------------------------------------------------

struct Point {
  int64_t m, n;
  int warps, stages;
  double gbps, copyGbps, maxErr;
  int64_t bad; // elements outside the tolerance in the checked rows
  int regs;
  std::string plan;
};

struct Check {
  double maxErr = 0; // largest |got - ref| over the checked rows (inf for a NaN)
  int64_t bad = 0;   // elements outside atol + rtol * |ref|
};

// Compares a sample of rows (every rows/64-th and the last) of the output with the
// double-precision reference of the inputs as stored, in float after converting the output
// back from the dtype.
Check checkRows(const std::string &dtype, bool backward, const HostMatrix &a,
                const HostMatrix *b, const rt::DeviceBuffer &out, int64_t rows, int64_t cols) {
  Check res;
  Tolerance tol = toleranceFor(dtype);
  size_t esize = bytesOf(dtype), rowBytes = size_t(cols) * esize;
  std::vector<double> ref(static_cast<size_t>(cols));
  std::vector<unsigned char> got(rowBytes);
  std::vector<int64_t> sample;
  for (int64_t r = 0; r < rows; r += std::max<int64_t>(1, rows / 64))
    sample.push_back(r);
  if (sample.back() != rows - 1)
    sample.push_back(rows - 1);
  for (int64_t r : sample) {
    std::vector<float> x = rowAsFloat(a, r, cols, dtype);
    if (backward)
      kernels::softmaxBackwardRowReference(x.data(), rowAsFloat(*b, r, cols, dtype).data(), cols,
                                           ref.data());
    else
      kernels::softmaxRowReference(x.data(), cols, ref.data());
    TRITIUM_CU(cuMemcpyDtoH(got.data(), out.ptr() + CUdeviceptr(size_t(r) * rowBytes), rowBytes));
    for (int64_t c = 0; c < cols; ++c) {
      double want = ref[size_t(c)];
      double err = std::fabs(double(loadElement(dtype, &got[size_t(c) * esize])) - want);
      if (std::isnan(err))
        err = INFINITY;
      res.maxErr = std::max(res.maxErr, err);
      if (!(err <= tol.atol + tol.rtol * std::fabs(want)))
        ++res.bad;
    }
  }
  return res;
}

struct Options {
  std::string dtype = "fp32";
  bool backward = false, online = false;
  std::vector<int64_t> blocks = {0}, warps = {0}, stages = {0}, clusters = {0}, prefetch = {-1},
                       bulk = {1};
  int minBlocks = 0; // 0: the plan's
  int ptxVersion = 0; // 0: the default
  std::vector<int64_t> programPerRow = {-1}; // 1: a program (cluster) per row; -1: the plan's
  std::vector<int64_t> grids = {0};          // CTAs launched; 0: the plan's grid
  std::vector<int64_t> programsPerCTA = {0}; // warp-sized programs per CTA; 0: the plan's
  int reps = 100;
  Timing timing = Timing::Queued;
  std::string exportDir; // --export: where each timed kernel's cubin and launch go
};

// --export: the cubin of a timed kernel, and a line of DIR/kernels.csv that says how to launch
// it (grid, threads, shared bytes, parameter types), so that tools/peers_softmax.py --tritium=DIR
// times the same kernels in the peers' process, next to torch's copy.
void exportKernel(const Options &o, int64_t rows, int64_t cols, const kernels::SoftmaxPlan &plan,
                  CompiledKernel &k, int64_t grid) {
  namespace fs = std::filesystem;
  fs::create_directories(o.exportDir);
  std::string cubin; // a new name, also when several runs export into one folder
  for (int serial = 0; cubin.empty() || fs::exists(fs::path(o.exportDir) / cubin); ++serial)
    cubin = "k" + std::to_string(serial) + "-" + o.dtype + "-" + std::to_string(cols) + ".cubin";
  if (k.cubin().empty() ||
      !(std::ofstream(fs::path(o.exportDir) / cubin, std::ios::binary) << k.cubin()))
    throw UserError("bench_softmax --export: cannot write " + cubin + " in " + o.exportDir);
  fs::path table = fs::path(o.exportDir) / "kernels.csv";
  bool fresh = !fs::exists(table);
  std::ofstream t(table, std::ios::app);
  if (fresh)
    t << "M,N,dtype,direction,plan,cubin,name,grid,threads,shared_bytes,cluster_size,signature\n";
  std::string sig;
  for (const std::string &type : k.metadata().signature.types)
    sig += (sig.empty() ? "" : ";") + type;
  t << rows << ',' << cols << ',' << o.dtype << ',' << (o.backward ? "backward" : "forward")
    << ',' << plan.str() << ',' << cubin << ',' << k.metadata().name << ',' << grid << ','
    << k.numThreads() << ',' << k.metadata().sharedBytes << ','
    << k.metadata().options.clusterSize << ',' << sig << '\n';
  if (!t)
    throw UserError("bench_softmax --export: cannot write " + table.string());
}

// The plan for this point: the planner's, then the command line's overrides.
kernels::SoftmaxPlan planFor(const Options &o, int64_t cols, int64_t block, int64_t warps,
                             int64_t stages, int64_t cluster, int64_t prefetch, int64_t bulk,
                             int64_t perRow, int64_t perCTA) {
  kernels::SoftmaxPlan p = o.backward ? kernels::planSoftmaxBackward(cols, o.dtype)
                                      : kernels::planSoftmax(cols, o.dtype);
  if (o.online)
    p = kernels::planOnline(p.direction);
  if (o.minBlocks > 0)
    p.minBlocksPerSM = o.minBlocks;
  p.ptxVersion = o.ptxVersion;
  p.bulkCopies = bulk != 0;
  if (perRow >= 0)
    p.programPerRow = perRow > 0;
  if (cluster > 0) { // the row split over `cluster` programs
    if (!o.online && p.online) { // the planner's online plan: slices in registers instead
      p.online = false;
      p.numStages = 1;
    }
    p.prefetch = false; // the plain cluster kernel unless --prefetch=1 says otherwise
    p.splitOver(int(cluster), cols);
    p.minBlocksPerSM = std::max(1, o.minBlocks);
  }
  if (prefetch >= 0) {
    p.prefetch = prefetch > 0;
    if (p.prefetch)
      p.numStages = 1;
  }
  if (warps > 0) {
    // The plan's CTAs-per-SM register cap was chosen for its own num_warps (unless given), and
    // its programs per CTA for its warp-sized programs.
    if (warps != p.numWarps && o.minBlocks == 0)
      p.minBlocksPerSM = 1;
    if (warps != 1)
      p.programsPerCTA = 1;
    p.numWarps = int(warps);
  }
  if (perCTA > 0)
    p.programsPerCTA = int(perCTA);
  if (block > 0)
    p.blockSize = block;
  else if (warps > 0 && !p.online && p.clusterSize == 1)
    p.fitBlock(cols, o.dtype); // the planner's block was fitted to its own num_warps
  if (stages > 0) {
    p.numStages = int(stages);
    if (stages > 1 && prefetch < 0)
      p.prefetch = false; // a cp.async ring asked for replaces the planner's prefetch
    if (stages > 1 && perCTA <= 0)
      p.programsPerCTA = 1; // and needs shared memory that programs in one CTA cannot share
  }
  return p;
}

// Skips a configuration that cannot run (too many elements per thread, a block smaller than the
// row for the registers kernel, more shared memory than an SM has) rather than ending the sweep.
bool skippable(const rt::DriverError &e) {
  return e.result() == CUDA_ERROR_INVALID_VALUE ||
         e.result() == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
}

// All configurations for one N: the inputs are generated and uploaded once, and every buffer is
// freed on return (the --long buffers are 1 GiB each).
void benchN(const Options &o, int64_t rows, int64_t cols, std::mt19937_64 &seeds,
            std::vector<Point> &points, size_t &done, size_t total) {
  const std::string &dt = o.dtype;
  size_t bytes = size_t(rows) * size_t(cols) * bytesOf(dt);
  // Forward: a = x. Backward: a = o (softmax-like), b = dout.
  HostMatrix a = randomMatrix(rows, cols, dt, o.backward ? Fill::Probability : Fill::Normal,
                              seeds());
  HostMatrix b;
  if (o.backward)
    b = randomMatrix(rows, cols, dt, Fill::Normal, seeds());
  rt::DeviceBuffer out(bytes), inA(bytes);
  std::unique_ptr<rt::DeviceBuffer> inB;
  inA.upload(a.data.get(), bytes);
  if (o.backward) {
    inB = std::make_unique<rt::DeviceBuffer>(bytes);
    inB->upload(b.data.get(), bytes);
  }
  rt::Stream s;
  // The ceiling: a device-to-device copy of one tensor, M * N * bytes read and as many written.
  // Its GB/s is the bytes it moves (2 * M * N * bytes) over its time, i.e. the copy bandwidth.
  // The forward kernel moves the same bytes; the backward moves 3 * M * N * bytes, and its GB/s
  // (3 * M * N * bytes / its time) is compared with that same copy bandwidth, not with the time
  // of a copy of 3 * M * N * bytes: both are bandwidths, so the ratio stays honest.
  float copyMs =
      timeMs(s, o.reps, o.timing,
             [&] { TRITIUM_CU(cuMemcpyDtoDAsync(out.ptr(), inA.ptr(), bytes, s.get())); });
  double copyGbps = 2.0 * double(bytes) / (copyMs * 1e-3) / 1e9;
  double moved = (o.backward ? 3.0 : 2.0) * double(bytes);
  int64_t stride = cols;
  for (int64_t gr : o.grids)
  for (int64_t pcta : o.programsPerCTA)
  for (int64_t ppr : o.programPerRow)
  for (int64_t bk : o.bulk)
  for (int64_t pf : o.prefetch)
  for (int64_t cl : o.clusters)
  for (int64_t bs : o.blocks)
    for (int64_t w : o.warps)
      for (int64_t st : o.stages) {
        kernels::SoftmaxPlan plan = planFor(o, cols, bs, w, st, cl, pf, bk, ppr, pcta);
        std::fprintf(stderr, "\r[%zu/%zu] N=%lld %s   ", ++done, total, (long long)cols,
                     plan.str().c_str());
        try {
          out.fill32(kPoisonBits);
          kernels::SoftmaxShape shape{rows, cols};
          CompiledKernel &k =
              o.backward ? kernels::softmaxBackward(plan, dt, out, inA, *inB, shape, stride,
                                                    stride, stride, s.get(), gr)
                         : kernels::softmaxForward(plan, dt, out, inA, shape, stride, stride,
                                                   s.get(), gr);
          s.sync();
          Check c = checkRows(dt, o.backward, a, o.backward ? &b : nullptr, out, rows, cols);
          // The timed loop launches the compiled kernel directly: no planning, no lookup.
          int64_t grid = gr > 0 ? gr : plan.grid(k, rows);
          if (!o.exportDir.empty())
            exportKernel(o, rows, cols, plan, k, grid);
          float ms = o.backward ? timeMs(s, o.reps, o.timing,
                                         [&] {
                                           k.launch(grid, s.get(),
                                                    {out, inA, *inB, stride, stride, stride,
                                                     rows, cols});
                                         })
                                : timeMs(s, o.reps, o.timing, [&] {
                                    k.launch(grid, s.get(), {out, inA, stride, stride, rows, cols});
                                  });
          points.push_back({rows, cols, k.metadata().options.numWarps,
                            k.metadata().options.numStages, moved / (ms * 1e-3) / 1e9, copyGbps,
                            c.maxErr, c.bad, k.info().numRegs,
                            gr > 0 ? plan.str() + " grid " + std::to_string(gr) : plan.str()});
        } catch (const UserError &e) { // e.g. too many elements per thread for few warps
          std::fprintf(stderr, "\nskipped N=%lld %s: %s\n", (long long)cols, plan.str().c_str(),
                       e.what());
        } catch (const rt::DriverError &e) {
          if (!skippable(e))
            throw;
          std::fprintf(stderr, "\nskipped N=%lld %s: %s\n", (long long)cols, plan.str().c_str(),
                       e.what());
        }
      }
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
  // The bare driver call with prepared arguments, the floor that tritium's checks and argument
  // packing sit on: with an array of pointers to the arguments, and with the arguments packed
  // into one buffer (CU_LAUNCH_PARAM_BUFFER_POINTER, as CompiledKernel::launch passes them).
  CUdeviceptr outPtr = out.ptr(), inPtr = in.ptr();
  int32_t cols = 128, rowCount = 1;
  void *params[] = {&outPtr, &inPtr, &cols, &cols, &rowCount, &cols};
  CUfunction fn = k.function();
  unsigned threads = unsigned(k.numThreads()), shared = unsigned(k.metadata().sharedBytes);
  struct Packed {
    CUdeviceptr out, in;
    int32_t inStride, outStride, rows, cols;
  } packed{outPtr, inPtr, cols, cols, rowCount, cols};
  // Host time alone: batches short enough never to fill the launch queue, timed around the
  // launch calls only, synchronising between batches. The three ways take turns batch by
  // batch, so that a drift of the machine's speed during the measurement touches all alike.
  // A fourth: tritium's launch into a stream that does not order with the legacy default stream
  // (CU_STREAM_NON_BLOCKING), which spares the driver that bookkeeping, if it costs any.
  CUstream nonBlocking = nullptr;
  TRITIUM_CU(cuStreamCreate(&nonBlocking, CU_STREAM_NON_BLOCKING));
  const int calls = 20000, batch = 200;
  std::vector<std::function<void()>> ways = {
      launch,
      [&] { rt::launchKernel(fn, 1, threads, shared, s.get(), params); },
      [&] { rt::launchKernelPacked(fn, 1, threads, shared, s.get(), &packed, sizeof packed); },
      [&] {
        k.launch(1, nonBlocking, {out, in, int32_t(128), int32_t(128), int32_t(1), int32_t(128)});
      },
      // What following the caller's context costs: the driver's answer to "which context is
      // current", then the packed launch.
      [&] {
        CUcontext current = nullptr;
        TRITIUM_CU(cuCtxGetCurrent(&current));
        rt::launchKernelPacked(fn, 1, threads, shared, s.get(), &packed, sizeof packed);
      },
      // tritium's lookup of the current context's function (k.function()), then the packed
      // launch: the rest of the difference to k.launch is its argument checks and packing.
      [&] {
        rt::launchKernelPacked(k.function(), 1, threads, shared, s.get(), &packed, sizeof packed);
      }};
  // The same launch with typed arguments (Kernel::launch): the signature's key and its lookup
  // on top of k.launch (the compile-time parameters of kernels/Softmax.h, by name).
  auto *outF = reinterpret_cast<float *>(outPtr), *inF = reinterpret_cast<float *>(inPtr);
  auto typedLaunch = [&] {
    kernels::softmaxKernel().launch(
        1, s.get(), {outF, inF, 128, 128, 1, 128},
        {{"BLOCK_SIZE", spec.constexprs[0]}, {"num_stages", spec.constexprs[1]}},
        {.numWarps = spec.numWarps, .numStages = spec.numStages});
  };
  typedLaunch(); // compiles its specialization
  s.sync();
  ways.push_back(typedLaunch);
  constexpr int kWays = 7;
  double seconds[kWays] = {};
  for (int done = 0; done < calls; done += batch)
    for (int w = 0; w < kWays; ++w) {
      auto b0 = Clock::now();
      for (int i = 0; i < batch; ++i)
        ways[w]();
      seconds[w] += std::chrono::duration<double>(Clock::now() - b0).count();
      s.sync();
      TRITIUM_CU(cuStreamSynchronize(nonBlocking));
    }
  TRITIUM_CU(cuStreamDestroy(nonBlocking));
  double hostUs = seconds[0] * 1e6 / calls, rawUs = seconds[1] * 1e6 / calls,
         packedUs = seconds[2] * 1e6 / calls, nonBlockingUs = seconds[3] * 1e6 / calls,
         askedUs = seconds[4] * 1e6 / calls, lookedUpUs = seconds[5] * 1e6 / calls,
         typedUs = seconds[6] * 1e6 / calls;
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
              "cuLaunchKernel_packed_args_alone_us %.2f\n"
              "host_us_per_launch_non_blocking_stream %.2f\n"
              "cuCtxGetCurrent_plus_packed_launch_us %.2f\n"
              "function_lookup_plus_packed_launch_us %.2f\n"
              "back_to_back_us_per_launch %.2f\n"
              "graph_replay_us_per_launch %.2f\n"
              "typed_launch_us_per_launch %.2f\n",
              hostUs, rawUs, packedUs, nonBlockingUs, askedUs, lookedUpUs, totalUs,
              graphUs, typedUs);
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
  Options o;
  std::vector<int64_t> ns;
  int64_t rows = 0; // 0: 4096, or the --long rule
  std::string csv;
  bool quick = false, longRows = false;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto value = [&] { return a.substr(a.find('=') + 1); };
      auto flag = [&] { return a.substr(0, a.find('=')); };
      auto list = [&] { return parseList(flag(), value()); };
      auto integer = [&] { return tools::parseInt("bench_softmax", flag(), value()); };
      if (a == "--help" || a == "-h") {
        std::fputs(kUsage, stdout);
        return 0;
      } else if (a == "--quick") {
        quick = true;
      } else if (a == "--long") {
        longRows = true;
      } else if (a.rfind("--n=", 0) == 0) {
        ns = list();
      } else if (a.rfind("--rows=", 0) == 0) {
        rows = integer();
      } else if (a.rfind("--dtype=", 0) == 0) {
        o.dtype = value();
        if (o.dtype != "fp32" && o.dtype != "fp16" && o.dtype != "bf16") {
          std::fprintf(stderr, "bench_softmax: --dtype must be fp32, fp16 or bf16, got '%s'\n",
                       o.dtype.c_str());
          return 2;
        }
      } else if (a == "--backward") {
        o.backward = true;
      } else if (a == "--online") {
        o.online = true;
      } else if (a.rfind("--block-size=", 0) == 0) {
        o.blocks = list();
      } else if (a.rfind("--num-warps=", 0) == 0) {
        o.warps = list();
      } else if (a.rfind("--program-per-row=", 0) == 0) {
        o.programPerRow = list();
      } else if (a.rfind("--grid=", 0) == 0) {
        o.grids = list();
      } else if (a.rfind("--programs-per-cta=", 0) == 0) {
        o.programsPerCTA = list();
      } else if (a.rfind("--ptx-version=", 0) == 0) {
        o.ptxVersion = tools::parseInt32("bench_softmax", "--ptx-version", value());
      } else if (a.rfind("--min-blocks=", 0) == 0) {
        o.minBlocks = int(integer());
      } else if (a.rfind("--cluster-size=", 0) == 0) {
        o.clusters = list();
      } else if (a.rfind("--prefetch=", 0) == 0) {
        o.prefetch = list();
      } else if (a.rfind("--bulk=", 0) == 0) {
        o.bulk = list();
      } else if (a.rfind("--num-stages=", 0) == 0) {
        o.stages = list();
      } else if (a.rfind("--reps=", 0) == 0) {
        o.reps = int(integer());
      } else if (a.rfind("--timing=", 0) == 0) {
        if (value() != "queued" && value() != "synced") {
          std::fprintf(stderr, "bench_softmax: --timing must be queued or synced, not '%s'\n",
                       value().c_str());
          return 2;
        }
        o.timing = value() == "queued" ? Timing::Queued : Timing::Synced;
      } else if (a.rfind("--export=", 0) == 0) {
        o.exportDir = value();
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
    bool negativeGrid = std::any_of(o.grids.begin(), o.grids.end(), [](int64_t g) { return g < 0; });
    if (o.reps < 1 || rows < 0 || o.blocks.empty() || o.warps.empty() || o.stages.empty() ||
        o.clusters.empty() || o.grids.empty() || negativeGrid || o.programsPerCTA.empty()) {
      std::fprintf(stderr, "bench_softmax: --reps, --rows and the lists must be positive "
                           "(--grid may be 0)\n");
      return 2;
    }
    std::string why;
    if (!rt::Driver::available(&why)) {
      std::fprintf(stderr, "bench_softmax: no GPU (%s)\n", why.c_str());
      return 1;
    }
    if (ns.empty()) {
      if (longRows)
        ns = {32768, 65536, 131072, 262144};
      else if (quick)
        ns = {256, 512, 1024, 2048, 4096, 8192, 12288, 16384};
      else
        for (int64_t n = 256; n <= 16384; n += 128)
          ns.push_back(n);
    }
    const std::string direction = o.backward ? "backward" : "forward";
    // Rows for N: --rows, else 4096, else (--long) enough for a 1 GiB input.
    auto rowsFor = [&](int64_t n) -> int64_t {
      if (rows > 0)
        return rows;
      if (!longRows)
        return 4096;
      int64_t rowBytes = n * int64_t(bytesOf(o.dtype));
      return ((int64_t(1) << 30) + rowBytes - 1) / rowBytes;
    };
    std::mt19937_64 seeds(std::random_device{}());
    std::vector<Point> points;
    size_t total = ns.size() * o.grids.size() * o.programsPerCTA.size() * o.programPerRow.size() * o.bulk.size() * o.prefetch.size() * o.clusters.size() * o.blocks.size() *
                   o.warps.size() * o.stages.size(),
           done = 0;
    for (int64_t n : ns) // fresh data for each N, freed before the next
      benchN(o, rowsFor(n), n, seeds, points, done, total);
    std::fprintf(stderr, "\n");
    std::printf("# %s %s, tolerance |err| <= %g + %g |ref|, GB/s = %d x M x N x %d bytes / "
                "time\n",
                o.dtype.c_str(), direction.c_str(), toleranceFor(o.dtype).atol,
                toleranceFor(o.dtype).rtol, o.backward ? 3 : 2, bytesOf(o.dtype));
    std::printf("%6s %6s %5s %6s %5s %10s %10s %7s %9s  %s\n", "M", "N", "warps", "stages",
                "regs", "GB/s", "copy GB/s", "of copy", "max|err|", "plan");
    std::ofstream f;
    if (!csv.empty()) {
      f.open(csv);
      f << "M,N,num_warps,num_stages,regs,tritium_GBps,copy_GBps,max_err,dtype,direction,plan\n";
    }
    bool ok = true;
    for (const Point &p : points) {
      std::printf("%6lld %6lld %5d %6d %5d %10.1f %10.1f %6.1f%% %9.1e  %s%s\n", (long long)p.m,
                  (long long)p.n, p.warps, p.stages, p.regs, p.gbps, p.copyGbps,
                  100 * p.gbps / p.copyGbps, p.maxErr, p.plan.c_str(),
                  p.bad == 0 ? "" : ("  FAIL (" + std::to_string(p.bad) + " elements)").c_str());
      ok = ok && p.bad == 0;
      if (f)
        f << p.m << "," << p.n << "," << p.warps << "," << p.stages << "," << p.regs << ","
          << p.gbps << "," << p.copyGbps << "," << p.maxErr << "," << o.dtype << ","
          << direction << "," << p.plan << "\n";
    }
    return ok ? 0 : 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "bench_softmax: %s\n", e.what());
    return 1;
  }
}
