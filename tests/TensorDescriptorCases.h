// Tensor descriptors (make_tensor_descriptor, desc.load, desc.store, desc.atomic_*) against
// double-precision
// references, shared by the GPU tests (tests/gpu/TensorDescriptorGpuTest.cpp) and their
// interpreter twins (tests/unit/TensorDescriptorInterpreterTest.cpp): Triton's tutorial matmul
// written with descriptors (a [M, K], b [K, N] or [N, K] read through trans(), c stored through
// one), shapes that are not multiples of the tiles, a tile copy whose offsets run before
// the tensor's start and past its end, and tiles of several programs combined into one tensor
// by the descriptor's atomics. On Hopper (sm_90a) the matmul's tiles are TMA copies
// where the arguments allow; the same kernels run everywhere else with plain loads. Inputs are
// fresh random numbers, outputs poisoned, every element checked.
#pragma once

#include "DotCases.h"

namespace tritium::testing::descriptors {

using namespace tritium::dsl;
using tensorcores::Encoded;

// C = A x B over BM x BN tiles; b is [K, N], or [N, K] (B_COLUMNS) transposed in the kernel.
inline void descriptorMatmulKernel(Ptr c, Ptr a, Ptr b, Int M, Int N, Int K, Int lda, Int ldb,
                                   Int ldc, int BM, int BN, int BK, int STAGES, int B_COLUMNS) {
  auto pids_n = cdiv(N, BN);
  auto pid_m = program_id(0) / pids_n, pid_n = program_id(0) % pids_n;
  auto a_desc = make_tensor_descriptor(a, {M, K}, {lda, 1}, {BM, BK});
  auto b_desc = B_COLUMNS ? make_tensor_descriptor(b, {N, K}, {ldb, 1}, {BN, BK})
                          : make_tensor_descriptor(b, {K, N}, {ldb, 1}, {BK, BN});
  auto c_desc = make_tensor_descriptor(c, {M, N}, {ldc, 1}, {BM, BN});
  auto acc = zeros({BM, BN}, float32);
  for (auto k : range(0, K, BK, STAGES)) {
    auto x = a_desc.load({pid_m * BM, k});
    auto y = B_COLUMNS ? trans(b_desc.load({pid_n * BN, k})) : b_desc.load({k, pid_n * BN});
    acc = dot(x, y, acc);
  }
  c_desc.store({pid_m * BM, pid_n * BN}, cast(acc, c.dtype()));
}

// out[r, c] = 2 x in[r + dr, c + dc] (0 outside `in`) for each tile of out, the tiles of a
// column of tiles walked by a pipelined loop; dr and dc shift the reads before the tensor's
// start and past its end.
inline void descriptorShiftKernel(Ptr out, Ptr in, Int R, Int C, Int ld, Int dr, Int dc,
                                  int BR, int BC, int STAGES) {
  auto col = program_id(0) * BC;
  auto src = make_tensor_descriptor(in, {R, C}, {ld, 1}, {BR, BC});
  auto dst = make_tensor_descriptor(out, {R, C}, {ld, 1}, {BR, BC});
  for (auto row : range(0, R, BR, STAGES)) {
    auto t = src.load({row + dr, col + dc});
    dst.store({row, col}, cast(t * 2.0, out.dtype()));
  }
}

struct DescriptorMatmulCase {
  ir::ScalarKind in = ir::ScalarKind::BF16, out = ir::ScalarKind::F32;
  int M = 64, N = 64, K = 64;
  int BM = 64, BN = 64, BK = 64, warps = 4, stages = 3;
  bool bColumns = false;
  std::string arch = ""; // "" = the default
  int extraLead = 0;     // added to every leading dimension (strides TMA may refuse)

