// gather and histogram (Triton's tl.gather, tl.histogram) as one-hot compositions: every index
// (every value) is compared with every position (every bin) in a block one dimension larger,
// and the matches are reduced. Each element moves between threads only through the reduction,
// so neither needs shared memory of its own, at the price of work and registers that grow as
// the product of the two sizes: they are for small blocks.
#include "frontend/BitCarrier.h"
#include "frontend/DSL.h"
#include "frontend/Tracer.h"
#include "frontend/TypeRules.h"

#include <algorithm>
#include <bit>

namespace tritium::dsl {

using ir::ScalarKind;
using ir::Type;

namespace {

int64_t threadsOf(const SourceLoc &loc) {
  return 32 * Tracer::current(loc).function().intAttr("num_warps").value_or(4);
}

void requirePowersOfTwo(const Type &t, const char *what, const SourceLoc &loc) {
  for (int64_t e : t.shape())
    if (!std::has_single_bit(uint64_t(e)))
      userError(std::string(what) + " of " + t.str() +
                    ": the dimensions of its blocks must be powers of two",
                loc);
}

} // namespace

Value gather(const Operand &x, const Operand &index, int axis, Loc l) {
  SourceLoc loc(l);
  for (const Operand *v : {&x, &index})
    if (v->kind != Operand::Kind::Value || !v->value || !v->value->type().isBlock())
      userError("gather takes a block and a block of indices, got " + describe(x) + " and " +
                    describe(index),
                loc);
  Type t = x.value->type(), it = index.value->type();
  bool fp8 = t.kind() == ScalarKind::F8E4M3 || t.kind() == ScalarKind::F8E5M2;
  if (t.isPtr() || t.isBool() || fp8)
    userError("gather of " + t.str() + ": gather takes integers or fp32, fp16 and bf16 floats" +
                  (fp8 ? std::string(" (fp8 is a storage type: cast it first)") : ""),
              loc);
  if (!it.isInt())
    userError("gather's index must be integers, got " + it.str(), loc);
  if (t.rank() > 2)
    userError("gather of " + t.str() + ": gather takes blocks of rank 1 or 2 (it compares in a "
              "block one rank larger)",
              loc);
  if (it.rank() != t.rank())
    userError("gather of " + t.str() + " by " + it.str() +
                  ": the index must have the rank of the block",
              loc);
  int a = axis < 0 ? axis + t.rank() : axis;
  if (a < 0 || a >= t.rank())
    userError("gather: axis " + std::to_string(axis) + " is out of range for " + t.str() +
                  " (0 to " + std::to_string(t.rank() - 1) + ")",
              loc);
  if (t.rank() == 2 && it.shape()[size_t(1 - a)] != t.shape()[size_t(1 - a)])
    userError("gather of " + t.str() + " by " + it.str() + " along axis " + std::to_string(a) +
                  ": the index's dimension " + std::to_string(1 - a) + " must be the block's (" +
                  std::to_string(t.shape()[size_t(1 - a)]) + ")",
              loc);
  requirePowersOfTwo(t, "gather", loc);
  requirePowersOfTwo(it, "gather", loc);
  int64_t n = t.shape()[size_t(a)], compared = it.numElements() * n, threads = threadsOf(loc);
  if (compared > 256 * threads)
    userError("gather of " + t.str() + " by " + it.str() + " compares each of the " +
                  std::to_string(it.numElements()) + " indices with the " + std::to_string(n) +
                  " positions along axis " + std::to_string(a) + ": " +
                  std::to_string(compared / threads) + " elements per thread with num_warps=" +
                  std::to_string(threads / 32) + " (at most 256); gather smaller blocks",
              loc);
  BitCarrier c{t.kind(), l};
  Value v = c.in(Value(x.value));
  Value idx(index.value), pos = arange(0, n, l), picked;
  if (t.rank() == 1) {
    Value hit = Operand(idx(_, None, l), l) == pos(None, _, l); // [m, n]
    picked = xor_sum(where(hit, v(None, _, l), 0, l), 1, l);
  } else if (a == 1) { // [M, K, N]: x[i, index[i, k]]
    Value hit = Operand(expand_dims(idx, 2, l), l) == reshape(pos, {1, 1, n}, l);
    picked = xor_sum(where(hit, expand_dims(v, 1, l), 0, l), 2, l);
  } else { // [K, M, N]: x[index[k, j], j]
    Value hit = Operand(expand_dims(idx, 1, l), l) == reshape(pos, {1, n, 1}, l);
    picked = xor_sum(where(hit, expand_dims(v, 0, l), 0, l), 1, l);
  }
  return c.out(picked);
}

static Value histogramOf(const Operand &x, int64_t num_bins, const Operand *mask, Loc l) {
  SourceLoc loc(l);
  if (x.kind != Operand::Kind::Value || !x.value || !x.value->type().isBlock())
    userError("histogram takes a 1-D block of integers, got " + describe(x), loc);
  const Type &t = x.value->type();
  if (!t.isInt() || t.rank() != 1)
    userError("histogram takes a 1-D block of integers, got " + t.str(), loc);
  int64_t n = t.shape()[0];
  if (!std::has_single_bit(uint64_t(n)))
    userError("histogram of " + t.str() + ": its size must be a power of two", loc);
  if (num_bins < 1 || !std::has_single_bit(uint64_t(num_bins)))
    userError("histogram: num_bins must be a power of two, got " + std::to_string(num_bins), loc);
  Value keep;
  if (mask) {
    if (mask->kind != Operand::Kind::Value || !mask->value || !mask->value->type().isBool())
      userError("histogram's mask must be a mask (i1), got " + describe(*mask), loc);
    broadcastShapes(mask->value->type().shape(), t.shape(), "histogram's mask", loc);
    keep = broadcast_to(Value(mask->value), {n}, l);
  }
  // Bins in chunks of `chunk`, so that a chunk's comparisons take about 32 registers a thread
  // (at least one bin at a time).
  int64_t budget = 32 * threadsOf(loc);
  int64_t chunk = std::min(num_bins, std::max<int64_t>(1, int64_t(std::bit_floor(
                                                              uint64_t(std::max<int64_t>(1, budget / n))))));
  Value xs = Value(x.value)(None, _, l);
  auto counts = [&](int64_t first) { // bins first .. first + chunk - 1, as block<chunk x i32>
    Value bins = Operand(arange(0, chunk, l), l) + first;
    Value hit = Operand(bins(_, None, l), l) == xs;
    if (mask)
      hit = Operand(hit, l) & keep(None, _, l);
    return sum(cast(hit, int32, l), 1, l);
  };
  if (chunk == num_bins)
    return counts(0);
  int64_t groups = num_bins / chunk;
  Value rows = arange(0, groups, l)(_, None, l);
  Value out = zeros({groups, chunk}, int32, l);
  for (int64_t g = 0; g < groups; ++g)
    out = where(Operand(rows, l) == g, counts(g * chunk)(None, _, l), out, l);
  return reshape(out, {num_bins}, l);
}

Value histogram(const Operand &x, int64_t num_bins, Loc l) {
  return histogramOf(x, num_bins, nullptr, l);
}
Value histogram(const Operand &x, int64_t num_bins, const Operand &mask, Loc l) {
  return histogramOf(x, num_bins, &mask, l);
}

} // namespace tritium::dsl
