// What the library's attention kernels compile to, without a GPU: the forward's products on
// wgmma with K and V through TMA, the decode's K and V tiles through cp.async rings in a
// contiguous cache, and ptxas takes every form without spills.
#include "PtxChecks.h"

#include "kernels/Attention.h"

#include <optional>
#include <regex>
#include <sstream>
#include "kernels/AttentionArguments.h"
#include "kernels/AttentionBackward.h"
#include "kernels/AttentionDecode.h"

using namespace tritium;
using tritium::testing::count;
using tritium::testing::expectAssembles;

namespace {

class AttentionPtxTest : public tritium::testing::CompilerTest {};

Artifacts compileDecode(bool paged, int64_t splits, const kernels::AttentionDecodePlan &plan,
                        int64_t headDim = 128) {
  static int32_t table = 0, lens = 0;
  kernels::AttentionDecodeArgs a{.seqLens = &lens, .blockTable = paged ? &table : nullptr,
                                 .pageSize = paged ? 16 : 0, .maxPages = 256, .batch = 4,
                                 .heads = 32, .kvHeads = 8, .maxSeqKV = 4096,
                                 .headDim = headDim};
  Specialization spec =
      kernels::attentionDecodeSpecialization(a, plan, splits, "sm_90a");
  // As a launch specializes it: 16-byte aligned pointers, one query token (":1"), 4 query heads
  // per KV head, every other size and stride a multiple of 16.
  for (size_t i = 0; i < spec.signature.size(); ++i)
    if (i < 9 || (i > 10 && i != 13))
      spec.signature[i] += ":16";
  spec.signature[10] += ":1";
  return kernels::attentionDecodeKernel().compileTo(spec, Stage::PTX);
}

// The forward for 4 x 32 x 4096 dense bf16 tensors, specialized as a launch would be.
// seqMajor: every tensor [batch, seq, heads, head_dim] (else [batch, heads, seq, head_dim]).
Artifacts compileForward(int64_t D, bool causal, int64_t windowLeft = -1, bool varlen = false,
                         kernels::Dtype dtype = kernels::Dtype::bf16,
                         std::optional<kernels::AttentionPlan> plan = std::nullopt,
                         bool vTransposed = false, bool seqMajor = false) {
  const int64_t B = 4, H = 32, S = 4096;
  static int32_t cu = 0;
  kernels::AttentionArgs a{.batch = B, .heads = H, .seqQ = S, .headDim = D, .causal = causal};
  a.dtype = dtype;
  a.vTransposed = vTransposed;
  a.windowLeft = windowLeft;
  if (varlen)
    a.cuSeqlensQ = a.cuSeqlensKV = &cu;
  // [B, H, S, D] or [B, S, H, D]; a transposed V [B, H, D, S].
  kernels::AttentionStrides st = seqMajor ? kernels::AttentionStrides{S * H * D, D, H * D}
                                          : kernels::AttentionStrides{H * S * D, S * D, D};
  kernels::AttentionStrides vs = vTransposed ? kernels::AttentionStrides{H * S * D, S * D, S} : st;
  kernels::AttentionStrides ks = st;
  if (seqMajor)
    a.qStrides = a.kStrides = a.vStrides = a.oStrides = st;
  int64_t kvRows = seqMajor ? B * S : B * H * S, vRows = B * H * D;
  if (varlen && vTransposed) { // the workspace's V^T and K, as the forward passes them
    int64_t width = kernels::varlenTransposedValuesWidth(B, S);
    a.kStrides = ks = {0, D, H * D};
    a.vStrides = vs = {0, D * width, width};
    a.totalKV = kvRows = width;
    vRows = H * D;
  }
  Specialization spec =
      kernels::attentionForwardSpecialization(a, plan ? *plan : kernels::planAttention(D, dtype),
                                              "sm_90a");
  KernelArg p = KernelArg::pointer(0x10000);
  int64_t left = windowLeft < 0 ? 2 * S : windowLeft, right = causal ? 0 : 2 * S;
  spec = spec.specializedFor({p,        p,        p,        p,        p,        p,        p,
                              1.0f,     1.0f,     S,        S,        H,        int64_t(1),
                              st.batch, st.head,  st.seq,   ks.batch, ks.head,  ks.seq,
                              vs.batch, vs.head,  vs.seq,   st.batch, st.head,  st.seq,
                              kvRows,   H * D,    vRows,    left,     right,    B});
  return kernels::attentionForwardKernel().compileTo(spec, Stage::PTX);
}

TEST_F(AttentionPtxTest, ForwardRunsOnWarpGroupsWithTmaKeysAndValues) {
  for (int64_t D : {64, 128})
    for (bool causal : {false, true}) {
      SCOPED_TRACE("head_dim " + std::to_string(D) + (causal ? " causal" : ""));
      Artifacts a = compileForward(D, causal);
      EXPECT_NE(a.ptx.find("wgmma.mma_async"), std::string::npos);
      EXPECT_NE(a.ptx.find("cp.async.bulk.tensor"), std::string::npos);
      expectAssembles(a, "sm_90a");
      // P reaches the second product in registers; both products stage nothing, so each is
      // waited for at its result's first use.
      EXPECT_EQ(count(a.gir, "a_regs = 1"), 1u) << a.gir;
      EXPECT_EQ(count(a.gir, "deferred_wait = 1"), 2u) << a.gir;
    }
  // A sliding window's loop starts past the keys no row of the program sees: the same
  // products and copies.
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "window 256, causal" : "window 256");
    Artifacts w = compileForward(128, causal, 256);
    EXPECT_NE(w.tir.find("WINDOW = 1"), std::string::npos);
    EXPECT_NE(w.ptx.find("wgmma.mma_async"), std::string::npos);
    EXPECT_NE(w.ptx.find("cp.async.bulk.tensor"), std::string::npos);
    expectAssembles(w, "sm_90a");
  }
  // head_dim 256: 128 x 64 score tiles beside a 128 x 256 accumulator, 2 stages.
  Artifacts wide = compileForward(256, true);
  EXPECT_NE(wide.ptx.find("wgmma.mma_async"), std::string::npos);
  expectAssembles(wide, "sm_90a");
  // fp8 e4m3: the products on wgmma's e4m3 form where their K rows are 128 bytes (V staged
  // K-major for the second). At head_dim 128 (128 keys a step) ptxas spills 116 bytes; the
  // bound keeps it from growing.
  for (int64_t D : {64, 128}) {
    SCOPED_TRACE("fp8 head_dim " + std::to_string(D));
    Artifacts f = compileForward(D, false, -1, false, kernels::Dtype::fp8e4m3);
    EXPECT_NE(f.ptx.find(".e4m3.e4m3"), std::string::npos);
    if (D == 64) {
      expectAssembles(f, "sm_90a");
    } else if (!tritium::testing::ptxasPath().empty()) {
      tritium::testing::PtxasResult r = tritium::testing::runPtxas(f.ptx, "sm_90a");
      ASSERT_EQ(r.exitCode, 0) << r.output;
      EXPECT_EQ(r.output.find("wgmma"), std::string::npos) << r.output;
      std::smatch m;
      ASSERT_TRUE(std::regex_search(r.output, m, std::regex("(\\d+) bytes spill stores")));
      EXPECT_LE(std::stoi(m[1]), 128) << r.output;
    }
  }
  // fp8 with V stored transposed (as Triton's tutorial 06 passes it): the P V product reads
  // V's [D, 128] tile in place under a trans, K-major, on wgmma; V is not transposed through
  // shared memory, and its tiles are TMA copies too (at head_dim 64, Q's and K's rows of 64
  // bytes with SWIZZLE_64B).
  // (Also on one warp group of 64 queries, as bf16's head_dim-64 plan.)
  for (int64_t D : {64, 128})
    for (int form : {0, 1, 2}) {
      SCOPED_TRACE("fp8 V^T head_dim " + std::to_string(D) +
                   (form == 1 ? " producer" : form == 2 ? " one warp group" : ""));
      kernels::AttentionPlan plan{.blockM = 128, .blockN = 128, .numWarps = 8, .numStages = 2,
                                  .warpSpecialize = form == 1};
      if (form == 2)
        plan = {.blockM = 64, .blockN = 128, .numWarps = 4, .numStages = 2};
      Artifacts f = compileForward(D, false, -1, false, kernels::Dtype::fp8e4m3, plan, true);
      EXPECT_EQ(count(f.gir, "wgmma = 1"), 2u) << f.gir;
      EXPECT_EQ(count(f.gir, "b_k_major = 1"), 2u) << f.gir;
      EXPECT_EQ(f.gir.find("smem_b ="), std::string::npos) << f.gir;
      EXPECT_EQ(count(f.gir, "tensor_map = "), 2u) << f.gir;
      EXPECT_NE(f.ptx.find("wgmma.mma_async.sync.aligned.m64n" + std::to_string(D) +
                           "k32.f32.e4m3.e4m3"),
                std::string::npos);
      expectAssembles(f, "sm_90a");
    }
  // Varlen batches read K and V through pointers (cp.async), the products still on wgmma.
  Artifacts v = compileForward(128, true, -1, true);
  EXPECT_NE(v.tir.find("VARLEN = 1"), std::string::npos);
  EXPECT_NE(v.ptx.find("wgmma.mma_async"), std::string::npos);
  EXPECT_NE(v.ptx.find("cp.async.cg.shared.global"), std::string::npos);
  expectAssembles(v, "sm_90a");
}

