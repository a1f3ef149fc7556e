// Launch choices of the row kernels (LayerNorm, RMSNorm): how many columns each program holds
// in registers, how many programs of a thread-block cluster share a row that is too long for
// one, how many rows a program takes per step (a 2-D tile, for short rows), warps and the depth
// of the cp.async ring. The planner's defaults; every field may be changed before a launch.
#pragma once

#include "frontend/Kernel.h"
#include "kernels/Autotuner.h"
#include "kernels/Dtype.h"

#include <cstdint>
#include <string>

namespace tritium::kernels {

struct RowPlan {
  // Columns per program: a power of two, or (one row per tile, no cluster) a multiple of
  // 256 x numWarps.
  int64_t block = 1024;
  int rowsPerTile = 1;  // rows per step: above 1, [rowsPerTile, block] tiles
  int clusterSize = 1;  // programs sharing a row (each holds `block` of its columns)
  int numWarps = 4;
  int numStages = 2; // the ring of rows (or tiles of rows) loaded ahead
  // Backward kernels: at most this many programs per SM (0: as many as fit, up to 512 in all).
  // Fewer programs write fewer partial sums of the weight gradients for column_sum to add.
  int programsPerSM = 0;
  // Read the weights (and LayerNorm's bias) each row, from shared memory (a load the loop does
  // not change: copied there once before it), instead of holding them in registers: 32-64
  // registers a thread freed for more warps. Every norm kernel honours it; the LayerNorm
  // backward also reads them each row, by its own rule, in CTAs of more than 8 warps over a
  // cluster.
  bool weightsEachRow = false;
  // CUDA's __launch_bounds__ minimum (Specialization::minBlocksPerSM): ptxas keeps registers low
  // enough for this many CTAs per SM. The driver's ptxas gave a 16-warp forward at 16384
  // columns 80 registers, one CTA per SM; capped at 64, two CTAs' loads overlap.
  int minBlocksPerSM = 1;
  // Forward kernels: false launches a program (or cluster) per tile, balanced by the block
  // scheduler as Triton's tutorials launch them, instead of a persistent grid walking the tiles.
  // With two 16-warp CTAs per SM and no ring, this is what the RMSNorm forward at 8192-16384
  // columns runs fastest. Backwards keep a partial sum per program, so they refuse it.
  bool persistent = true;

  int64_t maxCols() const { return block * clusterSize; }
  PlanFields fields() const;
  std::string str() const; // "block 4096 x 1 rows, cluster 1, warps 8, stages 2"
  // The specialization: the given signature, constexprs (block, rows per tile, cluster size,
  // stages, then `more`) and the launch fields.
  Specialization specialization(std::vector<std::string> signature,
                                std::vector<int64_t> more = {}) const;
  // Tiles of `rows` rows (rowsPerTile each).
  int64_t tiles(int64_t rows) const { return (rows + rowsPerTile - 1) / rowsPerTile; }
  // Backward kernels keep one partial sum of the weight gradients per cluster: at most this
  // many clusters run, so the partial sums stay small beside the rows.
  int64_t maxPartials(int64_t rows) const;
  // maxPartials on a GPU of `smCount` SMs, after programsPerSM's cap.
  int64_t partialsOn(int64_t rows, int smCount) const;
  // A forward kernel's grid over `rows` rows: the persistent grid of `k`, or every tile's
  // programs.
  int64_t forwardGrid(CompiledKernel &k, int64_t rows) const;
};

// Forward kernels hold one array per row (x); backward ones hold x, dy and the weight gradient
// accumulators, so they take fewer columns per thread.
// `weightArrays`: the per-column arrays the forward multiplies by (LayerNorm with a bias: 2).
RowPlan planNormForward(int64_t cols, Dtype dtype, int weightArrays = 1);
RowPlan planNormBackward(int64_t cols, Dtype dtype);
// What the autotuner times: the planner's rule at other register budgets per thread, tile
// heights and ring depths. Each covers `cols`; the planner's choice is among them.
std::vector<RowPlan> normCandidates(int64_t cols, Dtype dtype, bool backward, int weightArrays = 1);
// The longest row any candidate covers: 16 programs of 32 warps at the most columns per thread.
int64_t maxNormCols(bool backward);
// The autotuner's shape bucket: the dtype, cols and rows rounded up to powers of two, and
// "-unaligned" when a tensor's base or row stride is no multiple of 16 bytes (the compiled
// kernels then move narrower vectors, so the best plan may differ).
std::string rowBucket(Dtype dtype, int64_t rows, int64_t cols, bool aligned = true);

} // namespace tritium::kernels
