// Random well-typed kernels, generated at trace time from a seed (a compile-time parameter), so
// that each seed is its own specialization: elementwise chains on blocks of rank 1 to 3,
// broadcasts across ranks, reductions and scans (forward and reversed) on random axes,
// reductions brought back by expand_dims, masks and where, casts through fp16, fp8 and integers,
// integer bit operations, transposes, dots (alone, or accumulated in a loop that resets them),
// flips and sorts, cumulative products and custom
// scans, gathers, histograms, interleaves, ravels and swizzle2d, bitcasts, assumes and topk,
// range loops with carried blocks (of one rank or two), if_ on runtime scalars and atomics;
// some 2-D programs store through a tensor descriptor. The same program runs in the
// interpreter and on the GPU (tests/gpu/RandomProgramGpuTest.cpp, tools/random_programs.cpp)
// and their outputs are compared; any failure prints its seed.
#pragma once

#include "frontend/Tritium.h"
#include "interpreter/Interpreter.h"
#include "runtime/Memory.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace tritium::testing::random {

using namespace tritium::dsl;

// The shape and warps a seed's program uses (decided before tracing, so the launch knows them).
struct ProgramShape {
  std::vector<int64_t> shape;
  int numWarps;
  int64_t elements() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

inline ProgramShape shapeFor(uint32_t seed) {
  std::mt19937 rng(seed);
  int rank = 1 + int(rng() % 3);
  ProgramShape s;
  int64_t budget = 2048;
  for (int d = 0; d < rank; ++d) {
    int64_t dim = int64_t(1) << (1 + rng() % 6); // 2 .. 64
    while (dim > 1 && dim * 2 > budget)
      dim /= 2;
    s.shape.push_back(dim);
    budget /= dim;
  }
  s.numWarps = 1 << (rng() % 4);
  return s;
}

// Buffers: out (floats, one per element), count (one i32 for atomics), x and y (inputs, one
// float per element); n masks the tail; SEED picks the program.
inline void randomProgram(Ptr out, Ptr count, Ptr x, Ptr y, Int n, Int flag, uint32_t SEED) {
  ProgramShape s = shapeFor(SEED);
  std::mt19937 rng(SEED * 2654435761u + 1);
  auto pick = [&](int k) { return int(rng() % uint32_t(k)); };
  int rank = int(s.shape.size());
  // Row-major offsets of the block.
  Value offs = n * 0;
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    Value idx = arange(0, s.shape[size_t(d)]);
    for (int e = 0; e < rank; ++e)
      if (e < d)
        idx = expand_dims(idx, 0);
      else if (e > d)
        idx = expand_dims(idx, e);
    offs = offs + idx * int64_t(stride);
    stride *= s.shape[size_t(d)];
  }
  Value mask = offs < n;
  std::vector<Value> pool{load(x + offs, mask, 0.5), load(y + offs, mask, -0.25)};
  std::vector<Value> ints{offs, offs * 7 + 3};
  auto any = [&](std::vector<Value> &p) { return p[size_t(pick(int(p.size())))]; };
  int steps = 4 + pick(10);
  for (int step = 0; step < steps; ++step) {
    Value a = any(pool), b = any(pool), r;
    int axis = pick(rank);
    // Per thread: the elements a thread holds (at least one), for the ops that compare every
    // element with every position (gather, histogram: at most 256 compares a thread).
    int64_t perThread = std::max<int64_t>(1, s.elements() / (32 * s.numWarps));
    switch (pick(20)) {
    case 0: r = a + b; break;
    case 1: r = a * b - 0.5; break;
    case 2: r = maximum(a, b); break;
    // Conditions and floor look at the inputs only: a comparison of two computed values that
    // tie up to rounding could go either way on the GPU and in the interpreter.
    case 3: r = where(pool[0] > pool[1], a, b * 0.5); break;
    case 4: // round trips through narrower floats: fp16, either fp8, one fp8 through the other
      switch (pick(4)) {
      case 0: r = cast(cast(a, float16), float32); break;
      case 1: r = cast(cast(a, float8e4m3), float32); break;
      case 2: r = cast(cast(a, float8e5m2), float32); break;
      default: r = cast(cast(cast(a, float8e4m3), float8e5m2), float32); break;
      }
      break;
    case 5: r = expand_dims(sum(a, axis), axis) + b; break;
    case 6: r = expand_dims(max(a, axis), axis) - b; break;
    case 7: r = cumsum(a, axis, /*reverse=*/pick(2) == 1) * 0.125; break;
    case 8: r = abs(a) + floor(pool[1] * 4.0); break;
    case 9: r = sqrt_rn(abs(a) + 1.0); break;
    case 10: {
      Value i = any(ints), j = any(ints);
      Value k = (i ^ (j << 3)) + (i >> 2) - (j & 255);
      ints.push_back(k);
      r = cast(k % 1000, float32) * 0.001 + a;
      break;
    }
    case 11: {
      if (rank == 2 && s.shape[0] == s.shape[1] && s.shape[0] >= 16 && pick(2)) {
        // a product on the tensor cores, of bf16 operands (rounded alike on both sides)
        Value x = cast(a, bfloat16), y = cast(b, bfloat16);
        double scale = 1.0 / double(s.shape[0]);
        if (pick(2)) {
          r = dot(x, y) * scale + b;
        } else {
          // Products accumulated over two steps and written out, the accumulator reset to
          // zeros: the dot's accumulate flag (FoldAccumulatorResets.cpp).
          Value acc = zeros(s.shape, float32), total = b * 1.0;
          for (auto i : range(0, 4)) {
            acc = dot(x, y, acc);
            if_(i % 2 == 1, [&] {
              total = total + acc * scale;
              acc = zeros(s.shape, float32);
            });
          }
          r = total;
        }
      } else if (rank == 2 && s.shape[0] == s.shape[1]) {
        r = trans(a) + b;
      } else {
        r = a - b;
      }
      break;
    }
    case 12: { // a loop carrying a block
      // (A variable starting as a copy of another that the body also reads would be ambiguous
      // to the tracer: it starts from a value of its own.)
      if (rank == 2 && pick(2)) {
        // A row factor carried ahead of the block: a loop's results of two ranks, the lower
        // first (the axis analysis once gave the block the factor's facts).
        // (The tracer carries variables newest first: the factor is made after the block.)
        Value acc = a * 1.0;
        Value factor = max(a, 1) * 0.0 + 1.0;
        for (auto i : range(0, 3)) {
          factor = factor * 0.5 + cast(i, float32);
          acc = acc * factor(_, None) + b;
        }
        r = acc + factor(_, None);
        break;
      }
      Value acc = a * 1.0;
      for (auto i : range(0, 3)) {
        acc = acc * 0.5 + b + cast(i, float32);
      }
      r = acc;
      break;
    }
    case 13: { // a branch on a runtime scalar
      r = b;
      if_(flag > 0, [&] { r = a + 1.0; }, [&] { r = a - 1.0; });
      break;
    }
    // A flip or a sort along a random axis (all dimensions are powers of two). Sorted values
    // are continuous in the inputs, so values computed a rounding apart on the GPU and in the
    // interpreter still sort to values a rounding apart. Each step of a network stages the
    // block in shared memory of its own (twice): only networks within 64 KiB.
    case 14: {
      int bits = std::countr_zero(uint64_t(s.shape[size_t(axis)]));
      int64_t perStep = 2 * 4 * s.elements(), budget = int64_t(64) << 10;
      bool wantFlip = pick(2) == 1, descending = pick(2) == 1;
      if (wantFlip && bits * perStep <= budget)
        r = flip(a, axis);
      else if (bits * (bits + 1) / 2 * perStep <= budget)
        r = sort(a, axis, descending);
      else
        r = a - b;
      break;
    }
    // Products and custom combines along a random axis: factors in [0.875, 1.125] keep 64 of
    // them within 2^±9; the maximum is exact.
    case 15:
      if (pick(2))
        r = cumprod(0.875 + 0.25 * sigmoid(a), axis, /*reverse=*/pick(2) == 1);
      else
        r = associative_scan(
            a, axis, [](Value x, Value y) { return maximum(x, y); }, /*reverse=*/pick(2) == 1);
      break;
    // A gather along a random axis of rank 1 or 2 blocks, from indices the offsets make (a
    // permutation-like spread of in-range positions).
    case 16: {
      int64_t extent = s.shape[size_t(axis)];
      if (rank <= 2 && perThread * extent <= 256)
        r = gather(a, (offs * 5 + 1) % extent, axis) - b;
      else
        r = a * 0.5 + b;
      break;
    }
    // A histogram of the elements' bins over the active elements, each element reading its
    // own bin's count back (1-D blocks).
    case 17: {
      int64_t bins = std::min<int64_t>(16, s.shape[0]);
      if (rank == 1 && perThread * bins <= 256) {
        Value bin = (offs * 3 + 1) % bins;
        r = a + cast(gather(histogram(bin, bins, mask), bin, 0), float32) * 0.25;
      } else {
        r = a - b * 0.5;
      }
      break;
    }
    // Interleave a with b along the last dimension, fold the doubled dimension into two
    // halves and add them (each element meets a neighbour's), ravel and reshape back; and a
    // grouped tile order (swizzle2d) of the flat offsets as an exact integer term. (Blocks
    // have at most 3 dimensions: rank 3 skips the interleave.)
    case 18: {
      Value folded = a + b;
      if (rank <= 2) {
        std::vector<int64_t> halves = s.shape;
        halves.insert(halves.end() - 1, 2);
        folded = sum(reshape(interleave(a, b), halves), rank - 1);
      }
      int64_t cols = std::max<int64_t>(1, s.elements() / 4);
      auto [pi, pj] = swizzle2d(offs / cols, offs % cols, 4, cols, 2);
      r = reshape(ravel(folded), s.shape) + cast(pi * cols + pj, float32) * 0.001;
      break;
    }
    // A float's bits as an integer, the sign bit cleared (|a|, exactly) and back; an assume
    // the offsets keep; and the two largest of each line along a random axis (topk), summed
    // and spread back (a continuous function of the inputs, as sort's values are), where the
    // network fits the budget of case 14.
    case 19: {
      assume(offs >= 0);
      r = bitcast(bitcast(a, int32) & 0x7fffffff, float32) - b;
      int64_t extent = s.shape[size_t(axis)];
      int bits = std::countr_zero(uint64_t(extent));
      int64_t perStep = 2 * 4 * s.elements(), budget = int64_t(64) << 10;
      if (extent >= 2 && bits * (bits + 1) / 2 * perStep <= budget)
        r = r + expand_dims(sum(topk(a, 2, axis), axis), axis) * 0.25;
      break;
    }
    }
    pool.push_back(r);
  }
  // A third of the 2-D programs whose rows hold 16 bytes or more store the whole block through
  // a tensor descriptor instead (a TMA store on Hopper, from whatever layout the value has),
  // chosen apart from the program's own draws so that the other seeds' programs stay as they
  // were.
  if (rank == 2 && s.shape[1] >= 4 && (SEED * 2246822519u >> 28) % 3 == 0)
    make_tensor_descriptor(out, {s.shape[0], s.shape[1]}, {s.shape[1], 1}, s.shape)
        .store({0, 0}, pool.back());
  else
    store(out + offs, pool.back(), mask);
  // Every program adds its active element count: exact in any order.
  atomic_add(count, sum(reshape(cast(mask, int32), {s.elements()}), 0));
}

