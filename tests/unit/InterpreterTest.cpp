// The CPU interpreter (TRITIUM_INTERPRET=1) runs without a GPU, so these tests run everywhere:
// every softmax test of tests/gpu/SoftmaxGpuTest.cpp again through the interpreter, a property
// test over random shapes against the double-precision reference, out-of-bounds accesses as
// UserErrors naming the op's line, loops with carried values, integer ops, and print.
#include "SoftmaxProblem.h"
#include "TestSupport.h"

#include "compiler/ir/Parser.h"
#include "compiler/ir/Verifier.h"
#include "kernels/Softmax.h"
#include "kernels/SoftmaxReference.h"
#include "frontend/Kernel.h"
#include "interpreter/Interpreter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <sstream>
#include <vector>

using namespace tritium;
using tritium::testing::freshSeed;
using tritium::testing::SoftmaxShape;
using Shape = SoftmaxShape;
using dsl::Int;
using dsl::Ptr;
using tritium::testing::bitsOf;
using tritium::testing::kPoison;

namespace {

using HostProblem = tritium::testing::SoftmaxProblem<interpreter::HostBuffer>;

// Each test runs with interpret mode on and its own cache; the mode is reset afterwards.
class InterpreterTest : public tritium::testing::CompilerTest {
protected:
  void SetUp() override { setInterpret(true); }
  void TearDown() override { resetInterpret(); }

  static CompiledKernel &kernelFor(int64_t cols) {
    return kernels::softmaxKernel().compile(kernels::softmaxSpecialization(cols));
  }

  void runShape(const Shape &s) {
    SCOPED_TRACE("shape " + std::to_string(s.rows) + "x" + std::to_string(s.cols));
    HostProblem p(s, freshSeed());
    p.launch(kernelFor(s.cols), nullptr);
    p.check();
  }
};

} // namespace

// --- SoftmaxGpuTest, interpreted --------------------------------------------------------------

TEST_F(InterpreterTest, Tutorial1823x781) { runShape({1823, 781}); }

TEST_F(InterpreterTest, SingleColumn) { runShape({100, 1}); }

TEST_F(InterpreterTest, TinyRows37x3) { runShape({37, 3}); }

TEST_F(InterpreterTest, Rows64x1000) { runShape({64, 1000}); }

// The GPU test's 4096 rows, fewer here: the interpreter is sequential on the CPU.
TEST_F(InterpreterTest, WideRows64x12288) { runShape({64, 12288}); }

TEST_F(InterpreterTest, RowStrideLargerThanRow) {
  runShape({300, 781, 1024, 1024});
  runShape({300, 781, 1024, 896});
  runShape({300, 781, 800, 1024});
}

TEST_F(InterpreterTest, SameCompiledKernelLaunchedTwice) {
  uint32_t seed = freshSeed();
  CompiledKernel &k = kernelFor(781);
  // A GPU test in the same process may have loaded this specialization already; interpreting
  // must not load it.
  bool loadedBefore = k.loaded();
  HostProblem p({1823, 781}, seed);
  p.launch(k, nullptr);
  std::vector<float> first = p.check();
  p.poison();
  p.launch(k, nullptr);
  std::vector<float> second = p.check();
  EXPECT_EQ(std::memcmp(first.data(), second.data(), first.size() * 4), 0) << "seed " << seed;
  EXPECT_EQ(k.loaded(), loadedBefore) << "interpret mode must not load the kernel on a GPU";
  EXPECT_EQ(&kernelFor(781), &k);
}

// The CUDA-graph test's interpreter counterpart: the grid does not change the result, whether
// one program walks every row or each row has its own program.
TEST_F(InterpreterTest, GridSizeDoesNotChangeTheResult) {
  uint32_t seed = freshSeed();
  CompiledKernel &k = kernelFor(1000);
  HostProblem p({64, 1000}, seed);
  p.launch(k, nullptr, 1);
  std::vector<float> one = p.check();
  for (int64_t grid : {int64_t(7), int64_t(64), int64_t(200)}) {
    p.poison();
    p.launch(k, nullptr, grid);
    std::vector<float> other = p.check();
    EXPECT_EQ(std::memcmp(one.data(), other.data(), one.size() * 4), 0)
        << "grid " << grid << " differs from grid 1; seed " << seed;
  }
}

TEST_F(InterpreterTest, PersistentGridNeedsNoGpu) {
  CompiledKernel &k = kernelFor(781);
  EXPECT_GE(k.persistentGrid(1823), 1);
  EXPECT_LE(k.persistentGrid(1823), 1823);
  EXPECT_EQ(k.persistentGrid(1), 1);
}

