// Cross-entropy in tritium's DSL. Each program walks rows with a persistent-grid stride and
// streams a row in blocks through a cp.async ring. Each lane keeps a running maximum m and a sum
// s of exp(x - m); one exp per element suffices: for d = x - m, e = exp(-|d|) either rescales
// the sum (x is the new maximum: s = s e + 1) or is the new term (s = s + e). The backward reads
// the row once more and writes the gradient (in place when asked).
#include "kernels/CrossEntropy.h"

#include "compiler/support/Error.h"
#include "frontend/DSL.h"
#include "frontend/Kernel.h"
#include "kernels/Arguments.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cfloat>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <numeric>

namespace tritium::kernels {

using namespace tritium::dsl;

// Rows that start anywhere (ALIGN > 1, one row per step), for both kernels: the columns before
// the row's first 16-byte boundary go on their own (the head), and the blocks start there.
static Value headColumns(const Value &start, int align, const Value &vocab) {
  return minimum((align - start % align) % align, vocab);
}
// Where the row's block at column `off` starts: past the head a 16-byte boundary, which ALIGN > 1
// tells the compiler.
static Value blockStart(const Value &start, const Operand &off, int align) {
  return align > 1 ? multiple_of(start + off, {align}) : start + off;
}
// The end of the row's whole blocks of `block` columns from column `first`.
static Value wholeBlocksEnd(const Operand &first, const Value &vocab, int block) {
  return first + (vocab - first) / block * block;
}

// The backwards' scale of a row with target `t`: 0 where the target is ignored, NaN where it
// lies outside the vocabulary, else `scale`.
static Value rowScale(const Value &t, const Value &vocab, const Value &ignore, const Value &scale) {
  return where(t != ignore, where((t >= 0) & (t < vocab), scale, NAN), 0.0);
}
// d loss / d logit, before the row's scale: softmax - (1 - smoothing) onehot - smoothing / vocab,
// where column `col` is the target's when it equals `target`. (The row kernel writes it out:
// through this function its tiles' ops come in another order, and the PTX differs.)
static Value logitGradient(const Value &x, const Value &lse, const Value &col,
                           const Value &target, const Value &smoothing, const Value &uniform) {
  return exp(x - lse) - where(col == target, 1.0 - smoothing, 0.0) - uniform;
}

// A program takes ROWS rows per step: one row (a [BLOCK] block, through the cp.async ring when
// num_stages > 1) or, with ROWS > 1, a [ROWS, BLOCK] tile of several rows loaded side by side
// (plain loads), so that each step has more bytes in flight and the end-of-row reductions, where
// no load is outstanding, come once per ROWS rows.
//
// GROUP > 1 (one row per step): each lane's GROUP neighbouring columns (one 16-byte vector, a
// row of the block seen as [BLOCK / GROUP, GROUP]) share one running maximum. The sum is then
// rescaled once per group instead of tested per element: per element a max, a subtract, a
// multiply, an exp and an add, against a subtract, a multiply, a compare, an exp, an fma or
// add, a select and a max per slot.
static void cross_entropy_forward(Ptr loss, Ptr lse_out, Ptr logits, Ptr targets, Int stride,
                                  Int n_rows, Int vocab, Int ignore_index, Float smoothing,
                                  int BLOCK, int ROWS, int PREFETCH, int num_stages, int SMOOTH,
                                  int GROUP, int ALIGN) {
  const bool tile = ROWS > 1, grouped = GROUP > 1;
  auto cols = tile ? arange(0, BLOCK)(None, _) : arange(0, BLOCK);
  std::vector<int64_t> shape = tile ? std::vector<int64_t>{ROWS, BLOCK} : std::vector<int64_t>{BLOCK};
  // A [BLOCK] block seen as [BLOCK / GROUP, GROUP]: each lane's run of GROUP is a row, so the
  // reshape moves nothing and the group's max and sum stay in the lane's registers.
  auto groups = [&](const Value &v) { return reshape(v, {BLOCK / GROUP, GROUP}); };
  // The running maximum and sum per column, or per group: these are born as reductions of the
  // grouped view, so that they sit in the registers the loop's group reductions give.
  auto slots = [&](double value) {
    return grouped ? max(groups(full(shape, value, float32)), 1) : full(shape, value, float32);
  };
  const int axis = tile ? 1 : 0; // the columns' axis
  auto tiles = tile ? (n_rows + (ROWS - 1)) / ROWS : n_rows;
  for (auto step : range(program_id(0), tiles, num_programs(0), 1)) {
    auto row = tile ? step * ROWS + arange(0, ROWS) : step; // [ROWS] or a scalar
    auto rowMask = row < n_rows;
    auto start = (tile ? row(_, None) : row) * stride;
    // -FLT_MAX, not -inf: x - m is then never inf - inf, so -inf logits need no test (the
    // exp gives 0), and a row of only -inf logits still ends with s = 0, lse = -inf.
    auto m = slots(-FLT_MAX);
    auto s = slots(0.0);
    auto total = zeros(shape, float32); // the row's sum, for label smoothing
    // The loads whose values are only needed after the row's loop go out before it, so that
    // their latency passes while the row streams: the target's logit, and the head.
    auto t = tile ? load(targets + row, rowMask, ignore_index) : load(targets + row);
    auto counted = t != ignore_index;
    auto inside = (t >= 0) & (t < vocab);
    auto xt_raw = load(logits + row * stride + t, (tile ? rowMask & counted : counted) & inside, 0.0);
    // ALIGN > 1 (one row per step; rows that start anywhere): the columns before the row's
    // first 16-byte boundary make a head of their own, and the blocks start at that boundary.
    Value head, hc, hx_raw;
    Operand first = 0;
    if (ALIGN > 1) {
      hc = arange(0, ALIGN);
      head = headColumns(start, ALIGN, vocab);
      hx_raw = load(logits + start + hc, hc < head, -INFINITY);
      first = head;
    }
    // One block of logits (as f32) into the running maximum and sum; `valid` (null: every
    // column) says which columns are the row's, for the smoothing's sum.
    auto accumulate = [&](const Value &x, const Value &valid) {
      if (grouped) {
        // exp(x - mn), not exp2(x log2e - mn log2e) as one fma: mn log2e overflows while
        // mn is still -FLT_MAX.
        auto xg = groups(x);
        auto mn = maximum(m, max(xg, 1));
        s = s * exp(m - mn) + sum(exp(xg - mn(_, None)), 1);
        m = mn;
      } else {
        auto e = exp(-abs(x - m));
        auto larger = x > m;
        s = where(larger, s * e + 1.0, s + e);
        m = maximum(m, x);
      }
      if (SMOOTH)
        total = total + (valid.ir() ? where(valid, x, 0.0) : x);
    };
    if (tile) {
      // Tiles of rows: every block masked by the rows and the vocabulary.
      auto maskAt = [&](const Value &c) { return rowMask(_, None) & (c < vocab); };
      auto blockAt = [&](const Operand &off) {
        return load(logits + start + off + cols, maskAt(off + cols), -INFINITY);
      };
      Value ahead = PREFETCH ? blockAt(0) : Value();
      for (auto off : range(0, vocab, BLOCK, num_stages)) {
        Value raw;
        if (PREFETCH) {
          raw = ahead;
          ahead = blockAt(off + BLOCK); // past the row: all masked, nothing read
        } else {
          raw = blockAt(off);
        }
        accumulate(cast(raw, float32), maskAt(off + cols));
      }
    } else {
      // One row: whole blocks without a mask (nothing to select, vectors wherever the row's
      // start allows), then the last, partial block, loaded before the loop so that its latency
      // passes while the row streams.
      auto at = [&](const Operand &off) { return blockStart(start, off, ALIGN); };
      auto body_end = wholeBlocksEnd(first, vocab, BLOCK);
      auto tail_valid = body_end + cols < vocab;
      auto tail_raw = load(logits + at(body_end) + cols, tail_valid, -INFINITY);
      // PREFETCH: the next block's loads go out before this block's math (a register double
      // buffer), so that each warp keeps loads in flight while it computes.
      auto wholeAt = [&](const Operand &off) {
        return load(logits + at(off) + cols, off + cols < body_end, -INFINITY);
      };
      Value ahead = PREFETCH ? wholeAt(first) : Value();
      for (auto off : range(first, body_end, BLOCK, num_stages)) {
        Value raw;
        if (PREFETCH) {
          raw = ahead;
          ahead = wholeAt(off + BLOCK); // past the whole blocks: all masked, nothing read
        } else {
          raw = load(logits + at(off) + cols);
        }
        accumulate(cast(raw, float32), Value());
      }
      accumulate(cast(tail_raw, float32), tail_valid);
    }
    auto row_max = max(m, axis);
    auto row_total = sum(total, axis);
    Value head_max, head_sum;
    if (ALIGN > 1) {
      auto hx = cast(hx_raw, float32);
      head_max = maximum(max(hx, 0), -FLT_MAX);
      head_sum = sum(exp(hx - head_max), 0);
      row_max = maximum(row_max, head_max);
      row_total = row_total + sum(where(hc < head, hx, 0.0), 0);
    }
    auto spread = tile ? row_max(_, None) : row_max;
    auto exps = sum(s * exp(m - spread), axis);
    if (ALIGN > 1)
      exps = exps + head_sum * exp(head_max - row_max);
    auto lse = row_max + log(exps); // only -inf: -FLT_MAX + log 0
    auto nll = lse - cast(xt_raw, float32);
    auto value = SMOOTH ? (1.0 - smoothing) * nll + smoothing * (lse - row_total / vocab) : nll;
    auto v = where(counted, where(inside, value, NAN), 0.0);
    if (tile) {
      store(loss + row, v, rowMask);
      store(lse_out + row, lse, rowMask);
    } else {
      store(loss + row, v);
      store(lse_out + row, lse);
    }
  }
}

// stats[0] = the mean loss over rows whose target is not ignore_index, stats[1] = their count.
static void cross_entropy_mean(Ptr stats, Ptr loss, Ptr targets, Int n_rows, Int ignore_index,
                               int BLOCK) {
  auto acc = zeros({BLOCK}, float32);
  auto n = zeros({BLOCK}, float32);
  for (auto r0 : range(0, n_rows, BLOCK)) {
    auto r = r0 + arange(0, BLOCK);
    auto counted = (r < n_rows) & (load(targets + r, r < n_rows, ignore_index) != ignore_index);
    acc = acc + where(counted, load(loss + r, counted, 0.0), 0.0);
    n = n + cast(counted, float32);
  }
  auto count = sum(n, 0);
  store(stats, sum(acc, 0) / count);
  store(stats + 1, count);
}

// The gradient of ROWS rows per step, as the forward walks them, each block under a mask of the
// vocabulary. WHOLE_BLOCKS (one row per step, where such a mask would end mid-vector and leave
// every block's loads and stores at 2 bytes: a vocabulary of 50257): whole blocks without a
// mask, then the last, partial block under one. ALIGN > 1 (logits and dlogits 16-byte aligned
// with one stride that is not a multiple of ALIGN elements; implies WHOLE_BLOCKS): each row's
// first elements up to a 16-byte boundary go on their own, and the blocks start at that
// boundary, although rows start anywhere.
static void cross_entropy_backward(Ptr dlogits, Ptr logits, Ptr targets, Ptr lse, Ptr stats,
                                   Int x_stride, Int dx_stride, Int n_rows, Int vocab,
                                   Int ignore_index, Float smoothing, Float grad, int BLOCK,
                                   int ROWS, int num_stages, int ALIGN, int MEAN, int WHOLE_BLOCKS,
                                   int PARTS) {
  const bool tile = ROWS > 1, split = PARTS > 1;
  auto cols = tile ? arange(0, BLOCK)(None, _) : arange(0, BLOCK);
  auto scale = MEAN ? grad / load(stats + 1) : grad * 1.0;
  auto tiles = tile ? (n_rows + (ROWS - 1)) / ROWS : n_rows;
  for (auto step : range(program_id(0), tiles * PARTS, num_programs(0), 1)) {
    // PARTS > 1 (one row per step): each row's blocks in PARTS runs, one step each.
    auto row = tile ? step * ROWS + arange(0, ROWS) : split ? step / PARTS : step;
    auto part = split ? step % PARTS : step * 0;
    // This step's run of the row's `blocks` blocks from column `start`: its first and end
    // columns (an empty run where the blocks do not split evenly).
    auto run = [&](const Operand &start, const Value &blocks) {
      auto each = (blocks + (PARTS - 1)) / PARTS;
      auto from = minimum(part * each, blocks);
      auto to = minimum(from + each, blocks);
      return std::pair{start + from * BLOCK, start + to * BLOCK};
    };
    auto rowMask = row < n_rows;
    auto t = tile ? load(targets + row, rowMask, ignore_index) : load(targets + row);
    auto row_scale = rowScale(t, vocab, ignore_index, scale);
    auto l = tile ? load(lse + row, rowMask, 0.0) : load(lse + row);
    // Per-row values spread over the columns.
    auto spread = [&](const Value &v) { return tile ? v(_, None) : v; };
    auto uniform = smoothing / vocab;
    // The gradient at columns c of this row (or rows), where `mask` holds (every column when
    // `mask` is empty).
    auto gradient = [&](const Value &in, const Value &out, const Value &c, const Value &mask) {
      auto x = cast(mask.ir() ? load(in, mask, 0.0) : load(in), float32);
      auto g = exp(x - spread(l)) - where(c == spread(t), 1.0 - smoothing, 0.0) - uniform;
      auto v = cast(g * spread(row_scale), dlogits.dtype());
      mask.ir() ? store(out, v, mask) : store(out, v);
    };
    if (!WHOLE_BLOCKS) {
      auto in = logits + spread(row) * x_stride;
      auto out = dlogits + spread(row) * dx_stride;
      auto body = [&](const Operand &from, const Operand &to) {
        for (auto off : range(from, to, BLOCK, num_stages)) {
          auto c = off + cols;
          gradient(in + c, out + c, c, tile ? rowMask(_, None) & (c < vocab) : c < vocab);
        }
      };
      if (split) {
        auto [from, to] = run(0, (vocab + (BLOCK - 1)) / BLOCK);
        body(from, to);
      } else {
        body(0, vocab);
      }
    } else {
      auto in = row * x_stride, out = row * dx_stride; // dx_stride == x_stride where ALIGN > 1
      auto firstPart = part == 0, lastPart = part == PARTS - 1;
      Operand first = 0;
      if (ALIGN > 1) {
        auto head = headColumns(in, ALIGN, vocab);
        auto hc = arange(0, ALIGN);
        gradient(logits + in + hc, dlogits + out + hc, hc,
                 split ? (hc < head) & firstPart : hc < head);
        first = head;
      }
      auto body_end = wholeBlocksEnd(first, vocab, BLOCK);
      auto body = [&](const Operand &from, const Operand &to) {
        for (auto off : range(from, to, BLOCK, num_stages))
          gradient(logits + blockStart(in, off, ALIGN) + cols,
                   dlogits + blockStart(out, off, ALIGN) + cols, off + cols, Value());
      };
      if (split) {
        auto [from, to] = run(first, (body_end - first) / BLOCK);
        body(from, to);
      } else {
        body(first, body_end);
      }
      // The last block after the loop: loaded before it, it measured 3-6% slower
      // (docs/notes/cross-entropy.md, "Peeled heads, whole blocks and a tail").
      auto c = body_end + cols;
      gradient(logits + blockStart(in, body_end, ALIGN) + cols,
               dlogits + blockStart(out, body_end, ALIGN) + cols, c,
               split ? (c < vocab) & lastPart : c < vocab);
    }
  }
}

// FLAT: rows packed back to back (both strides equal to the vocabulary) read as one run of
// rows x vocab elements, in chunks of BLOCK <= vocab, so that a chunk straddles at most two
// rows. Every chunk but the last is a whole block on a 16-byte boundary, whatever the
// vocabulary, and the chunks split evenly among the programs: no row's tail or peeled head,
// and no program left holding a whole row at the end of the launch. A chunk takes its first
// row's and the next row's target and lse, loaded a chunk ahead. Per element the math is the
// row kernel's: the chunk's rows are told apart only in the chunks that straddle two (a
// uniform branch), and the target's column becomes a lane index once per chunk.
static void cross_entropy_backward_flat(Ptr dlogits, Ptr logits, Ptr targets, Ptr lse, Ptr stats,
                                        Int total, Int n_rows, Int vocab, Int ignore_index,
                                        Float smoothing, Float grad, int BLOCK, int num_stages,
                                        int MEAN, int WIDE, int RUN) {
  auto scale = MEAN ? grad / load(stats + 1) : grad * 1.0;
  auto pid = WIDE ? cast(program_id(0), int64) : program_id(0);
  auto programs = WIDE ? cast(num_programs(0), int64) : num_programs(0);
  auto lanes = arange(0, BLOCK);
  auto whole = total / BLOCK; // chunks without a mask
  auto uniform = smoothing / vocab;
  // RUN > 0: each program takes a run of RUN chunks, one after another (the GPU's block
  // scheduler balances the programs); else the chunks with the persistent grid's stride.
  auto from = RUN ? pid * RUN : pid;
  auto to = RUN ? minimum(from + RUN, whole) : whole;
  auto step = RUN ? pid * 0 + 1 : programs; // 1 in pid's integer type
  // A chunk's place as its first row and column, advanced each step without a division: a
  // step of `stride` elements is `strideRows` rows and `strideCols` columns.
  auto first = from * BLOCK;
  auto row = cast(first / vocab, int32), col = cast(first % vocab, int32);
  auto stride = step * BLOCK;
  auto strideRows = cast(stride / vocab, int32), strideCols = cast(stride % vocab, int32);
  // The chunk's first row's and the next row's targets and lse (rows clamped to the last, so
  // that a chunk past the end reads inside the arrays).
  auto rowsOf = [&](const Value &r) {
    auto row0 = minimum(r, n_rows - 1);
    auto row1 = minimum(row0 + 1, n_rows - 1);
    return std::array<Value, 4>{load(targets + row0), load(targets + row1), load(lse + row0),
                                load(lse + row1)};
  };
  // The last, partial chunk (`mask` given) takes the general path only: one chunk a launch,
  // and a second copy of the fast path would add a quarter to the kernel's compile time.
  auto gradient = [&](const Value &start, const Value &col0, const std::array<Value, 4> &rows,
                      const Value &mask) {
    auto split = vocab - col0; // lanes from here on hold the next row
    // The lane of each row's target (32-bit: a target outside the vocabulary or ignored makes
    // the row's scale NaN or 0, so a lane it happens to name does not matter).
    auto hit0 = cast(rows[0], int32) - col0, hit1 = cast(rows[1], int32) + split;
    auto rs0 = rowScale(rows[0], vocab, ignore_index, scale),
         rs1 = rowScale(rows[1], vocab, ignore_index, scale);
    auto at = logits + start + lanes, out = dlogits + start + lanes;
    auto x = cast(mask.ir() ? load(at, mask, 0.0) : load(at), float32);
    auto v = zeros({BLOCK}, float32);
    auto general = [&] {
      auto next = lanes >= split;
      auto l = where(next, rows[3], rows[2]);
      auto hit = where(next, hit1, hit0);
      auto g = logitGradient(x, l, lanes, hit, smoothing, uniform);
      v = g * where(next, rs1, rs0);
    };
    if (mask.ir())
      general();
    else
      if_(
          split >= BLOCK,
          [&] { v = logitGradient(x, rows[2], lanes, hit0, smoothing, uniform) * rs0; }, general);
    auto y = cast(v, dlogits.dtype());
    mask.ir() ? store(out, y, mask) : store(out, y);
  };
  auto here = rowsOf(row);
  for (auto chunk : range(from, to, step, num_stages)) {
    auto c = col + strideCols;
    auto wraps = c >= vocab;
    auto nextCol = where(wraps, c - vocab, c);
    auto nextRow = row + strideRows + cast(wraps, int32);
    auto nextRows = rowsOf(nextRow);
    gradient(chunk * BLOCK, col, here, Value());
    row = nextRow;
    col = nextCol;
    here = nextRows;
  }
  // The last, partial chunk: the program whose turn it is, which the loop has left at it.
  auto start = whole * BLOCK;
  if_((RUN ? pid == whole / RUN : pid == whole % programs) & (start < total),
      [&] { gradient(start, col, here, start + lanes < total); });
}

static Kernel &forwardKernel() {
  static auto k = kernel("cross_entropy_forward", cross_entropy_forward,
                         {"loss", "lse", "logits", "targets", "stride", "n_rows", "vocab",
                          "ignore_index", "smoothing", "BLOCK", "ROWS", "PREFETCH", "num_stages",
                          "SMOOTH", "GROUP", "ALIGN"});
  return k;
}
static Kernel &meanKernel() {
  static auto k = kernel("cross_entropy_mean", cross_entropy_mean,
                         {"stats", "loss", "targets", "n_rows", "ignore_index", "BLOCK"});
  return k;
}
static Kernel &backwardKernel() {
  static auto k = kernel("cross_entropy_backward", cross_entropy_backward,
                         {"dlogits", "logits", "targets", "lse", "stats", "x_stride", "dx_stride",
                          "n_rows", "vocab", "ignore_index", "smoothing", "grad", "BLOCK", "ROWS",
                          "num_stages", "ALIGN", "MEAN", "WHOLE_BLOCKS", "PARTS"});
  return k;
}
static Kernel &flatBackwardKernel() {
  static auto k =
      kernel("cross_entropy_backward_flat", cross_entropy_backward_flat,
             {"dlogits", "logits", "targets", "lse", "stats", "total", "n_rows", "vocab",
              "ignore_index", "smoothing", "grad", "BLOCK", "num_stages", "MEAN", "WIDE", "RUN"});
  return k;
}

int crossEntropyRowParts(int64_t vocab, int64_t block) {
  // Runs of about 8 blocks: the power of two nearest (in ratio) to blocks / 8. On the H200, with
  // a program per run, the backward at 128256 and 256000 ran 4% faster so (0.97 of copy against
  // 0.93), and runs of 2 blocks or fewer were slower (docs/notes/cross-entropy.md, "Long rows
  // in runs of blocks").
  double runs = double((vocab + block - 1) / std::max<int64_t>(block, 1)) / 8.0;
  int parts = 1;
  while (parts < 1024 && double(parts) * std::sqrt(2.0) < runs)
    parts *= 2;
  return parts;
}

CrossEntropyPlan planCrossEntropy(int64_t vocab, Dtype dtype) {
  (void)vocab; // docs/notes/cross-entropy.md records what was measured
  // The forward's running maximum shared by each lane's 16-byte vector: the tuner's pick at
  // every aligned vocabulary on the H100, and the smaller kernel (the forward's compile on the
  // development machine 32-43 ms rather than 48-52; the backward ignores the field).
  return CrossEntropyPlan{.group = int(16 / dtypeBytes(dtype))};
}

std::vector<CrossEntropyPlan> crossEntropyCandidates(int64_t vocab, Dtype dtype) {
  std::vector<CrossEntropyPlan> out{planCrossEntropy(vocab, dtype)};
  auto add = [&](const CrossEntropyPlan &p) {
    if (std::none_of(out.begin(), out.end(),
                     [&](const CrossEntropyPlan &q) { return q.fields() == p.fields(); }))
      out.push_back(p);
  };
  for (int64_t block : {2048, 4096, 8192})
    for (int warps : {4, 8})
      for (int stages : {1, 2, 3})
        add({.block = block, .numWarps = warps, .numStages = stages});
  // Several rows per step, plain loads.
  for (int rows : {2, 4})
    for (int64_t block : {1024, 2048, 4096})
      for (int warps : {4, 8})
        if (rows * block <= 8192)
          add({.block = block, .rowsPerStep = rows, .numWarps = warps, .numStages = 1});
  // The next block loaded into registers ahead (the forward; the backward ignores it).
  for (int rows : {1, 2})
    for (int64_t block : {1024, 2048, 4096})
      for (int warps : {4, 8})
        if (rows * block <= 4096)
          add({.block = block,
               .rowsPerStep = rows,
               .prefetch = true,
               .numWarps = warps,
               .numStages = 1});
  // The forward's groups: 16 bytes of logits per lane share a running maximum (the backward
  // ignores the field, and drops these candidates).
  int64_t group = 16 / dtypeBytes(dtype);
  for (int64_t block : {2048, 4096, 8192})
    for (int warps : {4, 8}) {
      if (block % (32 * warps * group) != 0)
        continue;
      for (int stages : {1, 2, 3})
        add({.block = block, .numWarps = warps, .numStages = stages, .group = int(group)});
      if (block <= 4096)
        add({.block = block, .prefetch = true, .numWarps = warps, .numStages = 1,
             .group = int(group)});
      // Registers capped for three CTAs per SM: the forward at 50257-128256 ran 1.6-2.7%
      // faster so on the H200 with 8192-column blocks (docs/notes/cross-entropy.md).
      if (warps == 8)
        add({.block = block,
             .numWarps = warps,
             .numStages = 1,
             .group = int(group),
             .minBlocksPerSM = 3});
    }
  // One program per row: the same one-row plans, balanced by the block scheduler.
  for (size_t i = 0, n = out.size(); i < n; ++i)
    if (out[i].rowsPerStep == 1) {
      CrossEntropyPlan p = out[i];
      p.persistent = false;
      add(p);
    }
  // The backward's long rows in runs of about 8 and 16 blocks, a program each: the last
  // programs of the launch are short, so no SM idles long behind them. Persistent grids gained
  // nothing so (docs/notes/cross-entropy.md, "Long rows in runs of blocks").
  for (size_t i = 0, n = out.size(); i < n; ++i) {
    const CrossEntropyPlan &q = out[i];
    if (q.persistent || q.rowsPerStep != 1 || q.prefetch || q.group != 1 || q.numWarps != 8)
      continue;
    int parts = crossEntropyRowParts(vocab, q.block);
    for (int runs : {parts, parts / 2})
      if (runs >= 2) {
        CrossEntropyPlan p = q;
        p.rowParts = runs;
        add(p);
      }
  }
  // The backward over packed rows read flat (the forward and other layouts drop these): chunks
  // of 2048-4096 over 4-8 warps, in runs of 8 or 16 chunks a program, behind rings of 3 or 6. On
  // the H200 runs of 1-4 chunks, rings of 1 and persistent grids were 4-45% slower; chunks of 8192
  // over 4 warps ran as fast as the best of these but compiled in 73-86 ms
  // (docs/notes/cross-entropy.md, "Packed rows read flat").
  struct Flat {
    int64_t block;
    int warps, stages, run;
  };
  for (Flat f : {Flat{4096, 8, 3, 8}, Flat{4096, 8, 3, 16}, Flat{4096, 8, 6, 8},
                 Flat{2048, 4, 6, 8}, Flat{2048, 8, 6, 8}})
    if (vocab >= f.block)
      add({.block = f.block,
           .numWarps = f.warps,
           .numStages = f.stages,
           .persistent = false,
           .flat = true,
           .flatRun = f.run});
  return out;
}

// How the rows lie, as far as the compiled kernels differ by it: on 16-byte boundaries (the
// stride a multiple of 16 elements, every base aligned), peeled to one (ALIGN > 1), or neither;
// and whether the vocabulary is a multiple of 16 (else the backward takes whole blocks and a
// tail). Launches that differ in these are tuned and remembered apart: a stride of 32008 bf16
// columns took the winner of 32000's aligned rows and ran its backward in 260 us, against 151
// with a winner of its own (docs/notes/cross-entropy.md, "Tuning buckets by how the rows lie").
// The backward also tells packed rows apart (no gap between rows, bases on 16-byte
// boundaries), which it may read flat.
struct RowsLayout {
  enum Kind : int64_t { Aligned, Peeled, Unaligned } kind;
  bool ragged;
  bool packed = false;
  int64_t code() const { return (int64_t(kind) * 2 + (ragged ? 1 : 0)) * 2 + (packed ? 1 : 0); }
  std::string tag() const {
    static const char *const names[] = {"", "-peeled", "-unaligned"};
    return names[kind] + std::string(ragged ? "-ragged" : "") + (packed ? "-packed" : "");
  }
};

// `basesAligned`: every tensor read or written in rows starts on a 16-byte boundary.
static RowsLayout rowsLayout(int64_t align, int64_t stride, int64_t vocab, bool basesAligned,
                             bool packed = false) {
  bool aligned = stride % 16 == 0 && basesAligned;
  return {align > 1 ? RowsLayout::Peeled
          : aligned ? RowsLayout::Aligned
                    : RowsLayout::Unaligned,
          vocab % 16 != 0, packed};
}

static std::string bucket(Dtype dtype, int64_t rows, int64_t vocab, const RowsLayout &layout) {
  auto up = [](int64_t v) {
    return std::to_string(std::bit_ceil(uint64_t(std::max<int64_t>(v, 1))));
  };
  return dtypeName(dtype) + "-vocab" + up(vocab) + "-rows" + up(std::min<int64_t>(rows, 1 << 16)) +
         layout.tag();
}

// Whether a flat plan's chunks fit the vocabulary (a chunk straddles at most two rows).
static bool flatFits(const CrossEntropyPlan &p, int64_t vocab) { return p.block <= vocab; }

static CrossEntropyPlan choose(const char *kernel, const CrossEntropyPlan *given, Dtype dtype,
                               int64_t rows, int64_t vocab, const RowsLayout &layout,
                               bool rerunSafe, CUstream stream,
                               const std::function<void(const CrossEntropyPlan &)> &launch) {
  const bool backward = std::string(kernel) == "cross_entropy_backward";
  // Runs pay where the backward takes no whole blocks and a tail, and the steps (rows x runs)
  // stay below 2^31.
  const bool runsPay = layout.kind != RowsLayout::Peeled && !layout.ragged;
  auto fits = [&](const CrossEntropyPlan &p) {
    return rows * p.rowParts <= std::numeric_limits<int32_t>::max();
  };
  return choosePlan<CrossEntropyPlan>(
      given, {kernel, {int64_t(dtype), rows, vocab, layout.code()}, rerunSafe},
      [&] { return bucket(dtype, rows, vocab, layout); }, stream,
      [&] {
        CrossEntropyPlan p = planCrossEntropy(vocab, dtype);
        // Packed rows read flat, 8 chunks a program, 32 bytes of logits a thread each chunk,
        // behind a ring of 6: 16-bit logits in chunks of 2048 over 4 warps, 0.935-0.985 of copy
        // at 32000-256000 columns (the row kernel 0.91-0.97); fp32 in chunks of 2048 over 8
        // warps, only where the vocabulary ends mid-vector (GPT-2's 50257: 0.947 against 0.925),
        // since elsewhere the row kernel is as fast. A ring of 3 was 3-7% slower, runs of 16 chunks
        // 2-4%; chunks of 8192 over 4 warps ran as fast but compiled in 73-86 ms
        // (docs/notes/cross-entropy.md, "Packed rows read flat").
        const bool wide = dtype == Dtype::fp32;
        CrossEntropyPlan flat{.block = 2048,
                              .numWarps = wide ? 8 : 4,
                              .numStages = 6,
                              .persistent = false,
                              .flat = true,
                              .flatRun = 8};
        if (backward && layout.packed && (layout.ragged || !wide) && flatFits(flat, vocab))
          return flat;
        if (backward && runsPay) {
          p.rowParts = crossEntropyRowParts(vocab, p.block);
          if (!fits(p))
            p.rowParts = 1;
          p.persistent = p.rowParts == 1;
        }
        return p;
      },
      [&] {
        std::vector<CrossEntropyPlan> candidates = crossEntropyCandidates(vocab, dtype);
        // The backward ignores prefetch and groups, the forward rowParts. Where the backward
        // takes whole blocks and a tail, every run pays a tail too (at 50257 columns 10-70%
        // slower): no runs there.
        std::erase_if(candidates, [&](const CrossEntropyPlan &p) {
          return backward
                     ? p.prefetch || p.group > 1 || (p.rowParts > 1 && !(runsPay && fits(p))) ||
                           (p.flat && !(layout.packed && flatFits(p, vocab)))
                     : p.rowParts > 1 || p.flat;
        });
        return candidates;
      },
      launch);
}

static void checkPlan(const Arguments &args, const CrossEntropyPlan &p) {
  args.planBlock(p.block);
  if (p.rowsPerStep < 1 || p.rowsPerStep > 16 || !std::has_single_bit(unsigned(p.rowsPerStep)))
    args.fail("the plan's rowsPerStep is " + std::to_string(p.rowsPerStep) +
              ", not a power of two from 1 to 16");
  if (p.group < 1 || p.group > 16 || !std::has_single_bit(unsigned(p.group)))
    args.fail("the plan's group is " + std::to_string(p.group) +
              ", not a power of two from 1 to 16");
  if (p.group > 1 && p.rowsPerStep > 1)
    args.fail("the plan shares a maximum among " + std::to_string(p.group) +
              " columns and takes " + std::to_string(p.rowsPerStep) +
              " rows per step: groups need one row per step");
  if (p.group > 1 && p.block % (int64_t(32) * p.numWarps * p.group) != 0)
    args.fail("the plan's block of " + std::to_string(p.block) + " is no multiple of " +
              std::to_string(32 * p.numWarps * p.group) + " (its " + std::to_string(p.numWarps) +
              " warps' lanes times the group of " + std::to_string(p.group) + ")");
  if (p.rowParts < 1 || p.rowParts > 1024)
    args.fail("the plan's rowParts is " + std::to_string(p.rowParts) + ", not from 1 to 1024");
  if (p.rowParts > 1 && p.rowsPerStep > 1)
    args.fail("the plan splits rows into " + std::to_string(p.rowParts) + " runs and takes " +
              std::to_string(p.rowsPerStep) + " rows per step: runs need one row per step");
  if (p.flatRun < 1 || p.flatRun > 1024)
    args.fail("the plan's flatRun is " + std::to_string(p.flatRun) + ", not from 1 to 1024");
  if (p.flat && p.rowsPerStep > 1)
    args.fail("the plan reads the rows flat and takes " + std::to_string(p.rowsPerStep) +
              " rows per step: flat plans take one (rowsPerStep 1)");
  if (p.flat && p.rowParts > 1)
    args.fail("the plan reads the rows flat and splits each row into " +
              std::to_string(p.rowParts) + " runs: flat plans split none (rowParts 1)");
  if ((p.rowsPerStep > 1 || p.prefetch) && p.numStages != 1)
    args.fail(std::string("the plan ") +
              (p.prefetch ? "loads the next block ahead"
                          : "takes " + std::to_string(p.rowsPerStep) + " rows per step") +
              " with " + std::to_string(p.numStages) +
              " stages: tiles of several rows and blocks loaded ahead use plain loads " +
              "(numStages 1)");
}

// The kernels' ALIGN: rows that may start anywhere peel their first columns up to a 16-byte
// boundary, when every tensor read or written in rows starts on one, so that the rest moves in
// 16-byte vectors; else 1. "Anywhere" as the compiler sees it: the specialization marks a stride
// divisible by 16 elements or by nothing, so a stride of 32008 bf16 columns (rows on 16-byte
// boundaries) peels too, with heads of 0, rather than leave every access at 2 bytes.
static int64_t peeledAlignment(Dtype dtype, int64_t stride, int64_t vocab, bool basesAligned) {
  int64_t vector = 16 / dtypeBytes(dtype);
  return stride % 16 != 0 && basesAligned && vocab >= 4 * vector ? vector : 1;
}

static void checkShape(Arguments &args, int64_t rows, int64_t vocab) {
  args.atLeast("rows", rows, 0);
  args.atLeast("vocab", vocab, 1);
  if (rows > std::numeric_limits<int32_t>::max() || vocab > std::numeric_limits<int32_t>::max())
    args.fail("rows and vocab must each be below 2^31");
}

void crossEntropyForward(Dtype dtype, const CrossEntropyForwardArgs &a, CUstream stream,
                         const CrossEntropyPlan *given) {
  Arguments args("crossEntropyForward");
  args.floatStorage("dtype", dtype);
  KernelArg loss = args.pointer("loss", a.loss), lse = args.pointer("lse", a.lse),
            x = args.pointer("logits", a.logits), t = args.pointer("targets", a.targets);
  checkShape(args, a.rows, a.vocab);
  int64_t stride = a.logitsStride ? a.logitsStride : a.vocab;
  args.rowStride("logitsStride", stride, a.vocab);
  args.fraction("labelSmoothing", a.labelSmoothing, true);
  if (given)
    checkPlan(args, *given);
  if (a.rows == 0)
    return;
  std::string idx = indexType(a.rows * stride);
  KernelArg s = idx == "i64" ? KernelArg(stride) : KernelArg(int32_t(stride));
  KernelArg r(int32_t(a.rows)), v(int32_t(a.vocab)), ignore(a.ignoreIndex),
      smooth(a.labelSmoothing);
  bool smoothing = a.labelSmoothing != 0.0f;
  bool basesAligned = on16ByteBoundaries({a.logits});
  int64_t align = peeledAlignment(dtype, stride, a.vocab, basesAligned);
  auto launch = [&](const CrossEntropyPlan &plan) {
    Specialization spec =
        Specialization{.signature = {"*fp32", "*fp32", "*" + dtypeName(dtype), "*i64", idx, "i32",
                                     "i32", "i64", "fp32"},
                       .constexprs = {plan.block, plan.rowsPerStep, plan.prefetch ? 1 : 0,
                                      plan.numStages, smoothing ? 1 : 0, plan.group,
                                      plan.rowsPerStep == 1 ? align : 1},
                       .numWarps = plan.numWarps,
                       .numStages = plan.numStages,
                       .minBlocksPerSM = plan.minBlocksPerSM,
                       .awaitPreviousKernel = true}
            .specializedFor({loss, lse, x, t, s, r, v, ignore, smooth});
    CompiledKernel &k = forwardKernel().compile(spec);
    int64_t steps = (a.rows + plan.rowsPerStep - 1) / plan.rowsPerStep;
    k.launch(plan.persistent ? k.persistentGrid(steps) : steps, stream,
             {loss, lse, x, t, s, r, v, ignore, smooth});
  };
  int64_t rowsBytes = ((a.rows - 1) * stride + a.vocab) * dtypeBytes(dtype);
  bool rerunSafe = !anyOverlap({{a.loss, a.rows * 4}, {a.lse, a.rows * 4}},
                               {{a.logits, rowsBytes}, {a.targets, a.rows * 8}});
  RowsLayout layout = rowsLayout(align, stride, a.vocab, basesAligned);
  launch(choose("cross_entropy_forward", given, dtype, a.rows, a.vocab, layout, rerunSafe, stream,
                launch));
  if (a.stats) {
    KernelArg stats = args.pointer("stats", a.stats);
    Specialization ms = Specialization{.signature = {"*fp32", "*fp32", "*i64", "i32", "i64"},
                                       .constexprs = {1024},
                                       .numWarps = 8,
                                       .awaitPreviousKernel = true}
                            .specializedFor({stats, loss, t, r, ignore});
    meanKernel().compile(ms).launch(1, stream, {stats, loss, t, r, ignore});
  }
}

void crossEntropyBackward(Dtype dtype, const CrossEntropyBackwardArgs &a, CUstream stream,
                          const CrossEntropyPlan *given) {
  Arguments args("crossEntropyBackward");
  args.floatStorage("dtype", dtype);
  KernelArg dx = args.pointer("dlogits", a.dlogits), x = args.pointer("logits", a.logits),
            t = args.pointer("targets", a.targets), lse = args.pointer("lse", a.lse),
            stats = args.optionalPointer(a.stats);
  checkShape(args, a.rows, a.vocab);
  int64_t xs = a.logitsStride ? a.logitsStride : a.vocab;
  int64_t ds = a.dlogitsStride ? a.dlogitsStride : a.vocab;
  args.rowStride("logitsStride", xs, a.vocab);
  args.rowStride("dlogitsStride", ds, a.vocab);
  args.fraction("labelSmoothing", a.labelSmoothing, true);
  if (given)
    checkPlan(args, *given);
  if (given && a.rows * given->rowParts > std::numeric_limits<int32_t>::max())
    args.fail("rows x the plan's rowParts (" + std::to_string(a.rows) + " x " +
              std::to_string(given->rowParts) + ") must stay below 2^31");
  if (a.dlogits == a.logits && xs != ds)
    args.fail("in place (dlogits == logits) needs dlogitsStride == logitsStride");
  bool basesAligned = on16ByteBoundaries({a.logits, a.dlogits});
  bool packed = xs == a.vocab && ds == a.vocab && basesAligned;
  if (given && given->flat && !packed)
    args.fail("the plan reads the rows flat, which needs packed rows (logitsStride and "
              "dlogitsStride equal to vocab, here " +
              std::to_string(xs) + " and " + std::to_string(ds) + " for " +
              std::to_string(a.vocab) + ") and logits and dlogits on 16-byte boundaries" +
              (basesAligned ? "" : " (they are not)"));
  if (given && given->flat && !flatFits(*given, a.vocab))
    args.fail("the plan reads the rows flat in chunks of " + std::to_string(given->block) +
              ", more than the vocabulary of " + std::to_string(a.vocab));
  if (a.rows == 0)
    return;
  std::string idx = indexType(a.rows * std::max(xs, ds));
  auto index = [&](int64_t v) { return idx == "i64" ? KernelArg(v) : KernelArg(int32_t(v)); };
  KernelArg sx = index(xs), sd = index(ds), r(int32_t(a.rows)), v(int32_t(a.vocab)),
            ignore(a.ignoreIndex), smooth(a.labelSmoothing), grad(a.gradLoss);
  std::string type = "*" + dtypeName(dtype);
  // One peel serves both tensors only when they share the stride.
  int64_t e = dtypeBytes(dtype);
  int64_t align = xs == ds ? peeledAlignment(dtype, xs, a.vocab, basesAligned) : 1;
  const int64_t total = a.rows * a.vocab;
  auto launchFlat = [&](const CrossEntropyPlan &plan) {
    // Offsets reach the last chunk's end: 64-bit once that passes 2^31 - 1.
    bool wide = total + plan.block > std::numeric_limits<int32_t>::max();
    KernelArg n = wide ? KernelArg(total) : KernelArg(int32_t(total));
    Specialization spec =
        Specialization{.signature = {type, type, "*i64", "*fp32", "*fp32", wide ? "i64" : "i32",
                                     "i32", "i32", "i64", "fp32", "fp32"},
                       .constexprs = {plan.block, plan.numStages, a.stats ? 1 : 0, wide ? 1 : 0,
                                      plan.persistent ? 0 : plan.flatRun},
                       .numWarps = plan.numWarps,
                       .numStages = plan.numStages,
                       .minBlocksPerSM = plan.minBlocksPerSM,
                       .awaitPreviousKernel = true}
            .specializedFor({dx, x, t, lse, stats, n, r, v, ignore, smooth, grad});
    CompiledKernel &k = flatBackwardKernel().compile(spec);
    int64_t chunks = (total + plan.block - 1) / plan.block;
    k.launch(plan.persistent ? k.persistentGrid(chunks)
                             : (chunks + plan.flatRun - 1) / plan.flatRun,
             stream, {dx, x, t, lse, stats, n, r, v, ignore, smooth, grad});
  };
  auto launch = [&](const CrossEntropyPlan &plan) {
    if (plan.flat) {
      launchFlat(plan);
      return;
    }
    int64_t rowAlign = plan.rowsPerStep == 1 ? align : 1;
    // One row per step takes whole blocks and a tail where a mask over every block could not
    // be vectorized: a peeled head, or a vocabulary that the specialization does not mark as a
    // multiple of 16 (it marks integers by 16 only, so 32008 bf16 columns count as ragged too).
    bool wholeBlocks = plan.rowsPerStep == 1 && (rowAlign > 1 || a.vocab % 16 != 0);
    Specialization spec =
        Specialization{.signature = {type, type, "*i64", "*fp32", "*fp32", idx, idx, "i32", "i32",
                                     "i64", "fp32", "fp32"},
                       .constexprs = {plan.block, plan.rowsPerStep, plan.numStages, rowAlign,
                                      a.stats ? 1 : 0, wholeBlocks ? 1 : 0, plan.rowParts},
                       .numWarps = plan.numWarps,
                       .numStages = plan.numStages,
                       .minBlocksPerSM = plan.minBlocksPerSM,
                       .awaitPreviousKernel = true}
            .specializedFor({dx, x, t, lse, stats, sx, sd, r, v, ignore, smooth, grad});
    CompiledKernel &k = backwardKernel().compile(spec);
    int64_t steps = (a.rows + plan.rowsPerStep - 1) / plan.rowsPerStep * plan.rowParts;
    k.launch(plan.persistent ? k.persistentGrid(steps) : steps, stream,
             {dx, x, t, lse, stats, sx, sd, r, v, ignore, smooth, grad});
  };
  bool rerunSafe = !anyOverlap({{a.dlogits, ((a.rows - 1) * ds + a.vocab) * e}},
                               {{a.logits, ((a.rows - 1) * xs + a.vocab) * e},
                                {a.targets, a.rows * 8},
                                {a.lse, a.rows * 4},
                                {a.stats, 8}});
  RowsLayout layout = rowsLayout(align, std::gcd(xs, ds), a.vocab, basesAligned, packed);
  launch(choose("cross_entropy_backward", given, dtype, a.rows, a.vocab, layout, rerunSafe, stream,
                launch));
}

} // namespace tritium::kernels
