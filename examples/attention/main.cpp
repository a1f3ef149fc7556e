// Fused attention (Triton's tutorial 06, FlashAttention's forward) through tritium's kernel
// library: softmax(Q K^T / sqrt(D)) V for [Z, H, S, D] tensors, the kernel written in the DSL
// in kernels/Attention.cpp. On a GPU it checks sampled rows against a double-precision
// reference and prints TFLOP/s (4 Z H S^2 D flops, halved when causal); without one (or with
// TRITIUM_INTERPRET=1) it runs a small case in tritium's CPU interpreter.
#include "frontend/Tritium.h"
#include "kernels/Attention.h"
#include "kernels/HostDtype.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

using namespace tritium;

namespace {

const char *kUsage = R"(usage: attention [--dtype=fp16|bf16] [--causal] [--kv-heads=G] [Z H S D]
  Runs attention over random [Z, H, S, D] tensors (default 4 x 32 x 4096 x 128 on a GPU,
  1 x 2 x 100 x 64 in the interpreter), checks sampled rows against a double-precision
  reference and, on a GPU, prints TFLOP/s. --kv-heads gives K and V fewer heads (GQA).
)";

struct Options {
  std::string dtype = "bf16";
  bool causal = false;
  int64_t Z = 0, H = 0, S = 0, D = 0, kvHeads = 0;
};

Options parse(int argc, char **argv) {
  Options o;
  std::vector<int64_t> dims;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (a.rfind("--dtype=", 0) == 0) {
      o.dtype = a.substr(8);
    } else if (a == "--causal") {
      o.causal = true;
    } else if (a.rfind("--kv-heads=", 0) == 0) {
      o.kvHeads = std::atoll(a.c_str() + 11);
    } else if (!a.empty() && a[0] != '-') {
      dims.push_back(std::atoll(a.c_str()));
    } else {
      throw std::runtime_error("unknown option " + a + "\n" + kUsage);
    }
  }
  if (o.dtype != "fp16" && o.dtype != "bf16")
    throw std::runtime_error("--dtype takes fp16 or bf16, got " + o.dtype);
  if (!dims.empty() && dims.size() != 4)
    throw std::runtime_error(std::string("give Z H S D, or nothing\n") + kUsage);
  if (dims.size() == 4)
    o.Z = dims[0], o.H = dims[1], o.S = dims[2], o.D = dims[3];
  return o;
}

struct Tensor {
  std::vector<unsigned char> raw;
  std::vector<float> values;
};

Tensor random(int64_t n, const std::string &dtype, std::mt19937 &rng) {
  Tensor t;
  t.raw.resize(size_t(n) * 2);
  t.values.resize(size_t(n));
  std::normal_distribution<float> dist(0.f, 1.f);
  for (int64_t i = 0; i < n; ++i) {
    kernels::storeElement(dtype, dist(rng), t.raw.data() + i * 2);
    t.values[size_t(i)] = kernels::loadElement(dtype, t.raw.data() + i * 2);
  }
  return t;
}

