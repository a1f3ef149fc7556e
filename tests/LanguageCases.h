// Kernels of Triton's language beyond blocks and their references, shared by the GPU tests
// (tests/gpu/BlocksGpuTest.cpp) and their interpreter twins (tests/unit/BlocksInterpreterTest.cpp):
// cache hints on loads and stores (which must change no result, pipelined loops included),
// join and split, cat, flip, sort, topk, gather and histogram, offsets past 2^31 (u32 offsets,
// p - n with an unsigned n, 64-bit literals, range loops with u32 bounds), and programmatic dependent launch (griddep_wait after a producer
// that lets it launch early). `Buffer` is rt::DeviceBuffer or interpreter::HostBuffer.
#pragma once

#include "BlockCases.h"
#include "KernelLibraryCases.h"
#include "kernels/HostDtype.h"

namespace tritium::testing::language {

using namespace tritium::dsl;
using blocks::download;
using blocks::expectClose;
using blocks::kUntouched;
using blocks::poisoned;
using blocks::randomFloats;
using blocks::upload;

// --- kernels ------------------------------------------------------------------------------------

// Every cache operator and eviction priority on loads and stores of one block per program:
// out[0, n) = a + 2b, out[n, 2n) = c * d, out[2n, 3n) = e - f, out[3n, 4n) = a, where a .. f
// are all x, loaded with different hints.
inline void cacheHintsKernel(Ptr out, Ptr x, Int n, int BLOCK) {
  auto offs = program_id(0) * BLOCK + arange(0, BLOCK);
  auto m = offs < n;
  auto p = x + offs;
  auto a = load(p, m, 0.0, {.cache = Cache::cg, .evict = Evict::first});
  auto b = load(p, m, 0.0, {.cache = Cache::cs});
  auto c = load(p, m, 0.0, {.evict = Evict::last});
  auto d = load(p, m, 0.0, {.cache = Cache::cv});
  auto e = load(p, m, 0.0, {.cache = Cache::lu, .evict = Evict::last});
  auto f = load(p, m, 0.0, {.cache = Cache::ca});
  store(out + offs, a + 2.0 * b, m, {.cache = Cache::wt});
  store(out + n + offs, c * d, m, {.cache = Cache::cs, .evict = Evict::last});
  store(out + 2 * n + offs, e - f, m, {.evict = Evict::first});
  store(out + 3 * n + offs, a, m, {.cache = Cache::wb});
}

// Row sums through a pipelined loop (num_stages = 3) whose loads carry hints: cp.async.ca (or a
// bulk copy) with an L2 policy, and a streaming load that stays out of the ring. out[row] = sum(x[row]) +
// sum(y[row]) * 2; the store at the end is unmasked and hinted.
inline void hintedRowSums(Ptr out, Ptr x, Ptr y, Int nCols, Int stride, int BLOCK) {
  auto row = program_id(0);
  auto cols = arange(0, BLOCK);
  auto acc = zeros({BLOCK}, float32);
  for (auto start : range(0, nCols, BLOCK, 3)) {
    auto m = start + cols < nCols;
    acc = acc + load(x + row * stride + start + cols, m, 0.0,
                     {.cache = Cache::ca, .evict = Evict::last});
    acc = acc + 2.0 * load(y + row * stride + start + cols, m, 0.0, {.cache = Cache::cs});
  }
  store(out + row, sum(acc, 0), {.evict = Evict::first});
}

// A kernel the CUDA 13.0 driver's ptxas compiled to an illegal instruction while tritium gave
// cp.async an L2 cache policy: column sums of fp32 partial rows through a ring nested in a loop
// over strips, then 2-row bf16 tiles read evict-first through another ring, with per-row values
// loaded a tile ahead (the shape of a norm backward). sums[c] = the sum over parts of
// partial[p, c]; out[r, c] = (x[r, c] - a[r]) b[r] w[c] dy[r, c], both bf16.
inline void sumsThenHintedTiles(Ptr out, Ptr sums, Ptr partial, Ptr x, Ptr dy, Ptr w, Ptr a, Ptr b,
                                Int nRows, Int nCols, Int parts, int BLOCK, int P, int C) {
  auto part = arange(0, P), offs = arange(0, C);
  for (auto s : range(program_id(0), cdiv(nCols, C), num_programs(0))) {
    auto c = s * C + offs;
    auto acc = zeros({P, C}, float32);
    for (auto p0 : range(0, parts, P)) {
      auto mask = (p0 + part < parts)(_, None) & (c < nCols)(None, _);
      acc = acc + load(partial + (p0 + part)(_, None) * nCols + c(None, _), mask, 0.0);
    }
    store(sums + c, cast(sum(acc, 0), bfloat16), c < nCols);
  }
  auto rr = arange(0, 2), cc = arange(0, BLOCK);
  auto cmask = cc < nCols;
  auto wv = cast(load(w + cc(None, _), cmask(None, _), 0.0), float32);
  auto ahead = [&](const Value &tile, const Value &ptr) {
    auto row = tile * 2 + rr;
    return load(ptr + row, row < nRows, 0.0);
  };
  auto aNext = ahead(program_id(0), a), bNext = ahead(program_id(0), b);
  for (auto t : range(program_id(0), cdiv(nRows, 2), num_programs(0))) {
    auto row = t * 2 + rr;
    auto mask = (row < nRows)(_, None) & cmask(None, _);
    auto aHere = aNext, bHere = bNext;
    aNext = ahead(t + num_programs(0), a);
    bNext = ahead(t + num_programs(0), b);
    auto at = row(_, None) * nCols + cc(None, _);
    auto xv = cast(load(x + at, mask, 0.0, {.evict = Evict::first}), float32);
    auto g = cast(load(dy + at, mask, 0.0, {.evict = Evict::first}), float32);
    store(out + at, cast((xv - aHere(_, None)) * bHere(_, None) * wv * g, bfloat16), mask);
  }
}

// Loads that do not depend on a pipelined loop's induction variable are copied once into
// shared memory before the loop and read from there in every iteration (gpu/PipelineLoads.cpp):
// out[r, c] = x[r, c] w[c] + b[c] for c < n, and out[rows stride + r] = the sum of w over the
// block, whose lanes past n read `other` (1.5). A nested loop that never runs (extra = 0) loads
// through `ghost`, a null pointer on the GPU: its copy must not be issued.
inline void residentLoads(Ptr out, Ptr x, Ptr w, Ptr b, Ptr ghost, Int rows, Int n, Int stride,
                          Int extra, int BLOCK) {
  auto cols = arange(0, BLOCK);
  auto m = cols < n;
  for (auto row : range(program_id(0), rows, num_programs(0), 3)) {
    auto xv = load(x + row * stride + cols, m, 0.0);
    auto wv = load(w + cols, m, 1.5);
    auto bv = load(b + cols, m, 0.0);
    auto more = zeros({BLOCK}, float32);
    for (auto i : range(0, extra, BLOCK, 2))
      more = more + load(ghost + cols) * load(x + row * stride + i + cols, i + cols < extra, 0.0);
    store(out + row * stride + cols, xv * wv + bv + more, m);
    store(out + rows * stride + row, sum(wv, 0));
  }
}

// join and split: out[2i + j] = (a, b)[j][i] through a [BLOCK, 2] join; the halves of a join
// (squared) subtracted; an interleaved [BLOCK, 2] load split into its even and odd elements;
// the same pairs loaded transposed (their two elements in different threads) and split; and a
// 2-D join summed along its new axis (a block of rank 3).
inline void joinSplitKernel(Ptr out, Ptr a, Ptr b, int BLOCK, int BM, int BN) {
  auto i = arange(0, BLOCK);
  auto two = arange(0, 2);
  auto va = load(a + i), vb = load(b + i);
  auto joined = join(va, vb);                                     // [BLOCK, 2]
  store(out + i(_, None) * 2 + two(None, _), joined);             // out[0, 2 BLOCK)
  auto [sa, sb] = split(joined * joined);
  store(out + 2 * BLOCK + i, sa - sb);                            // a^2 - b^2
  auto pairs = load(a + i(_, None) * 2 + two(None, _));           // a's elements in pairs
  auto [even, odd] = split(pairs);
  store(out + 3 * BLOCK + i, even * 10.0 + odd);
  auto columns = load(a + i(_, None) + two(None, _) * BLOCK);     // [BLOCK, 2], a[i], a[BLOCK + i]
  auto [first, second] = split(columns);
  store(out + 4 * BLOCK + i, first - second * 3.0);
  auto r = arange(0, BM), c = arange(0, BN);
  auto tile = load(a + r(_, None) * BN + c(None, _));             // [BM, BN]
  auto summed = sum(join(tile, tile * 2.0 + 1.0), 2);             // 3 tile + 1
  store(out + 5 * BLOCK + r(_, None) * BN + c(None, _), summed);
}

// Offsets past 2^31 without a 2 GB buffer: `shift` (u32) is past 2^31, q = x - shift is far
// below x, and q + (shift + cols), a u32 offset past 2^31, is x + cols again only if the offset
// is zero-extended (and p - shift subtracts the u32 value, not its negation modulo 2^32).
// out[0, BLOCK) = x by that route and out[n, n + BLOCK) = x through 64-bit literal offsets (for
// the first min(n, BLOCK) elements); then a range loop
// with u32 bounds past 2^31 sums x in blocks (out[2n, 2n + BLOCK)) and counts its trips
// (out[2n + BLOCK, 2n + 2 BLOCK)); out[2n + 2 BLOCK] = (n + 3e9) / 1e6.
inline void wideOffsets(Ptr out, Ptr x, Int shift, Int n, int BLOCK) {
  auto cols = arange(0, BLOCK);
  auto q = x - shift;
  store(out + cols, load(q + (shift + cols), cols < n, 0.0), cols < n);
  auto far = x + 5000000000;
  store(out + n + cols, load(far - 5000000000 + cols, cols < n, 0.0), cols < n);
  auto acc = zeros({BLOCK}, float32);
  auto trips = cols * 0;
  for (auto i : range(shift, shift + n, BLOCK)) {
    auto offs = i + cols; // u32
    acc = acc + load(q + offs, offs < shift + n, 0.0);
    trips = trips + 1;
  }
  store(out + 2 * n + cols, acc);
  store(out + 2 * n + BLOCK + cols, cast(trips, float32));
  // An int literal past the i32 range makes the arithmetic 64-bit: (n + 3e9) / 1e6 is 3000.
  store(out + 2 * n + 2 * BLOCK, cast((n + 3000000000) / 1000000, float32));
}

// Bytes of a buffer past 2^31: buf[i] = f(i) for i in [start, start + grid x BLOCK), written
// through i64 offsets; then read back through u32 offsets in a range loop with u32 bounds into
// out[i - start] (out - start + offs: p - u32, then + u32).
inline uint8_t byteAt(int64_t i) { return uint8_t(i * 7 + (i >> 13)); }

inline void fillBytes(Ptr buf, Int start, int BLOCK) {
  auto offs = start + program_id(0) * BLOCK + arange(0, BLOCK); // i64
  store(buf + offs, cast(offs * 7 + (offs >> 13), uint8));
}

inline void readBytes(Ptr out, Ptr buf, Int start, Int end, int BLOCK) {
  auto cols = arange(0, BLOCK);
  for (auto i : range(start + program_id(0) * BLOCK, end, num_programs(0) * BLOCK)) {
    auto offs = i + cols; // u32
    auto m = offs < end;
    store(out - start + offs, load(buf + offs, m, 0), m);
  }
}

// Programmatic dependent launch: a producer that runs long (a dependent chain of `spin` steps
// that leaves each value as it was) and lets the next kernel launch at once, then a consumer
// that loads what the producer does not write before griddep_wait() and the producer's output
// after it. produced[i] = 3 x[i] + round; out[round n + i] = 2 produced[i] + w[i].
inline void slowProducer(Ptr produced, Ptr x, Int n, Int round, Int spin, int BLOCK) {
  griddep_launch_dependents();
  auto offs = program_id(0) * BLOCK + arange(0, BLOCK);
  auto m = offs < n;
  auto v = load(x + offs, m, 0.0);
  auto acc = v;
  for (auto i : range(0, spin).carry(acc)) {
    (void)i;
    acc = acc * 0.5 + v * 0.5; // exactly v again: both halves are exact
  }
  store(produced + offs, acc * 3.0 + cast(round, float32), m);
}

inline void waitingConsumer(Ptr out, Ptr produced, Ptr w, Int n, Int round, int BLOCK) {
  auto offs = program_id(0) * BLOCK + arange(0, BLOCK);
  auto m = offs < n;
  auto wv = load(w + offs, m, 0.0); // not the producer's: may run before it finishes
  griddep_wait();
  store(out + round * n + offs, load(produced + offs, m, 0.0) * 2.0 + wv, m);
}

// grid_sync: each program writes its block, waits for the grid, and reads its neighbour's, twice
// in one launch. Program 0 dawdles first (`spin` steps that leave its values as they were), so a
// barrier that let the others through early would have them read its block still poisoned.
// out[pid] = 2 x[next] + 1 + launch; out[P + pid] = 3 out[prev] = 3 (2 x[pid] + 1 + launch),
// with next = pid + 1 and prev = pid - 1 around the grid.
inline void gridExchange(Ptr out, Ptr scratch, Ptr x, Int spin, Int launch, int BLOCK) {
  auto pid = program_id(0), programs = num_programs(0);
  auto offs = arange(0, BLOCK);
  auto v = load(x + pid * BLOCK + offs);
  auto acc = v;
  for (auto i : range(0, where(pid == 0, spin, 0)).carry(acc)) {
    (void)i;
    acc = acc * 0.5 + v * 0.5; // exactly v again: both halves are exact
  }
  store(scratch + pid * BLOCK + offs, acc * 2.0);
  grid_sync();
  auto next = (pid + 1) % programs;
  store(out + pid * BLOCK + offs,
        load(scratch + next * BLOCK + offs) + 1.0 + cast(launch, float32));
  grid_sync();
  auto prev = (pid + programs - 1) % programs;
  store(out + (programs + pid) * BLOCK + offs, load(out + prev * BLOCK + offs) * 3.0);
}

// cluster_sum and cluster_max of blocks: each program loads its own [BM, BN] tile (a [BN] block
// when BM is 1), as fp32, bf16 (TYPE 1), i32 (TYPE 2, x rounded to integers) or i64 (TYPE 3, x
// rounded to integers times 2^33: 8-byte slots), and stores the
// cluster's element-wise sum and maximum of the tiles at its own place, so every program's copy
// is checked. The tile of [1, BN] over more threads than elements exercises copies of elements.
// Scalar exchanges before and after (the cluster's total of the tiles, twice) share the kernel:
// totals[2 pid] and totals[2 pid + 1].
inline void clusterBlockSums(Ptr sums, Ptr maxes, Ptr totals, Ptr x, int TYPE, int BM, int BN) {
  auto pid = program_id(0);
  Value at = BM == 1 ? arange(0, BN) : arange(0, BM)(_, None) * BN + arange(0, BN)(None, _);
  auto base = pid * (BM * BN);
  auto v = load(x + base + at);
  auto tileSum = BM == 1 ? sum(v, 0) : sum(sum(v, 1), 0);
  store(totals + 2 * pid, cluster_sum(tileSum));
  if (TYPE == 1)
    v = cast(v, bfloat16);
  else if (TYPE == 2)
    v = cast(v, int32);
  else if (TYPE == 3)
    v = cast(v, int64) * (int64_t(1) << 33);
  store(sums + base + at, cast(cluster_sum(v), float32));
  store(maxes + base + at, cast(cluster_max(v), float32));
  store(totals + 2 * pid + 1, cluster_sum(tileSum));
}

// --- problems -----------------------------------------------------------------------------------

// `rounds` producer-consumer pairs on one stream, all enqueued before one sync, through
// `enqueue` (which runs the launches it is given, directly or as a captured CUDA graph). Each
// round's producer overwrites the one buffer its consumer reads, so a consumer that read before
// its producer had finished would see the previous round's values (one less).
template <typename Buffer>
void checkGridDependency(CUstream stream, const std::function<void()> &sync,
                         const std::function<void(const std::function<void()> &)> &enqueue,
                         int64_t n, int rounds, int spin, bool *consumerWaits = nullptr) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  const int BLOCK = 256;
  std::vector<float> x = randomFloats(size_t(n), rng), w = randomFloats(size_t(n), rng);
  Buffer dx = upload<Buffer>(x), dw = upload<Buffer>(w), produced = poisoned<Buffer>(size_t(n));
  Buffer out = poisoned<Buffer>(size_t(rounds * n + 5));
  auto producer = kernel("slow_producer", slowProducer,
                         {"produced", "x", "n", "round", "spin", "BLOCK"});
  auto consumer = kernel("waiting_consumer", waitingConsumer,
                         {"out", "produced", "w", "n", "round", "BLOCK"});
  CompiledKernel &p = producer.compile({.signature = {"*fp32", "*fp32", "i32", "i32", "i32"},
                                        .constexprs = {BLOCK},
                                        .numWarps = 2});
  CompiledKernel &c = consumer.compile({.signature = {"*fp32", "*fp32", "*fp32", "i32", "i32"},
                                        .constexprs = {BLOCK},
                                        .numWarps = 2});
  if (consumerWaits)
    *consumerWaits = c.artifacts().waitsOnPriorKernel;
  int64_t grid = (n + BLOCK - 1) / BLOCK;
  enqueue([&] {
    for (int r = 0; r < rounds; ++r) {
      p.launch(grid, stream, {produced, dx, int32_t(n), int32_t(r), int32_t(spin)});
      c.launch(grid, stream, {out, produced, dw, int32_t(n), int32_t(r)});
    }
  });
  sync();
  std::vector<double> want(size_t(rounds * n + 5), kUntouched);
  for (int r = 0; r < rounds; ++r)
    for (int64_t i = 0; i < n; ++i)
      want[size_t(r * n + i)] =
          double(float(float(x[size_t(i)] * 3.0f) + float(r)) * 2.0f + w[size_t(i)]);
  // 1e-5: the kernel may fuse each multiply and add (Specialization::fpFusion); a consumer
  // that read the previous round's values would be off by 2.
  expectClose(download(out, want.size()), want, 1e-5,
              "griddep_wait consumers of " + std::to_string(rounds) + " producers, n=" +
                  std::to_string(n),
              seed);
}

