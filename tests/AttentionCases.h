// The library's attention forward (kernels/Attention.h) against a double-precision reference,
// shared by the GPU tests (tests/gpu/AttentionGpuTest.cpp) and their interpreter twins
// (tests/unit/AttentionInterpreterTest.cpp): grouped-query heads, causal masks aligned
// bottom-right (rows with no key at all when seq_q > seq_kv), sequence lengths that are no
// multiples of the blocks, both memory layouts through strides, and the log-sum-exp. Inputs
// are fresh random numbers rounded to the dtype; O and the LSE are poisoned first and every
// element is checked.
#pragma once

#include "DotCases.h"
#include "MatmulLibraryCases.h"
#include "kernels/Attention.h"
#include "kernels/AttentionBackward.h"

#include <optional>

namespace tritium::testing::attention {

struct AttentionCase {
  kernels::Dtype dtype = kernels::Dtype::bf16;
  int64_t batch = 1, heads = 2, kvHeads = 2, seqQ = 64, seqKV = 64, headDim = 64;
  bool causal = false;
  int64_t windowLeft = -1, windowRight = -1; // a sliding window; -1: unbounded
  bool seqMajor = false; // [batch, seq, heads, head_dim] instead of [batch, heads, seq, head_dim]
  // The backward: O and dO laid out as Q (dense Q and O: the dK/dV kernel reads both through
  // tensor descriptors) instead of in the other layout (varlen: heads first).
  bool oLikeQ = false;
  float scale = 0;
  float descaleQ = 1, descaleK = 1, descaleV = 1; // fp8e4m3 only
  // V stored transposed ([batch, kv_heads, head_dim, seq_kv]); with seqMajor, its rows padded
  // by 3 elements (strides that keep V off tensor descriptors).
  bool vTransposed = false;
  // V as stored, transposed into AttentionArgs::workspace first (poisoned beforehand).
  bool workspace = false;
  // The backward's varlen form: each sequence's query and key lengths, packed (batch unused).
  std::vector<int64_t> varlenQ, varlenKV;
  // Varlen: AttentionArgs::totalKV and AttentionBackwardArgs::totalKV given, so that the
  // forward and the backward's dQ read K and V through tensor descriptors.
  bool totalKV = false;
  // The forward's plan where not planAttention's; the backward's where not
  // planAttentionBackward's.
  std::optional<kernels::AttentionPlan> plan;
  std::optional<kernels::AttentionBackwardPlan> backwardPlan;
  // Scores that grow along the keys (the forward): K's row j scaled by 1 + growth x j, Q's rows
  // by 1.5 and 0.1 in turns of 16, so that some rows' maxima grow by large factors step after
  // step (their accumulators rescaled by factors far from 1) beside rows whose maxima barely
  // move. Random scores alone reach their maxima in the first step or two: a forward that never
  // rescaled its accumulator passed every other case.
  double growth = 0;

