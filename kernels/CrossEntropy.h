// Cross-entropy over a vocabulary, forward and fused backward: rows of `vocab` logits (fp32,
// fp16 or bf16; rows of any length, each read in blocks with an online log-sum-exp), int64
// targets, PyTorch's ignore_index and label_smoothing, and the mean over the rows that are not
// ignored. Pointers are device addresses (host addresses under TRITIUM_INTERPRET=1); every call
// is asynchronous on `stream`. A target outside [0, vocab) that is not ignoreIndex gives a NaN
// loss and a NaN gradient row, never a read outside the row.
#pragma once

#include "kernels/Autotuner.h"
#include "kernels/Dtype.h"

#include <cuda.h>

#include <cstdint>
#include <vector>

namespace tritium::kernels {

struct CrossEntropyForwardArgs {
  float *loss = nullptr; // [rows]: the row's loss, 0 where the target is ignoreIndex
  float *lse = nullptr;  // [rows]: log-sum-exp of the row's logits (the backward needs it)
  // May be null. Else [2]: the mean of the loss over the rows not ignored, and their count (as
  // a float); the backward's mean scaling reads the count from here.
  float *stats = nullptr;
  const void *logits = nullptr;
  const int64_t *targets = nullptr;
  int64_t rows = 0, vocab = 0, logitsStride = 0; // stride 0: vocab
  int64_t ignoreIndex = -100;
  float labelSmoothing = 0.0f;
};

// dlogits = (softmax(logits) - (1 - s) onehot(target) - s / vocab) x scale, 0 on ignored rows,
// with scale = gradLoss / count when `stats` is given (the forward's mean), else gradLoss.
// dlogits may be logits (the gradient written in place).
struct CrossEntropyBackwardArgs {
  void *dlogits = nullptr;
  const void *logits = nullptr;
  const int64_t *targets = nullptr;
  const float *lse = nullptr;
  const float *stats = nullptr;
  int64_t rows = 0, vocab = 0, logitsStride = 0, dlogitsStride = 0;
  int64_t ignoreIndex = -100;
  float labelSmoothing = 0.0f;
  float gradLoss = 1.0f;
};

// Columns per step, warps and the depth of the cp.async ring over a row's blocks.
struct CrossEntropyPlan {
  int64_t block = 4096; // columns per step
  // Rows per step: above 1, a [rowsPerStep, block] tile of rows side by side (plain loads; then
  // numStages must be 1).
  int rowsPerStep = 1;
  // The forward loads each block into registers one step ahead (plain loads; numStages 1).
  // The backward, which stores as it goes, ignores it.
  bool prefetch = false;
  int numWarps = 8;
  int numStages = 3;
  // The forward's running maximum shared by `group` neighbouring columns of a lane (1: one per
  // column; a power of two up to 16 bytes of logits, with one row per step). The backward
  // ignores it.
  int group = 1;
  // true: an occupancy-sized grid whose programs stride over the steps. false: one program per
  // step, which the GPU's block scheduler hands out as programs finish, so that a program
  // slowed by its neighbours takes fewer rows.
  bool persistent = true;
  // CUDA's __launch_bounds__ minimum (Specialization::minBlocksPerSM): registers capped so that
  // this many CTAs fit on an SM.
  int minBlocksPerSM = 1;
  // The backward, one row per step: each row's blocks in this many runs, each run a step of
  // its own, so that the last steps of a launch are short (the forward ignores it).
  int rowParts = 1;
  // The backward, where both tensors' rows are packed back to back (strides equal to the
  // vocabulary) and start on 16-byte boundaries: all rows read as one run of rows x vocab
  // elements in chunks of `block` (at most the vocabulary; a chunk may straddle two rows), so
  // that every chunk but the last is whole and aligned, whatever the vocabulary. One row per
  // step and no runs of rows (rowsPerStep and rowParts 1); the forward ignores it.
  bool flat = false;
  // A flat plan without a persistent grid: the chunks each program takes, one after another
  // (16: the planner's, with the default block and warps).
  int flatRun = 16;
  PlanFields fields() const {
    return {{"block", block},
            {"rows", rowsPerStep},
            {"prefetch", prefetch ? 1 : 0},
            {"warps", numWarps},
            {"stages", numStages},
            {"group", group},
            {"persistent", persistent ? 1 : 0},
            {"min_blocks_per_sm", minBlocksPerSM},
            {"row_parts", rowParts},
            {"flat", flat ? 1 : 0},
            {"flat_run", flatRun}};
  }
};
CrossEntropyPlan planCrossEntropy(int64_t vocab, Dtype dtype);
// What the autotuner times: blocks of 2048 to 8192 columns, 4 or 8 warps, no ring (plain
// loads) or rings of 2 or 3; tiles of 2 or 4 rows of up to 8192 elements in all; and blocks
// loaded a step ahead; and, for the forward only, groups of 16 bytes of columns sharing a
// running maximum, those of 8 warps without a ring also with registers capped for three CTAs
// per SM; the one-row plans also with one program per row; and, for the backward only, those
// of 8 warps with a program per row also in runs of about 8 and 16 blocks (rowParts), and the
// packed rows read flat in chunks of 4096 (rows of at least that), 8 warps, a ring of 3, runs
// of 8 or 16 chunks a program.
std::vector<CrossEntropyPlan> crossEntropyCandidates(int64_t vocab, Dtype dtype);
// The backward's runs per row for rows of `vocab` columns in blocks of `block`: about 8 blocks a
// run, a power of two; 1 for rows of fewer than 12 blocks.
int crossEntropyRowParts(int64_t vocab, int64_t block);

// Each takes the autotuner's (or the planner's) choice unless a plan is given. A backward
// written in place is not tuned (it cannot run twice on its arguments): it takes the winner
// recorded by an earlier call of the same shape that was not in place, else the planner's.

void crossEntropyForward(Dtype dtype, const CrossEntropyForwardArgs &args, CUstream stream,
                         const CrossEntropyPlan *plan = nullptr);
void crossEntropyBackward(Dtype dtype, const CrossEntropyBackwardArgs &args, CUstream stream,
                          const CrossEntropyPlan *plan = nullptr);

} // namespace tritium::kernels
