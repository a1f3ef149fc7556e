// GIR layouts: how a block's elements are spread over the threads of a CTA, as Triton's
// "blocked" layout. Per dimension: elements per thread (contiguous), threads per warp, warps.
// 1-D today; the fields are per dimension so 2-D needs no new representation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tritium::ir {

struct Layout {
  std::vector<int> sizePerThread;
  std::vector<int> threadsPerWarp;
  std::vector<int> warpsPerCTA;

  // Elements one layout tile covers along dim d; a block larger than that repeats the tile.
  int64_t tile(int d) const {
    return int64_t(sizePerThread[d]) * threadsPerWarp[d] * warpsPerCTA[d];
  }
  std::string str() const; // "#blocked<spt=[4], tpw=[32], wpc=[4]>"
  bool operator==(const Layout &o) const = default;
};

// Whether a 1-D block of n elements has a blocked layout over `threads` threads: a power of two
// (smaller blocks wrap around the CTA), or the same number of elements in every thread.
inline bool hasBlockedLayout(int64_t n, int64_t threads) {
  return n > 0 && ((n & (n - 1)) == 0 || n % threads == 0);
}

} // namespace tritium::ir