  std::string str() const {
    std::ostringstream s;
    s << ir::dtypeName(in) << "->" << ir::dtypeName(out) << " " << M << "x" << N << "x" << K
      << " tiles " << BM << "x" << BN << "x" << BK << " warps " << warps << " stages " << stages
      << (bColumns ? " b^T" : "") << (extraLead ? " lead+" + std::to_string(extraLead) : "")
      << (arch.empty() ? "" : " " + arch);
    return s.str();
  }
};

inline auto descriptorMatmulKernelOf() {
  return kernel("descriptor_matmul", descriptorMatmulKernel,
                {"c", "a", "b", "M", "N", "K", "lda", "ldb", "ldc", "BM", "BN", "BK", "STAGES",
                 "B_COLUMNS"});
}

// Runs the case; returns the compiled kernel's PTX (for the callers that check TMA was used).
template <typename Buffer>
std::string checkDescriptorMatmul(CUstream stream, const std::function<void()> &sync,
                                  const DescriptorMatmulCase &c) {
  using namespace tensorcores;
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  int lda = c.K + c.extraLead, ldb = (c.bColumns ? c.K : c.N) + c.extraLead,
      ldc = c.N + c.extraLead;
  std::vector<double> av(size_t(c.M) * lda, 0.0), bv(size_t(c.bColumns ? c.N : c.K) * ldb, 0.0);
  std::vector<double> a = randomValues(c.in, size_t(c.M) * c.K, rng),
                      b = randomValues(c.in, size_t(c.K) * c.N, rng);
  for (int m = 0; m < c.M; ++m)
    for (int k = 0; k < c.K; ++k)
      av[size_t(m) * lda + k] = a[size_t(m) * c.K + k];
  for (int k = 0; k < c.K; ++k)
    for (int n = 0; n < c.N; ++n)
      bv[c.bColumns ? size_t(n) * ldb + k : size_t(k) * ldb + n] = b[size_t(k) * c.N + n];
  Encoded ae = encode(c.in, av), be = encode(c.in, bv);
  int outBytes = ir::bitWidth(c.out) / 8;
  Buffer da = uploadBytes<Buffer>(ae.raw), db = uploadBytes<Buffer>(be.raw);
  Buffer dc = poisonedBytes<Buffer>(size_t(c.M) * ldc * size_t(outBytes));
  auto k = descriptorMatmulKernelOf();
  Specialization spec{.signature = {"*" + ir::dtypeName(c.out), "*" + ir::dtypeName(c.in),
                                    "*" + ir::dtypeName(c.in), "i32", "i32", "i32", "i32", "i32",
                                    "i32"},
                      .constexprs = {c.BM, c.BN, c.BK, c.stages, c.bColumns ? 1 : 0},
                      .numWarps = c.warps};
  if (!c.arch.empty())
    spec.arch = c.arch;
  std::initializer_list<KernelArg> args = {dc, da, db, c.M, c.N, c.K, lda, ldb, ldc};
  CompiledKernel &ck = k.compile(spec.specializedFor(args));
  int64_t grid = int64_t((c.M + c.BM - 1) / c.BM) * ((c.N + c.BN - 1) / c.BN);
  ck.launch(grid, stream, args);
  sync();
  std::vector<unsigned char> raw(size_t(c.M) * ldc * size_t(outBytes));
  dc.download(raw.data(), raw.size());
  std::vector<double> got = decode(c.out, raw);
  MatmulCase like{.in = c.in, .out = c.out, .K = c.K};
  double tol = matmulTolerance(like), rel = matmulRelativeTolerance(like);
  size_t bad = 0;
  std::ostringstream first;
  for (int m = 0; m < c.M; ++m)
    for (int n = 0; n < c.N; ++n) {
      double want = 0;
      for (int kk = 0; kk < c.K; ++kk)
        want += ae.values[size_t(m) * lda + kk] *
                be.values[c.bColumns ? size_t(n) * ldb + kk : size_t(kk) * ldb + n];
      double g = got[size_t(m) * ldc + n];
      bool ok = std::isfinite(g) && std::fabs(g - want) <= tol + rel * std::fabs(want);
      if (!ok && bad++ < 5)
        first << "  [" << m << ", " << n << "] got " << g << ", want " << want << "\n";
    }
  EXPECT_EQ(bad, 0u) << "descriptor matmul " << c.str() << ": " << bad << " of " << c.M * c.N
                     << " wrong (seed " << seed << "):\n"
                     << first.str();
  return ck.artifacts().ptx;
}

// The shifted copy of an R x C fp32 (or 16-bit) tensor with leading dimension ld.
template <typename Buffer>
std::string checkDescriptorShift(CUstream stream, const std::function<void()> &sync,
                                 ir::ScalarKind dtype, int R, int C, int ld, int dr, int dc,
                                 int BR, int BC, int stages, int warps,
                                 const std::string &arch = "") {
  using namespace tensorcores;
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  Encoded in = encode(dtype, randomValues(dtype, size_t(R) * ld, rng));
  int bytes = ir::bitWidth(dtype) / 8;
  Buffer din = uploadBytes<Buffer>(in.raw);
  Buffer dout = poisonedBytes<Buffer>(size_t(R) * ld * size_t(bytes));
  auto k = kernel("descriptor_shift", descriptorShiftKernel,
                  {"out", "in", "R", "C", "ld", "dr", "dc", "BR", "BC", "STAGES"});
  Specialization spec{.signature = {"*" + ir::dtypeName(dtype), "*" + ir::dtypeName(dtype),
                                    "i32", "i32", "i32", "i32", "i32"},
                      .constexprs = {BR, BC, stages},
                      .numWarps = warps};
  if (!arch.empty())
    spec.arch = arch;
  std::initializer_list<KernelArg> args = {dout, din, R, C, ld, dr, dc};
  CompiledKernel &ck = k.compile(spec.specializedFor(args));
  ck.launch((C + BC - 1) / BC, stream, args);
  sync();
  std::vector<unsigned char> raw(size_t(R) * ld * size_t(bytes));
  dout.download(raw.data(), raw.size());
  std::vector<double> got = decode(dtype, raw);
  size_t bad = 0;
  std::ostringstream first;
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) {
      int sr = r + dr, sc = c + dc;
      double want = sr >= 0 && sr < R && sc >= 0 && sc < C ? 2 * in.values[size_t(sr) * ld + sc]
                                                           : 0.0;
      double g = got[size_t(r) * ld + c];
      if (!(g == want) && bad++ < 5)
        first << "  [" << r << ", " << c << "] got " << g << ", want " << want << "\n";
    }
  EXPECT_EQ(bad, 0u) << "descriptor shift " << R << "x" << C << " ld " << ld << " by (" << dr
                     << ", " << dc << ") tiles " << BR << "x" << BC << ": " << bad
                     << " wrong (seed " << seed << "):\n"
                     << first.str();
  return ck.artifacts().ptx;
}