  std::string str() const {
    std::ostringstream s;
    s << kernels::dtypeName(dtype) << " h" << heads << "/" << kvHeads;
    if (varlenQ.empty()) {
      s << " b" << batch << " q" << seqQ << " kv" << seqKV;
    } else {
      s << " varlen q";
      for (size_t i = 0; i < varlenQ.size(); ++i)
        s << (i ? "," : "") << varlenQ[i];
      s << " kv";
      for (size_t i = 0; i < varlenKV.size(); ++i)
        s << (i ? "," : "") << varlenKV[i];
      s << (totalKV ? " total-kv" : "");
    }
    if (plan)
      s << " plan " << plan->blockM << "x" << plan->blockN << "x" << plan->numWarps << "x"
        << plan->numStages << (plan->warpSpecialize ? " producer" : "")
        << (plan->overlapSoftmax ? " overlap" : "") << (plan->persistent ? " persistent" : "");
    if (backwardPlan)
      s << " backward plan " << backwardPlan->ownRows << "x" << backwardPlan->stepRows << "x"
        << backwardPlan->numWarps << "x" << backwardPlan->numStages
        << (backwardPlan->splitDkDv ? " split" : "")
        << (backwardPlan->warpSpecialize ? " producer" : "");
    s << " d" << headDim << (causal ? " causal" : "")
      << (windowLeft >= 0 || windowRight >= 0
              ? " window(" + std::to_string(windowLeft) + ", " + std::to_string(windowRight) + ")"
              : "")
      << (seqMajor ? " bshd" : " bhsd") << (oLikeQ ? " o-like-q" : "")
      << (vTransposed ? " v-transposed" : "") << (workspace ? " workspace" : "")
      << (growth > 0 ? " growing scores" : "");
    return s.str();
  }
};

template <typename Buffer>
void checkAttention(CUstream stream, const std::function<void()> &sync, const AttentionCase &c) {
  using namespace tensorcores;
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  ir::ScalarKind kind = scalarKind(c.dtype);
  int64_t D = c.headDim;
  auto count = [&](int64_t h, int64_t s) { return size_t(c.batch * h * s * D); };
  // Element (b, h, s, d) of a tensor with `h` heads and `s` positions in the case's layout.
  auto strides = [&](int64_t h, int64_t s) {
    return c.seqMajor ? kernels::AttentionStrides{s * h * D, D, h * D}
                      : kernels::AttentionStrides{h * s * D, s * D, D};
  };
  kernels::AttentionStrides qs = strides(c.heads, c.seqQ), ks = strides(c.kvHeads, c.seqKV);
  auto at = [&](const kernels::AttentionStrides &st, int64_t b, int64_t h, int64_t s,
                int64_t d) { return size_t(b * st.batch + h * st.head + s * st.seq + d); };
  std::vector<double> qv = randomValues(kind, count(c.heads, c.seqQ), rng),
                      kv = randomValues(kind, count(c.kvHeads, c.seqKV), rng);
  if (c.growth > 0)
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t d = 0; d < D; ++d) {
        for (int64_t h = 0; h < c.heads; ++h)
          for (int64_t i = 0; i < c.seqQ; ++i)
            qv[at(qs, b, h, i, d)] *= (i / 16) % 2 ? 0.1 : 1.5;
        for (int64_t h = 0; h < c.kvHeads; ++h)
          for (int64_t j = 0; j < c.seqKV; ++j)
            kv[at(ks, b, h, j, d)] *= 1 + c.growth * double(j);
      }
  Encoded q = encode(kind, qv), k = encode(kind, kv);
  Encoded v = encode(kind, randomValues(kind, count(c.kvHeads, c.seqKV), rng));
  // A transposed V: element (b, h, j, d) at b x vs.batch + h x vs.head + d x vs.seq + j.
  kernels::AttentionStrides vs = ks;
  std::vector<unsigned char> vRaw = v.raw;
  if (c.vTransposed) {
    int64_t row = c.seqKV + (c.seqMajor ? 3 : 0), elem = int64_t(v.raw.size() / v.values.size());
    vs = {c.kvHeads * D * row, D * row, row};
    vRaw.assign(size_t(c.batch * vs.batch * elem), 0);
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t h = 0; h < c.kvHeads; ++h)
        for (int64_t j = 0; j < c.seqKV; ++j)
          for (int64_t d = 0; d < D; ++d)
            std::memcpy(&vRaw[size_t((b * vs.batch + h * vs.head + d * vs.seq + j) * elem)],
                        &v.raw[at(ks, b, h, j, d) * size_t(elem)], size_t(elem));
  }
  Buffer dq = uploadBytes<Buffer>(q.raw), dk = uploadBytes<Buffer>(k.raw),
         dv = uploadBytes<Buffer>(vRaw);
  bool fp8 = c.dtype == kernels::Dtype::fp8e4m3;
  ir::ScalarKind outKind = fp8 ? ir::ScalarKind::BF16 : kind; // fp8 operands write bf16
  int bytes = ir::bitWidth(outKind) / 8;
  Buffer dout = poisonedBytes<Buffer>(count(c.heads, c.seqQ) * size_t(bytes));
  Buffer dlse = poisonedBytes<Buffer>(size_t(c.batch * c.heads * c.seqQ) * 4);
  auto address = [](const Buffer &buf) { return reinterpret_cast<void *>(uintptr_t(buf.ptr())); };
  kernels::AttentionArgs args{
      .o = address(dout), .lse = static_cast<float *>(address(dlse)), .q = address(dq),
      .k = address(dk), .v = address(dv), .batch = c.batch,
      .heads = c.heads, .kvHeads = c.kvHeads, .seqQ = c.seqQ, .seqKV = c.seqKV, .headDim = D,
      .qStrides = qs, .kStrides = ks, .vStrides = vs, .oStrides = qs, .causal = c.causal,
      .windowLeft = c.windowLeft, .windowRight = c.windowRight, .scale = c.scale,
      .dtype = c.dtype, .descaleQ = c.descaleQ, .descaleK = c.descaleK, .descaleV = c.descaleV,
      .vTransposed = c.vTransposed};
  std::optional<Buffer> workspace;
  if (c.workspace) {
    int64_t bytes = kernels::attentionForwardWorkspaceBytes(args);
    EXPECT_EQ(bytes, c.batch * c.kvHeads * c.seqKV * D) << c.str();
    workspace.emplace(poisonedBytes<Buffer>(size_t(bytes)));
    args.workspace = address(*workspace);
    args.workspaceBytes = bytes;
  }
  kernels::attentionForward(args, stream, c.plan ? &*c.plan : nullptr);
  sync();
  std::vector<unsigned char> raw(count(c.heads, c.seqQ) * size_t(bytes));
  dout.download(raw.data(), raw.size());
  std::vector<double> got = decode(outKind, raw);
  std::vector<float> lse(size_t(c.batch * c.heads * c.seqQ));
  dlse.download(lse.data(), lse.size() * 4);
  double scale = (c.scale != 0 ? c.scale : 1.0 / std::sqrt(double(D))) * c.descaleQ * c.descaleK;
  // P is rounded to the dtype before it meets V: about one rounding of each product (fp8's
  // bound is summed per row below).
  double tol = c.dtype == kernels::Dtype::bf16 ? 2e-2 : 4e-3;
  size_t bad = 0;
  std::ostringstream first;
  int64_t group = c.heads / c.kvHeads, shift = c.seqKV - c.seqQ;
  std::vector<double> s(size_t(c.seqKV));
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < c.seqQ; ++i) {
        int64_t kh = h / group;
        double mx = -INFINITY;
        for (int64_t j = 0; j < c.seqKV; ++j) {
          s[size_t(j)] = -INFINITY;
          if (c.causal && j > i + shift)
            continue;
          if ((c.windowLeft >= 0 && j < i + shift - c.windowLeft) ||
              (c.windowRight >= 0 && j > i + shift + c.windowRight))
            continue;
          double dotv = 0;
          for (int64_t d = 0; d < D; ++d)
            dotv += q.values[at(qs, b, h, i, d)] * k.values[at(ks, b, kh, j, d)];
          s[size_t(j)] = dotv * scale;
          mx = std::max(mx, s[size_t(j)]);
        }
        double sum = 0;
        for (int64_t j = 0; j < c.seqKV; ++j)
          sum += mx == -INFINITY ? 0.0 : std::exp(s[size_t(j)] - mx);
        double wantLse = mx == -INFINITY ? -INFINITY : mx + std::log(sum);
        double gotLse = lse[size_t((b * c.heads + h) * c.seqQ + i)];
        if (!(gotLse == wantLse || std::fabs(gotLse - wantLse) <= 1e-3 * (1 + std::fabs(wantLse))) &&
            bad++ < 5)
          first << "  lse[" << b << ", " << h << ", " << i << "] got " << gotLse << ", want "
                << wantLse << "\n";
        for (int64_t d = 0; d < D; ++d) {
          double want = 0, spread = 0;
          for (int64_t j = 0; sum > 0 && j < c.seqKV; ++j) {
            double p = std::exp(s[size_t(j)] - mx);
            want += p / sum * v.values[at(ks, b, kh, j, d)];
            // e4m3 keeps 3 bits of each weight (half an ulp: 1/16 of it) and 2^-9 apart
            // below 2^-6: a row of few keys sums few such errors, which do not average out.
            spread += (p / 16 + 0x1p-10) / sum * std::fabs(v.values[at(ks, b, kh, j, d)]);
          }
          want *= c.descaleV;
          double bound = fp8 ? spread * c.descaleV + 2e-2 * (1 + std::fabs(want))
                             : tol * (1 + std::fabs(want));
          double g = got[at(qs, b, h, i, d)];
          if (!(std::isfinite(g) && std::fabs(g - want) <= bound) &&
              bad++ < 5)
            first << "  o[" << b << ", " << h << ", " << i << ", " << d << "] got " << g
                  << ", want " << want << "\n";
        }
      }
  EXPECT_EQ(bad, 0u) << "attention " << c.str() << ": " << bad << " wrong (seed " << seed
                     << "):\n"
                     << first.str();
}

