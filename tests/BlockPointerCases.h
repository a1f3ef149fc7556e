// Block pointers (make_block_ptr, advance, load/store with boundary_check) against
// double-precision references, shared by the GPU tests (tests/gpu/BlockPointerGpuTest.cpp)
// and their interpreter twins (tests/unit/BlockPointerTest.cpp): the tutorial matmul written
// with block pointers advanced through the K loop (b row-major, or column-major through its
// strides and order), and as Triton's tutorial writes it, with pointer blocks carried and
// advanced, both pipelined (the carried values advance by a loop-invariant step); shapes that
// are not multiples of the tiles; and a tile copy whose reads
// run before the tensor's start and past its end, checked on one dimension or both, padded
// with zeros or NaNs. Inputs are fresh random numbers, outputs poisoned, every element checked.
#pragma once

#include "DotCases.h"

namespace tritium::testing::blockpointers {

using namespace tritium::dsl;
using tensorcores::Encoded;

// C = A x B over BM x BN tiles; b is [K, N] row-major, or column-major (B_COLUMNS: stored
// [N, K], described as [K, N] with strides {1, ldb} and order {0, 1}).
inline void blockPointerMatmulKernel(Ptr c, Ptr a, Ptr b, Int M, Int N, Int K, Int lda, Int ldb,
                                     Int ldc, int BM, int BN, int BK, int B_COLUMNS, int STAGES) {
  auto pids_n = cdiv(N, BN);
  auto pid_m = program_id(0) / pids_n, pid_n = program_id(0) % pids_n;
  auto a_bp = make_block_ptr(a, {M, K}, {lda, 1}, {pid_m * BM, 0}, {BM, BK}, {1, 0});
  auto b_bp = B_COLUMNS ? make_block_ptr(b, {K, N}, {1, ldb}, {0, pid_n * BN}, {BK, BN}, {0, 1})
                        : make_block_ptr(b, {K, N}, {ldb, 1}, {0, pid_n * BN}, {BK, BN}, {1, 0});
  auto acc = zeros({BM, BN}, float32);
  for (auto k : range(0, K, BK, STAGES)) {
    (void)k;
    acc = dot(load(a_bp, {0, 1}), load(b_bp, {0, 1}), acc);
    a_bp = advance(a_bp, {0, BK});
    b_bp = advance(b_bp, {BK, 0});
  }
  auto c_bp = make_block_ptr(c, {M, N}, {ldc, 1}, {pid_m * BM, pid_n * BN}, {BM, BN}, {1, 0});
  store(c_bp, cast(acc, c.dtype()), {0, 1});
}

// Triton's tutorial 03 as it is written in Python: the tiles' pointer blocks carried through
// the K loop and advanced by BK elements each iteration (a_ptrs += BK * stride_ak), the mask
// from the loop variable.
inline void carriedPointerMatmulKernel(Ptr c, Ptr a, Ptr b, Int M, Int N, Int K, Int lda,
                                       Int ldb, Int ldc, int BM, int BN, int BK, int STAGES) {
  auto pids_n = cdiv(N, BN);
  auto pid_m = program_id(0) / pids_n, pid_n = program_id(0) % pids_n;
  auto rm = pid_m * BM + arange(0, BM), rn = pid_n * BN + arange(0, BN), rk = arange(0, BK);
  auto a_ptrs = a + rm(_, None) * lda + rk(None, _);
  auto b_ptrs = b + rk(_, None) * ldb + rn(None, _);
  auto acc = zeros({BM, BN}, float32);
  for (auto k : range(0, K, BK, STAGES)) {
    auto x = load(a_ptrs, (rm(_, None) < M) & (rk(None, _) < K - k), 0.0);
    auto y = load(b_ptrs, (rk(_, None) < K - k) & (rn(None, _) < N), 0.0);
    acc = dot(x, y, acc);
    a_ptrs = a_ptrs + BK;
    b_ptrs = b_ptrs + BK * ldb;
  }
  store(c + rm(_, None) * ldc + rn(None, _), acc, (rm(_, None) < M) & (rn(None, _) < N));
}

// out[r, c] = in[r + dr, c + dc] for the tile of out at program (0, 0) (R x C, both powers of
// two): rows outside `in` are masked (dimension 0 checked); with CHECK_COLS also the columns,
// padded with NaN when NAN_PAD (the caller keeps unchecked columns inside the tensor).
inline void blockPointerShiftKernel(Ptr out, Ptr in, Int R, Int C, Int dr, Int dc, int BR,
                                    int BC, int CHECK_COLS, int NAN_PAD) {
  auto src = make_block_ptr(in, {R, C}, {C, 1}, {dr, dc}, {BR, BC}, {1, 0});
  auto t = CHECK_COLS ? load(src, {0, 1}, NAN_PAD ? Padding::nan : Padding::zero)
                      : load(src, {0}, NAN_PAD ? Padding::nan : Padding::zero);
  store(make_block_ptr(out, {R, C}, {C, 1}, {0, 0}, {BR, BC}, {1, 0}), t);
}

struct BlockPointerMatmulCase {
  ir::ScalarKind in = ir::ScalarKind::F16;
  int M = 64, N = 64, K = 64;
  int BM = 64, BN = 64, BK = 32, warps = 4, stages = 1;
  bool bColumns = false;
  bool carriedPointers = false; // carriedPointerMatmulKernel instead (b row-major)
  std::string arch = "";        // "" = the default
};

inline auto blockPointerMatmulKernelOf() {
  return kernel("block_pointer_matmul", blockPointerMatmulKernel,
                {"c", "a", "b", "M", "N", "K", "lda", "ldb", "ldc", "BM", "BN", "BK",
                 "B_COLUMNS", "STAGES"});
}
inline auto carriedPointerMatmulKernelOf() {
  return kernel("carried_pointer_matmul", carriedPointerMatmulKernel,
                {"c", "a", "b", "M", "N", "K", "lda", "ldb", "ldc", "BM", "BN", "BK", "STAGES"});
}

template <typename Buffer>
void checkBlockPointerMatmul(CUstream stream, const std::function<void()> &sync,
                             const BlockPointerMatmulCase &c) {
  using namespace tensorcores;
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  std::vector<double> a = randomValues(c.in, size_t(c.M) * c.K, rng),
                      b = randomValues(c.in, size_t(c.K) * c.N, rng);
  std::vector<double> bStored(b.size());
  for (int k = 0; k < c.K; ++k)
    for (int n = 0; n < c.N; ++n)
      bStored[c.bColumns ? size_t(n) * c.K + k : size_t(k) * c.N + n] = b[size_t(k) * c.N + n];
  Encoded ae = encode(c.in, a), be = encode(c.in, bStored);
  Buffer da = uploadBytes<Buffer>(ae.raw), db = uploadBytes<Buffer>(be.raw);
  Buffer dc = poisonedBytes<Buffer>(size_t(c.M) * c.N * 4);
  auto blockPointers = blockPointerMatmulKernelOf();
  auto carried = carriedPointerMatmulKernelOf();
  Kernel &k = c.carriedPointers ? static_cast<Kernel &>(carried) : blockPointers;
  std::string in = "*" + ir::dtypeName(c.in);
  Specialization spec{.signature = {"*fp32", in, in, "i32", "i32", "i32", "i32", "i32", "i32"},
                      .constexprs = {c.BM, c.BN, c.BK, c.bColumns ? 1 : 0, c.stages},
                      .numWarps = c.warps};
  if (c.carriedPointers)
    spec.constexprs = {c.BM, c.BN, c.BK, c.stages};
  if (!c.arch.empty())
    spec.arch = c.arch;
  int ldb = c.bColumns ? c.K : c.N;
  std::initializer_list<KernelArg> args = {dc, da, db, c.M, c.N, c.K, c.K, ldb, c.N};
  int64_t grid = int64_t((c.M + c.BM - 1) / c.BM) * ((c.N + c.BN - 1) / c.BN);
  k.compile(spec.specializedFor(args)).launch(grid, stream, args);
  sync();
  std::vector<unsigned char> raw(size_t(c.M) * c.N * 4);
  dc.download(raw.data(), raw.size());
  std::vector<double> got = decode(ir::ScalarKind::F32, raw);
  MatmulCase like{.in = c.in, .K = c.K};
  double tol = matmulTolerance(like), rel = matmulRelativeTolerance(like);
  size_t bad = 0;
  std::ostringstream first;
  for (int m = 0; m < c.M; ++m)
    for (int n = 0; n < c.N; ++n) {
      double want = 0;
      for (int kk = 0; kk < c.K; ++kk)
        want += ae.values[size_t(m) * c.K + kk] *
                be.values[c.bColumns ? size_t(n) * c.K + kk : size_t(kk) * c.N + n];
      double g = got[size_t(m) * c.N + n];
      if (!(std::isfinite(g) && std::fabs(g - want) <= tol + rel * std::fabs(want)) && bad++ < 5)
        first << "  [" << m << ", " << n << "] got " << g << ", want " << want << "\n";
    }
  EXPECT_EQ(bad, 0u) << (c.carriedPointers ? "carried-pointer" : "block-pointer") << " matmul "
                     << c.M << "x" << c.N << "x" << c.K << " stages " << c.stages
                     << (c.bColumns ? " b column-major" : "") << ": " << bad << " wrong (seed "
                     << seed << "):\n"
                     << first.str();
}

// The shifted tile of an R x C fp32 tensor; expects zeros (or NaNs) outside the tensor along
// the checked dimensions.
template <typename Buffer>
void checkBlockPointerShift(CUstream stream, const std::function<void()> &sync, int R, int C,
                            int dr, int dc, bool checkCols, bool nanPad) {
  using namespace tensorcores;
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  Encoded in = encode(ir::ScalarKind::F32, randomValues(ir::ScalarKind::F32, size_t(R) * C, rng));
  Buffer din = uploadBytes<Buffer>(in.raw);
  Buffer dout = poisonedBytes<Buffer>(size_t(R) * C * 4);
  auto k = kernel("block_pointer_shift", blockPointerShiftKernel,
                  {"out", "in", "R", "C", "dr", "dc", "BR", "BC", "CHECK_COLS", "NAN_PAD"});
  Specialization spec{.signature = {"*fp32", "*fp32", "i32", "i32", "i32", "i32"},
                      .constexprs = {R, C, checkCols ? 1 : 0, nanPad ? 1 : 0}};
  std::initializer_list<KernelArg> args = {dout, din, R, C, dr, dc};
  k.compile(spec.specializedFor(args)).launch(1, stream, args);
  sync();
  std::vector<unsigned char> raw(size_t(R) * C * 4);
  dout.download(raw.data(), raw.size());
  std::vector<double> got = decode(ir::ScalarKind::F32, raw);
  size_t bad = 0;
  std::ostringstream first;
  for (int r = 0; r < R; ++r)
    for (int col = 0; col < C; ++col) {
      int sr = r + dr, sc = col + dc;
      bool inside = sr >= 0 && sr < R && sc >= 0 && sc < C;
      double g = got[size_t(r) * C + col];
      bool ok = inside ? g == in.values[size_t(sr) * C + sc]
                       : (nanPad ? std::isnan(g) : g == 0.0);
      if (!ok && bad++ < 5)
        first << "  [" << r << ", " << col << "] got " << g << "\n";
    }
  EXPECT_EQ(bad, 0u) << "block-pointer shift " << R << "x" << C << " by (" << dr << ", " << dc
                     << ")" << (checkCols ? " both checked" : " rows checked")
                     << (nanPad ? " NaN padding" : "") << " (seed " << seed << "):\n"
                     << first.str();
}

} // namespace tritium::testing::blockpointers
