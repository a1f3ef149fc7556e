// range(...).warp_specialize() and .ping_pong() without a GPU: where the pass gives a loop its
// producer warp group (and a persistent walk its two compute groups), and where it refuses and
// says why in the GIR; the hints change nothing in the interpreter; asking after the loop
// started is an error at the user's line.
#include "DotCases.h"
#include "PtxChecks.h"

#include "frontend/DSL.h"
#include "frontend/Kernel.h"
#include "interpreter/Interpreter.h"

#include <cmath>
#include <random>
#include <vector>

using namespace tritium;
using namespace tritium::dsl;
using tritium::testing::count;

namespace {

class WarpSpecializationTest : public tritium::testing::CompilerTest {};

// out[64, 64] = the sum over row tiles of x [rows, 64] (fp16), tiles read through a descriptor
// in a warp-specialized loop. NESTED: that loop inside another (1) or two others (2);
// STORE_FIRST: a store before it.
void tileSum(Ptr out, Ptr x, Int rows, int NESTED, int STORE_FIRST, int PING_PONG) {
  auto d = make_tensor_descriptor(x, {rows, 64}, {64, 1}, {64, 64});
  auto r = arange(0, 64), c = arange(0, 64);
  auto at = out + r(_, None) * 64 + c(None, _);
  if (STORE_FIRST)
    store(at, zeros({64, 64}, float32));
  auto acc = zeros({64, 64}, float32);
  auto walk = [&] {
    for (auto i : range(0, rows, 64, 3).warp_specialize().ping_pong(PING_PONG))
      acc = acc + cast(d.load({i, 0}), float32);
  };
  if (NESTED == 1) // the outer loop carries acc
    for (auto o : range(0, 2))
      walk();
  else if (NESTED == 2) // two loops deep
    for (auto o : range(0, 2))
      for (auto p : range(0, 1))
        walk();
  else
    walk();
  store(at, acc);
}

Kernel &tileSumKernel() {
  static auto k = kernel("tile_sum", tileSum,
                         {"out", "x", "rows", "NESTED", "STORE_FIRST", "PING_PONG"});
  return k;
}

Artifacts gir(int nested, int storeFirst, int pingPong, const std::string &arch = "sm_90a") {
  return tileSumKernel().compileTo({.signature = {"*fp32:16", "*fp16:16", "i32:16"},
                                    .constexprs = {nested, storeFirst, pingPong},
                                    .numWarps = 4,
                                    .arch = arch},
                                   Stage::GIR);
}

// x: `rows` random fp16 rows of 64, and the sum of its 64-row tiles (each element of a 64 x 64
// block over the tiles), in double.
struct RowTiles {
  tritium::testing::tensorcores::Encoded x;
  std::vector<double> sum;
};

RowTiles randomRowTiles(int rows, unsigned seed) {
  std::mt19937 rng(seed);
  RowTiles t{tritium::testing::tensorcores::encode(
                 ir::ScalarKind::F16, tritium::testing::tensorcores::randomValues(
                                          ir::ScalarKind::F16, size_t(rows) * 64, rng)),
             std::vector<double>(64 * 64, 0.0)};
  for (size_t e = 0; e < t.x.values.size(); ++e)
    t.sum[e % (64 * 64)] += t.x.values[e];
  return t;
}

TEST_F(WarpSpecializationTest, TheProducerWarpGroupOrTheReasonWhyNot) {
  Artifacts plain = gir(0, 0, 0);
  EXPECT_EQ(count(plain.gir, "warp_specialized = 1"), 1u) << plain.gir;
  EXPECT_EQ(count(plain.gir, "producer_warps = 4"), 1u);
  EXPECT_EQ(plain.producerWarps, 4);
  struct Case {
    int nested, storeFirst, pingPong;
    std::string arch, why;
  };
  for (const Case &c : {
           Case{1, 0, 0, "sm_90a", "the outer loop carries values, which the producer warp"},
           Case{2, 0, 0, "sm_90a",
                "only a loop at the kernel's top level, or in a top-level loop, is warp-spec"},
           Case{0, 1, 0, "sm_90a", "'store' before the loop: the producer warp runs that code"},
           Case{0, 0, 0, "sm_80", "the loop's tiles are not copied by TMA"},
       }) {
    SCOPED_TRACE(c.why);
    Artifacts a = gir(c.nested, c.storeFirst, c.pingPong, c.arch);
    EXPECT_EQ(a.producerWarps, 0);
    EXPECT_EQ(count(a.gir, "warp_specialized"), 0u);
    EXPECT_NE(a.gir.find("warp_specialize_skipped = \"" + c.why), std::string::npos) << a.gir;
  }
  // Ping-pong asks for two compute warp groups and two products.
  Artifacts pp = gir(0, 0, 1);
  EXPECT_EQ(count(pp.gir, "warp_specialized = 1"), 1u);
  EXPECT_NE(pp.gir.find("ping_pong_skipped = \"ping-pong takes two compute warp groups"),
            std::string::npos)
      << pp.gir;
}

TEST_F(WarpSpecializationTest, TheInterpreterRunsTheLoopAsItIs) {
  setInterpret(true);
  const int rows = 200; // four tiles, the last one partly outside the tensor (zeros)
  RowTiles x = randomRowTiles(rows, 7);
  const std::vector<double> &want = x.sum;
  auto in = tritium::testing::tensorcores::uploadBytes<interpreter::HostBuffer>(x.x.raw);
  auto out = tritium::testing::tensorcores::poisonedBytes<interpreter::HostBuffer>(64 * 64 * 4);
  tileSumKernel()
      .compile({.signature = {"*fp32", "*fp16", "i32"}, .constexprs = {0, 0, 1}, .numWarps = 4})
      .launch(1, nullptr, {KernelArg::pointer(out.ptr()), KernelArg::pointer(in.ptr()),
                           int32_t(rows)});
  std::vector<float> got(64 * 64);
  out.download(got.data(), got.size() * 4);
  resetInterpret();
  for (size_t e = 0; e < got.size(); ++e)
    ASSERT_NEAR(got[e], want[e], 1e-4) << "element " << e;
}

// out[t] (64 x 64 each) = the sum of x's row tiles for tile t of a persistent walk whose
// iterations two compute warp groups take in turn (.ping_pong() on the walk); VARYING: tile
// t's K loop stops t tiles short, so the trip count changes from tile to tile.
void tileWalk(Ptr out, Ptr x, Int rows, Int tiles, int VARYING) {
  auto d = make_tensor_descriptor(x, {rows, 64}, {64, 1}, {64, 64});
  auto r = arange(0, 64), c = arange(0, 64);
  for (auto t : range(program_id(0), tiles, num_programs(0)).ping_pong()) {
    Value hi = rows;
    if (VARYING)
      hi = rows - t * 64;
    auto acc = zeros({64, 64}, float32);
    for (auto i : range(0, hi, 64, 3).warp_specialize())
      acc = acc + cast(d.load({i, 0}), float32);
    store(out + t * 4096 + r(_, None) * 64 + c(None, _), acc);
  }
}

Kernel &tileWalkKernel() {
  static auto k = kernel("tile_walk", tileWalk, {"out", "x", "rows", "tiles", "VARYING"});
  return k;
}

TEST_F(WarpSpecializationTest, AlternateTilesOrTheReasonWhyNot) {
  auto compile = [](int varying, int warps, int cluster) {
    return tileWalkKernel().compileTo({.signature = {"*fp32:16", "*fp16:16", "i32:16", "i32"},
                                       .constexprs = {varying},
                                       .numWarps = warps,
                                       .clusterSize = cluster,
                                       .arch = "sm_90a"},
                                      Stage::PTX);
  };
  Artifacts two = compile(0, 4, 1);
  EXPECT_EQ(two.computeGroups, 2);
  EXPECT_EQ(count(two.gir, "ping_pong = 1"), 1u) << two.gir;
  EXPECT_NE(two.ptx.find(".reqntid 384"), std::string::npos);
  struct Case {
    int varying, warps, cluster;
    std::string why;
  };
  for (const Case &c : {
           Case{1, 4, 1, "the inner loop's bounds change from tile to tile"},
           Case{0, 8, 1, "alternate tiles take compute groups of one warp group each (num_warps 4)"},
           Case{0, 4, 2, "alternate tiles and clusters do not go together"},
       }) {
    SCOPED_TRACE(c.why);
    Artifacts a = compile(c.varying, c.warps, c.cluster);
    EXPECT_EQ(a.computeGroups, 1);
    EXPECT_EQ(count(a.gir, "warp_split = 1"), 1u) << a.gir; // the producer all the same
    EXPECT_NE(a.gir.find("ping_pong_skipped = \"" + c.why), std::string::npos) << a.gir;
  }
  // The interpreter runs the walk as written: 5 tiles on 2 programs, each tile's own sum.
  setInterpret(true);
  const int rows = 200, tiles = 5;
  RowTiles x = randomRowTiles(rows, 11);
  const std::vector<double> &sum = x.sum;
  auto in = tritium::testing::tensorcores::uploadBytes<interpreter::HostBuffer>(x.x.raw);
  auto out = tritium::testing::tensorcores::poisonedBytes<interpreter::HostBuffer>(
      size_t(tiles) * 64 * 64 * 4);
  tileWalkKernel()
      .compile({.signature = {"*fp32", "*fp16", "i32", "i32"}, .constexprs = {0}, .numWarps = 4})
      .launch(2, nullptr, {KernelArg::pointer(out.ptr()), KernelArg::pointer(in.ptr()),
                           int32_t(rows), int32_t(tiles)});
  std::vector<float> got(size_t(tiles) * 64 * 64);
  out.download(got.data(), got.size() * 4);
  resetInterpret();
  for (size_t e = 0; e < got.size(); ++e)
    ASSERT_NEAR(got[e], sum[e % (64 * 64)], 1e-4) << "element " << e;
}

// A loop's hints asked once the loop has run: warp_specialize() (HINT 0) or
// hoist_invariants() (HINT 1).
void lateAsk(Ptr out, Int n, int HINT) {
  auto loop = range(0, n);
  for (auto i : loop)
    store(out + i, 1.0f);
  if (HINT == 0)
    (void)std::move(loop).warp_specialize();
  else
    (void)std::move(loop).hoist_invariants(false);
}

TEST_F(WarpSpecializationTest, AskingAfterTheLoopStartedIsAnError) {
  auto k = kernel("late_ask", lateAsk, {"out", "n", "HINT"});
  const char *messages[] = {"warp_specialize() must be asked before the loop starts",
                            "hoist_invariants() must be asked before the loop starts"};
  for (int64_t hint : {0, 1}) {
    SCOPED_TRACE(messages[hint]);
    try {
      k.compileTo({.signature = {"*fp32", "i32"}, .constexprs = {hint}}, Stage::TIR);
      ADD_FAILURE() << "no error";
    } catch (const UserError &e) {
      EXPECT_NE(std::string(e.what()).find(messages[hint]), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("WarpSpecializationTest.cpp:"), std::string::npos)
          << e.what();
    }
  }
}

} // namespace
