// Fused attention (Triton's tutorial 06, FlashAttention's forward) through tritium's kernel
// library: softmax(Q K^T / sqrt(D)) V for [Z, H, S, D] tensors, the kernel written in the DSL
// in kernels/Attention.cpp. On a GPU it checks sampled rows against a double-precision
// reference and prints TFLOP/s (4 Z H S^2 D flops, halved when causal); without one (or with
// TRITIUM_INTERPRET=1) it runs a small case in tritium's CPU interpreter. --decode runs the
// library's decode attention instead (kernels/AttentionDecode.h, flash-decoding): one new
// token per sequence against a KV cache of S positions, contiguous or paged, timed against a
// copy of the cache's bytes.
#include "frontend/Tritium.h"
#include "kernels/Attention.h"
#include "kernels/AttentionBackward.h"
#include "kernels/AttentionDecode.h"
#include "kernels/Autotuner.h"
#include "kernels/HostDtype.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

using namespace tritium;

namespace {

// Timings as the peers' scripts take theirs (kernels::benchmarkLaunches: about 25 ms of
// warm-up, then the median of about 200 ms of runs, each after an L2 flush).

const char *kUsage = R"(usage: attention [--dtype=fp16|bf16|fp8e4m3] [--causal] [--kv-heads=G] [--v-transposed] [--v-workspace] [--backward] [--plan=BMxBNxWxS[ws|pp|ov|wsov|ppov]] [--persistent]
                 [--backward-plan=OWNxSTEPxWxS[split|ws|splitws]] [--backward-block-store]
                 [--dq-plan=OWNxSTEPxW] [Z H S D]
       attention --decode [--dtype=fp16|bf16] [--kv-heads=G] [--page=P] [--decode-plan=BNxWxS[xP]]
                 [Z H S D]
  Runs attention over random [Z, H, S, D] tensors (default 4 x 32 x 4096 x 128 on a GPU,
  1 x 2 x 100 x 64 in the interpreter), checks sampled rows against a double-precision
  reference and, on a GPU, prints TFLOP/s. --kv-heads gives K and V fewer heads (GQA).
  --dtype=fp8e4m3 runs the forward on e4m3 Q, K and V (descales of 1) into a bf16 O;
  --v-transposed stores V as [Z, H, D, S] (AttentionArgs::vTransposed), as fp8 products
  read it in place; --v-workspace gives fp8 with V as stored a workspace, into which the
  call transposes V first (AttentionArgs::workspace).
  --backward also times the library's backward (dQ, dK, dV from the forward's output and
  log-sum-exp, kernels/AttentionBackward.h) on a GPU, counting 2.5 times the forward's
  FLOPs; its results are checked by the tests, not here. --plan=BMxBNxWxS runs the forward
  on BM query rows and BN keys a step, W warps and S stages instead of planAttention's
  (a trailing "ws" adds a producer warp group that issues the K/V copies, "pp" that and
  the compute warp groups' turns at the products, "ov" runs each warp group's softmax under
  its previous P V product, "wsov" both the producer and that, "ppov" all three);
  --persistent runs the forward's plan (given or planned) persistent: as many programs as fit
  the SMs walk the tiles (AttentionPlan::persistent; without --plan the call's own plan
  already walks them at head_dim 128 for unmasked sequences of at most 1024 keys).
  --backward-plan=OWNxSTEPxWxS times the backward with OWN rows a program (keys in dK/dV,
  queries in dQ), STEP rows a step, W warps and S stages instead of planAttentionBackward's
  ("split": dV and dK by two kernels, as head_dim 256 needs; "ws": a producer warp group
  copies the walked tiles); --backward-block-store has the plan (given or planned) store dK
  and dV a whole tile at a time through descriptors (AttentionBackwardPlan::blockStore);
  --dq-plan=OWNxSTEPxW gives dQ's kernel OWN query rows a program, STEP keys a step and W
  warps of its own (AttentionBackwardPlan::dqOwnRows, dqStepRows, dqNumWarps).
  --decode: one query token for each of Z sequences against a cache of S positions (default
  8 x 32 x 8192 x 128 with 8 KV heads on a GPU), paged in pages of P positions with --page;
  prints the time, the cache's bytes read per second and that rate over a copy's;
  --decode-plan=BNxWxS[xP]: BN positions a step, W warps, S stages (and P parts per sequence
  and KV head) instead of the planner's.
)";

