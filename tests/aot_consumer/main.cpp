// A program that ships tritium's ahead-of-time softmax and needs only the CUDA driver: no
// libtritium, no LLVM, no cache folder. It is built from files `tritiumc --emit=aot` wrote
// (tools/ci-aot.sh, or the CMake rules beside this file) and linked against libcuda alone.
//
// Without a GPU (CI links the driver's stub): checks that the launchers refuse arguments that do
// not fit their specialization, naming the argument, then prints "no GPU: <reason>" and exits 0.
// With a GPU: launches the single-variant softmax and the dispatcher (fp32 and fp16, two row
// buckets) on fresh random inputs over poisoned outputs, from one thread and then from two at
// once, and checks every element against a double-precision reference; on a Hopper GPU also
// the descriptor kernel tiled_scale, whose launcher encodes its TMA tensor maps; exits 1 on
// any mismatch.
#include "softmax_any.h"
#include "softmax_fp32_1024.h"
#include "tiled_scale.h"

#include <cuda.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

std::atomic<int> failures{0};

void expect(bool ok, const std::string &what) {
  if (!ok) {
    std::printf("FAILED: %s\n", what.c_str());
    ++failures;
  }
}

std::string errorName(CUresult r) {
  if (r == CUDA_ERROR_STUB_LIBRARY) // the stub cannot name its own errors
    return "CUDA_ERROR_STUB_LIBRARY (the toolkit's stub libcuda, not a driver)";
  const char *name = nullptr;
  if (cuGetErrorName(r, &name) == CUDA_SUCCESS && name)
    return name;
  return "CUresult " + std::to_string(int(r));
}

bool contains(const char *text, const char *needle) { return std::strstr(text, needle) != nullptr; }

// The launchers check their arguments before they touch the driver: these run anywhere.
void checkRefusals() {
  // A pointer that is not 16-byte aligned for an argument marked "*fp32:16".
  CUresult r = softmax_fp32_1024(nullptr, 4, CUdeviceptr(0x1004), CUdeviceptr(0x2000), 1024, 1024,
                                 4, 1024);
  expect(r == CUDA_ERROR_INVALID_VALUE, "a misaligned output is refused (" + errorName(r) + ")");
  expect(contains(softmax_fp32_1024_last_error(), "argument 0 ('output_ptr')") &&
             contains(softmax_fp32_1024_last_error(), "16-byte aligned"),
         std::string("the message names output_ptr: ") + softmax_fp32_1024_last_error());
  std::printf("refused as it should: %s\n", softmax_fp32_1024_last_error());
  // A row length that is not divisible by 16 ("i32:16") and one longer than the block.
  r = softmax_fp32_1024(nullptr, 4, 0x1000, 0x2000, 1024, 1024, 4, 1000);
  expect(r == CUDA_ERROR_INVALID_VALUE &&
             contains(softmax_fp32_1024_last_error(), "('n_cols') was specialized as divisible"),
         std::string("n_cols 1000 is refused: ") + softmax_fp32_1024_last_error());
  r = softmax_fp32_1024(nullptr, 4, 0x1000, 0x2000, 2048, 2048, 4, 2048);
  expect(r == CUDA_ERROR_INVALID_VALUE &&
             contains(softmax_fp32_1024_last_error(), "n_cols <= 1024"),
         std::string("n_cols 2048 is refused: ") + softmax_fp32_1024_last_error());
  // The dispatcher: no variant for bf16, none for rows longer than 4096.
  r = softmax_any(nullptr, 4, "bf16", 0x1000, 0x2000, 1024, 1024, 4, 1024);
  expect(r == CUDA_ERROR_INVALID_VALUE && contains(softmax_any_last_error(), "no variant fits") &&
             contains(softmax_any_last_error(), "dtype is 'bf16', not 'fp16'"),
         std::string("bf16 is refused: ") + softmax_any_last_error());
  r = softmax_any(nullptr, 4, "fp32", 0x1000, 0x2000, 8192, 8192, 4, 8192);
  expect(r == CUDA_ERROR_INVALID_VALUE && contains(softmax_any_last_error(), "n_cols <= 4096"),
         std::string("8192 columns are refused: ") + softmax_any_last_error());
  std::printf("refused as it should: %s\n", softmax_any_last_error());
  // The descriptor kernel: its tensor maps need 16-byte bases and rows ("*fp32:16", "i32:16").
  r = tiled_scale(nullptr, 4, 0x1000, 0x2004, 100, 256);
  expect(r == CUDA_ERROR_INVALID_VALUE && contains(tiled_scale_last_error(), "('in')") &&
             contains(tiled_scale_last_error(), "16-byte aligned"),
         std::string("a misaligned input is refused: ") + tiled_scale_last_error());
  r = tiled_scale(nullptr, 4, 0x1000, 0x2000, 100, 100);
  expect(r == CUDA_ERROR_INVALID_VALUE &&
             contains(tiled_scale_last_error(), "('cols') was specialized as divisible"),
         std::string("cols 100 is refused: ") + tiled_scale_last_error());
  std::printf("refused as it should: %s\n", tiled_scale_last_error());
}