// Varlen batches (FlashAttention's cu_seqlens): sequences of the given lengths packed one
// after another, q and o [total_q, heads, D], k and v [total_kv, kv_heads, D]; each sequence
// against its own double-precision reference, the log-sum-exp [heads, total_q] too.
struct VarlenCase {
  kernels::Dtype dtype = kernels::Dtype::bf16;
  std::vector<int64_t> seqQ, seqKV; // per sequence
  int64_t heads = 2, kvHeads = 1, headDim = 64;
  bool causal = false;
  int64_t windowLeft = -1;
  float descaleQ = 1, descaleK = 1, descaleV = 1; // fp8e4m3 only
  // fp8e4m3: V transposed into AttentionArgs::workspace first (poisoned beforehand).
  bool workspace = false;
  // AttentionArgs::totalKV given: K and V through tensor descriptors.
  bool totalKV = false;
};

template <typename Buffer>
void checkVarlenAttention(CUstream stream, const std::function<void()> &sync,
                          const VarlenCase &c) {
  using namespace tensorcores;
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  ir::ScalarKind kind = scalarKind(c.dtype);
  int64_t D = c.headDim, B = int64_t(c.seqQ.size());
  std::vector<int32_t> cuQ{0}, cuKV{0};
  for (int64_t b = 0; b < B; ++b) {
    cuQ.push_back(cuQ.back() + int32_t(c.seqQ[size_t(b)]));
    cuKV.push_back(cuKV.back() + int32_t(c.seqKV[size_t(b)]));
  }
  int64_t totalQ = cuQ.back(), totalKV = cuKV.back();
  int64_t maxQ = *std::max_element(c.seqQ.begin(), c.seqQ.end());
  int64_t maxKV = *std::max_element(c.seqKV.begin(), c.seqKV.end());
  Encoded q = encode(kind, randomValues(kind, size_t(totalQ * c.heads * D), rng));
  Encoded k = encode(kind, randomValues(kind, size_t(totalKV * c.kvHeads * D), rng));
  Encoded v = encode(kind, randomValues(kind, size_t(totalKV * c.kvHeads * D), rng));
  auto bytesOf = [](const std::vector<int32_t> &x) {
    std::vector<unsigned char> raw(x.size() * 4);
    std::memcpy(raw.data(), x.data(), raw.size());
    return raw;
  };
  Buffer dq = uploadBytes<Buffer>(q.raw), dk = uploadBytes<Buffer>(k.raw),
         dv = uploadBytes<Buffer>(v.raw), dcq = uploadBytes<Buffer>(bytesOf(cuQ)),
         dckv = uploadBytes<Buffer>(bytesOf(cuKV));
  bool fp8 = c.dtype == kernels::Dtype::fp8e4m3;
  ir::ScalarKind outKind = fp8 ? ir::ScalarKind::BF16 : kind; // fp8 operands write bf16
  int bytes = ir::bitWidth(outKind) / 8;
  Buffer dout = poisonedBytes<Buffer>(size_t(totalQ * c.heads * D * bytes));
  Buffer dlse = poisonedBytes<Buffer>(size_t(c.heads * totalQ) * 4);
  auto address = [](const Buffer &buf) { return reinterpret_cast<void *>(uintptr_t(buf.ptr())); };
  kernels::AttentionArgs args{
      .o = address(dout), .lse = static_cast<float *>(address(dlse)), .q = address(dq),
      .k = address(dk), .v = address(dv), .batch = B, .heads = c.heads, .kvHeads = c.kvHeads,
      .seqQ = maxQ, .seqKV = maxKV, .headDim = D, .causal = c.causal,
      .windowLeft = c.windowLeft,
      .cuSeqlensQ = static_cast<const int32_t *>(address(dcq)),
      .cuSeqlensKV = static_cast<const int32_t *>(address(dckv)), .totalQ = totalQ,
      .totalKV = c.totalKV ? totalKV : 0, .dtype = c.dtype, .descaleQ = c.descaleQ, .descaleK = c.descaleK, .descaleV = c.descaleV};
  std::optional<Buffer> workspace;
  if (c.workspace) {
    int64_t need = kernels::attentionForwardWorkspaceBytes(args);
    EXPECT_GE(need, c.kvHeads * D * totalKV);
    workspace.emplace(poisonedBytes<Buffer>(size_t(need)));
    args.workspace = address(*workspace);
    args.workspaceBytes = need;
  }
  kernels::attentionForward(args, stream);
  sync();
  std::vector<unsigned char> raw(size_t(totalQ * c.heads * D * bytes));
  dout.download(raw.data(), raw.size());
  std::vector<double> got = decode(outKind, raw);
  std::vector<float> lse(size_t(c.heads * totalQ));
  dlse.download(lse.data(), lse.size() * 4);
  double scale = 1.0 / std::sqrt(double(D)) * c.descaleQ * c.descaleK;
  double tol = c.dtype == kernels::Dtype::bf16 ? 2e-2 : 4e-3;
  size_t bad = 0;
  std::ostringstream first;
  int64_t group = c.heads / c.kvHeads;
  for (int64_t b = 0; b < B; ++b) {
    int64_t sq = c.seqQ[size_t(b)], skv = c.seqKV[size_t(b)], shift = skv - sq;
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < sq; ++i) {
        int64_t row = cuQ[size_t(b)] + i, kh = h / group;
        std::vector<double> s(size_t(skv), -INFINITY);
        double mx = -INFINITY;
        for (int64_t j = 0; j < skv; ++j) {
          if ((c.causal && j > i + shift) || (c.windowLeft >= 0 && j < i + shift - c.windowLeft))
            continue;
          double dotv = 0;
          for (int64_t d = 0; d < D; ++d)
            dotv += q.values[size_t((row * c.heads + h) * D + d)] *
                    k.values[size_t(((cuKV[size_t(b)] + j) * c.kvHeads + kh) * D + d)];
          s[size_t(j)] = dotv * scale;
          mx = std::max(mx, s[size_t(j)]);
        }
        double sum = 0;
        for (int64_t j = 0; j < skv; ++j)
          sum += mx == -INFINITY ? 0.0 : std::exp(s[size_t(j)] - mx);
        double wantLse = mx == -INFINITY ? -INFINITY : mx + std::log(sum);
        double gotLse = lse[size_t(h * totalQ + row)];
        if (!(gotLse == wantLse || std::fabs(gotLse - wantLse) <= 1e-3 * (1 + std::fabs(wantLse))) &&
            bad++ < 5)
          first << "  lse[" << h << ", " << row << "] got " << gotLse << ", want " << wantLse
                << "\n";
        for (int64_t d = 0; d < D; ++d) {
          double want = 0, spread = 0;
          for (int64_t j = 0; sum > 0 && j < skv; ++j) {
            double p = std::exp(s[size_t(j)] - mx),
                   vj = v.values[size_t(((cuKV[size_t(b)] + j) * c.kvHeads + kh) * D + d)];
            want += p / sum * vj;
            spread += (p / 16 + 0x1p-10) / sum * std::fabs(vj); // fp8's P: as checkAttention
          }
          want *= c.descaleV;
          double bound = fp8 ? spread * c.descaleV + 2e-2 * (1 + std::fabs(want))
                             : tol * (1 + std::fabs(want));
          double g = got[size_t((row * c.heads + h) * D + d)];
          if (!(std::isfinite(g) && std::fabs(g - want) <= bound) && bad++ < 5)
            first << "  o[" << row << ", " << h << ", " << d << "] got " << g << ", want " << want
                  << "\n";
        }
      }
  }
  EXPECT_EQ(bad, 0u) << "varlen attention: " << bad << " wrong (seed " << seed << "):\n"
                     << first.str();
}

