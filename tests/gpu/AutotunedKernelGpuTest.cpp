// Autotuning of a user's kernel on the GPU (kernels/Autotuned.h): a kernel that doubles a
// tensor in place and accumulates into another is tuned over three configs on the caller's
// arguments. restore_value puts the tensor back after each timed trial and reset_to_zero
// zeroes the sums before each, so the one real launch after tuning leaves x doubled once and
// the sums counted once.
#include "GpuTestSupport.h"

#include "frontend/Kernel.h"
#include "kernels/Autotuned.h"
#include "runtime/Memory.h"

#include <random>

using namespace tritium;
using namespace tritium::dsl;
using namespace tritium::kernels;
using rt::DeviceBuffer;

namespace {

// x[i] *= 2; sums[i % 64] += x[i] (before doubling).
void doubleAndSum(Ptr x, Ptr sums, Int n, int BLOCK) {
  auto i = program_id(0) * BLOCK + arange(0, BLOCK);
  auto m = i < n;
  auto v = load(x + i, m, 0);
  atomic_add(sums + i % 64, v, m);
  store(x + i, v * 2.0, m);
}

class AutotunedKernelGpuTest : public tritium::testing::GpuStreamTest {};

TEST_F(AutotunedKernelGpuTest, TrialsLeaveInPlaceTensorsAsGiven) {
  SKIP_WITHOUT_GPU();
  setAutotune(true);
  auto k = kernel("double_and_sum", doubleAndSum, {"x", "sums", "n", "BLOCK"});
  AutotunedKernel tuned(k,
                        {{{{"BLOCK", 256}}, {.numWarps = 4}},
                         {{{"BLOCK", 1024}}, {.numWarps = 4}},
                         {{{"BLOCK", 2048}}, {.numWarps = 8}}},
                        {.key = {"n"}, .resetToZero = {"sums"}, .restoreValue = {"x"}});
  const int64_t n = 100000;
  std::mt19937 rng(tritium::testing::freshSeed());
  std::uniform_int_distribution<int> small(-8, 8); // exact sums in fp32
  std::vector<float> x(n);
  std::vector<double> want(64, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    x[size_t(i)] = float(small(rng));
    want[size_t(i % 64)] += x[size_t(i)];
  }
  DeviceBuffer dx(size_t(n) * 4), sums(64 * 4);
  dx.upload(x.data(), x.size() * 4);
  sums.fill32(0);
  tuned.launch([&](const Meta &m) { return Grid3{(n + m["BLOCK"] - 1) / m["BLOCK"]}; },
               stream().get(),
               {tensor(reinterpret_cast<void *>(dx.ptr()), "fp32", {n}),
                tensor(reinterpret_cast<void *>(sums.ptr()), "fp32", {64}), n});
  sync();
  std::vector<float> got(n), gotSums(64);
  dx.download(got.data(), got.size() * 4);
  sums.download(gotSums.data(), 64 * 4);
  size_t bad = 0;
  for (int64_t i = 0; i < n; ++i)
    bad += got[size_t(i)] != 2 * x[size_t(i)];
  EXPECT_EQ(bad, 0u) << "x is doubled once";
  for (int j = 0; j < 64; ++j)
    EXPECT_EQ(gotSums[size_t(j)], want[size_t(j)]) << "sums[" << j << "]";
  resetAutotune();
}

} // namespace