// Random shapes: N not a power of two, N = 1, strides larger than N, rows from 1.
TEST_F(InterpreterTest, RandomShapesMatchTheReference) {
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  std::vector<int64_t> colsChoices = {1,   2,   3,   5,    17,   31,   33,   100,
                                      255, 257, 781, 1000, 1023, 1025, 2049, 3000};
  for (int trial = 0; trial < 16; ++trial) {
    int64_t cols = colsChoices[size_t(trial)];
    if (trial >= 4) // the first few fixed, the rest random
      cols = std::uniform_int_distribution<int64_t>(1, 3000)(rng);
    int64_t rows = std::uniform_int_distribution<int64_t>(1, 40)(rng);
    int64_t inPad = std::uniform_int_distribution<int64_t>(0, 2)(rng) == 0
                        ? 0
                        : std::uniform_int_distribution<int64_t>(1, 70)(rng);
    int64_t outPad = std::uniform_int_distribution<int64_t>(0, 2)(rng) == 0
                         ? 0
                         : std::uniform_int_distribution<int64_t>(1, 70)(rng);
    Shape s{rows, cols, cols + inPad, cols + outPad};
    SCOPED_TRACE("trial " + std::to_string(trial) + " seed " + std::to_string(seed) + ": " +
                 std::to_string(rows) + "x" + std::to_string(cols) + " strides " +
                 std::to_string(s.inStride) + "/" + std::to_string(s.outStride));
    HostProblem p(s, seed + uint32_t(trial));
    CompiledKernel &k = kernelFor(cols);
    int64_t grid = std::uniform_int_distribution<int64_t>(1, rows + 3)(rng);
    p.launch(k, nullptr, grid);
    p.check();
  }
}

// The same kernel in half precision: loads and stores of f16, math in f32.
TEST_F(InterpreterTest, HalfPrecisionSoftmax) {
  const int64_t rows = 8, cols = 100;
  std::vector<_Float16> x(size_t(rows * cols)), y(x.size());
  std::mt19937 rng(freshSeed());
  std::normal_distribution<float> dist(0.f, 2.f);
  for (auto &v : x)
    v = _Float16(dist(rng));
  interpreter::HostBuffer in(x.size() * 2), out(y.size() * 2);
  in.upload(x.data(), x.size() * 2);
  CompiledKernel &k =
      kernels::softmaxKernel().compile(kernels::softmaxSpecialization(cols, "fp16"));
  k.launch(k.persistentGrid(rows), nullptr,
           {out, in, int32_t(cols), int32_t(cols), int32_t(rows), int32_t(cols)});
  out.download(y.data(), y.size() * 2);
  for (int64_t r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    for (int64_t c = 0; c < cols; ++c)
      m = std::max(m, double(x[size_t(r * cols + c)]));
    for (int64_t c = 0; c < cols; ++c)
      s += std::exp(double(x[size_t(r * cols + c)]) - m);
    for (int64_t c = 0; c < cols; ++c) {
      double ref = std::exp(double(x[size_t(r * cols + c)]) - m) / s;
      // The kernel computes in f32 and rounds the result to f16 once: half an ulp (2^-11).
      EXPECT_NEAR(double(y[size_t(r * cols + c)]), ref, 1e-3 * ref + 1e-6)
          << "[" << r << ", " << c << "]";
    }
  }
}

// --- out-of-bounds accesses -------------------------------------------------------------------

namespace {

int gStoreLine = 0, gLoadLine = 0;

// Copies n elements in blocks of 128 but forgets the mask: the last block runs past the end.
void unmaskedCopy(Ptr out, Ptr in, Int n, int BLOCK) {
  auto offs = dsl::program_id(0) * BLOCK + dsl::arange(0, BLOCK);
  auto mask = offs < n;
  auto x = dsl::load(in + offs, mask, 0.0);
  gStoreLine = __LINE__ + 1;
  dsl::store(out + offs, x);
}

void unmaskedLoad(Ptr out, Ptr in, Int n, int BLOCK) {
  auto offs = dsl::program_id(0) * BLOCK + dsl::arange(0, BLOCK);
  auto mask = offs < n;
  gLoadLine = __LINE__ + 1;
  auto x = dsl::load(in + offs);
  dsl::store(out + offs, x, mask);
}

void maskedCopy(Ptr out, Ptr in, Int n, int BLOCK) {
  auto offs = dsl::program_id(0) * BLOCK + dsl::arange(0, BLOCK);
  auto mask = offs < n;
  dsl::store(out + offs, dsl::load(in + offs, mask, 0.0), mask);
}

CompiledKernel &compileCopy(Kernel &k) {
  return k.compile(Specialization{.signature = {"*fp32", "*fp32", "i32"}, .constexprs = {128}});
}

// Runs a copy of n = 200 floats over two programs of 128; expects a UserError at `line`.
void expectOutOfBounds(CompiledKernel &k, int line, const std::string &what) {
  const int n = 200;
  std::vector<float> x(n, 1.f);
  interpreter::HostBuffer in(n * 4), out(n * 4);
  in.upload(x.data(), n * 4);
  out.fill32(0);
  try {
    k.launch(2, nullptr, {out, in, n});
    ADD_FAILURE() << "no UserError for the unmasked " << what;
  } catch (const UserError &e) {
    std::string msg = e.what();
    std::string where = "InterpreterTest.cpp:" + std::to_string(line) + ": error: ";
    EXPECT_EQ(msg.rfind(where, 0), 0u) << "expected '" << where << "' first, got: " << msg;
    EXPECT_NE(msg.find(what + " out of bounds"), std::string::npos) << msg;
    EXPECT_NE(msg.find("past the end of the 800-byte buffer"), std::string::npos) << msg;
    EXPECT_NE(msg.find("program 1"), std::string::npos) << msg;
  }
  // Program 0 ran completely; program 1's failing store wrote nothing.
  std::vector<float> y(n);
  out.download(y.data(), n * 4);
  if (what == "store") {
    EXPECT_EQ(y[0], 1.f);
    EXPECT_EQ(y[127], 1.f);
    EXPECT_EQ(y[128], 0.f) << "a store that fails its bounds check must write nothing";
  }
}

} // namespace