// The library's forward then its backward (kernels/AttentionBackward.h) on fresh random
// inputs in the case's layout and window (or packed varlen sequences), outputs poisoned first:
// the inputs, their layout and the three gradients.
struct BackwardRun {
  tensorcores::Encoded q, k, v, dO;
  int64_t B = 0, SQ = 0, SK = 0;
  std::vector<int64_t> lq, lk, offQ, offK; // each sequence's lengths and first packed row
  kernels::AttentionStrides qs, ks, os;
  std::vector<double> gotQ, gotK, gotV;
  // Element (b, h, i, d) of Q (and dQ), O (and dO), K (and dK, V, dV).
  size_t atQ(int64_t b, int64_t h, int64_t i, int64_t d) const {
    return size_t(b * qs.batch + h * qs.head + (offQ[size_t(b)] + i) * qs.seq + d);
  }
  size_t atO(int64_t b, int64_t h, int64_t i, int64_t d) const {
    return size_t(b * os.batch + h * os.head + (offQ[size_t(b)] + i) * os.seq + d);
  }
  size_t atK(int64_t b, int64_t h, int64_t j, int64_t d) const {
    return size_t(b * ks.batch + h * ks.head + (offK[size_t(b)] + j) * ks.seq + d);
  }
  // Whether query i of sequence b sees key j under the case's mask and window.
  static bool sees(const AttentionCase &c, int64_t i, int64_t j, int64_t shift) {
    return !(c.causal && j > i + shift) && !(c.windowLeft >= 0 && j < i + shift - c.windowLeft) &&
           !(c.windowRight >= 0 && j > i + shift + c.windowRight);
  }
  // The exact softmax row of query i of head h in sequence b, from Q and K in double:
  // p[0 .. lk[b]), zeros for the keys it does not see (all zeros when it sees none).
  void probabilities(const AttentionCase &c, const std::vector<double> &Q,
                     const std::vector<double> &K, int64_t b, int64_t h, int64_t i,
                     std::vector<double> &p) const {
    int64_t nk = lk[size_t(b)], shift = nk - lq[size_t(b)], kh = h / (c.heads / c.kvHeads);
    double scale = c.scale != 0 ? c.scale : 1.0 / std::sqrt(double(c.headDim));
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < nk; ++j) {
      p[size_t(j)] = -INFINITY;
      if (!sees(c, i, j, shift))
        continue;
      double s = 0;
      for (int64_t d = 0; d < c.headDim; ++d)
        s += Q[atQ(b, h, i, d)] * K[atK(b, kh, j, d)];
      p[size_t(j)] = s * scale;
      mx = std::max(mx, p[size_t(j)]);
    }
    for (int64_t j = 0; j < nk; ++j)
      sum += mx == -INFINITY ? 0.0 : std::exp(p[size_t(j)] - mx);
    for (int64_t j = 0; j < nk; ++j)
      p[size_t(j)] = sum > 0 ? std::exp(p[size_t(j)] - mx) / sum : 0.0;
  }
};

