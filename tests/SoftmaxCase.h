// Softmax cases beyond the tutorial's, shared by the GPU tests and their interpreter twins:
// forward or backward, fp32/fp16/bf16, any row length (the online kernel included), row
// strides with NaN padding, and rows of special values (-inf, all -inf, +inf, NaN, 1e30). Inputs
// are fresh random numbers; the output is poisoned before the run; every element is compared
// with the double-precision reference of the values actually stored (after rounding to the
// dtype). `Buffer` is rt::DeviceBuffer or interpreter::HostBuffer.
#pragma once

#include "kernels/HostDtype.h"
#include "kernels/SoftmaxPlan.h"
#include "kernels/SoftmaxReference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace tritium::testing {

using kernels::bytesOf;
using kernels::loadElement;
using kernels::storeElement;

using kernels::kPoisonBits;
using kernels::Tolerance;
using kernels::toleranceFor;

enum class Values { Normal, Special };

struct SoftmaxCase {
  kernels::SoftmaxDirection direction = kernels::SoftmaxDirection::Forward;
  std::string dtype = "fp32";
  int64_t rows = 0, cols = 0;
  int64_t stride = 0; // every buffer's row stride in elements; 0: cols
  Values values = Values::Normal;
  // Changes the plan before the launch (a smaller online block, other warps, ...).
  std::function<void(kernels::SoftmaxPlan &)> tweak;
  int64_t grid = 0; // CTAs; 0: the persistent grid

  std::string str() const {
    std::ostringstream s;
    s << (direction == kernels::SoftmaxDirection::Forward ? "forward " : "backward ") << dtype
      << " " << rows << "x" << cols;
    if (stride)
      s << " stride " << stride;
    if (values == Values::Special)
      s << " special values";
    if (grid)
      s << " grid " << grid;
    return s.str();
  }
};


// Row r of the special-values pattern: each row exercises one case torch defines.
inline void specialRow(int64_t r, int64_t cols, std::mt19937 &rng, float *row,
                       const std::string &dtype) {
  std::normal_distribution<float> dist(0.f, 3.f);
  float huge = dtype == "fp16" ? 6e4f : 1e30f;
  for (int64_t c = 0; c < cols; ++c)
    row[c] = dist(rng);
  switch (r % 6) {
  case 0: // some -inf (masked positions)
    for (int64_t c = 0; c < cols; c += 3)
      row[c] = -INFINITY;
    break;
  case 1: // all -inf: NaN, as torch
    for (int64_t c = 0; c < cols; ++c)
      row[c] = -INFINITY;
    break;
  case 2: // very large magnitudes
    for (int64_t c = 0; c < cols; ++c)
      row[c] *= huge / 3.f;
    break;
  case 3: // a NaN makes the row NaN
    row[(r * 7) % cols] = NAN;
    break;
  case 4: // a masked prefix (-inf), then values: a block of only -inf, then finite ones
    for (int64_t c = 0; c < cols * 3 / 4; ++c)
      row[c] = -INFINITY;
    break;
  case 5: // +inf: inf - inf is NaN, as torch
    row[(r * 5) % cols] = INFINITY;
    break;
  }
}