// `launches` launches of gridExchange over `programs` programs (0: the most that fit at once) on
// one stream through `enqueue` (direct, or a captured CUDA graph), each launch after the first
// reading the scratch the one before left: the barrier's word must work again without a reset.
template <typename Buffer>
void checkGridSync(CUstream stream, const std::function<void()> &sync,
                   const std::function<void(const std::function<void()> &)> &enqueue,
                   int64_t programs, int launches, int spin, int numWarps) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  const int BLOCK = 128;
  auto k =
      kernel("grid_exchange", gridExchange, {"out", "scratch", "x", "spin", "launch", "BLOCK"});
  CompiledKernel &c = k.compile({.signature = {"*fp32", "*fp32", "*fp32", "i32", "i32"},
                                 .constexprs = {BLOCK},
                                 .numWarps = numWarps});
  EXPECT_TRUE(c.artifacts().syncsGrid);
  if (programs == 0)
    programs = c.persistentGrid(int64_t(1) << 20);
  const int64_t n = programs * BLOCK;
  std::vector<float> x = randomFloats(size_t(n), rng);
  Buffer dx = upload<Buffer>(x), scratch = poisoned<Buffer>(size_t(n));
  std::vector<Buffer> outs;
  for (int l = 0; l < launches; ++l)
    outs.push_back(poisoned<Buffer>(size_t(2 * n + 5)));
  enqueue([&] {
    for (int l = 0; l < launches; ++l)
      c.launch(programs, stream, {outs[size_t(l)], scratch, dx, int32_t(spin), int32_t(l)});
  });
  sync();
  for (int l = 0; l < launches; ++l) {
    std::vector<double> want(size_t(2 * n + 5), kUntouched);
    for (int64_t p = 0; p < programs; ++p)
      for (int64_t i = 0; i < BLOCK; ++i) {
        int64_t next = (p + 1) % programs;
        want[size_t(p * BLOCK + i)] =
            float(float(x[size_t(next * BLOCK + i)] * 2.0f) + 1.0f) + float(l);
        want[size_t((programs + p) * BLOCK + i)] =
            float(float(float(x[size_t(p * BLOCK + i)] * 2.0f) + 1.0f) + float(l)) * 3.0f;
      }
    expectClose(download(outs[size_t(l)], want.size()), want, 1e-6,
                "grid_sync exchange, launch " + std::to_string(l) + " of " +
                    std::to_string(programs) + " programs of " + std::to_string(numWarps) +
                    " warps",
                seed);
  }
}

