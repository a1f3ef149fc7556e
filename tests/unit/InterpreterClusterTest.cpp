// Thread-block clusters in the CPU interpreter: cluster_rank, cluster_max and cluster_sum across
// the programs of a cluster (run at once, one thread each) against CPU references, a softmax
// whose rows are split over a cluster, and the mistakes that would hang a GPU (programs reaching
// different cluster reductions) or crash a peer (an out-of-bounds access) as UserErrors that end
// the run promptly. Kernels go through the TIR text, as CompiledKernel::launch interprets them.
#include "TestSupport.h"

#include "compiler/ir/Parser.h"
#include "compiler/ir/Verifier.h"
#include "frontend/Kernel.h"
#include "interpreter/Interpreter.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <thread>
#include <vector>

using namespace tritium;
using dsl::Int;
using dsl::Ptr;
using tritium::testing::freshSeed;

namespace {

class InterpreterClusterTest : public tritium::testing::CompilerTest {};

// The kernel's TIR as the launch interprets it: optimized, printed, parsed back, verified.
std::unique_ptr<ir::Function> tirOf(const Kernel &k, const Specialization &spec) {
  std::unique_ptr<ir::Function> fn =
      ir::parseTIR(k.compileTo(spec, Stage::TIR).tir, k.name() + ".tir");
  ir::verify(*fn, "InterpreterClusterTest");
  return fn;
}

interpreter::Arg ptrArg(const interpreter::HostBuffer &b) { return {int64_t(b.ptr())}; }

template <typename T> std::vector<T> download(const interpreter::HostBuffer &b) {
  std::vector<T> v(b.bytes() / sizeof(T));
  b.download(v.data(), b.bytes());
  return v;
}

// The UserError's message that `body` throws ("" and a failure otherwise). `body` runs on
// another thread, and the exception is turned into text there, so nothing of it is shared with
// the detached thread; a hang fails the whole test binary at once rather than blocking it.
std::string userErrorOf(const std::function<void()> &body) {
  auto done = std::make_shared<std::promise<std::string>>();
  std::future<std::string> result = done->get_future();
  std::thread([body, done] {
    std::string outcome = "expected a UserError, but the run succeeded";
    try {
      body();
    } catch (const UserError &e) {
      outcome = std::string("UserError: ") + e.what();
    } catch (const std::exception &e) {
      outcome = std::string("expected a UserError, got: ") + e.what();
    } catch (...) {
      outcome = "expected a UserError, got an exception of another type";
    }
    done->set_value(outcome);
  }).detach();
  if (result.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    std::fprintf(stderr, "InterpreterClusterTest: the interpreter hung; aborting\n");
    std::abort();
  }
  std::string outcome = result.get(), prefix = "UserError: ";
  if (outcome.rfind(prefix, 0) != 0) {
    ADD_FAILURE() << outcome;
    return "";
  }
  return outcome.substr(prefix.size());
}

bool sameFloat(float a, float b) { return std::isnan(a) ? std::isnan(b) : a == b; }

// y = softmax(x) row by row, against a double-precision reference.
void expectSoftmax(const std::vector<float> &x, const std::vector<float> &y, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    const float *row = &x[size_t(r * cols)];
    double m = -INFINITY, d = 0;
    for (int j = 0; j < cols; ++j)
      m = std::max(m, double(row[j]));
    for (int j = 0; j < cols; ++j)
      d += std::exp(double(row[j]) - m);
    for (int j = 0; j < cols; ++j)
      EXPECT_NEAR(y[size_t(r * cols + j)], std::exp(double(row[j]) - m) / d, 2e-6)
          << "[" << r << ", " << j << "]";
  }
}

// --- kernels ----------------------------------------------------------------------------------

void storeRanks(Ptr ranks, Ptr pids) {
  auto pid = dsl::program_id(0);
  dsl::store(ranks + pid, dsl::cluster_rank());
  dsl::store(pids + pid, pid);
}

// Integer reductions over value = pid*pid - 3*pid, and a sum that wraps at 32 bits.
void intReductions(Ptr sums, Ptr maxes, Ptr wrapped) {
  auto pid = dsl::program_id(0);
  auto value = pid * pid - pid * 3;
  dsl::store(sums + pid, dsl::cluster_sum(value));
  dsl::store(maxes + pid, dsl::cluster_max(value));
  dsl::store(wrapped + pid, dsl::cluster_sum((pid + 1) * 1500000000));
}

