// Row cumsums on the GPU, for docs/PERF.md: out[r, :] = cumsum(x[r, :]) of an M x N matrix
// (fp32 or i32), BM rows per program, the scan in registers (codegen/LowerScan.cpp). Prints
// CSV rows kernel,dtype,MxN,system,ms,GB/s (bytes read + written), the median of 30 timed
// runs after 5, each after an L2 flush, beside a device-to-device copy of the same bytes; each
// result is checked against a host scan first (fp32 in double, within 1e-4 relative to the
// row's sum of magnitudes; i32 exactly, wrapping).
//
// With --long N ..., the library's long 1-D cumsum (kernels/Cumsum.h) of N fp32 elements
// instead, rows "cumsum1d,fp32,N,tritium|copy,ms,GB/s", checked the same way at sampled
// positions.
//
// usage: bench_scan [M N BM ...]   (default: 65536 2048 16, then 16384 8192 4)
//        bench_scan --long N ...
#include "frontend/Tritium.h"
#include "kernels/Autotuner.h"
#include "kernels/Cumsum.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

using namespace tritium;
using namespace tritium::dsl;

namespace {

void cumsum_rows(Ptr out, Ptr x, Int M, int N, int BM) {
  auto rows = program_id(0) * BM + arange(0, BM);
  auto cols = arange(0, N);
  auto offs = rows(_, None) * N + cols(None, _);
  auto inside = rows(_, None) < M;
  store(out + offs, cumsum(load(x + offs, inside, 0), 1), inside);
}

// Median ms of `f` over 30 repetitions after 5 warm-ups, L2 flushed before each.
double medianMs(CUstream stream, const std::function<void()> &f) {
  return kernels::timeLaunches(stream, f, 30, 5);
}

bool run(CUstream stream, const std::string &dtype, int64_t M, int N, int BM) {
  size_t n = size_t(M) * size_t(N), bytes = n * 4;
  std::mt19937 rng(1234);
  std::vector<uint32_t> host(n);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int32_t> ints(-1000, 1000);
  for (auto &v : host) {
    if (dtype == "fp32") {
      float f = normal(rng);
      std::memcpy(&v, &f, 4);
    } else {
      v = uint32_t(ints(rng));
    }
  }
  rt::DeviceBuffer x(bytes), out(bytes);
  x.upload(host.data(), bytes);
  out.fill32(0x7fc00001u);
  auto k = kernel("cumsum_rows", cumsum_rows, {"out", "x", "M", "N", "BM"});
  std::string p = "*" + dtype + ":16";
  std::initializer_list<KernelArg> args = {out, x, M};
  CompiledKernel &ck = k.compile(Specialization{.signature = {p, p, "i32"},
                                                .constexprs = {N, BM},
                                                .numWarps = 8}
                                     .specializedFor(args));
  int64_t grid = (M + BM - 1) / BM;
  ck.launch(grid, stream, args);
  TRITIUM_CU(cuStreamSynchronize(stream));
  std::vector<uint32_t> got(n);
  out.download(got.data(), bytes);
  int64_t bad = 0;
  for (int64_t r = 0; r < M; r += std::max<int64_t>(1, M / 64))
    for (int c = 0; c < N; ++c) {
      double want = 0, magnitude = 0;
      int32_t iwant = 0;
      for (int j = 0; j <= c; ++j) {
        uint32_t v = host[size_t(r) * N + j];
        float f;
        std::memcpy(&f, &v, 4);
        want += f;
        magnitude += std::fabs(f);
        iwant = int32_t(uint32_t(iwant) + v);
      }
      uint32_t g = got[size_t(r) * N + c];
      float gf;
      std::memcpy(&gf, &g, 4);
      bool ok = dtype == "fp32" ? std::fabs(gf - want) <= 1e-4 * (1 + magnitude)
                                : int32_t(g) == iwant;
      if (!ok && bad++ < 3)
        std::fprintf(stderr, "  [%lld, %d] wrong\n", (long long)r, c);
    }
  if (bad) {
    std::printf("scan,%s,%lldx%d,tritium,FAILED,%lld wrong\n", dtype.c_str(), (long long)M, N,
                (long long)bad);
    return false;
  }
  double t = medianMs(stream, [&] { ck.launch(grid, stream, args); });
  rt::DeviceBuffer to(bytes);
  double c = medianMs(stream, [&] {
    TRITIUM_CU(cuMemcpyDtoDAsync(to.ptr(), x.ptr(), bytes, stream));
  });
  std::printf("scan,%s,%lldx%d,tritium,%.5f,%.1f\n", dtype.c_str(), (long long)M, N, t,
              2.0 * double(bytes) / (t * 1e6));
  std::printf("scan,%s,%lldx%d,copy,%.5f,%.1f\n", dtype.c_str(), (long long)M, N, c,
              2.0 * double(bytes) / (c * 1e6));
  return true;
}

// kernels::cumsum of n fp32 elements, then a copy of as many bytes.
bool runLong(CUstream stream, int64_t n) {
  std::mt19937 rng(static_cast<unsigned>(n));
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> host(static_cast<size_t>(n), 0.0f);
  for (float &v : host)
    v = dist(rng);
  size_t bytes = size_t(n) * 4;
  rt::DeviceBuffer x(bytes), out(bytes), ws(size_t(kernels::cumsumWorkspaceBytes(n)));
  x.upload(host.data(), bytes);
  auto call = [&] {
    kernels::cumsum(kernels::Dtype::fp32, reinterpret_cast<void *>(uintptr_t(out.ptr())),
                    reinterpret_cast<void *>(uintptr_t(x.ptr())), n,
                    reinterpret_cast<void *>(uintptr_t(ws.ptr())),
                    kernels::cumsumWorkspaceBytes(n), stream);
  };
  call();
  TRITIUM_CU(cuStreamSynchronize(stream));
  std::vector<float> got(static_cast<size_t>(n));
  out.download(got.data(), bytes);
  int64_t bad = 0;
  double want = 0, magnitude = 0;
  for (int64_t i = 0; i < n; ++i) {
    want += host[size_t(i)];
    magnitude += std::fabs(host[size_t(i)]);
    if ((i % 4099 == 0 || i == n - 1) &&
        std::fabs(got[size_t(i)] - want) > 1e-5 * (1 + magnitude) && bad++ < 3)
      std::fprintf(stderr, "  [%lld] wrong: %g, want %g\n", (long long)i, got[size_t(i)], want);
  }
  if (bad) {
    std::printf("cumsum1d,fp32,%lld,tritium,FAILED,%lld wrong\n", (long long)n, (long long)bad);
    return false;
  }
  double t = medianMs(stream, call);
  rt::DeviceBuffer to(bytes);
  double c = medianMs(stream, [&] {
    TRITIUM_CU(cuMemcpyDtoDAsync(to.ptr(), x.ptr(), bytes, stream));
  });
  std::printf("cumsum1d,fp32,%lld,tritium,%.5f,%.1f\n", (long long)n, t,
              2.0 * double(bytes) / (t * 1e6));
  std::printf("cumsum1d,fp32,%lld,copy,%.5f,%.1f\n", (long long)n, c,
              2.0 * double(bytes) / (c * 1e6));
  return true;
}

} // namespace

int main(int argc, char **argv) {
  try {
    bool flat = argc > 1 && std::string(argv[1]) == "--long";
    std::vector<int64_t> sizes = flat ? std::vector<int64_t>{}
                                      : std::vector<int64_t>{65536, 2048, 16, 16384, 8192, 4};
    if (argc > (flat ? 2 : 1)) {
      sizes.clear();
      for (int i = flat ? 2 : 1; i < argc; ++i)
        sizes.push_back(std::atoll(argv[i]));
    }
    if (!flat && sizes.size() % 3 != 0)
      throw std::runtime_error("give M N BM triples");
    std::string why;
    if (!rt::Driver::available(&why)) {
      std::printf("no usable GPU (%s): nothing to time\n", why.c_str());
      return 0;
    }
    rt::Stream stream;
    bool ok = true;
    if (flat)
      for (int64_t n : sizes)
        ok = runLong(stream.get(), n) && ok;
    else
      for (size_t i = 0; i + 2 < sizes.size(); i += 3)
        for (const char *dtype : {"fp32", "i32"})
          ok = run(stream.get(), dtype, sizes[i], int(sizes[i + 1]), int(sizes[i + 2])) && ok;
    return ok ? 0 : 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