// IEEE half <-> float, round to nearest even (the host has no _Float16 we may rely on).
uint16_t toHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000, mag = x & 0x7fffffff;
  if (mag >= 0x47800000) // overflow, inf, nan
    return uint16_t(sign | (mag > 0x7f800000 ? 0x7e00 : 0x7c00));
  if (mag < 0x38800000) { // subnormal half
    float v;
    uint32_t m = mag;
    std::memcpy(&v, &m, 4);
    return uint16_t(sign | uint16_t(std::nearbyint(v * 16777216.0f)));
  }
  uint32_t h = ((mag - 0x38000000) >> 13);
  uint32_t rest = mag & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
    ++h;
  return uint16_t(sign | h);
}

float fromHalf(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v;
  if (exp == 0)
    v = std::ldexp(float(man), -24);
  else if (exp == 31)
    v = man ? NAN : INFINITY;
  else
    v = std::ldexp(float(man | 0x400), int(exp) - 25);
  return sign ? -v : v;
}

#define CHECK_CU(call)                                                                             \
  do {                                                                                             \
    CUresult r_ = (call);                                                                          \
    if (r_ != CUDA_SUCCESS) {                                                                      \
      std::printf("FAILED: %s: %s\n", #call, errorName(r_).c_str());                               \
      ++failures;                                                                                  \
      return false;                                                                                \
    }                                                                                              \
  } while (0)

// One softmax through `launch` (a lambda over out, in, stride, rows, cols) on random rows,
// checked element by element against double precision. Returns false on any failure.
template <typename Launch>
bool runCase(const char *label, bool fp16, int rows, int cols, int stride, CUstream stream,
             uint64_t seed, Launch launch, const char *(*lastError)()) {
  size_t elems = size_t(rows) * stride, bytes = elems * (fp16 ? 2 : 4);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> in(elems);
  for (float &v : in)
    v = dist(rng);
  std::vector<uint16_t> in16(fp16 ? elems : 0);
  if (fp16)
    for (size_t i = 0; i < elems; ++i) {
      in16[i] = toHalf(in[i]);
      in[i] = fromHalf(in16[i]); // the reference sees what the GPU reads
    }
  CUdeviceptr din = 0, dout = 0;
  CHECK_CU(cuMemAlloc(&din, bytes));
  CHECK_CU(cuMemAlloc(&dout, bytes));
  CHECK_CU(cuMemcpyHtoD(din, fp16 ? static_cast<const void *>(in16.data()) : in.data(), bytes));
  CHECK_CU(cuMemsetD8Async(dout, 0xff, bytes, stream)); // NaN everywhere: unwritten shows
  CUresult r = launch(stream, dout, din, stride, rows, cols);
  if (r != CUDA_SUCCESS) {
    std::printf("FAILED: %s: launch returned %s: %s\n", label, errorName(r).c_str(), lastError());
    ++failures;
    cuMemFree(din);
    cuMemFree(dout);
    return false;
  }
  CHECK_CU(cuStreamSynchronize(stream));
  std::vector<float> out(elems);
  std::vector<uint16_t> out16(fp16 ? elems : 0);
  CHECK_CU(cuMemcpyDtoH(fp16 ? static_cast<void *>(out16.data()) : out.data(), dout, bytes));
  cuMemFree(din);
  cuMemFree(dout);
  double worst = 0;
  int bad = 0;
  for (int row = 0; row < rows; ++row) {
    const float *x = &in[size_t(row) * stride];
    double mx = -INFINITY, sum = 0;
    for (int c = 0; c < cols; ++c)
      mx = std::max(mx, double(x[c]));
    for (int c = 0; c < cols; ++c)
      sum += std::exp(double(x[c]) - mx);
    for (int c = 0; c < cols; ++c) {
      double want = std::exp(double(x[c]) - mx) / sum;
      size_t i = size_t(row) * stride + c;
      double got = fp16 ? fromHalf(out16[i]) : out[i];
      double err = std::fabs(got - want);
      double tol = fp16 ? 1e-3 + 2e-3 * want : 1e-6 + 1e-4 * want;
      if (!(err <= tol)) { // NaN fails too
        if (bad++ < 3)
          std::printf("  %s: row %d col %d: got %.9g, want %.9g\n", label, row, c, got, want);
      }
      if (err > worst)
        worst = err;
    }
  }
  std::printf("%s: %d x %d (stride %d): %s, max abs error %.3g\n", label, rows, cols, stride,
              bad ? "WRONG" : "ok", worst);
  if (bad)
    ++failures;
  return bad == 0;
}

// The descriptor kernel on `stream`: out = 2 x in over rows x cols fp32 (exact), one program
// per 64 columns; its launcher encodes the two tensor maps from the arguments. Every element
// of the poisoned output is checked.
bool runTiledScale(const char *label, int rows, int cols, CUstream stream, uint64_t seed) {
  size_t elems = size_t(rows) * cols, bytes = elems * 4;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> in(elems), out(elems);
  for (float &v : in)
    v = dist(rng);
  CUdeviceptr din = 0, dout = 0;
  CHECK_CU(cuMemAlloc(&din, bytes));
  CHECK_CU(cuMemAlloc(&dout, bytes));
  CHECK_CU(cuMemcpyHtoD(din, in.data(), bytes));
  CHECK_CU(cuMemsetD8Async(dout, 0xff, bytes, stream));
  CUresult r = tiled_scale(stream, (cols + 63) / 64, dout, din, rows, cols);
  if (r != CUDA_SUCCESS) {
    std::printf("FAILED: %s: launch returned %s: %s\n", label, errorName(r).c_str(),
                tiled_scale_last_error());
    ++failures;
    cuMemFree(din);
    cuMemFree(dout);
    return false;
  }
  CHECK_CU(cuStreamSynchronize(stream));
  CHECK_CU(cuMemcpyDtoH(out.data(), dout, bytes));
  cuMemFree(din);
  cuMemFree(dout);
  int bad = 0;
  for (size_t i = 0; i < elems; ++i)
    if (!(out[i] == 2.0f * in[i]) && bad++ < 3) // NaN (unwritten) fails too
      std::printf("  %s: [%zu, %zu] got %.9g, want %.9g\n", label, i / size_t(cols),
                  i % size_t(cols), double(out[i]), 2.0 * in[i]);
  std::printf("%s: %d x %d: %s\n", label, rows, cols, bad ? "WRONG" : "ok");
  if (bad)
    ++failures;
  return bad == 0;
}

bool hopper = false; // tiled_scale's variant is sm_90a code

// Every GPU case on `stream`; `seed` makes each thread's inputs its own.
bool runAll(CUstream stream, uint64_t seed, const char *who) {
  std::string p = who;
  bool ok = true;
  auto single = [](CUstream s, CUdeviceptr out, CUdeviceptr in, int stride, int rows, int cols) {
    return softmax_fp32_1024(s, rows, out, in, stride, stride, rows, cols);
  };
  auto explicitGrid = [](CUstream s, CUdeviceptr out, CUdeviceptr in, int stride, int rows,
                         int cols) {
    return softmax_fp32_1024_grid(s, 7, 1, 1, out, in, stride, stride, rows, cols);
  };
  auto dispatch = [](const char *dtype) {
    return [dtype](CUstream s, CUdeviceptr out, CUdeviceptr in, int stride, int rows, int cols) {
      return softmax_any(s, rows, dtype, out, in, stride, stride, rows, cols);
    };
  };
  ok &= runCase((p + " softmax_fp32_1024").c_str(), false, 1823, 1024, 1024, stream, seed + 1,
                single, softmax_fp32_1024_last_error);
  ok &= runCase((p + " softmax_fp32_1024_grid(7)").c_str(), false, 100, 1024, 1024, stream,
                seed + 2, explicitGrid, softmax_fp32_1024_last_error);
  ok &= runCase((p + " softmax_any fp32 1024 (aligned variant)").c_str(), false, 513, 1024, 1024,
                stream, seed + 3, dispatch("fp32"), softmax_any_last_error);
  ok &= runCase((p + " softmax_any fp32 1000 (4096 bucket)").c_str(), false, 300, 1000, 1000,
                stream, seed + 4, dispatch("fp32"), softmax_any_last_error);
  ok &= runCase((p + " softmax_any fp32 3000 (4096 bucket)").c_str(), false, 257, 3000, 3008,
                stream, seed + 5, dispatch("fp32"), softmax_any_last_error);
  ok &= runCase((p + " softmax_any fp16 781").c_str(), true, 999, 781, 781, stream, seed + 6,
                dispatch("fp16"), softmax_any_last_error);
  if (hopper) { // rows and columns that end inside a tile, and a whole one
    ok &= runTiledScale((p + " tiled_scale").c_str(), 1000, 208, stream, seed + 7);
    ok &= runTiledScale((p + " tiled_scale").c_str(), 31, 16, stream, seed + 8);
    ok &= runTiledScale((p + " tiled_scale").c_str(), 4096, 1024, stream, seed + 9);
  }
  return ok;
}

} // namespace