void floatReductions(Ptr sums, Ptr maxes, Ptr in) {
  auto pid = dsl::program_id(0);
  auto x = dsl::load(in + pid);
  dsl::store(sums + pid, dsl::cluster_sum(x));
  dsl::store(maxes + pid, dsl::cluster_max(x));
}

// Each row split over the programs of a cluster: BLOCK columns each, the row's maximum and
// denominator combined across the cluster; several rows per cluster.
void clusterSoftmax(Ptr out, Ptr in, Int nRows, Int n, int BLOCK) {
  auto cluster = dsl::program_id(0) / dsl::cluster_size();
  for (auto row : dsl::range(cluster, nRows, dsl::num_programs(0) / dsl::cluster_size())) {
    auto cols = dsl::cluster_rank() * BLOCK + dsl::arange(0, BLOCK);
    auto mask = cols < n;
    auto x = dsl::load(in + row * n + cols, mask, -INFINITY);
    auto m = dsl::cluster_max(dsl::max(x, 0));
    auto e = dsl::exp(x - m);
    auto d = dsl::cluster_sum(dsl::sum(e, 0));
    dsl::store(out + row * n + cols, e / d, mask);
  }
}

int gUnevenSumLine = 0, gEarlySumLine = 0, gLateMaxLine = 0, gOutOfBoundsLine = 0;

// Rank r reaches the cluster_sum r + 1 times: rank 0 finishes while rank 1 waits in it.
void unevenLoop(Ptr out) {
  for (auto i : dsl::range(0, dsl::cluster_rank() + 1)) {
    gUnevenSumLine = __LINE__ + 1;
    auto s = dsl::cluster_sum(i);
    dsl::store(out + dsl::program_id(0), s);
  }
}

// Rank 0 skips the loop and reaches the cluster_max while rank 1 is in the loop's cluster_sum.
void differentReductions(Ptr out) {
  for (auto i : dsl::range(0, dsl::cluster_rank())) {
    gEarlySumLine = __LINE__ + 1;
    dsl::store(out + dsl::program_id(0), dsl::cluster_sum(i));
  }
  gLateMaxLine = __LINE__ + 1;
  dsl::store(out + dsl::program_id(0), dsl::cluster_max(dsl::cluster_rank()));
}

// Each program sums its 4 elements across the cluster; the buffer is short by two elements, so
// the last program's unmasked load runs past its end while its peers wait in the cluster_sum.
void loadThenClusterSum(Ptr out, Ptr in) {
  auto pid = dsl::program_id(0);
  gOutOfBoundsLine = __LINE__ + 1;
  auto x = dsl::load(in + pid * 4 + dsl::arange(0, 4));
  dsl::store(out + pid, dsl::cluster_sum(dsl::sum(x, 0)));
}

void clusterOps(Ptr out) {
  auto pid = dsl::program_id(0);
  auto value = pid * 7 - 10;
  dsl::store(out + pid * 3, dsl::cluster_rank());
  dsl::store(out + pid * 3 + 1, dsl::cluster_sum(value));
  dsl::store(out + pid * 3 + 2, dsl::cluster_max(value));
}

void printer(Ptr in, int BLOCK) {
  auto x = dsl::load(in + dsl::arange(0, BLOCK));
  dsl::print("x", x + dsl::cast(dsl::program_id(0), "fp32"));
  dsl::print("sum", dsl::cluster_sum(dsl::sum(x, 0)));
}

} // namespace

// --- results ----------------------------------------------------------------------------------

TEST_F(InterpreterClusterTest, ClusterRankIsTheProgramIdModuloTheClusterSize) {
  auto k = tritium::kernel("store_ranks", storeRanks, {"ranks", "pids"});
  for (int clusterSize : {2, 4}) {
    SCOPED_TRACE("cluster size " + std::to_string(clusterSize));
    auto fn = tirOf(k, {.signature = {"*i32", "*i32"}, .clusterSize = clusterSize});
    const int grid = 12;
    interpreter::HostBuffer ranks(grid * 4), pids(grid * 4);
    ranks.fill32(0xffffffffu);
    pids.fill32(0xffffffffu);
    interpreter::run(*fn, grid, {ptrArg(ranks), ptrArg(pids)});
    std::vector<int32_t> r = download<int32_t>(ranks), p = download<int32_t>(pids);
    for (int pid = 0; pid < grid; ++pid) {
      EXPECT_EQ(p[size_t(pid)], pid);
      EXPECT_EQ(r[size_t(pid)], pid % clusterSize) << "program " << pid;
    }
  }
}

