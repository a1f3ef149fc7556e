// A kernel launched with typed arguments (Kernel::launch, frontend/TypedArguments.h), shared by
// the interpreter's tests (tests/unit/TypedLaunchTest.cpp) and the GPU's
// (tests/gpu/TypedLaunchGpuTest.cpp): out = x * scale + y over n elements, y in bf16 (a tensor
// view) or fp32 (a typed pointer), on fresh random inputs with out poisoned first.
#pragma once

#include "TestSupport.h"

#include "frontend/Kernel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

namespace tritium::testing::typedlaunch {

using namespace tritium::dsl;

inline void axpy(Ptr x, Ptr y, Ptr out, Int n, Float scale, int BLOCK) {
  auto i = program_id(0) * BLOCK + arange(0, BLOCK);
  auto m = i < n;
  auto v = load(x + i, m, 0) * scale + cast(load(y + i, m, 0), float32);
  store(out + i, v, m);
}

using AxpyKernel = detail::FunctionKernel<Ptr, Ptr, Ptr, Int, Float, int>;
inline AxpyKernel axpyKernel() {
  return kernel("axpy", axpy, {"x", "y", "out", "n", "scale", "BLOCK"});
}

inline uint16_t bf16Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// Launches through k.launch twice (the second must reuse the first's compile) and checks every
// element against a double-precision reference.
template <typename Buffer>
void checkAxpy(AxpyKernel &k, CUstream stream, const std::function<void()> &sync, int64_t n,
               bool bf16) {
  std::mt19937 rng(freshSeed());
  std::normal_distribution<float> normal;
  std::vector<float> xs(static_cast<size_t>(n)), ys(static_cast<size_t>(n));
  std::vector<uint16_t> yb(static_cast<size_t>(n));
  for (size_t i = 0; i < xs.size(); ++i) {
    xs[i] = normal(rng);
    ys[i] = normal(rng);
    yb[i] = bf16Bits(ys[i]);
    if (bf16) { // the value the bf16 holds
      uint32_t u = uint32_t(yb[i]) << 16;
      std::memcpy(&ys[i], &u, 4);
    }
  }
  Buffer x(size_t(n) * 4), y(size_t(n) * 4), out(size_t(n) * 4);
  x.upload(xs.data(), xs.size() * 4);
  if (bf16)
    y.upload(yb.data(), yb.size() * 2);
  else
    y.upload(ys.data(), ys.size() * 4);
  out.fill32(0x7fc00001u);
  auto *xp = reinterpret_cast<float *>(KernelArg(x).ptr());
  auto *op = reinterpret_cast<float *>(KernelArg(out).ptr());
  const void *yp = reinterpret_cast<const void *>(KernelArg(y).ptr());
  int64_t grid = (n + 255) / 256;
  auto launch = [&] {
    if (bf16)
      return &k.launch(grid, stream, {xp, tensor(yp, "bf16", {n}), op, n, 3.0f}, {{"BLOCK", 256}});
    return &k.launch(grid, stream, {xp, static_cast<const float *>(yp), op, n, 3.0f},
                     {{"BLOCK", 256}});
  };
  CompiledKernel *first = launch();
  EXPECT_EQ(first, launch()) << "the same arguments' kinds and marks reuse the compile";
  EXPECT_EQ(first->metadata().signature.types[1], bf16 ? "*bf16:16" : "*fp32:16");
  EXPECT_EQ(first->metadata().signature.types[3], n % 16 == 0 ? "i32:16" : "i32");
  sync();
  std::vector<float> got(static_cast<size_t>(n));
  out.download(got.data(), got.size() * 4);
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    bad += !(std::fabs(got[i] - (double(xs[i]) * 3 + ys[i])) <= 1e-5 * (1 + std::fabs(got[i])));
  EXPECT_EQ(bad, 0u) << "n = " << n << (bf16 ? ", y in bf16" : "");
}

} // namespace tritium::testing::typedlaunch
