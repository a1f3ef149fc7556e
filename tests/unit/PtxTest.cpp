// The softmax kernel of Triton's tutorial compiled to PTX for a range of block sizes and warp
// counts: the PTX has the expected entry, target and instructions, and ptxas assembles it for
// sm_90 without spilling.
#include "LogCapture.h"
#include "TestSupport.h"

#include "compiler/support/Error.h"
#include "kernels/Softmax.h"
#include "frontend/Kernel.h"

#include <gtest/gtest.h>

#include <ostream>
#include <regex>
#include <string>

using namespace tritium;

namespace {

struct Config {
  int64_t blockSize;
  int numWarps;
};

void PrintTo(const Config &c, std::ostream *os) {
  *os << "BLOCK_SIZE=" << c.blockSize << " num_warps=" << c.numWarps;
}

std::string configName(const ::testing::TestParamInfo<Config> &info) {
  return "block" + std::to_string(info.param.blockSize) + "_warps" +
         std::to_string(info.param.numWarps);
}

Specialization softmaxSpec(int64_t blockSize, int numWarps, int numStages = 4) {
  return Specialization{.signature = {"*fp32", "*fp32", "i32", "i32", "i32", "i32"},
                        .constexprs = {blockSize, numStages},
                        .numWarps = numWarps,
                        .numStages = numStages};
}

size_t count(const std::string &text, const std::string &needle) {
  size_t n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1))
    ++n;
  return n;
}

// The structural checks every softmax PTX must pass.
void checkSoftmaxPtx(const std::string &ptx, const std::string &arch, int numWarps) {
  EXPECT_NE(ptx.find(".entry softmax_kernel("), std::string::npos) << ptx;
  EXPECT_NE(ptx.find(".target " + arch + "\n"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find(".address_size 64"), std::string::npos);
  // exp(x) as ex2.approx(x * log2 e), like Triton.
  EXPECT_NE(ptx.find("ex2.approx"), std::string::npos) << ptx;
  // max and sum: five butterfly steps each across the warp.
  EXPECT_GE(count(ptx, "shfl.sync.bfly"), 10u) << ptx;
  // Cross-warp combination needs barriers exactly when there are several warps.
  bool barrier = ptx.find("bar.sync") != std::string::npos ||
                 ptx.find("barrier.sync") != std::string::npos;
  EXPECT_EQ(barrier, numWarps > 1) << ptx;
  // The masked row load: a cp.async copy into the pipeline's shared-memory ring when the loop
  // is pipelined (num_stages > 1), else a predicated global load.
  if (ptx.find("cp.async") != std::string::npos) {
    EXPECT_NE(ptx.find("cp.async.commit_group"), std::string::npos) << ptx;
    EXPECT_NE(ptx.find("cp.async.wait_group"), std::string::npos) << ptx;
  } else {
    EXPECT_TRUE(std::regex_search(ptx, std::regex(R"(@%p\d+\s+ld\.global)"))) << ptx;
  }
  EXPECT_TRUE(std::regex_search(ptx, std::regex(R"(@%p\d+\s+st\.global)"))) << ptx;
}

class SoftmaxPtxTest : public tritium::testing::CompilerTest,
                       public ::testing::WithParamInterface<Config> {};

} // namespace