template <typename Buffer>
void checkCacheHints(CUstream stream, const std::function<void()> &sync, int64_t n, int numWarps) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  const int BLOCK = 512;
  std::vector<float> x = randomFloats(size_t(n), rng);
  Buffer dx = upload<Buffer>(x), out = poisoned<Buffer>(size_t(4 * n + 7));
  auto k = kernel("cache_hints", cacheHintsKernel, {"out", "x", "n", "BLOCK"});
  // n divisible by 16: masks are constant over 16-byte vectors, so the accesses are vectors.
  CompiledKernel &c = k.compile({.signature = {"*fp32:16", "*fp32:16", "i32:16"},
                                 .constexprs = {BLOCK},
                                 .numWarps = numWarps});
  c.launch((n + BLOCK - 1) / BLOCK, stream, {out, dx, int32_t(n)});
  sync();
  std::vector<double> want(size_t(4 * n + 7), kUntouched);
  for (int64_t i = 0; i < n; ++i) {
    double v = x[size_t(i)];
    want[size_t(i)] = float(v + float(2.0 * v));
    want[size_t(n + i)] = float(v * v);
    want[size_t(2 * n + i)] = 0.0;
    want[size_t(3 * n + i)] = v;
  }
  expectClose(download(out, want.size()), want, 0, "cache hints n=" + std::to_string(n), seed);
}

// An fp32 sum's rounding error grows with the sum of its terms' magnitudes, not with the result
// (terms of random signs cancel to near 0): the bound is eps x log2(n) x sum |term| for the tree
// the kernel reduces in. A dropped or doubled term is off by one term's size.
inline double sumTolerance(int64_t terms, double magnitude) {
  return 1.2e-7 * std::log2(double(terms) + 1) * magnitude;
}

