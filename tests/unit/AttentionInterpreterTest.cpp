// The library's attention forward and decode in the interpreter (tests/AttentionCases.h,
// tests/AttentionDecodeCases.h): the twins of tests/gpu/AttentionGpuTest.cpp, on shapes small
// enough for the CPU.
#include "AttentionCases.h"
#include "AttentionDecodeCases.h"
#include "kernels/AttentionArguments.h"

#include "interpreter/Interpreter.h"

#include <filesystem>
#include <functional>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <string>

using namespace tritium;
using namespace tritium::testing::attention;
using interpreter::HostBuffer;

namespace {

class AttentionInterpreterTest : public tritium::testing::CompilerTest {
protected:
  void SetUp() override { setInterpret(true); }
  void TearDown() override { resetInterpret(); }
  std::function<void()> sync = [] {};
};

TEST_F(AttentionInterpreterTest, Forward) {
  checkAttention<HostBuffer>(nullptr, sync,
                             {.batch = 1, .heads = 4, .kvHeads = 2, .seqQ = 70, .seqKV = 90});
  checkAttention<HostBuffer>(nullptr, sync,
                             {.dtype = kernels::Dtype::fp16, .batch = 2, .heads = 2,
                              .kvHeads = 1, .seqQ = 33, .seqKV = 33, .causal = true,
                              .seqMajor = true});
  // head_dim 256, causal, GQA 2:1.
  checkAttention<HostBuffer>(nullptr, sync,
                             {.heads = 2, .kvHeads = 1, .seqQ = 70, .seqKV = 80, .headDim = 256,
                              .causal = true});
  // More queries than keys: the first rows see no key and give zeros.
  checkAttention<HostBuffer>(nullptr, sync,
                             {.heads = 1, .kvHeads = 1, .seqQ = 40, .seqKV = 17, .headDim = 128,
                              .causal = true, .scale = 0.3f});
}

// Rows whose maxima grow step after step beside rows whose maxima barely move: the running
// maximum, the sums and the accumulator's rescale (which random scores alone hardly exercise).
TEST_F(AttentionInterpreterTest, ScoresThatOutgrowTheRunningMaximum) {
  for (bool causal : {false, true})
    checkAttention<HostBuffer>(nullptr, sync,
                               {.heads = 2, .kvHeads = 1, .seqQ = 96, .seqKV = 400,
                                .causal = causal, .growth = 1.0 / 24});
}

// Persistent plans (AttentionPlan::persistent): fewer programs than tiles, so each walks
// several (query block, head) tiles, the last query blocks first when causal; GQA, causal with
// more queries than keys, a window, strided K and V (the plain loop), head_dim 64 and 256; a
// varlen batch keeps a program per tile.
TEST_F(AttentionInterpreterTest, ForwardPersistent) {
  kernels::AttentionPlan producer = kernels::planAttention(128);
  producer.blockM = 32; // more tiles than the interpreter's programs
  producer.persistent = true;
  checkAttention<HostBuffer>(nullptr, sync,
                             {.batch = 2, .heads = 4, .kvHeads = 2, .seqQ = 150, .seqKV = 130,
                              .headDim = 128, .plan = producer});
  checkAttention<HostBuffer>(nullptr, sync,
                             {.batch = 2, .heads = 2, .kvHeads = 1, .seqQ = 90, .seqKV = 40,
                              .headDim = 128, .causal = true, .plan = producer});
  checkAttention<HostBuffer>(nullptr, sync,
                             {.heads = 4, .kvHeads = 4, .seqQ = 100, .seqKV = 100,
                              .headDim = 128, .windowLeft = 20, .windowRight = 5,
                              .seqMajor = true, .plan = producer});
  kernels::AttentionPlan d64 = kernels::planAttention(64), d256 = kernels::planAttention(256);
  d64.blockM = d256.blockM = 16;
  d64.persistent = d256.persistent = true;
  checkAttention<HostBuffer>(nullptr, sync,
                             {.batch = 3, .heads = 2, .kvHeads = 1, .seqQ = 70, .seqKV = 70,
                              .headDim = 64, .causal = true, .plan = d64});
  checkAttention<HostBuffer>(nullptr, sync,
                             {.heads = 2, .kvHeads = 1, .seqQ = 50, .seqKV = 60, .headDim = 256,
                              .plan = d256});
}

// Head dims that are not 64, 128 or 256: 32, and 80, 96 and 192, padded to the next power of
// two (their extra columns masked off the loads and stores, or read as zeros through the
// descriptors): dense K and V, strided ones, V transposed, causal, GQA.
TEST_F(AttentionInterpreterTest, ForwardAtOtherHeadDims) {
  for (int64_t d : {32, 80, 96, 192})
    checkAttention<HostBuffer>(nullptr, sync,
                               {.heads = 4, .kvHeads = 2, .seqQ = 70, .seqKV = 90, .headDim = d,
                                .causal = d != 96});
  checkAttention<HostBuffer>(nullptr, sync,
                             {.dtype = kernels::Dtype::fp16, .heads = 2, .kvHeads = 1,
                              .seqQ = 33, .seqKV = 50, .headDim = 80, .seqMajor = true});
  checkAttention<HostBuffer>(nullptr, sync,
                             {.heads = 2, .kvHeads = 2, .seqQ = 64, .seqKV = 64, .headDim = 96,
                              .causal = true, .vTransposed = true});
  checkAttention<HostBuffer>(nullptr, sync,
                             {.dtype = kernels::Dtype::fp8e4m3, .heads = 2, .kvHeads = 1,
                              .seqQ = 64, .seqKV = 80, .headDim = 96, .descaleQ = 0.5f,
                              .descaleK = 1.5f, .descaleV = 2.0f, .vTransposed = true});
  checkVarlenAttention<HostBuffer>(nullptr, sync,
                                   {.seqQ = {17, 0, 60}, .seqKV = {50, 3, 60}, .heads = 4,
                                    .kvHeads = 2, .headDim = 96, .causal = true});
}

// FlashAttention-3's order (AttentionPlan::overlapSoftmax): one step more than the keys, the
// first adding no P V and the last's scores unused; keys not a multiple of the step, causal
// rows that see no key, a window.
TEST_F(AttentionInterpreterTest, ForwardWithTheSoftmaxUnderThePreviousProduct) {
  kernels::AttentionPlan plan{.blockM = 64, .blockN = 32, .numWarps = 4, .numStages = 2,
                              .overlapSoftmax = true};
  checkAttention<HostBuffer>(nullptr, sync,
                             {.heads = 2, .kvHeads = 1, .seqQ = 70, .seqKV = 90, .plan = plan});
  // Keys a multiple of the step: the extra step's keys are the next head's, unmasked.
  checkAttention<HostBuffer>(nullptr, sync,
                             {.heads = 3, .kvHeads = 3, .seqQ = 50, .seqKV = 64, .plan = plan});
  checkAttention<HostBuffer>(nullptr, sync,
                             {.heads = 1, .kvHeads = 1, .seqQ = 100, .seqKV = 45, .causal = true,
                              .plan = plan});
  checkAttention<HostBuffer>(nullptr, sync,
                             {.heads = 1, .kvHeads = 1, .seqQ = 130, .seqKV = 130,
                              .windowLeft = 20, .windowRight = 40, .plan = plan});
}

// fp8 e4m3 operands with descales into a bf16 output, causal and not, both head dims.
TEST_F(AttentionInterpreterTest, Fp8Forward) {
  checkAttention<HostBuffer>(nullptr, sync,
                             {.dtype = kernels::Dtype::fp8e4m3, .heads = 2, .kvHeads = 1,
                              .seqQ = 70, .seqKV = 90, .descaleQ = 0.5f, .descaleK = 2.0f,
                              .descaleV = 1.5f});
  checkAttention<HostBuffer>(nullptr, sync,
                             {.dtype = kernels::Dtype::fp8e4m3, .heads = 1, .kvHeads = 1,
                              .seqQ = 50, .seqKV = 50, .headDim = 128, .causal = true});
  // V as stored, transposed into the workspace first and then read in place: strided
  // ([batch, seq, heads, head_dim]), GQA, a padded head dim, keys no multiple of a block.
  checkAttention<HostBuffer>(nullptr, sync,
                             {.dtype = kernels::Dtype::fp8e4m3, .batch = 2, .heads = 4,
                              .kvHeads = 2, .seqQ = 70, .seqKV = 90, .headDim = 96,
                              .causal = true, .seqMajor = true, .descaleV = 1.5f,
                              .workspace = true});
}

// V stored transposed (each head's [head_dim, seq_kv]): fp8 on the plan that reads its tiles
// in place, dense (tensor descriptors) and with padded rows (pointers), GQA, causal, keys
// that are no multiple of a block.
TEST_F(AttentionInterpreterTest, TransposedValues) {
  kernels::AttentionPlan wide{.blockM = 128, .blockN = 128, .numWarps = 8, .numStages = 2};
  checkAttention<HostBuffer>(nullptr, sync,
                             {.dtype = kernels::Dtype::fp8e4m3, .heads = 2, .kvHeads = 1,
                              .seqQ = 70, .seqKV = 150, .headDim = 128, .descaleV = 1.5f,
                              .vTransposed = true, .plan = wide});
  checkAttention<HostBuffer>(nullptr, sync,
                             {.heads = 2, .kvHeads = 2, .seqQ = 90, .seqKV = 90, .causal = true,
                              .seqMajor = true, .vTransposed = true});
  checkAttention<HostBuffer>(nullptr, sync,
                             {.dtype = kernels::Dtype::fp16, .heads = 1, .kvHeads = 1,
                              .seqQ = 33, .seqKV = 200, .headDim = 128, .windowLeft = 40,
                              .vTransposed = true});
}

// Sliding windows: both sides bounded (later programs start their loop past the first keys),
// causal with a left bound and more keys than queries, one side only.
TEST_F(AttentionInterpreterTest, SlidingWindows) {
  checkAttention<HostBuffer>(nullptr, sync,
                             {.heads = 2, .kvHeads = 1, .seqQ = 300, .seqKV = 300,
                              .windowLeft = 32, .windowRight = 16});
  checkAttention<HostBuffer>(nullptr, sync,
                             {.heads = 1, .kvHeads = 1, .seqQ = 200, .seqKV = 260, .causal = true,
                              .windowLeft = 50});
  checkAttention<HostBuffer>(nullptr, sync,
                             {.dtype = kernels::Dtype::fp16, .heads = 1, .kvHeads = 1, .seqQ = 150,
                              .seqKV = 150, .headDim = 128, .windowLeft = 20, .seqMajor = true});
  checkAttention<HostBuffer>(nullptr, sync,
                             {.heads = 1, .kvHeads = 1, .seqQ = 90, .seqKV = 70,
                              .windowRight = 5});
}

// Varlen batches: an empty sequence, one of a single token, lengths that are not multiples of
// any block, more keys than queries (causal aligned per sequence), GQA, a window.
TEST_F(AttentionInterpreterTest, Varlen) {
  checkVarlenAttention<HostBuffer>(nullptr, sync,
                                   {.seqQ = {37, 0, 1, 140}, .seqKV = {37, 0, 1, 140}});
  checkVarlenAttention<HostBuffer>(nullptr, sync,
                                   {.dtype = kernels::Dtype::fp16, .seqQ = {17, 60},
                                    .seqKV = {50, 200}, .heads = 4, .kvHeads = 2,
                                    .headDim = 128, .causal = true});
  checkVarlenAttention<HostBuffer>(nullptr, sync,
                                   {.seqQ = {150, 9}, .seqKV = {150, 30}, .causal = true,
                                    .windowLeft = 20});
  // totalKV given: K and V through tensor descriptors over the packed rows, a step's tile
  // reading the next sequence's keys (masked) or zeros past the last.
  checkVarlenAttention<HostBuffer>(nullptr, sync,
                                   {.seqQ = {37, 0, 1, 140}, .seqKV = {50, 0, 3, 140},
                                    .heads = 4, .kvHeads = 2, .causal = true, .totalKV = true});
}

// fp8 varlen batches: V as stored, transposed into the workspace (each sequence's keys from a
// column on 16 bytes, zeros between) or through shared memory at every step; an empty
// sequence, lengths that are no multiple of 16, GQA 2:1, descales.
TEST_F(AttentionInterpreterTest, Fp8Varlen) {
  for (bool workspace : {true, false})
    checkVarlenAttention<HostBuffer>(nullptr, sync,
                                     {.dtype = kernels::Dtype::fp8e4m3, .seqQ = {17, 0, 40},
                                      .seqKV = {50, 3, 33}, .heads = 4, .kvHeads = 2,
                                      .headDim = 64, .causal = workspace, .descaleQ = 0.5f,
                                      .descaleK = 1.5f, .descaleV = 2.0f,
                                      .workspace = workspace});
}

// A split plan (head_dim 256) launches the dK/dV kernel once for dV and once for dK: its two
// specializations, as the cache records them, carry PART 1 and 2. (A dangling
// initializer_list once handed the launches what the stack held, 0 among it: both gradients in
// each launch.)
TEST_F(AttentionInterpreterTest, SplitPlanLaunchesEachPartOnce) {
  checkAttentionBackward<HostBuffer>(nullptr, sync, {.heads = 1, .kvHeads = 1, .seqQ = 40,
                                                     .seqKV = 40, .headDim = 256});
  std::multiset<std::string> parts;
  const std::regex part(R"re("name":\s*"PART",\s*"value":\s*(-?[0-9]+))re");
  for (const auto &e : std::filesystem::recursive_directory_iterator(cacheDir()))
    if (e.path().filename() == "attention_bwd_dkdv.json") {
      std::ifstream in(e.path());
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::smatch m;
      ASSERT_TRUE(std::regex_search(text, m, part)) << text;
      parts.insert(m[1]);
    }
  EXPECT_EQ(parts, (std::multiset<std::string>{"1", "2"}));
}

// The backward: GQA 2:1, lengths that are not multiples of any block, causal with more keys
// than queries and with more queries than keys, head_dim 128 and 256.
TEST_F(AttentionInterpreterTest, Backward) {
  checkAttentionBackward<HostBuffer>(nullptr, sync,
                                     {.dtype = kernels::Dtype::fp16, .heads = 4, .kvHeads = 2,
                                      .seqQ = 70, .seqKV = 90});
  checkAttentionBackward<HostBuffer>(nullptr, sync,
                                     {.dtype = kernels::Dtype::fp16, .heads = 2, .kvHeads = 1,
                                      .seqQ = 50, .seqKV = 100, .causal = true});
  checkAttentionBackward<HostBuffer>(nullptr, sync,
                                     {.heads = 1, .kvHeads = 1, .seqQ = 80, .seqKV = 33,
                                      .headDim = 128, .causal = true});
  // head_dim 256: dV and dK by two programs per block of keys; O laid out as Q, so that
  // dK/dV reads Q and dO through descriptors too.
  checkAttentionBackward<HostBuffer>(nullptr, sync,
                                     {.heads = 2, .kvHeads = 1, .seqQ = 40, .seqKV = 70,
                                      .headDim = 256, .causal = true, .oLikeQ = true});
  // A producer warp group (one loop over the group's query heads and blocks in dK/dV): GQA
  // 3:1, causal with more keys than queries, blocks of 16 so that heads take several steps.
  for (int64_t d : {64, 256}) {
    kernels::AttentionBackwardPlan plan = kernels::planAttentionBackward(d);
    plan.ownRows = plan.stepRows = 16;
    plan.warpSpecialize = true;
    checkAttentionBackward<HostBuffer>(nullptr, sync,
                                       {.heads = 3, .kvHeads = 1, .seqQ = 50, .seqKV = 70,
                                        .headDim = d, .causal = true, .oLikeQ = true,
                                        .backwardPlan = plan});
  }
}

// Head dims padded to a power of two (80 and 96 to 128, 192 to 256) and 32: Q, dO, K and V
// through descriptors (O laid out as Q) and through pointers, dK and dV as whole tiles.
TEST_F(AttentionInterpreterTest, BackwardAtOtherHeadDims) {
  for (int64_t d : {32, 96, 192})
    checkAttentionBackward<HostBuffer>(nullptr, sync,
                                       {.heads = 2, .kvHeads = 1, .seqQ = 50, .seqKV = 70,
                                        .headDim = d, .causal = true, .oLikeQ = d != 32});
  checkAttentionBackward<HostBuffer>(nullptr, sync,
                                     {.heads = 2, .kvHeads = 1, .headDim = 80, .causal = true,
                                      .varlenQ = {17, 0, 60}, .varlenKV = {50, 3, 60}});
  kernels::AttentionBackwardPlan plan = kernels::planAttentionBackward(80);
  plan.ownRows = plan.stepRows = 16;
  plan.blockStore = true;
  checkAttentionBackward<HostBuffer>(nullptr, sync,
                                     {.dtype = kernels::Dtype::fp16, .heads = 2, .kvHeads = 2,
                                      .seqQ = 40, .seqKV = 64, .headDim = 80, .oLikeQ = true,
                                      .backwardPlan = plan});
}

// Sliding windows (one bounded on both sides, one causal with a left reach) and the
// [batch, seq, heads, head_dim] layout through strides.
// Plans with blockStore, keys a multiple of the own rows, K and V dense: each program's dK and
// dV rows are one tile of the [kv_rows, head_dim] matrix, stored through descriptors
// (BLOCK_STORE); every head dim, GQA 2:1, causal and not, and the producer plan.
TEST_F(AttentionInterpreterTest, BackwardStoresWholeKeyBlocks) {
  for (int64_t d : {64, 128, 256})
    for (bool causal : {false, true}) {
      kernels::AttentionBackwardPlan plan = kernels::planAttentionBackward(d);
      plan.blockStore = true;
      checkAttentionBackward<HostBuffer>(nullptr, sync,
                                         {.dtype = kernels::Dtype::fp16, .heads = 2,
                                          .kvHeads = 1, .seqQ = 70, .seqKV = 256, .headDim = d,
                                          .causal = causal, .backwardPlan = plan});
    }
  kernels::AttentionBackwardPlan plan = kernels::planAttentionBackward(64);
  plan.warpSpecialize = plan.blockStore = true;
  checkAttentionBackward<HostBuffer>(nullptr, sync,
                                     {.heads = 2, .kvHeads = 2, .seqQ = 64, .seqKV = 128,
                                      .oLikeQ = true, .backwardPlan = plan});
  // [batch, seq, heads, head_dim] in every tensor (each kernel's tiles through descriptors of
  // that layout), also at a padded head dim (its dK and dV stored through pointers:
  // AttentionPtxTest.SeqMajorBackwardReadsItsTilesThroughTma).
  for (int64_t d : {64, 48})
    checkAttentionBackward<HostBuffer>(nullptr, sync,
                                       {.heads = 4, .kvHeads = 2, .seqQ = 64, .seqKV = 128,
                                        .headDim = d, .causal = true, .seqMajor = true,
                                        .oLikeQ = true, .backwardPlan = plan});
}

TEST_F(AttentionInterpreterTest, BackwardWindowsAndStrides) {
  checkAttentionBackward<HostBuffer>(nullptr, sync,
                                     {.dtype = kernels::Dtype::fp16, .heads = 4, .kvHeads = 2,
                                      .seqQ = 70, .seqKV = 90, .windowLeft = 20,
                                      .windowRight = 5, .seqMajor = true});
  checkAttentionBackward<HostBuffer>(nullptr, sync,
                                     {.heads = 2, .kvHeads = 1, .seqQ = 100, .seqKV = 100,
                                      .causal = true, .windowLeft = 17});
}

// Varlen batches: an empty sequence, one of a single token, more keys than queries, GQA 2:1;
// causal aligned per sequence; a causal window.
// (oLikeQ: O and dO packed as Q, which dK/dV reads through tensor descriptors, else heads
// first, through pointers; totalKV: dQ reads K and V through descriptors.)
TEST_F(AttentionInterpreterTest, BackwardVarlen) {
  checkAttentionBackward<HostBuffer>(nullptr, sync,
                                     {.dtype = kernels::Dtype::fp16, .heads = 4, .kvHeads = 2,
                                      .oLikeQ = true, .varlenQ = {37, 0, 1, 100},
                                      .varlenKV = {37, 0, 5, 130}, .totalKV = true});
  checkAttentionBackward<HostBuffer>(nullptr, sync,
                                     {.heads = 2, .kvHeads = 1, .causal = true,
                                      .varlenQ = {17, 60}, .varlenKV = {50, 60},
                                      .totalKV = true});
  checkAttentionBackward<HostBuffer>(nullptr, sync,
                                     {.causal = true, .windowLeft = 20, .oLikeQ = true,
                                      .varlenQ = {90, 9}, .varlenKV = {90, 30}});
}

// Small shapes against the forward's finite differences: GQA 2:1, causal with more keys than
// queries, a window in the other layout, a varlen pair.
TEST_F(AttentionInterpreterTest, BackwardByFiniteDifferences) {
  checkAttentionBackwardByFiniteDifferences<HostBuffer>(
      nullptr, sync,
      {.dtype = kernels::Dtype::fp16, .heads = 4, .kvHeads = 2, .seqQ = 19, .seqKV = 23});
  checkAttentionBackwardByFiniteDifferences<HostBuffer>(
      nullptr, sync, {.dtype = kernels::Dtype::fp16, .seqQ = 13, .seqKV = 29, .causal = true});
  checkAttentionBackwardByFiniteDifferences<HostBuffer>(
      nullptr, sync,
      {.heads = 2, .kvHeads = 1, .seqQ = 40, .seqKV = 40, .headDim = 128, .windowLeft = 9,
       .windowRight = 3, .seqMajor = true});
  checkAttentionBackwardByFiniteDifferences<HostBuffer>(
      nullptr, sync,
      {.dtype = kernels::Dtype::fp16, .causal = true, .varlenQ = {11, 0, 20},
       .varlenKV = {17, 3, 20}});
}

// Each bad argument of the backward is refused before anything runs, by name.
TEST_F(AttentionInterpreterTest, BackwardRefusesBadArguments) {
  float x = 0;
  const kernels::AttentionBackwardArgs good{
      .dq = &x, .dk = &x, .dv = &x, .q = &x, .k = &x, .v = &x, .o = &x, .dout = &x, .lse = &x,
      .workspace = &x, .heads = 4, .kvHeads = 2, .seqQ = 16, .headDim = 64};
  auto refuses = [&](const char *what, const std::function<void(kernels::AttentionBackwardArgs &)> &
                                           change,
                     const kernels::AttentionBackwardPlan *plan = nullptr) {
    kernels::AttentionBackwardArgs a = good;
    change(a);
    try {
      kernels::attentionBackward(a, nullptr, plan);
      ADD_FAILURE() << "no error for " << what;
    } catch (const UserError &e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  refuses("attentionBackward: dq is null", [](auto &a) { a.dq = nullptr; });
  refuses("attentionBackward: workspace is null", [](auto &a) { a.workspace = nullptr; });
  refuses("dtype must be fp16 or bf16, got fp32", [](auto &a) { a.dtype = kernels::Dtype::fp32; });
  refuses("head_dim must be a multiple of 16 from 16 to 256, got 72",
          [](auto &a) { a.headDim = 72; });
  refuses("heads (4) must be a multiple of kv_heads (3)", [](auto &a) { a.kvHeads = 3; });
  refuses("window_left", [](auto &a) { a.windowLeft = -2; });
  refuses("o's sequence stride 32 is less than head_dim 64",
          [](auto &a) { a.oStrides = {4096, 32, 32}; });
  refuses("cuSeqlensQ and cuSeqlensKV are given together",
          [&](auto &a) { a.cuSeqlensQ = reinterpret_cast<const int32_t *>(&x); });
  refuses("totalQ (8, the packed query rows) must be at least seq_q (16",
          [&](auto &a) {
            a.cuSeqlensQ = a.cuSeqlensKV = reinterpret_cast<const int32_t *>(&x);
            a.totalQ = 8;
          });
  refuses("totalKV (15, the packed key rows) must be at least seq_kv (16", [&](auto &a) {
    a.cuSeqlensQ = a.cuSeqlensKV = reinterpret_cast<const int32_t *>(&x);
    a.totalQ = 16;
    a.totalKV = 15;
  });
  kernels::AttentionBackwardPlan plan{.ownRows = 48};
  refuses("plan: rows must be powers of two of at least 16, got 48", [](auto &) {}, &plan);
}

TEST_F(AttentionInterpreterTest, RefusesBadArguments) {
  kernels::AttentionArgs a{.o = this, .q = this, .k = this, .v = this, .heads = 6, .kvHeads = 4,
                           .seqQ = 8, .headDim = 64};
  try {
    kernels::attentionForward(a, nullptr);
    ADD_FAILURE() << "no error";
  } catch (const UserError &e) {
    EXPECT_NE(std::string(e.what()).find("heads (6) must be a multiple of kv_heads (4)"),
              std::string::npos)
        << e.what();
  }
  a.kvHeads = 2;
  a.headDim = 72;
  try {
    kernels::attentionForward(a, nullptr);
    ADD_FAILURE() << "no error";
  } catch (const UserError &e) {
    EXPECT_NE(std::string(e.what()).find("head_dim must be a multiple of 16 from 16 to 256, got 72"),
              std::string::npos)
        << e.what();
  }
  a.headDim = 64;
  a.windowLeft = -2;
  try {
    kernels::attentionForward(a, nullptr);
    ADD_FAILURE() << "no error";
  } catch (const UserError &e) {
    EXPECT_NE(std::string(e.what()).find("window_left"), std::string::npos) << e.what();
  }
  a.windowLeft = -1;
  a.vTransposed = true;
  a.vStrides = {2 * 64 * 8, 64 * 8, 7};
  try {
    kernels::attentionForward(a, nullptr);
    ADD_FAILURE() << "no error";
  } catch (const UserError &e) {
    EXPECT_NE(std::string(e.what()).find("v is transposed ([batch, heads, head_dim, seq]): its "
                                         "row stride 7 is less than seq 8"),
              std::string::npos)
        << e.what();
  }
  int32_t cu[2] = {0, 8};
  a.vStrides = {};
  a.cuSeqlensQ = a.cuSeqlensKV = cu;
  a.totalQ = 8;
  try {
    kernels::attentionForward(a, nullptr);
    ADD_FAILURE() << "no error";
  } catch (const UserError &e) {
    EXPECT_NE(std::string(e.what()).find("vTransposed takes fixed-length batches"),
              std::string::npos)
        << e.what();
  }
  // `run` must be refused with a message that contains `what`.
  auto refused = [](const std::string &what, const std::function<void()> &run) {
    try {
      run();
      ADD_FAILURE() << "no error for " << what;
    } catch (const UserError &e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  // The transposition takes V as stored.
  std::vector<unsigned char> vt(64);
  auto transpose = [&] { kernels::attentionTransposeValues(vt.data(), a, nullptr); };
  refused("attentionTransposeValues: V is transposed already", transpose);
  a.vTransposed = false;
  EXPECT_EQ(kernels::attentionForwardWorkspaceBytes(a), 0); // bf16 takes none
  // Varlen fp8: each sequence's V^T rows and K rows start on 16 bytes (16 rows), zeros
  // between and after.
  a.dtype = kernels::Dtype::fp8e4m3;
  int64_t seqKV = a.seqKV ? a.seqKV : a.seqQ;
  EXPECT_EQ(kernels::attentionForwardWorkspaceBytes(a),
            2 * (a.kvHeads ? a.kvHeads : a.heads) * a.headDim *
                kernels::varlenTransposedValuesWidth(a.batch, seqKV));
  EXPECT_GE(kernels::varlenTransposedValuesWidth(a.batch, seqKV),
            a.batch * seqKV + 16 * a.batch + 256);
  // fp8 with V as stored: a workspace of V's size, checked against its stated size.
  a.cuSeqlensQ = a.cuSeqlensKV = nullptr;
  a.totalQ = 0;
  a.heads = a.kvHeads = 2;
  a.dtype = kernels::Dtype::fp8e4m3;
  int64_t need = kernels::attentionForwardWorkspaceBytes(a);
  EXPECT_EQ(need, a.batch * a.kvHeads * (a.seqKV ? a.seqKV : a.seqQ) * a.headDim);
  a.workspace = vt.data();
  a.workspaceBytes = need - 1;
  refused("attentionForward: workspace holds " + std::to_string(need - 1) + " bytes, " +
              std::to_string(need) + " needed",
          [&] { kernels::attentionForward(a, nullptr); });
}

TEST_F(AttentionInterpreterTest, Decode) {
  // Split parts combined, GQA 8:1, an empty sequence beside one of 37 positions.
  checkDecode<HostBuffer>(nullptr, sync, {.seqLens = {0, 37}, .splits = 3});
  // Pages of 16 in a shuffled order, several speculative tokens, whole caches.
  checkDecode<HostBuffer>(nullptr, sync,
                          {.dtype = kernels::Dtype::fp16, .batch = 3, .heads = 4, .kvHeads = 2,
                           .seqQ = 3, .headDim = 128, .seqLens = {1, 17, 70}, .pageSize = 16,
                           .splits = 1});
  checkDecode<HostBuffer>(nullptr, sync,
                          {.batch = 1, .heads = 2, .kvHeads = 2, .seqQ = 2, .seqLens = {90},
                           .pageSize = 32, .splits = 2, .causal = false});
  // A page size that is no power of two (a constant of the specialization, divided by
  // multiplication), smaller than the tile's positions.
  checkDecode<HostBuffer>(nullptr, sync,
                          {.batch = 2, .heads = 2, .kvHeads = 1, .seqLens = {41, 100},
                           .pageSize = 12, .splits = 2});
  // Head_dim 256 (32 positions a step), contiguous and paged, split and whole.
  checkDecode<HostBuffer>(nullptr, sync,
                          {.batch = 2, .heads = 4, .kvHeads = 2, .headDim = 256,
                           .seqLens = {70, 0}, .splits = 2});
  checkDecode<HostBuffer>(nullptr, sync,
                          {.batch = 1, .heads = 2, .kvHeads = 1, .seqQ = 2, .headDim = 256,
                           .seqLens = {45}, .pageSize = 16, .splits = 1});
  // Head dims padded to a power of two (96 -> 128, 80 -> 128): split parts and paged.
  checkDecode<HostBuffer>(nullptr, sync,
                          {.batch = 2, .heads = 4, .kvHeads = 2, .headDim = 96,
                           .seqLens = {70, 33}, .splits = 2});
  checkDecode<HostBuffer>(nullptr, sync,
                          {.batch = 1, .heads = 2, .kvHeads = 2, .seqQ = 2, .headDim = 80,
                           .seqLens = {50}, .pageSize = 16, .splits = 1});
  // Heads first ([batch, kv_heads, positions, D]) through strides; past each length, NaN.
  checkDecode<HostBuffer>(nullptr, sync,
                          {.batch = 2, .heads = 4, .kvHeads = 2, .seqLens = {130, 64},
                           .headMajor = true, .splits = 2});
}

TEST_F(AttentionInterpreterTest, DecodeRefusesBadArguments) {
  int32_t table = 0;
  kernels::AttentionDecodeArgs a{.o = this, .q = this, .k = this, .v = this,
                                 .blockTable = &table, .pageSize = 16, .maxPages = 2,
                                 .heads = 8, .kvHeads = 2, .maxSeqKV = 1024, .headDim = 64};
  auto expectError = [&](const std::string &want) {
    try {
      kernels::attentionDecode(a, nullptr);
      ADD_FAILURE() << "no error for " << want;
    } catch (const UserError &e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  expectError("page_size x max_pages (32) is less than max_seq_kv (1024)");
  a.maxPages = 64;
  a.kvHeads = 3;
  expectError("heads (8) must be a multiple of kv_heads (3)");
  a.kvHeads = 2;
  a.workspace = this;
  a.workspaceBytes = 8;
  expectError("workspace holds 8 bytes");
  a.workspace = nullptr;
  a.seqQ = 40;
  expectError("heads / kv_heads x seq_q must be at most 128");
  a.seqQ = 1;
  a.headDim = 72;
  expectError("head_dim must be a multiple of 16 from 16 to 256, got 72");
}

} // namespace
