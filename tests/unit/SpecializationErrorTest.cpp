// Every compile-time value, specialization field and name a kernel is declared or specialized
// with is checked before tracing: a mistake is a tritium::UserError that names the field (or
// parameter) and points at the kernel's declaration, never a wrapped value, an internal error or
// a silent default. The messages here are the ones docs/LIMITS.md quotes.
#include "TestSupport.h"

#include "compiler/Targets.h"
#include "compiler/support/Error.h"
#include "frontend/Kernel.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

using namespace tritium;
using dsl::Int;
using dsl::Ptr;

namespace {

int gLine = 0; // the line of the kernel's declaration, set on that line

const std::vector<std::string> kNames = {"out", "in", "n", "BLOCK"};

Specialization spec() {
  return Specialization{.signature = {"*fp32", "*fp32", "i32"}, .constexprs = {128}};
}

// Runs `f`, which must throw a UserError at this file's line gLine containing every needle.
void expectUserError(const std::function<void()> &f, const std::vector<std::string> &needles) {
  gLine = 0;
  try {
    f();
    ADD_FAILURE() << "no UserError was thrown";
  } catch (const UserError &e) {
    std::string msg = e.what();
    ASSERT_NE(gLine, 0) << msg;
    std::string where = "SpecializationErrorTest.cpp:" + std::to_string(gLine) + ": error: ";
    EXPECT_EQ(msg.rfind(where, 0), 0u) << "expected '" << where << "' first in: " << msg;
    for (const std::string &needle : needles)
      EXPECT_NE(msg.find(needle), std::string::npos) << "missing '" << needle << "' in: " << msg;
  } catch (const std::exception &e) {
    ADD_FAILURE() << "expected a tritium::UserError, got: " << e.what();
  }
}

void copy(Ptr out, Ptr in, Int n, int BLOCK) {
  auto offs = dsl::program_id(0) * BLOCK + dsl::arange(0, BLOCK);
  auto mask = offs < n;
  dsl::store(out + offs, dsl::load(in + offs, mask, 0.0), mask);
}

// Compile-time parameters of other integral types.
void unsignedBlock(Ptr out, Ptr in, Int n, unsigned BLOCK) { copy(out, in, n, int(BLOCK)); }
void flagged(Ptr out, Ptr in, Int n, bool FLAG) { copy(out, in, n, 128); }
void wide(Ptr out, Ptr in, Int n, int64_t BLOCK) { copy(out, in, n, int(BLOCK)); }
void tiny(Ptr out, Ptr in, Int n, int8_t BLOCK) { copy(out, in, n, BLOCK); }

// Traces `s` for a fresh kernel declared on the line recorded in gLine.
void traceWith(const Specialization &s) {
  gLine = __LINE__; auto k = tritium::kernel("spec_kernel", copy, kNames);
  k.trace(s);
}

class SpecializationErrorTest : public tritium::testing::CompilerTest {};

} // namespace

// --- Compile-time values against their parameters' C++ types -----------------------------------

TEST_F(SpecializationErrorTest, ConstexprThatOverflowsAnInt) {
  // 2^40 used to become 0 in the int and be reported as arange(0, 0).
  Specialization s = spec();
  s.constexprs = {int64_t(1) << 40};
  expectUserError([&] { traceWith(s); },
                  {"compile-time parameter 'BLOCK' of kernel 'spec_kernel' is a 32-bit signed "
                   "integer (-2147483648 to 2147483647) but the specialization gives "
                   "1099511627776, which it cannot hold"});
  s.constexprs = {int64_t(INT32_MIN) - 1};
  expectUserError([&] { traceWith(s); }, {"gives -2147483649, which it cannot hold"});
  s.constexprs = {INT32_MAX}; // fits: the DSL then reports the block size itself, at arange
  try {
    traceWith(s);
    ADD_FAILURE() << "a block of 2^31-1 was accepted";
  } catch (const UserError &e) {
    EXPECT_NE(std::string(e.what()).find("arange(0, 2147483647)"), std::string::npos) << e.what();
  }
}

TEST_F(SpecializationErrorTest, ConstexprOfOtherIntegralTypes) {
  Specialization s = spec();
  s.constexprs = {-1};
  expectUserError(
      [&] {
        gLine = __LINE__; auto k = tritium::kernel("unsigned_kernel", unsignedBlock, kNames);
        k.trace(s);
      },
      {"'BLOCK' of kernel 'unsigned_kernel' is a 32-bit unsigned integer (0 to 4294967295) but "
       "the specialization gives -1"});
  s.constexprs = {2};
  expectUserError(
      [&] {
        gLine = __LINE__; auto k = tritium::kernel("flag_kernel", flagged, {"out", "in", "n", "FLAG"});
        k.trace(s);
      },
      {"'FLAG' of kernel 'flag_kernel' is a bool (0 to 1) but the specialization gives 2"});
  s.constexprs = {128};
  expectUserError(
      [&] {
        gLine = __LINE__; auto k = tritium::kernel("tiny_kernel", tiny, kNames);
        k.trace(s);
      },
      {"is a 8-bit signed integer (-128 to 127) but the specialization gives 128"});
  // Every int64_t fits an int64_t parameter, and in-range values fit the others.
  s.constexprs = {128};
  EXPECT_NO_THROW(tritium::kernel("wide_kernel", wide, kNames).trace(s));
  EXPECT_NO_THROW(tritium::kernel("unsigned_kernel", unsignedBlock, kNames).trace(s));
  s.constexprs = {1};
  EXPECT_NO_THROW(tritium::kernel("flag_kernel", flagged, {"out", "in", "n", "FLAG"}).trace(s));
}