// Sums got[first, first + count) within `tolerance` of their reference are set to it, so that
// expectClose passes them and still reports every other element.
inline void acceptSumsWithin(std::vector<float> &got, const std::vector<double> &want,
                             size_t first, size_t count, double tolerance) {
  for (size_t i = first; i < first + count; ++i)
    if (std::fabs(double(got[i]) - want[i]) <= tolerance)
      got[i] = float(want[i]);
}

template <typename Buffer>
void checkHintedRowSums(CUstream stream, const std::function<void()> &sync, int64_t rows,
                        int64_t nCols, int numWarps, bool bulkCopies) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  const int BLOCK = 512;
  int64_t stride = (nCols + 15) / 16 * 16;
  std::vector<float> x = randomFloats(size_t(rows * stride), rng);
  std::vector<float> y = randomFloats(size_t(rows * stride), rng);
  Buffer dx = upload<Buffer>(x), dy = upload<Buffer>(y), out = poisoned<Buffer>(size_t(rows + 1));
  auto k = kernel("hinted_row_sums", hintedRowSums, {"out", "x", "y", "n_cols", "stride", "BLOCK"});
  // n_cols divisible by 16: the loads are 16-byte vectors, which the ring pipelines.
  CompiledKernel &c = k.compile({.signature = {"*fp32:16", "*fp32:16", "*fp32:16", "i32:16", "i32:16"},
                                 .constexprs = {BLOCK},
                                 .numWarps = numWarps,
                                 .numStages = 3,
                                 .bulkCopies = bulkCopies});
  c.launch(rows, stream, {out, dx, dy, int32_t(nCols), int32_t(stride)});
  sync();
  std::vector<double> want(size_t(rows + 1), kUntouched);
  double magnitude = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0, size = 0;
    for (int64_t j = 0; j < nCols; ++j) {
      double term = double(x[size_t(r * stride + j)]) + 2.0 * double(y[size_t(r * stride + j)]);
      s += term;
      size += std::fabs(term);
    }
    want[size_t(r)] = s;
    magnitude = std::max(magnitude, size);
  }
  double tolerance = sumTolerance(nCols, magnitude);
  std::vector<float> got = download(out, want.size());
  acceptSumsWithin(got, want, 0, size_t(rows), tolerance);
  expectClose(got, want, 1e-6,
              "hinted row sums " + std::to_string(rows) + "x" + std::to_string(nCols) +
                  (bulkCopies ? " (bulk copies)" : " (cp.async)") + ", bound " +
                  std::to_string(tolerance),
              seed);
}

// sumsThenHintedTiles on `rows` rows of `nCols` columns (a multiple of 16, at most 512) and
// `parts` partial rows, `P` x `C` tiles of them a step, on `grid` programs of `numWarps` warps
// and rings of `stages`.
template <typename Buffer>
void checkSumsThenHintedTiles(CUstream stream, const std::function<void()> &sync, int64_t rows,
                              int64_t nCols, int64_t parts, int P, int C, int numWarps, int stages,
                              int64_t grid) {
  namespace lib = tritium::testing::library;
  using kernels::Dtype;
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  const int BLOCK = 512;
  const size_t n = size_t(rows * nCols);
  std::vector<float> partial = randomFloats(size_t(parts * nCols), rng),
                     a = randomFloats(size_t(rows), rng), b = randomFloats(size_t(rows), rng);
  lib::HostTensor x = lib::randomTensor(Dtype::bf16, n, rng, 3.0),
                  dy = lib::randomTensor(Dtype::bf16, n, rng, 3.0),
                  w = lib::randomTensor(Dtype::bf16, size_t(nCols), rng, 3.0);
  auto dPartial = lib::placeFloats<Buffer>(partial), dA = lib::placeFloats<Buffer>(a),
       dB = lib::placeFloats<Buffer>(b);
  auto dX = lib::place<Buffer>(x), dDy = lib::place<Buffer>(dy), dW = lib::place<Buffer>(w);
  lib::Placed<Buffer> out(n * 2, 0), sums(size_t(nCols) * 2, 0); // poisoned
  auto k = kernel("sums_then_hinted_tiles", sumsThenHintedTiles,
                  {"out", "sums", "partial", "x", "dy", "w", "a", "b", "n_rows", "n_cols", "parts",
                   "BLOCK", "P", "C"});
  CompiledKernel &c =
      k.compile({.signature = {"*bf16:16", "*bf16:16", "*fp32:16", "*bf16:16", "*bf16:16",
                               "*bf16:16", "*fp32:16", "*fp32:16", "i32", "i32:16", "i32"},
                 .constexprs = {BLOCK, P, C},
                 .numWarps = numWarps,
                 .numStages = stages});
  c.launch(grid, stream,
           {out.ptr(), sums.ptr(), dPartial.ptr(), dX.ptr(), dDy.ptr(), dW.ptr(), dA.ptr(),
            dB.ptr(), int32_t(rows), int32_t(nCols), int32_t(parts)});
  sync();
  const std::string shape = std::to_string(rows) + "x" + std::to_string(nCols) + ", " +
                            std::to_string(parts) + " parts in " + std::to_string(P) + "x" +
                            std::to_string(C) + " tiles, " + std::to_string(numWarps) + " warps, " +
                            std::to_string(stages) + " stages";
  std::vector<double> wantSums(static_cast<size_t>(nCols)), wantOut(n);
  double magnitude = 0;
  for (int64_t col = 0; col < nCols; ++col) {
    double s = 0, size = 0;
    for (int64_t p = 0; p < parts; ++p) {
      s += partial[size_t(p * nCols + col)];
      size += std::fabs(partial[size_t(p * nCols + col)]);
    }
    wantSums[size_t(col)] = s;
    magnitude = std::max(magnitude, size);
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t col = 0; col < nCols; ++col) {
      size_t i = size_t(r * nCols + col);
      wantOut[i] =
          (x.values[i] - a[size_t(r)]) * b[size_t(r)] * w.values[size_t(col)] * dy.values[i];
    }
  // bf16 keeps 8 significant bits: within half an ulp (2^-9, relative) of the fp32 result, and
  // the sums within their fp32 rounding error besides.
  const double ulp = 1.0 / 256;
  lib::expectClose("column sums of " + shape, lib::valuesOf(sums, Dtype::bf16, size_t(nCols)),
                   wantSums, {1.01 * sumTolerance(parts, magnitude), ulp}, seed);
  lib::expectClose("tiles of " + shape, lib::valuesOf(out, Dtype::bf16, n), wantOut, {1e-6, ulp},
                   seed);
}