template <typename Buffer>
bool run(const Options &o, CUstream stream, const std::function<void()> &sync, bool time) {
  std::mt19937 rng(std::random_device{}());
  int64_t G = o.kvHeads ? o.kvHeads : o.H;
  Tensor q = random(o.Z * o.H * o.S * o.D, o.dtype, rng),
         k = random(o.Z * G * o.S * o.D, o.dtype, rng),
         v = random(o.Z * G * o.S * o.D, o.dtype, rng);
  Buffer dq(q.raw.size()), dk(k.raw.size()), dv(v.raw.size()), dout(q.raw.size());
  dq.upload(q.raw.data(), q.raw.size());
  dk.upload(k.raw.data(), k.raw.size());
  dv.upload(v.raw.data(), v.raw.size());
  dout.fill32(kernels::kPoisonBits);
  auto address = [](const Buffer &b) { return reinterpret_cast<void *>(uintptr_t(b.ptr())); };
  kernels::AttentionArgs args{.o = address(dout), .q = address(dq), .k = address(dk),
                              .v = address(dv), .batch = o.Z, .heads = o.H, .kvHeads = G,
                              .seqQ = o.S, .headDim = o.D, .causal = o.causal,
                              .dtype = o.dtype == "bf16" ? kernels::Dtype::bf16
                                                         : kernels::Dtype::fp16};
  kernels::attentionForward(args, stream);
  sync();
  std::vector<unsigned char> raw(q.raw.size());
  dout.download(raw.data(), raw.size());
  // Sampled rows of (batch 0 and the last, head 0 and the last) against double precision.
  int64_t bad = 0, checked = 0;
  double scale = 1.0 / std::sqrt(double(o.D));
  std::vector<double> s(size_t(o.S));
  for (int64_t z : {int64_t(0), o.Z - 1})
    for (int64_t h : {int64_t(0), o.H - 1})
      for (int64_t i = 0; i < o.S; i += std::max<int64_t>(1, o.S / 16)) {
        int64_t kh = h / (o.H / G);
        const float *qi = &q.values[size_t(((z * o.H + h) * o.S + i) * o.D)];
        double mx = -INFINITY;
        for (int64_t j = 0; j < o.S; ++j) {
          s[size_t(j)] = -INFINITY;
          if (o.causal && j > i)
            continue;
          const float *kj = &k.values[size_t(((z * G + kh) * o.S + j) * o.D)];
          double d = 0;
          for (int64_t c = 0; c < o.D; ++c)
            d += double(qi[c]) * kj[c];
          s[size_t(j)] = d * scale;
          mx = std::max(mx, s[size_t(j)]);
        }
        double sum = 0;
        for (int64_t j = 0; j < o.S; ++j)
          sum += std::exp(s[size_t(j)] - mx);
        for (int64_t c = 0; c < o.D; ++c) {
          double want = 0;
          for (int64_t j = 0; j < o.S; ++j)
            want += std::exp(s[size_t(j)] - mx) / sum *
                    v.values[size_t(((z * G + kh) * o.S + j) * o.D + c)];
          double got = kernels::loadElement(
              o.dtype, raw.data() + (((z * o.H + h) * o.S + i) * o.D + c) * 2);
          ++checked;
          if (!(std::fabs(got - want) <= 2e-2 * (1 + std::fabs(want))) && bad++ < 5)
            std::printf("  O[%lld, %lld, %lld, %lld] = %g, want %g\n", (long long)z, (long long)h,
                        (long long)i, (long long)c, got, want);
        }
      }
  std::printf("%s %lld x %lld x %lld x %lld%s: %lld of %lld sampled elements wrong\n",
              o.dtype.c_str(), (long long)o.Z, (long long)o.H, (long long)o.S, (long long)o.D,
              o.causal ? " causal" : "", (long long)bad, (long long)checked);
  if (time) {
    std::vector<float> ms;
    for (int i = 0; i < 30; ++i) {
      rt::l2Flush(stream);
      rt::Event start, stop;
      start.record(stream);
      kernels::attentionForward(args, stream);
      stop.record(stream);
      if (i >= 5)
        ms.push_back(stop.msSince(start));
    }
    std::nth_element(ms.begin(), ms.begin() + long(ms.size() / 2), ms.end());
    double t = ms[ms.size() / 2];
    double flops = 4.0 * double(o.Z * o.H) * double(o.S) * double(o.S) * double(o.D) /
                   (o.causal ? 2 : 1);
    std::printf("  %.3f ms, %.1f TFLOP/s\n", t, flops / (t * 1e9));
  }
  return bad == 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    Options o = parse(argc, argv);
    std::string why;
    bool gpu = !interpreting() && rt::Driver::available(&why);
    if (o.Z == 0)
      o = gpu ? Options{o.dtype, o.causal, 4, 32, 4096, 128, o.kvHeads}
              : Options{o.dtype, o.causal, 1, 2, 100, 64, o.kvHeads};
    if (!gpu) {
      if (!interpreting())
        std::printf("no usable GPU on this machine (%s): running in the interpreter.\n",
                    why.c_str());
      setInterpret(true);
      bool ok = run<interpreter::HostBuffer>(o, nullptr, [] {}, false);
      std::printf(ok ? "all sampled results match the reference (interpreter)\n"
                     : "MISMATCH against the reference (interpreter)\n");
      return ok ? 0 : 1;
    }
    rt::Stream stream;
    bool ok = run<rt::DeviceBuffer>(o, stream.get(), [&] { stream.sync(); }, true);
    std::printf(ok ? "all sampled results match the reference\n"
                   : "MISMATCH against the reference\n");
    return ok ? 0 : 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