template <typename Buffer>
BackwardRun runAttentionBackward(CUstream stream, const std::function<void()> &sync,
                                 const AttentionCase &c, std::mt19937 &rng) {
  using namespace tensorcores;
  BackwardRun r;
  ir::ScalarKind kind = scalarKind(c.dtype);
  int64_t D = c.headDim, H = c.heads, KH = c.kvHeads;
  bool varlen = !c.varlenQ.empty();
  int64_t B = r.B = varlen ? int64_t(c.varlenQ.size()) : c.batch;
  r.lq.assign(size_t(B), c.seqQ), r.lk.assign(size_t(B), c.seqKV);
  r.offQ.assign(size_t(B), 0), r.offK.assign(size_t(B), 0);
  std::vector<int32_t> cuQ{0}, cuKV{0};
  if (varlen)
    for (int64_t b = 0; b < B; ++b) {
      r.lq[size_t(b)] = c.varlenQ[size_t(b)], r.lk[size_t(b)] = c.varlenKV[size_t(b)];
      r.offQ[size_t(b)] = cuQ.back(), r.offK[size_t(b)] = cuKV.back();
      cuQ.push_back(cuQ.back() + int32_t(r.lq[size_t(b)]));
      cuKV.push_back(cuKV.back() + int32_t(r.lk[size_t(b)]));
    }
  int64_t SQ = r.SQ = *std::max_element(r.lq.begin(), r.lq.end());
  int64_t SK = r.SK = *std::max_element(r.lk.begin(), r.lk.end());
  int64_t rowsQ = varlen ? cuQ.back() : B * SQ, rowsK = varlen ? cuKV.back() : B * SK;
  size_t countQ = size_t(rowsQ * H * D), countK = size_t(rowsK * KH * D);
  r.q = encode(kind, randomValues(kind, countQ, rng));
  r.k = encode(kind, randomValues(kind, countK, rng));
  r.v = encode(kind, randomValues(kind, countK, rng));
  r.dO = encode(kind, randomValues(kind, countQ, rng));
  auto bytesOf = [](const std::vector<int32_t> &x) {
    std::vector<unsigned char> raw(x.size() * 4);
    std::memcpy(raw.data(), x.data(), raw.size());
    return raw;
  };
  int bytes = ir::bitWidth(kind) / 8;
  Buffer dq_ = uploadBytes<Buffer>(r.q.raw), dk_ = uploadBytes<Buffer>(r.k.raw),
         dv_ = uploadBytes<Buffer>(r.v.raw), ddo = uploadBytes<Buffer>(r.dO.raw),
         dcq = uploadBytes<Buffer>(bytesOf(cuQ)), dckv = uploadBytes<Buffer>(bytesOf(cuKV));
  Buffer dout = poisonedBytes<Buffer>(countQ * size_t(bytes));
  Buffer dlse = poisonedBytes<Buffer>(size_t(H * rowsQ) * 4);
  Buffer gq = poisonedBytes<Buffer>(countQ * size_t(bytes));
  Buffer gk = poisonedBytes<Buffer>(countK * size_t(bytes));
  Buffer gv = poisonedBytes<Buffer>(countK * size_t(bytes));
  auto address = [](const Buffer &buf) { return reinterpret_cast<void *>(uintptr_t(buf.ptr())); };
  // The case's layout; the gradients are laid out as their inputs. O and dO take the other
  // layout, so that mixing up their strides with Q's shows. Varlen sequences are packed
  // [total, heads, head_dim] (as seqMajor), or for O and dO in the other layout, heads first
  // [heads, total, head_dim] (then the dK/dV kernel reads them through pointers).
  auto strides = [&](int64_t heads, int64_t seq, int64_t rows, bool seqMajor) {
    if (varlen)
      return seqMajor ? kernels::AttentionStrides{0, D, heads * D}
                      : kernels::AttentionStrides{0, rows * D, D};
    return seqMajor ? kernels::AttentionStrides{seq * heads * D, D, heads * D}
                    : kernels::AttentionStrides{heads * seq * D, seq * D, D};
  };
  bool seqMajor = c.seqMajor || varlen;
  r.qs = strides(H, SQ, rowsQ, seqMajor), r.ks = strides(KH, SK, rowsK, seqMajor),
  r.os = strides(H, SQ, rowsQ, c.oLikeQ ? seqMajor : !seqMajor);
  const int32_t *cuQArg = varlen ? static_cast<const int32_t *>(address(dcq)) : nullptr;
  const int32_t *cuKVArg = varlen ? static_cast<const int32_t *>(address(dckv)) : nullptr;
  kernels::attentionForward({.o = address(dout), .lse = static_cast<float *>(address(dlse)),
                             .q = address(dq_), .k = address(dk_), .v = address(dv_),
                             .batch = B, .heads = H, .kvHeads = KH, .seqQ = SQ, .seqKV = SK,
                             .headDim = D, .qStrides = r.qs, .kStrides = r.ks,
                             .vStrides = r.ks, .oStrides = r.os, .causal = c.causal,
                             .windowLeft = c.windowLeft, .windowRight = c.windowRight,
                             .cuSeqlensQ = cuQArg, .cuSeqlensKV = cuKVArg,
                             .totalQ = varlen ? rowsQ : 0,
                             .totalKV = varlen && c.totalKV ? rowsK : 0, .scale = c.scale,
                             .dtype = c.dtype},
                            stream);
  kernels::AttentionBackwardArgs bargs{
      .dq = address(gq), .dk = address(gk), .dv = address(gv), .q = address(dq_),
      .k = address(dk_), .v = address(dv_), .o = address(dout), .dout = address(ddo),
      .lse = static_cast<const float *>(address(dlse)), .batch = B, .heads = H,
      .kvHeads = KH, .seqQ = SQ, .seqKV = SK, .headDim = D, .causal = c.causal,
      .scale = c.scale, .dtype = c.dtype, .windowLeft = c.windowLeft,
      .windowRight = c.windowRight, .qStrides = r.qs, .kStrides = r.ks, .vStrides = r.ks,
      .oStrides = r.os, .cuSeqlensQ = cuQArg, .cuSeqlensKV = cuKVArg,
      .totalQ = varlen ? rowsQ : 0, .totalKV = varlen && c.totalKV ? rowsK : 0};
  Buffer work = poisonedBytes<Buffer>(size_t(kernels::attentionBackwardWorkspaceBytes(bargs)));
  bargs.workspace = static_cast<float *>(address(work));
  kernels::attentionBackward(bargs, stream, c.backwardPlan ? &*c.backwardPlan : nullptr);
  sync();
  auto fetch = [&](const Buffer &buf, size_t n) {
    std::vector<unsigned char> raw(n * size_t(bytes));
    buf.download(raw.data(), raw.size());
    return decode(kind, raw);
  };
  r.gotQ = fetch(gq, countQ), r.gotK = fetch(gk, countK), r.gotV = fetch(gv, countK);
  return r;
}

