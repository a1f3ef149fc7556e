// The first call of each kernel-library kernel in this process, timed on the host from the call
// to the end of its work on the GPU: with an empty cache that is the cold compile (trace, passes,
// LLVM, ptxas or the driver's JIT), the module load and the launch; with a warm cache, reading
// the entry, the load and the launch. Run it twice on one TRITIUM_CACHE_DIR (first empty) for
// both figures, and the host's time per call once the kernel is loaded. The driver context and the buffers are made first, and one unrelated kernel is
// compiled first so that LLVM's one-time set-up is reported on its own line.
//
//   bench_kernel_first_calls [--autotune] [--rows=M] [--cols=N]
#include "frontend/Tritium.h"
#include "kernels/CrossEntropy.h"
#include "kernels/Elementwise.h"
#include "kernels/Norms.h"
#include "kernels/SoftmaxPlan.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using namespace tritium;
namespace k = tritium::kernels;
using Clock = std::chrono::steady_clock;

namespace {

void warmUpKernel(dsl::Ptr out, int BLOCK) {
  auto offs = dsl::arange(0, BLOCK);
  dsl::store(out + offs, dsl::cast(offs, dsl::float32));
}

} // namespace

int main(int argc, char **argv) {
  bool autotune = false;
  int64_t M = 4096, N = 8192;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--autotune")
      autotune = true;
    else if (a.rfind("--rows=", 0) == 0)
      M = std::atoll(a.c_str() + 7);
    else if (a.rfind("--cols=", 0) == 0)
      N = std::atoll(a.c_str() + 7);
    else {
      std::fprintf(stderr, "usage: bench_kernel_first_calls [--autotune] [--rows=M] [--cols=N]\n");
      return 2;
    }
  }
  if (M < 1 || N < 1) {
    std::fprintf(stderr, "bench_kernel_first_calls: --rows and --cols must be positive\n");
    return 2;
  }
  try {
    k::setAutotune(autotune);
    rt::Context &ctx = rt::Context::current();
    rt::Stream stream;
    CUstream s = stream.get();
    size_t n = size_t(M * N), bytes = n * 2;
    rt::DeviceBuffer x(bytes), y(bytes), dy(bytes), dx(bytes), w(size_t(N) * 2), b(size_t(N) * 2),
        dw(size_t(N) * 2), db(size_t(N) * 2), mean(size_t(M) * 4), rstd(size_t(M) * 4),
        loss(size_t(M) * 4), lse(size_t(M) * 4), stats(8), targets(size_t(M) * 8);
    for (rt::DeviceBuffer *buf : {&x, &dy, &w, &b})
      buf->fill32(0x3c003c00u); // finite bf16 values (0.0078125): only the timing matters
    targets.fill32(0);
    size_t wsBytes =
        std::max(k::layerNormBackwardWorkspaceBytes(M, N), k::rmsNormBackwardWorkspaceBytes(M, N));
    rt::DeviceBuffer ws(wsBytes);
    stream.sync();
    auto ms = [](Clock::time_point a) {
      return std::chrono::duration<double, std::milli>(Clock::now() - a).count();
    };
    auto warm = tritium::kernel("first_calls_warm_up", warmUpKernel, {"out", "BLOCK"});
    auto t0 = Clock::now();
    warm.compile({.signature = {"*fp32"}, .constexprs = {128}}).launch(1, s, {y});
    stream.sync();
    std::printf("device %s, %lld x %lld bf16, autotune %s\n", ctx.props().name.c_str(),
                (long long)M, (long long)N, autotune ? "on" : "off");
    std::printf("%-24s %9.2f ms (LLVM and the first module: once per process)\n", "warm-up kernel",
                ms(t0));

    auto p = [](const rt::DeviceBuffer &buf) { return reinterpret_cast<void *>(buf.ptr()); };
    auto f = [](const rt::DeviceBuffer &buf) { return reinterpret_cast<float *>(buf.ptr()); };
    const auto bf16 = k::Dtype::bf16;
    std::vector<std::pair<const char *, std::function<void()>>> calls = {
        {"vector_add", [&] { k::vectorAdd(bf16, p(y), p(x), p(dy), int64_t(n), s); }},
        {"dropout", [&] { k::dropout(bf16, p(y), p(x), int64_t(n), 0.1, 42, s); }},
        {"layer_norm_forward",
         [&] {
           k::layerNormForward(bf16,
                               {.y = p(y),
                                .mean = f(mean),
                                .rstd = f(rstd),
                                .x = p(x),
                                .weight = p(w),
                                .bias = p(b),
                                .rows = M,
                                .cols = N},
                               s);
         }},
        {"layer_norm_backward",
         [&] {
           k::layerNormBackward(bf16,
                                {.dx = p(dx),
                                 .dweight = p(dw),
                                 .dbias = p(db),
                                 .dy = p(dy),
                                 .x = p(x),
                                 .weight = p(w),
                                 .mean = f(mean),
                                 .rstd = f(rstd),
                                 .rows = M,
                                 .cols = N,
                                 .workspace = p(ws),
                                 .workspaceBytes = wsBytes},
                                s);
         }},
        {"rms_norm_forward",
         [&] {
           k::rmsNormForward(
               bf16, {.y = p(y), .rstd = f(rstd), .x = p(x), .weight = p(w), .rows = M, .cols = N},
               s);
         }},
        {"rms_norm_backward",
         [&] {
           k::rmsNormBackward(bf16,
                              {.dx = p(dx),
                               .dweight = p(dw),
                               .dy = p(dy),
                               .x = p(x),
                               .weight = p(w),
                               .rstd = f(rstd),
                               .rows = M,
                               .cols = N,
                               .workspace = p(ws),
                               .workspaceBytes = wsBytes},
                              s);
         }},
        {"cross_entropy_forward",
         [&] {
           k::crossEntropyForward(bf16,
                                  {.loss = f(loss),
                                   .lse = f(lse),
                                   .stats = f(stats),
                                   .logits = p(x),
                                   .targets = reinterpret_cast<int64_t *>(targets.ptr()),
                                   .rows = M,
                                   .vocab = N},
                                  s);
         }},
        {"cross_entropy_backward",
         [&] {
           k::crossEntropyBackward(bf16,
                                   {.dlogits = p(dx),
                                    .logits = p(x),
                                    .targets = reinterpret_cast<int64_t *>(targets.ptr()),
                                    .lse = f(lse),
                                    .stats = f(stats),
                                    .rows = M,
                                    .vocab = N},
                                   s);
         }},
        {"softmax_forward",
         [&] {
           k::softmaxForward(k::planSoftmax(N, "bf16"), "bf16", y, x, {M, N}, N, N, s);
         }},
        {"softmax_backward",
         [&] {
           k::softmaxBackward(k::planSoftmaxBackward(N, "bf16"), "bf16", dx, y, dy, {M, N}, N, N, N,
                              s);
         }},
    };
    double worst = 0;
    for (auto &[name, call] : calls) {
      auto t = Clock::now();
      call();
      stream.sync();
      double first = ms(t);
      t = Clock::now();
      call();
      stream.sync();
      double second = ms(t);
      // The host's cost of a call: 100 calls enqueued back to back (fewer launches than the
      // driver's queue holds, so none waits for the GPU), timed on the host.
      t = Clock::now();
      for (int i = 0; i < 100; ++i)
        call();
      double hostUs = ms(t) * 1000 / 100;
      stream.sync();
      worst = std::max(worst, first);
      std::printf("%-24s %9.2f ms first call, %7.3f ms second, %6.2f us host per call\n", name,
                  first, second, hostUs);
    }
    std::printf("slowest first call %.2f ms\n", worst);
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "bench_kernel_first_calls: %s\n", e.what());
    return 1;
  }
}
