// Softmax beyond the tutorial on the GPU: rows of any length (the online kernel up to 262144
// columns), the fused backward, fp16 and bf16, and rows of special values, each against the
// double-precision reference (tests/SoftmaxCase.h), with plans chosen by row length as at run
// time. Each test skips, saying why, when no GPU is usable; their interpreter twins are in
// tests/unit/SoftmaxVariantsInterpreterTest.cpp.
#include "SoftmaxCase.h"
#include "GpuTestSupport.h"
#include "TestSupport.h"

#include "runtime/Driver.h"
#include "runtime/Memory.h"

#include <gtest/gtest.h>

using namespace tritium;
using kernels::SoftmaxDirection;
using kernels::SoftmaxPlan;
using tritium::testing::SoftmaxCase;
using tritium::testing::Values;

namespace {

using DeviceRun = tritium::testing::SoftmaxCaseRun<rt::DeviceBuffer>;

class SoftmaxVariantsGpuTest : public tritium::testing::CompilerTest {
protected:
  // Runs the case; `expectOnline` checks which kernel the planner picked.
  void run(const SoftmaxCase &c, std::optional<bool> expectOnline = std::nullopt) {
    SCOPED_TRACE(c.str());
    DeviceRun r(c, tritium::testing::freshSeed());
    rt::Stream stream;
    SoftmaxPlan plan = r.launch(stream.get());
    stream.sync();
    if (expectOnline) {
      EXPECT_EQ(plan.online, *expectOnline) << plan.str();
    }
    r.check();
  }
};

constexpr auto kFwd = SoftmaxDirection::Forward;
constexpr auto kBwd = SoftmaxDirection::Backward;

std::function<void(SoftmaxPlan &)> forceOnline() {
  return [](SoftmaxPlan &p) { p = kernels::planOnline(p.direction); };
}

} // namespace

// --- long rows (the online kernel) ------------------------------------------------------------

TEST_F(SoftmaxVariantsGpuTest, LongRows32768) {
  SKIP_WITHOUT_GPU();
  run({.direction = kFwd, .rows = 300, .cols = 32768}, false); // 32 values per thread
  run({.direction = kFwd, .rows = 300, .cols = 40000}, true);
}

TEST_F(SoftmaxVariantsGpuTest, LongRows262144) {
  SKIP_WITHOUT_GPU();
  run({.direction = kFwd, .rows = 40, .cols = 262144}, true);
}

TEST_F(SoftmaxVariantsGpuTest, LongOddRowsWithStride) {
  SKIP_WITHOUT_GPU();
  run({.direction = kFwd, .rows = 77, .cols = 100003, .stride = 100100}, true);
}

TEST_F(SoftmaxVariantsGpuTest, OnlineKernelOnShortRows) {
  SKIP_WITHOUT_GPU();
  // Fewer blocks than pipeline stages, a single masked block, one column.
  run({.direction = kFwd, .rows = 1000, .cols = 781, .tweak = forceOnline()});
  run({.direction = kFwd, .rows = 100, .cols = 1, .tweak = forceOnline()});
  run({.direction = kFwd, .rows = 100, .cols = 9000, .stride = 9001, .tweak = forceOnline()});
}

// --- backward ---------------------------------------------------------------------------------

TEST_F(SoftmaxVariantsGpuTest, BackwardInRegisters) {
  SKIP_WITHOUT_GPU();
  run({.direction = kBwd, .rows = 1823, .cols = 781}, false);
  run({.direction = kBwd, .rows = 512, .cols = 4096, .stride = 4100}, false);
  run({.direction = kBwd, .rows = 37, .cols = 3}, false);
}

TEST_F(SoftmaxVariantsGpuTest, BackwardOnline) {
  SKIP_WITHOUT_GPU();
  run({.direction = kBwd, .rows = 256, .cols = 20000}, true);
  run({.direction = kBwd, .rows = 32, .cols = 262144}, true);
  run({.direction = kBwd, .rows = 300, .cols = 2000, .tweak = forceOnline()});
}

TEST_F(SoftmaxVariantsGpuTest, WorkedExample) {
  SKIP_WITHOUT_GPU();
  rt::Stream stream;
  auto sync = [&] { stream.sync(); };
  tritium::testing::runWorkedExample<rt::DeviceBuffer>(stream.get(), sync);
  tritium::testing::runWorkedExample<rt::DeviceBuffer>(stream.get(), sync, forceOnline());
}

// --- fp16 and bf16 ----------------------------------------------------------------------------

TEST_F(SoftmaxVariantsGpuTest, HalfAndBfloatForward) {
  SKIP_WITHOUT_GPU();
  for (const char *dtype : {"fp16", "bf16"}) {
    run({.direction = kFwd, .dtype = dtype, .rows = 1823, .cols = 781}, false);
    run({.direction = kFwd, .dtype = dtype, .rows = 512, .cols = 16384}, false);
    run({.direction = kFwd, .dtype = dtype, .rows = 64, .cols = 65536 + 8}, true);
    run({.direction = kFwd, .dtype = dtype, .rows = 64, .cols = 1001, .stride = 1003}, false);
  }
}

TEST_F(SoftmaxVariantsGpuTest, HalfAndBfloatBackward) {
  SKIP_WITHOUT_GPU();
  for (const char *dtype : {"fp16", "bf16"}) {
    run({.direction = kBwd, .dtype = dtype, .rows = 1823, .cols = 781}, false);
    run({.direction = kBwd, .dtype = dtype, .rows = 64, .cols = 40000}, true);
  }
}

// --- special values ---------------------------------------------------------------------------

TEST_F(SoftmaxVariantsGpuTest, SpecialValuesInRegisters) {
  SKIP_WITHOUT_GPU();
  for (const char *dtype : {"fp32", "fp16", "bf16"})
    run({.direction = kFwd, .dtype = dtype, .rows = 60, .cols = 1000, .values = Values::Special},
        false);
}

TEST_F(SoftmaxVariantsGpuTest, SpecialValuesOnline) {
  SKIP_WITHOUT_GPU();
  for (const char *dtype : {"fp32", "fp16", "bf16"})
    run({.direction = kFwd, .dtype = dtype, .rows = 60, .cols = 70000, .values = Values::Special},
        true);
}
