// Tiles whose rows come from a table read in the loop (a paged cache's block-table entries),
// against double-precision references; shared by the GPU test (tests/gpu/PagedRowsGpuTest.cpp)
// and its interpreter and PTX twins (tests/unit/PagedRowsTest.cpp). Each step of a pipelined
// loop reads a BR x C tile whose row i lives in page table[i / PAGE] at slot i % PAGE: the
// pipeliner copies the tiles ahead as a cp.async ring and loads their entries an iteration
// earlier still (codegen/LowerPipelinedLoop.cpp). The sweep covers pages of one row, of a few
// rows that no tile divides, and of several tiles; row counts that stop inside a tile and a
// page; one to eight warps; two to four stages. Inputs are fresh random numbers, pages handed
// out in a shuffled order, the output poisoned, every element checked.
#pragma once

#include "DotCases.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <sstream>

namespace tritium::testing::pagedrows {

using namespace tritium::dsl;

// out[r, c] = sum over steps s of x[page(s BR + r) x PAGE + (s BR + r) % PAGE, c] (rows below n),
// page(i) = table[i / PAGE]. The entries are read in the tile's shape, as DSL.md asks.
inline void pagedRowsKernel(Ptr out, Ptr x, Ptr table, Int n, int BR, int C, int PAGE,
                            int STAGES) {
  auto rows = arange(0, BR), cols = arange(0, C);
  auto acc = zeros({BR, C}, float32);
  for (auto start : range(0, n, BR, STAGES)) {
    auto pos = start + rows;
    auto in = broadcast_to(pos(_, None) < n, {BR, C});
    auto entry = load(broadcast_to((table + pos / PAGE)(_, None), {BR, C}), in, 0);
    auto row = entry * PAGE + broadcast_to((pos % PAGE)(_, None), {BR, C});
    acc = acc + load(x + row * C + cols(None, _), in, 0.0);
  }
  store(out + rows(_, None) * C + cols(None, _), acc);
}

inline auto pagedRowsKernelOf() {
  return kernel("paged_rows", pagedRowsKernel,
                {"out", "x", "table", "n", "BR", "C", "PAGE", "STAGES"});
}

struct PagedRowsCase {
  int n = 100;   // rows in all
  int BR = 32;   // rows a step
  int C = 32;    // columns (fp32; at least 4, so that a row is whole 16-byte vectors)
  int page = 16; // rows a page
  int warps = 4, stages = 3;
  std::string str() const {
    std::ostringstream s;
    s << "n " << n << " tile " << BR << "x" << C << " pages of " << page << " warps " << warps
      << " stages " << stages;
    return s.str();
  }
};

inline Specialization pagedRowsSpecialization(const PagedRowsCase &c) {
  return {.signature = {"*fp32:16", "*fp32:16", "*i32:16", "i32"},
          .constexprs = {c.BR, c.C, c.page, c.stages},
          .numWarps = c.warps};
}

template <typename Buffer>
void checkPagedRows(CUstream stream, const std::function<void()> &sync, const PagedRowsCase &c) {
  SCOPED_TRACE(c.str());
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  int pages = (c.n + c.page - 1) / c.page;
  std::vector<int32_t> table(static_cast<size_t>(pages));
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), rng);
  std::vector<double> x = tensorcores::randomValues(ir::ScalarKind::F32, size_t(pages) * c.page * c.C, rng);
  tensorcores::Encoded xe = tensorcores::encode(ir::ScalarKind::F32, x);
  std::vector<unsigned char> tableRaw(table.size() * 4);
  std::memcpy(tableRaw.data(), table.data(), tableRaw.size());
  Buffer dx = tensorcores::uploadBytes<Buffer>(xe.raw), dt = tensorcores::uploadBytes<Buffer>(tableRaw);
  Buffer dout = tensorcores::poisonedBytes<Buffer>(size_t(c.BR) * c.C * 4);
  auto k = pagedRowsKernelOf();
  std::initializer_list<KernelArg> args = {dout, dx, dt, c.n};
  k.compile(pagedRowsSpecialization(c).specializedFor(args)).launch(1, stream, args);
  sync();
  std::vector<unsigned char> raw(size_t(c.BR) * c.C * 4);
  dout.download(raw.data(), raw.size());
  std::vector<double> got = tensorcores::decode(ir::ScalarKind::F32, raw);
  size_t bad = 0;
  std::ostringstream first;
  for (int r = 0; r < c.BR; ++r)
    for (int col = 0; col < c.C; ++col) {
      double want = 0, magnitude = 0;
      for (int i = r; i < c.n; i += c.BR) {
        double v = xe.values[(size_t(table[size_t(i / c.page)]) * c.page + size_t(i % c.page)) * c.C + col];
        want += v;
        magnitude += std::fabs(v);
      }
      double g = got[size_t(r) * c.C + col];
      if (!(std::fabs(g - want) <= 1e-6 * (magnitude + 1)) && bad++ < 5)
        first << "  [" << r << ", " << col << "] got " << g << ", want " << want << "\n";
    }
  EXPECT_EQ(bad, 0u) << bad << " wrong (seed " << seed << "):\n" << first.str();
}

} // namespace tritium::testing::pagedrows