// Returns how many loads the compiler made resident (on a GPU: w, b and ghost's; the
// interpreter compiles nothing).
template <typename Buffer>
int checkResidentLoads(CUstream stream, const std::function<void()> &sync, int64_t rows,
                       int64_t grid, int numWarps, bool bulkCopies) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  const int BLOCK = 1024;
  const int64_t n = 1008, stride = 1040; // n < BLOCK: masked lanes; both divisible by 16
  std::vector<float> x = randomFloats(size_t(rows * stride), rng);
  std::vector<float> w = randomFloats(size_t(BLOCK), rng), b = randomFloats(size_t(BLOCK), rng);
  Buffer dx = upload<Buffer>(x), dw = upload<Buffer>(w), db = upload<Buffer>(b);
  Buffer out = poisoned<Buffer>(size_t(rows * stride + rows));
  auto k = kernel("resident_loads", residentLoads,
                  {"out", "x", "w", "b", "ghost", "rows", "n", "stride", "extra", "BLOCK"});
  CompiledKernel &c = k.compile({.signature = {"*fp32:16", "*fp32:16", "*fp32:16", "*fp32:16",
                                               "*fp32:16", "i32", "i32:16", "i32:16", "i32:16"},
                                 .constexprs = {BLOCK},
                                 .numWarps = numWarps,
                                 .numStages = 3,
                                 .bulkCopies = bulkCopies});
  c.launch(grid, stream,
           {out, dx, dw, db, static_cast<float *>(nullptr), int32_t(rows), int32_t(n),
            int32_t(stride), int32_t(0)});
  sync();
  std::vector<double> want(size_t(rows * stride + rows), kUntouched);
  double wsum = double(BLOCK - n) * 1.5, magnitude = double(BLOCK - n) * 1.5;
  for (int64_t j = 0; j < n; ++j) {
    wsum += w[size_t(j)];
    magnitude += std::fabs(w[size_t(j)]);
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j)
      want[size_t(r * stride + j)] =
          double(x[size_t(r * stride + j)]) * w[size_t(j)] + b[size_t(j)];
    want[size_t(rows * stride + r)] = wsum;
  }
  std::vector<float> got = download(out, want.size());
  acceptSumsWithin(got, want, size_t(rows * stride), size_t(rows), sumTolerance(BLOCK, magnitude));
  expectClose(got, want, 1e-6,
              "resident loads " + std::to_string(rows) + " rows on " + std::to_string(grid) +
                  " programs" + (bulkCopies ? " (bulk copies)" : " (cp.async)"),
              seed);
  int resident = 0;
  const std::string &gir = c.artifacts().gir;
  for (size_t at = gir.find("resident = 1"); at != std::string::npos;
       at = gir.find("resident = 1", at + 1))
    ++resident;
  return resident;
}

template <typename Buffer>
void checkJoinSplit(CUstream stream, const std::function<void()> &sync, int BLOCK, int BM, int BN,
                    int numWarps) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  std::vector<float> a = randomFloats(size_t(std::max(2 * BLOCK, BM * BN)), rng);
  std::vector<float> b = randomFloats(size_t(BLOCK), rng);
  size_t total = size_t(5 * BLOCK + BM * BN);
  Buffer da = upload<Buffer>(a), db = upload<Buffer>(b), out = poisoned<Buffer>(total);
  auto k = kernel("join_split", joinSplitKernel, {"out", "a", "b", "BLOCK", "BM", "BN"});
  CompiledKernel &c = k.compile({.signature = {"*fp32:16", "*fp32:16", "*fp32:16"},
                                 .constexprs = {BLOCK, BM, BN},
                                 .numWarps = numWarps});
  c.launch(1, stream, {out, da, db});
  sync();
  // Exact references; the sums' terms may cancel, so each is checked against its largest term.
  std::vector<double> want(total, kUntouched), magnitude(total, 0.0);
  for (int i = 0; i < BLOCK; ++i) {
    double va = a[size_t(i)], vb = b[size_t(i)];
    want[size_t(2 * i)] = va;
    want[size_t(2 * i + 1)] = vb;
    want[size_t(2 * BLOCK + i)] = va * va - vb * vb;
    magnitude[size_t(2 * BLOCK + i)] = std::max(va * va, vb * vb);
    double even = a[size_t(2 * i)], odd = a[size_t(2 * i + 1)];
    want[size_t(3 * BLOCK + i)] = even * 10.0 + odd;
    magnitude[size_t(3 * BLOCK + i)] = std::max(std::fabs(even * 10.0), std::fabs(odd));
    double first = a[size_t(i)], second = a[size_t(BLOCK + i)];
    want[size_t(4 * BLOCK + i)] = first - second * 3.0;
    magnitude[size_t(4 * BLOCK + i)] = std::max(std::fabs(first), std::fabs(second * 3.0));
  }
  for (int e = 0; e < BM * BN; ++e)
    want[size_t(5 * BLOCK + e)] = double(a[size_t(e)]) + (2.0 * a[size_t(e)] + 1.0);
  expectClose(download(out, total), want, 1e-6,
              "join/split BLOCK=" + std::to_string(BLOCK) + " warps=" + std::to_string(numWarps),
              seed, magnitude);
}

// interleave, ravel and swizzle2d (Triton's): a [BM, BN] tile interleaved with another along
// its rows, a tile raveled, and the grouped order of a BM x BN grid with groups of GROUP rows
// (the last group shorter when GROUP does not divide BM).
inline void interleaveRavelSwizzleKernel(Ptr out, Ptr a, Ptr b, int BM, int BN, int GROUP) {
  auto r = arange(0, BM), c = arange(0, BN), c2 = arange(0, 2 * BN);
  auto offs = r(_, None) * BN + c(None, _);
  auto x = load(a + offs), y = load(b + offs);
  store(out + r(_, None) * (2 * BN) + c2(None, _), interleave(x, y));      // [0, 2 BM BN)
  store(out + 2 * BM * BN + arange(0, BM * BN), ravel(x * 2.0 + y));      // [2, 3) BM BN
  auto [si, sj] = swizzle2d(r(_, None), c(None, _), BM, BN, GROUP);
  store(out + 3 * BM * BN + offs, cast(si, float32));                      // [3, 4) BM BN
  store(out + 4 * BM * BN + offs, cast(sj, float32));                      // [4, 5) BM BN
}

template <typename Buffer>
void checkInterleaveRavelSwizzle(CUstream stream, const std::function<void()> &sync, int BM,
                                 int BN, int GROUP, int numWarps) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  int n = BM * BN;
  std::vector<float> a = randomFloats(size_t(n), rng), b = randomFloats(size_t(n), rng);
  size_t total = size_t(5 * n);
  Buffer da = upload<Buffer>(a), db = upload<Buffer>(b), out = poisoned<Buffer>(total);
  auto k = kernel("interleave_ravel_swizzle", interleaveRavelSwizzleKernel,
                  {"out", "a", "b", "BM", "BN", "GROUP"});
  CompiledKernel &c = k.compile({.signature = {"*fp32:16", "*fp32:16", "*fp32:16"},
                                 .constexprs = {BM, BN, GROUP},
                                 .numWarps = numWarps});
  c.launch(1, stream, {out, da, db});
  sync();
  std::vector<double> want(total, kUntouched);
  for (int i = 0; i < BM; ++i)
    for (int j = 0; j < BN; ++j) {
      int e = i * BN + j;
      want[size_t(i * 2 * BN + 2 * j)] = a[size_t(e)];
      want[size_t(i * 2 * BN + 2 * j + 1)] = b[size_t(e)];
      want[size_t(2 * n + e)] = float(a[size_t(e)] * 2.f) + b[size_t(e)];
      // Triton's swizzle2d, on the host.
      int ij = i * BN + j, cells = GROUP * BN, first = ij / cells * GROUP;
      int rows = std::min(BM - first, GROUP), in = ij % cells;
      want[size_t(3 * n + e)] = first + in % rows;
      want[size_t(4 * n + e)] = in / rows;
    }
  expectClose(download(out, total), want, 1e-6,
              "interleave/ravel/swizzle2d " + std::to_string(BM) + "x" + std::to_string(BN) +
                  " group " + std::to_string(GROUP) + " warps=" + std::to_string(numWarps),
              seed);
}