TEST_F(InterpreterClusterTest, IntegerSumAndMaxMatchEachCluster) {
  auto k = tritium::kernel("int_reductions", intReductions, {"sums", "maxes", "wrapped"});
  for (int clusterSize : {2, 4}) {
    SCOPED_TRACE("cluster size " + std::to_string(clusterSize));
    auto fn = tirOf(k, {.signature = {"*i32", "*i32", "*i32"}, .clusterSize = clusterSize});
    const int grid = 16;
    interpreter::HostBuffer sums(grid * 4), maxes(grid * 4), wrapped(grid * 4);
    interpreter::run(*fn, grid, {ptrArg(sums), ptrArg(maxes), ptrArg(wrapped)});
    std::vector<int32_t> s = download<int32_t>(sums), m = download<int32_t>(maxes),
                         w = download<int32_t>(wrapped);
    for (int pid = 0; pid < grid; ++pid) {
      int first = pid / clusterSize * clusterSize;
      int64_t sum = 0, max = std::numeric_limits<int64_t>::min();
      uint32_t wrappedSum = 0; // two's complement at 32 bits, as the kernel's i32
      for (int p = first; p < first + clusterSize; ++p) {
        int64_t value = int64_t(p) * p - 3 * p;
        sum += value;
        max = std::max(max, value);
        wrappedSum += uint32_t(p + 1) * 1500000000u;
      }
      EXPECT_EQ(s[size_t(pid)], sum) << "program " << pid;
      EXPECT_EQ(m[size_t(pid)], max) << "program " << pid;
      EXPECT_EQ(w[size_t(pid)], int32_t(wrappedSum)) << "program " << pid;
    }
  }
}

// Random values, with -inf in one cluster and NaN in another: max propagates NaN as the
// in-program reductions do, and every program of a cluster gets the same bits.
TEST_F(InterpreterClusterTest, FloatSumAndMaxMatchEachClusterWithInfAndNaN) {
  auto k = tritium::kernel("float_reductions", floatReductions, {"sums", "maxes", "in"});
  const int clusterSize = 4, grid = 16;
  auto fn = tirOf(k, {.signature = {"*fp32", "*fp32", "*fp32"}, .clusterSize = clusterSize});
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, 100.f);
  std::vector<float> x(grid);
  for (float &v : x)
    v = dist(rng);
  x[5] = -INFINITY;                               // cluster 1: max unaffected, sum -inf
  x[9] = std::numeric_limits<float>::quiet_NaN(); // cluster 2: NaN everywhere
  x[12] = x[13] = x[14] = x[15] = -INFINITY;      // cluster 3: all -inf
  interpreter::HostBuffer in(grid * 4), sums(grid * 4), maxes(grid * 4);
  in.upload(x.data(), grid * 4);
  interpreter::run(*fn, grid, {ptrArg(sums), ptrArg(maxes), ptrArg(in)});
  std::vector<float> s = download<float>(sums), m = download<float>(maxes);
  for (int pid = 0; pid < grid; ++pid) {
    int first = pid / clusterSize * clusterSize;
    double sum = 0, max = -INFINITY;
    for (int p = first; p < first + clusterSize; ++p) {
      double v = x[size_t(p)];
      sum += v;
      max = std::isnan(v) || std::isnan(max) ? NAN : std::max(max, v);
    }
    EXPECT_PRED2(sameFloat, s[size_t(pid)], float(sum)) << "program " << pid << ", seed " << seed;
    EXPECT_PRED2(sameFloat, m[size_t(pid)], float(max)) << "program " << pid << ", seed " << seed;
    EXPECT_EQ(std::memcmp(&s[size_t(pid)], &s[size_t(first)], 4), 0) << "program " << pid;
    EXPECT_EQ(std::memcmp(&m[size_t(pid)], &m[size_t(first)], 4), 0) << "program " << pid;
  }
  EXPECT_TRUE(std::isnan(m[9]));
  EXPECT_EQ(m[4], float(std::max({x[4], x[6], x[7]})));
  EXPECT_EQ(m[12], -INFINITY);
}