// With a producer warp group: it issues the K/V copies and gives its registers to the compute
// warps, which wait on each stage's "full" mbarrier, release it on its "empty" one, meet at no
// CTA barrier in the loop (the barriers after it count them alone) and take turns at the
// products, group by group.
// The plan at head_dim 128; head_dim 64's own plan has no producer (below).
const kernels::AttentionPlan kProducerPlan{.blockM = 128, .blockN = 128, .numWarps = 8,
                                           .numStages = 2, .warpSpecialize = true};

TEST_F(AttentionPtxTest, ForwardWithAProducerWarp) {
  for (int64_t D : {64, 128})
    for (bool causal : {false, true}) {
      SCOPED_TRACE("head_dim " + std::to_string(D) + (causal ? " causal" : ""));
      Artifacts a = compileForward(D, causal, -1, false, kernels::Dtype::bf16, kProducerPlan);
      EXPECT_EQ(count(a.gir, "warp_specialized = 1"), 1u) << a.gir;
      EXPECT_EQ(a.producerWarps, 4);
      EXPECT_NE(a.ptx.find(".reqntid 384"), std::string::npos);
      EXPECT_NE(a.ptx.find("setmaxnreg.dec.sync.aligned.u32 24;"), std::string::npos);
      EXPECT_NE(a.ptx.find("setmaxnreg.inc.sync.aligned.u32 240;"), std::string::npos);
      EXPECT_NE(a.ptx.find("mbarrier.arrive.shared::cta.b64"), std::string::npos);
      // The ring's two CTA barriers before the split; after it, the compute warps' alone.
      EXPECT_EQ(count(a.ptx, "bar.sync \t0;"), 2u);
      EXPECT_NE(a.ptx.find("bar.sync \t1, 256;"), std::string::npos);
      // This plan asks for no turns (named barriers 2 and 3; the planner's does, below).
      EXPECT_EQ(count(a.gir, "ping_pong = 1"), 0u);
      EXPECT_EQ(a.ptx.find("bar.arrive"), std::string::npos);
      // The softmax step: one fused multiply-add and one ex2.approx.ftz per score (the scale
      // folded in, fp fusion on), 16 x 128 x 128 / 256 of each per step; the dense keys (a
      // multiple of 128) need no bound mask, so only the causal form selects.
      EXPECT_GE(count(a.ptx, "ex2.approx.ftz.f32"), 64u);
      EXPECT_EQ(count(a.ptx, "ex2.approx.f32"), 0u);
      EXPECT_GE(count(a.ptx, "fma.rn.f32"), 64u);
      EXPECT_EQ(count(a.ptx, "selp.f32") >= 64, causal);
      EXPECT_NE(a.ptx.find("cp.async.bulk.tensor"), std::string::npos);
      expectAssembles(a, "sm_90a");
    }
  // Varlen K and V are copied per thread: no producer warp.
  Artifacts v = compileForward(128, false, -1, true);
  EXPECT_EQ(v.producerWarps, 0);
  EXPECT_EQ(count(v.gir, "warp_specialized"), 0u);
}

// The planner's plan at head_dim 128: the compute groups take turns at the scores' product
// alone (FlashAttention-3's scheduler barrier): one hand-over a step, right after the scores'
// 8 wgmma (128 / 16 steps of K) and before anything waits for them; P V is issued outside the
// turn (notes/attention.md, "Turns at the scores' product").
TEST_F(AttentionPtxTest, ThePlanTakesTurnsAtTheScoresProductAlone) {
  EXPECT_TRUE(kernels::planAttention(128).pingPong);
  EXPECT_FALSE(kernels::planAttention(64).pingPong);
  EXPECT_FALSE(kernels::planAttention(128, kernels::Dtype::bf16, false).pingPong);
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "");
    Artifacts a = compileForward(128, causal);
    EXPECT_EQ(count(a.gir, "ping_pong = 1"), 1u) << a.gir;
    EXPECT_EQ(count(a.ptx, "bar.arrive"), 1u);
    size_t pass = a.ptx.find("bar.arrive");
    ASSERT_NE(pass, std::string::npos);
    // The hand-over follows the scores' commit directly (one basic block: fence, 8 products,
    // commit, hand-over, then their wait).
    size_t commit = a.ptx.rfind("wgmma.commit_group", pass);
    size_t fence = a.ptx.rfind("wgmma.fence", commit);
    ASSERT_NE(fence, std::string::npos);
    std::string between = a.ptx.substr(commit, pass - commit);
    EXPECT_EQ(between.find(';', between.find(';') + 1), std::string::npos) << between;
    EXPECT_EQ(count(a.ptx.substr(fence, commit - fence), "wgmma.mma_async"), 8u);
    EXPECT_EQ(a.ptx.find("wgmma.", pass), a.ptx.find("wgmma.wait_group.sync.aligned 0;", pass));
    EXPECT_NE(a.ptx.find("bar.sync 2, 256;"), std::string::npos);
    expectAssembles(a, "sm_90a");
  }
}