// --- Specialization fields ---------------------------------------------------------------------

TEST_F(SpecializationErrorTest, NumWarps) {
  for (int warps : {0, 3, 64, -4}) {
    Specialization s = spec();
    s.numWarps = warps;
    expectUserError([&] { traceWith(s); },
                    {"kernel 'spec_kernel': num_warps must be a power of two from 1 to 32, got " +
                     std::to_string(warps) + " (Specialization::numWarps)"});
  }
}

TEST_F(SpecializationErrorTest, NumStages) {
  for (int stages : {0, -1}) {
    Specialization s = spec();
    s.numStages = stages;
    expectUserError([&] { traceWith(s); },
                    {"kernel 'spec_kernel': num_stages must be at least 1 (1: no pipelining), "
                     "got " + std::to_string(stages) + " (Specialization::numStages)"});
  }
}

TEST_F(SpecializationErrorTest, ClusterSize) {
  for (int size : {0, 17, -2}) {
    Specialization s = spec();
    s.clusterSize = size;
    expectUserError([&] { traceWith(s); },
                    {"cluster size must be from 1 to 16 (8 is the portable limit of thread-block "
                     "clusters, 16 the limit on Hopper), got " + std::to_string(size) +
                     " (Specialization::clusterSize)"});
  }
}

TEST_F(SpecializationErrorTest, MinBlocksPerSM) {
  for (int blocks : {0, 33}) {
    Specialization s = spec();
    s.minBlocksPerSM = blocks;
    expectUserError([&] { traceWith(s); },
                    {"minBlocksPerSM must be from 1 to 32, got " + std::to_string(blocks) +
                     " (Specialization::minBlocksPerSM)"});
  }
}

TEST_F(SpecializationErrorTest, ProgramsPerCTA) {
  for (int programs : {0, 33, -1}) {
    Specialization s = spec();
    s.programsPerCTA = programs;
    expectUserError([&] { traceWith(s); },
                    {"programsPerCTA must be from 1 to 32, got " + std::to_string(programs) +
                     " (Specialization::programsPerCTA)"});
  }
}

TEST_F(SpecializationErrorTest, PtxVersion) {
  for (int ptx : {0, 70, 77, 79, 89, 91, 99, -81}) {
    Specialization s = spec();
    s.ptxVersion = ptx;
    expectUserError([&] { traceWith(s); },
                    {"PTX version " + std::to_string(ptx) +
                     " is not supported; give the PTX ISA version times 10: 78, 80 to 88, or 90 "
                     "(those LLVM 22 emits for sm_80 and later) (Specialization::ptxVersion)"});
  }
  Specialization s = spec();
  s.arch = "sm_90a";
  s.ptxVersion = 78;
  expectUserError([&] { traceWith(s); }, {"sm_90a needs PTX version 80 or later, got 78"});
  // Every listed version compiles all the way to PTX.
  for (int ptx : supportedPtxVersions()) {
    SCOPED_TRACE(ptx);
    Specialization ok = spec();
    ok.ptxVersion = ptx;
    Artifacts a = tritium::kernel("spec_kernel", copy, kNames).compileTo(ok, Stage::PTX);
    std::string version = ".version " + std::to_string(ptx / 10) + "." + std::to_string(ptx % 10);
    EXPECT_NE(a.ptx.find(version), std::string::npos) << a.ptx.substr(0, 200);
  }
}

TEST_F(SpecializationErrorTest, Arch) {
  for (const char *arch : {"sm_70", "sm_75", "sm_100", "sm_120", "sm_90x", "", "compute_90",
                           "SM_90"}) {
    Specialization s = spec();
    s.arch = arch;
    expectUserError([&] { traceWith(s); },
                    {std::string("unknown GPU architecture '") + arch +
                     "'; tritium compiles for sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a "
                     "(Specialization::arch)"});
  }
  // Every listed architecture compiles all the way to PTX for it.
  for (const std::string &arch : supportedArchs()) {
    SCOPED_TRACE(arch);
    Specialization ok = spec();
    ok.arch = arch;
    Artifacts a = tritium::kernel("spec_kernel", copy, kNames).compileTo(ok, Stage::PTX);
    EXPECT_NE(a.ptx.find(".target " + arch), std::string::npos) << a.ptx.substr(0, 200);
  }
}