// Each gradient against gradients in double precision from the same inputs: P from the exact
// scores, dV = P^T dO, dP = dO V^T, dS = P (dP - rowsum(dO O)), dQ = scale dS K, dK = scale
// dS^T Q, summed over a K/V head's query heads. The kernels read the forward's rounded O and
// its fp32 log-sum-exp: each element is bounded by tol (|want| + the tensor's root mean
// square) plus twice its rounding bound.
template <typename Buffer>
void checkAttentionBackward(CUstream stream, const std::function<void()> &sync,
                            const AttentionCase &c) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  BackwardRun r = runAttentionBackward<Buffer>(stream, sync, c, rng);
  const std::vector<double> &gotQ = r.gotQ, &gotK = r.gotK, &gotV = r.gotV;
  const tensorcores::Encoded &q = r.q, &k = r.k, &v = r.v, &dO = r.dO;
  int64_t D = c.headDim, H = c.heads, KH = c.kvHeads, B = r.B, SK = r.SK;
  size_t countQ = gotQ.size(), countK = gotK.size();
  std::vector<double> wantQ(countQ), wantK(countK), wantV(countK);
  // Each gradient's rounding bound, accumulated beside it: O is read rounded to the dtype (u:
  // half its ulp), so delta is off by up to u sum |dO O|, which dP - delta does not cancel;
  // dP is rounded once in fp32, P and dS once to the dtype before their products.
  double u = c.dtype == kernels::Dtype::bf16 ? 1.0 / 256 : 1.0 / 2048;
  std::vector<double> errQ(countQ), errK(countK), errV(countK), dsErr(static_cast<size_t>(SK));
  double scale = c.scale != 0 ? c.scale : 1.0 / std::sqrt(double(D));
  int64_t group = H / KH;
  auto atQ = [&](int64_t b, int64_t h, int64_t i, int64_t d) { return r.atQ(b, h, i, d); };
  auto atO = [&](int64_t b, int64_t h, int64_t i, int64_t d) { return r.atO(b, h, i, d); };
  auto atK = [&](int64_t b, int64_t h, int64_t j, int64_t d) { return r.atK(b, h, j, d); };
  const std::vector<int64_t> &lq = r.lq, &lk = r.lk;
  std::vector<double> p(static_cast<size_t>(SK)), dp(static_cast<size_t>(SK));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < lq[size_t(b)]; ++i) {
        int64_t kh = h / group, nk = lk[size_t(b)];
        r.probabilities(c, q.values, k.values, b, h, i, p);
        // delta = rowsum(dO O), O = P V
        double delta = 0, deltaErr = 0;
        for (int64_t d = 0; d < D; ++d) {
          double o = 0;
          for (int64_t j = 0; j < nk; ++j)
            o += p[size_t(j)] * v.values[atK(b, kh, j, d)];
          delta += dO.values[atO(b, h, i, d)] * o;
          deltaErr += u * std::fabs(dO.values[atO(b, h, i, d)] * o);
        }
        for (int64_t j = 0; j < nk; ++j) {
          double x = 0;
          for (int64_t d = 0; d < D; ++d)
            x += dO.values[atO(b, h, i, d)] * v.values[atK(b, kh, j, d)];
          dp[size_t(j)] = p[size_t(j)] * (x - delta); // dS
          dsErr[size_t(j)] = p[size_t(j)] * (deltaErr + 1e-6 * std::fabs(x)) +
                             u * std::fabs(dp[size_t(j)]);
        }
        for (int64_t j = 0; j < nk; ++j)
          for (int64_t d = 0; d < D; ++d) {
            double dov = dO.values[atO(b, h, i, d)], qv = q.values[atQ(b, h, i, d)],
                   kv = k.values[atK(b, kh, j, d)];
            wantV[atK(b, kh, j, d)] += p[size_t(j)] * dov;
            wantK[atK(b, kh, j, d)] += scale * dp[size_t(j)] * qv;
            wantQ[atQ(b, h, i, d)] += scale * dp[size_t(j)] * kv;
            errV[atK(b, kh, j, d)] += u * p[size_t(j)] * std::fabs(dov);
            errK[atK(b, kh, j, d)] += scale * dsErr[size_t(j)] * std::fabs(qv);
            errQ[atQ(b, h, i, d)] += scale * dsErr[size_t(j)] * std::fabs(kv);
          }
      }
  double tol = c.dtype == kernels::Dtype::bf16 ? 3e-2 : 6e-3;
  auto compare = [&](const char *name, const std::vector<double> &got,
                     const std::vector<double> &want, const std::vector<double> &err) {
    double rms = 0;
    for (double w : want)
      rms += w * w;
    rms = std::sqrt(rms / double(std::max<size_t>(want.size(), 1)));
    size_t bad = 0;
    std::ostringstream first;
    for (size_t e = 0; e < want.size(); ++e)
      if (!(std::isfinite(got[e]) &&
            std::fabs(got[e] - want[e]) <= tol * (std::fabs(want[e]) + rms) + 2 * err[e]) &&
          bad++ < 5)
        first << "  " << name << "[" << e << "] got " << got[e] << ", want " << want[e] << "\n";
    EXPECT_EQ(bad, 0u) << "attention backward " << c.str() << ": " << name << " " << bad
                       << " wrong (seed " << seed << ", rms " << rms << "):\n"
                       << first.str();
  };
  compare("dq", gotQ, wantQ, errQ);
  compare("dk", gotK, wantK, errK);
  compare("dv", gotV, wantV, errV);
}

