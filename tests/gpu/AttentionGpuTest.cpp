// The library's attention forward on the GPU (tests/AttentionCases.h) against
// double-precision references: head_dim 64 and 128, grouped-query heads 8:1, causal masks with
// more queries than keys and the reverse, sequences of 1, 17 and lengths no multiple of the
// blocks, both memory layouts, the log-sum-exp. Skips, saying so, without a GPU; the
// interpreter twins run everywhere.
#include "AttentionCases.h"
#include "AttentionDecodeCases.h"
#include "GpuTestSupport.h"

#include "runtime/Device.h"
#include "runtime/Memory.h"

using namespace tritium;
using namespace tritium::testing::attention;
using rt::DeviceBuffer;

namespace {

class AttentionGpuTest : public tritium::testing::GpuStreamTest {};

// Sliding windows on both head dims: both sides bounded, causal with a left bound (more keys
// than queries), one side only; K and V dense (TMA) and through strides.
TEST_F(AttentionGpuTest, SlidingWindows) {
  SKIP_WITHOUT_GPU();
  for (int64_t d : {64, 128}) {
    checkAttention<DeviceBuffer>(stream().get(), sync,
                                 {.batch = 2, .heads = 4, .kvHeads = 2, .seqQ = 700,
                                  .seqKV = 700, .headDim = d, .windowLeft = 100,
                                  .windowRight = 30});
    checkAttention<DeviceBuffer>(stream().get(), sync,
                                 {.batch = 1, .heads = 2, .kvHeads = 1, .seqQ = 500,
                                  .seqKV = 650, .headDim = d, .causal = true,
                                  .windowLeft = 128, .seqMajor = true});
    checkAttention<DeviceBuffer>(stream().get(), sync,
                                 {.heads = 2, .kvHeads = 2, .seqQ = 300, .seqKV = 300,
                                  .headDim = d, .windowRight = 7});
  }
}

// Varlen batches on both head dims, causal or not, GQA 4:1, an empty sequence, K and V
// through pointers or (totalKV given) TMA; fp8 with V transposed into the workspace (every
// head dim) or through shared memory.
TEST_F(AttentionGpuTest, Varlen) {
  SKIP_WITHOUT_GPU();
  for (int64_t d : {64, 128})
    for (bool causal : {false, true})
      for (bool totalKV : {false, true}) // (given: K and V through TMA)
        checkVarlenAttention<DeviceBuffer>(stream().get(), sync,
                                           {.seqQ = {300, 0, 1, 777}, .seqKV = {300, 0, 45, 900},
                                            .heads = 8, .kvHeads = 2, .headDim = d,
                                            .causal = causal, .totalKV = totalKV});
  checkVarlenAttention<DeviceBuffer>(stream().get(), sync,
                                     {.seqQ = {300, 0, 1, 777}, .seqKV = {300, 0, 45, 900},
                                      .heads = 8, .kvHeads = 2, .headDim = 256, .causal = true,
                                      .totalKV = true});
  for (int64_t d : {64, 128, 256})
    for (bool causal : {false, true})
      checkVarlenAttention<DeviceBuffer>(
          stream().get(), sync,
          {.dtype = kernels::Dtype::fp8e4m3, .seqQ = {300, 0, 1, 777},
           .seqKV = {301, 0, 45, 900}, .heads = 8, .kvHeads = 2, .headDim = d, .causal = causal,
           .descaleQ = 0.5f, .descaleK = 1.5f, .descaleV = 2.0f, .workspace = true});
  checkVarlenAttention<DeviceBuffer>(stream().get(), sync,
                                     {.dtype = kernels::Dtype::fp8e4m3, .seqQ = {300, 0, 1, 777},
                                      .seqKV = {301, 0, 45, 900}, .heads = 8, .kvHeads = 2,
                                      .headDim = 128, .causal = true});
}

// The backward after the forward, against double-precision gradients: every head dim (256:
// dV and dK in two programs), causal or not, GQA 4:1, lengths that are not multiples of a
// block.
TEST_F(AttentionGpuTest, Backward) {
  SKIP_WITHOUT_GPU();
  // O laid out as Q (dK/dV reads Q and dO through descriptors) and not (through pointers).
  for (int64_t d : {64, 128, 256})
    for (bool causal : {false, true})
      for (bool oLikeQ : {false, true})
        checkAttentionBackward<DeviceBuffer>(stream().get(), sync,
                                             {.dtype = kernels::Dtype::fp16, .batch = 2,
                                              .heads = 4, .kvHeads = 1, .seqQ = 300,
                                              .seqKV = 333, .headDim = d, .causal = causal,
                                              .oLikeQ = oLikeQ});
  checkAttentionBackward<DeviceBuffer>(stream().get(), sync,
                                       {.heads = 2, .kvHeads = 2, .seqQ = 129, .seqKV = 65,
                                        .headDim = 128, .causal = true});
  // 128 own rows on two warp groups (head_dim 128's plan until its one-group plan timed
  // faster), causal and not.
  for (bool causal : {false, true})
    checkAttentionBackward<DeviceBuffer>(
        stream().get(), sync,
        {.dtype = kernels::Dtype::fp16, .batch = 2, .heads = 4, .kvHeads = 1, .seqQ = 300,
         .seqKV = 333, .headDim = 128, .causal = causal, .oLikeQ = true,
         .backwardPlan = kernels::AttentionBackwardPlan{.ownRows = 128, .stepRows = 64,
                                                        .numWarps = 8, .numStages = 2}});
  // With a producer warp group copying the walked tiles (dK/dV: one loop over the group's
  // query heads and blocks).
  for (int64_t d : {64, 128, 256})
    for (bool causal : {false, true}) {
      kernels::AttentionBackwardPlan plan = kernels::planAttentionBackward(d);
      plan.warpSpecialize = true;
      checkAttentionBackward<DeviceBuffer>(stream().get(), sync,
                                           {.dtype = kernels::Dtype::fp16, .batch = 2,
                                            .heads = 4, .kvHeads = 1, .seqQ = 300,
                                            .seqKV = 333, .headDim = d, .causal = causal,
                                            .oLikeQ = true, .backwardPlan = plan});
    }
  // Steps of 32 rows at head_dim 256 (wgmma with n32 scores and k32 products: P^T from
  // registers, dO's rows of 64 bytes).
  for (bool causal : {false, true})
    checkAttentionBackward<DeviceBuffer>(
        stream().get(), sync,
        {.batch = 2, .heads = 4, .kvHeads = 2, .seqQ = 200, .seqKV = 231, .headDim = 256,
         .causal = causal, .oLikeQ = true,
         .backwardPlan = kernels::AttentionBackwardPlan{.ownRows = 64, .stepRows = 32,
                                                        .numWarps = 4, .numStages = 2,
                                                        .splitDkDv = true}});
}

// Head dims padded to a power of two (80 and 96 to 128, 192 to 256) and 32, against
// double-precision gradients: descriptors and pointers, GQA, causal, dK and dV as whole tiles.
TEST_F(AttentionGpuTest, BackwardAtOtherHeadDims) {
  SKIP_WITHOUT_GPU();
  for (int64_t d : {32, 80, 96, 192})
    checkAttentionBackward<DeviceBuffer>(stream().get(), sync,
                                         {.dtype = kernels::Dtype::fp16, .batch = 2, .heads = 4,
                                          .kvHeads = 1, .seqQ = 300, .seqKV = 333, .headDim = d,
                                          .causal = true, .oLikeQ = d != 32});
  checkAttentionBackward<DeviceBuffer>(stream().get(), sync,
                                       {.heads = 4, .kvHeads = 2, .headDim = 80, .causal = true,
                                        .varlenQ = {300, 0, 77}, .varlenKV = {333, 5, 77}});
  kernels::AttentionBackwardPlan plan = kernels::planAttentionBackward(96);
  plan.blockStore = true;
  checkAttentionBackward<DeviceBuffer>(stream().get(), sync,
                                       {.heads = 4, .kvHeads = 2, .seqQ = 256, .seqKV = 256,
                                        .headDim = 96, .oLikeQ = true, .backwardPlan = plan});
}

// Plans with blockStore, keys a multiple of the own rows, K and V dense: dK and dV stored a
// whole tile of rows at a time through descriptors (TMA stores on Hopper), every head dim, GQA
// 4:1, causal and not, and the producer plan.
TEST_F(AttentionGpuTest, BackwardStoresWholeKeyBlocks) {
  SKIP_WITHOUT_GPU();
  for (int64_t d : {64, 128, 256})
    for (bool causal : {false, true}) {
      kernels::AttentionBackwardPlan plan = kernels::planAttentionBackward(d);
      plan.blockStore = true;
      checkAttentionBackward<DeviceBuffer>(stream().get(), sync,
                                           {.dtype = kernels::Dtype::fp16, .batch = 2,
                                            .heads = 4, .kvHeads = 1, .seqQ = 300,
                                            .seqKV = 384, .headDim = d, .causal = causal,
                                            .oLikeQ = true, .backwardPlan = plan});
    }
  kernels::AttentionBackwardPlan plan = kernels::planAttentionBackward(128);
  plan.warpSpecialize = plan.blockStore = true;
  checkAttentionBackward<DeviceBuffer>(stream().get(), sync,
                                       {.heads = 4, .kvHeads = 2, .seqQ = 256, .seqKV = 256,
                                        .headDim = 128, .causal = true, .oLikeQ = true,
                                        .backwardPlan = plan});
}

// Sliding windows and the [batch, seq, heads, head_dim] layout, at every head dim; with O laid
// out as Q too, every tile the kernels walk comes through descriptors of that layout (and at
// head_dim 256, 384 keys, dK and dV are stored as whole tiles).
TEST_F(AttentionGpuTest, BackwardWindowsAndStrides) {
  SKIP_WITHOUT_GPU();
  for (int64_t d : {64, 128, 256}) {
    checkAttentionBackward<DeviceBuffer>(stream().get(), sync,
                                         {.batch = 2, .heads = 4, .kvHeads = 2, .seqQ = 300,
                                          .seqKV = 384, .headDim = d, .causal = true,
                                          .seqMajor = true, .oLikeQ = true});
    checkAttentionBackward<DeviceBuffer>(stream().get(), sync,
                                         {.dtype = kernels::Dtype::fp16, .batch = 2, .heads = 4,
                                          .kvHeads = 2, .seqQ = 300, .seqKV = 333, .headDim = d,
                                          .windowLeft = 100, .windowRight = 30,
                                          .seqMajor = true});
    checkAttentionBackward<DeviceBuffer>(stream().get(), sync,
                                         {.heads = 2, .kvHeads = 1, .seqQ = 257, .seqKV = 257,
                                          .headDim = d, .causal = true, .windowLeft = 64});
  }
}

// Varlen batches (an empty sequence, a single token, more keys than queries), every head dim,
// causal and not, GQA 4:1.
TEST_F(AttentionGpuTest, BackwardVarlen) {
  SKIP_WITHOUT_GPU();
  for (int64_t d : {64, 128, 256})
    for (bool causal : {false, true})
      for (bool tma : {false, true}) // (Q, dO, K and V through descriptors, or pointers)
        checkAttentionBackward<DeviceBuffer>(stream().get(), sync,
                                             {.dtype = kernels::Dtype::fp16, .heads = 4,
                                              .kvHeads = 1, .headDim = d, .causal = causal,
                                              .oLikeQ = tma, .varlenQ = {300, 0, 1, 129},
                                              .varlenKV = {333, 0, 7, 129}, .totalKV = tma});
}

// Against the forward's finite differences, at every head dim.
TEST_F(AttentionGpuTest, BackwardByFiniteDifferences) {
  SKIP_WITHOUT_GPU();
  for (int64_t d : {64, 128, 256})
    checkAttentionBackwardByFiniteDifferences<DeviceBuffer>(
        stream().get(), sync,
        {.dtype = kernels::Dtype::fp16, .heads = 4, .kvHeads = 2, .seqQ = 70, .seqKV = 90,
         .headDim = d, .causal = true});
}

// fp8 e4m3 operands with descales into bf16, every head dim, causal and not, GQA.
TEST_F(AttentionGpuTest, Fp8Forward) {
  SKIP_WITHOUT_GPU();
  for (int64_t d : {64, 128, 256})
    for (bool causal : {false, true})
      checkAttention<DeviceBuffer>(stream().get(), sync,
                                   {.dtype = kernels::Dtype::fp8e4m3, .batch = 2, .heads = 4,
                                    .kvHeads = 2, .seqQ = 300, .seqKV = 300, .headDim = d,
                                    .causal = causal, .descaleQ = 0.5f, .descaleK = 1.5f,
                                    .descaleV = 2.0f});
}

// V stored transposed: fp8 on the planner's plan for it and on 128 x 128 tiles with and without
// the producer warp group (TMA tiles of V^T, read in place under a trans), bf16 with padded
// rows (pointers), keys that are no multiple of a block (V^T's rows then no multiple of 16
// bytes: the descriptor's loads fall back to pointers).
TEST_F(AttentionGpuTest, TransposedValues) {
  SKIP_WITHOUT_GPU();
  for (bool ws : {false, true})
    for (bool causal : {false, true})
      checkAttention<DeviceBuffer>(
          stream().get(), sync,
          {.dtype = kernels::Dtype::fp8e4m3, .batch = 2, .heads = 4, .kvHeads = 2, .seqQ = 300,
           .seqKV = 320, .headDim = 128, .causal = causal, .descaleQ = 0.5f, .descaleK = 1.5f,
           .descaleV = 2.0f, .vTransposed = true,
           .plan = kernels::AttentionPlan{.blockM = 128, .blockN = 128, .numWarps = 8,
                                          .numStages = 2, .warpSpecialize = ws}});
  for (int64_t d : {64, 128, 256})
    checkAttention<DeviceBuffer>(stream().get(), sync,
                                 {.dtype = kernels::Dtype::fp8e4m3, .batch = 2, .heads = 4,
                                  .kvHeads = 1, .seqQ = 257, .seqKV = 301, .headDim = d,
                                  .causal = true, .vTransposed = true});
  // head_dim 256 on the planner's 128 keys a step, V^T's tiles through TMA (320 keys).
  for (bool causal : {false, true})
    checkAttention<DeviceBuffer>(stream().get(), sync,
                                 {.dtype = kernels::Dtype::fp8e4m3, .batch = 2, .heads = 4,
                                  .kvHeads = 2, .seqQ = 300, .seqKV = 320, .headDim = 256,
                                  .causal = causal, .descaleQ = 0.5f, .descaleK = 1.5f,
                                  .descaleV = 2.0f, .vTransposed = true});
  // 64 queries on one warp group (several programs a SM), the plan for fp8 with V transposed
  // on warp groups (notes/attention.md, "fp8"), given explicitly so that other GPUs run it.
  for (int64_t d : {64, 128})
    for (bool causal : {false, true})
      checkAttention<DeviceBuffer>(
          stream().get(), sync,
          {.dtype = kernels::Dtype::fp8e4m3, .batch = 2, .heads = 4, .kvHeads = 2, .seqQ = 300,
           .seqKV = 320, .headDim = d, .causal = causal, .descaleQ = 0.5f, .descaleK = 1.5f,
           .descaleV = 2.0f, .vTransposed = true,
           .plan = kernels::AttentionPlan{.blockM = 64, .blockN = 128, .numWarps = 4,
                                          .numStages = 2}});
  // fp8 with V as stored, transposed into the workspace first (strided, GQA, every head dim).
  for (int64_t d : {64, 128, 256})
    checkAttention<DeviceBuffer>(
        stream().get(), sync,
        {.dtype = kernels::Dtype::fp8e4m3, .batch = 2, .heads = 4, .kvHeads = 2, .seqQ = 300,
         .seqKV = 320, .headDim = d, .causal = d == 128, .seqMajor = d == 64,
         .descaleQ = 0.5f, .descaleK = 1.5f, .descaleV = 2.0f, .workspace = true});
  checkAttention<DeviceBuffer>(stream().get(), sync,
                               {.batch = 2, .heads = 4, .kvHeads = 2, .seqQ = 200, .seqKV = 200,
                                .headDim = 128, .causal = true, .seqMajor = true,
                                .vTransposed = true});
  checkAttention<DeviceBuffer>(stream().get(), sync,
                               {.dtype = kernels::Dtype::fp16, .batch = 1, .heads = 2,
                                .kvHeads = 2, .seqQ = 128, .seqKV = 384, .headDim = 64,
                                .vTransposed = true});
}

TEST_F(AttentionGpuTest, Forward) {
  SKIP_WITHOUT_GPU();
  for (kernels::Dtype t : {kernels::Dtype::bf16, kernels::Dtype::fp16})
    for (int64_t d : {64, 128})
      for (bool causal : {false, true})
        checkAttention<DeviceBuffer>(stream().get(), sync,
                                     {.dtype = t, .batch = 2, .heads = 8, .kvHeads = 1,
                                      .seqQ = 300, .seqKV = 300, .headDim = d,
                                      .causal = causal});
  checkAttention<DeviceBuffer>(stream().get(), sync,
                               {.batch = 1, .heads = 4, .kvHeads = 4, .seqQ = 17, .seqKV = 1000,
                                .headDim = 128, .causal = true, .seqMajor = true});
  checkAttention<DeviceBuffer>(stream().get(), sync,
                               {.batch = 3, .heads = 2, .kvHeads = 2, .seqQ = 1, .seqKV = 77});
  for (bool causal : {false, true}) // head_dim 256
    checkAttention<DeviceBuffer>(stream().get(), sync,
                                 {.batch = 2, .heads = 4, .kvHeads = 2, .seqQ = 333, .seqKV = 333,
                                  .headDim = 256, .causal = causal});
  checkAttention<DeviceBuffer>(stream().get(), sync,
                               {.batch = 1, .heads = 2, .kvHeads = 1, .seqQ = 200, .seqKV = 70,
                                .causal = true});
}

// Scores that grow along the keys: rows whose maxima grow step after step beside rows (16 to a
// warp) whose maxima barely move, so that the accumulators' rescale matters after the first
// step (random scores alone hardly exercise it); the plans of the forward at head_dim 128 and
// the planner's at 64 and 256.
TEST_F(AttentionGpuTest, ScoresThatOutgrowTheRunningMaximum) {
  SKIP_WITHOUT_GPU();
  for (int64_t d : {64, 128, 256})
    for (bool causal : {false, true})
      checkAttention<DeviceBuffer>(stream().get(), sync,
                                   {.batch = 2, .heads = 4, .kvHeads = 2, .seqQ = 400,
                                    .seqKV = 600, .headDim = d, .causal = causal,
                                    .growth = 1.0 / 24});
  checkAttention<DeviceBuffer>(stream().get(), sync,
                               {.dtype = kernels::Dtype::fp16, .batch = 1, .heads = 4,
                                .kvHeads = 4, .seqQ = 300, .seqKV = 700, .headDim = 128,
                                .growth = 1.0 / 24});
  for (kernels::AttentionPlan plan :
       {kernels::AttentionPlan{.blockM = 128, .blockN = 128, .numWarps = 8, .numStages = 2,
                               .warpSpecialize = true, .overlapSoftmax = true},
        kernels::AttentionPlan{.blockM = 128, .blockN = 128, .numWarps = 8, .numStages = 2,
                               .warpSpecialize = true, .pingPong = true, .persistent = true},
        kernels::AttentionPlan{.blockM = 128, .blockN = 64, .numWarps = 8, .numStages = 2}})
    checkAttention<DeviceBuffer>(stream().get(), sync,
                                 {.batch = 2, .heads = 4, .kvHeads = 2, .seqQ = 512,
                                  .seqKV = 640, .headDim = 128, .plan = plan,
                                  .growth = 1.0 / 24});
}

// Head dims padded to the next power of two (80, 96, 192) and 32: dense K and V (descriptors
// reading the padded columns as zeros), strided ones, V transposed, causal, GQA.
TEST_F(AttentionGpuTest, ForwardAtOtherHeadDims) {
  SKIP_WITHOUT_GPU();
  for (int64_t d : {32, 80, 96, 192})
    checkAttention<DeviceBuffer>(stream().get(), sync,
                                 {.batch = 2, .heads = 8, .kvHeads = 2, .seqQ = 300,
                                  .seqKV = 333, .headDim = d, .causal = d != 96});
  checkAttention<DeviceBuffer>(stream().get(), sync,
                               {.dtype = kernels::Dtype::fp16, .heads = 4, .kvHeads = 1,
                                .seqQ = 257, .seqKV = 300, .headDim = 80, .seqMajor = true});
  checkAttention<DeviceBuffer>(stream().get(), sync,
                               {.heads = 2, .kvHeads = 2, .seqQ = 256, .seqKV = 256,
                                .headDim = 96, .causal = true, .vTransposed = true});
  checkAttention<DeviceBuffer>(stream().get(), sync,
                               {.dtype = kernels::Dtype::fp8e4m3, .batch = 2, .heads = 4,
                                .kvHeads = 2, .seqQ = 300, .seqKV = 320, .headDim = 96,
                                .descaleQ = 0.5f, .descaleK = 1.5f, .descaleV = 2.0f,
                                .vTransposed = true});
  checkVarlenAttention<DeviceBuffer>(stream().get(), sync,
                                     {.seqQ = {300, 0, 1, 777}, .seqKV = {300, 0, 45, 900},
                                      .heads = 8, .kvHeads = 2, .headDim = 96, .causal = true});
}

// Plans a caller may pass: 64 queries and 64 keys a step on one warp group at head_dim 128 (2
// and 3 stages: 82 and 115 KB, two programs a SM; slower than the planner's, notes/attention.md),
// bf16 and fp8 with V transposed: lengths no multiple of a block, causal with more keys than
// queries, GQA 4:1.
TEST_F(AttentionGpuTest, ForwardOnOneWarpGroupAtHeadDim128) {
  SKIP_WITHOUT_GPU();
  for (int stages : {2, 3})
    for (bool causal : {false, true})
      checkAttention<DeviceBuffer>(
          stream().get(), sync,
          {.batch = 2, .heads = 8, .kvHeads = 2, .seqQ = 300, .seqKV = 333, .headDim = 128,
           .causal = causal,
           .plan = kernels::AttentionPlan{.blockM = 64, .blockN = 64, .numWarps = 4,
                                          .numStages = stages}});
  for (bool causal : {false, true})
    checkAttention<DeviceBuffer>(
        stream().get(), sync,
        {.dtype = kernels::Dtype::fp8e4m3, .batch = 2, .heads = 4, .kvHeads = 2, .seqQ = 300,
         .seqKV = 320, .headDim = 128, .causal = causal, .descaleQ = 0.5f, .descaleK = 1.5f,
         .descaleV = 2.0f, .vTransposed = true,
         .plan = kernels::AttentionPlan{.blockM = 64, .blockN = 64, .numWarps = 4,
                                        .numStages = 2}});
}

// Persistent plans (AttentionPlan::persistent): more tiles than the programs that fit the SMs
// at once, so each program walks several, the last query blocks first when causal; the
// producer's ring runs on across tiles (head_dim 128), one warp group without it (64), head_dim
// 256; GQA, a window, more queries than keys, and sequences that are not multiples of a block.
TEST_F(AttentionGpuTest, ForwardPersistent) {
  SKIP_WITHOUT_GPU();
  // Short sequences over many heads: 256-384 tiles, more than the programs that fit at once,
  // at little reference work.
  for (int64_t d : {64, 128, 256}) {
    kernels::AttentionPlan plan = kernels::planAttention(d);
    plan.persistent = true;
    for (bool causal : {false, true})
      checkAttention<DeviceBuffer>(stream().get(), sync,
                                   {.batch = 8, .heads = 16, .kvHeads = 2, .seqQ = 130,
                                    .seqKV = 130, .headDim = d, .causal = causal,
                                    .plan = plan});
    checkAttention<DeviceBuffer>(stream().get(), sync,
                                 {.batch = 8, .heads = 16, .kvHeads = 16, .seqQ = 200,
                                  .seqKV = 90, .headDim = d, .causal = true, .plan = plan});
    checkAttention<DeviceBuffer>(stream().get(), sync,
                                 {.batch = 8, .heads = 16, .kvHeads = 4, .seqQ = 150,
                                  .seqKV = 150, .headDim = d, .windowLeft = 40,
                                  .windowRight = 0, .plan = plan});
  }
}

// The library's own plan at head_dim 128 walks short sequences without masks persistently
// (planAttention(args, ...); AttentionPtxTest.ShortUnmaskedSequencesWalkTheirTilesPersistently):
// 192 tiles of 300 rows, more than the programs, through the call's own plan.
TEST_F(AttentionGpuTest, ShortSequencesWalkTheirTilesPersistently) {
  SKIP_WITHOUT_GPU();
  for (kernels::Dtype dtype : {kernels::Dtype::bf16, kernels::Dtype::fp16}) {
    AttentionCase c{.dtype = dtype, .batch = 4, .heads = 16, .kvHeads = 4, .seqQ = 300,
                    .seqKV = 300, .headDim = 128};
    ASSERT_TRUE(kernels::planAttention(kernels::AttentionArgs{.batch = c.batch, .heads = c.heads,
                                                              .kvHeads = c.kvHeads,
                                                              .seqQ = c.seqQ, .seqKV = c.seqKV,
                                                              .headDim = c.headDim,
                                                              .dtype = dtype},
                                        true)
                    .persistent);
    checkAttention<DeviceBuffer>(stream().get(), sync, c);
  }
}

// FlashAttention-3's order (AttentionPlan::overlapSoftmax: each softmax under the previous
// P V product, one step more than the keys), with the producer warp group, alone and with the
// compute groups' turns: sequences that are not multiples of a block, causal with more
// queries than keys (rows that see none), a window, GQA 8:1, and strides that keep K and V
// off tensor descriptors (the plain loop).
TEST_F(AttentionGpuTest, ForwardWithTheSoftmaxUnderThePreviousProduct) {
  SKIP_WITHOUT_GPU();
  for (int64_t d : {64, 128})
    for (bool turns : {false, true}) {
      // (Head_dim 128's plan at both: head_dim 64's has one warp group and no producer.)
      kernels::AttentionPlan plan = kernels::planAttention(128);
      plan.overlapSoftmax = true;
      plan.pingPong = turns;
      for (bool causal : {false, true})
        checkAttention<DeviceBuffer>(stream().get(), sync,
                                     {.batch = 2, .heads = 8, .kvHeads = 1, .seqQ = 300,
                                      .seqKV = 300, .headDim = d, .causal = causal,
                                      .plan = plan});
      checkAttention<DeviceBuffer>(stream().get(), sync,
                                   {.heads = 2, .kvHeads = 1, .seqQ = 200, .seqKV = 70,
                                    .headDim = d, .causal = true, .plan = plan});
      checkAttention<DeviceBuffer>(stream().get(), sync,
                                   {.heads = 2, .kvHeads = 2, .seqQ = 260, .seqKV = 390,
                                    .headDim = d, .windowLeft = 100, .windowRight = 30,
                                    .plan = plan});
      checkAttention<DeviceBuffer>(stream().get(), sync,
                                   {.dtype = kernels::Dtype::fp16, .heads = 2, .kvHeads = 1,
                                    .seqQ = 129, .seqKV = 257, .headDim = d, .seqMajor = true,
                                    .plan = plan});
    }
}

// Decode: contiguous caches (positions or heads first) and paged ones, split parts combined or
// one part per sequence, GQA 8:1 and MHA, 1 and 4 query tokens, sequences of 0, 1, 17 and
// thousands of positions. Page sizes of 1, 12 (no power of two, and a 64-position tile spans
// parts of six pages), 16 and 256: each is a constant of its own specialization.
TEST_F(AttentionGpuTest, Decode) {
  SKIP_WITHOUT_GPU();
  checkDecode<DeviceBuffer>(stream().get(), sync,
                            {.batch = 4, .heads = 32, .kvHeads = 4, .headDim = 128,
                             .seqLens = {4000, 1, 17, 2500}});
  checkDecode<DeviceBuffer>(stream().get(), sync,
                            {.batch = 3, .heads = 16, .kvHeads = 2, .seqQ = 4, .headDim = 128,
                             .seqLens = {3000, 0, 700}, .pageSize = 16});
  checkDecode<DeviceBuffer>(stream().get(), sync,
                            {.dtype = kernels::Dtype::fp16, .batch = 2, .heads = 8,
                             .kvHeads = 8, .seqLens = {1500, 333}, .pageSize = 256,
                             .splits = 1});
  checkDecode<DeviceBuffer>(stream().get(), sync,
                            {.batch = 1, .heads = 8, .kvHeads = 1, .seqQ = 2, .seqLens = {5000},
                             .splits = 7, .causal = false});
  checkDecode<DeviceBuffer>(stream().get(), sync,
                            {.batch = 2, .heads = 8, .kvHeads = 2, .headDim = 128,
                             .seqLens = {1000, 77}, .pageSize = 12});
  checkDecode<DeviceBuffer>(stream().get(), sync,
                            {.batch = 2, .heads = 4, .kvHeads = 4, .seqLens = {300, 129},
                             .pageSize = 1, .splits = 3});
  // Head_dim 256 (32 positions a step): contiguous and paged, GQA 4:1, speculative tokens.
  checkDecode<DeviceBuffer>(stream().get(), sync,
                            {.batch = 3, .heads = 16, .kvHeads = 4, .headDim = 256,
                             .seqLens = {2000, 0, 333}});
  checkDecode<DeviceBuffer>(stream().get(), sync,
                            {.batch = 2, .heads = 8, .kvHeads = 2, .seqQ = 3, .headDim = 256,
                             .seqLens = {1500, 17}, .pageSize = 16});
  // Head_dim 96, padded to 128: contiguous and paged.
  checkDecode<DeviceBuffer>(stream().get(), sync,
                            {.batch = 2, .heads = 16, .kvHeads = 4, .headDim = 96,
                             .seqLens = {2000, 129}});
  checkDecode<DeviceBuffer>(stream().get(), sync,
                            {.batch = 2, .heads = 8, .kvHeads = 8, .headDim = 96,
                             .seqLens = {700, 1}, .pageSize = 16});
  // Contiguous caches with heads first ([batch, kv_heads, positions, D]), lengths that end
  // on a step and inside one, one part and 64; (as in every case) the slots past each length
  // hold NaN, which no masked tile may let into P V.
  checkDecode<DeviceBuffer>(stream().get(), sync,
                            {.batch = 3, .heads = 32, .kvHeads = 8, .headDim = 128,
                             .seqLens = {4096, 4000, 63}, .headMajor = true});
  checkDecode<DeviceBuffer>(stream().get(), sync,
                            {.batch = 1, .heads = 32, .kvHeads = 8, .headDim = 128,
                             .seqLens = {16384}, .splits = 64});
  checkDecode<DeviceBuffer>(stream().get(), sync,
                            {.batch = 2, .heads = 16, .kvHeads = 4, .seqQ = 2, .headDim = 256,
                             .seqLens = {777, 2048}, .headMajor = true, .splits = 1});
}

} // namespace