TEST_F(InterpreterTest, UnmaskedStorePastTheEndIsAUserErrorAtItsLine) {
  auto k = tritium::kernel("unmasked_copy", unmaskedCopy, {"out", "in", "n", "BLOCK"});
  CompiledKernel &c = compileCopy(k); // traces the kernel, which records the line
  expectOutOfBounds(c, gStoreLine, "store");
}

TEST_F(InterpreterTest, UnmaskedLoadPastTheEndIsAUserErrorAtItsLine) {
  auto k = tritium::kernel("unmasked_load", unmaskedLoad, {"out", "in", "n", "BLOCK"});
  CompiledKernel &c = compileCopy(k);
  expectOutOfBounds(c, gLoadLine, "load");
}

TEST_F(InterpreterTest, MaskedAccessesPastTheEndAreFine) {
  auto masked = tritium::kernel("masked_copy", maskedCopy, {"out", "in", "n", "BLOCK"});
  CompiledKernel &k = compileCopy(masked);
  const int n = 200;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i)
    x[size_t(i)] = float(i) * 0.5f;
  interpreter::HostBuffer in(n * 4), out(n * 4);
  in.upload(x.data(), n * 4);
  k.launch(2, nullptr, {out, in, n});
  out.download(y.data(), n * 4);
  EXPECT_EQ(x, y);
}

TEST_F(InterpreterTest, UnregisteredMemoryIsRefused) {
  auto masked = tritium::kernel("masked_copy", maskedCopy, {"out", "in", "n", "BLOCK"});
  CompiledKernel &k = compileCopy(masked);
  std::vector<float> x(256), y(256);
  EXPECT_THROW(k.launch(1, nullptr, {y.data(), x.data(), 256}), UserError);
  interpreter::ScopedHostRange a(x.data(), x.size() * 4), b(y.data(), y.size() * 4);
  x[5] = 3.f;
  k.launch(1, nullptr, {y.data(), x.data(), 128});
  EXPECT_EQ(y[5], 3.f);
}

// --- loops, integers, print -------------------------------------------------------------------

namespace {

// A row's sum and maximum, and integer arithmetic: casts, wrapping division and remainder,
// where, minimum.
void rowStats(Ptr out, Ptr in, Ptr ints, Int n, int BLOCK) {
  auto cols = dsl::arange(0, BLOCK);
  auto pid = dsl::program_id(0);
  auto x = dsl::load(in + pid * n + cols, cols < n, 0.0);
  dsl::store(out + pid * 2, dsl::sum(x, 0));
  dsl::store(out + pid * 2 + 1, dsl::max(x, 0));
  auto i = dsl::cast(cols, "i64") * 3 - 7;
  auto q = dsl::where(i > 0, i / 2, i % 5);
  dsl::store(ints + pid * BLOCK + cols, dsl::cast(dsl::minimum(q, 20), "i32"));
}

} // namespace