// Persistent plans (AttentionPlan::persistent): head_dim 128's with the producer splits the
// warps once, before the tile walk (one setmaxnreg pair; the producer's lane walks the tiles
// too), the ring's iterations counted across tiles; head_dim 64's (no producer) walks its
// tiles on one warp group without spills.
TEST_F(AttentionPtxTest, PersistentPlansWalkTheirTiles) {
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "");
    kernels::AttentionPlan plan = kernels::planAttention(128);
    plan.persistent = true;
    Artifacts a = compileForward(128, causal, -1, false, kernels::Dtype::bf16, plan);
    EXPECT_EQ(count(a.gir, "warp_split = 1"), 1u) << a.gir;
    EXPECT_EQ(count(a.gir, "warp_specialized = 1"), 1u);
    EXPECT_EQ(count(a.ptx, "setmaxnreg.dec"), 1u);
    EXPECT_EQ(count(a.ptx, "setmaxnreg.inc"), 1u);
    EXPECT_NE(a.ptx.find("bar.sync \t1, 256;"), std::string::npos);
    EXPECT_EQ(a.ptx.find("bar.sync \t0;", a.ptx.find("setmaxnreg.inc")), std::string::npos);
    EXPECT_NE(a.ptx.find("cp.async.bulk.tensor"), std::string::npos);
    // The walk keeps a tile's rows and addresses inside (hoist_invariants(false)): LLVM's LICM,
    // which kept them live across the K loop, is off there alone, and ptxas spills nothing
    // (156 bytes non-causal and 180 causal with them hoisted; docs/notes/attention.md,
    // "Persistent forward").
    EXPECT_EQ(count(a.tir, "no_hoist = 1"), 1u) << a.tir;
    EXPECT_EQ(count(a.llvm, "!{!\"llvm.licm.disable\"}"), 1u) << a.llvm;
    if (!tritium::testing::ptxasPath().empty()) {
      tritium::testing::PtxasResult r = tritium::testing::runPtxas(a.ptx, "sm_90a");
      ASSERT_EQ(r.exitCode, 0) << r.output;
      size_t at = r.output.find(" bytes spill stores");
      ASSERT_NE(at, std::string::npos) << r.output;
      size_t from = r.output.rfind(' ', at - 1) + 1;
      EXPECT_EQ(std::stoi(r.output.substr(from, at - from)), 0) << r.output;
    }
    kernels::AttentionPlan d64 = kernels::planAttention(64);
    d64.persistent = true;
    Artifacts b = compileForward(64, causal, -1, false, kernels::Dtype::bf16, d64);
    EXPECT_EQ(count(b.gir, "  for "), 1u) << b.gir; // the walk (the K loop is indented deeper)
    EXPECT_EQ(b.producerWarps, 0);
    expectAssembles(b, "sm_90a");
  }
}

// The plan a call takes without one given (planAttention(args, ...)): head_dim 128 in 16 bits on
// warp groups walks its tiles persistently where the keys are at most 1024, without a causal
// mask or a window, with dense K and V and fixed lengths; elsewhere a program per tile.
TEST_F(AttentionPtxTest, ShortUnmaskedSequencesWalkTheirTilesPersistently) {
  kernels::AttentionArgs a{.batch = 16, .heads = 16, .seqQ = 1024, .headDim = 128};
  EXPECT_TRUE(kernels::planAttention(a, true).persistent);
  EXPECT_FALSE(kernels::planAttention(a, false).persistent); // (no producer warp group)
  kernels::AttentionArgs fp16 = a;
  fp16.dtype = kernels::Dtype::fp16;
  fp16.kvHeads = 2;
  EXPECT_TRUE(kernels::planAttention(fp16, true).persistent);
  auto with = [&](auto change) {
    kernels::AttentionArgs b = a;
    change(b);
    return kernels::planAttention(b, true).persistent;
  };
  EXPECT_FALSE(with([](auto &b) { b.seqQ = 2048; }));
  EXPECT_FALSE(with([](auto &b) { b.seqKV = 1025; }));
  EXPECT_FALSE(with([](auto &b) { b.causal = true; }));
  EXPECT_FALSE(with([](auto &b) { b.windowLeft = 64; }));
  EXPECT_FALSE(with([](auto &b) { b.headDim = 64; }));
  EXPECT_FALSE(with([](auto &b) { b.dtype = kernels::Dtype::fp8e4m3; }));
  EXPECT_FALSE(with([](auto &b) { b.kStrides = {.batch = 0, .head = 128, .seq = 16 * 128}; }));
  static const int32_t cu[] = {0, 100, 300};
  EXPECT_FALSE(with([](auto &b) { b.cuSeqlensQ = cu; b.cuSeqlensKV = cu; }));
}

// Short causal sequences at head_dim 128 run the per-tile plan without the producer warp group
// and its turns (notes/attention.md, "Short causal sequences"); longer ones, windows and varlen
// batches keep them.
TEST_F(AttentionPtxTest, ShortCausalSequencesRunWithoutAProducer) {
  kernels::AttentionArgs a{.batch = 16, .heads = 16, .seqQ = 1024, .headDim = 128,
                           .causal = true};
  auto plan = [&](auto change) {
    kernels::AttentionArgs b = a;
    change(b);
    return kernels::planAttention(b, true);
  };
  kernels::AttentionPlan p = plan([](auto &) {});
  EXPECT_FALSE(p.warpSpecialize);
  EXPECT_FALSE(p.pingPong);
  EXPECT_FALSE(p.persistent);
  EXPECT_EQ(p.blockM, 128);
  EXPECT_EQ(p.blockN, 128);
  EXPECT_FALSE(plan([](auto &b) { b.seqQ = 512; b.dtype = kernels::Dtype::fp16; }).warpSpecialize);
  EXPECT_TRUE(plan([](auto &b) { b.seqQ = 2048; }).warpSpecialize);
  EXPECT_TRUE(plan([](auto &b) { b.seqKV = 1025; }).warpSpecialize);
  EXPECT_TRUE(plan([](auto &b) { b.windowLeft = 64; }).warpSpecialize);
  static const int32_t cu[] = {0, 100, 300};
  EXPECT_TRUE(plan([](auto &b) { b.cuSeqlensQ = cu; b.cuSeqlensKV = cu; }).warpSpecialize);
  EXPECT_TRUE(plan([](auto &b) { b.causal = false; }).warpSpecialize); // (walked persistently)
  // Other head dims keep their plans (head_dim 64 has no producer to drop).
  EXPECT_EQ(plan([](auto &b) { b.headDim = 64; }).blockM, 64);
  EXPECT_FALSE(plan([](auto &b) { b.headDim = 96; }).warpSpecialize); // (padded to 128)
}