struct Outcome {
  std::vector<float> out;
  int32_t count = 0;
};

// One kernel object per thread: a kernel compiles one specialization at a time, so threads
// compiling seeds side by side each have their own (they share the disk cache).
inline tritium::detail::FunctionKernel<Ptr, Ptr, Ptr, Ptr, Int, Int, uint32_t> &randomKernel() {
  thread_local auto k = kernel("random_program", randomProgram,
                               {"out", "count", "x", "y", "n", "flag", "SEED"});
  return k;
}

inline CompiledKernel &compileSeed(uint32_t seed) {
  ProgramShape s = shapeFor(seed);
  return randomKernel().compile({.signature = {"*fp32:16", "*i32", "*fp32", "*fp32", "i32", "i32"},
                                 .constexprs = {int64_t(seed)},
                                 .numWarps = s.numWarps});
}

// Inputs from the seed: values in [-2, 2], n short of the block by up to a quarter.
inline void inputsFor(uint32_t seed, std::vector<float> &x, std::vector<float> &y, int32_t &n,
                      int32_t &flag) {
  ProgramShape s = shapeFor(seed);
  std::mt19937 rng(seed ^ 0x5bd1e995u);
  std::uniform_real_distribution<float> dist(-2.f, 2.f);
  x.resize(size_t(s.elements()));
  y.resize(size_t(s.elements()));
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = dist(rng), y[i] = dist(rng);
  n = int32_t(s.elements() - int64_t(rng() % uint32_t(s.elements() / 4 + 1)));
  flag = int32_t(rng() % 2);
}