int main() {
  checkRefusals();
  CUresult r = cuInit(0);
  int devices = 0;
  if (r == CUDA_SUCCESS)
    r = cuDeviceGetCount(&devices);
  if (r != CUDA_SUCCESS || devices == 0) {
    std::printf("no GPU: %s\n", r != CUDA_SUCCESS ? ("cuInit: " + errorName(r)).c_str()
                                                  : "the driver sees no device");
    return failures ? 1 : 0;
  }
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  if (cuDeviceGet(&dev, 0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
      cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
    std::printf("FAILED: cannot make device 0's primary context current\n");
    return 1;
  }
  char name[256] = {0};
  cuDeviceGetName(name, sizeof name - 1, dev);
  std::printf("GPU: %s (%s, %d threads x %d warps, %d registers, grid rule %s)\n", name,
              softmax_fp32_1024_ARCH, 32, softmax_fp32_1024_NUM_WARPS, softmax_fp32_1024_REGISTERS,
              softmax_fp32_1024_GRID_RULE);
  int major = 0, minor = 0;
  cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  hopper = major == 9 && minor == 0;
  if (!hopper)
    std::printf("tiled_scale skipped: its %s variant needs sm_90, this GPU is sm_%d%d\n",
                tiled_scale_ARCH, major, minor);
  std::random_device seeds;
  uint64_t seed = (uint64_t(seeds()) << 32) | seeds();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));

  // A launch without a current context is an error with a message, not a crash.
  std::thread([&] {
    CUresult rr = softmax_fp32_1024(nullptr, 1, 0x1000, 0x2000, 1024, 1024, 1, 1024);
    expect(rr == CUDA_ERROR_INVALID_CONTEXT &&
               contains(softmax_fp32_1024_last_error(), "no CUDA context is current"),
           std::string("a thread without a context gets an error: ") +
               softmax_fp32_1024_last_error());
  }).join();

  runAll(nullptr, seed, "main thread:");
  // Two threads at once, each with its own stream and inputs, on the same context.
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      if (cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
        expect(false, "cuCtxSetCurrent in a thread");
        return;
      }
      CUstream s = nullptr;
      if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
        expect(false, "cuStreamCreate in a thread");
        return;
      }
      for (int round = 0; round < 3; ++round)
        runAll(s, seed + 100 * (t + 1) + 10 * round, ("thread " + std::to_string(t) + ":").c_str());
      cuStreamDestroy(s);
    });
  for (std::thread &t : threads)
    t.join();
  cuDevicePrimaryCtxRelease(dev);
  std::printf("%s\n", failures ? "AOT consumer: FAILED" : "AOT consumer: all checks passed");
  return failures ? 1 : 0;
}