// Program p combines the p-th [BR, BC] tile of `in` (a stack of tiles) into `out` at rows
// p x BR / 2 + dr and columns dc: consecutive programs' tiles overlap by half, and the shifts
// put some of them before the tensor's start or past its end. OP: 0 add, 1 min, 2 max, 3 and,
// 4 or, 5 xor; 6 stores the tile instead, at rows p x BR + dr (tiles side by side). PRODUCT:
// the tile (fp32 of small integers) is first multiplied by the identity on the tensor cores,
// so that what is combined or stored is a product's accumulator in its own layout.
inline void descriptorAtomicKernel(Ptr out, Ptr in, Int R, Int C, Int ld, Int dr, Int dc,
                                   int BR, int BC, int OP, int PRODUCT) {
  auto p = program_id(0);
  auto r = arange(0, BR), c = arange(0, BC);
  auto t = load(in + p * (BR * BC) + r(_, None) * BC + c(None, _));
  if (PRODUCT)
    t = dot(cast(t, float16), cast(c(_, None) == c(None, _), float16));
  auto desc = make_tensor_descriptor(out, {R, C}, {ld, 1}, {BR, BC});
  std::vector<Operand> at = {p * (OP == 6 ? BR : BR / 2) + dr, dc}; // stores do not overlap
  switch (OP) {
  case 6: desc.store(at, t); break;
  case 0: desc.atomic_add(at, t); break;
  case 1: desc.atomic_min(at, t); break;
  case 2: desc.atomic_max(at, t); break;
  case 3: desc.atomic_and(at, t); break;
  case 4: desc.atomic_or(at, t); break;
  default: desc.atomic_xor(at, t); break;
  }
}