template <typename Buffer> class SoftmaxCaseRun {
public:
  SoftmaxCaseRun(const SoftmaxCase &c, uint32_t seed) : c_(c), seed_(seed) {
    stride_ = c.stride ? c.stride : c.cols;
    esize_ = bytesOf(c.dtype);
    std::mt19937 rng(seed);
    int inputs = forward() ? 1 : 2;
    for (int i = 0; i < inputs; ++i) {
      std::vector<float> v(size_t(c.rows * stride_), NAN); // NaN padding past n_cols
      std::vector<float> row(size_t(c.cols));
      std::normal_distribution<float> dist(0.f, 2.5f);
      std::uniform_real_distribution<float> prob(0.f, 1.f);
      for (int64_t r = 0; r < c.rows; ++r) {
        if (c.values == Values::Special)
          specialRow(r, c.cols, rng, row.data(), c.dtype);
        else if (!forward() && i == 0) // o: a probability-like row
          for (auto &x : row)
            x = prob(rng) * 2.f / float(c.cols);
        else
          for (auto &x : row)
            x = dist(rng);
        std::copy(row.begin(), row.end(), v.begin() + r * stride_);
      }
      inputs_.push_back(upload(v));
      stored_.push_back(roundTrip(v));
    }
    out_.emplace(size_t(c.rows * stride_) * esize_);
    out_->fill32(kPoisonBits);
  }

  // Plans by row length (tweaked by the case), launches, and returns the plan used.
  kernels::SoftmaxPlan launch(CUstream stream) {
    kernels::SoftmaxPlan plan = forward() ? kernels::planSoftmax(c_.cols, c_.dtype)
                                          : kernels::planSoftmaxBackward(c_.cols, c_.dtype);
    if (c_.tweak)
      c_.tweak(plan);
    kernels::SoftmaxShape shape{c_.rows, c_.cols};
    if (forward())
      kernels::softmaxForward(plan, c_.dtype, *out_, *inputs_[0], shape, stride_, stride_,
                              stream, c_.grid);
    else
      kernels::softmaxBackward(plan, c_.dtype, *out_, *inputs_[0], *inputs_[1], shape, stride_,
                               stride_, stride_, stream, c_.grid);
    return plan;
  }

  // Checks every element (NaN where the reference is NaN) and that the padding kept the poison.
  void check() const {
    std::vector<unsigned char> raw(size_t(c_.rows * stride_) * esize_);
    out_->download(raw.data(), raw.size());
    Tolerance tol = toleranceFor(c_.dtype);
    std::vector<double> ref(size_t(c_.cols));
    int64_t bad = 0, padTouched = 0;
    double maxErr = 0;
    std::ostringstream first;
    std::vector<unsigned char> poison(esize_);
    uint32_t p = kPoisonBits;
    std::memcpy(poison.data(), &p, esize_);
    for (int64_t r = 0; r < c_.rows; ++r) {
      const float *a = &stored_[0][size_t(r * stride_)];
      if (forward())
        kernels::softmaxRowReference(a, c_.cols, ref.data());
      else
        kernels::softmaxBackwardRowReference(a, &stored_[1][size_t(r * stride_)], c_.cols,
                                             ref.data());
      for (int64_t col = 0; col < c_.cols; ++col) {
        float got = loadElement(c_.dtype, &raw[size_t(r * stride_ + col) * esize_]);
        double want = ref[size_t(col)];
        bool ok = std::isnan(want) ? std::isnan(got)
                                   : std::fabs(double(got) - want) <=
                                         tol.atol + tol.rtol * std::fabs(want);
        if (!ok && bad++ < 5)
          first << "  [" << r << ", " << col << "] got " << got << " expected " << want << "\n";
        if (ok && !std::isnan(want))
          maxErr = std::max(maxErr, std::fabs(double(got) - want));
      }
      for (int64_t col = c_.cols; col < stride_; ++col)
        if (std::memcmp(&raw[size_t(r * stride_ + col) * esize_], poison.data(), esize_) &&
            padTouched++ < 5)
          first << "  padding [" << r << ", " << col << "] was written\n";
    }
    EXPECT_EQ(bad, 0) << c_.str() << ": " << bad << " of " << c_.rows * c_.cols
                      << " elements are off (atol " << tol.atol << ", rtol " << tol.rtol
                      << "); seed " << seed_ << ":\n"
                      << first.str();
    EXPECT_EQ(padTouched, 0) << c_.str() << ": the kernel wrote past n_cols; seed " << seed_
                             << ":\n"
                             << first.str();
    ::testing::Test::RecordProperty("max_abs_error", std::to_string(maxErr));
  }

private:
  bool forward() const { return c_.direction == kernels::SoftmaxDirection::Forward; }

  std::vector<float> roundTrip(const std::vector<float> &v) const {
    std::vector<float> r(v.size());
    unsigned char tmp[4];
    for (size_t i = 0; i < v.size(); ++i) {
      storeElement(c_.dtype, v[i], tmp);
      r[i] = loadElement(c_.dtype, tmp);
    }
    return r;
  }

  std::unique_ptr<Buffer> upload(const std::vector<float> &v) const {
    std::vector<unsigned char> raw(v.size() * esize_);
    for (size_t i = 0; i < v.size(); ++i)
      storeElement(c_.dtype, v[i], &raw[i * esize_]);
    auto b = std::make_unique<Buffer>(raw.size());
    b->upload(raw.data(), raw.size());
    return b;
  }

  SoftmaxCase c_;
  uint32_t seed_;
  int64_t stride_;
  size_t esize_;
  std::vector<std::unique_ptr<Buffer>> inputs_;
  std::vector<std::vector<float>> stored_; // the inputs as stored, back in float
  std::optional<Buffer> out_;
};

