// The softmax problem the GPU tests and their interpreter twins share: random rows (fresh seed,
// standard deviation 2 to 4), NaN padding between n_cols and the input stride, the output
// poisoned before the run, and a check of every element against the double-precision reference
// that also requires the output padding to keep the poison. `Buffer` is rt::DeviceBuffer or
// interpreter::HostBuffer.
#pragma once

#include "TestSupport.h"
#include "kernels/SoftmaxReference.h"
#include "frontend/CompiledKernel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace tritium::testing {

inline constexpr uint32_t kPoison = 0x7fc00001u;       // a NaN an unwritten output element keeps
inline constexpr uint32_t kInputPadding = 0x7fc00002u; // a NaN in the input past n_cols
// ex2.approx on the GPU is within 2 ulp of exp; 1e-5 absolute holds on both paths with margin.
inline constexpr double kTolerance = 1e-5;

inline uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}


struct SoftmaxShape {
  int64_t rows, cols;
  int64_t inStride = 0, outStride = 0; // 0: cols
};

template <typename Buffer> class SoftmaxProblem {
public:
  SoftmaxProblem(const SoftmaxShape &s, uint32_t seed) : s_(s), seed_(seed) {
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
  const Buffer &in() const { return *in_; }
  const Buffer &out() const { return *out_; }
  const SoftmaxShape &shape() const { return s_; }

  // The interpreter ignores the stream (pass nullptr).
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
            firstBad << "  [" << r << ", " << c << "] got " << got << " expected " << ref << "\n";
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
    EXPECT_EQ(padTouched, 0) << "the kernel wrote between n_cols and the row stride; seed " << seed_
                             << ":\n"
                             << firstBad.str();
    EXPECT_LE(maxErr, kTolerance);
    return y;
  }

private:
  SoftmaxShape s_;
  uint32_t seed_;
  std::vector<float> x_;
  std::optional<Buffer> in_, out_;
};

} // namespace tritium::testing