// Runs descriptorAtomicKernel on P programs over an R x C tensor (row stride ld) of i32, or of
// fp32 for add and store (small integers, so that every order of the additions gives the exact
// sum), and checks every element, those no tile reaches and the padding past C included.
template <typename Buffer>
void checkDescriptorAtomic(CUstream stream, const std::function<void()> &sync, int op,
                           ir::ScalarKind dtype, int P, int R, int C, int ld, int dr, int dc,
                           int BR, int BC, const std::string &arch = "", int warps = 4,
                           bool product = false) {
  using namespace tensorcores;
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> small(-50, 50), bits(INT32_MIN, INT32_MAX);
  bool f32 = dtype == ir::ScalarKind::F32;
  auto draw = [&] { return op >= 3 && op <= 5 ? bits(rng) : small(rng); }; // bits for bitwise ops
  std::vector<int32_t> init(size_t(R) * ld), tiles(size_t(P) * BR * BC);
  for (auto &x : init)
    x = draw();
  for (auto &x : tiles)
    x = draw();
  std::vector<int64_t> want(init.begin(), init.end());
  for (int p = 0; p < P; ++p)
    for (int r = 0; r < BR; ++r)
      for (int c = 0; c < BC; ++c) {
        int64_t row = int64_t(p) * (op == 6 ? BR : BR / 2) + dr + r, col = dc + c;
        if (row < 0 || row >= R || col < 0 || col >= C)
          continue;
        int64_t &w = want[size_t(row * ld + col)];
        int64_t v = tiles[(size_t(p) * BR + r) * BC + c];
        switch (op) {
        case 0: w += v; break;
        case 1: w = std::min(w, v); break;
        case 2: w = std::max(w, v); break;
        case 3: w = int32_t(w) & int32_t(v); break;
        case 4: w = int32_t(w) | int32_t(v); break;
        case 5: w = int32_t(w) ^ int32_t(v); break;
        default: w = v; break; // a store
        }
      }
  auto bytesOf = [&](const std::vector<int32_t> &v) {
    std::vector<unsigned char> raw(v.size() * 4);
    for (size_t i = 0; i < v.size(); ++i) {
      if (f32) {
        float f = float(v[i]);
        std::memcpy(raw.data() + 4 * i, &f, 4);
      } else {
        std::memcpy(raw.data() + 4 * i, &v[i], 4);
      }
    }
    return raw;
  };
  Buffer dout = uploadBytes<Buffer>(bytesOf(init)), din = uploadBytes<Buffer>(bytesOf(tiles));
  auto k = kernel("descriptor_atomic", descriptorAtomicKernel,
                  {"out", "in", "R", "C", "ld", "dr", "dc", "BR", "BC", "OP", "PRODUCT"});
  std::string t = "*" + ir::dtypeName(dtype);
  Specialization spec{.signature = {t, t, "i32", "i32", "i32", "i32", "i32"},
                      .constexprs = {BR, BC, op, product ? 1 : 0}, .numWarps = warps};
  if (!arch.empty())
    spec.arch = arch;
  std::initializer_list<KernelArg> args = {dout, din, R, C, ld, dr, dc};
  k.compile(spec.specializedFor(args)).launch(P, stream, args);
  sync();
  std::vector<unsigned char> raw(init.size() * 4);
  dout.download(raw.data(), raw.size());
  size_t bad = 0;
  std::ostringstream first;
  for (size_t i = 0; i < init.size(); ++i) {
    double got;
    if (f32) {
      float f;
      std::memcpy(&f, raw.data() + 4 * i, 4);
      got = f;
    } else {
      int32_t x;
      std::memcpy(&x, raw.data() + 4 * i, 4);
      got = x;
    }
    if (!(got == double(want[i])) && bad++ < 5)
      first << "  [" << i / size_t(ld) << ", " << i % size_t(ld) << "] got " << got << ", want "
            << want[i] << "\n";
  }
  EXPECT_EQ(bad, 0u) << "descriptor atomic op " << op << " " << ir::dtypeName(dtype) << " " << P
                     << " programs on " << R << "x" << C << " ld " << ld << " by (" << dr << ", "
                     << dc << ") tiles " << BR << "x" << BC << (product ? " of a product" : "")
                     << " on " << warps << " warps: " << bad << " wrong (seed "
                     << seed << "):\n"
                     << first.str();
}

// A tile published by a release (GPU only: its programs wait for one another, which the
// interpreter, running programs in order, cannot do). Program p stores tile p of `out`
// ([P x BR, BC] fp32) through a descriptor (a TMA store on Hopper), counts itself done with an
// acq_rel atomic, waits until all P programs have, and copies its neighbour's tile (p + 1) % P
// of `out` into the same rows of `seen` with plain loads. The atomic must wait for the TMA
// store's writes, performed by the async proxy after the store op has ended.
inline void publishedTileKernel(Ptr out, Ptr seen, Ptr counter, Int P, int BR, int BC) {
  auto pid = program_id(0);
  auto rows = arange(0, BR), cols = arange(0, BC);
  auto value = cast((pid * BR + rows)(_, None) * BC + cols(None, _), float32) + 0.5;
  make_tensor_descriptor(out, {P * BR, BC}, {BC, 1}, {BR, BC}).store({pid * BR, 0}, value);
  atomic_add(counter, 1);
  while_([&] { return atomic_add(counter, 0) < P; }, [] {});
  auto next = (pid + 1) % P;
  auto got = load(out + (next * BR + rows)(_, None) * BC + cols(None, _));
  store(seen + (pid * BR + rows)(_, None) * BC + cols(None, _), got);
}

inline Kernel &publishedTileKernelOf() {
  static auto k = kernel("published_tile", publishedTileKernel,
                         {"out", "seen", "counter", "P", "BR", "BC"});
  return k;
}

} // namespace tritium::testing::descriptors