struct Options {
  std::string dtype = "bf16";
  bool causal = false;
  int64_t Z = 0, H = 0, S = 0, D = 0, kvHeads = 0;
  bool decode = false;
  int64_t page = 0;
  bool backward = false;
  bool vTransposed = false;
  bool vWorkspace = false;
  std::optional<kernels::AttentionPlan> plan; // --plan, else planAttention's
  std::optional<kernels::AttentionBackwardPlan> backwardPlan; // --backward-plan
  bool blockStore = false;                                     // --backward-block-store
  std::optional<std::array<int, 3>> dqPlan;                    // --dq-plan
  bool persistent = false; // --persistent: the forward's plan walks tiles (AttentionPlan)
  std::optional<kernels::AttentionDecodePlan> decodePlan;     // --decode-plan
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
    } else if (a == "--decode") {
      o.decode = true;
    } else if (a.rfind("--decode-plan=", 0) == 0) {
      long long bn = 0, w = 0, st = 0, parts = 0;
      int n = std::sscanf(a.c_str() + 14, "%lldx%lldx%lldx%lld", &bn, &w, &st, &parts);
      if (n != 3 && n != 4)
        throw std::runtime_error("--decode-plan takes BNxWxS[xP], got " + a.substr(14));
      o.decodePlan = kernels::AttentionDecodePlan{.blockN = int(bn), .numWarps = int(w),
                                                  .numStages = int(st), .splits = int(parts)};
    } else if (a == "--v-transposed") {
      o.vTransposed = true;
    } else if (a == "--v-workspace") {
      o.vWorkspace = true;
    } else if (a == "--backward") {
      o.backward = true;
    } else if (a.rfind("--plan=", 0) == 0) {
      long long bm = 0, bn = 0, w = 0, st = 0;
      int used = 0;
      bool parsed =
          std::sscanf(a.c_str() + 7, "%lldx%lldx%lldx%lld%n", &bm, &bn, &w, &st, &used) == 4;
      // The suffix: "", "ws" or "pp", then "ov" or not.
      std::string suffix = parsed ? a.substr(7 + size_t(used)) : "";
      bool overlap = suffix.ends_with("ov");
      std::string form = overlap ? suffix.substr(0, suffix.size() - 2) : suffix;
      if (!parsed || (form != "" && form != "ws" && form != "pp"))
        throw std::runtime_error("--plan takes BMxBNxWxS[ws|pp|ov|wsov|ppov], got " +
                                 a.substr(7));
      o.plan = kernels::AttentionPlan{.blockM = int(bm), .blockN = int(bn), .numWarps = int(w),
                                      .numStages = int(st), .warpSpecialize = form != "",
                                      .pingPong = form == "pp", .overlapSoftmax = overlap};
    } else if (a.rfind("--backward-plan=", 0) == 0) {
      long long own = 0, step = 0, w = 0, st = 0;
      char form[8] = "";
      int n = std::sscanf(a.c_str() + 16, "%lldx%lldx%lldx%lld%7s", &own, &step, &w, &st, form);
      std::string f = n == 5 ? form : "";
      if (n < 4 || (f != "" && f != "split" && f != "ws" && f != "splitws"))
        throw std::runtime_error("--backward-plan takes OWNxSTEPxWxS[split|ws|splitws], got " +
                                 a.substr(16));
      o.backward = true;
      o.backwardPlan = kernels::AttentionBackwardPlan{.ownRows = int(own),
                                                      .stepRows = int(step),
                                                      .numWarps = int(w),
                                                      .numStages = int(st),
                                                      .splitDkDv = f.rfind("split", 0) == 0,
                                                      .warpSpecialize = f.find("ws") != std::string::npos};
    } else if (a.rfind("--dq-plan=", 0) == 0) {
      long long own = 0, step = 0, w = 0;
      if (std::sscanf(a.c_str() + 10, "%lldx%lldx%lld", &own, &step, &w) != 3)
        throw std::runtime_error("--dq-plan takes OWNxSTEPxW, got " + a.substr(10));
      o.backward = true;
      o.dqPlan = {int(own), int(step), int(w)};
    } else if (a == "--persistent") {
      o.persistent = true;
    } else if (a == "--backward-block-store") {
      o.backward = o.blockStore = true;
    } else if (a.rfind("--page=", 0) == 0) {
      o.page = std::atoll(a.c_str() + 7);
    } else if (a.rfind("--kv-heads=", 0) == 0) {
      o.kvHeads = std::atoll(a.c_str() + 11);
    } else if (!a.empty() && a[0] != '-') {
      dims.push_back(std::atoll(a.c_str()));
    } else {
      throw std::runtime_error("unknown option " + a + "\n" + kUsage);
    }
  }
  if (o.dtype != "fp16" && o.dtype != "bf16" && o.dtype != "fp8e4m3")
    throw std::runtime_error("--dtype takes fp16, bf16 or fp8e4m3, got " + o.dtype);
  if (o.vTransposed && (o.backward || o.decode))
    throw std::runtime_error("--v-transposed runs the forward only");
  if (o.dtype == "fp8e4m3" && (o.backward || o.decode))
    throw std::runtime_error("--dtype=fp8e4m3 runs the forward only (the library's backward "
                             "and decode take fp16 and bf16)");
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

