// What a program of a row kernel handles, for the trace (internal to the library): one row of
// `block` columns at a time (a 1-D block) or, for short rows, a [rows, block] tile of several
// rows, either loaded through the cp.async ring when the plan has stages. Row reductions give a
// scalar or one value per row; expand() broadcasts them back over the columns. In a cluster, each
// program holds the columns from cluster_rank() x block on, and row sums are the whole cluster's.
//
// RowColumns is made before the loop over tiles; RowTile inside its body (a value assigned in
// the body to a variable made before it would be carried by the loop).
#pragma once

#include "frontend/DSL.h"

#include <utility>
#include <vector>

namespace tritium::kernels {

// The tiles of n_rows rows, walked by clusters with a persistent-grid stride.
inline dsl::Value tileCount(const dsl::Value &n_rows, int rows) {
  return rows == 1 ? n_rows : (n_rows + (rows - 1)) / rows;
}
inline dsl::Value firstTile() { return dsl::program_id(0) / dsl::cluster_size(); }
inline dsl::Value tileStep() { return dsl::num_programs(0) / dsl::cluster_size(); }

// This program's columns, the same for every tile.
struct RowColumns {
  RowColumns(int rows, int block, const dsl::Value &n_cols) : rows(rows), block(block) {
    using namespace dsl;
    flat = cluster_rank() * block + arange(0, block);
    flatMask = flat < n_cols;
    cols = rows == 1 ? flat : flat(None, _);
    mask = rows == 1 ? flatMask : flatMask(None, _);
  }
  // The shape of a tile: [block] or [rows, block].
  std::vector<int64_t> tileShape() const {
    return rows == 1 ? std::vector<int64_t>{block} : std::vector<int64_t>{rows, block};
  }
  // Values of the tile's shape summed over its rows: [block] (the weight gradients' partial
  // sums, kept per row of the tile while the loop runs and added once at its end).
  dsl::Value columnSum(const dsl::Value &x) const { return rows == 1 ? x : dsl::sum(x, 0); }

  int rows;
  int64_t block;
  dsl::Value flat, flatMask; // [block]: where per-column results (weight gradients) go
  dsl::Value cols, mask;     // [block] or [1, block]: broadcast against the tile's rows
};

struct RowTile {
  RowTile(const RowColumns &c, const dsl::Value &tile, const dsl::Value &n_rows) : c(c) {
    using namespace dsl;
    if (c.rows == 1) {
      row = tile, index = tile, mask = c.mask;
      return;
    }
    index = tile * c.rows + arange(0, c.rows);
    rowMask = index < n_rows;
    row = index(_, None);
    mask = rowMask(_, None) & c.mask;
  }
  // A row's sum over its columns: a scalar, or [rows].
  dsl::Value rowSum(const dsl::Value &x) const {
    return c.rows == 1 ? dsl::cluster_sum(dsl::sum(x, 0)) : dsl::sum(x, 1);
  }
  // Two row sums at once: both local sums first, then both cluster sums side by side, which
  // the code generator batches into one exchange (one wait on the cluster's peers, not two).
  std::pair<dsl::Value, dsl::Value> rowSums(const dsl::Value &a, const dsl::Value &b) const {
    if (c.rows != 1)
      return {dsl::sum(a, 1), dsl::sum(b, 1)};
    dsl::Value sa = dsl::sum(a, 0), sb = dsl::sum(b, 0);
    return {dsl::cluster_sum(sa), dsl::cluster_sum(sb)};
  }
  // A per-row value broadcast over the columns.
  dsl::Value expand(const dsl::Value &perRow) const {
    return c.rows == 1 ? perRow : perRow(dsl::_, dsl::None);
  }
  // Stores per-row values (mean, rstd): one program of a cluster writes them.
  void storePerRow(const dsl::Value &ptr, const dsl::Value &v) const {
    using namespace dsl;
    if (c.rows == 1)
      store(ptr + index, v, cluster_rank() == 0);
    else
      store(ptr + index, v, rowMask);
  }
  dsl::Value loadPerRow(const dsl::Value &ptr) const {
    using namespace dsl;
    return c.rows == 1 ? load(ptr + index) : load(ptr + index, rowMask, 0.0);
  }
  // The per-row values of the tile `tile` (0 past the last row), made before the loop for the
  // first tile and in the body for the next: a load one tile ahead, so that its latency hides
  // behind this tile's work instead of stalling each step (the ring holds only whole rows).
  static dsl::Value loadPerRowAhead(const RowColumns &c, const dsl::Value &tile,
                                    const dsl::Value &n_rows, const dsl::Value &ptr) {
    using namespace dsl;
    dsl::Value index = c.rows == 1 ? tile : tile * c.rows + arange(0, c.rows);
    return load(ptr + index, index < n_rows, 0.0);
  }
  const RowColumns &c;
  dsl::Value row;   // the row (scalar) or rows ([rows, 1]) for address arithmetic
  dsl::Value index; // the row or rows ([rows]) for per-row values
  dsl::Value rowMask, mask;
};

} // namespace tritium::kernels
