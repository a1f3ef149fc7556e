// flip, sort and topk (Triton's tl.flip, tl.sort, tl.topk) as compositions of reshape, where,
// comparisons and xor reductions: bitonic networks in registers.
//
// Every step pairs the elements whose index along the dimension differs in one bit. Since
// every dimension of the block is a power of two, that bit is a bit of the element's row-major
// index in the whole block, so the block viewed as [A, 2, B] (B = the distance times the
// dimension's stride) has the two elements of each pair at [a, 0, b] and [a, 1, b], whatever
// the rank and the dimension. Each half comes out of the view as an xor reduction of the
// elements masked to it (exact for every bit pattern, frontend/BitCarrier.h), and a
// swap xors both elements with left ^ right, so the result is always a permutation of the
// input. Each step reshapes to the view and back; on the GPU those reshapes may go through
// shared memory.
#include "frontend/BitCarrier.h"
#include "frontend/DSL.h"
#include "frontend/Tracer.h"
#include "frontend/TypeRules.h"

#include <bit>

namespace tritium::dsl {

using ir::ScalarKind;
using ir::Type;

namespace {

// The block `x` of `what` and its dimension `dim` (negative counts from the end), checked: a
// block of numbers (masks too when `masks`), the dimension in range and a power of two long.
struct Along {
  Type type;
  int dim;
  int64_t n;      // the dimension's extent
  int64_t stride; // elements between neighbours along it
};

Along along(const Operand &x, int dim, const char *what, bool masks, const SourceLoc &loc) {
  if (x.kind != Operand::Kind::Value || !x.value || !x.value->type().isBlock())
    userError(std::string(what) + " takes a block, got " + describe(x), loc);
  Type t = x.value->type();
  bool fp8 = t.kind() == ScalarKind::F8E4M3 || t.kind() == ScalarKind::F8E5M2;
  if (t.isPtr() || (t.isBool() && !masks) || fp8)
    userError(std::string(what) + " of " + t.str() + ": " + what + " takes integers" +
                  (masks ? ", masks" : "") + " or fp32, fp16 and bf16 floats" +
                  (fp8 ? " (fp8 is a storage type: cast it first)" : ""),
              loc);
  int d = dim < 0 ? dim + t.rank() : dim;
  if (d < 0 || d >= t.rank())
    userError(std::string(what) + ": dimension " + std::to_string(dim) + " is out of range for " +
                  t.str() + " (0 to " + std::to_string(t.rank() - 1) + ", or negative from the end)",
              loc);
  int64_t n = t.shape()[size_t(d)];
  if (!std::has_single_bit(uint64_t(n)))
    userError(std::string(what) + " along dimension " + std::to_string(d) + " of " + t.str() +
                  ": its extent " + std::to_string(n) + " must be a power of two",
              loc);
  int64_t stride = 1;
  for (int e = d + 1; e < t.rank(); ++e)
    stride *= t.shape()[size_t(e)];
  return {t, d, n, stride};
}

// The pairs at distance `pairStride` (in elements of the flat block) of the block `w` of
// `total` elements: the view [A, 2, B], its halves [A, B] and the mask of the half at 1.
struct Pairs {
  Value view, left, right;
  int64_t a, b;
};

Pairs pairsOf(const Value &w, int64_t total, int64_t pairStride, Loc l) {
  Pairs p;
  p.b = pairStride;
  p.a = total / (2 * pairStride);
  p.view = reshape(w, {p.a, 2, p.b}, l);
  Value second = Operand(reshape(arange(0, 2, l), {1, 2, 1}, l), l) == 1;
  p.left = xor_sum(where(second, 0, p.view, l), 1, l);
  p.right = xor_sum(where(second, p.view, 0, l), 1, l);
  return p;
}

// One step of a bitonic network: the pairs at `pairStride` ordered, the smaller first where
// `descending` ([A, 1] mask, or a constant) is false, the larger first where it is true.
// Equal elements stay where they are; a NaN compares false both ways, so it is not moved
// by a pair in ascending order and is moved by one in descending order.
Value compareAndSwap(const Value &w, const BitCarrier &c, int64_t total, int64_t pairStride,
                     const Value *descending, bool allDescending, Loc l) {
  Pairs p = pairsOf(w, total, pairStride, l);
  Value lk = c.key(p.left), rk = c.key(p.right);
  Value swap = descending    ? where(*descending, Operand(lk, l) < rk, Operand(lk, l) > rk, l)
               : allDescending ? Operand(lk, l) < rk
                               : Operand(lk, l) > rk;
  Value diff = where(swap, Operand(p.left, l) ^ p.right, 0, l);
  return reshape(Operand(p.view, l) ^ expand_dims(diff, 1, l), {total}, l);
}

// Where the blocks of `size` elements along the dimension run in descending order, for the
// pairs at `pairStride` = distance x stride: in the view [A, 2, B] row a starts at the flat
// index a x 2 x pairStride, whose bit log2(size x stride) is bit log2(size / (2 x distance))
// of a. The first block ascends when `descending` is false, the second descends, and so on.
Value alternating(int64_t a, int64_t size, int64_t distance, bool descending, Loc l) {
  Value row = Operand(arange(0, a, l), l) / (size / (2 * distance));
  Value bit = Operand(Operand(row, l) % 2, l) == 1;
  if (descending)
    bit = !Operand(bit, l);
  return expand_dims(bit, 1, l);
}

// Bitonic merges of the blocks of `size` elements along the dimension (each a bitonic
// sequence), the flat block `w` of `total` elements: into alternating order (the first block
// ascending unless `descending`), or all in `descending` order when `whole`.
Value merge(Value w, const BitCarrier &c, int64_t total, int64_t stride, int64_t size,
            bool descending, bool whole, Loc l) {
  for (int64_t distance = size / 2; distance >= 1; distance /= 2) {
    if (whole) {
      w = compareAndSwap(w, c, total, distance * stride, nullptr, descending, l);
    } else {
      Value dir = alternating(total / (2 * distance * stride), size, distance, descending, l);
      w = compareAndSwap(w, c, total, distance * stride, &dir, false, l);
    }
  }
  return w;
}

// Sorts the blocks of `size` elements along the dimension: each of them in `descending`
// order when `whole`, else in alternating order (the first ascending unless `descending`).
Value bitonicSort(Value w, const BitCarrier &c, int64_t total, int64_t stride, int64_t size,
                  bool descending, bool whole, Loc l) {
  for (int64_t s = 2; s <= size; s *= 2)
    w = merge(w, c, total, stride, s, descending, whole && s == size, l);
  return w;
}

} // namespace

Value flip(const Operand &x, int dim, Loc l) {
  SourceLoc loc(l);
  Along a = along(x, dim, "flip", true, loc);
  BitCarrier c{a.type.kind(), l};
  int64_t total = a.type.numElements();
  // The index i becomes n - 1 - i = i ^ (n - 1): every bit of it flipped, one swap per bit.
  Value w = reshape(c.in(Value(x.value)), {total}, l);
  for (int64_t distance = 1; distance < a.n; distance *= 2) {
    Pairs p = pairsOf(w, total, distance * a.stride, l);
    w = reshape(Operand(p.view, l) ^ expand_dims(Operand(p.left, l) ^ p.right, 1, l), {total}, l);
  }
  return reshape(c.out(w), a.type.shape(), l);
}

Value sort(const Operand &x, int dim, bool descending, Loc l) {
  SourceLoc loc(l);
  Along a = along(x, dim, "sort", false, loc);
  BitCarrier c{a.type.kind(), l};
  int64_t total = a.type.numElements();
  Value w = reshape(c.in(Value(x.value)), {total}, l);
  w = bitonicSort(w, c, total, a.stride, a.n, descending, true, l);
  return reshape(c.out(w), a.type.shape(), l);
}

Value topk(const Operand &x, int64_t k, int dim, Loc l) {
  SourceLoc loc(l);
  Along a = along(x, dim, "topk", false, loc);
  if (k < 1 || k > a.n || !std::has_single_bit(uint64_t(k)))
    userError("topk(" + std::to_string(k) + ") of " + a.type.str() + " along dimension " +
                  std::to_string(a.dim) + ": k must be a power of two from 1 to " +
                  std::to_string(a.n),
              loc);
  BitCarrier c{a.type.kind(), l};
  int64_t total = a.type.numElements();
  Value w = reshape(c.in(Value(x.value)), {total}, l);
  if (k == a.n) {
    w = bitonicSort(w, c, total, a.stride, a.n, true, true, l);
    return reshape(c.out(w), a.type.shape(), l);
  }
  // Runs of k sorted in alternating order; then, while there are more than k along the
  // dimension, each ascending run and the descending one after it give way to their
  // elementwise larger elements: a bitonic run holding the k largest of the two, merged in
  // alternating order again (in descending order at the end). The dimension halves each time.
  w = bitonicSort(w, c, total, a.stride, k, false, false, l);
  for (int64_t n = a.n; n > k; n /= 2) {
    Pairs p = pairsOf(w, total, k * a.stride, l);
    Value keepRight = Operand(c.key(p.right), l) > c.key(p.left);
    total /= 2;
    w = reshape(where(keepRight, p.right, p.left, l), {total}, l);
    w = merge(w, c, total, a.stride, k, n / 2 == k, n / 2 == k, l);
  }
  std::vector<int64_t> shape = a.type.shape();
  shape[size_t(a.dim)] = k;
  return reshape(c.out(w), shape, l);
}

} // namespace tritium::dsl