// flip, sort and topk (Triton's) on a [BM, BN] tile: x of normal floats, q of multiples of 1/8
// (many ties, exact in fp16, bf16 and as integers q * 8). Result OP fills segment OP of BM x BN
// elements of out (topk's shorter results leave the rest of theirs untouched). One result per
// kernel: every step of a network stages its block in shared memory of its own, so a kernel
// holds only a few networks.
inline void sortFlipTopkKernel(Ptr out, Ptr px, Ptr pq, int BM, int BN, int K, int OP) {
  auto r = arange(0, BM), c = arange(0, BN);
  auto offs = r(_, None) * BN + c(None, _);
  int n = BM * BN;
  auto x = load(px + offs), q = load(pq + offs);
  auto qi = cast(q * 8.0, int32);
  auto seg = out + OP * n;
  auto kc = arange(0, K);
  switch (OP) {
  case 0: store(seg + offs, flip(x, 1)); break;
  case 1: store(seg + offs, flip(x, 0)); break;
  case 2: store(seg + offs, cast(flip(x > 0.0, -1), float32)); break; // masks
  case 3: store(seg + offs, sort(x, 1)); break;
  case 4: store(seg + offs, sort(x, 0, true)); break;
  case 5: store(seg + offs, cast(sort(cast(q, float16), 1, true), float32)); break;
  case 6: store(seg + offs, cast(sort(cast(q, bfloat16), 0), float32)); break;
  case 7: store(seg + offs, cast(sort(qi, -1), float32)); break;
  case 8: store(seg + offs, cast(sort(cast(qi & 255, uint8), 1, true), float32)); break; // unsigned
  case 9: store(seg + offs, reshape(sort(reshape(x, {2, BM / 2, BN}), 1), {BM, BN})); break; // 3-D
  case 10: store(seg + arange(0, n), sort(ravel(x), 0, true)); break; // 1-D
  case 11: store(seg + r(_, None) * K + kc(None, _), topk(x, K, 1)); break;
  case 12: store(seg + kc(_, None) * BN + c(None, _), topk(x, K, 0)); break;
  case 13: store(seg + r(_, None) * K + kc(None, _), cast(topk(qi, K), float32)); break;
  case 14: store(seg + kc, topk(ravel(x), K)); break;
  case 15: store(seg + offs, topk(x, BN, -1)); break; // k = n: a sort
  case 16: store(seg + r(_, None), cast(topk(cast(q, bfloat16), 1, 1), float32)); break; // maxima
  }
}
inline constexpr int kSortFlipTopkCases = 17;

template <typename Buffer>
void checkSortFlipTopk(CUstream stream, const std::function<void()> &sync, int BM, int BN, int K,
                       int numWarps) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  const int n = BM * BN, segments = kSortFlipTopkCases;
  std::vector<float> x = randomFloats(size_t(n), rng), q(static_cast<size_t>(n));
  std::uniform_int_distribution<int> eighths(-200, 200);
  for (float &v : q)
    v = float(eighths(rng)) / 8;
  Buffer dx = upload<Buffer>(x), dq = upload<Buffer>(q);
  Buffer out = poisoned<Buffer>(size_t(segments * n));
  auto k = kernel("sort_flip_topk", sortFlipTopkKernel, {"out", "x", "q", "BM", "BN", "K", "OP"});
  for (int op = 0; op < segments; ++op) {
    CompiledKernel &c = k.compile({.signature = {"*fp32:16", "*fp32:16", "*fp32:16"},
                                   .constexprs = {BM, BN, K, op},
                                   .numWarps = numWarps});
    c.launch(1, stream, {out, dx, dq});
  }
  sync();
  std::vector<double> want(size_t(segments * n), kUntouched);
  auto at = [&](int s, int i, int j, int cols) -> double & {
    return want[size_t(s * n + i * cols + j)];
  };
  auto X = [&](int i, int j) { return double(x[size_t(i * BN + j)]); };
  auto Q = [&](int i, int j) { return double(q[size_t(i * BN + j)]); };
  auto sorted = [](std::vector<double> v, bool descending) {
    std::sort(v.begin(), v.end());
    if (descending)
      std::reverse(v.begin(), v.end());
    return v;
  };
  auto row = [&](auto f, int i) {
    std::vector<double> v;
    for (int j = 0; j < BN; ++j)
      v.push_back(f(i, j));
    return v;
  };
  auto column = [&](auto f, int j, int from, int count) {
    std::vector<double> v;
    for (int i = from; i < from + count; ++i)
      v.push_back(f(i, j));
    return v;
  };
  auto qInt = [&](int i, int j) { return double(int(Q(i, j) * 8)); };
  auto qU8 = [&](int i, int j) { return double(int(Q(i, j) * 8) & 255); };
  for (int i = 0; i < BM; ++i)
    for (int j = 0; j < BN; ++j) {
      at(0, i, j, BN) = X(i, BN - 1 - j);
      at(1, i, j, BN) = X(BM - 1 - i, j);
      at(2, i, j, BN) = X(i, BN - 1 - j) > 0 ? 1 : 0;
    }
  for (int i = 0; i < BM; ++i) {
    std::vector<double> s3 = sorted(row(X, i), false), s5 = sorted(row(Q, i), true),
                        s7 = sorted(row(qInt, i), false), s8 = sorted(row(qU8, i), true),
                        s11 = sorted(row(X, i), true), s13 = sorted(row(qInt, i), true);
    for (int j = 0; j < BN; ++j) {
      at(3, i, j, BN) = s3[size_t(j)];
      at(5, i, j, BN) = s5[size_t(j)];
      at(7, i, j, BN) = s7[size_t(j)];
      at(8, i, j, BN) = s8[size_t(j)];
      at(15, i, j, BN) = s11[size_t(j)];
    }
    for (int j = 0; j < K; ++j) {
      at(11, i, j, K) = s11[size_t(j)];
      at(13, i, j, K) = s13[size_t(j)];
    }
    at(16, i, 0, 1) = sorted(row(Q, i), true)[0];
  }
  for (int j = 0; j < BN; ++j) {
    std::vector<double> s4 = sorted(column(X, j, 0, BM), true),
                        s6 = sorted(column(Q, j, 0, BM), false);
    for (int i = 0; i < BM; ++i) {
      at(4, i, j, BN) = s4[size_t(i)];
      at(6, i, j, BN) = s6[size_t(i)];
    }
    for (int i = 0; i < K; ++i)
      at(12, i, j, BN) = s4[size_t(i)];
    for (int half = 0; half < 2; ++half) {
      std::vector<double> s9 = sorted(column(X, j, half * BM / 2, BM / 2), false);
      for (int i = 0; i < BM / 2; ++i)
        at(9, half * BM / 2 + i, j, BN) = s9[size_t(i)];
    }
  }
  std::vector<double> all(x.begin(), x.end());
  all = sorted(all, true);
  for (int e = 0; e < n; ++e)
    want[size_t(10 * n + e)] = all[size_t(e)];
  for (int e = 0; e < K; ++e)
    want[size_t(14 * n + e)] = all[size_t(e)];
  expectClose(download(out, want.size()), want, 0,
              "flip/sort/topk " + std::to_string(BM) + "x" + std::to_string(BN) + " k " +
                  std::to_string(K) + " warps=" + std::to_string(numWarps),
              seed);
}