// Head_dim 64's plan: 64 queries on one warp group (no producer), 128 keys a step, both
// products on wgmma, K and V by TMA, no spills, and shared memory for three programs a SM
// (notes/attention.md, "Head dim 64: programs side by side").
TEST_F(AttentionPtxTest, HeadDim64RunsProgramsSideBySide) {
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "");
    Artifacts a = compileForward(64, causal);
    EXPECT_EQ(a.producerWarps, 0);
    EXPECT_NE(a.ptx.find(".reqntid 128"), std::string::npos);
    EXPECT_EQ(count(a.gir, "wgmma = 1"), 2u) << a.gir;
    EXPECT_EQ(count(a.gir, "a_regs = 1"), 1u) << a.gir; // P from registers
    EXPECT_NE(a.ptx.find("cp.async.bulk.tensor"), std::string::npos);
    EXPECT_LE(a.sharedBytes, 76 * 1024) << a.gir;
    if (tritium::testing::ptxasPath().empty())
      GTEST_SKIP() << "ptxas was not found at configure time; the PTX was not assembled";
    tritium::testing::PtxasResult r = tritium::testing::runPtxas(a.ptx, "sm_90a");
    ASSERT_EQ(r.exitCode, 0) << r.output;
    EXPECT_EQ(r.output.find("wgmma"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("0 bytes spill stores"), std::string::npos) << r.output;
    std::smatch m;
    if (std::regex_search(r.output, m, std::regex("Used (\\d+) registers")))
      std::printf("head_dim 64%s: %s registers, %lld bytes of shared memory\n",
                  causal ? " causal" : "", m[1].str().c_str(), (long long)a.sharedBytes);
  }
}

// Head dims padded to a power of two (80 and 96 to 128) take the plan of their padded size,
// both products on warp groups, K and V through descriptors (TMA reads the padded columns as
// zeros). (At 32 the P V product, 32 columns, runs on mma.sync.)
TEST_F(AttentionPtxTest, ForwardAtOtherHeadDimsRunsOnWarpGroups) {
  for (int64_t D : {80, 96})
    for (bool causal : {false, true}) {
      SCOPED_TRACE("head_dim " + std::to_string(D) + (causal ? " causal" : ""));
      Artifacts a = compileForward(D, causal);
      EXPECT_NE(a.tir.find("HD = " + std::to_string(D)), std::string::npos);
      EXPECT_EQ(count(a.gir, "wgmma = 1"), 2u) << a.gir;
      EXPECT_NE(a.ptx.find("cp.async.bulk.tensor"), std::string::npos);
      expectAssembles(a, "sm_90a"); // without spills or serialized wgmma
    }
}

// fp8 with V transposed takes the same form at both head dims: 64 queries on one warp group,
// 128 keys a step, both products on wgmma with V's tiles read in place and P from registers,
// no spills, and little enough shared memory and registers for three programs a SM (72 KiB at
// head_dim 128: Q and two stages of K and V; P's staging took 8 KiB more before it came from
// registers).
// The scores' product computes its columns in P's 8-bit fragment order: K's rows arrive
// permuted through a 5-D TMA box, the softmax and the masks keep the scores' layout (no
// conversion through shared memory in the loop) and P needs no shuffle.
TEST_F(AttentionPtxTest, Fp8WithTransposedValuesRunsProgramsSideBySide) {
  for (int64_t D : {64, 128})
    for (bool causal : {false, true}) {
      SCOPED_TRACE("head_dim " + std::to_string(D) + (causal ? " causal" : ""));
      kernels::AttentionPlan plan = kernels::planAttention(D, kernels::Dtype::fp8e4m3, true, true);
      EXPECT_EQ(plan.blockM, 64);
      EXPECT_EQ(plan.blockN, 128);
      EXPECT_EQ(plan.numWarps, 4);
      EXPECT_FALSE(plan.warpSpecialize);
      Artifacts a = compileForward(D, causal, -1, false, kernels::Dtype::fp8e4m3, plan, true);
      EXPECT_EQ(a.producerWarps, 0);
      EXPECT_EQ(count(a.gir, "wgmma = 1"), 2u) << a.gir;
      EXPECT_NE(a.ptx.find("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3"),
                std::string::npos);
      EXPECT_NE(a.ptx.find("cp.async.bulk.tensor"), std::string::npos);
      EXPECT_LE(a.sharedBytes, 227 * 1024 / 3) << a.gir;
      EXPECT_EQ(count(a.gir, "a_regs = 1"), 1u) << a.gir;
      EXPECT_EQ(count(a.gir, "byte_fragment_columns = 1"), 1u) << a.gir;
      EXPECT_EQ(count(a.gir, "permute_rows = 2"), 1u) << a.gir;
      EXPECT_NE(a.ptx.find("cp.async.bulk.tensor.5d"), std::string::npos);
      EXPECT_EQ(count(a.gir, "convert_layout") - count(a.gir, "in_place = 1"), 2u)
          << a.gir; // the epilogue's, after the loop
      EXPECT_EQ(count(a.ptx, "shfl.sync.idx"), 0u);
      // ptxas is told of the programs a SM (it schedules the code for them): three at head_dim
      // 128, four at 64.
      EXPECT_EQ(plan.minProgramsPerSM, D == 128 ? 3 : 4);
      EXPECT_EQ(count(a.ptx, D == 128 ? ".minnctapersm 3" : ".minnctapersm 4"), 1u);
      expectAssembles(a, "sm_90a"); // without spills or serialized wgmma
    }
}

// fp8 at head_dim 256 with V transposed: 128 keys a step on two warp groups, which fit beside
// the [128, 256] query tile only in 8 bits (16-bit operands and V as stored keep 64 keys).
TEST_F(AttentionPtxTest, Fp8AtHeadDim256TakesTwiceTheKeys) {
  EXPECT_EQ(kernels::planAttention(256, kernels::Dtype::bf16, true, true).blockN, 64);
  EXPECT_EQ(kernels::planAttention(256, kernels::Dtype::fp8e4m3, true, false).blockN, 64);
  EXPECT_EQ(kernels::planAttention(256, kernels::Dtype::fp8e4m3, false, true).blockN, 64);
  kernels::AttentionPlan plan = kernels::planAttention(256, kernels::Dtype::fp8e4m3, true, true);
  EXPECT_EQ(plan.blockM, 128);
  EXPECT_EQ(plan.blockN, 128);
  EXPECT_EQ(plan.numWarps, 8);
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "non-causal");
    Artifacts a = compileForward(256, causal, -1, false, kernels::Dtype::fp8e4m3, plan, true);
    EXPECT_NE(a.ptx.find("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3"),
              std::string::npos);
    EXPECT_NE(a.ptx.find("wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3"),
              std::string::npos);
    EXPECT_EQ(count(a.gir, "a_regs = 1"), 1u) << a.gir;
    EXPECT_EQ(count(a.gir, "byte_fragment_columns = 1"), 1u) << a.gir;
    EXPECT_LE(a.sharedBytes, 227 * 1024) << a.gir;
    expectAssembles(a, "sm_90a"); // without spills or serialized wgmma
  }
}

