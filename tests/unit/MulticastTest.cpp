// desc.load(offsets, multicast) without a GPU: where gpu/ChooseMulticastCopies.cpp splits a
// tile's TMA copy over the programs of a cluster and where it says why not, the PTX of the
// cluster-wide ring, and the interpreter's check that every program of a cluster loads the same
// tile (on the GPU a mismatch gives wrong tiles or hangs).
#include "DotCases.h"
#include "MulticastCases.h"
#include "PtxChecks.h"

#include "frontend/DSL.h"
#include "frontend/Kernel.h"
#include "interpreter/Interpreter.h"

#include <random>
#include <vector>

using namespace tritium;
using namespace tritium::dsl;
using tritium::testing::count;
using tritium::testing::clustertiles::clusterTileSumKernel;
using tritium::testing::clustertiles::runClusterTileSum;

namespace {

class MulticastTest : public tritium::testing::CompilerTest {};

// x16: x's base is known to lie on 16 bytes, as TMA needs.
Specialization spec(int cluster, int rows, int ws, bool x16 = true) {
  return {.signature = {"*fp32:16", x16 ? "*fp16:16" : "*fp16", "i32:16"},
          .constexprs = {rows, ws, 0},
          .numWarps = 4,
          .clusterSize = cluster,
          .arch = "sm_90a"};
}

TEST_F(MulticastTest, AWarpSpecializedRingSplitsTheTileOverTheCluster) {
  Artifacts a = clusterTileSumKernel().compileTo(spec(2, 64, 1), Stage::PTX);
  EXPECT_EQ(count(a.gir, "multicast_copies = 2"), 1u) << a.gir;
  // Each program's copy is half the tile's rows: the box is 64 columns by 32 rows.
  EXPECT_EQ(a.tensorMaps, "fp16 a1 dims=64,a2 strides=128 box=64,32 swizzle=0") << a.tensorMaps;
  EXPECT_EQ(count(a.ptx, ".reqnctapercluster 2, 1, 1"), 1u);
  EXPECT_EQ(count(a.ptx, "bytes.multicast::cluster ["), 1u) << a.ptx;
  // The stage's bytes are the whole tile's (64 x 64 x 2): both halves land in each program.
  EXPECT_NE(a.ptx.find("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r"), std::string::npos);
  // "empty" counts the compute warps of both programs; each warp releases both programs'.
  EXPECT_EQ(count(a.ptx, "], 8;"), 3u) << a.ptx; // one per stage
  EXPECT_EQ(count(a.ptx, "mapa.shared::cluster.u32"), 1u);
  EXPECT_EQ(count(a.ptx, "mbarrier.arrive.shared::cluster.b64"), 1u);
  // The cluster meets after the mbarriers' set-up and before they are retired.
  EXPECT_EQ(count(a.ptx, "barrier.cluster.arrive"), 2u);
  EXPECT_EQ(count(a.ptx, "barrier.cluster.wait"), 2u);
  tritium::testing::expectAssembles(a, "sm_90a");
}

TEST_F(MulticastTest, ElsewhereTheTileIsCopiedWholeAndTheGirSaysWhy) {
  struct Case {
    Specialization s;
    std::string why;
  };
  for (const Case &c : {
           Case{spec(1, 64, 1), "the kernel has no clusters (cluster size 1)"},
           Case{spec(2, 64, 0), "its ring has no producer warp group"},
           Case{spec(2, 64, 1, false), "the tile is not a TMA copy"},
       }) {
    SCOPED_TRACE(c.why);
    Artifacts a = clusterTileSumKernel().compileTo(c.s, Stage::GIR);
    EXPECT_EQ(count(a.gir, "multicast_copies"), 0u) << a.gir;
    EXPECT_NE(a.gir.find("multicast_skipped = \"" + c.why), std::string::npos) << a.gir;
  }
}

// out = a [64, K] x b [K, 64] (bf16), b's tiles of BK rows multicast: wgmma reads them in
// place, so they are swizzled, and a slice must hold whole 8-row swizzle patterns.
void clusterDot(Ptr out, Ptr a, Ptr b, Int K, int BK) {
  auto ad = make_tensor_descriptor(a, {64, K}, {K, 1}, {64, BK});
  auto bd = make_tensor_descriptor(b, {K, 64}, {64, 1}, {BK, 64});
  auto acc = zeros({64, 64}, float32);
  for (auto k : range(0, K, BK, 3).warp_specialize())
    acc = dot(ad.load({0, k}), bd.load({k, 0}, multicast), acc);
  auto r = arange(0, 64), c = arange(0, 64);
  store(out + r(_, None) * 64 + c(None, _), acc);
}

TEST_F(MulticastTest, ASwizzledSliceHoldsWholeSwizzlePatterns) {
  static auto k = kernel("cluster_dot", clusterDot, {"out", "a", "b", "K", "BK"});
  auto gir = [&](int cluster) {
    return k
        .compileTo({.signature = {"*fp32:16", "*bf16:16", "*bf16:16", "i32:16"},
                    .constexprs = {16},
                    .numWarps = 4,
                    .clusterSize = cluster,
                    .arch = "sm_90a"},
                   Stage::GIR)
        .gir;
  };
  std::string two = gir(2), four = gir(4);
  EXPECT_EQ(count(two, "multicast_copies = 2"), 1u) << two;
  EXPECT_NE(four.find("multicast_skipped = \"a slice of 4 rows is not a multiple of the "
                      "swizzle's 8\""),
            std::string::npos)
      << four;
}

TEST_F(MulticastTest, TheInterpreterLoadsTheTileInEveryProgram) {
  setInterpret(true);
  const int rows = 200; // four tiles, the last one partly outside the tensor (zeros)
  std::mt19937 rng(11);
  auto x = tritium::testing::clustertiles::tileSumInput(rows, rng);
  std::vector<float> got = runClusterTileSum<interpreter::HostBuffer>(2, 4, 0, x.raw, rows);
  resetInterpret();
  for (size_t e = 0; e < got.size(); ++e)
    ASSERT_NEAR(got[e], x.want[e % (64 * 64)], 1e-4) << "element " << e;
}

TEST_F(MulticastTest, ProgramsOfAClusterLoadingDifferentTilesIsAnError) {
  setInterpret(true);
  const int rows = 128;
  std::vector<unsigned char> x(size_t(rows) * 64 * 2, 0);
  try {
    runClusterTileSum<interpreter::HostBuffer>(2, 2, 1, x, rows);
    ADD_FAILURE() << "no error";
  } catch (const UserError &e) {
    std::string what = e.what();
    EXPECT_NE(what.find("load of a tensor descriptor with multicast: program 0 (rank 0 of its "
                        "cluster) loads the tile at [0, 0] but program 1 (rank 1) at [1, 0]"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("MulticastCases.h:"), std::string::npos) << what; // the load's line
  }
  resetInterpret();
}

} // namespace
