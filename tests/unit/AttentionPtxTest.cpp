// What the library's attention kernels compile to, without a GPU: the decode's K and V tiles
// come through cp.async rings in a contiguous cache, and ptxas takes every form without spills.
#include "PtxChecks.h"

#include "kernels/AttentionDecode.h"

using namespace tritium;
using tritium::testing::count;
using tritium::testing::expectAssembles;

namespace {

class AttentionPtxTest : public tritium::testing::CompilerTest {};

Artifacts compileDecode(bool paged, int64_t splits, const kernels::AttentionDecodePlan &plan) {
  static int32_t table = 0, lens = 0;
  kernels::AttentionDecodeArgs a{.seqLens = &lens, .blockTable = paged ? &table : nullptr,
                                 .pageSize = paged ? 16 : 0, .maxPages = 256, .batch = 4,
                                 .heads = 32, .kvHeads = 8, .maxSeqKV = 4096, .headDim = 128};
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

TEST_F(AttentionPtxTest, DecodeReadsTheCacheThroughRings) {
  Artifacts a = compileDecode(false, 16, kernels::planAttentionDecode(false));
  EXPECT_NE(a.gir.find("pipelined = 1"), std::string::npos) << a.gir;
  EXPECT_GE(count(a.ptx, "cp.async.cg.shared.global"), 2u);
  expectAssembles(a, "sm_90a");
  // A paged cache's rows come from the block table loaded in the loop: plain loads, on the
  // planner's plan for pages (8 warps, 32 positions a step), which leaves no spills.
  Artifacts p = compileDecode(true, 1, kernels::planAttentionDecode(true));
  EXPECT_EQ(p.gir.find("pipelined = 1"), std::string::npos) << p.gir;
  expectAssembles(p, "sm_90a");
}

} // namespace