// The backward on [batch, seq, heads, head_dim] tensors (FlashAttention's layout): dK/dV's Q
// and dO and dQ's K and V come through tensor descriptors (DESC = 2, a head's columns of one
// [batch x seq, heads x head_dim] matrix), and at head_dim 256 dK and dV are stored as whole
// tiles so too (BLOCK_STORE = 2).
TEST_F(AttentionPtxTest, SeqMajorBackwardReadsItsTilesThroughTma) {
  const int64_t B = 4, H = 32, KH = 8, S = 4096;
  KernelArg p = KernelArg::pointer(0x10000);
  for (int64_t D : {128, 256}) {
    SCOPED_TRACE("head_dim " + std::to_string(D));
    kernels::AttentionStrides qs{S * H * D, D, H * D}, ks{S * KH * D, D, KH * D};
    kernels::AttentionBackwardArgs a{.batch = B, .heads = H, .kvHeads = KH, .seqQ = S,
                                     .headDim = D, .causal = true, .qStrides = qs,
                                     .kStrides = ks, .vStrides = ks, .oStrides = qs};
    kernels::AttentionBackwardPlan plan = kernels::planAttentionBackward(D);
    kernels::BackwardPart part = plan.splitDkDv ? kernels::kDkOnly : kernels::kDkDv;
    int32_t left = int32_t(2 * S), right = 0;
    Artifacts dkdv = kernels::attentionBackwardDkDvKernel().compileTo(
        kernels::attentionBackwardSpecialization(a, true, plan, "sm_90a", part)
            .specializedFor({p, p, p, p, p, p, p, p, p, p, 1.0f, 1.0f, int32_t(S), int32_t(S),
                             int32_t(H), int32_t(H / KH), qs.batch, qs.head, qs.seq, ks.batch,
                             ks.head, ks.seq, ks.batch, ks.head, ks.seq, qs.batch, qs.head,
                             qs.seq, B * S, B * S, H * D, KH * D, left, right}),
        Stage::PTX);
    Artifacts dq = kernels::attentionBackwardDqKernel().compileTo(
        kernels::attentionBackwardSpecialization(a, false, plan, "sm_90a")
            .specializedFor({p, p, p, p, p, p, p, p, p, 1.0f, 1.0f, int32_t(S), int32_t(S),
                             int32_t(H), int32_t(H / KH), qs.batch, qs.head, qs.seq, ks.batch,
                             ks.head, ks.seq, ks.batch, ks.head, ks.seq, qs.batch, qs.head,
                             qs.seq, B * S, B * S, H * D, KH * D, left, right}),
        Stage::PTX);
    for (const Artifacts *x : {&dkdv, &dq}) {
      EXPECT_NE(x->tir.find("DESC = 2"), std::string::npos);
      EXPECT_NE(x->ptx.find("cp.async.bulk.tensor.2d"), std::string::npos);
      if (tritium::testing::ptxasPath().empty())
        continue;
      auto r = tritium::testing::runPtxas(x->ptx, "sm_90a"); // (spills as the other layout)
      EXPECT_EQ(r.exitCode, 0) << r.output;
      EXPECT_EQ(r.output.find("wgmma"), std::string::npos) << r.output; // none serialized
    }
    EXPECT_NE(dkdv.tir.find(D == 256 ? "BLOCK_STORE = 2" : "BLOCK_STORE = 0"), std::string::npos);
  }
  // A padded head dim (192 as 256) stores dK and dV through pointers: a whole [BN, 256] tile
  // at a head's columns would write the next head's first 64 (programs of the two heads run
  // in any order on a GPU, so the interpreter's in-order programs cannot show it).
  kernels::AttentionStrides ks{S * KH * 192, 192, KH * 192};
  kernels::AttentionBackwardArgs a{.batch = B, .heads = KH, .kvHeads = KH, .seqQ = S,
                                   .headDim = 192, .qStrides = ks, .kStrides = ks,
                                   .vStrides = ks, .oStrides = ks};
  kernels::AttentionBackwardPlan plan = kernels::planAttentionBackward(192);
  ASSERT_TRUE(plan.blockStore);
  Specialization spec =
      kernels::attentionBackwardSpecialization(a, true, plan, "sm_90a", kernels::kDkOnly);
  ASSERT_GE(spec.constexprs.size(), 2u);
  EXPECT_EQ(spec.constexprs[spec.constexprs.size() - 2], 0); // BLOCK_STORE (then HD)
  a.headDim = 256;
  a.qStrides = a.kStrides = a.vStrides = a.oStrides = {S * KH * 256, 256, KH * 256};
  spec = kernels::attentionBackwardSpecialization(a, true, plan, "sm_90a", kernels::kDkOnly);
  EXPECT_EQ(spec.constexprs[spec.constexprs.size() - 2], 2);
}