bool isFp8(const std::string &dtype) { return dtype == "fp8e4m3"; }

Tensor random(int64_t n, const std::string &dtype, std::mt19937 &rng) {
  Tensor t;
  int bytes = isFp8(dtype) ? 1 : 2;
  t.raw.resize(size_t(n) * size_t(bytes));
  t.values.resize(size_t(n));
  std::normal_distribution<float> dist(0.f, 1.f);
  for (int64_t i = 0; i < n; ++i) {
    unsigned char *p = t.raw.data() + i * bytes;
    if (isFp8(dtype)) {
      *p = ir::toFp8(dist(rng), ir::ScalarKind::F8E4M3);
      t.values[size_t(i)] = float(ir::fromFp8(*p, ir::ScalarKind::F8E4M3));
    } else {
      kernels::storeElement(dtype, dist(rng), p);
      t.values[size_t(i)] = kernels::loadElement(dtype, p);
    }
  }
  return t;
}

// Uniform values in [-2, 2) from splitmix64, for caches of a billion elements (a normal
// distribution would take minutes to draw them).
Tensor randomFast(int64_t n, const std::string &dtype, uint64_t seed) {
  Tensor t;
  t.raw.resize(size_t(n) * 2);
  t.values.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    float x = float((z ^ (z >> 31)) >> 40) * (4.0f / 16777216.0f) - 2.0f;
    kernels::storeElement(dtype, x, t.raw.data() + i * 2);
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
  // fp8 operands write a bf16 O.
  std::string outDtype = isFp8(o.dtype) ? "bf16" : o.dtype;
  size_t outBytes = size_t(o.Z * o.H * o.S * o.D) * 2;
  Buffer dq(q.raw.size()), dk(k.raw.size()), dv(v.raw.size()), dout(outBytes);
  dq.upload(q.raw.data(), q.raw.size());
  dk.upload(k.raw.data(), k.raw.size());
  if (o.vTransposed) { // each head's [S, D] as [D, S]
    size_t e = v.raw.size() / v.values.size();
    std::vector<unsigned char> t(v.raw.size());
    for (int64_t zh = 0; zh < o.Z * G; ++zh)
      for (int64_t j = 0; j < o.S; ++j)
        for (int64_t d = 0; d < o.D; ++d)
          std::memcpy(&t[size_t((zh * o.D + d) * o.S + j) * e],
                      &v.raw[size_t((zh * o.S + j) * o.D + d) * e], e);
    dv.upload(t.data(), t.size());
  } else {
    dv.upload(v.raw.data(), v.raw.size());
  }
  dout.fill32(kernels::kPoisonBits);
  auto address = [](const Buffer &b) { return reinterpret_cast<void *>(uintptr_t(b.ptr())); };
  kernels::AttentionArgs args{.o = address(dout), .q = address(dq), .k = address(dk),
                              .v = address(dv), .batch = o.Z, .heads = o.H, .kvHeads = G,
                              .seqQ = o.S, .headDim = o.D, .causal = o.causal,
                              .dtype = isFp8(o.dtype)    ? kernels::Dtype::fp8e4m3
                                       : o.dtype == "bf16" ? kernels::Dtype::bf16
                                                           : kernels::Dtype::fp16,
                              .vTransposed = o.vTransposed};
  // fp8 with V as stored: a workspace into which the call transposes V first.
  std::optional<Buffer> workspace;
  if (o.vWorkspace) {
    args.workspaceBytes = kernels::attentionForwardWorkspaceBytes(args);
    workspace.emplace(size_t(std::max<int64_t>(1, args.workspaceBytes)));
    args.workspace = address(*workspace);
  }
  std::optional<kernels::AttentionPlan> chosen = o.plan;
  if (o.persistent && !chosen) // the planner's plan (for sm_90a), persistent
    chosen = kernels::planAttention(o.D, args.dtype, true, o.vTransposed);
  if (o.persistent)
    chosen->persistent = true;
  const kernels::AttentionPlan *plan = chosen ? &*chosen : nullptr;
  kernels::attentionForward(args, stream, plan);
  sync();
  std::vector<unsigned char> raw(outBytes);
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
          double want = 0, spread = 0;
          for (int64_t j = 0; j < o.S; ++j) {
            double p = std::exp(s[size_t(j)] - mx) / sum,
                   vj = v.values[size_t(((z * G + kh) * o.S + j) * o.D + c)];
            want += p * vj;
            // fp8: P is rounded to e4m3 before it meets V (half an ulp, 1/16 of each weight,
            // and steps of 2^-9 below 2^-6).
            spread += (p / 16 + 0x1p-10 / sum) * std::fabs(vj);
          }
          double got = kernels::loadElement(
              outDtype, raw.data() + (((z * o.H + h) * o.S + i) * o.D + c) * 2);
          double bound = 2e-2 * (1 + std::fabs(want)) + (isFp8(o.dtype) ? spread : 0);
          ++checked;
          if (!(std::fabs(got - want) <= bound) && bad++ < 5)
            std::printf("  O[%lld, %lld, %lld, %lld] = %g, want %g\n", (long long)z, (long long)h,
                        (long long)i, (long long)c, got, want);
        }
      }
  std::printf("%s %lld x %lld x %lld x %lld%s: %lld of %lld sampled elements wrong\n",
              o.dtype.c_str(), (long long)o.Z, (long long)o.H, (long long)o.S, (long long)o.D,
              o.causal ? " causal" : "", (long long)bad, (long long)checked);
  if (time) {
    double t = kernels::benchmarkLaunches(
        stream, [&] { kernels::attentionForward(args, stream, plan); });
    double flops = 4.0 * double(o.Z * o.H) * double(o.S) * double(o.S) * double(o.D) /
                   (o.causal ? 2 : 1);
    std::printf("  %.3f ms, %.1f TFLOP/s\n", t, flops / (t * 1e9));
    if (o.backward) {
      Buffer ddo(q.raw.size()), dgq(q.raw.size()), dgk(k.raw.size()), dgv(v.raw.size()),
          dlse(size_t(o.Z * o.H * o.S) * 4);
      ddo.upload(q.raw.data(), q.raw.size()); // any values: the time does not depend on them
      args.lse = static_cast<float *>(address(dlse));
      kernels::attentionForward(args, stream);
      kernels::AttentionBackwardArgs b{
          .dq = address(dgq), .dk = address(dgk), .dv = address(dgv), .q = args.q,
          .k = args.k, .v = args.v, .o = args.o, .dout = address(ddo), .lse = args.lse,
          .batch = o.Z, .heads = o.H, .kvHeads = G, .seqQ = o.S, .headDim = o.D,
          .causal = o.causal, .dtype = args.dtype};
      Buffer work(size_t(kernels::attentionBackwardWorkspaceBytes(b)));
      b.workspace = static_cast<float *>(address(work));
      std::optional<kernels::AttentionBackwardPlan> plan = o.backwardPlan;
      if (o.blockStore || o.dqPlan)
        plan = plan ? *plan : kernels::planAttentionBackward(o.D);
      if (o.blockStore)
        plan->blockStore = true;
      if (o.dqPlan) {
        plan->dqOwnRows = (*o.dqPlan)[0];
        plan->dqStepRows = (*o.dqPlan)[1];
        plan->dqNumWarps = (*o.dqPlan)[2];
      }
      const kernels::AttentionBackwardPlan *bplan = plan ? &*plan : nullptr;
      double bt = kernels::benchmarkLaunches(
          stream, [&] { kernels::attentionBackward(b, stream, bplan); });
      std::printf("  backward %.3f ms, %.1f TFLOP/s\n", bt, 2.5 * flops / (bt * 1e9));
    }
  }
  return bad == 0;
}

