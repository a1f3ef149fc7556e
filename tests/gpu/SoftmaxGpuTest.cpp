// The tutorial's softmax on a GPU against a CPU reference in double precision: fresh random
// inputs every run (the seed is printed on failure), outputs poisoned with a NaN pattern before
// each launch, every element checked. Each test skips, saying why, when no GPU is usable.
#include "SoftmaxProblem.h"
#include "GpuTestSupport.h"
#include "TestSupport.h"

#include "kernels/Softmax.h"
#include "kernels/SoftmaxReference.h"
#include "frontend/Kernel.h"
#include "runtime/Device.h"
#include "runtime/Driver.h"
#include "runtime/Memory.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <sstream>
#include <vector>

using namespace tritium;
using tritium::testing::freshSeed;
using tritium::testing::SoftmaxShape;
using Shape = SoftmaxShape;
using tritium::testing::bitsOf;
using tritium::testing::kPoison;

namespace {

// A problem on the host and the device: random rows, padding, and the poisoned output.
using Problem = tritium::testing::SoftmaxProblem<rt::DeviceBuffer>;

class SoftmaxGpuTest : public tritium::testing::CompilerTest {
protected:
  // The built-in tutorial kernel for rows of `cols`, with the tutorial's configuration.
  static CompiledKernel &kernelFor(int64_t cols) {
    return kernels::softmaxKernel().compile(kernels::softmaxSpecialization(cols));
  }

  void runShape(const Shape &s) {
    SCOPED_TRACE("shape " + std::to_string(s.rows) + "x" + std::to_string(s.cols));
    uint32_t seed = freshSeed();
    CompiledKernel &k = kernelFor(s.cols);
    Problem p(s, seed);
    rt::Stream stream;
    p.launch(k, stream.get());
    stream.sync();
    p.check();
  }
};

} // namespace

TEST_F(SoftmaxGpuTest, Tutorial1823x781) {
  SKIP_WITHOUT_GPU();
  runShape({1823, 781});
}

TEST_F(SoftmaxGpuTest, SingleColumn) {
  SKIP_WITHOUT_GPU();
  runShape({100, 1}); // BLOCK_SIZE 1: every output is exactly 1
}

TEST_F(SoftmaxGpuTest, TinyRows37x3) {
  SKIP_WITHOUT_GPU();
  runShape({37, 3});
}

TEST_F(SoftmaxGpuTest, Rows64x1000) {
  SKIP_WITHOUT_GPU();
  runShape({64, 1000});
}

TEST_F(SoftmaxGpuTest, WideRows4096x12288) {
  SKIP_WITHOUT_GPU();
  runShape({4096, 12288});
}

TEST_F(SoftmaxGpuTest, RowStrideLargerThanRow) {
  SKIP_WITHOUT_GPU();
  // 781 valid columns inside rows of 1024: the input padding holds NaNs the mask must keep out,
  // the output padding holds the poison the kernel must not overwrite.
  runShape({300, 781, 1024, 1024});
  runShape({300, 781, 1024, 896});
  runShape({300, 781, 800, 1024});
}

TEST_F(SoftmaxGpuTest, SameCompiledKernelLaunchedTwice) {
  SKIP_WITHOUT_GPU();
  uint32_t seed = freshSeed();
  CompiledKernel &k = kernelFor(781);
  Problem p({1823, 781}, seed);
  rt::Stream stream;
  p.launch(k, stream.get());
  stream.sync();
  std::vector<float> first = p.check();
  ASSERT_TRUE(k.loaded());

  p.poison();
  p.launch(k, stream.get());
  stream.sync();
  std::vector<float> second = p.check();
  EXPECT_EQ(std::memcmp(first.data(), second.data(), first.size() * 4), 0)
      << "two launches on the same input gave different bits; seed " << seed;
  // Compiling the specialization again returns the very same loaded kernel.
  EXPECT_EQ(&kernelFor(781), &k);
}

TEST_F(SoftmaxGpuTest, CudaGraphCaptureGivesTheSameResult) {
  SKIP_WITHOUT_GPU();
  uint32_t seed = freshSeed();
  CompiledKernel &k = kernelFor(1000);
  Problem p({64, 1000}, seed);
  rt::Stream stream;
  p.launch(k, stream.get());
  stream.sync();
  std::vector<float> direct = p.check();

  p.poison();
  const int64_t grid = k.persistentGrid(64);
  rt::Graph graph = rt::Graph::capture(stream.get(), [&] { p.launch(k, stream.get(), grid); });
  stream.sync();
  // Capture only records: the output is still all poison.
  std::vector<float> untouched = p.download();
  for (size_t i = 0; i < untouched.size(); ++i)
    ASSERT_EQ(bitsOf(untouched[i]), kPoison) << "element " << i << " was written during capture";

  graph.launch(stream.get());
  stream.sync();
  std::vector<float> replayed = p.check();
  EXPECT_EQ(std::memcmp(direct.data(), replayed.data(), direct.size() * 4), 0)
      << "the graph's launch differs from the direct launch; seed " << seed;

  // A graph replays as often as asked.
  p.poison();
  graph.launch(stream.get());
  graph.launch(stream.get());
  stream.sync();
  p.check();
}