TEST_F(InterpreterClusterTest, RowsSplitOverAClusterMatchADoubleSoftmax) {
  auto k =
      tritium::kernel("cluster_softmax", clusterSoftmax, {"out", "in", "n_rows", "n", "BLOCK"});
  uint32_t seed = freshSeed();
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, 3.f);
  struct Case {
    int clusterSize, block, cols, rows, clusters;
  };
  // N not a multiple of BLOCK; the last programs of a cluster see some or none of a row.
  for (Case c : {Case{2, 64, 97, 7, 3}, Case{4, 32, 100, 9, 2}, Case{4, 32, 70, 5, 5}}) {
    SCOPED_TRACE("cluster size " + std::to_string(c.clusterSize) + ", " + std::to_string(c.rows) +
                 "x" + std::to_string(c.cols) + ", seed " + std::to_string(seed));
    auto fn = tirOf(k, {.signature = {"*fp32", "*fp32", "i32", "i32"},
                        .constexprs = {c.block},
                        .clusterSize = c.clusterSize});
    std::vector<float> x(size_t(c.rows * c.cols));
    for (float &v : x)
      v = dist(rng);
    interpreter::HostBuffer in(x.size() * 4), out(x.size() * 4);
    in.upload(x.data(), x.size() * 4);
    out.fill32(0x7fc00000u); // NaN: a row the kernel misses shows
    interpreter::run(*fn, c.clusters * c.clusterSize,
                     {ptrArg(out), ptrArg(in), {c.rows}, {c.cols}});
    expectSoftmax(x, download<float>(out), c.rows, c.cols);
  }
}

TEST_F(InterpreterClusterTest, ClusterOfOneIsTheIdentity) {
  auto k = tritium::kernel("cluster_ops", clusterOps, {"out"});
  auto fn = tirOf(k, {.signature = {"*i32"}});
  EXPECT_FALSE(fn->intAttr("cluster_size").has_value());
  const int grid = 5;
  interpreter::HostBuffer out(grid * 3 * 4);
  interpreter::run(*fn, grid, {ptrArg(out)});
  std::vector<int32_t> y = download<int32_t>(out);
  for (int pid = 0; pid < grid; ++pid) {
    EXPECT_EQ(y[size_t(pid * 3)], 0) << "program " << pid;
    EXPECT_EQ(y[size_t(pid * 3 + 1)], pid * 7 - 10) << "program " << pid;
    EXPECT_EQ(y[size_t(pid * 3 + 2)], pid * 7 - 10) << "program " << pid;
  }
}

// Programs of a cluster print at the same time: each line stays whole.
TEST_F(InterpreterClusterTest, PrintFromConcurrentProgramsKeepsLinesWhole) {
  auto k = tritium::kernel("printer", printer, {"in", "BLOCK"});
  const int block = 64, clusterSize = 4, grid = 8;
  auto fn = tirOf(k, {.signature = {"*fp32"}, .constexprs = {block}, .clusterSize = clusterSize});
  std::vector<float> x(block, 0.5f);
  interpreter::HostBuffer in(block * 4);
  in.upload(x.data(), block * 4);
  std::FILE *f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  interpreter::run(*fn, grid, {ptrArg(in)}, {.printTo = f});
  std::rewind(f);
  std::multiset<std::string> lines;
  char buf[256];
  while (std::fgets(buf, sizeof buf, f))
    lines.insert(buf);
  std::fclose(f);
  std::multiset<std::string> expected;
  for (int pid = 0; pid < grid; ++pid) {
    for (int e = 0; e < block; ++e)
      expected.insert("pid (" + std::to_string(pid) + ") idx (" + std::to_string(e) + ") x " +
                      std::to_string(0.5 + pid) + "\n");
    expected.insert("pid (" + std::to_string(pid) + ") sum " +
                    std::to_string(0.5 * block * clusterSize) + "\n");
  }
  EXPECT_EQ(lines, expected);
}

// --- mistakes ---------------------------------------------------------------------------------

