#include "kernels/RowPlan.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <utility>

namespace tritium::kernels {

std::string RowPlan::str() const {
  return "block " + std::to_string(block) + " x " + std::to_string(rowsPerTile) +
         " rows, cluster " + std::to_string(clusterSize) + ", warps " + std::to_string(numWarps) +
         ", stages " + std::to_string(numStages) +
         (programsPerSM ? ", " + std::to_string(programsPerSM) + " programs per SM" : "") +
         (weightsEachRow ? ", weights each row" : "") +
         (minBlocksPerSM > 1 ? ", min " + std::to_string(minBlocksPerSM) + " CTAs per SM" : "") +
         (persistent ? "" : ", a program per tile");
}

PlanFields RowPlan::fields() const {
  return {{"block", block},
          {"rows_per_tile", rowsPerTile},
          {"cluster", clusterSize},
          {"warps", numWarps},
          {"stages", numStages},
          {"programs_per_sm", programsPerSM},
          {"weights_each_row", weightsEachRow ? 1 : 0},
          {"min_blocks_per_sm", minBlocksPerSM},
          {"persistent", persistent ? 1 : 0}};
}

Specialization RowPlan::specialization(std::vector<std::string> signature,
                                       std::vector<int64_t> more) const {
  std::vector<int64_t> constexprs = {block, rowsPerTile, clusterSize, numStages};
  constexprs.insert(constexprs.end(), more.begin(), more.end());
  return Specialization{.signature = std::move(signature),
                        .constexprs = std::move(constexprs),
                        .numWarps = numWarps,
                        .numStages = numStages,
                        .clusterSize = clusterSize,
                        .minBlocksPerSM = minBlocksPerSM,
                        .awaitPreviousKernel = true};
}

int64_t RowPlan::maxPartials(int64_t rows) const {
  // 512 programs fill the H200's 132 SMs several times over; more would only add partial sums.
  constexpr int64_t kMaxPrograms = 512;
  return std::max<int64_t>(1, std::min(tiles(rows), kMaxPrograms / clusterSize));
}

int64_t RowPlan::partialsOn(int64_t rows, int smCount) const {
  int64_t most = maxPartials(rows);
  if (programsPerSM > 0)
    most = std::min(most, std::max<int64_t>(1, int64_t(programsPerSM) * smCount / clusterSize));
  return most;
}

int64_t RowPlan::forwardGrid(CompiledKernel &k, int64_t rows) const {
  const int64_t programs = std::max<int64_t>(1, tiles(rows)) * clusterSize;
  // Past the grid's limit of 2^31 - 1 programs, even these plans walk the tiles.
  return persistent || programs > std::numeric_limits<int32_t>::max()
             ? k.persistentGrid(tiles(rows))
             : programs;
}

// fp32 values per thread and array: enough independent loads per thread to cover DRAM latency,
// few enough registers that a CTA of up to 32 warps does not spill. Rows longer than 32 warps
// x perThread are split over a cluster; rows shorter than `minTile` columns are stacked into
// 2-D tiles so that a step still moves enough bytes.
static RowPlan plan(int64_t cols, int perThread, int64_t minTile, int maxWarps = 32) {
  constexpr int kMaxCluster = 16;
  const int64_t maxBlock = int64_t(perThread) * 32 * maxWarps;
  int64_t whole = int64_t(std::bit_ceil(uint64_t(std::max<int64_t>(cols, 1))));
  RowPlan p;
  if (whole <= maxBlock) {
    p.block = whole;
  } else {
    p.clusterSize = int(std::min<int64_t>((cols + maxBlock - 1) / maxBlock, kMaxCluster));
    p.block = int64_t(std::bit_ceil(uint64_t((cols + p.clusterSize - 1) / p.clusterSize)));
  }
  p.rowsPerTile = int(std::clamp<int64_t>(minTile / p.block, 1, 16));
  int64_t elements = p.block * p.rowsPerTile;
  p.numWarps = int(std::clamp<int64_t>(elements / (32 * perThread), 1, maxWarps));
  p.numStages = p.rowsPerTile == 1 ? 2 : 1;
  return p;
}

// The planner's rule is the autotuner's winners on an H100 at 4096 rows, bf16, 512 to 65536
// columns (docs/notes/norms.md, the planner), where the older rule (16 and 8 values per thread,
// tiles of 2048, up to 32 warps) ran up to 5.3 times slower: forward kernels hold 32 values per
// thread and backward ones 16, CTAs stay within 16 warps (rows longer than that go to a
// cluster), short rows stack into tiles of 1024 elements, and one-row tiles of up to 4096
// (backward) or 8192 (forward) columns keep three rows in flight.
constexpr int kForwardPerThread = 32, kBackwardPerThread = 16, kMinTile = 1024, kMaxWarps = 16;

static RowPlan planned(int64_t cols, int perThread, int64_t deepRingUpTo, int64_t minTile) {
  RowPlan p = plan(cols, perThread, minTile, kMaxWarps);
  if (p.maxCols() < cols) // longer than 16 programs of 16 warps hold: CTAs of up to 32 warps
    p = plan(cols, perThread, minTile);
  if (p.rowsPerTile == 1 && p.clusterSize == 1 && p.block <= deepRingUpTo)
    p.numStages = 3;
  return p;
}

// The forwards' winners on the H200 (docs/notes/norms.md, "Forwards"):
// - Two arrays of weights (LayerNorm's weight and bias) from 16384 columns on: 8192 columns per
//   CTA of 8 warps over a cluster, a ring of 2, the weights read each row from shared memory and
//   registers capped for two CTAs per SM. At 65536 columns 309 us against 351 for the older
//   16-warp plan (whose capped registers spill instead).
// - One array (RMSNorm; LayerNorm without a bias alike) at exactly 8192 or 16384 columns:
//   Triton's launch shape, a program per row of 8 or 16 warps without a ring, the weights read
//   each row and two CTAs per SM (RMSNorm at 16384: 71.3 us against 77.7 for the persistent
//   ring holding them; LayerNorm without a bias 0.7-3% behind its best). Rows of other lengths
//   keep the persistent ring: at 12000 columns the 16384-column program per row took 69.6 us
//   where a 12288-column ring took 56.6.
// - Otherwise the rule above, the weights held in registers.
RowPlan planNormForward(int64_t cols, Dtype dtype, int weightArrays) {
  (void)dtype;
  constexpr int64_t kEachRowFrom = 16384;
  if (weightArrays > 1 && cols >= kEachRowFrom) {
    RowPlan p = plan(cols, kForwardPerThread, kMinTile, 8);
    if (p.maxCols() >= cols) {
      p.weightsEachRow = true;
      p.minBlocksPerSM = 2;
      return p;
    }
  }
  // Rows of 1025-4096 columns: tiles of two rows over 4 warps through a ring of 3, registers
  // capped for 3 CTAs per SM. On the H200 (bf16 and fp16, 4096 rows) within 1.5% of the tuner's
  // best for both norms at 2048 and 4096 columns, 3-6% faster than a row per step
  // (docs/notes/norms.md, "Tiles of two rows at 1025-4096 columns").
  if (cols > 1024 && cols <= 4096)
    return RowPlan{.block = int64_t(std::bit_ceil(uint64_t(cols))),
                   .rowsPerTile = 2,
                   .numWarps = 4,
                   .numStages = 3,
                   .minBlocksPerSM = 3};
  RowPlan p = planned(cols, kForwardPerThread, 8192, kMinTile);
  if (weightArrays == 1 && (cols == 8192 || cols == 16384) && p.clusterSize == 1 &&
      p.rowsPerTile == 1) {
    p.numStages = 1;
    p.weightsEachRow = true;
    p.minBlocksPerSM = 2;
    p.persistent = false;
  }
  p.weightsEachRow = p.weightsEachRow || (weightArrays > 1 && cols >= kEachRowFrom);
  return p;
}

// Rows split over a cluster take CTAs of 8 warps holding 32 values per thread (up to 255
// registers each, where 16 warps leave 128 and spill) and a ring of 4 stages: on the H200 the
// LayerNorm backward at 65536 columns took 475 us so against 630 for 16 warps, 16 values per
// thread and a ring of 2 (docs/notes/norms.md, "Weights read each row, resident loads, 8-warp
// CTAs").
constexpr int kClusterBackwardPerThread = 32, kClusterBackwardWarps = 8;

// Rows of 512 to 1024 columns take tiles of two rows, 16 values per thread, through a ring of
// 2: one warp per row starved the GPU of warps, since the partial sums cap the programs at 512
// (on the H200, LayerNorm backward at 512 columns 11.2 us against 12.1 for one row per step, at
// 1024 15.6 against 16.3; docs/notes/norms.md, "Tiles of rows through the ring"). Tiles of 32
// values per thread ran up to 5% faster but took 50 ms to compile, the compile-time budget.
static RowPlan shortRowTiles(int64_t cols) {
  RowPlan p;
  p.block = int64_t(std::bit_ceil(uint64_t(cols)));
  p.rowsPerTile = 2;
  p.numWarps = int(p.rowsPerTile * p.block / (32 * kBackwardPerThread));
  p.numStages = 2;
  return p;
}

RowPlan planNormBackward(int64_t cols, Dtype dtype) {
  (void)dtype;
  if (cols >= 512 && cols <= 1024)
    return shortRowTiles(cols);
  int64_t minTile = cols >= 512 ? 512 : kMinTile;
  RowPlan p = planned(cols, kBackwardPerThread, 4096, minTile);
  if (p.clusterSize > 1) {
    RowPlan wide = plan(cols, kClusterBackwardPerThread, minTile, kClusterBackwardWarps);
    if (wide.maxCols() >= cols) {
      wide.numStages = 4;
      return wide;
    }
  }
  return p;
}

int64_t maxNormCols(bool backward) { return int64_t(16) * 32 * 32 * (backward ? 16 : 32); }

std::vector<RowPlan> normCandidates(int64_t cols, Dtype dtype, bool backward, int weightArrays) {
  std::vector<RowPlan> out;
  auto add = [&](const RowPlan &p) {
    if (p.maxCols() < cols)
      return;
    for (const RowPlan &q : out)
      if (q.fields() == p.fields())
        return;
    out.push_back(p);
  };
  add(backward ? planNormBackward(cols, dtype) : planNormForward(cols, dtype, weightArrays));
  for (int perThread : backward ? std::vector<int>{4, 8, 16} : std::vector<int>{4, 8, 16, 32})
    for (int64_t minTile : {512, 1024, 2048, 4096}) {
      RowPlan p = plan(cols, perThread, minTile);
      add(p);
      for (int stages : {1, 2, 3}) { // tiles of rows through the ring too
        p.numStages = stages;
        add(p);
      }
    }
  const int64_t whole = int64_t(std::bit_ceil(uint64_t(std::max<int64_t>(cols, 1))));
  // The backward's short rows: tiles of 2 to 8 rows over 2 to 8 warps, through rings.
  if (backward && cols <= 2048)
    for (int rows : {2, 4, 8})
      for (int warps : {2, 4, 8})
        for (int stages : {2, 3}) {
          int64_t perThread = rows * whole / (32 * warps);
          if (perThread >= 8 && perThread <= 32)
            add(RowPlan{
                .block = whole, .rowsPerTile = rows, .numWarps = warps, .numStages = stages});
        }
  // Rows of a length that is no power of two (5120, Llama-13B's hidden size) in blocks of a
  // multiple of 256 x warps columns rather than the next power of two: 5120 columns in 5120,
  // not 8192, of which 37% would be masked lanes. 8 elements per thread and run keeps 16-byte
  // vectors for every dtype.
  for (int warps : {4, 8}) {
    int64_t unit = int64_t(32) * warps * 8;
    int64_t tight = (cols + unit - 1) / unit * unit;
    int64_t perThread = tight / (32 * warps);
    if (tight >= whole || perThread > (backward ? 32 : 64))
      continue;
    for (int stages : {1, 2, 3})
      add(RowPlan{.block = tight, .numWarps = warps, .numStages = stages});
  }
  // Fewer, larger programs for the backward: one or two per SM holding a tile of rows, so that
  // column_sum adds a partial sum per SM instead of up to 512 (rows of a few thousand columns,
  // where adding the partials is a large part of the time).
  if (backward)
    for (int perThread : {8, 16})
      for (int64_t minTile : {4096, 8192})
        for (int perSM : {1, 2}) {
          RowPlan p = plan(cols, perThread, minTile);
          if (p.clusterSize != 1)
            continue;
          p.programsPerSM = perSM;
          add(p);
        }
  // Rows split over a cluster: CTAs of 8 or 16 warps over more programs, so that several
  // clusters share an SM and one row's cluster sums overlap another's loads (a CTA of 32 warps
  // leaves each SM one row at a time), with rings of up to 4 stages. The backward's 32 values
  // per thread fit 8 warps only (255 registers a thread; 16 warps leave 128); with 8 warps they
  // are candidates for rows that one CTA holds too.
  for (int perThread : {8, 16, 32})
    for (int maxWarps : {8, 16}) {
      if (backward && perThread * maxWarps > 256)
        continue;
      RowPlan p = plan(cols, perThread, 2048, maxWarps);
      if (p.clusterSize == 1 && !(backward && perThread == 32))
        continue;
      for (int stages : {1, 2, 3, 4}) {
        if (p.clusterSize == 1 && (p.rowsPerTile > 1 || stages == 1))
          continue;
        p.numStages = stages;
        add(p);
      }
    }
  // The forwards of rows of 2048-4096 columns in tiles of two rows too (the rule above stacks
  // rows only below 4096 columns' worth), over 2 or 4 warps, some with registers capped for 3-8
  // CTAs per SM: RMSNorm bf16 at 4096 columns ran 4% faster so on the H200 (20.5 us, the copy's
  // time, against 21.3 for a row per step; docs/notes/norms.md).
  if (!backward && whole >= 2048 && whole <= 4096)
    for (auto [warps, minBlocks] : {std::pair{4, 1}, {4, 3}, {4, 4}, {2, 1}, {2, 8}}) {
      if (2 * whole / (32 * warps) > 64) // values per thread
        continue;
      add(RowPlan{.block = whole,
                  .rowsPerTile = 2,
                  .numWarps = warps,
                  .numStages = 3,
                  .minBlocksPerSM = minBlocks});
    }
  // The forwards of long rows also read the weights each row: LayerNorm's forward holds two
  // arrays of them, and at 32768-65536 columns freeing those registers made it 6-8% faster on
  // the H200 (docs/notes/norms.md, "Weights read each row"); shorter rows gained nothing or lost.
  if (!backward)
    for (size_t i = 0, n = out.size(); i < n; ++i)
      if (out[i].maxCols() >= 8192) {
        RowPlan p = out[i];
        p.weightsEachRow = true;
        add(p);
      }
  // With the weights read each row, the registers of CTAs of up to 16 warps may be capped so
  // that two fit on an SM (the driver's ptxas otherwise gives a 16-warp CTA 80 registers and the
  // SM one CTA): the LayerNorm forward at 32768-65536 columns ran 6-11% faster so on the H200.
  // Copies without a ring launch a program per tile (Triton's launch shape): RMSNorm at
  // 8192-16384 columns ran 2% faster so (docs/notes/norms.md, "Registers capped for two CTAs,
  // and a program per row").
  if (!backward)
    for (size_t i = 0, n = out.size(); i < n; ++i) {
      if (!out[i].weightsEachRow || out[i].numWarps > 16)
        continue;
      RowPlan p = out[i];
      p.minBlocksPerSM = 2;
      add(p);
      if (p.clusterSize == 1 && p.rowsPerTile == 1) {
        p.numStages = 1;
        p.persistent = false;
        add(p);
      }
    }
  return out;
}

std::string rowBucket(Dtype dtype, int64_t rows, int64_t cols, bool aligned) {
  auto up = [](int64_t v) {
    return std::to_string(std::bit_ceil(uint64_t(std::max<int64_t>(v, 1))));
  };
  // Past 2^16 rows every program walks many rows: the best plan no longer depends on how many.
  return dtypeName(dtype) + "-cols" + up(cols) + "-rows" + up(std::min<int64_t>(rows, 1 << 16)) +
         (aligned ? "" : "-unaligned");
}

} // namespace tritium::kernels