// Varlen batches packed [total_q, heads, head_dim]: dK/dV reads each sequence's Q and dO tiles
// through descriptors over the [total_q, heads x head_dim] matrix (+15% at head_dim 128 on an
// H200, docs/notes/attention.md, "Layouts through descriptors"; at 256, whose dV and dK split,
// pointers were faster); dQ its K and V where the call gives their total (totalKV), the
// producer warp group's form at head_dim 256. O laid out otherwise, and K and V without
// totalKV, go through pointers.
TEST_F(AttentionPtxTest, VarlenBackwardReadsQueriesThroughTma) {
  const int64_t B = 4, H = 32, KH = 8, S = 4096, total = 16000;
  KernelArg p = KernelArg::pointer(0x10000);
  const int32_t *cu = reinterpret_cast<const int32_t *>(uintptr_t(0x20000));
  for (int64_t D : {128, 256}) {
    SCOPED_TRACE("head_dim " + std::to_string(D));
    kernels::AttentionStrides qs{0, D, H * D}, ks{0, D, KH * D}; // (packed)
    kernels::AttentionBackwardArgs a{.batch = B, .heads = H, .kvHeads = KH, .seqQ = S,
                                     .headDim = D, .causal = true, .qStrides = qs,
                                     .kStrides = ks, .vStrides = ks, .oStrides = qs,
                                     .cuSeqlensQ = cu, .cuSeqlensKV = cu, .totalQ = total};
    kernels::AttentionBackwardPlan plan = kernels::planAttentionBackward(D);
    kernels::BackwardPart part = plan.splitDkDv ? kernels::kDkOnly : kernels::kDkDv;
    int32_t left = int32_t(2 * S), right = 0;
    Specialization dkdvSpec =
        kernels::attentionBackwardSpecialization(a, true, plan, "sm_90a", part);
    Artifacts dkdv = kernels::attentionBackwardDkDvKernel().compileTo(
        dkdvSpec.specializedFor({p, p, p, p, p, p, p, p, p, p, 1.0f, 1.0f, int32_t(total),
                                 int32_t(S), int32_t(H), int32_t(H / KH), qs.batch, qs.head,
                                 qs.seq, ks.batch, ks.head, ks.seq, ks.batch, ks.head, ks.seq,
                                 qs.batch, qs.head, qs.seq, total, total, H * D, KH * D, left,
                                 right}),
        Stage::PTX);
    EXPECT_NE(dkdv.tir.find(D == 256 ? "DESC = 0" : "DESC = 2"), std::string::npos);
    EXPECT_NE(dkdv.tir.find("WS = 0"), std::string::npos);
    EXPECT_EQ(dkdv.ptx.find("cp.async.bulk.tensor.2d") != std::string::npos, D == 128);
    if (!tritium::testing::ptxasPath().empty()) {
      auto r = tritium::testing::runPtxas(dkdv.ptx, "sm_90a");
      EXPECT_EQ(r.exitCode, 0) << r.output;
      EXPECT_EQ(r.output.find("wgmma"), std::string::npos) << r.output; // none serialized
    }
    const size_t desc = 7; // (BM, BN, D, STAGES, CAUSAL, WINDOW, VARLEN, DESC, ...)
    EXPECT_EQ(kernels::attentionBackwardSpecialization(a, false, plan, "sm_90a").constexprs[desc],
              0); // (dQ: no totalKV given)
    a.totalKV = total;
    Artifacts dq = kernels::attentionBackwardDqKernel().compileTo(
        kernels::attentionBackwardSpecialization(a, false, plan, "sm_90a")
            .specializedFor({p, p, p, p, p, p, p, p, p, 1.0f, 1.0f, int32_t(total), int32_t(S),
                             int32_t(H), int32_t(H / KH), qs.batch, qs.head, qs.seq, ks.batch,
                             ks.head, ks.seq, ks.batch, ks.head, ks.seq, qs.batch, qs.head,
                             qs.seq, total, total, H * D, KH * D, left, right}),
        Stage::PTX);
    EXPECT_NE(dq.tir.find("DESC = 2"), std::string::npos);
    EXPECT_NE(dq.tir.find(D == 256 ? "WS = 1" : "WS = 0"), std::string::npos);
    EXPECT_NE(dq.ptx.find("cp.async.bulk.tensor.2d"), std::string::npos);
    if (!tritium::testing::ptxasPath().empty()) {
      auto r = tritium::testing::runPtxas(dq.ptx, "sm_90a");
      EXPECT_EQ(r.exitCode, 0) << r.output;
      EXPECT_EQ(r.output.find("wgmma"), std::string::npos) << r.output;
    }
    // O (so dO) heads first: [heads, total_q, head_dim], not one matrix with Q's rows.
    a.oStrides = {0, total * D, D};
    ASSERT_GT(dkdvSpec.constexprs.size(), desc);
    EXPECT_EQ(dkdvSpec.constexprs[desc], D == 256 ? 0 : 2);
    EXPECT_EQ(kernels::attentionBackwardSpecialization(a, true, plan, "sm_90a", part)
                  .constexprs[desc],
              0);
  }
}

// K and V laid out [batch, seq, heads, head_dim] (FlashAttention's layout) come through tensor
// descriptors too, a head's [BN, D] tile at its columns of the [batch x seq, heads x head_dim]
// matrix: TMA copies, issued by the producer warp group where the plan has one.
TEST_F(AttentionPtxTest, SeqMajorKeysAndValuesComeThroughTma) {
  for (int64_t D : {64, 128})
    for (bool causal : {false, true}) {
      SCOPED_TRACE("head_dim " + std::to_string(D) + (causal ? " causal" : ""));
      Artifacts a =
          compileForward(D, causal, -1, false, kernels::Dtype::bf16, std::nullopt, false, true);
      EXPECT_NE(a.tir.find("KV_DESC = 2"), std::string::npos);
      EXPECT_NE(a.ptx.find("cp.async.bulk.tensor.2d"), std::string::npos);
      EXPECT_EQ(a.producerWarps, D == 128 ? 4 : 0);
      EXPECT_EQ(count(a.gir, "a_regs = 1"), 1u) << a.gir;
      expectAssembles(a, "sm_90a");
    }
}

// Varlen fp8 through the workspace: V^T, and K copied so that each sequence's first key row
// is a multiple of 16, come through tensor descriptors, so both tiles are TMA copies (K's as
// the 5-D box that permutes its rows for P's byte fragment) read in place by wgmma, with no
// byte stores of a transpose through shared memory (Q's tile, copied once, stays cp.async).
TEST_F(AttentionPtxTest, Fp8VarlenReadsItsWorkspaceThroughTma) {
  for (int64_t D : {64, 128}) {
    SCOPED_TRACE("head_dim " + std::to_string(D));
    Artifacts a = compileForward(D, true, -1, true, kernels::Dtype::fp8e4m3,
                                 kernels::planAttention(D, kernels::Dtype::fp8e4m3, true, true),
                                 true);
    EXPECT_NE(a.tir.find("VARLEN = 1"), std::string::npos);
    EXPECT_NE(a.tir.find("KV_DESC = 2"), std::string::npos);
    EXPECT_EQ(count(a.gir, "wgmma = 1"), 2u) << a.gir;
    EXPECT_EQ(count(a.gir, "permute_rows = 2"), 1u) << a.gir;
    EXPECT_EQ(count(a.ptx, "st.shared.b8"), 0u);
    EXPECT_EQ(count(a.ptx, "st.shared.u8"), 0u);
    EXPECT_EQ(count(a.ptx, "ld.global.u8"), 0u);
    EXPECT_NE(a.ptx.find("cp.async.bulk.tensor.5d"), std::string::npos); // K
    EXPECT_NE(a.ptx.find("cp.async.bulk.tensor.2d"), std::string::npos); // V^T
    expectAssembles(a, "sm_90a");
  }
}

// FlashAttention-3's order (AttentionPlan::overlapSoftmax): each step issues its scores'
// product and the previous step's P V product, then waits for the scores alone
// (wgmma.wait_group 1), so that its softmax runs under P V; the accumulator's rescale comes
// before the next P V's issue.
TEST_F(AttentionPtxTest, SoftmaxUnderThePreviousProduct) {
  for (int64_t D : {64, 128})
    for (bool causal : {false, true}) {
      SCOPED_TRACE("head_dim " + std::to_string(D) + (causal ? " causal" : ""));
      kernels::AttentionPlan plan = kProducerPlan;
      plan.overlapSoftmax = true;
      Artifacts a = compileForward(D, causal, -1, false, kernels::Dtype::bf16, plan);
      EXPECT_NE(a.tir.find("OVERLAP = 1"), std::string::npos);
      EXPECT_EQ(count(a.gir, "a_regs = 1"), 1u) << a.gir;
      EXPECT_EQ(count(a.gir, "deferred_wait = 1"), 2u) << a.gir;
      EXPECT_EQ(count(a.gir, "warp_specialized = 1"), 1u);
      EXPECT_GE(count(a.ptx, "wgmma.wait_group.sync.aligned 1;"), 1u);
      EXPECT_NE(a.ptx.find("cp.async.bulk.tensor"), std::string::npos);
      expectAssembles(a, "sm_90a");
      // With the warp groups' turns, a turn spans the two products' issues alone: the
      // causal mask's branch, which only computes, may sit in the body.
      plan.pingPong = true;
      Artifacts pp = compileForward(D, causal, -1, false, kernels::Dtype::bf16, plan);
      EXPECT_EQ(count(pp.gir, "ping_pong = 1"), 1u) << pp.gir;
      EXPECT_NE(pp.ptx.find("bar.sync 2, 256;"), std::string::npos);
      expectAssembles(pp, "sm_90a");
    }
}