TEST_F(InterpreterClusterTest, GridNotAMultipleOfTheClusterSizeIsAUserError) {
  auto k = tritium::kernel("store_ranks", storeRanks, {"ranks", "pids"});
  auto fn = tirOf(k, {.signature = {"*i32", "*i32"}, .clusterSize = 4});
  interpreter::HostBuffer ranks(64), pids(64);
  std::string msg = userErrorOf([&] { interpreter::run(*fn, 6, {ptrArg(ranks), ptrArg(pids)}); });
  EXPECT_NE(msg.find("'store_ranks'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("grid of 6 programs is not a multiple of the cluster size 4"),
            std::string::npos)
      << msg;
  EXPECT_EQ(download<int32_t>(ranks), std::vector<int32_t>(16, 0)) << "no program may run";
}

TEST_F(InterpreterClusterTest, ProgramFinishingWhileAPeerWaitsIsAUserError) {
  auto k = tritium::kernel("uneven_loop", unevenLoop, {"out"});
  auto fn = tirOf(k, {.signature = {"*i32"}, .clusterSize = 2});
  interpreter::HostBuffer out(4 * 4);
  auto start = std::chrono::steady_clock::now();
  std::string msg = userErrorOf([&] { interpreter::run(*fn, 4, {ptrArg(out)}); });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  std::string where = "InterpreterClusterTest.cpp:" + std::to_string(gUnevenSumLine) + ": error: ";
  EXPECT_EQ(msg.rfind(where, 0), 0u) << "expected '" << where << "' first, got: " << msg;
  EXPECT_NE(msg.find("cluster_sum: program 1 (rank 1 of cluster 0) reached it but program 0 "
                     "(rank 0 of cluster 0) finished without reaching it"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("on the GPU this hangs"), std::string::npos) << msg;
}

TEST_F(InterpreterClusterTest, ProgramsAtDifferentReductionsAreAUserError) {
  auto k = tritium::kernel("different_reductions", differentReductions, {"out"});
  auto fn = tirOf(k, {.signature = {"*i32"}, .clusterSize = 2});
  interpreter::HostBuffer out(4 * 4);
  std::string msg = userErrorOf([&] { interpreter::run(*fn, 4, {ptrArg(out)}); });
  std::string where = "InterpreterClusterTest.cpp:" + std::to_string(gLateMaxLine) + ": error: ";
  EXPECT_EQ(msg.rfind(where, 0), 0u) << "expected '" << where << "' first, got: " << msg;
  EXPECT_NE(msg.find("cluster_max: program 0 (rank 0 of cluster 0) reached it but program 1 "
                     "(rank 1 of cluster 0) reached cluster_sum at InterpreterClusterTest.cpp:" +
                     std::to_string(gEarlySumLine) + " instead"),
            std::string::npos)
      << msg;
}

// The failing program's error is the one reported, and its peers, waiting in the cluster_sum,
// stop instead of waiting for it. Clusters run in order: the first one completed.
TEST_F(InterpreterClusterTest, OutOfBoundsLoadInOneProgramEndsTheClusterWithItsError) {
  auto k = tritium::kernel("load_then_cluster_sum", loadThenClusterSum, {"out", "in"});
  for (int clusterSize : {2, 4}) {
    SCOPED_TRACE("cluster size " + std::to_string(clusterSize));
    auto fn = tirOf(k, {.signature = {"*fp32", "*fp32"}, .clusterSize = clusterSize});
    const int grid = 2 * clusterSize;
    std::vector<float> x(size_t(grid * 4 - 2), 1.f);
    interpreter::HostBuffer in(x.size() * 4), out(grid * 4);
    in.upload(x.data(), x.size() * 4);
    std::string msg = userErrorOf([&] { interpreter::run(*fn, grid, {ptrArg(out), ptrArg(in)}); });
    std::string where =
        "InterpreterClusterTest.cpp:" + std::to_string(gOutOfBoundsLine) + ": error: ";
    EXPECT_EQ(msg.rfind(where, 0), 0u) << "expected '" << where << "' first, got: " << msg;
    EXPECT_NE(msg.find("load out of bounds in program " + std::to_string(grid - 1)),
              std::string::npos)
        << msg;
    std::vector<float> y = download<float>(out);
    for (int pid = 0; pid < clusterSize; ++pid)
      EXPECT_EQ(y[size_t(pid)], 4.f * float(clusterSize)) << "program " << pid;
  }
}

// The user's path: CompiledKernel::launch in interpret mode, on the persistent grid.
TEST_F(InterpreterClusterTest, LaunchInInterpretModeRunsClusters) {
  struct ScopedInterpret {
    ScopedInterpret() { setInterpret(true); }
    ~ScopedInterpret() { resetInterpret(); }
  } interpret;
  auto k =
      tritium::kernel("cluster_softmax", clusterSoftmax, {"out", "in", "n_rows", "n", "BLOCK"});
  CompiledKernel &c = k.compile(
      {.signature = {"*fp32", "*fp32", "i32", "i32"}, .constexprs = {32}, .clusterSize = 4});
  const int rows = 6, cols = 113;
  std::vector<float> x(size_t(rows * cols));
  std::mt19937 rng(freshSeed());
  std::normal_distribution<float> dist(0.f, 3.f);
  for (float &v : x)
    v = dist(rng);
  interpreter::HostBuffer in(x.size() * 4), out(x.size() * 4);
  in.upload(x.data(), x.size() * 4);
  int64_t grid = c.persistentGrid(rows);
  EXPECT_EQ(grid % 4, 0) << grid;
  c.launch(grid, nullptr, {out, in, rows, cols});
  expectSoftmax(x, download<float>(out), rows, cols);
}