TEST_F(SpecializationErrorTest, CompileChecksToo) {
  // Kernel::compile traces first, so nothing reaches the cache.
  Specialization s = spec();
  s.numStages = 0;
  int line = __LINE__; auto k = tritium::kernel("spec_kernel", copy, kNames);
  expectUserError([&] { gLine = line; k.compile(s); }, {"num_stages must be"});
  EXPECT_TRUE(std::filesystem::is_empty(cacheDir()));
}

TEST_F(SpecializationErrorTest, ConstexprNamedLikeAKernelAttribute) {
  // A parameter named num_warps would silently replace the specialization's num_warps in the
  // traced kernel: it must agree with it.
  Specialization s = spec();
  s.numWarps = 4;
  s.constexprs = {8};
  expectUserError(
      [&] {
        gLine = __LINE__; auto k = tritium::kernel("attr_kernel", copy, {"out", "in", "n", "num_warps"});
        k.trace(s);
      },
      {"compile-time parameter 'num_warps' of kernel 'attr_kernel' is 8 but the "
       "specialization's num_warps is 4 (Specialization::numWarps); the kernel's num_warps "
       "attribute holds one value: give both the same value or rename the parameter"});
  s.constexprs = {128};
  expectUserError(
      [&] {
        gLine = __LINE__; auto k = tritium::kernel("attr_kernel", copy, {"out", "in", "n", "shared_bytes"});
        k.trace(s);
      },
      {"compile-time parameter 'shared_bytes' of kernel 'attr_kernel' is named like an "
       "attribute the compiler sets: rename it"});
  // num_stages may differ: it is the default depth of range() loops, as in Triton.
  s.constexprs = {128};
  s.numStages = 2;
  EXPECT_NO_THROW(tritium::kernel("attr_kernel", copy, {"out", "in", "n", "num_stages"}).trace(s));
}

// --- Names, checked where the kernel is declared -----------------------------------------------

TEST_F(SpecializationErrorTest, KernelNamesThatCannotBeFileNames) {
  struct Case {
    std::string name, why;
  };
  std::vector<Case> cases = {
      {"", "invalid kernel name '': it is empty"},
      {"a/b", "invalid kernel name 'a/b': it contains '/'"},
      {"a\\b", "it contains '\\'"},
      {"..", "invalid kernel name '..': it contains '.'"},
      {".hidden", "it contains '.'"},
      {"../../etc/x", "it contains '.'"},
      {std::string("a\0b", 3), "invalid kernel name 'a\\x00b': it contains '\\x00'"},
      {"1kernel", "it starts with a digit"},
      {"my-kernel", "it contains '-'"},
      {"k\xc3\xa9", "it contains '\\xc3'"},
      {std::string(201, 'k'), "it is 201 characters long (at most 200)"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    expectUserError(
        [&] {
          gLine = __LINE__; auto k = tritium::kernel(c.name, copy, kNames);
          (void)k;
        },
        {c.why, "a kernel name is 1 to 200 letters, digits and underscores, not starting with a "
                "digit (it names the PTX entry and the cache files)"});
  }
  EXPECT_NO_THROW(tritium::kernel(std::string(200, 'k'), copy, kNames));
  EXPECT_NO_THROW(tritium::kernel("_Kernel_2", copy, kNames));
}

TEST_F(SpecializationErrorTest, ParameterNames) {
  expectUserError(
      [] {
        gLine = __LINE__; auto k = tritium::kernel("names_kernel", copy, {"out", "out", "n", "BLOCK"});
        (void)k;
      },
      {"parameter 1 of kernel 'names_kernel' is named 'out' like parameter 0; parameter names "
       "must be different"});
  expectUserError(
      [] {
        gLine = __LINE__; auto k = tritium::kernel("names_kernel", copy, {"out", "", "n", "BLOCK"});
        (void)k;
      },
      {"parameter 1 of kernel 'names_kernel' has an empty name"});
  expectUserError(
      [] {
        gLine = __LINE__; auto k = tritium::kernel("names_kernel", copy, {"out", "in", "n", "BLOCK SIZE"});
        (void)k;
      },
      {"parameter 3 of kernel 'names_kernel' is named 'BLOCK SIZE', which is not an identifier: "
       "it contains ' '"});
  expectUserError(
      [] {
        gLine = __LINE__; auto k = tritium::kernel("names_kernel", copy, {"out", "in", "n", "BLOCK", "extra"});
        (void)k;
      },
      {"kernel 'names_kernel' has 4 parameters but 5 names were given"});
  // No names at all: arg0, arg1, ...
  EXPECT_NO_THROW(tritium::kernel("names_kernel", copy).trace(spec()));
}
