// The library's decode attention (kernels/AttentionDecode.h) against a double-precision
// reference, shared by the GPU tests (tests/gpu/AttentionGpuTest.cpp) and their interpreter
// twins (tests/unit/AttentionInterpreterTest.cpp): contiguous and paged caches (pages handed
// out in a shuffled order, so that a wrong page number shows), sequences of their own lengths
// (empty, 1, 17, and lengths no multiple of the step), grouped-query heads up to 8:1, one and
// several query tokens (causal), split into parts and combined, or read whole. Inputs are fresh
// random numbers rounded to the dtype; O and the LSE are poisoned first and every element is
// checked.
#pragma once

#include "DotCases.h"
#include "MatmulLibraryCases.h"
#include "kernels/AttentionDecode.h"

#include <algorithm>
#include <numeric>

namespace tritium::testing::attention {

struct DecodeCase {
  kernels::Dtype dtype = kernels::Dtype::bf16;
  int64_t batch = 2, heads = 8, kvHeads = 1, seqQ = 1, headDim = 64;
  std::vector<int32_t> seqLens = {100, 37}; // one per sequence
  int64_t pageSize = 0;                      // 0: a contiguous cache
  bool headMajor = false; // contiguous: [batch, kv_heads, positions, D] (else positions first)
  int splits = 0;                            // 0: the planner's; 1: no workspace
  bool causal = true;

