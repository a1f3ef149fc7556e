// The keys a block of query rows sees, as the attention forward and the backward's dQ kernel
// both walk them, and which of their steps need a mask (DSL, traced into each kernel).
#pragma once

#include "frontend/DSL.h"

#include <functional>
#include <optional>

namespace tritium::kernels {

struct KeyRange {
  dsl::Operand lo; // the first step's key, a multiple of BN
  dsl::Value hi;   // one past the last key
};

// Query rows pid_m * BM .. + BM of a sequence of seqQ queries and seqKV keys, whose row i sees
// keys up to i + shift (shift = seqKV - seqQ: causal masks align bottom-right) when CAUSAL, and
// i + shift - win_left .. i + shift + win_right with a WINDOW; the walk starts at the BN-aligned
// step holding the first row's first key and ends after the last row's last. VARLEN: programs
// past a shorter sequence's rows walk no keys.
inline KeyRange keysSeen(const dsl::Value &pid_m, int BM, int BN, const dsl::Value &seqQ,
                         const dsl::Value &seqKV, const dsl::Value &shift,
                         const dsl::Value &win_left, const dsl::Value &win_right, int CAUSAL,
                         int WINDOW, int VARLEN) {
  using namespace dsl;
  KeyRange r{0, seqKV};
  if (CAUSAL)
    r.hi = maximum(minimum(seqKV, (pid_m + 1) * BM + shift), 0);
  if (WINDOW) {
    r.lo = maximum(pid_m * BM + shift - win_left, 0) / BN * BN;
    r.hi = maximum(minimum(seqKV, (pid_m + 1) * BM + shift + win_right), 0);
  }
  if (VARLEN)
    r.hi = where(pid_m * BM < seqQ, r.hi, 0);
  return r;
}

// Applies `mask` on the steps that need it: every step with a WINDOW; else, under a branch the
// whole program takes alike, the steps whose rows or columns reach past the sequences' ends
// (`pastEnd`, none when no step can) or, CAUSAL, that hold a key past some query's diagonal
// (`crossesDiagonal`). Leaving the mask out of the other steps made the forward 6-19% faster
// causal (docs/notes/attention.md, "Masks only where a step needs one").
inline void maskWhereNeeded(int WINDOW, int CAUSAL, const std::optional<dsl::Value> &pastEnd,
                            const dsl::Value &crossesDiagonal,
                            const std::function<void()> &mask) {
  using namespace dsl;
  if (WINDOW)
    return mask();
  std::optional<Value> needed = pastEnd;
  if (CAUSAL)
    needed = needed ? *needed | crossesDiagonal : crossesDiagonal;
  if (needed)
    if_(*needed, mask);
}

} // namespace tritium::kernels
