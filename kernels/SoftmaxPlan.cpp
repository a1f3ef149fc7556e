// Plans and launches for the softmax kernels. The thresholds and configurations are the best
// measured on the H200 (docs/notes/softmax.md); a caller can change any field of a plan.
#include "kernels/SoftmaxPlan.h"

#include "kernels/HostDtype.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <optional>

namespace tritium::kernels {

// The row stays in registers up to this block size: beyond it a CTA would need more than 16
// values per thread at 32 warps, and one row in flight per SM cannot hide the latency.
constexpr int64_t kMaxRegisterBlock = 32768;
constexpr int64_t kMaxRegisterBlockBackward = 16384; // o and dout: 32 values per thread

// A cluster of 8 is the portable maximum: a row of up to 8 x 32768 fp32 (the longest measured,
// 262144) is read once; longer rows fall back to the online kernel. The backward, whose slices
// stop at 16384, goes on to Hopper's non-portable 16 (262144 backward: 0.86 of copy against 0.61
// for the online kernel, docs/notes/softmax.md, "The backward"); the forward measured slower at
// 16 than at 8.
constexpr int kMaxCluster = 8;
constexpr int kMaxClusterBackward = 16;

Kernel &SoftmaxPlan::kernel() const {
  bool forward = direction == SoftmaxDirection::Forward;
  if (online && clusterSize > 1)
    return forward ? softmaxClusterOnlineKernel() : softmaxBackwardClusterOnlineKernel();
  if (online)
    return forward ? softmaxOnlineKernel() : softmaxBackwardOnlineKernel();
  if (forward && prefetch)
    return clusterSize > 1 ? softmaxClusterPrefetchKernel() : softmaxPrefetchKernel();
  if (clusterSize > 1)
    return forward ? softmaxClusterKernel() : softmaxBackwardClusterKernel();
  return forward ? softmaxKernel() : softmaxBackwardKernel();
}

void SoftmaxPlan::splitOver(int size, int64_t cols) {
  clusterSize = size;
  programsPerCTA = 1; // a cluster's programs each take a CTA
  if (!online)
    blockSize = int64_t(std::bit_ceil(uint64_t((cols + size - 1) / size)));
}

void SoftmaxPlan::fitBlock(int64_t cols, const std::string &dtype) {
  int64_t pow2 = int64_t(std::bit_ceil(uint64_t(std::max<int64_t>(1, cols))));
  int64_t tile = 32 * int64_t(numWarps) * (16 / bytesOf(dtype)); // 16-byte vectors
  blockSize = std::min(pow2, (cols + tile - 1) / tile * tile);
}

int64_t SoftmaxPlan::maxCols() const {
  return online ? std::numeric_limits<int32_t>::max() : blockSize * clusterSize;
}

Specialization SoftmaxPlan::specialization(const std::string &dtype, int64_t rows,
                                           int64_t maxStride) const {
  bool wide = rows * std::max<int64_t>(maxStride, 1) > std::numeric_limits<int32_t>::max();
  std::string stride = wide ? "i64" : "i32";
  std::vector<std::string> sig;
  int pointers = direction == SoftmaxDirection::Forward ? 2 : 3;
  for (int i = 0; i < pointers; ++i)
    sig.push_back("*" + dtype);
  for (int i = 0; i < pointers; ++i)
    sig.push_back(stride);
  sig.push_back("i32"); // n_rows
  sig.push_back("i32"); // n_cols
  Specialization spec{.signature = sig,
                      .constexprs = {blockSize, numStages},
                      .numWarps = numWarps,
                      .numStages = numStages,
                      .clusterSize = clusterSize,
                      .minBlocksPerSM = minBlocksPerSM,
                      .programsPerCTA = programsPerCTA,
                      .bulkCopies = bulkCopies,
                      .awaitPreviousKernel = true};
  if (ptxVersion)
    spec.ptxVersion = ptxVersion;
  return spec;
}

std::string SoftmaxPlan::str() const {
  std::string cluster = clusterSize > 1 ? "cluster " + std::to_string(clusterSize) + " x" : "";
  std::string kind = online      ? (cluster.empty() ? "online" : "online " + cluster)
                     : !cluster.empty() ? cluster
                                        : "registers";
  std::string s = kind + " BLOCK " + std::to_string(blockSize) + " warps " +
                  std::to_string(numWarps) + " stages " + std::to_string(numStages);
  if (prefetch)
    s += " prefetch";
  if (!bulkCopies && numStages > 1)
    s += " per-thread-copies";
  if (programPerRow)
    s += " program-per-row";
  if (programsPerCTA > 1)
    s += " programs-per-cta " + std::to_string(programsPerCTA);
  return minBlocksPerSM > 1 ? s + " min-blocks " + std::to_string(minBlocksPerSM) : s;
}

static int64_t blockFor(int64_t cols) {
  return int64_t(std::bit_ceil(uint64_t(std::max<int64_t>(1, cols))));
}

// Long rows: blocks of 8192 through a four-deep cp.async ring (the best of a block x warps x
// stages sweep at N = 32768 ... 262144, docs/notes/softmax.md, "Long rows: the online kernel").
SoftmaxPlan planOnline(SoftmaxDirection dir) {
  return SoftmaxPlan{.direction = dir, .online = true, .blockSize = 8192, .numWarps = 16,
                     .numStages = 4};
}

// {num_warps, num_stages, prefetch, program per row, min blocks per SM} by power-of-two block
// size, 256 ... 32768
// (rows that are not a power of two take their power of two's entry), from the sweeps of
// docs/notes/softmax.md (2026-11-21, M = 4096, best median GB/s per N).
struct WarpsStages {
  int warps, stages;
  bool prefetch = false;
  bool programPerRow = false;
  int minBlocks = 1;
  int programsPerCTA = 1; // warp-sized programs side by side in a CTA (warps is then 1)
};
constexpr int kTableSizes = 8;
static WarpsStages fromTable(const WarpsStages (&table)[kTableSizes], int64_t block) {
  int i = 0;
  for (int64_t b = 256; b < block && i < kTableSizes - 1; b *= 2)
    ++i;
  return table[i];
}
// fp32: from 1025 to 12288 columns, a program per row, with several programs resident per SM
// (the hardware starts the next row's program as one finishes, so one's loads overlap
// another's reductions), the row loaded straight into registers: a one-buffer bulk-copy ring
// measured 1-9% slower over the step-128 sweep (docs/notes/softmax.md, "A program per row").
// From 4097 columns, registers capped for three CTAs per SM (88 -> 78 per thread at 7808-8192:
// +3-7%). Rows of up to 512 columns: a warp per row, several warp-sized programs in each CTA
// (fewer, larger CTAs, no cross-warp reduction) on the persistent grid, 8 per CTA up to 256 columns
// and 16 up to 512: against the one-per-CTA programs before, +8% at 256 and +2-6% at 384-512
// (docs/notes/softmax.md, "Several programs per CTA"). Up to 1024 they gained only 2%, and a
// warp holding a row of 1024 and the next one compiles in 100 ms instead of 15 (LLVM's code
// generation): two warps with the prefetch there. A row of 32768 has no registers to spare for a
// second one: 32 warps, no ring (a one-buffer ring is no faster).
constexpr WarpsStages kForward[kTableSizes] = {
    {1, 1, false, false, 1, 8}, {1, 1, false, false, 1, 16}, {2, 1, true},
    {4, 1, false, true},        {8, 1, false, true},         {8, 1, false, true, 3},
    {8, 1, false, true, 3},     {32, 1}};
// Rows of 12289-16384: a program per row too, with registers capped for two CTAs per SM
// (64 per thread at 16 warps; the persistent prefetch needs 114).
constexpr WarpsStages kForwardBeyond12288{16, 1, false, true, 2};
// 16-bit rows move half the bytes of fp32 rows of the same length: fewer warps pay. Up to 1024
// columns, warp-sized programs several to a CTA: 4 up to 256 columns, 16 up to 512, 16 launched
// a program per row up to 1024 (fp16 against the one-per-CTA plans before: +17% at 256 and
// 384, +6% at 512, +1-5% at 768-1024, docs/notes/softmax.md, "Several programs per CTA"; the
// prefetch, 1% faster at 256, triples the compile time). A program per row above; with 8 warps
// (4097-12288 columns) as many CTAs per SM as the values each thread holds leave registers for
// (halfMinBlocks), two CTAs above (kHalfForwardBeyond12288); the ring above 16384.
constexpr WarpsStages kHalfForward[kTableSizes] = {
    {1, 1, false, false, 1, 4}, {1, 1, false, false, 1, 16}, {1, 1, false, true, 1, 16},
    {2, 1, false, true},       {4, 1, false, true},         {8, 1, false, true},
    {8, 1, false, true},       {16, 2}};

// CTAs per SM for a 16-bit row, a program per row with 8 warps: as many as the registers of its
// values allow without spilling, one more costs 8-70% (docs/notes/softmax.md, "CTAs per SM", of
// copy for fp16): 6144 (24 values per thread) 0.99 at 5, 0.95 at 3 or 4; 8192 (32) 0.98 at 4, 0.91
// at 3; 10240 (40) 0.95 at 4, 0.93 at 3; 12288 (48) 0.97 at 3, 0.89 at 4.
static int halfMinBlocks(int64_t block) {
  int64_t perThread = block / (32 * 8);
  return perThread <= 24 ? 5 : perThread <= 40 ? 4 : 3;
}
constexpr WarpsStages kHalfForwardBeyond12288{16, 1, false, true, 2};
constexpr WarpsStages kBackward[kTableSizes] = {{2, 1}, {2, 1}, {4, 1}, {1, 1},
                                                 {2, 1}, {4, 1}, {32, 1}, {32, 1}};

// A row of `cols` split over a thread-block cluster; nullopt when no cluster holds it. The
// backward: at most kMaxCluster programs, each holding a slice of maxBlock / 2 elements, or
// maxBlock when that takes more than kMaxCluster programs, then up to kMaxClusterBackward
// programs of maxBlock. The smaller slice with 32 values per thread leaves room for two CTAs per
// SM, so one row's loads overlap another's reductions: the best of a cluster size x warps x
// stages sweep at N = 32768 ... 262144 (docs/notes/softmax.md, "Long rows: thread-block
// clusters").
static std::optional<SoftmaxPlan> planCluster(SoftmaxDirection dir, int64_t cols,
                                              int64_t maxBlock) {
  bool forward = dir == SoftmaxDirection::Forward;
  // The forward, from cluster size x warps x stages sweeps with bulk-copy rings
  // (docs/notes/softmax.md, "Long rows: thread-block clusters"): slices of 8192 with 4 warps and
  // a ring two rows ahead (several CTAs per SM) up to 6 x 8192; slices of 16384 with 8 warps and a
  // ring one row ahead (two CTAs per SM) up to 8 x 16384; then slices of 32768 with 16 warps and a
  // one-buffer ring (128 KB of shared memory, one CTA per SM) that loads the next row while this
  // one is reduced and written.
  if (forward) {
    struct Slice {
      int64_t block;
      int warps, stages;
    };
    // Above 6 x 8192 columns, slices of 16384 (4 to 8 of them) measured faster: at 65536,
    // 0.925 of copy against 0.902 for 8 x 8192 (docs/notes/softmax.md, "Long rows: thread-block
    // clusters").
    constexpr int64_t kSmallSlicesUpTo = 6 * 8192;
    for (Slice s : {Slice{8192, 4, 3}, Slice{16384, 8, 2}, Slice{32768, 16, 2}}) {
      int64_t size = (cols + s.block - 1) / s.block;
      if (s.block > maxBlock || size > kMaxCluster || (s.block == 8192 && cols > kSmallSlicesUpTo))
        continue;
      return SoftmaxPlan{.direction = dir, .online = false, .clusterSize = int(size),
                         .blockSize = s.block, .numWarps = s.warps, .numStages = s.stages};
    }
    return std::nullopt;
  }
  struct Option {
    int64_t block;
    int maxSize;
  };
  for (Option o : {Option{maxBlock / 2, kMaxCluster}, Option{maxBlock, kMaxCluster},
                   Option{maxBlock, forward ? kMaxCluster : kMaxClusterBackward}}) {
    int64_t size = (cols + o.block - 1) / o.block;
    if (size > o.maxSize)
      continue;
    int perThread = forward ? 64 : 32; // backward holds o and dout
    int warps = int(std::clamp<int64_t>(o.block / (32 * perThread), 1, 32));
    // Two CTAs per SM only if ptxas is told to keep registers low enough for them.
    int perSM = o.block == maxBlock / 2 ? 2 : 1;
    return SoftmaxPlan{.direction = dir, .online = false, .clusterSize = int(size),
                       .minBlocksPerSM = perSM, .blockSize = o.block, .numWarps = warps,
                       .numStages = 1};
  }
  return std::nullopt;
}

SoftmaxPlan planSoftmax(int64_t cols, const std::string &dtype) {
  if (blockFor(cols) > kMaxRegisterBlock) {
    if (auto plan = planCluster(SoftmaxDirection::Forward, cols, kMaxRegisterBlock))
      return *plan;
    return planOnline(SoftmaxDirection::Forward);
  }
  bool half = dtype == "fp16" || dtype == "bf16";
  WarpsStages ws = fromTable(half ? kHalfForward : kForward, blockFor(cols));
  if (cols > 12288 && cols <= 16384)
    ws = half ? kHalfForwardBeyond12288 : kForwardBeyond12288;
  SoftmaxPlan plan{.direction = SoftmaxDirection::Forward, .online = false,
                   .minBlocksPerSM = ws.minBlocks, .prefetch = ws.prefetch, .numWarps = ws.warps,
                   .numStages = ws.stages, .programPerRow = ws.programPerRow,
                   .programsPerCTA = ws.programsPerCTA};
  plan.fitBlock(cols, dtype);
  if (half && plan.programPerRow && plan.numWarps == 8 && cols > 4096 && cols <= 12288)
    plan.minBlocksPerSM = halfMinBlocks(plan.blockSize);
  // A row just past a multiple of the CTA's tile masks much of its last tile: with a program
  // per row, half the warps (half the tile) often fit it tighter, e.g. 2304 fp32 columns in a
  // 2560 block at 4 warps instead of 3072 at 8 (docs/notes/softmax.md, "Rows that are not a
  // power of two").
  if (plan.programPerRow && cols <= 8192 && plan.numWarps > 1) {
    SoftmaxPlan fewer = plan;
    fewer.numWarps /= 2;
    fewer.fitBlock(cols, dtype);
    if (fewer.blockSize < plan.blockSize)
      plan = fewer;
  }
  return plan;
}

SoftmaxPlan planSoftmaxBackward(int64_t cols, const std::string &dtype) {
  (void)dtype; // measured for fp32; 16-bit rows use the same plans for now
  int64_t block = blockFor(cols);
  if (block > kMaxRegisterBlockBackward) {
    if (auto plan = planCluster(SoftmaxDirection::Backward, cols, kMaxRegisterBlockBackward))
      return *plan;
    return planOnline(SoftmaxDirection::Backward);
  }
  WarpsStages ws = fromTable(kBackward, block);
  return SoftmaxPlan{.direction = SoftmaxDirection::Backward, .online = false,
                     .blockSize = block, .numWarps = ws.warps, .numStages = ws.stages};
}

// A plan the kernels can run as written: nothing in it is silently ignored.
static void requireRunnable(const SoftmaxPlan &plan, SoftmaxDirection want, const char *what) {
  if (plan.direction != want)
    throw UserError(std::string(what) + " was given a plan for the other direction (" +
                    plan.str() + ")");
  if (plan.prefetch && (plan.online || want != SoftmaxDirection::Forward || plan.numStages != 1))
    throw UserError(std::string(what) + ": the prefetch applies to the one-pass forward kernels "
                    "and replaces the cp.async ring (num_stages 1), but the plan is " + plan.str());
}

int64_t SoftmaxPlan::grid(CompiledKernel &k, int64_t rows) const {
  int64_t perCTA = std::max(programsPerCTA, 1);
  return programPerRow ? std::max<int64_t>((rows + perCTA - 1) / perCTA, 1) * clusterSize
                       : k.persistentGrid(rows);
}

CompiledKernel &softmaxForward(const SoftmaxPlan &plan, const std::string &dtype, KernelArg out,
                               KernelArg in, SoftmaxShape shape, int64_t inStride,
                               int64_t outStride, CUstream stream, int64_t grid) {
  requireRunnable(plan, SoftmaxDirection::Forward, "softmaxForward");
  if (shape.cols > plan.maxCols())
    throw UserError("softmaxForward: rows of " + std::to_string(shape.cols) +
                    " columns do not fit the plan's block (" + plan.str() + ")");
  KernelArg r(shape.rows), c(shape.cols), si(inStride), so(outStride);
  Specialization spec = plan.specialization(dtype, shape.rows, std::max(inStride, outStride))
                            .specializedFor({out, in, si, so, r, c});
  CompiledKernel &k = plan.kernel().compile(spec);
  k.launch(grid > 0 ? grid : plan.grid(k, shape.rows), stream, {out, in, si, so, r, c});
  return k;
}

CompiledKernel &softmaxBackward(const SoftmaxPlan &plan, const std::string &dtype, KernelArg dx,
                                KernelArg o, KernelArg dout, SoftmaxShape shape,
                                int64_t dxStride, int64_t oStride, int64_t doutStride,
                                CUstream stream, int64_t grid) {
  requireRunnable(plan, SoftmaxDirection::Backward, "softmaxBackward");
  if (shape.cols > plan.maxCols())
    throw UserError("softmaxBackward: rows of " + std::to_string(shape.cols) +
                    " columns do not fit the plan's block (" + plan.str() + ")");
  KernelArg r(shape.rows), c(shape.cols), sd(dxStride), so(oStride), sg(doutStride);
  Specialization spec =
      plan.specialization(dtype, shape.rows, std::max({dxStride, oStride, doutStride}))
          .specializedFor({dx, o, dout, sd, so, sg, r, c});
  CompiledKernel &k = plan.kernel().compile(spec);
  k.launch(grid > 0 ? grid : plan.grid(k, shape.rows), stream,
           {dx, o, dout, sd, so, sg, r, c});
  return k;
}

} // namespace tritium::kernels