// cat (in order along each dimension, and reordered), gather along each axis and of a row
// (indices out of range give 0), histogram with and without a mask, and assume.
inline void catGatherHistogramKernel(Ptr out, Ptr pa, Ptr pb, Ptr prows, Ptr pcols, Ptr pv,
                                     int BM, int BN, int NB) {
  auto r = arange(0, BM), c = arange(0, BN);
  auto offs = r(_, None) * BN + c(None, _);
  int n = BM * BN;
  auto a = load(pa + offs), b = load(pb + offs);
  auto r2 = arange(0, 2 * BM), c2 = arange(0, 2 * BN);
  store(out + r2(_, None) * BN + c(None, _), cat(a, b));                           // [0, 2n)
  store(out + 2 * n + r(_, None) * (2 * BN) + c2(None, _), cat(a, b, false, 1));   // [2n, 4n)
  store(out + 4 * n + arange(0, 2 * n), cat(ravel(a), ravel(b)));                 // [4n, 6n)
  store(out + 6 * n + r2(_, None) * BN + c(None, _), cat(a, b, true));             // [6n, 8n)
  auto a3 = reshape(a, {2, BM / 2, BN}), b3 = reshape(b, {2, BM / 2, BN});
  store(out + 8 * n + arange(0, 2 * n), ravel(cat(a3, b3, false, 1)));             // [8n, 10n)
  auto rows = cast(load(prows + offs), int32), cols = cast(load(pcols + offs), int32);
  assume(rows >= 0);
  store(out + 10 * n + offs, gather(a, cols, 1));                                  // [10n, 11n)
  store(out + 11 * n + offs, gather(a, rows, 0));                                  // [11n, 12n)
  auto ai = cast(a * 16.0, int32);
  store(out + 12 * n + offs, cast(gather(ai, cols - 1, 1), float32));              // [12n, 13n)
  auto row0 = load(pa + c);
  store(out + 13 * n + c, cast(gather(cast(row0, bfloat16), c * -1 + (BN - 1), 0), float32));
  auto v = cast(load(pv + arange(0, n)), int32);
  store(out + 14 * n + arange(0, NB), cast(histogram(v, NB), float32));
  store(out + 15 * n + arange(0, NB),
        cast(histogram(v, NB, arange(0, n) % 3 != 0), float32));
}

template <typename Buffer>
void checkCatGatherHistogram(CUstream stream, const std::function<void()> &sync, int BM, int BN,
                             int NB, int numWarps) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  const int n = BM * BN, segments = 16;
  std::vector<float> a = randomFloats(size_t(n), rng), b = randomFloats(size_t(n), rng);
  const size_t count = static_cast<size_t>(n);
  std::vector<float> rows(count), cols(count), v(count);
  std::uniform_int_distribution<int> row(0, BM - 1), col(0, BN - 1), bin(-3, NB + 2);
  for (int e = 0; e < n; ++e) {
    rows[size_t(e)] = float(row(rng));
    cols[size_t(e)] = float(col(rng));
    v[size_t(e)] = float(bin(rng));
  }
  Buffer da = upload<Buffer>(a), db = upload<Buffer>(b), dr = upload<Buffer>(rows),
         dc = upload<Buffer>(cols), dv = upload<Buffer>(v);
  Buffer out = poisoned<Buffer>(size_t(segments * n));
  auto k = kernel("cat_gather_histogram", catGatherHistogramKernel,
                  {"out", "a", "b", "rows", "cols", "v", "BM", "BN", "NB"});
  CompiledKernel &c = k.compile(
      {.signature = {"*fp32:16", "*fp32:16", "*fp32:16", "*fp32:16", "*fp32:16", "*fp32:16"},
       .constexprs = {BM, BN, NB},
       .numWarps = numWarps});
  c.launch(1, stream, {out, da, db, dr, dc, dv});
  sync();
  std::vector<double> want(size_t(segments * n), kUntouched);
  auto A = [&](int i, int j) { return double(a[size_t(i * BN + j)]); };
  auto B = [&](int i, int j) { return double(b[size_t(i * BN + j)]); };
  for (int i = 0; i < BM; ++i)
    for (int j = 0; j < BN; ++j) {
      int e = i * BN + j;
      want[size_t(e)] = A(i, j);
      want[size_t(n + e)] = B(i, j);
      want[size_t(2 * n + i * 2 * BN + j)] = A(i, j);
      want[size_t(2 * n + i * 2 * BN + BN + j)] = B(i, j);
      want[size_t(4 * n + e)] = A(i, j);
      want[size_t(5 * n + e)] = B(i, j);
      // [2, BM/2, BN] blocks joined along their middle dimension: [2, BM, BN].
      int h = i / (BM / 2), ih = i % (BM / 2);
      want[size_t(8 * n + h * n + ih * BN + j)] = A(i, j);
      want[size_t(8 * n + h * n + (BM / 2 + ih) * BN + j)] = B(i, j);
      int cj = int(cols[size_t(e)]), ri = int(rows[size_t(e)]);
      want[size_t(10 * n + e)] = A(i, cj);
      want[size_t(11 * n + e)] = A(ri, j);
      want[size_t(12 * n + e)] = cj == 0 ? 0.0 : double(int(float(A(i, cj - 1)) * 16.f));
    }
  for (int j = 0; j < BN; ++j) { // bf16 of row 0, reversed
    unsigned char bf16[4] = {};
    kernels::storeElement("bf16", a[size_t(BN - 1 - j)], bf16);
    want[size_t(13 * n + j)] = kernels::loadElement("bf16", bf16);
  }
  for (int e = 0; e < n; ++e) {
    int x = int(v[size_t(e)]);
    if (x >= 0 && x < NB) {
      double &all = want[size_t(14 * n + x)], &kept = want[size_t(15 * n + x)];
      all = (std::isnan(all) ? 0 : all) + 1;
      if (e % 3 != 0)
        kept = (std::isnan(kept) ? 0 : kept) + 1;
    }
  }
  for (int x = 0; x < NB; ++x)
    for (int s : {14, 15})
      if (std::isnan(want[size_t(s * n + x)]))
        want[size_t(s * n + x)] = 0;
  // The reordered cat: any order of a's and b's elements.
  std::vector<float> got = download(out, want.size());
  std::vector<float> reordered(got.begin() + 6 * n, got.begin() + 8 * n),
      expected(got.begin(), got.begin() + 2 * n);
  std::sort(reordered.begin(), reordered.end());
  std::vector<float> ab(a);
  ab.insert(ab.end(), b.begin(), b.end());
  std::sort(ab.begin(), ab.end());
  EXPECT_EQ(reordered, ab) << "cat(a, b, can_reorder = true) is not a permutation of a and b; seed "
                           << seed;
  for (int e = 6 * n; e < 8 * n; ++e)
    want[size_t(e)] = got[size_t(e)];
  expectClose(got, want, 0,
              "cat/gather/histogram " + std::to_string(BM) + "x" + std::to_string(BN) + " bins " +
                  std::to_string(NB) + " warps=" + std::to_string(numWarps),
              seed);
}

template <typename Buffer>
void checkWideOffsets(CUstream stream, const std::function<void()> &sync, uint32_t shift,
                      int64_t n, int numWarps) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  const int BLOCK = 256;
  std::vector<float> x = randomFloats(size_t(n), rng);
  size_t total = size_t(2 * n + 2 * BLOCK + 1);
  Buffer dx = upload<Buffer>(x), out = poisoned<Buffer>(total);
  auto k = kernel("wide_offsets", wideOffsets, {"out", "x", "shift", "n", "BLOCK"});
  CompiledKernel &c = k.compile({.signature = {"*fp32", "*fp32", "u32", "i32"},
                                 .constexprs = {BLOCK},
                                 .numWarps = numWarps});
  c.launch(1, stream, {out, dx, shift, int32_t(n)});
  sync();
  std::vector<double> want(total, kUntouched);
  for (int64_t i = 0; i < std::min<int64_t>(n, BLOCK); ++i)
    want[size_t(i)] = want[size_t(n + i)] = x[size_t(i)];
  for (int j = 0; j < BLOCK; ++j)
    want[size_t(2 * n + j)] = 0.0;
  for (int64_t i = 0; i < n; ++i)
    want[size_t(2 * n + i % BLOCK)] += x[size_t(i)];
  for (int j = 0; j < BLOCK; ++j)
    want[size_t(2 * n + BLOCK + j)] = double((n + BLOCK - 1) / BLOCK);
  want[size_t(2 * n + 2 * BLOCK)] = double((n + 3000000000) / 1000000);
  // The column sums add n / BLOCK values of magnitude ~3 in fp32 in the GPU's order: 1e-4.
  expectClose(download(out, total), want, 1e-4,
              "wide offsets shift=" + std::to_string(shift) + " n=" + std::to_string(n), seed);
}

