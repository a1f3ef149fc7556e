// The tutorial's softmax on a GPU against a CPU reference in double precision: fresh random
// inputs every run (the seed is printed on failure), outputs poisoned with a NaN pattern before
// each launch, every element checked. Each test skips, saying why, when no GPU is usable.
#include "TestSupport.h"

#include "examples/kernels/Softmax.h"
#include "examples/kernels/SoftmaxReference.h"
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

namespace {

constexpr uint32_t kPoison = 0x7fc00001u;        // a NaN an unwritten output element keeps
constexpr uint32_t kInputPadding = 0x7fc00002u;  // a NaN in the input between n_cols and the stride
constexpr double kTolerance = 1e-5;

#define SKIP_WITHOUT_GPU()                                                                         \
  do {                                                                                             \
    std::string why;                                                                               \
    if (!tritium::rt::Driver::available(&why))                                                     \
      GTEST_SKIP() << "no GPU: " << why;                                                           \
  } while (0)

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct Shape {
  int64_t rows, cols;
  int64_t inStride = 0, outStride = 0; // 0: cols
};

// A problem on the host and the device: random rows, padding, and the poisoned output.
class Problem {
public:
  Problem(const Shape &s, uint32_t seed) : s_(s), seed_(seed) {
    if (!s_.inStride)
      s_.inStride = s_.cols;
    if (!s_.outStride)
      s_.outStride = s_.cols;
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> pickStddev(2.0, 4.0);
    std::normal_distribution<float> dist(0.f, float(pickStddev(rng)));
    x_.assign(size_t(s_.rows * s_.inStride), floatOf(kInputPadding));
    for (int64_t r = 0; r < s_.rows; ++r)
      for (int64_t c = 0; c < s_.cols; ++c)
        x_[size_t(r * s_.inStride + c)] = dist(rng);
    in_.emplace(x_.size() * 4);
    out_.emplace(size_t(s_.rows * s_.outStride) * 4);
    in_->upload(x_.data(), x_.size() * 4);
    poison();
  }

  void poison() { out_->fill32(kPoison); }
  const rt::DeviceBuffer &in() const { return *in_; }
  const rt::DeviceBuffer &out() const { return *out_; }
  const Shape &shape() const { return s_; }

  void launch(CompiledKernel &k, CUstream stream) { launch(k, stream, k.persistentGrid(s_.rows)); }
  void launch(CompiledKernel &k, CUstream stream, int64_t grid) {
    k.launch(grid, stream,
             {*out_, *in_, int32_t(s_.inStride), int32_t(s_.outStride), int32_t(s_.rows),
              int32_t(s_.cols)});
  }

  std::vector<float> download() const {
    std::vector<float> y(size_t(s_.rows * s_.outStride));
    out_->download(y.data(), y.size() * 4);
    return y;
  }

  // Checks every element against the double-precision reference and that the padding of the
  // output rows still holds the poison. Returns the output for further comparisons.
  std::vector<float> check() const {
    std::vector<float> y = download();
    double maxErr = 0;
    int64_t bad = 0, nans = 0, padTouched = 0;
    std::ostringstream firstBad;
    std::vector<double> e(size_t(s_.cols));
    for (int64_t r = 0; r < s_.rows; ++r) {
      kernels::softmaxRowReference(&x_[size_t(r * s_.inStride)], s_.cols, e.data());
      for (int64_t c = 0; c < s_.cols; ++c) {
        double ref = e[size_t(c)];
        float got = y[size_t(r * s_.outStride + c)];
        double err = std::fabs(double(got) - ref);
        if (std::isnan(got))
          ++nans;
        if (!(err <= kTolerance)) { // NaN fails too
          if (bad++ < 5)
            firstBad << "  [" << r << ", " << c << "] got " << got << " expected " << ref
                     << "\n";
        } else {
          maxErr = std::max(maxErr, err);
        }
      }
      for (int64_t c = s_.cols; c < s_.outStride; ++c)
        if (bitsOf(y[size_t(r * s_.outStride + c)]) != kPoison && padTouched++ < 5)
          firstBad << "  padding [" << r << ", " << c << "] was overwritten with "
                   << y[size_t(r * s_.outStride + c)] << "\n";
    }
    EXPECT_EQ(bad, 0) << bad << " of " << s_.rows * s_.cols << " elements differ by more than "
                      << kTolerance << " (" << nans << " NaN); seed " << seed_ << ", shape "
                      << s_.rows << "x" << s_.cols << ":\n"
                      << firstBad.str();
    EXPECT_EQ(padTouched, 0) << "the kernel wrote between n_cols and the row stride; seed "
                             << seed_ << ":\n"
                             << firstBad.str();
    EXPECT_LE(maxErr, kTolerance);
    return y;
  }

private:
  Shape s_;
  uint32_t seed_;
  std::vector<float> x_;
  std::optional<rt::DeviceBuffer> in_, out_;
};

class SoftmaxGpuTest : public tritium::testing::CompilerTest {
protected:
  static uint32_t freshSeed() {
    uint32_t seed = std::random_device{}();
    ::testing::Test::RecordProperty("seed", std::to_string(seed));
    return seed;
  }

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