// The backward's dK/dV and dQ kernels for 4 x 32 x 4096 dense bf16 tensors (GQA 4:1), as a
// launch specializes them: the products on wgmma (not serialized) in shared memory that fits,
// the walked tiles (Q and dO, K and V) through tensor descriptors, read in place by every
// product (a tile under a trans as well: no transpose staged). At head_dim 256 dV and dK are
// two kernels. ptxas spills 244 bytes in dK/dV at head_dim 128, 44-48 in dK at 256, the rest none
// (notes/attention.md); the bound below keeps that from growing unnoticed.
TEST_F(AttentionPtxTest, BackwardRunsOnWarpGroups) {
  const int64_t B = 4, H = 32, KH = 8, S = 4096;
  KernelArg p = KernelArg::pointer(0x10000);
  for (int64_t D : {64, 96, 128, 256}) // (96: padded to 128)
    for (int form : {0, 1, 2}) { // 1: causal; 2: dK and dV stored as whole tiles (blockStore)
      bool causal = form == 1, blockStore = form == 2;
      SCOPED_TRACE("head_dim " + std::to_string(D) + (causal ? " causal" : "") +
                   (blockStore ? " block store" : ""));
      kernels::AttentionBackwardArgs a{.batch = B, .heads = H, .kvHeads = KH, .seqQ = S,
                                       .headDim = D, .causal = causal};
      kernels::AttentionBackwardPlan plan = kernels::planAttentionBackward(D);
      EXPECT_EQ(plan.splitDkDv, D == 256);
      EXPECT_EQ(plan.blockStore, D == 256);
      plan.blockStore = blockStore;
      // Dense strides (specialized as multiples of 16), unbounded windows, no varlen (its
      // cu_seqlens pointers are unused).
      int64_t qb = H * S * D, kb = KH * S * D, sd = S * D;
      int32_t left = int32_t(2 * S), right = int32_t(causal ? 0 : 2 * S);
      struct Compiled {
        std::string name;
        Artifacts x;
        size_t registerOperands;
      };
      std::vector<Compiled> kernels;
      for (kernels::BackwardPart part : plan.splitDkDv
                                            ? std::vector<kernels::BackwardPart>{kernels::kDvOnly,
                                                                                 kernels::kDkOnly}
                                            : std::vector<kernels::BackwardPart>{kernels::kDkDv})
        kernels.push_back(
            {part == kernels::kDvOnly   ? "dV"
             : part == kernels::kDkOnly ? "dK"
                                        : "dK/dV",
             kernels::attentionBackwardDkDvKernel().compileTo(
                 kernels::attentionBackwardSpecialization(a, true, plan, "sm_90a", part)
                     .specializedFor({p, p, p, p, p, p, p, p, p, p, 1.0f, 1.0f, int32_t(S),
                                      int32_t(S), int32_t(H), int32_t(H / KH), qb, sd, D, kb, sd,
                                      D, kb, sd, D, qb, sd, D, B * H * S, B * KH * S, H * D,
                                      KH * D, left, right}),
                 Stage::PTX),
             part == kernels::kDkDv ? 2u : 1u});
      kernels.push_back(
          {"dQ",
           kernels::attentionBackwardDqKernel().compileTo(
               kernels::attentionBackwardSpecialization(a, false, plan, "sm_90a")
                   .specializedFor({p, p, p, p, p, p, p, p, p, 1.0f, 1.0f, int32_t(S),
                                    int32_t(S), int32_t(H), int32_t(H / KH), qb, sd, D, kb, sd, D,
                                    kb, sd, D, qb, sd, D, B * H * S, B * KH * S, H * D, KH * D,
                                    left, right}),
               Stage::PTX),
           1u});
      for (const Compiled &c : kernels) {
        SCOPED_TRACE(c.name);
        const Artifacts &x = c.x;
        // P^T and dS^T (dK/dV) and dS (dQ) reach their products in registers, and inside the
        // loops only per-row statistics (a row or a column of the tile) change layout, never
        // a 2-D tile (layout assignment moves a broadcast's source, not the broadcast).
        EXPECT_EQ(count(x.gir, "a_regs = 1"), c.registerOperands) << x.gir;
        // With blockStore (the keys a multiple of the own rows), dK and dV leave as one TMA
        // store each.
        if (c.name != "dQ") {
          EXPECT_NE(x.tir.find(blockStore ? "BLOCK_STORE = 1" : "BLOCK_STORE = 0"),
                    std::string::npos);
          EXPECT_EQ(count(x.gir, "tensor_store %"),
                    blockStore ? (c.name == "dK/dV" ? 2u : 1u) : 0u)
              << x.gir;
        }
        std::istringstream lines(x.gir);
        std::smatch m;
        for (std::string line; std::getline(lines, line);) {
          if (line.rfind("    ", 0) == 0 && line.find("convert_layout") != std::string::npos &&
              std::regex_search(line, m, std::regex(R"(block<(\d+)x(\d+)x)"))) {
            EXPECT_TRUE(m[1] == "1" || m[2] == "1") << line;
          }
          // A tile that products read (in place, from its ring) is not transposed through
          // shared memory.
          if (line.find(" = trans ") != std::string::npos) {
            EXPECT_NE(line.find("dot_only = 1"), std::string::npos) << line;
          }
        }
        EXPECT_NE(x.ptx.find("wgmma.mma_async"), std::string::npos);
        EXPECT_NE(x.ptx.find("cp.async.bulk.tensor"), std::string::npos);
        // The layout changes and staged operands in the loop share one pool (99 KB for dK/dV
        // at head_dim 128 on one warp group, 193 KB for dK and dQ at 256, and for dQ's 128
        // queries and 128 keys a step at 96 and 128).
        bool wideDq = c.name == "dQ" && plan.dqStepRows == 128;
        if (c.name == "dQ")
          EXPECT_EQ(wideDq, D == 96 || D == 128);
        EXPECT_LE(x.sharedBytes, (D == 256 || wideDq ? 200 : 136) * 1024) << x.gir;
        if (tritium::testing::ptxasPath().empty())
          GTEST_SKIP() << "ptxas was not found at configure time; the PTX was not assembled";
        tritium::testing::PtxasResult r = tritium::testing::runPtxas(x.ptx, "sm_90a");
        ASSERT_EQ(r.exitCode, 0) << r.output;
        EXPECT_EQ(r.output.find("wgmma"), std::string::npos) << r.output;
        ASSERT_TRUE(std::regex_search(r.output, m, std::regex("(\\d+) bytes spill stores")))
            << r.output;
        std::printf("head_dim %lld%s, %s: %s bytes of spill stores\n", (long long)D,
                    causal ? " causal" : blockStore ? " block store" : "", c.name.c_str(),
                    m[1].str().c_str());
        EXPECT_LE(std::stoi(m[1]), blockStore ? 256 : 768) << r.output;
      }
    }
}