// Decode: Z sequences of S cached positions, one query token each; the cache paged in a
// shuffled page order when o.page is given. Sequences 0 and Z - 1, heads 0 and H - 1 are
// checked against double precision.
template <typename Buffer>
bool runDecode(const Options &o, CUstream stream, const std::function<void()> &sync, bool time) {
  std::mt19937 rng(std::random_device{}());
  int64_t G = o.kvHeads ? o.kvHeads : o.H, P = o.page ? o.page : o.S;
  int64_t pagesPerSeq = (o.S + P - 1) / P, pages = o.Z * pagesPerSeq;
  Tensor q = random(o.Z * o.H * o.D, o.dtype, rng), k = randomFast(pages * P * G * o.D, o.dtype, rng()),
         v = randomFast(pages * P * G * o.D, o.dtype, rng());
  std::vector<int32_t> table(static_cast<size_t>(pages));
  for (size_t i = 0; i < table.size(); ++i)
    table[i] = int32_t(i);
  std::shuffle(table.begin(), table.end(), rng);
  Buffer dq(q.raw.size()), dk(k.raw.size()), dv(v.raw.size()), dout(q.raw.size()),
      dtable(table.size() * 4);
  dq.upload(q.raw.data(), q.raw.size());
  dk.upload(k.raw.data(), k.raw.size());
  dv.upload(v.raw.data(), v.raw.size());
  dtable.upload(table.data(), table.size() * 4);
  dout.fill32(kernels::kPoisonBits);
  auto address = [](const Buffer &b) { return reinterpret_cast<void *>(uintptr_t(b.ptr())); };
  kernels::AttentionDecodeArgs args{
      .o = address(dout), .q = address(dq), .k = address(dk), .v = address(dv),
      .blockTable = o.page ? static_cast<const int32_t *>(address(dtable)) : nullptr,
      .pageSize = o.page, .maxPages = pagesPerSeq, .batch = o.Z, .heads = o.H, .kvHeads = G,
      .seqQ = 1, .maxSeqKV = o.S, .headDim = o.D,
      .dtype = o.dtype == "bf16" ? kernels::Dtype::bf16 : kernels::Dtype::fp16};
  kernels::AttentionDecodePlan plan =
      o.decodePlan ? *o.decodePlan : kernels::planAttentionDecode(o.page != 0, o.D);
  int64_t workBytes = kernels::attentionDecodeWorkspaceBytes(args, plan.splits);
  Buffer work(size_t(std::max<int64_t>(workBytes, 16)));
  args.workspace = address(work);
  args.workspaceBytes = workBytes;
  kernels::attentionDecode(args, stream, &plan);
  sync();
  std::vector<unsigned char> raw(q.raw.size());
  dout.download(raw.data(), raw.size());
  auto cacheAt = [&](int64_t z, int64_t j, int64_t kh) {
    int64_t page = o.page ? table[size_t(z * pagesPerSeq + j / P)] : z;
    return size_t(((page * P + j % P) * G + kh) * o.D);
  };
  int64_t bad = 0, checked = 0;
  double scale = 1.0 / std::sqrt(double(o.D));
  std::vector<double> s(size_t(o.S));
  for (int64_t z : {int64_t(0), o.Z - 1})
    for (int64_t h : {int64_t(0), o.H - 1}) {
      int64_t kh = h / (o.H / G);
      const float *qi = &q.values[size_t((z * o.H + h) * o.D)];
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j < o.S; ++j) {
        double d = 0;
        for (int64_t c = 0; c < o.D; ++c)
          d += double(qi[c]) * k.values[cacheAt(z, j, kh) + size_t(c)];
        s[size_t(j)] = d * scale;
        mx = std::max(mx, s[size_t(j)]);
      }
      for (int64_t j = 0; j < o.S; ++j)
        sum += std::exp(s[size_t(j)] - mx);
      for (int64_t c = 0; c < o.D; ++c) {
        double want = 0;
        for (int64_t j = 0; j < o.S; ++j)
          want += std::exp(s[size_t(j)] - mx) / sum * v.values[cacheAt(z, j, kh) + size_t(c)];
        double got = kernels::loadElement(o.dtype, raw.data() + ((z * o.H + h) * o.D + c) * 2);
        ++checked;
        if (!(std::fabs(got - want) <= 2e-2 * (1 + std::fabs(want))) && bad++ < 5)
          std::printf("  O[%lld, %lld, %lld] = %g, want %g\n", (long long)z, (long long)h,
                      (long long)c, got, want);
      }
    }
  std::printf("decode %s %lld x %lld/%lld x %lld x %lld%s: %lld of %lld sampled elements wrong\n",
              o.dtype.c_str(), (long long)o.Z, (long long)o.H, (long long)G, (long long)o.S,
              (long long)o.D, o.page ? (" pages of " + std::to_string(o.page)).c_str() : "",
              (long long)bad, (long long)checked);
  if (time) {
    double t = kernels::benchmarkLaunches(stream, [&] {
      kernels::attentionDecode(args, stream, &plan);
    });
    // The cache the decode reads (its used positions), and a copy of as many bytes.
    size_t bytes = size_t(2 * o.Z * o.S * G * o.D * 2);
    Buffer from(bytes), to(bytes);
    double c = kernels::benchmarkLaunches(stream, [&] {
      TRITIUM_CU(cuMemcpyDtoDAsync(to.ptr(), from.ptr(), bytes, stream));
    });
    double rate = double(bytes) / (t * 1e6), copyRate = 2.0 * double(bytes) / (c * 1e6);
    std::printf("  %.4f ms, %.0f GB/s, copy %.0f GB/s, %.2f of copy\n", t, rate, copyRate,
                rate / copyRate);
  }
  return bad == 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    Options o = parse(argc, argv);
    std::string why;
    bool gpu = !interpreting() && rt::Driver::available(&why);
    if (o.Z == 0 && o.decode)
      o = gpu ? Options{o.dtype, false, 8, 32, 8192, 128, o.kvHeads ? o.kvHeads : 8, true, o.page}
              : Options{o.dtype, false, 2, 8, 300, 64, o.kvHeads ? o.kvHeads : 2, true, o.page};
    else if (o.Z == 0)
      std::tie(o.Z, o.H, o.S, o.D) = gpu ? std::tuple{4L, 32L, 4096L, 128L}
                                         : std::tuple{1L, 2L, 100L, 64L};
    auto runAny = [&](auto buffer, CUstream stream, const std::function<void()> &sync,
                      bool time) {
      using Buffer = decltype(buffer);
      return o.decode ? runDecode<Buffer>(o, stream, sync, time)
                      : run<Buffer>(o, stream, sync, time);
    };
    if (!gpu) {
      if (!interpreting())
        std::printf("no usable GPU on this machine (%s): running in the interpreter.\n",
                    why.c_str());
      setInterpret(true);
      bool ok = runAny(interpreter::HostBuffer(16), nullptr, [] {}, false);
      std::printf(ok ? "all sampled results match the reference (interpreter)\n"
                     : "MISMATCH against the reference (interpreter)\n");
      return ok ? 0 : 1;
    }
    rt::Stream stream;
    bool ok = runAny(rt::DeviceBuffer(16), stream.get(), [&] { stream.sync(); }, true);
    std::printf(ok ? "all sampled results match the reference\n"
                   : "MISMATCH against the reference\n");
    return ok ? 0 : 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