// Writes f(i) into buf[start, start + count) through i64 offsets, reads it back through u32
// offsets into a fresh buffer and checks every byte against the host's f(i). The GPU runs it
// around 2^31 in a buffer of 2^31 + 2^20 bytes; the interpreter in a small one.
template <typename Buffer>
void checkBytesAt(CUstream stream, const std::function<void()> &sync, const Buffer &buf,
                  int64_t start, int64_t count) {
  const int BLOCK = 1024;
  auto fill = kernel("fill_bytes", fillBytes, {"buf", "start", "BLOCK"});
  CompiledKernel &f = fill.compile({.signature = {"*u8:16", "i64"}, .constexprs = {BLOCK}});
  f.launch(count / BLOCK, stream, {buf, int64_t(start)});
  Buffer out(static_cast<size_t>(count));
  out.fill32(0xdeadbeefu);
  auto read = kernel("read_bytes", readBytes, {"out", "buf", "start", "end", "BLOCK"});
  CompiledKernel &r =
      read.compile({.signature = {"*u8:16", "*u8:16", "u32", "u32"}, .constexprs = {BLOCK}});
  r.launch(64, stream, {out, buf, uint32_t(start), uint32_t(start + count)});
  sync();
  std::vector<uint8_t> got(static_cast<size_t>(count));
  out.download(got.data(), got.size());
  int64_t bad = 0;
  std::ostringstream first;
  for (int64_t i = 0; i < count; ++i)
    if (got[size_t(i)] != byteAt(start + i) && bad++ < 5)
      first << "  [" << start + i << "] got " << int(got[size_t(i)]) << " expected "
            << int(byteAt(start + i)) << "\n";
  EXPECT_EQ(bad, 0) << bad << " of " << count << " bytes wrong from " << start << ":\n"
                    << first.str();
}

// clusterBlockSums over `clusters` clusters of `clusterSize` programs: every program holds the
// cluster's sums and maxima, the same bits in all of them, against double-precision references
// (bf16: the inputs rounded to bf16, the sum rounded once; i32: exact).
template <typename Buffer>
void checkClusterBlockSums(CUstream stream, const std::function<void()> &sync, int clusterSize,
                           int64_t clusters, int type, int BM, int BN, int numWarps,
                           int ptxVersion = 81) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  const int64_t programs = clusters * clusterSize, tile = int64_t(BM) * BN;
  std::vector<float> x = randomFloats(size_t(programs * tile), rng);
  auto asStored = [&](float v) -> double {
    if (type == 2)
      return double(int32_t(v)); // the cast truncates towards zero
    if (type == 1) {
      unsigned char b[4]; // storeElement's fp32 branch, never taken here, writes 4
      kernels::storeElement("bf16", v, b);
      return kernels::loadElement("bf16", b);
    }
    if (type == 3)
      return double(int32_t(v)) * 8589934592.0; // 2^33
    return v;
  };
  Buffer dx = upload<Buffer>(x), sums = poisoned<Buffer>(size_t(programs * tile)),
         maxes = poisoned<Buffer>(size_t(programs * tile)),
         totals = poisoned<Buffer>(size_t(2 * programs));
  auto k = kernel("cluster_block_sums", clusterBlockSums,
                  {"sums", "maxes", "totals", "x", "TYPE", "BM", "BN"});
  CompiledKernel &c = k.compile({.signature = {"*fp32", "*fp32", "*fp32", "*fp32"},
                                 .constexprs = {type, BM, BN},
                                 .numWarps = numWarps,
                                 .clusterSize = clusterSize,
                                 .ptxVersion = ptxVersion});
  c.launch(programs, stream, {sums, maxes, totals, dx});
  sync();
  // The scalar totals sum thousands of fp32 values: their rounding error scales with the sum of
  // magnitudes, not with the total, which may be near 0 (a relative tolerance failed there).
  std::vector<double> wantTotals(size_t(2 * programs)), totalTolerance(size_t(2 * programs));
  for (int64_t cl = 0; cl < clusters; ++cl) {
    double t = 0, magnitude = 0;
    for (int64_t e = 0; e < clusterSize * tile; ++e) {
      t += x[size_t(cl * clusterSize * tile + e)];
      magnitude += std::fabs(x[size_t(cl * clusterSize * tile + e)]);
    }
    for (int64_t i = 0; i < 2 * clusterSize; ++i) {
      wantTotals[size_t(cl * 2 * clusterSize + i)] = t;
      totalTolerance[size_t(cl * 2 * clusterSize + i)] = 4e-6 * magnitude;
    }
  }
  std::vector<double> wantSum(size_t(programs * tile)), wantMax(size_t(programs * tile));
  for (int64_t cl = 0; cl < clusters; ++cl)
    for (int64_t e = 0; e < tile; ++e) {
      double s = 0, m = -INFINITY;
      for (int64_t r = 0; r < clusterSize; ++r) {
        double v = asStored(x[size_t((cl * clusterSize + r) * tile + e)]);
        s += v;
        m = std::max(m, v);
      }
      if (type == 1)
        s = asStored(float(s));
      for (int64_t r = 0; r < clusterSize; ++r) {
        wantSum[size_t((cl * clusterSize + r) * tile + e)] = s;
        wantMax[size_t((cl * clusterSize + r) * tile + e)] = m;
      }
    }
  std::string what = "cluster of " + std::to_string(clusterSize) + ", type " +
                     std::to_string(type) + ", [" + std::to_string(BM) + ", " + std::to_string(BN) +
                     "] over " + std::to_string(numWarps) + " warps, PTX " +
                     std::to_string(ptxVersion);
  std::vector<float> gotSum = download(sums, wantSum.size());
  expectClose(gotSum, wantSum, type == 1 ? 1.6e-2 : 1e-5, what + ": sums", seed);
  expectClose(download(maxes, wantMax.size()), wantMax, 0, what + ": maxima", seed);
  std::vector<float> gotTotals = download(totals, wantTotals.size());
  int64_t badTotals = 0;
  for (size_t i = 0; i < gotTotals.size(); ++i)
    if (!(std::fabs(double(gotTotals[i]) - wantTotals[i]) <= totalTolerance[i]) && badTotals++ < 5)
      ADD_FAILURE() << what << ": scalar exchange beside them, [" << i << "] got " << gotTotals[i]
                    << " expected " << wantTotals[i] << " within " << totalTolerance[i] << "; seed "
                    << seed;
  int64_t differ = 0;
  for (int64_t p = 0; p < programs; ++p)
    for (int64_t e = 0; e < tile; ++e)
      differ += bitsOf(gotSum[size_t(p * tile + e)]) !=
                bitsOf(gotSum[size_t((p / clusterSize) * clusterSize * tile + e)]);
  EXPECT_EQ(differ, 0) << what << ": programs of a cluster hold different sums; seed " << seed;
}

} // namespace tritium::testing::language
