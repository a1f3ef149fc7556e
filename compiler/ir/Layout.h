// GIR layouts: which thread of a program holds which elements of a block, as Triton's
// encodings. A layout is a value of its own, independent of the block's shape:
//
//   blocked  per dimension: elements per thread (a contiguous run), threads per warp, warps per
//            program, and an order (the fastest-varying dimension first). A block larger than
//            the layout's tile repeats the tile; a smaller one wraps (threads hold copies).
//   slice    a parent layout with one dimension removed: what a reduction along that dimension
//            gives, and what expand_dims takes back to the parent.
//
// The index arithmetic below is shared by the layout passes and the lowering: a thread's k-th
// element is found from its register multi-index (a pure function of the layout and shape) and
// its lane and warp coordinates. Shapes need not be powers of two where they are multiples of
// the tile (softmax rows of 12288), so the classic formulas are used rather than a GF(2) form.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tritium::ir {

class Layout {
public:
  enum class Kind { Blocked, Slice };

  // A blocked layout; an empty order means the default [rank-1, ..., 0] (last dim fastest).
  static Layout blocked(std::vector<int> sizePerThread, std::vector<int> threadsPerWarp,
                        std::vector<int> warpsPerCTA, std::vector<int> order = {});
  static Layout slice(const Layout &parent, int dim);

  Kind kind() const { return kind_; }
  bool isBlocked() const { return kind_ == Kind::Blocked; }
  int rank() const;

  // Blocked fields (the layout must be blocked).
  const std::vector<int> &sizePerThread() const { return spt_; }
  const std::vector<int> &threadsPerWarp() const { return tpw_; }
  const std::vector<int> &warpsPerCTA() const { return wpc_; }
  const std::vector<int> &order() const { return order_; }
  // Elements one layout tile covers along dim d; a block larger than that repeats the tile.
  int64_t tile(int d) const { return int64_t(spt_[d]) * tpw_[d] * wpc_[d]; }

  // Slice fields (the layout must be a slice).
  int sliceDim() const { return dim_; }
  const Layout &parent() const { return *parent_; }

  // The blocked layout at the root of a chain of slices, and which of its dimensions the chain
  // removed (in the root's numbering).
  const Layout &root() const;
  std::vector<bool> removedDims() const;
  // The root dimension that dimension d of this layout is.
  int rootDim(int d) const;

  // "#blocked<spt=[4], tpw=[32], wpc=[4]>" (order printed when not the default),
  // "#slice<dim=1, #blocked<...>>"
  std::string str() const;
  bool operator==(const Layout &o) const;

private:
  Kind kind_ = Kind::Blocked;
  std::vector<int> spt_, tpw_, wpc_, order_;
  int dim_ = -1;
  std::shared_ptr<const Layout> parent_;
};

// `l` with a new last dimension of `perThread` elements held by each thread (the fastest in
// the order), as join gives its result: the thread holding element i of the operands holds
// elements [i, 0 .. perThread-1]. Slices stay slices of the extended parent.
Layout withLastDimInThread(const Layout &l, int perThread);

// Whether a 1-D block of n elements has a blocked layout over `threads` threads: a power of two
// (smaller blocks wrap around the CTA), or the same number of elements in every thread.
inline bool hasBlockedLayout(int64_t n, int64_t threads) {
  return n > 0 && ((n & (n - 1)) == 0 || n % threads == 0);
}

// How a layout places a block of `shape` on the threads. Registers are enumerated over the
// root layout's dimensions (a sliced dimension counts once), the order's fastest dim first, so
// a thread's contiguous run along the fastest dimension is consecutive registers.
class LayoutMap {
public:
  LayoutMap(const Layout &layout, const std::vector<int64_t> &shape);

  int64_t elementsPerThread() const { return total_; }
  // Whether several threads hold copies of some element (a dimension smaller than the tile).
  bool replicates() const {
    for (size_t d = 0; d < rootShape_.size(); ++d)
      if (rootShape_[d] < root_.tile(int(d)))
        return true;
    return false;
  }
  // Per root dimension: the block's extent (1 where sliced) and the registers along it.
  const std::vector<int64_t> &rootShape() const { return rootShape_; }
  const std::vector<int64_t> &registersPerDim() const { return regs_; }
  const Layout &root() const { return root_; }
  int rootDim(int d) const { return rootDims_[size_t(d)]; } // the block's dim d in the root

  // Register k's index along each root dimension, and back.
  std::vector<int64_t> registerIndex(int64_t k) const;
  int64_t registerNumber(const std::vector<int64_t> &index) const;
  // The part of root dim d's coordinate that register index r contributes (rep * tile + j).
  int64_t registerOffset(int d, int64_t r) const;
  // The run of consecutive elements one thread holds along root dim d (spt capped by extent).
  int64_t run(int d) const;
  // Lane and warp coordinates along root dim d: (id / stride) % count.
  int64_t laneStride(int d) const { return laneStride_[size_t(d)]; }
  int64_t warpStride(int d) const { return warpStride_[size_t(d)]; }

  // How the distinct elements of a line along root dim d lie: `reps` repetitions of `warps`
  // warps of `lanes` lanes of `run` consecutive registers, the run fastest, so that position
  // ((rep * warps + warp) * lanes + lane) * run + j holds register rep * run + j of the lane
  // and warp whose coordinates along d are taken modulo `lanes` and `warps` (the others hold
  // copies). Exact only where spreadsExactly(d).
  struct Spread {
    int64_t run, lanes, warps, reps;
  };
  Spread spread(int d) const;
  // Whether spread(d) places each element once up to copies: the extent is a multiple of the
  // tile, or a power of two smaller than it with power-of-two fields (threads wrap evenly).
  bool spreadsExactly(int d) const;

private:
  Layout root_;
  std::vector<int64_t> rootShape_, regs_, laneStride_, warpStride_;
  std::vector<int> rootDims_;
  int64_t total_ = 1;
};

// The row-major index, in a block of `shape` placed by `map`, of the element that the thread at
// (lane, warp) holds in the register whose index is `regs` (map.registerIndex(k)), wrapped as
// the lowering wraps blocks smaller than the tile.
int64_t flatIndexOf(const LayoutMap &map, const std::vector<int64_t> &shape, int64_t lane,
                    int64_t warp, const std::vector<int64_t> &regs);

// Whether a block of shape `sa` in layout `a` and one of shape `sb` (as many elements) in `b`
// put every element in the same register of the same thread: a convert_layout or reshape
// between them moves nothing. Checked thread by thread, register by register.
bool samePlacement(const Layout &a, const std::vector<int64_t> &sa, const Layout &b,
                   const std::vector<int64_t> &sb);

// A blocked layout for shape `to` under which a block of shape `from` in layout `l` is already
// where a reshape would put it, when one exists: a reshape that splits or merges dimensions
// then moves nothing ([2048] in runs of 8 is [256, 8] with each run a row). Found for
// power-of-two shapes of a blocked layout in the default order that does not replicate; the
// flat index's bits, lowest first, are each a register, lane or warp bit of `l`, and each
// dimension of `to` takes the next bits as runs, lanes, warps and repeats of a blocked layout.
std::optional<Layout> reshapedInPlace(const Layout &l, const std::vector<int64_t> &from,
                                      const std::vector<int64_t> &to);

} // namespace tritium::ir
