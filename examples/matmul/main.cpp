// Triton's tutorial 03 (matrix multiplication) in tritium: C = A x B on the tensor cores, one
// BM x BN tile per program in grouped order (GROUP_M rows of tiles share their B columns in
// L2), K in a pipelined loop of BK steps, masked at the edges; then the accumulator cast to
// C's dtype. On a GPU it multiplies random matrices, checks sampled rows of C against a
// double-precision reference and prints TFLOP/s; without one (or with TRITIUM_INTERPRET=1) it
// compiles the kernel (PTX in the cache) and runs a small product in the interpreter.
#include "frontend/Tritium.h"
#include "kernels/HostDtype.h"
#include "kernels/Autotuner.h"
#include "kernels/Matmul.h"
#include "kernels/MatmulPlan.h"

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
using namespace tritium::dsl;

namespace {

const char *kUsage = R"(usage: matmul [--dtype=fp16|bf16|fp8e4m3] [--tile=BMxBNxBK] [--warps=W]
              [--stages=S] [--arch=sm_XX]
              [--descriptors [--warp-specialize] | --library [--persistent] [--stream-k]]
              [--split-k=S | --no-split] [--element-stores] [--cluster=2] [--ping-pong]
              [--max-imprecise=N] [--b-nk] [--sustain=SECONDS] [M N K]
  Multiplies random M x K and K x N matrices (default 4096^3 on a GPU, 200 x 136 x 300 in the
  interpreter), checks sampled rows against a double-precision reference and, on a GPU, prints
  TFLOP/s. fp8e4m3 takes B stored [N, K] (as torch._scaled_mm and nn.Linear keep it; the
  tensor cores read 8-bit operands K-major only) and writes C in bf16; --b-nk stores a 16-bit
  B that way too. Without a GPU the product runs in tritium's CPU interpreter. The kernel compiles for
  the GPU's architecture, sm_90a on Hopper (wgmma; --arch=sm_90 gives mma.sync), sm_90a
  without a GPU. --descriptors runs the same product written with tensor descriptors
  (make_tensor_descriptor), whose tiles Hopper copies with TMA; --warp-specialize adds a
  producer warp group that issues those copies (range(...).warp_specialize()). --library runs the same
  product through the kernel library's matmul (kernels/Matmul.h) on its plan: the tile
  options give it one, else the autotuner chooses (TRITIUM_AUTOTUNE=0: the planner);
  --persistent gives it a plan (the tile options', 128 x 256 x 64 by default) whose programs,
  one per SM, each walk tiles in one K loop (MatmulPlan::persistent); --stream-k gives it a
  persistent plan whose programs share the tiles' K steps evenly (MatmulPlan::streamK; 128 x
  128 x 64 by default, with --warp-specialize a producer warp group). --library hands the
  library a workspace (matmulWorkspaceBytes), so that its plans may split K over programs;
  --split-k=S gives it a plan (the tile options') whose S programs per tile each sum a slice
  of K (MatmulPlan::splitK); --no-split hands it none. --element-stores gives it a plan (the
  tile options') whose C tile leaves by element stores rather than one TMA store
  (MatmulPlan::tmaStore). --cluster=2 (with --warp-specialize) gives it a plan (the tile
  options') whose programs run in clusters of two on neighbouring row tiles, B's tiles
  multicast to both by TMA (MatmulPlan::cluster). --ping-pong gives it a persistent plan (the
  tile options', 128 x 128 x 64 on 4 warps by default) whose two compute warp groups take
  alternate tiles from one producer warp group (MatmulPlan::pingPong). --max-imprecise=N (fp8, --library)
  adds the tensor cores' partial sums into fp32 every N of K (MatmulArgs::maxImpreciseAcc).
  --sustain=SECONDS also launches the product back to back, L2 not flushed, for that long and
  prints its TFLOP/s: the rate a long run of products keeps once the GPU holds its power cap
  (the flushed timing's gaps let the clocks rise; docs/notes/tensor-cores.md, "The power cap").
)";

// The tutorial's kernel. The loads' addresses are computed from the loop's k (not carried
// pointers), so that the pipeliner can issue them num_stages - 1 iterations ahead.
// With B_KMAJOR, b's tile is read [BLOCK_N, BLOCK_K] along K and given to dot transposed.
void matmul_kernel(Ptr c_ptr, Ptr a_ptr, Ptr b_ptr, Int M, Int N, Int K, Int stride_am,
                   Int stride_ak, Int stride_bk, Int stride_bn, Int stride_cm, Int stride_cn,
                   int BLOCK_M, int BLOCK_N, int BLOCK_K, int GROUP_M, int num_stages,
                   int B_KMAJOR) {
  auto pid = program_id(0);
  auto num_pid_m = cdiv(M, BLOCK_M);
  auto num_pid_n = cdiv(N, BLOCK_N);
  auto num_pid_in_group = GROUP_M * num_pid_n;
  auto group_id = pid / num_pid_in_group;
  auto first_pid_m = group_id * GROUP_M;
  auto group_size_m = minimum(num_pid_m - first_pid_m, GROUP_M);
  auto pid_m = first_pid_m + (pid % num_pid_in_group) % group_size_m;
  auto pid_n = (pid % num_pid_in_group) / group_size_m;

  auto offs_am = pid_m * BLOCK_M + arange(0, BLOCK_M);
  auto offs_bn = pid_n * BLOCK_N + arange(0, BLOCK_N);
  auto offs_k = arange(0, BLOCK_K);
  auto accumulator = zeros({BLOCK_M, BLOCK_N}, float32);
  for (auto k : range(0, cdiv(K, BLOCK_K), 1, num_stages)) {
    auto kk = k * BLOCK_K + offs_k;
    auto a = load(a_ptr + offs_am(_, None) * stride_am + kk(None, _) * stride_ak,
                  (offs_am(_, None) < M) & (kk(None, _) < K), 0.0);
    auto b = B_KMAJOR ? trans(load(b_ptr + offs_bn(_, None) * stride_bn + kk(None, _) * stride_bk,
                                   (offs_bn(_, None) < N) & (kk(None, _) < K), 0.0))
                      : load(b_ptr + kk(_, None) * stride_bk + offs_bn(None, _) * stride_bn,
                             (kk(_, None) < K) & (offs_bn(None, _) < N), 0.0);
    accumulator = dot(a, b, accumulator);
  }
  auto c = cast(accumulator, c_ptr.dtype());
  store(c_ptr + offs_am(_, None) * stride_cm + offs_bn(None, _) * stride_cn, c,
        (offs_am(_, None) < M) & (offs_bn(None, _) < N));
}

// The same product with tensor descriptors (Triton 3's tl.make_tensor_descriptor): the tiles are
// read and C written a block at a time; on Hopper the loop's tiles are TMA copies. With
// B_KMAJOR, b is stored [N, K].
void matmul_descriptor_kernel(Ptr c_ptr, Ptr a_ptr, Ptr b_ptr, Int M, Int N, Int K, Int lda,
                              Int ldb, Int ldc, int BLOCK_M, int BLOCK_N, int BLOCK_K,
                              int GROUP_M, int num_stages, int B_KMAJOR, int WARP_SPECIALIZE) {
  auto [pid_m, pid_n] = swizzle2d(program_id(0) / cdiv(N, BLOCK_N), program_id(0) % cdiv(N, BLOCK_N),
                                  cdiv(M, BLOCK_M), cdiv(N, BLOCK_N), GROUP_M);
  auto a_desc = make_tensor_descriptor(a_ptr, {M, K}, {lda, 1}, {BLOCK_M, BLOCK_K});
  auto b_desc = B_KMAJOR ? make_tensor_descriptor(b_ptr, {N, K}, {ldb, 1}, {BLOCK_N, BLOCK_K})
                        : make_tensor_descriptor(b_ptr, {K, N}, {ldb, 1}, {BLOCK_K, BLOCK_N});
  auto c_desc = make_tensor_descriptor(c_ptr, {M, N}, {ldc, 1}, {BLOCK_M, BLOCK_N});
  auto accumulator = zeros({BLOCK_M, BLOCK_N}, float32);
  for (auto k : range(0, K, BLOCK_K, num_stages).warp_specialize(WARP_SPECIALIZE)) {
    auto b = B_KMAJOR ? trans(b_desc.load({pid_n * BLOCK_N, k})) : b_desc.load({k, pid_n * BLOCK_N});
    accumulator = dot(a_desc.load({pid_m * BLOCK_M, k}), b, accumulator);
  }
  c_desc.store({pid_m * BLOCK_M, pid_n * BLOCK_N}, cast(accumulator, c_ptr.dtype()));
}

struct Options {
  std::string dtype = "fp16";
  int64_t M = 0, N = 0, K = 0;
  // The fastest plans measured on the H200 (docs/PERF.md, "Matmul"): 128 x 256 x 64 tiles on 8
  // warps (two warp groups) with 4 stages; for a few rows (decode), 16 x 64 x 256 on 4 warps.
  int BM = 128, BN = 256, BK = 64, warps = 8, stages = 4;
  bool userPlan = false;
  bool tileGiven = false; // --tile
  std::string arch; // "": the device's, with Hopper's wgmma (sm_90a)
  bool descriptors = false;
  bool warpSpecialize = false; // --descriptors with a producer warp group for the TMA copies
  bool library = false; // kernels::matmul instead of the tutorial's kernel
  bool persistent = false; // --library: a program per SM walking tiles (MatmulPlan::persistent)
  bool streamK = false;    // --library, persistent: the SMs share the K steps (MatmulPlan::streamK)
  int splitK = 1;          // --library: programs per tile, each a slice of K (MatmulPlan::splitK)
  bool elementStores = false; // --library: C's tile by element stores (MatmulPlan::tmaStore)
  bool noSplit = false;    // --library without a workspace: no plan splits K
  int cluster = 1;         // --library: programs per cluster, B multicast (MatmulPlan::cluster)
  bool pingPong = false;   // --library: two warp groups take alternate tiles (MatmulPlan::pingPong)
  int64_t maxImpreciseAcc = 0; // --max-imprecise: fp8 partial sums into fp32 every N of K
  bool bNK = false;     // B stored [N, K] (nn.Linear's weights), as fp8 always is
  double sustainSeconds = 0; // --sustain: back-to-back launches for this long, after the timing
};

Options parseOptions(int argc, char **argv) {
  Options o;
  std::vector<int64_t> dims;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (a.rfind("--dtype=", 0) == 0) {
      o.dtype = a.substr(8);
    } else if (a.rfind("--tile=", 0) == 0) {
      if (std::sscanf(a.c_str() + 7, "%dx%dx%d", &o.BM, &o.BN, &o.BK) != 3)
        throw std::runtime_error("--tile takes BMxBNxBK, got " + a);
      o.userPlan = o.tileGiven = true;
    } else if (a.rfind("--warps=", 0) == 0) {
      o.warps = std::atoi(a.c_str() + 8);
    } else if (a.rfind("--stages=", 0) == 0) {
      o.stages = std::atoi(a.c_str() + 9);
    } else if (a == "--descriptors") {
      o.descriptors = true;
    } else if (a == "--warp-specialize") {
      o.descriptors = o.warpSpecialize = true;
    } else if (a == "--library") {
      o.library = true;
    } else if (a == "--persistent") {
      o.library = o.persistent = o.userPlan = true;
    } else if (a == "--stream-k") {
      o.library = o.persistent = o.streamK = o.userPlan = true;
    } else if (a.rfind("--split-k=", 0) == 0) {
      o.splitK = std::atoi(a.c_str() + 10);
      o.library = o.userPlan = true;
    } else if (a == "--element-stores") {
      o.library = o.elementStores = o.userPlan = true;
    } else if (a.rfind("--cluster=", 0) == 0) {
      o.cluster = std::atoi(a.c_str() + 10);
      o.library = o.userPlan = true;
    } else if (a == "--ping-pong") {
      o.library = o.persistent = o.warpSpecialize = o.descriptors = o.pingPong = o.userPlan = true;
    } else if (a == "--no-split") {
      o.library = o.noSplit = true;
    } else if (a.rfind("--max-imprecise=", 0) == 0) {
      o.maxImpreciseAcc = std::atoll(a.c_str() + 16);
      o.library = true;
    } else if (a.rfind("--sustain=", 0) == 0) {
      o.sustainSeconds = std::atof(a.c_str() + 10);
      if (!(o.sustainSeconds > 0 && o.sustainSeconds <= 600))
        throw std::runtime_error("--sustain takes seconds in (0, 600], got " + a);
    } else if (a == "--b-nk") {
      o.bNK = true;
    } else if (a.rfind("--arch=", 0) == 0) {
      o.arch = a.substr(7);
    } else if (!a.empty() && a[0] != '-') {
      dims.push_back(std::atoll(a.c_str()));
    } else {
      throw std::runtime_error("unknown option " + a + "\n" + kUsage);
    }
  }
  if (o.dtype != "fp16" && o.dtype != "bf16" && o.dtype != "fp8e4m3")
    throw std::runtime_error("--dtype takes fp16, bf16 or fp8e4m3, got " + o.dtype);
  if (!dims.empty() && dims.size() != 3)
    throw std::runtime_error(std::string("give M N K, or nothing\n") + kUsage);
  if (dims.size() == 3) {
    o.M = dims[0];
    o.N = dims[1];
    o.K = dims[2];
    if (o.M <= 0 || o.N <= 0 || o.K <= 0)
      throw std::runtime_error("M, N and K must be positive");
  }
  return o;
}

// Random values in the dtype: the bytes and the values they hold.
struct HostMatrix {
  std::vector<unsigned char> raw;
  std::vector<float> values;
};

bool isFp8(const std::string &dtype) { return dtype == "fp8e4m3"; }
// C's dtype: bf16 for fp8 operands (as torch._scaled_mm's out_dtype), A's otherwise.
std::string outDtype(const std::string &dtype) { return isFp8(dtype) ? "bf16" : dtype; }

HostMatrix randomMatrix(int64_t n, const std::string &dtype, std::mt19937 &rng) {
  HostMatrix m;
  int bytes = isFp8(dtype) ? 1 : 2;
  m.raw.resize(size_t(n) * size_t(bytes));
  m.values.resize(size_t(n));
  std::normal_distribution<float> dist(0.f, 1.f);
  for (int64_t i = 0; i < n; ++i) {
    unsigned char *p = m.raw.data() + i * bytes;
    if (isFp8(dtype)) {
      *p = ir::toFp8(dist(rng), ir::ScalarKind::F8E4M3);
      m.values[size_t(i)] = float(ir::fromFp8(*p, ir::ScalarKind::F8E4M3));
    } else {
      kernels::storeElement(dtype, dist(rng), p);
      m.values[size_t(i)] = kernels::loadElement(dtype, p);
    }
  }
  return m;
}

template <typename Buffer>
bool run(const Options &o, Kernel &mm, const Specialization &spec, CUstream stream,
         const std::function<void()> &sync, bool time) {
  CompiledKernel &k = mm.compile(spec); // in the interpreter when interpreting() is set
  std::mt19937 rng(std::random_device{}());
  // b is held [K, N], or [N, K] for fp8 (K-major): values[k * N + n] or values[n * K + k].
  HostMatrix a = randomMatrix(o.M * o.K, o.dtype, rng), b = randomMatrix(o.K * o.N, o.dtype, rng);
  bool kMajor = isFp8(o.dtype) || o.bNK;
  std::string cType = outDtype(o.dtype);
  Buffer da(a.raw.size()), db(b.raw.size()), dc(size_t(o.M * o.N) * 2);
  da.upload(a.raw.data(), a.raw.size());
  db.upload(b.raw.data(), b.raw.size());
  dc.fill32(kernels::kPoisonBits);
  int64_t grid = ((o.M + o.BM - 1) / o.BM) * ((o.N + o.BN - 1) / o.BN);
  kernels::MatmulPlan plan{.blockM = o.BM, .blockN = o.BN, .blockK = o.BK,
                           .numWarps = o.warps, .numStages = o.stages,
                           .warpSpecialize = o.warpSpecialize, .persistent = o.persistent,
                           .splitK = o.splitK, .streamK = o.streamK,
                           .tmaStore = !o.elementStores, .cluster = o.cluster,
                           .pingPong = o.pingPong};
  // The library's call, with a workspace for what its plans for this shape may split K into
  // (or the given plan's split) unless --no-split.
  auto dtype = [](const std::string &d) {
    return d == "fp8e4m3" ? kernels::Dtype::fp8e4m3
           : d == "bf16"  ? kernels::Dtype::bf16
                          : kernels::Dtype::fp16;
  };
  auto address = [](const Buffer &buf) {
    return reinterpret_cast<void *>(uintptr_t(KernelArg(buf).ptr()));
  };
  kernels::MatmulArgs library{.c = address(dc), .a = address(da), .b = address(db), .M = o.M,
                              .N = o.N, .K = o.K, .bTransposed = kMajor, .in = dtype(o.dtype),
                              .out = dtype(cType), .maxImpreciseAcc = o.maxImpreciseAcc};
  int64_t workspaceBytes = std::max(kernels::matmulWorkspaceBytes(library),
                                    kernels::matmulWorkspaceBytes(library, plan));
  Buffer workspace(size_t(std::max<int64_t>(workspaceBytes, 4)));
  if (!o.noSplit) {
    library.workspace = address(workspace);
    library.workspaceBytes = workspaceBytes;
  }
  auto launch = [&] {
    int32_t ldb = int32_t(kMajor ? o.K : o.N);
    if (o.library) {
      kernels::matmul(library, stream, o.userPlan ? &plan : nullptr);
    } else if (o.descriptors)
      k.launch(grid, stream,
               {dc, da, db, int32_t(o.M), int32_t(o.N), int32_t(o.K), int32_t(o.K), ldb,
                int32_t(o.N)});
    else if (kMajor) // b[k][n] at b + n * K + k
      k.launch(grid, stream,
               {dc, da, db, int32_t(o.M), int32_t(o.N), int32_t(o.K), int32_t(o.K), 1, 1,
                int32_t(o.K), int32_t(o.N), 1});
    else
      k.launch(grid, stream,
               {dc, da, db, int32_t(o.M), int32_t(o.N), int32_t(o.K), int32_t(o.K), 1,
                int32_t(o.N), 1, int32_t(o.N), 1});
  };
  launch();
  sync();
  std::vector<unsigned char> raw(size_t(o.M * o.N) * 2);
  dc.download(raw.data(), raw.size());
  // Sampled rows (every row of a small product), each element against a double reference.
  std::vector<int64_t> rows;
  for (int64_t r = 0; r < o.M; r += std::max<int64_t>(1, o.M / 48))
    rows.push_back(r);
  rows.push_back(o.M - 1);
  // Sampled columns too where the rows' products would take the host more than seconds.
  int64_t columnStep = std::max<int64_t>(1, int64_t(rows.size()) * o.N * o.K >> 28);
  int64_t bad = 0, checked = 0;
  double tol = (cType == "bf16" ? 8e-3 : 1e-3) * std::sqrt(double(o.K));
  for (int64_t r : rows)
    for (int64_t n = 0; n < o.N; n += columnStep) {
      double want = 0, magnitude = 0;
      for (int64_t kk = 0; kk < o.K; ++kk) {
        double p = double(a.values[size_t(r * o.K + kk)]) *
                   b.values[kMajor ? size_t(n * o.K + kk) : size_t(kk * o.N + n)];
        want += p;
        magnitude += std::fabs(p);
      }
      double got = kernels::loadElement(cType, raw.data() + (r * o.N + n) * 2);
      ++checked;
      // Hopper's tensor cores sum fp8 products with fewer bits than fp32 (Triton's default
      // for fp8 dots too): an error that grows with the products' magnitudes (tests/DotCases.h).
      double fp8Sum = isFp8(o.dtype) ? magnitude / 4096 : 0;
      if (!(std::fabs(got - want) <= tol + fp8Sum + 1e-2 * std::fabs(want)) && bad++ < 5)
        std::printf("  C[%lld, %lld] = %g, want %g\n", (long long)r, (long long)n, got, want);
    }
  std::printf("%s %lld x %lld x %lld: %lld of %lld sampled elements wrong\n", o.dtype.c_str(),
              (long long)o.M, (long long)o.N, (long long)o.K, (long long)bad,
              (long long)checked);
  if (time) {
    // As the peers' scripts time theirs: about 200 ms of flushed runs after 25 of warm-up.
    double t = kernels::benchmarkLaunches(stream, launch);
    if (o.library && !o.userPlan)
      std::printf("  %.3f ms, %.1f TFLOP/s (library, its own plan%s)\n", t,
                  2.0 * double(o.M) * double(o.N) * double(o.K) / (t * 1e9),
                  o.noSplit ? ", no workspace" : "");
    else {
      std::string form = o.library && o.cluster > 1
                             ? std::string(", library") + (o.persistent ? ", persistent" : "") +
                                   ", clusters of " + std::to_string(o.cluster) + ", B multicast"
                         : o.library && o.pingPong ? std::string(", library, persistent, ping-pong")
                         : o.library && o.splitK > 1 ? ", library, split-K " + std::to_string(o.splitK)
                         : o.library && o.elementStores && o.persistent ? ", library, persistent, element stores"
                         : o.library && o.elementStores       ? ", library, element stores"
                         : o.library && o.streamK             ? ", library, stream-K"
                         : o.library && o.persistent          ? ", library, persistent"
                         : o.library                          ? ", library"
                         : !o.descriptors                     ? ""
                         : k.artifacts().tensorMaps.empty()   ? ", descriptors"
                                                              : ", descriptors, TMA";
      std::printf("  %.3f ms, %.1f TFLOP/s (tiles %dx%dx%d, %d warps, %d stages, %s%s)\n", t,
                  2.0 * double(o.M) * double(o.N) * double(o.K) / (t * 1e9), o.BM, o.BN, o.BK,
                  o.warps, o.stages, spec.arch.c_str(), form.c_str());
    }
    if (o.sustainSeconds > 0) {
      // Back to back, as a long run of products: the caches keep what the last launch left,
      // and the GPU's clocks settle under its power cap.
      rt::Event start, end;
      start.record(stream);
      auto began = std::chrono::steady_clock::now();
      int64_t launches = 0;
      while (std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count() <
             o.sustainSeconds) {
        for (int i = 0; i < 20; ++i)
          launch();
        launches += 20;
        end.record(stream);
        end.msSince(start); // waits, so that the host does not run ahead of the GPU
      }
      double ms = double(end.msSince(start)) / double(launches);
      std::printf("  sustained %.1f s: %.3f ms, %.1f TFLOP/s (%lld launches back to back)\n",
                  o.sustainSeconds, ms,
                  2.0 * double(o.M) * double(o.N) * double(o.K) / (ms * 1e9),
                  (long long)launches);
    }
  }
  return bad == 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    Options o = parseOptions(argc, argv);
    std::string why;
    bool gpu = !interpreting() && rt::Driver::available(&why);
    if (!gpu && o.M == 0) { // the interpreter takes seconds on this size
      o.M = 200, o.N = 136, o.K = 300, o.BM = 64, o.BN = 64, o.BK = 32, o.warps = 4;
    } else if (o.M == 0) {
      o.M = o.N = o.K = 4096;
    }
    if (o.streamK && !o.tileGiven) // 128 x 256 tiles spill there (MatmulPlan::streamK)
      o.BN = 128;
    if (o.pingPong) { // a warp group a tile (MatmulPlan::pingPong)
      o.warps = 4;
      if (!o.tileGiven)
        o.BN = 128;
    }
    if (gpu && !o.userPlan) { // the library's planner (kernels/MatmulPlan.h)
      kernels::Dtype in = isFp8(o.dtype)       ? kernels::Dtype::fp8e4m3
                          : o.dtype == "bf16" ? kernels::Dtype::bf16
                                              : kernels::Dtype::fp16;
      kernels::MatmulPlan p = kernels::planMatmul(
          o.M, o.N, o.K, rt::Context::current().props().smCount, {.in = in});
      // (A persistent plan's ring leaves room for C's staging; the tutorial's kernel keeps 4.)
      o.BM = p.blockM, o.BN = p.blockN, o.BK = p.blockK, o.warps = p.numWarps,
      o.stages = p.persistent ? std::max(p.numStages, 4) : p.numStages;
      while (o.BK > 16 && o.K < o.BK) // K steps of 128 bytes of each row, unless K is shorter
        o.BK /= 2;
    }
    auto tutorial = kernel("matmul_kernel", matmul_kernel,
                           {"c_ptr", "a_ptr", "b_ptr", "M", "N", "K", "stride_am", "stride_ak",
                            "stride_bk", "stride_bn", "stride_cm", "stride_cn", "BLOCK_M",
                            "BLOCK_N", "BLOCK_K", "GROUP_M", "num_stages", "B_KMAJOR"});
    auto withDescriptors =
        kernel("matmul_descriptor_kernel", matmul_descriptor_kernel,
               {"c_ptr", "a_ptr", "b_ptr", "M", "N", "K", "lda", "ldb", "ldc", "BLOCK_M",
                "BLOCK_N", "BLOCK_K", "GROUP_M", "num_stages", "B_KMAJOR", "WARP_SPECIALIZE"});
    Kernel &mm = o.descriptors ? static_cast<Kernel &>(withDescriptors) : tutorial;
    // As Triton specializes its launch: 16-byte aligned pointers, integers divisible by 16
    // (":16") and unit strides (":1", so that the tiles' loads are 16-byte vectors).
    std::string p = "*" + o.dtype + ":16", pc = "*" + outDtype(o.dtype) + ":16";
    auto div16 = [](int64_t v) { return std::string(v % 16 == 0 ? "i32:16" : "i32"); };
    bool kMajor = isFp8(o.dtype) || o.bNK;
    Specialization spec{.signature = {pc, p, p, div16(o.M), div16(o.N), div16(o.K), div16(o.K),
                                      "i32:1", kMajor ? "i32:1" : div16(o.N),
                                      kMajor ? div16(o.K) : "i32:1", div16(o.N), "i32:1"},
                        .constexprs = {o.BM, o.BN, o.BK, 8, o.stages, kMajor ? 1 : 0},
                        .numWarps = o.warps};
    if (isFp8(o.dtype))
      spec.ptxVersion = 84; // fp8 on mma.sync (where wgmma does not take the tiles)
    if (o.descriptors) {
      spec.constexprs.push_back(o.warpSpecialize ? 1 : 0);
      spec.signature = {pc, p, p, div16(o.M), div16(o.N), div16(o.K), div16(o.K),
                        div16(kMajor ? o.K : o.N), div16(o.N)};
    }
    // Hopper's tensor cores are fastest through wgmma, which only the architecture-specific
    // target sm_90a has (its code runs on sm_90 alone).
    spec.arch = !o.arch.empty() ? o.arch
                : gpu && rt::Context::current().props().arch() != "sm_90"
                    ? rt::Context::current().props().arch()
                    : "sm_90a";
    CompiledKernel &k = mm.compile(spec);
    std::printf("compiled %s (%s): %s\n", k.metadata().name.c_str(),
                k.metadata().fromCache ? "from the disk cache" : "fresh",
                k.metadata().cacheDir.string().c_str());
    if (!gpu) {
      if (!interpreting())
        std::printf("no usable GPU on this machine (%s): the kernel was compiled to PTX and "
                    "cached, and now runs in the interpreter instead.\n",
                    why.c_str());
      setInterpret(true);
      bool ok = run<interpreter::HostBuffer>(o, mm, spec, nullptr, [] {}, false);
      std::printf(ok ? "all sampled results match the reference (interpreter)\n"
                     : "MISMATCH against the reference (interpreter)\n");
      return ok ? 0 : 1;
    }
    std::printf("device: %s (%s, %d SMs)\n", rt::Context::current().props().name.c_str(),
                rt::Context::current().props().arch().c_str(),
                rt::Context::current().props().smCount);
    rt::Stream stream;
    bool ok = run<rt::DeviceBuffer>(o, mm, spec, stream.get(), [&] { stream.sync(); }, true);
    std::printf(ok ? "all sampled results match the reference\n"
                   : "MISMATCH against the reference\n");
    return ok ? 0 : 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