TEST_P(SoftmaxPtxTest, CompilesAndAssemblesWithoutSpills) {
  const Config c = GetParam();
  Artifacts a = kernels::softmaxKernel().compileTo(softmaxSpec(c.blockSize, c.numWarps),
                                                   Stage::PTX);
  ASSERT_FALSE(a.ptx.empty());
  checkSoftmaxPtx(a.ptx, "sm_90", c.numWarps);
  EXPECT_NE(a.ptx.find(".version 8.1"), std::string::npos);
  // Every earlier stage is kept, too.
  EXPECT_NE(a.tir.find("kernel @softmax_kernel("), std::string::npos) << a.tir;
  EXPECT_NE(a.gir.find("#blocked<"), std::string::npos) << a.gir;
  EXPECT_NE(a.llvm.find("define"), std::string::npos);
  // One shared slot per warp for each of the two reductions when warps must combine, plus the
  // pipeline's ring of row buffers when the loop is pipelined (blocks of at least a CTA).
  // Without the ':16' specialization the loads are not known to be 16-byte vectors, and only
  // those are pipelined.
  bool pipelined = a.gir.find("pipeline_stages") != std::string::npos;
  EXPECT_FALSE(pipelined) << a.gir;
  EXPECT_EQ(a.ptx.find("cp.async") != std::string::npos, pipelined) << a.ptx;
  if (c.numWarps > 1 || pipelined)
    EXPECT_GT(a.sharedBytes, 0);
  else
    EXPECT_EQ(a.sharedBytes, 0);

  if (tritium::testing::ptxasPath().empty())
    GTEST_SKIP() << "ptxas was not found at configure time; the PTX was not assembled";
  tritium::testing::PtxasResult r = tritium::testing::runPtxas(a.ptx, "sm_90");
  ASSERT_EQ(r.exitCode, 0) << "ptxas failed:\n" << r.output << "\n--- PTX ---\n" << a.ptx;
  EXPECT_NE(r.output.find("Compiling entry function 'softmax_kernel' for 'sm_90'"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("0 bytes spill stores"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("error"), std::string::npos) << r.output;
}

INSTANTIATE_TEST_SUITE_P(Softmax, SoftmaxPtxTest,
                         ::testing::Values(Config{1, 4}, Config{4, 4}, Config{32, 1},
                                           Config{256, 4}, Config{1024, 4}, Config{1024, 8},
                                           Config{4096, 8}, Config{16384, 16}),
                         configName);

class PtxTest : public tritium::testing::CompilerTest {};

TEST_F(PtxTest, TutorialSpecializationsAssemble) {
  for (int64_t nCols : {781, 2048, 12288}) {
    SCOPED_TRACE(nCols);
    Specialization s = kernels::softmaxSpecialization(nCols);
    ASSERT_EQ(s.constexprs[0] >= nCols, true);
    Artifacts a = kernels::softmaxKernel().compileTo(s, Stage::PTX);
    checkSoftmaxPtx(a.ptx, "sm_90", s.numWarps);
    if (tritium::testing::ptxasPath().empty())
      continue;
    tritium::testing::PtxasResult r = tritium::testing::runPtxas(a.ptx, "sm_90");
    EXPECT_EQ(r.exitCode, 0) << r.output;
    EXPECT_NE(r.output.find("0 bytes spill stores"), std::string::npos) << r.output;
  }
  if (tritium::testing::ptxasPath().empty())
    GTEST_SKIP() << "ptxas was not found at configure time; the PTX was not assembled";
}

TEST_F(PtxTest, Sm80Target) {
  Specialization s = softmaxSpec(1024, 4);
  s.arch = "sm_80";
  Artifacts a = kernels::softmaxKernel().compileTo(s, Stage::PTX);
  checkSoftmaxPtx(a.ptx, "sm_80", 4);
  EXPECT_EQ(a.ptx.find("sm_90"), std::string::npos);
  if (tritium::testing::ptxasPath().empty())
    GTEST_SKIP() << "ptxas was not found at configure time; the PTX was not assembled";
  tritium::testing::PtxasResult r = tritium::testing::runPtxas(a.ptx, "sm_80");
  EXPECT_EQ(r.exitCode, 0) << r.output;
}

// A row whose ring cannot fit in shared memory (65536 fp32, 256 KiB a stage) leaves the
// `range(..., num_stages)` loop plain, and the compilation says so, naming the loop's line in
// the DSL source and the bytes; a row whose ring fits says nothing.
TEST_F(PtxTest, ALoopWhoseRingDoesNotFitWarnsThatItRunsUnpipelined) {
  // Aligned pointers, row strides and row length (Triton's ":16" marks): rows of whole 16-byte
  // vectors, which a ring may copy.
  auto aligned = [](int64_t blockSize) {
    Specialization s = softmaxSpec(blockSize, 16);
    s.signature = {"*fp32:16", "*fp32:16", "i32:16", "i32:16", "i32", "i32:16"};
    return s;
  };
  {
    tritium::testing::LogCapture logs;
    Artifacts a = kernels::softmaxKernel().compileTo(aligned(65536), Stage::PTX);
    EXPECT_EQ(a.ptx.find("cp.async"), std::string::npos); // no ring of either kind
    std::regex expected(R"(warning: Softmax\.cpp:[0-9]+: a loop with num_stages = 4 runs )"
                        R"(unpipelined: its ring \(26216[0-9] bytes a stage\) does not fit in )"
                        R"(the [0-9]+ bytes of shared memory left)");
    EXPECT_TRUE(std::regex_search(logs.text(), expected)) << logs.text();
  }
  tritium::testing::LogCapture logs;
  Artifacts a = kernels::softmaxKernel().compileTo(aligned(16384), Stage::PTX);
  EXPECT_NE(a.ptx.find("cp.async"), std::string::npos); // its ring
  EXPECT_EQ(logs.text().find("runs unpipelined"), std::string::npos) << logs.text();
}

TEST_F(PtxTest, PtxVersionIsHonoured) {
  Specialization s = softmaxSpec(256, 4);
  s.ptxVersion = 83;
  Artifacts a = kernels::softmaxKernel().compileTo(s, Stage::PTX);
  EXPECT_NE(a.ptx.find(".version 8.3\n"), std::string::npos) << a.ptx.substr(0, 400);
}

TEST_F(PtxTest, UnknownArchIsAUserError) {
  for (const char *arch : {"sm_1", "compute_90", "", "sm_90x"}) {
    SCOPED_TRACE(arch);
    Specialization s = softmaxSpec(1024, 4);
    s.arch = arch;
    try {
      kernels::softmaxKernel().compileTo(s, Stage::PTX);
      ADD_FAILURE() << "arch '" << arch << "' was accepted";
    } catch (const UserError &e) {
      EXPECT_NE(std::string(e.what()).find(std::string("unknown GPU architecture '") + arch + "'"),
                std::string::npos)
          << e.what();
    }
  }
  // Through Kernel::compile too, and nothing is cached for it.
  Specialization s = softmaxSpec(1024, 4);
  s.arch = "sm_1";
  EXPECT_THROW(kernels::softmaxKernel().compile(s), UserError);
  EXPECT_TRUE(std::filesystem::is_empty(cacheDir()) || !std::filesystem::exists(cacheDir()));
}

// With pointers and strides specialized as divisible by 16, the row load is a 16-byte vector
// and the num_stages loop is pipelined through bulk copies into a ring of num_stages - 1 shared
// buffers (each refilled as soon as it has been read).
TEST_F(PtxTest, AlignedRowsArePipelinedWithBulkCopies) {
  for (auto [block, warps, stages] : {std::tuple{1024, 4, 4}, {4096, 8, 4}, {16384, 16, 3},
                                      {2048, 4, 2}}) {
    Specialization s = softmaxSpec(block, warps, stages);
    s.signature = {"*fp32:16", "*fp32:16", "i32:16", "i32:16", "i32", "i32:16"};
    Artifacts a = kernels::softmaxKernel().compileTo(s, Stage::PTX);
    EXPECT_NE(a.gir.find("pipeline_stages = " + std::to_string(stages) + ", bulk_barriers"),
              std::string::npos)
        << a.gir;
    // One copy instruction in the prologue per stage ahead and one in the loop, no cp.async.
    size_t copies = 0;
    for (size_t at = a.ptx.find("cp.async.bulk.shared::cluster.global"); at != std::string::npos;
         at = a.ptx.find("cp.async.bulk.shared::cluster.global", at + 1))
      ++copies;
    EXPECT_EQ(copies, size_t(stages)) << a.ptx;
    EXPECT_EQ(a.ptx.find("cp.async.cg"), std::string::npos);
    EXPECT_NE(a.ptx.find("mbarrier.try_wait.parity"), std::string::npos);
    // The ring and its 2 x (stages - 1) mbarriers, and not a buffer more.
    EXPECT_GE(a.sharedBytes, int64_t(stages - 1) * (block * 4 + 16));
    EXPECT_LT(a.sharedBytes, int64_t(stages) * block * 4);
    if (tritium::testing::ptxasPath().empty())
      continue;
    tritium::testing::PtxasResult r = tritium::testing::runPtxas(a.ptx, "sm_90");
    EXPECT_EQ(r.exitCode, 0) << r.output;
    EXPECT_NE(r.output.find("0 bytes spill stores"), std::string::npos) << r.output;
  }
}

// Bulk copies are Hopper's: on sm_80 the same ring copies 16 bytes per thread.
TEST_F(PtxTest, AmpereRingsUseCpAsync) {
  Specialization s = softmaxSpec(1024, 4, 3);
  s.signature = {"*fp32:16", "*fp32:16", "i32:16", "i32:16", "i32", "i32:16"};
  s.arch = "sm_80";
  s.ptxVersion = 78;
  Artifacts a = kernels::softmaxKernel().compileTo(s, Stage::PTX);
  EXPECT_NE(a.gir.find("pipeline_stages = 3"), std::string::npos) << a.gir;
  EXPECT_EQ(a.gir.find("bulk_barriers"), std::string::npos) << a.gir;
  EXPECT_NE(a.ptx.find("cp.async.cg.shared.global"), std::string::npos);
  EXPECT_EQ(a.ptx.find("mbarrier"), std::string::npos);
}

TEST_F(PtxTest, AlignedRowsArePipelinedWithCpAsyncWithoutBulkCopies) {
  for (auto [block, warps, stages] : {std::tuple{1024, 4, 4}, {4096, 8, 4}, {16384, 16, 3},
                                      {2048, 4, 2}}) {
    Specialization s = softmaxSpec(block, warps, stages);
    s.signature = {"*fp32:16", "*fp32:16", "i32:16", "i32:16", "i32", "i32:16"};
    s.bulkCopies = false;
    Artifacts a = kernels::softmaxKernel().compileTo(s, Stage::PTX);
    EXPECT_EQ(a.gir.find("bulk_barriers"), std::string::npos) << a.gir;
    EXPECT_NE(a.gir.find("pipeline_stages = " + std::to_string(stages)), std::string::npos)
        << a.gir;
    EXPECT_NE(a.gir.find("vec = 4, pipelined = 1"), std::string::npos) << a.gir;
    EXPECT_NE(a.ptx.find("cp.async.cg.shared.global"), std::string::npos);
    EXPECT_NE(a.ptx.find("cp.async.wait_group \t" + std::to_string(stages - 2) + ";"), std::string::npos);
    EXPECT_NE(a.ptx.find("st.global.v4"), std::string::npos);
    // The ring: `stages` buffers of one row each, after the reduction slots.
    EXPECT_GE(a.sharedBytes, int64_t(stages) * block * 4);
    if (tritium::testing::ptxasPath().empty())
      continue;
    tritium::testing::PtxasResult r = tritium::testing::runPtxas(a.ptx, "sm_90");
    EXPECT_EQ(r.exitCode, 0) << r.output;
    EXPECT_NE(r.output.find("0 bytes spill stores"), std::string::npos) << r.output;
  }
}

// Specialization::fpFusion (Triton's enable_fp_fusion): on by default, a multiply feeding an add
// is one fma; off, the TIR says fp_fusion = 0 and the two keep their own roundings; the two
// forms are two specializations.
void axpyKernel(dsl::Ptr out, dsl::Ptr x, dsl::Ptr y, dsl::Float a, int BLOCK) {
  using namespace tritium::dsl;
  auto offs = arange(0, BLOCK);
  store(out + offs, load(x + offs) * a + load(y + offs));
}

// Specialization::strengthReduction: off, NVPTX's straight-line strength reduction is left out
// of the back end, so that each row of a tile computes its own address where the pass would
// have made it an offset from a neighbour row's (the PTX's ld/st [base+offset] form); another
// specialization, the same IR before the back end.
void stridedRowsKernel(dsl::Ptr out, dsl::Ptr x, dsl::Int stride, int ROWS, int COLS) {
  using namespace tritium::dsl;
  auto r = arange(0, ROWS), c = arange(0, COLS);
  auto tile = load(x + r(_, None) * stride + c(None, _));
  store(out + r(_, None) * COLS + c(None, _), tile * 2.0);
}

TEST_F(PtxTest, StrengthReductionFollowsTheSpecialization) {
  auto k = kernel("strided_rows", stridedRowsKernel, {"out", "x", "stride", "ROWS", "COLS"});
  Specialization reduced{.signature = {"*fp32", "*fp32", "i64"}, .constexprs = {64, 32}};
  Specialization plain = reduced;
  plain.strengthReduction = false;
  EXPECT_NE(reduced.str(), plain.str());
  EXPECT_NE(plain.str().find("slsr=0"), std::string::npos);
  Artifacts r = k.compileTo(reduced, Stage::PTX), p = k.compileTo(plain, Stage::PTX);
  EXPECT_EQ(r.llvm, p.llvm);
  auto adds = [](const std::string &ptx) {
    size_t n = 0;
    for (size_t at = ptx.find("add.s64"); at != std::string::npos; at = ptx.find("add.s64", at + 1))
      ++n;
    return n;
  };
  EXPECT_GT(adds(p.ptx), adds(r.ptx) + 16) << r.ptx << p.ptx;
}

TEST_F(PtxTest, FpFusionFollowsTheSpecialization) {
  auto k = kernel("axpy", axpyKernel, {"out", "x", "y", "a", "BLOCK"});
  Specialization fused{.signature = {"*fp32", "*fp32", "*fp32", "fp32"}, .constexprs = {128}};
  Specialization separate = fused;
  separate.fpFusion = false;
  EXPECT_NE(fused.str(), separate.str());
  Artifacts f = k.compileTo(fused, Stage::PTX), s = k.compileTo(separate, Stage::PTX);
  EXPECT_EQ(f.tir.find("fp_fusion"), std::string::npos) << f.tir;
  EXPECT_NE(s.tir.find("fp_fusion = 0"), std::string::npos) << s.tir;
  EXPECT_NE(f.ptx.find("fma.rn.f32"), std::string::npos) << f.ptx;
  EXPECT_EQ(s.ptx.find("fma.rn.f32"), std::string::npos) << s.ptx;
  EXPECT_NE(s.ptx.find("mul.rn.f32"), std::string::npos) << s.ptx;
  EXPECT_NE(s.ptx.find("add.rn.f32"), std::string::npos) << s.ptx;
}