  std::string str() const {
    std::ostringstream s;
    s << kernels::dtypeName(dtype) << " b" << batch << " h" << heads << "/" << kvHeads << " q"
      << seqQ << " d" << headDim << " lens";
    for (int32_t l : seqLens)
      s << " " << l;
    s << (pageSize ? " pages of " + std::to_string(pageSize)
                   : headMajor ? " contiguous, heads first" : " contiguous")
      << " splits "
      << splits << (causal ? " causal" : "");
    return s.str();
  }
};

template <typename Buffer>
void checkDecode(CUstream stream, const std::function<void()> &sync, const DecodeCase &c) {
  using namespace tensorcores;
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  ir::ScalarKind kind = scalarKind(c.dtype);
  int64_t D = c.headDim, maxSeq = *std::max_element(c.seqLens.begin(), c.seqLens.end());
  // The cache: [pages, page_rows, kv_heads, D]; contiguous: one page of maxSeq rows per
  // sequence. Paged: each sequence's pages are numbered in a shuffled order.
  int64_t pageRows = c.pageSize ? c.pageSize : std::max<int64_t>(maxSeq, 1);
  int64_t maxPages = c.pageSize ? (maxSeq + c.pageSize - 1) / c.pageSize : 1;
  int64_t pages = c.batch * std::max<int64_t>(maxPages, 1);
  std::vector<int32_t> table(size_t(c.batch * std::max<int64_t>(maxPages, 1)));
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), rng);
  auto pageOf = [&](int64_t b, int64_t p) {
    return c.pageSize ? int64_t(table[size_t(b * maxPages + p / c.pageSize)]) : b;
  };
  auto slotOf = [&](int64_t p) { return c.pageSize ? p % c.pageSize : p; };
  auto cacheAt = [&](int64_t b, int64_t p, int64_t h, int64_t d) {
    if (c.headMajor)
      return size_t(((b * c.kvHeads + h) * pageRows + p) * D + d);
    return size_t(((pageOf(b, p) * pageRows + slotOf(p)) * c.kvHeads + h) * D + d);
  };
  size_t cacheElems = size_t(pages * pageRows * c.kvHeads * D);
  // The slots past each sequence's length hold NaN, as a cache's unwritten slots may: no
  // tile that reaches them may let them into a result (0 x NaN is NaN).
  auto unwrittenNaN = [&](std::vector<double> values) {
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t p = c.seqLens[size_t(b)]; p < maxPages * pageRows; ++p)
        for (int64_t h = 0; h < c.kvHeads; ++h)
          for (int64_t d = 0; d < D; ++d)
            values[cacheAt(b, p, h, d)] = std::nan("");
    return values;
  };
  Encoded k = encode(kind, unwrittenNaN(randomValues(kind, cacheElems, rng)));
  Encoded v = encode(kind, unwrittenNaN(randomValues(kind, cacheElems, rng)));
  // q and o: [batch, seq_q, heads, D].
  size_t qElems = size_t(c.batch * c.seqQ * c.heads * D);
  Encoded q = encode(kind, randomValues(kind, qElems, rng));
  auto qAt = [&](int64_t b, int64_t t, int64_t h, int64_t d) {
    return size_t(((b * c.seqQ + t) * c.heads + h) * D + d);
  };
  Buffer dq = uploadBytes<Buffer>(q.raw), dk = uploadBytes<Buffer>(k.raw),
         dv = uploadBytes<Buffer>(v.raw);
  std::vector<unsigned char> lensRaw(c.seqLens.size() * 4), tableRaw(table.size() * 4);
  std::memcpy(lensRaw.data(), c.seqLens.data(), lensRaw.size());
  std::memcpy(tableRaw.data(), table.data(), tableRaw.size());
  Buffer dlens = uploadBytes<Buffer>(lensRaw), dtable = uploadBytes<Buffer>(tableRaw);
  int bytes = ir::bitWidth(kind) / 8;
  Buffer dout = poisonedBytes<Buffer>(qElems * size_t(bytes));
  Buffer dlse = poisonedBytes<Buffer>(size_t(c.batch * c.heads * c.seqQ) * 4);
  auto address = [](const Buffer &buf) { return reinterpret_cast<void *>(uintptr_t(buf.ptr())); };
  kernels::AttentionDecodeArgs args{
      .o = address(dout), .lse = static_cast<float *>(address(dlse)), .q = address(dq),
      .k = address(dk), .v = address(dv),
      .seqLens = static_cast<const int32_t *>(address(dlens)),
      .blockTable = c.pageSize ? static_cast<const int32_t *>(address(dtable)) : nullptr,
      .pageSize = c.pageSize, .maxPages = maxPages, .batch = c.batch, .heads = c.heads,
      .kvHeads = c.kvHeads, .seqQ = c.seqQ, .maxSeqKV = maxSeq, .headDim = D,
      .causal = c.causal, .dtype = c.dtype};
  if (c.headMajor)
    args.kStrides = args.vStrides = {c.kvHeads * pageRows * D, D, pageRows * D};
  kernels::AttentionDecodePlan plan = kernels::planAttentionDecode(c.pageSize != 0, D);
  plan.splits = c.splits;
  int64_t workBytes = c.splits == 1 ? 0 : kernels::attentionDecodeWorkspaceBytes(args, c.splits);
  Buffer work = poisonedBytes<Buffer>(size_t(std::max<int64_t>(workBytes, 16)));
  if (workBytes) {
    args.workspace = address(work);
    args.workspaceBytes = workBytes;
  }
  kernels::attentionDecode(args, stream, &plan);
  sync();
  std::vector<unsigned char> raw(qElems * size_t(bytes));
  dout.download(raw.data(), raw.size());
  std::vector<double> got = decode(kind, raw);
  std::vector<float> lse(size_t(c.batch * c.heads * c.seqQ));
  dlse.download(lse.data(), lse.size() * 4);
  double scale = 1.0 / std::sqrt(double(D));
  double tol = c.dtype == kernels::Dtype::bf16 ? 2e-2 : 4e-3;
  size_t bad = 0;
  std::ostringstream first;
  int64_t group = c.heads / c.kvHeads;
  for (int64_t b = 0; b < c.batch; ++b) {
    int64_t len = c.seqLens[size_t(b)];
    std::vector<double> s(size_t(std::max<int64_t>(len, 1)));
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t t = 0; t < c.seqQ; ++t) {
        int64_t kh = h / group, last = c.causal ? len - c.seqQ + t : len - 1;
        double mx = -INFINITY;
        for (int64_t p = 0; p < len; ++p) {
          s[size_t(p)] = -INFINITY;
          if (p > last)
            continue;
          double dotv = 0;
          for (int64_t d = 0; d < D; ++d)
            dotv += q.values[qAt(b, t, h, d)] * k.values[cacheAt(b, p, kh, d)];
          s[size_t(p)] = dotv * scale;
          mx = std::max(mx, s[size_t(p)]);
        }
        double sum = 0;
        for (int64_t p = 0; p < len; ++p)
          sum += mx == -INFINITY ? 0.0 : std::exp(s[size_t(p)] - mx);
        double wantLse = mx == -INFINITY ? -INFINITY : mx + std::log(sum);
        double gotLse = lse[size_t((b * c.heads + h) * c.seqQ + t)];
        if (!(gotLse == wantLse || std::fabs(gotLse - wantLse) <= 1e-3 * (1 + std::fabs(wantLse))) &&
            bad++ < 5)
          first << "  lse[" << b << ", " << h << ", " << t << "] got " << gotLse << ", want "
                << wantLse << "\n";
        for (int64_t d = 0; d < D; ++d) {
          double want = 0;
          for (int64_t p = 0; sum > 0 && p < len; ++p)
            want += std::exp(s[size_t(p)] - mx) / sum * v.values[cacheAt(b, p, kh, d)];
          double g = got[qAt(b, t, h, d)];
          if (!(std::isfinite(g) && std::fabs(g - want) <= tol * (1 + std::fabs(want))) &&
              bad++ < 5)
            first << "  o[" << b << ", " << t << ", " << h << ", " << d << "] got " << g
                  << ", want " << want << "\n";
        }
      }
  }
  EXPECT_EQ(bad, 0u) << "decode " << c.str() << ": " << bad << " wrong (seed " << seed
                     << "):\n"
                     << first.str();
}

} // namespace tritium::testing::attention