// Runs a seed's program (interpreting or on the GPU, as `Buffer` says) with `grid` programs.
template <typename Buffer> Outcome runSeed(uint32_t seed, CUstream stream, int grid = 2) {
  CompiledKernel &k = compileSeed(seed);
  std::vector<float> x, y;
  int32_t n, flag;
  inputsFor(seed, x, y, n, flag);
  Buffer dx(x.size() * 4), dy(y.size() * 4), out(x.size() * 4), count(4);
  dx.upload(x.data(), x.size() * 4);
  dy.upload(y.data(), y.size() * 4);
  out.fill32(0x7fc00001u);
  count.fill32(0);
  k.launch(grid, stream, {out, count, dx, dy, n, flag});
  Outcome o;
  o.out.resize(x.size());
  out.download(o.out.data(), x.size() * 4);
  count.download(&o.count, 4);
  return o;
}

// "" when the GPU's outcome matches the interpreter's within tolerance, else what differs.
inline std::string compareOutcomes(const Outcome &gpu, const Outcome &ref) {
  if (gpu.count != ref.count)
    return "atomic count " + std::to_string(gpu.count) + " vs " + std::to_string(ref.count);
  for (size_t i = 0; i < ref.out.size(); ++i) {
    float g = gpu.out[i], r = ref.out[i];
    // Sums in another order and fp16 roundings of values that differ in their last bit.
    if (std::isnan(r) ? !std::isnan(g) : !(std::fabs(g - r) <= 5e-3f * std::max(1.0f, std::fabs(r))))
      return "element " + std::to_string(i) + ": " + std::to_string(g) + " vs " + std::to_string(r);
  }
  return "";
}

} // namespace tritium::testing::random