TEST_F(InterpreterTest, ArithmeticMatchesAScalarReference) {
  auto k = tritium::kernel("row_stats", rowStats, {"out", "in", "ints", "n", "BLOCK"});
  CompiledKernel &c =
      k.compile(Specialization{.signature = {"*fp32", "*fp32", "*i32", "i32"}, .constexprs = {8}});
  const int rows = 3, n = 7;
  std::vector<float> x(rows * n);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(i % 11) - 4.f;
  interpreter::HostBuffer in(x.size() * 4), out(rows * 2 * 4), ints(rows * 8 * 4);
  in.upload(x.data(), x.size() * 4);
  c.launch(rows, nullptr, {out, in, ints, n});
  std::vector<float> stats(rows * 2);
  std::vector<int32_t> iv(rows * 8);
  out.download(stats.data(), stats.size() * 4);
  ints.download(iv.data(), iv.size() * 4);
  for (int r = 0; r < rows; ++r) {
    float s = 0, m = 0; // masked-off lanes load 0
    for (int c2 = 0; c2 < n; ++c2) {
      s += x[size_t(r * n + c2)];
      m = std::max(m, x[size_t(r * n + c2)]);
    }
    EXPECT_FLOAT_EQ(stats[size_t(2 * r)], s) << "row " << r;
    EXPECT_FLOAT_EQ(stats[size_t(2 * r + 1)], m) << "row " << r;
    for (int c2 = 0; c2 < 8; ++c2) {
      int64_t i = int64_t(c2) * 3 - 7;
      int64_t q = i > 0 ? i / 2 : i % 5; // C++ truncates as the GPU's sdiv/srem do
      EXPECT_EQ(iv[size_t(r * 8 + c2)], int32_t(std::min<int64_t>(q, 20))) << c2;
    }
  }
}

// Loop-carried values (the DSL's range() carries none yet; TIR does): a running sum and count.
TEST_F(InterpreterTest, LoopCarriedValuesFromTIRText) {
  const char *text = R"(kernel @carried(%out: ptr<f32>, %n: i32) {
  %0 = constant {value = 0} : i32
  %1 = constant {value = 1} : i32
  %2 = constant {value = 0.5} : f32
  %3, %4 = for %0, %n, %1, %2, %0 {num_stages = 1} : f32, i32 {
  ^body(%5: i32, %6: f32, %7: i32):
    %8 = cast %5 : f32
    %9 = add %6, %8 : f32
    %10 = add %7, %1 : i32
    yield %9, %10
  }
  store %out, %3
  %11 = addptr %out, %1 : ptr<f32>
  %12 = cast %4 : f32
  store %11, %12
}
)";
  std::unique_ptr<ir::Function> fn = ir::parseTIR(text, "carried.tir");
  ir::verify(*fn, "test");
  std::vector<float> y(2, -1.f);
  interpreter::ScopedHostRange range(y.data(), 8);
  interpreter::run(
      *fn, 1,
      {interpreter::Arg{int64_t(reinterpret_cast<uintptr_t>(y.data()))}, interpreter::Arg{10}});
  EXPECT_EQ(y[0], 45.5f);
  EXPECT_EQ(y[1], 10.f);
}

namespace {

void printer(Ptr in, int BLOCK) {
  auto cols = dsl::arange(0, BLOCK);
  auto x = dsl::load(in + cols);
  dsl::print("x", x * 2.0);
  dsl::print("row max", dsl::max(x, 0));
}

} // namespace

TEST_F(InterpreterTest, PrintWritesEachElementWithProgramAndIndex) {
  auto k = tritium::kernel("printer", printer, {"in", "BLOCK"});
  CompiledKernel &c =
      k.compile(Specialization{.signature = {"*fp32"}, .constexprs = {4}, .numWarps = 1});
  std::vector<float> x = {1.f, -2.f, 3.5f, 0.25f};
  interpreter::ScopedHostRange range(x.data(), 16);
  std::unique_ptr<ir::Function> fn = ir::parseTIR(c.artifacts().tir, "printer.tir");
  std::FILE *f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  interpreter::run(*fn, 2, {interpreter::Arg{int64_t(reinterpret_cast<uintptr_t>(x.data()))}},
                   {.printTo = f});
  std::rewind(f);
  std::string text;
  char buf[256];
  while (std::fgets(buf, sizeof buf, f))
    text += buf;
  std::fclose(f);
  EXPECT_EQ(text, "pid (0) idx (0) x 2.000000\n"
                  "pid (0) idx (1) x -4.000000\n"
                  "pid (0) idx (2) x 7.000000\n"
                  "pid (0) idx (3) x 0.500000\n"
                  "pid (0) row max 3.500000\n"
                  "pid (1) idx (0) x 2.000000\n"
                  "pid (1) idx (1) x -4.000000\n"
                  "pid (1) idx (2) x 7.000000\n"
                  "pid (1) idx (3) x 0.500000\n"
                  "pid (1) row max 3.500000\n");
}

TEST(InterpretSwitch, FollowsTheEnvironmentUnlessSet) {
  ::setenv("TRITIUM_INTERPRET", "1", 1);
  resetInterpret();
  EXPECT_TRUE(interpreting());
  setInterpret(false);
  EXPECT_FALSE(interpreting());
  ::unsetenv("TRITIUM_INTERPRET");
  resetInterpret();
  EXPECT_FALSE(interpreting());
  setInterpret(true);
  EXPECT_TRUE(interpreting());
  resetInterpret();
}
