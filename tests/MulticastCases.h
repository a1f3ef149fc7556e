// A kernel whose every tile is a multicast load (desc.load(offsets, multicast)), shared by
// the multicast tests without a GPU (tests/unit/MulticastTest.cpp) and on it
// (tests/gpu/MulticastGpuTest.cpp).
#pragma once

#include "DotCases.h"

#include "frontend/DSL.h"
#include "frontend/Kernel.h"

#include <vector>

namespace tritium::testing::clustertiles {

using namespace tritium::dsl;

// out[pid] (64 x 64 fp32 each) = the sum over row tiles of x [rows, 64] (fp16), every tile
// read as a multicast tile of ROWS x 64. SHIFT moves rank r's tiles r rows down (a mismatch).
inline void clusterTileSum(Ptr out, Ptr x, Int rows, int ROWS, int WS, int SHIFT) {
  auto d = make_tensor_descriptor(x, {rows, 64}, {64, 1}, {ROWS, 64});
  auto acc = zeros({ROWS, 64}, float32);
  for (auto i : range(0, rows, ROWS, 3).warp_specialize(WS != 0)) {
    Value at = i;
    if (SHIFT)
      at = i + cluster_rank();
    acc = acc + cast(d.load({at, 0}, multicast), float32);
  }
  auto r = arange(0, ROWS), c = arange(0, 64);
  store(out + program_id(0) * ROWS * 64 + r(_, None) * 64 + c(None, _), acc);
}

inline Kernel &clusterTileSumKernel() {
  static auto k =
      kernel("cluster_tile_sum", clusterTileSum, {"out", "x", "rows", "ROWS", "WS", "SHIFT"});
  return k;
}

// x [rows, 64] of random fp16 (its bytes) and the sum of its 64-row tiles in double, what every
// program of the kernel stores (rows past the tensor count as zeros).
struct TileSumInput {
  std::vector<unsigned char> raw;
  std::vector<double> want; // 64 x 64
};
template <class Rng> TileSumInput tileSumInput(int rows, Rng &rng) {
  auto x = tritium::testing::tensorcores::encode(
      ir::ScalarKind::F16,
      tritium::testing::tensorcores::randomValues(ir::ScalarKind::F16, size_t(rows) * 64, rng));
  TileSumInput in{x.raw, std::vector<double>(64 * 64, 0.0)};
  for (size_t e = 0; e < x.values.size(); ++e)
    in.want[e % (64 * 64)] += x.values[e];
  return in;
}

// Runs the kernel on `grid` programs (clusters of `cluster`) through buffers of type Buffer
// (the interpreter's or the GPU's; both bases lie on 16 bytes, as TMA needs), the output
// poisoned first; returns it.
template <class Buffer>
std::vector<float> runClusterTileSum(int cluster, int grid, int shift,
                                     const std::vector<unsigned char> &x, int rows) {
  auto in = tritium::testing::tensorcores::uploadBytes<Buffer>(x);
  auto out =
      tritium::testing::tensorcores::poisonedBytes<Buffer>(size_t(grid) * 64 * 64 * 4);
  clusterTileSumKernel()
      .compile({.signature = {"*fp32:16", "*fp16:16", "i32"},
                .constexprs = {64, 1, shift},
                .numWarps = 4,
                .clusterSize = cluster})
      .launch(grid, nullptr,
              {KernelArg::pointer(out.ptr()), KernelArg::pointer(in.ptr()), int32_t(rows)});
  std::vector<float> got(size_t(grid) * 64 * 64);
  out.download(got.data(), got.size() * 4);
  return got;
}

} // namespace tritium::testing::clustertiles