// A worked example: X = [[1,2,3],[1,3,5]], dO = [[0.1,0.2,0.7],[0.2,0.3,0.5]].
struct WorkedExample {
  static constexpr float x[6] = {1, 2, 3, 1, 3, 5};
  static constexpr float dout[6] = {0.1f, 0.2f, 0.7f, 0.2f, 0.3f, 0.5f};
  static constexpr double o[6] = {0.0900, 0.2447, 0.6652, 0.0159, 0.1173, 0.8668};
  static constexpr double dx[6] = {-0.0381, -0.0792, 0.1173, -0.0043, -0.0202, 0.0245};
};

// Runs forward then backward on the worked example with `plan`s from the planner (tweaked) and
// checks both against its four-digit figures: half a unit of the fourth decimal,
// plus float rounding.
template <typename Buffer>
void runWorkedExample(CUstream stream, const std::function<void()> &sync,
                      const std::function<void(kernels::SoftmaxPlan &)> &tweak = {}) {
  Buffer x(6 * 4), o(6 * 4), g(6 * 4), dx(6 * 4);
  x.upload(WorkedExample::x, sizeof WorkedExample::x);
  g.upload(WorkedExample::dout, sizeof WorkedExample::dout);
  o.fill32(kPoisonBits);
  dx.fill32(kPoisonBits);
  kernels::SoftmaxPlan fwd = kernels::planSoftmax(3), bwd = kernels::planSoftmaxBackward(3);
  if (tweak) {
    tweak(fwd);
    tweak(bwd);
  }
  kernels::softmaxForward(fwd, "fp32", o, x, {2, 3}, 3, 3, stream);
  kernels::softmaxBackward(bwd, "fp32", dx, o, g, {2, 3}, 3, 3, 3, stream);
  sync();
  float got[6];
  o.download(got, sizeof got);
  for (int i = 0; i < 6; ++i)
    EXPECT_NEAR(got[i], WorkedExample::o[i], 5.2e-5) << "O[" << i / 3 << "][" << i % 3 << "]";
  dx.download(got, sizeof got);
  for (int i = 0; i < 6; ++i)
    EXPECT_NEAR(got[i], WorkedExample::dx[i], 5.2e-5) << "dX[" << i / 3 << "][" << i % 3 << "]";
}

// Plan tweaks shared by the GPU tests and their interpreter twins.
// The registers kernel with or without the prefetch, at the planner's block for its warps.
inline std::function<void(kernels::SoftmaxPlan &)> prefetch(bool on) {
  return [=](kernels::SoftmaxPlan &p) {
    p.prefetch = on;
    p.numStages = 1;
  };
}

// The registers kernel with this block (a multiple of 32 x warps), warps, prefetch and stages.
inline std::function<void(kernels::SoftmaxPlan &)> withBlock(int64_t size, int warps, bool pf,
                                                            int stages = 1) {
  return [=](kernels::SoftmaxPlan &p) {
    p.blockSize = size;
    p.numWarps = warps;
    p.prefetch = pf;
    p.numStages = stages;
    p.programsPerCTA = 1; // one program per CTA, whatever the planner ran short rows with
  };
}

// `programs` warp-sized programs per CTA (programsPerCTA), with or without the prefetch, on the
// persistent grid or (perRow) one program per row.
inline std::function<void(kernels::SoftmaxPlan &)> perCTA(int programs, bool prefetch,
                                                          bool perRow = false) {
  return [=](kernels::SoftmaxPlan &p) {
    p.numWarps = 1;
    p.minBlocksPerSM = 1;
    p.programsPerCTA = programs;
    p.prefetch = prefetch;
    p.numStages = 1;
    p.programPerRow = perRow;
  };
}

// A cp.async ring of `stages` instead of the plan's prefetch: bulk copies (TMA) where the rows
// qualify, or 16-byte copies per thread.
inline std::function<void(kernels::SoftmaxPlan &)> ring(int stages, bool bulk) {
  return [=](kernels::SoftmaxPlan &p) {
    p.prefetch = false;
    p.numStages = stages;
    p.bulkCopies = bulk;
    p.programsPerCTA = 1; // the ring's shared memory is the CTA's
  };
}

} // namespace tritium::testing
