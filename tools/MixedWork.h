// One host thread's share of the multi-GPU tests and of tools/stress_gpus.cpp: four kernels on
// its own buffers in the current context (the library's softmax, vector add and RMSNorm, and a
// scaled add declared here and launched through CompiledKernel::launch), fresh random inputs,
// outputs poisoned, and every element checked against a double-precision reference.
#pragma once

#include "frontend/Kernel.h"
#include "kernels/Elementwise.h"
#include "kernels/Norms.h"
#include "kernels/SoftmaxPlan.h"
#include "kernels/SoftmaxReference.h"
#include "runtime/Memory.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace tritium::tools {

inline void scaledAddBody(dsl::Ptr out, dsl::Ptr x, dsl::Ptr y, dsl::Float alpha, dsl::Int n,
                          int BLOCK) {
  auto offs = dsl::program_id(0) * BLOCK + dsl::arange(0, BLOCK);
  auto mask = offs < n;
  dsl::store(out + offs, alpha * dsl::load(x + offs, mask, 0.0) + dsl::load(y + offs, mask, 0.0),
             mask);
}

// out = alpha * x + y, fp32, 1024 elements per program.
inline CompiledKernel &scaledAddKernel() {
  static auto kernel =
      tritium::kernel("stress_scaled_add", scaledAddBody, {"out", "x", "y", "alpha", "n", "BLOCK"});
  return kernel.compile({.signature = {"*fp32", "*fp32", "*fp32", "fp32", "i32"},
                         .constexprs = {1024}});
}

class MixedWork {
public:
  static constexpr int Kinds = 4;
  static constexpr uint32_t Poison = 0x7fc0dead; // a NaN no kernel writes

  // Allocates and fills every buffer in the calling thread's current context.
  MixedWork(uint32_t seed, int64_t rows = 64, int64_t cols = 1000, int64_t n = 1 << 16)
      : seed_(seed), rows_(rows), cols_(cols), n_(n) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.f, 2.f);
    auto fill = [&](std::vector<float> &v, size_t count) {
      v.resize(count);
      for (float &f : v)
        f = normal(rng);
    };
    size_t matrix = size_t(rows * cols);
    fill(x_, matrix);
    fill(w_, size_t(cols));
    fill(a_, size_t(n));
    fill(b_, size_t(n));
    alpha_ = normal(rng);
    auto upload = [](const std::vector<float> &v) {
      rt::DeviceBuffer d(v.size() * 4);
      d.upload(v.data(), v.size() * 4);
      return d;
    };
    dx_.emplace(upload(x_));
    dw_.emplace(upload(w_));
    da_.emplace(upload(a_));
    db_.emplace(upload(b_));
    softmaxOut_.emplace(matrix * 4);
    normOut_.emplace(matrix * 4);
    addOut_.emplace(size_t(n) * 4);
    scaledOut_.emplace(size_t(n) * 4);
    poison();
  }

  void poison() {
    for (auto *o : {&softmaxOut_, &normOut_, &addOut_, &scaledOut_})
      (*o)->fill32(Poison);
  }

  // The i-th launch of the mix: kind i % Kinds, asynchronous on `stream`.
  void launch(int i, CUstream stream) {
    switch (i % Kinds) {
    case 0:
      kernels::softmaxForward(kernels::planSoftmax(cols_), "fp32",
                              KernelArg::pointer(softmaxOut_->ptr()), KernelArg::pointer(dx_->ptr()),
                              {rows_, cols_}, cols_, cols_, stream);
      break;
    case 1:
      kernels::vectorAdd(kernels::Dtype::fp32, ptr(*addOut_), ptr(*da_), ptr(*db_), n_, stream);
      break;
    case 2: {
      kernels::RMSNormForwardArgs args;
      args.y = ptr(*normOut_);
      args.x = ptr(*dx_);
      args.weight = ptr(*dw_);
      args.rows = rows_;
      args.cols = cols_;
      args.xStride = args.yStride = cols_;
      kernels::rmsNormForward(kernels::Dtype::fp32, args, stream);
      break;
    }
    default:
      scaledAddKernel().launch((n_ + 1023) / 1024, stream,
                               {*scaledOut_, *da_, *db_, alpha_, int32_t(n_)});
    }
  }

  // After the stream has finished the last launch of every kind: "" when every element of every
  // output is within tolerance of the reference, else what differs (the first few elements).
  std::string check() const {
    std::string problems;
    std::vector<double> want(static_cast<size_t>(rows_ * cols_)), row(static_cast<size_t>(cols_));
    for (int64_t r = 0; r < rows_; ++r) {
      kernels::softmaxRowReference(&x_[size_t(r * cols_)], cols_, row.data());
      std::copy(row.begin(), row.end(), want.begin() + r * cols_);
    }
    compare("softmax", *softmaxOut_, want, problems);
    for (int64_t r = 0; r < rows_; ++r) {
      double squares = 0;
      for (int64_t c = 0; c < cols_; ++c)
        squares += double(x_[size_t(r * cols_ + c)]) * x_[size_t(r * cols_ + c)];
      double rstd = 1.0 / std::sqrt(squares / double(cols_) + 1e-6);
      for (int64_t c = 0; c < cols_; ++c)
        want[size_t(r * cols_ + c)] = x_[size_t(r * cols_ + c)] * rstd * w_[size_t(c)];
    }
    compare("rms_norm", *normOut_, want, problems);
    std::vector<double> add(static_cast<size_t>(n_)), scaled(static_cast<size_t>(n_));
    for (size_t i = 0; i < size_t(n_); ++i) {
      add[i] = double(a_[i]) + b_[i];
      scaled[i] = double(alpha_) * a_[i] + b_[i];
    }
    compare("vector_add", *addOut_, add, problems);
    compare("scaled_add", *scaledOut_, scaled, problems);
    return problems;
  }

  uint32_t seed() const { return seed_; }

private:
  static void *ptr(const rt::DeviceBuffer &b) { return reinterpret_cast<void *>(b.ptr()); }

  void compare(const char *what, const rt::DeviceBuffer &out, const std::vector<double> &want,
               std::string &problems) const {
    std::vector<float> got(want.size());
    out.download(got.data(), got.size() * 4);
    size_t bad = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      double err = std::fabs(double(got[i]) - want[i]);
      if (!(err <= 2e-5 + 2e-4 * std::fabs(want[i])) && bad++ < 3) // NaN (poison) fails too
        problems += std::string(what) + "[" + std::to_string(i) + "] = " +
                    std::to_string(got[i]) + ", want " + std::to_string(want[i]) + " (seed " +
                    std::to_string(seed_) + ")\n";
    }
    if (bad > 3)
      problems += std::string(what) + ": " + std::to_string(bad) + " of " +
                  std::to_string(got.size()) + " wrong\n";
  }

  uint32_t seed_;
  int64_t rows_, cols_, n_;
  float alpha_ = 1;
  std::vector<float> x_, w_, a_, b_;
  std::optional<rt::DeviceBuffer> dx_, dw_, da_, db_, softmaxOut_, normOut_, addOut_, scaledOut_;
};

} // namespace tritium::tools