// The backward against the finite differences of the forward: with L = sum(dO * O) and O the
// exact forward of the same inputs (doubles), (L(x + e) - L(x - e)) / 2e at sampled elements
// of Q, K and V, which no hand-derived formula enters. Each sampled element is bounded by tol
// (|difference| + the kernel's gradient's root mean square).
template <typename Buffer>
void checkAttentionBackwardByFiniteDifferences(CUstream stream,
                                               const std::function<void()> &sync,
                                               const AttentionCase &c) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  BackwardRun r = runAttentionBackward<Buffer>(stream, sync, c, rng);
  int64_t D = c.headDim, H = c.heads, group = c.heads / c.kvHeads;
  std::vector<double> Q = r.q.values, K = r.k.values, V = r.v.values;
  auto loss = [&] {
    double L = 0;
    std::vector<double> p(static_cast<size_t>(r.SK));
    for (int64_t b = 0; b < r.B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < r.lq[size_t(b)]; ++i) {
          r.probabilities(c, Q, K, b, h, i, p);
          for (int64_t d = 0; d < D; ++d) {
            double o = 0;
            for (int64_t j = 0; j < r.lk[size_t(b)]; ++j)
              o += p[size_t(j)] * V[r.atK(b, h / group, j, d)];
            L += r.dO.values[r.atO(b, h, i, d)] * o;
          }
        }
    return L;
  };
  double tol = c.dtype == kernels::Dtype::bf16 ? 4e-2 : 1e-2;
  auto check = [&](const char *name, std::vector<double> &x, const std::vector<double> &got) {
    double rms = 0;
    for (double g : got)
      rms += g * g;
    rms = std::sqrt(rms / double(std::max<size_t>(got.size(), 1)));
    std::uniform_int_distribution<size_t> pick(0, x.size() - 1);
    size_t bad = 0;
    std::ostringstream first;
    for (int n = 0; n < 24; ++n) {
      size_t e = pick(rng);
      double keep = x[e], step = 1e-3;
      x[e] = keep + step;
      double up = loss();
      x[e] = keep - step;
      double down = loss();
      x[e] = keep;
      double fd = (up - down) / (2 * step);
      if (!(std::isfinite(got[e]) && std::fabs(got[e] - fd) <= tol * (std::fabs(fd) + rms)) &&
          bad++ < 5)
        first << "  " << name << "[" << e << "] got " << got[e] << ", finite difference " << fd
              << "\n";
    }
    EXPECT_EQ(bad, 0u) << "attention backward by finite differences " << c.str() << ": "
                       << name << " " << bad << " of 24 wrong (seed " << seed << ", rms " << rms
                       << "):\n"
                       << first.str();
  };
  check("dq", Q, r.gotQ);
  check("dk", K, r.gotK);
  check("dv", V, r.gotV);
}

} // namespace tritium::testing::attention