TEST_F(AttentionPtxTest, DecodeReadsTheCacheThroughRings) {
  Artifacts a = compileDecode(false, 16, kernels::planAttentionDecode(false));
  EXPECT_NE(a.gir.find("pipelined = 1"), std::string::npos) << a.gir;
  EXPECT_GE(count(a.ptx, "cp.async.cg.shared.global"), 2u);
  // Launched as a programmatic dependent, as the library's other kernels.
  EXPECT_NE(a.ptx.find("griddepcontrol.wait"), std::string::npos);
  expectAssembles(a, "sm_90a");
  // A paged cache's rows come from the block table, read in the tile's shape: the pipeliner
  // loads the entries again for the iteration whose tiles it copies ahead ({pipelined} tiles,
  // cp.async), on both plans.
  for (bool pagedPlan : {true, false}) {
    Artifacts p = compileDecode(true, 1, kernels::planAttentionDecode(pagedPlan));
    EXPECT_NE(p.gir.find("pipelined = 1"), std::string::npos) << p.gir;
    EXPECT_GE(count(p.ptx, "cp.async.cg.shared.global"), 2u);
    // The page size is a constant of the specialization: a position's page and slot take no
    // 64-bit division (its subroutine held the paged decode at 0.52-0.57 of copy).
    EXPECT_LE(count(p.ptx, "div.s64"), 2u) << p.ptx; // (the heads' indices)
    EXPECT_EQ(count(p.ptx, "rem.s64"), 0u);
    // A thread's copies of one entry (repeated along its row) are loaded once: at most one
    // load per row a thread holds (8 of 64), for each of the prologue's iterations and the body
    // (and one of the sequence's length).
    EXPECT_LE(count(p.ptx, "ld.global.b32"), 8u * 4u + 1u) << p.ptx;
    expectAssembles(p, "sm_90a");
  }
}

// Where every offset fits in an int32 (a contiguous cache of up to 2^31 elements), the split
// kernel's integer arguments are i32 and its index math 32-bit: no 64-bit division for the
// heads' indices, and 64-bit adds only where offsets meet pointers. Larger caches keep i64. A
// paged cache's page numbers, which the call does not bound, are multiplied by the page stride
// in 64 bits either way.
TEST_F(AttentionPtxTest, DecodeIndexMathIs32BitWhereOffsetsFit) {
  auto specFor = [](int64_t batch, int64_t positions, bool paged) {
    static int32_t table = 0;
    kernels::AttentionDecodeArgs a{.blockTable = paged ? &table : nullptr,
                                   .pageSize = paged ? 16 : 0, .maxPages = positions / 16,
                                   .batch = batch, .heads = 32, .kvHeads = 8,
                                   .maxSeqKV = positions, .headDim = 128};
    return kernels::attentionDecodeSpecialization(a, kernels::planAttentionDecode(paged), 16,
                                                  "sm_90a");
  };
  EXPECT_EQ(specFor(4, 4096, false).signature[10], "i32");
  // 64 x 131072 positions x 8 heads x 128: 2^33 elements of cache.
  EXPECT_EQ(specFor(64, 131072, false).signature[10], "i64");
  EXPECT_EQ(specFor(4, 4096, true).signature[10], "i32");
  EXPECT_EQ(specFor(64, 131072, true).signature[10], "i32"); // (the page product is 64-bit)
  // NVPTX's strength reduction is left out of the paged kernel at head_dim 128 (its cold compile
  // 137-195 ms with it, 83-116 without), kept elsewhere (paged head_dim 256 ran 9% slower).
  EXPECT_TRUE(specFor(4, 4096, false).strengthReduction);
  EXPECT_FALSE(specFor(4, 4096, true).strengthReduction);
  for (bool paged : {false, true}) {
    SCOPED_TRACE(paged ? "paged" : "contiguous");
    Artifacts a = compileDecode(paged, 16, kernels::planAttentionDecode(paged));
    EXPECT_EQ(count(a.ptx, "div.s64"), 0u);
    // Paged: a row's page number (sign-extended from the block table's int32) times the page
    // stride, for each row a thread copies and the iteration ahead that loads the entries.
    if (paged)
      EXPECT_NE(count(a.ptx, "mul.lo.s64") + count(a.ptx, "mul.wide.s32"), 0u);
    else
      EXPECT_EQ(count(a.ptx, "mul.lo.s64"), 0u) << a.ptx;
    expectAssembles(a, "sm_90a");
  }
}

// Head_dim 256: 32 positions a step keep the ring's K and V tiles at 96 KB (105 KB with the
// kernel's other buffers), so two programs share a SM as the parts' count assumes; contiguous
// and paged, the tiles are ring copies and ptxas spills nothing (209 and 246 registers).
TEST_F(AttentionPtxTest, DecodeAtHeadDim256FitsTwoProgramsASm) {
  for (bool paged : {false, true}) {
    SCOPED_TRACE(paged ? "paged" : "contiguous");
    kernels::AttentionDecodePlan plan = kernels::planAttentionDecode(paged, 256);
    EXPECT_EQ(plan.blockN, 32);
    Artifacts a = compileDecode(paged, 16, plan, 256);
    EXPECT_NE(a.gir.find("pipelined = 1"), std::string::npos) << a.gir;
    EXPECT_GE(count(a.ptx, "cp.async.cg.shared.global"), 2u);
    EXPECT_LE(a.sharedBytes, 113 * 1024) << a.gir;
    expectAssembles(a, "sm_90a"); // without spills
  }
}

} // namespace

// A plan whose staging does not fit: mma.sync (sm_90) stages both operands of every product,
// and 128 x 64 tiles at head_dim 256 need 272 KB. The error names the op whose buffer lies
// past the limit, at its line in the kernel, and what to change.
TEST_F(AttentionPtxTest, APlanPastSharedMemoryIsRefusedAtTheOp) {
  kernels::AttentionArgs a{.batch = 1, .heads = 2, .seqQ = 70, .headDim = 256};
  Specialization spec = kernels::attentionForwardSpecialization(
      a, kernels::AttentionPlan{128, 64, 8, 2}, "sm_90");
  try {
    kernels::attentionForwardKernel().compileTo(spec, Stage::PTX);
    FAIL() << "a kernel past shared memory compiled";
  } catch (const UserError &e) {
    std::string m = e.what();
    EXPECT_NE(m.find("Attention.cpp:"), std::string::npos) << m;
    EXPECT_NE(m.find("more than the 232448 a CTA may have"), std::string::npos) << m;
    EXPECT_NE(m.find("lies past the limit"), std::string::npos) << m;
  }
  // The planner's plan for that target fits.
  Artifacts ok = kernels::attentionForwardKernel().compileTo(
      kernels::attentionForwardSpecialization(a, kernels::planAttention(256, kernels::Dtype::bf16,
                                                                        false),
                                              "sm_90"),
      Stage::PTX);
  EXPECT_LE(ok.sharedBytes, 232448);
}
