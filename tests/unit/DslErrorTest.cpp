// Every kernel author's mistake is a tritium::UserError that names the mistake and points at
// this file and the exact line of the offending DSL call; launches with wrong arguments are
// refused before any driver call. Each kernel below records the line of its mistake in gLine,
// on the same line as the mistake.
#include "TestSupport.h"

#include "compiler/support/Error.h"
#include "frontend/Kernel.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

using namespace tritium;
using dsl::Float;
using dsl::Int;
using dsl::Ptr;

namespace {

int gLine = 0; // the line of the mistake, set by the code that makes it

const std::vector<std::string> kNames = {"out", "in", "n", "BLOCK"};

Specialization spec(std::vector<std::string> signature = {"*fp32", "*fp32", "i32"},
                    std::vector<int64_t> constexprs = {128}, int numWarps = 4) {
  return Specialization{.signature = std::move(signature),
                        .constexprs = std::move(constexprs),
                        .numWarps = numWarps};
}

// Runs `f`, which must throw a UserError at this file's line gLine whose message contains every
// one of `needles`.
void expectUserError(const std::function<void()> &f, const std::vector<std::string> &needles) {
  gLine = 0;
  try {
    f();
    ADD_FAILURE() << "no UserError was thrown";
  } catch (const UserError &e) {
    std::string msg = e.what();
    ASSERT_NE(gLine, 0) << "the test did not record the mistake's line; message: " << msg;
    std::string where = "DslErrorTest.cpp:" + std::to_string(gLine) + ": error: ";
    EXPECT_EQ(msg.rfind(where, 0), 0u) << "expected the message to start with '" << where
                                        << "', got: " << msg;
    EXPECT_EQ(e.where().line, unsigned(gLine)) << msg;
    EXPECT_NE(e.where().file.find("DslErrorTest.cpp"), std::string::npos) << e.where().file;
    for (const std::string &needle : needles)
      EXPECT_NE(msg.find(needle), std::string::npos) << "missing '" << needle << "' in: " << msg;
  } catch (const std::exception &e) {
    ADD_FAILURE() << "expected a tritium::UserError, got another exception: " << e.what();
  }
}

// Traces `body` for `s` (TIR stage).
template <typename... P>
void traceKernel(void (*body)(P...), const Specialization &s = spec()) {
  tritium::kernel("bad_kernel", body, kNames).compileTo(s, Stage::TIR);
}

// --- Kernels with one mistake each -------------------------------------------------------------

void shapesDoNotBroadcast(Ptr out, Ptr in, Int n, int BLOCK) {
  gLine = __LINE__; auto z = dsl::arange(0, 128) + dsl::arange(0, 256);
  dsl::store(out + dsl::arange(0, 128), z);
}

void arangeNotPowerOfTwo(Ptr out, Ptr in, Int n, int BLOCK) {
  gLine = __LINE__; auto offs = dsl::arange(0, 1000);
  dsl::store(out + offs, 0.0);
}

void maskOfWrongShape(Ptr out, Ptr in, Int n, int BLOCK) {
  auto offs = dsl::arange(0, BLOCK);
  auto wide = dsl::arange(0, 2 * BLOCK) < n;
  gLine = __LINE__; auto x = dsl::load(in + offs, wide, 0.0);
  dsl::store(out + offs, x);
}

void maskNotAComparison(Ptr out, Ptr in, Int n, int BLOCK) {
  auto offs = dsl::arange(0, BLOCK);
  auto f = dsl::load(in + offs);
  gLine = __LINE__; auto x = dsl::load(in + offs, f, 0.0);
  dsl::store(out + offs, x);
}

void pointerPlusFloatLiteral(Ptr out, Ptr in, Int n, int BLOCK) {
  gLine = __LINE__; auto p = in + 1.5;
  dsl::store(out, dsl::load(p));
}

void pointerPlusFloatBlock(Ptr out, Ptr in, Int n, int BLOCK) {
  auto f = dsl::load(in + dsl::arange(0, BLOCK));
  gLine = __LINE__; auto p = out + f;
  dsl::store(p, f);
}

void loadFromNonPointer(Ptr out, Ptr in, Int n, int BLOCK) {
  gLine = __LINE__; auto x = dsl::load(dsl::arange(0, BLOCK));
  dsl::store(out + dsl::arange(0, BLOCK), x);
}

void storeF32ThroughI32(Ptr out, Ptr in, Int n, int BLOCK) {
  auto offs = dsl::arange(0, BLOCK);
  auto x = dsl::load(in + offs);
  gLine = __LINE__; dsl::store(out + offs, x);
}

void reduceAxisOutOfRange(Ptr out, Ptr in, Int n, int BLOCK) {
  auto x = dsl::load(in + dsl::arange(0, BLOCK));
  gLine = __LINE__; auto s = dsl::sum(x, 1);
  dsl::store(out, s);
}

void expOfInteger(Ptr out, Ptr in, Int n, int BLOCK) {
  auto offs = dsl::arange(0, BLOCK);
  gLine = __LINE__; auto e = dsl::exp(offs);
  dsl::store(out + offs, e);
}

void breakOutOfRange(Ptr out, Ptr in, Int n, int BLOCK) {
  gLine = __LINE__; for (auto i : dsl::range(0, n)) {
    dsl::store(out + i, 1.0);
    break;
  }
}

void returnFromRangeThenMoreCalls(Ptr out, Ptr in, Int n, int BLOCK) {
  // The mistake is reported at the next DSL call, still pointing at the loop.
  auto body = [&] {
    gLine = __LINE__; for (auto i : dsl::range(0, n, 1)) {
      dsl::store(out + i, 1.0);
      return;
    }
  };
  body();
  dsl::store(out, 2.0);
}

void tooManyElementsPerThread(Ptr out, Ptr in, Int n, int BLOCK) {
  gLine = __LINE__; auto offs = dsl::arange(0, 1 << 20);
  dsl::store(out + offs, 0.0);
}

void carriedChangesShape(Ptr out, Ptr in, Int n, int BLOCK) {
  auto acc = dsl::full(BLOCK, 0.0);
  gLine = __LINE__; for (auto i : dsl::range(0, n, BLOCK).carry(acc)) {
    acc = dsl::sum(acc + dsl::load(in + i + dsl::arange(0, BLOCK)), 0);
  }
  dsl::store(out + dsl::arange(0, BLOCK), acc);
}

// A variable empty before the loop has no value to carry: its value from the body is out of
// scope after the loop.
void firstAssignedInLoop(Ptr out, Ptr in, Int n, int BLOCK) {
  dsl::Value acc;
  for (auto i : dsl::range(0, n, BLOCK)) {
    acc = dsl::load(in + i + dsl::arange(0, BLOCK));
  }
  gLine = __LINE__; dsl::store(out + dsl::arange(0, BLOCK), acc);
}

// Two variables hold one value before the loop, one is assigned in it, and the body reads the
// value: which variable it reads cannot be told.
void ambiguousCarry(Ptr out, Ptr in, Int n, int BLOCK) {
  auto acc = dsl::full(BLOCK, 0.0);
  auto start = acc;
  gLine = __LINE__; for (auto i : dsl::range(0, n, BLOCK)) {
    acc = acc + dsl::load(in + i + dsl::arange(0, BLOCK)) + start;
  }
  dsl::store(out + dsl::arange(0, BLOCK), acc);
}

// `last` takes the value `acc` and `start` both held before the loop, and the body never reads
// it otherwise: acc's current value or start's, no one can tell.
void ambiguousYield(Ptr out, Ptr in, Int n, int BLOCK) {
  auto acc = dsl::full(BLOCK, 0.0);
  auto start = acc;
  auto last = dsl::full(BLOCK, 1.0);
  gLine = __LINE__; for (auto i : dsl::range(0, n, BLOCK)) {
    last = start;
    acc = dsl::load(in + i + dsl::arange(0, BLOCK));
  }
  dsl::store(out + dsl::arange(0, BLOCK), acc + last);
}

void waitInsideALoop(Ptr out, Ptr in, Int n, int BLOCK) {
  auto acc = dsl::full(BLOCK, 0.0);
  for (auto i : dsl::range(0, n, BLOCK)) {
    gLine = __LINE__; dsl::griddep_wait();
    acc = acc + dsl::load(in + i + dsl::arange(0, BLOCK));
  }
  dsl::store(out + dsl::arange(0, BLOCK), acc);
}

void waitInsideABranch(Ptr out, Ptr in, Int n, int BLOCK) {
  dsl::if_(n > 0, [&] {
    gLine = __LINE__; dsl::griddep_wait();
  });
  dsl::store(out, dsl::load(in));
}

void gridSyncInsideALoop(Ptr out, Ptr in, Int n, int BLOCK) {
  for (auto i : dsl::range(0, n, BLOCK)) {
    gLine = __LINE__; dsl::grid_sync();
    dsl::store(out + i + dsl::arange(0, BLOCK), dsl::load(in + i + dsl::arange(0, BLOCK)));
  }
}

void clusterSumOfABlockInsideALoop(Ptr out, Ptr in, Int n, int BLOCK) {
  for (auto i : dsl::range(0, n, BLOCK)) {
    auto x = dsl::load(in + i + dsl::arange(0, BLOCK));
    gLine = __LINE__; auto s = dsl::cluster_sum(x);
    dsl::store(out + i + dsl::arange(0, BLOCK), s);
  }
}

void gridSyncInsideABranch(Ptr out, Ptr in, Int n, int BLOCK) {
  dsl::if_(n > 0, [&] {
    gLine = __LINE__; dsl::grid_sync();
  });
  dsl::store(out, dsl::load(in));
}

void gridSyncOfWarpPrograms(Ptr out, Ptr in, Int n, int BLOCK) {
  dsl::store(out + dsl::arange(0, BLOCK), dsl::load(in + dsl::arange(0, BLOCK)));
  gLine = __LINE__; dsl::grid_sync();
}

void carriedTwice(Ptr out, Ptr in, Int n, int BLOCK) {
  auto acc = dsl::full(BLOCK, 0.0);
  gLine = __LINE__; for (auto i : dsl::range(0, n, BLOCK).carry(acc, acc)) {
    acc = acc + dsl::load(in + i + dsl::arange(0, BLOCK));
  }
  dsl::store(out + dsl::arange(0, BLOCK), acc);
}

void carriedEmpty(Ptr out, Ptr in, Int n, int BLOCK) {
  dsl::Value acc;
  gLine = __LINE__; for (auto i : dsl::range(0, n, BLOCK).carry(acc)) {
    acc = dsl::load(in + i + dsl::arange(0, BLOCK));
  }
  dsl::store(out + dsl::arange(0, BLOCK), acc);
}

void copy(Ptr out, Ptr in, Int n, int BLOCK) {
  auto offs = dsl::program_id(0) * BLOCK + dsl::arange(0, BLOCK);
  auto mask = offs < n;
  dsl::store(out + offs, dsl::load(in + offs, mask, 0.0), mask);
}

void clusterSumOfAMask(Ptr out, Ptr in, Int n, int BLOCK) {
  gLine = __LINE__; auto s = dsl::cluster_sum(n < 3);
  dsl::store(out, dsl::cast(s, "fp32"));
}

void clusterGatherOfABlock(Ptr out, Ptr in, Int n, int BLOCK) {
  auto x = dsl::load(in + dsl::arange(0, 128));
  gLine = __LINE__; auto g = dsl::cluster_gather(x, 0.0);
  dsl::store(out + dsl::arange(0, 1), g);
}

// Stores a cluster-wide sum of per-program values: a correct kernel for the cluster checks.
void clusterSum(Ptr out, Ptr in, Int n, int BLOCK) {
  auto s = dsl::cluster_sum(dsl::load(in + dsl::program_id(0)));
  dsl::store(out + dsl::program_id(0), s);
}

// A correct kernel for the specialization errors: only the declaration's line is known there.
void good(Ptr out, Ptr in, Int n, int BLOCK) { copy(out, in, n, BLOCK); }

class DslErrorTest : public tritium::testing::CompilerTest {};

} // namespace

// --- The DSL's own checks ----------------------------------------------------------------------

TEST_F(DslErrorTest, ShapesThatDoNotBroadcast) {
  expectUserError([] { traceKernel(shapesDoNotBroadcast); },
                  {"cannot broadcast shapes [128] and [256] in '+'", "'+'"});
}

TEST_F(DslErrorTest, ArangeOfNonPowerOfTwo) {
  expectUserError([] { traceKernel(arangeNotPowerOfTwo); },
                  {"arange(0, 1000)", "1000 must be a power of two or a multiple of 32 x "
                                      "num_warps = 128"});
}

// A block that is not a power of two is fine when every thread holds as many elements.
void arangeOfThreadMultiple(Ptr out, Ptr in, Int n, int BLOCK) {
  gLine = __LINE__; auto offs = dsl::arange(0, 3 * 128);
  dsl::store(out + offs, dsl::load(in + offs, offs < n, 0.0));
}

TEST_F(DslErrorTest, ArangeOfAMultipleOfTheThreads) {
  EXPECT_NO_THROW(traceKernel(arangeOfThreadMultiple)); // num_warps = 4: 128 threads
  Specialization eight = spec();
  eight.numWarps = 8; // 384 is not a multiple of 256
  expectUserError([&] { traceKernel(arangeOfThreadMultiple, eight); },
                  {"arange(0, 384)", "multiple of 32 x num_warps = 256"});
}

TEST_F(DslErrorTest, LoadMaskOfWrongShape) {
  expectUserError([] { traceKernel(maskOfWrongShape); },
                  {"cannot broadcast shapes [256] and [128] in load"});
}

TEST_F(DslErrorTest, MaskThatIsNotAComparison) {
  expectUserError([] { traceKernel(maskNotAComparison); },
                  {"load's mask must be a comparison result (i1), got block<128xf32>"});
}

TEST_F(DslErrorTest, PointerPlusFloatLiteral) {
  expectUserError([] { traceKernel(pointerPlusFloatLiteral); },
                  {"cannot add float literal 1.5 to a pointer (ptr<f32>)",
                   "pointer offsets must be integers"});
}

TEST_F(DslErrorTest, PointerPlusFloatBlock) {
  expectUserError([] { traceKernel(pointerPlusFloatBlock); },
                  {"cannot add block<128xf32> to a pointer (ptr<f32>)"});
}

TEST_F(DslErrorTest, LoadFromNonPointer) {
  expectUserError([] { traceKernel(loadFromNonPointer); },
                  {"load expects a pointer or a block of pointers, got block<128xi32>"});
}

TEST_F(DslErrorTest, StoreOfF32ThroughI32Pointer) {
  expectUserError([] { traceKernel(storeF32ThroughI32, spec({"*i32", "*fp32", "i32"})); },
                  {"store of block<128xf32> through block<128xptr<i32>>",
                   "element types differ", "cast(x, \"i32\")"});
}

TEST_F(DslErrorTest, ReduceAxisOutOfRange) {
  expectUserError([] { traceKernel(reduceAxisOutOfRange); },
                  {"sum: axis 1 is out of range for block<128xf32>"});
}

TEST_F(DslErrorTest, ExpOfIntegers) {
  expectUserError([] { traceKernel(expOfInteger); },
                  {"exp expects floating-point values, got block<128xi32>"});
}

TEST_F(DslErrorTest, DslCallOutsideAKernel) {
  expectUserError(
      [] {
        gLine = __LINE__; auto v = dsl::arange(0, 128);
        (void)v;
      },
      {"can only be used inside a kernel body"});
  expectUserError(
      [] {
        gLine = __LINE__; auto v = dsl::program_id(0);
        (void)v;
      },
      {"can only be used inside a kernel body"});
  // Operators too.
  expectUserError(
      [] {
        dsl::Value empty;
        gLine = __LINE__; auto v = empty + 1;
        (void)v;
      },
      {"can only be used inside a kernel body"});
}

TEST_F(DslErrorTest, BreakOutOfRangeLoop) {
  expectUserError([] { traceKernel(breakOutOfRange); },
                  {"'break' or 'return' inside a tritium range loop is not supported"});
}

TEST_F(DslErrorTest, ReturnFromRangeLoopReportedAtNextCall) {
  expectUserError([] { traceKernel(returnFromRangeThenMoreCalls); },
                  {"'break' or 'return' inside a tritium range loop is not supported"});
}

TEST_F(DslErrorTest, CarriedVariableThatChangesShape) {
  expectUserError([] { traceKernel(carriedChangesShape); },
                  {"carried variable 1 changed type in the loop body",
                   "from block<128xf32> to f32"});
}

TEST_F(DslErrorTest, VariableFirstAssignedInLoop) {
  expectUserError([] { traceKernel(firstAssignedInLoop); },
                  {"a value made inside a loop body or a branch (made at ", "DslErrorTest.cpp:",
                   "is used after it has ended", "give the variable its value before"});
}

TEST_F(DslErrorTest, TwoVariablesWithOneValueBeforeALoop) {
  expectUserError([] { traceKernel(ambiguousCarry); },
                  {"held the same value as another variable before it", "carry(...)"});
}

TEST_F(DslErrorTest, AVariableTakingAValueTwoVariablesHeldBeforeALoop) {
  expectUserError([] { traceKernel(ambiguousYield); },
                  {"takes the value another variable held before it", "carry(...)"});
}

TEST_F(DslErrorTest, GridDependencyWaitInsideALoopOrABranch) {
  expectUserError([] { traceKernel(waitInsideALoop); },
                  {"griddep_wait() must be called at the kernel's top level", "every program"});
  expectUserError([] { traceKernel(waitInsideABranch); },
                  {"griddep_wait() must be called at the kernel's top level"});
}

TEST_F(DslErrorTest, GridSyncInsideALoopOrABranch) {
  expectUserError([] { traceKernel(gridSyncInsideALoop); },
                  {"grid_sync() must be called at the kernel's top level", "every program"});
  expectUserError([] { traceKernel(gridSyncInsideABranch); },
                  {"grid_sync() must be called at the kernel's top level"});
}

// A block's cluster exchange runs once per launch; scalars may be exchanged in loops.
TEST_F(DslErrorTest, ClusterSumOfABlockInsideALoop) {
  expectUserError([] { traceKernel(clusterSumOfABlockInsideALoop); },
                  {"cluster_sum of the block block<128xf32> must be called at the kernel's top "
                   "level",
                   "cluster_sum(sum(x, 0))"});
}

// Warp-sized programs share a CTA, and the grid barrier counts CTAs.
TEST_F(DslErrorTest, GridSyncNeedsOneProgramPerCTA) {
  Specialization s = spec();
  s.numWarps = 1;
  s.programsPerCTA = 4;
  expectUserError(
      [&] {
        tritium::kernel("bad_kernel", gridSyncOfWarpPrograms, kNames).compileTo(s, Stage::GIR);
      },
      {"calls grid_sync, which needs one program per CTA, not 4"});
}

TEST_F(DslErrorTest, CarryOfTheSameVariableTwice) {
  expectUserError([] { traceKernel(carriedTwice); },
                  {"carry() names the same variable twice"});
}

TEST_F(DslErrorTest, CarryOfAnEmptyVariable) {
  expectUserError([] { traceKernel(carriedEmpty); },
                  {"carry() of an empty tritium Value"});
}

TEST_F(DslErrorTest, TheErrorDoesNotLeakIntoTheNextTrace) {
  // After a failed trace, the same kernel traces cleanly: no deferred error or open loop is left
  // behind on this thread.
  expectUserError([] { traceKernel(breakOutOfRange); }, {"'break' or 'return'"});
  EXPECT_NO_THROW(traceKernel(good));
  expectUserError([] { traceKernel(shapesDoNotBroadcast); }, {"cannot broadcast"});
  EXPECT_NO_THROW(traceKernel(good));
}

// --- Specializations that do not fit the kernel (reported at the kernel's declaration) ---------

TEST_F(DslErrorTest, SignatureWithWrongCount) {
  expectUserError(
      [] {
        gLine = __LINE__; auto k = tritium::kernel("sig_kernel", good, kNames);
        k.trace(spec({"*fp32", "*fp32"}));
      },
      {"kernel 'sig_kernel' has 3 runtime parameter(s) but the signature lists 2 types"});
  expectUserError(
      [] {
        gLine = __LINE__; auto k = tritium::kernel("sig_kernel", good, kNames);
        k.trace(spec({"*fp32", "*fp32", "i32", "i32"}));
      },
      {"signature lists 4 types"});
}

TEST_F(DslErrorTest, SignatureWithWrongKind) {
  expectUserError(
      [] {
        gLine = __LINE__; auto k = tritium::kernel("sig_kernel", good, kNames);
        k.trace(spec({"i32", "*fp32", "i32"}));
      },
      {"parameter 0 ('out') of kernel 'sig_kernel' is a pointer (Ptr) but the signature gives "
       "'i32'"});
  expectUserError(
      [] {
        gLine = __LINE__; auto k = tritium::kernel("sig_kernel", good, kNames);
        k.trace(spec({"*fp32", "*fp32", "*i32"}));
      },
      {"parameter 2 ('n')", "is an integer (Int) but the signature gives '*i32'"});
  expectUserError(
      [] {
        gLine = __LINE__; auto k = tritium::kernel("sig_kernel", good, kNames);
        k.trace(spec({"*fp32", "*fp32", "fp32"}));
      },
      {"parameter 2 ('n')", "'fp32'"});
}

TEST_F(DslErrorTest, SignatureWithBadDtype) {
  for (const char *bad : {"*fp99", "*", "*i1", ""}) {
    SCOPED_TRACE(bad);
    expectUserError(
        [&] {
          gLine = __LINE__; auto k = tritium::kernel("sig_kernel", good, kNames);
          k.trace(spec({bad, "*fp32", "i32"}));
        },
        {"parameter 0 ('out')", std::string("the signature gives '") + bad + "'"});
  }
  expectUserError(
      [] {
        gLine = __LINE__; auto k = tritium::kernel("sig_kernel", good, kNames);
        k.trace(spec({"*fp32", "*fp32", "u16"})); // Int parameters are i32, i64, u32 or u64
      },
      {"parameter 2 ('n')", "'u16'"});
}

TEST_F(DslErrorTest, WrongNumberOfConstexprs) {
  expectUserError(
      [] {
        gLine = __LINE__; auto k = tritium::kernel("cx_kernel", good, kNames);
        k.trace(spec({"*fp32", "*fp32", "i32"}, {}));
      },
      {"kernel 'cx_kernel' has 1 compile-time parameter(s) but 0 values were given"});
  expectUserError(
      [] {
        gLine = __LINE__; auto k = tritium::kernel("cx_kernel", good, kNames);
        k.trace(spec({"*fp32", "*fp32", "i32"}, {128, 4}));
      },
      {"but 2 values were given"});
}

TEST_F(DslErrorTest, WrongNumberOfParameterNames) {
  expectUserError(
      [] {
        gLine = __LINE__; auto k = tritium::kernel("names_kernel", good, {"out", "in"});
        (void)k;
      },
      {"kernel 'names_kernel' has 4 parameters but 2 names were given"});
}

// --- Mistakes found while lowering -------------------------------------------------------------

TEST_F(DslErrorTest, NumWarpsNotAPowerOfTwo) {
  for (int warps : {3, 0, 64, -4}) {
    SCOPED_TRACE(warps);
    auto k = tritium::kernel("warps_kernel", good, kNames);
    try {
      k.compileTo(spec({"*fp32", "*fp32", "i32"}, {128}, warps), Stage::GIR);
      ADD_FAILURE() << "num_warps " << warps << " was accepted";
    } catch (const UserError &e) {
      EXPECT_NE(std::string(e.what()).find("num_warps must be a power of two from 1 to 32, got " +
                                           std::to_string(warps)),
                std::string::npos)
          << e.what();
    }
  }
}

TEST_F(DslErrorTest, TooManyElementsPerThread) {
  expectUserError(
      [] {
        tritium::kernel("big_kernel", tooManyElementsPerThread, kNames)
            .compileTo(spec({"*fp32", "*fp32", "i32"}, {128}, 1), Stage::GIR);
      },
      {"block<1048576xi32> needs 32768 elements per thread with num_warps=1 (at most 256)"});
  // The same block over 32 warps holds 1024 per thread: still too many.
  expectUserError(
      [] {
        tritium::kernel("big_kernel", tooManyElementsPerThread, kNames)
            .compileTo(spec({"*fp32", "*fp32", "i32"}, {128}, 32), Stage::GIR);
      },
      {"needs 1024 elements per thread with num_warps=32"});
}

TEST_F(DslErrorTest, ClusterGatherOfABlock) {
  expectUserError([] { traceKernel(clusterGatherOfABlock); },
                  {"cluster_gather gathers one number per program, got the block "
                   "block<128xf32>"});
}

TEST_F(DslErrorTest, ClusterReductionOfAMask) {
  expectUserError([] { traceKernel(clusterSumOfAMask); }, {"cluster_sum is not defined on i1"});
}

TEST_F(DslErrorTest, ClusterSizeOutOfRange) {
  for (int size : {0, 17, 32}) {
    SCOPED_TRACE(size);
    Specialization s = spec();
    s.clusterSize = size;
    try {
      tritium::kernel("cluster_kernel", clusterSum, kNames).compileTo(s, Stage::GIR);
      ADD_FAILURE() << "cluster size " << size << " was accepted";
    } catch (const UserError &e) {
      EXPECT_NE(std::string(e.what()).find("cluster size must be from 1 to 16 (8 is the portable "
                                           "limit of thread-block clusters, 16 the limit on "
                                           "Hopper), got " + std::to_string(size)),
                std::string::npos)
          << e.what();
    }
  }
  Specialization old = spec();
  old.clusterSize = 2;
  old.arch = "sm_80";
  try {
    tritium::kernel("cluster_kernel", clusterSum, kNames).compileTo(old, Stage::GIR);
    ADD_FAILURE() << "a cluster on sm_80 was accepted";
  } catch (const UserError &e) {
    EXPECT_NE(std::string(e.what()).find("need sm_90 or later, not sm_80"), std::string::npos)
        << e.what();
  }
}

// --- Launch arguments, checked against the signature before any driver call --------------------
//
// CompiledKernel::launch checks the count, the grid and every argument before load(), so these
// run (and must fail the same way) on machines with and without a GPU.

namespace {

void expectLaunchError(CompiledKernel &k, int64_t grid, std::initializer_list<KernelArg> args,
                       const std::vector<std::string> &needles) {
  try {
    k.launch(grid, nullptr, args);
    ADD_FAILURE() << "the launch was accepted";
  } catch (const UserError &e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("error: launch of 'copy_kernel': ", 0), 0u) << msg;
    for (const std::string &needle : needles)
      EXPECT_NE(msg.find(needle), std::string::npos) << "missing '" << needle << "' in: " << msg;
  } catch (const std::exception &e) {
    ADD_FAILURE() << "expected a UserError before any driver call, got: " << e.what();
  }
  EXPECT_FALSE(k.loaded()) << "a refused launch must not load the kernel";
}

} // namespace

TEST_F(DslErrorTest, LaunchArgumentsAreCheckedAgainstTheSignature) {
  auto kernel = tritium::kernel("copy_kernel", copy, kNames);
  CompiledKernel &k = kernel.compile(spec());
  ASSERT_EQ(k.metadata().signature.names, (std::vector<std::string>{"out", "in", "n"}));
  const KernelArg p = KernelArg::pointer(0x10000);

  expectLaunchError(k, 1, {p, p}, {"expected 3 arguments but got 2"});
  expectLaunchError(k, 1, {p, p, 1, 2}, {"expected 3 arguments but got 4"});
  expectLaunchError(k, 1, {}, {"expected 3 arguments but got 0"});
  expectLaunchError(k, 1, {p, p, 1.5f}, {"argument 2 ('n') must be i32 but a float was given"});
  expectLaunchError(k, 1, {int32_t(0), p, 1},
                    {"argument 0 ('out') must be *fp32 but an integer was given"});
  expectLaunchError(k, 1, {p, 2.0f, 1},
                    {"argument 1 ('in') must be *fp32 but a float was given"});
  expectLaunchError(k, 1, {p, p, p}, {"argument 2 ('n') must be i32 but a pointer was given"});
  expectLaunchError(k, 1, {p, p, int64_t(1) << 40},
                    {"argument 2 ('n') is i32 but 1099511627776 does not fit"});
  expectLaunchError(k, 1, {p, p, int64_t(INT32_MIN) - 1},
                    {"argument 2 ('n') is i32 but -2147483649 does not fit"});
  expectLaunchError(k, 0, {p, p, 1}, {"grid size 0 is out of range"});
  expectLaunchError(k, int64_t(1) << 31, {p, p, 1}, {"grid size 2147483648 is out of range"});
}

TEST_F(DslErrorTest, LaunchOfAClusterKernelNeedsWholeClusters) {
  auto kernel = tritium::kernel("copy_kernel", clusterSum, kNames); // the checker's name
  Specialization s = spec();
  s.clusterSize = 4;
  CompiledKernel &k = kernel.compile(s);
  EXPECT_EQ(k.metadata().options.clusterSize, 4);
  const KernelArg p = KernelArg::pointer(0x10000);
  expectLaunchError(k, 6, {p, p, 1}, {"grid size 6 is not a multiple of the cluster size 4"});
  expectLaunchError(k, 1, {p, p, 1}, {"grid size 1 is not a multiple of the cluster size 4"});
}

TEST_F(DslErrorTest, LaunchArgumentsOfOtherSignatureTypes) {
  auto kernel = tritium::kernel("copy_kernel", copy, kNames);
  CompiledKernel &k = kernel.compile(spec({"*fp16", "*fp16", "i64"}));
  const KernelArg p = KernelArg::pointer(0x10000);
  // i64 takes any integer but no float or pointer.
  expectLaunchError(k, 1, {p, p, 1.0f}, {"argument 2 ('n') must be i64 but a float was given"});
  expectLaunchError(k, 1, {p, p, p}, {"argument 2 ('n') must be i64 but a pointer was given"});
  expectLaunchError(k, 1, {3, p, int64_t(1) << 40},
                    {"argument 0 ('out') must be *fp16 but an integer was given"});
}

// --- The language of blocks of rank 2 and 3, control flow and atomics ----------------------------

namespace {

void axisOutOfRange(Ptr out, Ptr in, Int n, int BLOCK) {
  auto v = dsl::zeros({16, 64}, dsl::float32);
  gLine = __LINE__; auto s = dsl::sum(v, 2);
  dsl::store(out + dsl::arange(0, 16), s);
}

void twoDimensionsNotPowersOfTwo(Ptr out, Ptr in, Int n, int BLOCK) {
  gLine = __LINE__; auto v = dsl::zeros({48, 64}, dsl::float32);
  (void)v;
}

void atomicOnBytes(Ptr out, Ptr in, Int n, int BLOCK) {
  gLine = __LINE__; dsl::atomic_add(out + dsl::arange(0, 128), 1);
}

void ifOnABlock(Ptr out, Ptr in, Int n, int BLOCK) {
  auto cols = dsl::arange(0, 128);
  gLine = __LINE__; dsl::if_(cols < n, [&] {});
}

void ifWithTwoTypes(Ptr out, Ptr in, Int n, int BLOCK) {
  dsl::Value y = dsl::load(in);
  gLine = __LINE__; dsl::if_(n > 0, [&] { y = dsl::load(in + dsl::arange(0, 128)); }, [&] {});
  dsl::store(out, y);
}

void unknownSem(Ptr out, Ptr in, Int n, int BLOCK) {
  gLine = __LINE__; dsl::atomic_add(out, 1.0, n > 0, "seq_cst");
}

void unknownDtype(Ptr out, Ptr in, Int n, int BLOCK) {
  gLine = __LINE__; auto v = dsl::cast(dsl::load(in), "float128");
  (void)v;
}

} // namespace

TEST_F(DslErrorTest, AxisOutOfRangeNamesTheShape) {
  expectUserError([] { traceKernel(axisOutOfRange); },
                  {"sum: axis 2 is out of range for block<16x64xf32> (0 to 1)"});
}

TEST_F(DslErrorTest, BlocksOfRankTwoHavePowerOfTwoDimensions) {
  expectUserError([] { traceKernel(twoDimensionsNotPowersOfTwo); },
                  {"the dimensions of a block of rank 2 must be powers of two, got [48, 64]"});
}

TEST_F(DslErrorTest, AtomicOnAnUnsupportedType) {
  expectUserError([] { traceKernel(atomicOnBytes, spec({"*i8", "*fp32", "i32"})); },
                  {"atomic_add on i8 is not supported: it takes i32, u32, i64, u64, fp32, fp16 "
                   "and bf16"});
}

TEST_F(DslErrorTest, AtomicWithAnUnknownSem) {
  expectUserError([] { traceKernel(unknownSem); },
                  {"atomic_add: unknown sem 'seq_cst' (expected relaxed, acquire, release or "
                   "acq_rel)"});
}

TEST_F(DslErrorTest, IfOnABlockCondition) {
  expectUserError([] { traceKernel(ifOnABlock); },
                  {"if_'s condition must be a scalar", "got block<128xi1>; use where() for blocks"});
}

TEST_F(DslErrorTest, IfBranchesGiveDifferentTypes) {
  expectUserError([] { traceKernel(ifWithTwoTypes); },
                  {"has type block<128xf32> on one path and f32 on the other"});
}

TEST_F(DslErrorTest, UnknownDtypeListsTheValidOnes) {
  expectUserError([] { traceKernel(unknownDtype); },
                  {"unknown dtype 'float128' (expected one of i1, i8, i16, i32, i64, u8, u16, u32, "
                   "u64, fp8e4m3, fp8e5m2, fp16, bf16, fp32"});
}

// --- Cache hints, join and split, 64-bit literals ----------------------------------------------

void storeCacheOnALoad(Ptr out, Ptr in, Int n, int BLOCK) {
  auto offs = dsl::arange(0, BLOCK);
  gLine = __LINE__; auto x = dsl::load(in + offs, offs < n, 0.0, {.cache = dsl::Cache::wb});
  dsl::store(out + offs, x);
}

void loadCacheOnAStore(Ptr out, Ptr in, Int n, int BLOCK) {
  auto offs = dsl::arange(0, BLOCK);
  gLine = __LINE__; dsl::store(out + offs, dsl::load(in + offs), {.cache = dsl::Cache::cv});
}

void joinOfTwoTypes(Ptr out, Ptr in, Int n, int BLOCK) {
  auto offs = dsl::arange(0, BLOCK);
  gLine = __LINE__; auto j = dsl::join(dsl::load(in + offs), offs);
}

void splitWithoutAPair(Ptr out, Ptr in, Int n, int BLOCK) {
  auto x = dsl::load(in + dsl::arange(0, BLOCK));
  gLine = __LINE__; auto [a, b] = dsl::split(dsl::reshape(x, {32, 4}));
}

void literalTooWideForItsType(Ptr out, Ptr in, Int n, int BLOCK) {
  gLine = __LINE__; auto big = dsl::full({BLOCK}, int64_t(5000000000), dsl::int32);
  dsl::store(out + dsl::arange(0, BLOCK), dsl::cast(big, dsl::float32));
}

TEST_F(DslErrorTest, CacheModifierOfTheWrongInstruction) {
  expectUserError([] { traceKernel(storeCacheOnALoad); },
                  {"load does not take Cache::wb (PTX's .wb is a cache operator of stores); a "
                   "load takes Cache::ca, Cache::cg, Cache::cs, Cache::lu, Cache::cv"});
  expectUserError([] { traceKernel(loadCacheOnAStore); },
                  {"store does not take Cache::cv", "a store takes Cache::wb, Cache::cg, "
                                                    "Cache::cs, Cache::wt"});
}

TEST_F(DslErrorTest, JoinAndSplitMisuse) {
  expectUserError([] { traceKernel(joinOfTwoTypes); },
                  {"join of block<128xf32> and block<128xi32>: the element types differ"});
  expectUserError([] { traceKernel(splitWithoutAPair); },
                  {"split takes a block whose last dimension is 2, got block<32x4xf32>"});
}

TEST_F(DslErrorTest, IntLiteralThatDoesNotFitItsType) {
  expectUserError([] { traceKernel(literalTooWideForItsType); },
                  {"int literal 5000000000 does not fit i32"});
}

// dot's shapes, dtypes and precisions (compiler/ir/DotRules.h), at the dot's line.
dsl::Value tile(Ptr p, int64_t rows, int64_t cols) {
  auto r = dsl::arange(0, rows), c = dsl::arange(0, cols);
  return dsl::load(p + r(dsl::_, dsl::None) * cols + c(dsl::None, dsl::_));
}

void dotOfMismatchedInnerDims(Ptr out, Ptr in, Int n, int BLOCK) {
  auto a = tile(in, 32, 32), b = tile(in, 16, 32);
  gLine = __LINE__; auto c = dsl::dot(a, b);
}

void dotOfASmallTile(Ptr out, Ptr in, Int n, int BLOCK) {
  auto a = tile(in, 32, 8), b = tile(in, 8, 32);
  gLine = __LINE__; auto c = dsl::dot(a, b);
}

void dotOfMixedDtypes(Ptr out, Ptr in, Int n, int BLOCK) {
  auto a = tile(in, 32, 32), b = dsl::cast(tile(in, 32, 32), dsl::bfloat16);
  gLine = __LINE__; auto c = dsl::dot(a, b);
}

void dotWithAWrongAccumulator(Ptr out, Ptr in, Int n, int BLOCK) {
  auto a = dsl::cast(tile(in, 32, 32), dsl::bfloat16);
  auto acc = dsl::zeros({32, 32}, dsl::float16);
  gLine = __LINE__; auto c = dsl::dot(a, a, acc);
}

void dotWithAnUnknownPrecision(Ptr out, Ptr in, Int n, int BLOCK) {
  auto a = tile(in, 32, 32);
  gLine = __LINE__; auto c = dsl::dot(a, a, {.input_precision = "fp64"});
}

void dotOfRankOne(Ptr out, Ptr in, Int n, int BLOCK) {
  auto a = dsl::load(in + dsl::arange(0, BLOCK));
  gLine = __LINE__; auto c = dsl::dot(a, a);
}

TEST_F(DslErrorTest, DotMisuse) {
  expectUserError([] { traceKernel(dotOfMismatchedInnerDims); },
                  {"dot of [32, 32] and [16, 32]: the inner dimensions differ (32 and 16)"});
  expectUserError([] { traceKernel(dotOfASmallTile); },
                  {"K = 8 must be a power of two of at least 16"});
  expectUserError([] { traceKernel(dotOfMixedDtypes); },
                  {"dot's operands must have one dtype", "fp32 and bf16"});
  expectUserError([] { traceKernel(dotWithAWrongAccumulator); },
                  {"dot of bf16 operands accumulates in fp32, not fp16"});
  expectUserError([] { traceKernel(dotWithAnUnknownPrecision); },
                  {"input_precision \"tf32\", \"tf32x3\" or \"ieee\", got \"fp64\""});
  expectUserError([] { traceKernel(dotOfRankOne); }, {"dot takes blocks of rank 2 or 3"});
}

// Two [16, 2048] blocks (fp32, and the same values as i32) transposed through shared memory,
// more than a CTA may have: the error names the line of the transpose with the largest buffer
// (the first of two equal ones) and says what to change, at compile time, not at the launch.
void twoLargeTransposes(Ptr out, Ptr in, Int n, int BLOCK) {
  auto r = dsl::arange(0, 16), c = dsl::arange(0, 2048);
  auto offs = r(dsl::_, dsl::None) * 2048 + c(dsl::None, dsl::_);
  auto offsT = c(dsl::_, dsl::None) * 16 + r(dsl::None, dsl::_);
  auto x = dsl::load(in + offs);
  gLine = __LINE__; dsl::store(out + offsT, dsl::trans(x));
  auto counts = dsl::trans(dsl::cast(x, dsl::int32));
  dsl::store(out + offsT, dsl::cast(counts, dsl::float32));
}

void swizzleOfFloats(Ptr out, Ptr in, Int n, int BLOCK) {
  auto i = dsl::cast(dsl::arange(0, 16), dsl::float32);
  gLine = __LINE__; auto [a, b] = dsl::swizzle2d(i, i, 16, 16, 4);
  dsl::store(out + dsl::arange(0, 16), a + b);
}

TEST_F(DslErrorTest, Swizzle2dTakesIntegers) {
  expectUserError([] { traceKernel(swizzleOfFloats); }, {"swizzle2d takes integers"});
}

// flip, sort, topk, cat, gather, histogram and assume: wrong dimensions, sizes and types.
void sortOfNonPowerOfTwo(Ptr out, Ptr in, Int n, int BLOCK) {
  auto x = dsl::load(in + dsl::arange(0, 384)); // 3 x 128 threads: a block, not a power of two
  gLine = __LINE__; dsl::store(out + dsl::arange(0, 384), dsl::sort(x));
}
void sortAlongAMissingDimension(Ptr out, Ptr in, Int n, int BLOCK) {
  auto offs = dsl::arange(0, 8)(dsl::_, dsl::None) * 16 + dsl::arange(0, 16)(dsl::None, dsl::_);
  gLine = __LINE__; dsl::store(out + offs, dsl::sort(dsl::load(in + offs), 2));
}
void sortOfMasks(Ptr out, Ptr in, Int n, int BLOCK) {
  auto x = dsl::load(in + dsl::arange(0, 128));
  gLine = __LINE__; auto s = dsl::sort(x > 0.0);
  dsl::store(out + dsl::arange(0, 128), dsl::cast(s, dsl::float32));
}
void flipOfPointers(Ptr out, Ptr in, Int n, int BLOCK) {
  gLine = __LINE__; auto p = dsl::flip(in + dsl::arange(0, 128));
  dsl::store(p, 1.0);
}
void topkOfThree(Ptr out, Ptr in, Int n, int BLOCK) {
  auto x = dsl::load(in + dsl::arange(0, 128));
  gLine = __LINE__; dsl::store(out + dsl::arange(0, 4), dsl::topk(x, 3));
}
void catOfTwoShapes(Ptr out, Ptr in, Int n, int BLOCK) {
  auto a = dsl::load(in + dsl::arange(0, 128)), b = dsl::load(in + dsl::arange(0, 256));
  gLine = __LINE__; dsl::store(out + dsl::arange(0, 512), dsl::cat(a, b, true));
}
void gatherByFloats(Ptr out, Ptr in, Int n, int BLOCK) {
  auto x = dsl::load(in + dsl::arange(0, 128));
  gLine = __LINE__; dsl::store(out + dsl::arange(0, 128), dsl::gather(x, x, 0));
}
void gatherOfLargeBlocks(Ptr out, Ptr in, Int n, int BLOCK) {
  auto offs = dsl::arange(0, 1024);
  auto x = dsl::load(in + offs);
  gLine = __LINE__; dsl::store(out + offs, dsl::gather(x, 1023 - offs, 0));
}
void histogramOfFloats(Ptr out, Ptr in, Int n, int BLOCK) {
  auto x = dsl::load(in + dsl::arange(0, 128));
  gLine = __LINE__; dsl::store(out + dsl::arange(0, 16), dsl::histogram(x, 16));
}
void histogramOfTenBins(Ptr out, Ptr in, Int n, int BLOCK) {
  auto x = dsl::cast(dsl::load(in + dsl::arange(0, 128)), dsl::int32);
  gLine = __LINE__; auto h = dsl::histogram(x, 10);
  dsl::store(out + dsl::arange(0, 16), 1.0);
}
void assumeOfFloats(Ptr out, Ptr in, Int n, int BLOCK) {
  auto x = dsl::load(in + dsl::arange(0, 128));
  gLine = __LINE__; dsl::assume(x);
  dsl::store(out + dsl::arange(0, 128), x);
}

TEST_F(DslErrorTest, SortFamilyRefusesWrongShapesAndTypes) {
  expectUserError([] { traceKernel(sortOfNonPowerOfTwo); },
                  {"sort along dimension 0 of block<384xf32>: its extent 384 must be a power of two"});
  expectUserError([] { traceKernel(sortAlongAMissingDimension); },
                  {"sort: dimension 2 is out of range for block<8x16xf32> (0 to 1"});
  expectUserError([] { traceKernel(sortOfMasks); },
                  {"sort of block<128xi1>: sort takes integers or fp32, fp16 and bf16 floats"});
  expectUserError([] { traceKernel(flipOfPointers); },
                  {"flip of block<128xptr<f32>>: flip takes integers, masks or fp32"});
  expectUserError([] { traceKernel(topkOfThree); },
                  {"topk(3) of block<128xf32> along dimension 0: k must be a power of two from 1 "
                   "to 128"});
  expectUserError([] { traceKernel(catOfTwoShapes); },
                  {"cat of block<128xf32> and block<256xf32>: the shapes differ"});
  expectUserError([] { traceKernel(gatherByFloats); },
                  {"gather's index must be integers, got block<128xf32>"});
  expectUserError([] { traceKernel(gatherOfLargeBlocks); },
                  {"compares each of the 1024 indices with the 1024 positions along axis 0",
                   "8192 elements per thread with num_warps=4 (at most 256)"});
  expectUserError([] { traceKernel(histogramOfFloats); },
                  {"histogram takes a 1-D block of integers, got block<128xf32>"});
  expectUserError([] { traceKernel(histogramOfTenBins); },
                  {"histogram: num_bins must be a power of two, got 10"});
  expectUserError([] { traceKernel(assumeOfFloats); },
                  {"assume takes a condition (a mask, i1, such as n > 0), got block<128xf32>"});
}

TEST_F(DslErrorTest, SharedMemoryOverflowNamesTheOp) {
  expectUserError(
      [] {
        tritium::kernel("bad_kernel", twoLargeTransposes, kNames).compileTo(spec(), Stage::GIR);
      },
      {"kernel 'bad_kernel' needs", "bytes of shared memory, more than the 232448 a CTA may have",
       "goes to this trans of block<16x2048xf32>", "passes through shared memory"});
}

// "i32:1": an integer specialized as 1 (a unit stride). The kernel sees the constant; a launch
// with another value is refused, and the mark fits integers only.
TEST_F(DslErrorTest, IntegersSpecializedAsOne) {
  auto kernel = tritium::kernel("copy_kernel", copy, kNames);
  CompiledKernel &k = kernel.compile(spec({"*fp32", "*fp32", "i32:1"}));
  EXPECT_NE(k.artifacts().tir.find("constant {value = 1} : i32"), std::string::npos)
      << k.artifacts().tir;
  const KernelArg p = KernelArg::pointer(0x10000);
  expectLaunchError(k, 1, {p, p, 2},
                    {"argument 2 ('n') was specialized as equal to 1 but is 2; compile a "
                     "specialization without ':1' for it"});
  try {
    kernel.compile(spec({"*fp32:1", "*fp32", "i32"}));
    ADD_FAILURE() << "':1' on a pointer was accepted";
  } catch (const UserError &e) {
    EXPECT_NE(std::string(e.what()).find("the signature gives '*fp32:1'"), std::string::npos)
        << e.what();
  }
}

// --- Tensor descriptors ------------------------------------------------------------------------

void descriptorStrideNotOne(Ptr out, Ptr in, Int n, int BLOCK) {
  gLine = __LINE__; auto d = dsl::make_tensor_descriptor(in, {n, n}, {n, n}, {16, 16});
}
void descriptorRanksDisagree(Ptr out, Ptr in, Int n, int BLOCK) {
  gLine = __LINE__; auto d = dsl::make_tensor_descriptor(in, {n, n}, {1}, {16, 16});
}
void descriptorBaseNotPointer(Ptr out, Ptr in, Int n, int BLOCK) {
  gLine = __LINE__; auto d = dsl::make_tensor_descriptor(n, {n}, {1}, {16});
}
void descriptorBlockNotPowerOfTwo(Ptr out, Ptr in, Int n, int BLOCK) {
  gLine = __LINE__; auto d = dsl::make_tensor_descriptor(in, {n, n}, {n, 1}, {16, 24});
}
void descriptorWrongOffsets(Ptr out, Ptr in, Int n, int BLOCK) {
  auto d = dsl::make_tensor_descriptor(in, {n, n}, {n, 1}, {16, 16});
  gLine = __LINE__; auto t = d.load({0});
}
void descriptorStoreOfAnotherShape(Ptr out, Ptr in, Int n, int BLOCK) {
  auto d = dsl::make_tensor_descriptor(out, {n, n}, {n, 1}, {16, 16});
  gLine = __LINE__; d.store({0, 0}, dsl::zeros({16, 32}, dsl::float32));
}
void descriptorAtomicOfAnotherShape(Ptr out, Ptr in, Int n, int BLOCK) {
  auto d = dsl::make_tensor_descriptor(out, {n, n}, {n, 1}, {16, 16});
  gLine = __LINE__; d.atomic_add({0, 0}, dsl::zeros({16, 32}, dsl::float32));
}
void descriptorAtomicWrongOffsets(Ptr out, Ptr in, Int n, int BLOCK) {
  auto d = dsl::make_tensor_descriptor(out, {n, n}, {n, 1}, {16, 16});
  gLine = __LINE__; d.atomic_max({0}, dsl::zeros({16, 16}, dsl::float32));
}
void descriptorAtomicAndOfFloats(Ptr out, Ptr in, Int n, int BLOCK) {
  auto d = dsl::make_tensor_descriptor(out, {n, n}, {n, 1}, {16, 16});
  gLine = __LINE__; d.atomic_and({0, 0}, dsl::zeros({16, 16}, dsl::float32));
}

void blockPointerOrderNotPermutation(Ptr out, Ptr in, Int n, int BLOCK) {
  gLine = __LINE__; auto p = dsl::make_block_ptr(in, {n, n}, {n, 1}, {0, 0}, {16, 16}, {1, 1});
}
void blockPointerRanksDisagree(Ptr out, Ptr in, Int n, int BLOCK) {
  gLine = __LINE__; auto p = dsl::make_block_ptr(in, {n, n}, {n, 1}, {0}, {16, 16}, {1, 0});
}
void blockPointerBoundaryCheckOutOfRange(Ptr out, Ptr in, Int n, int BLOCK) {
  auto p = dsl::make_block_ptr(in, {n, n}, {n, 1}, {0, 0}, {16, 16}, {1, 0});
  gLine = __LINE__; auto t = dsl::load(p, {0, 2});
}
void blockPointerAdvanceWrongCount(Ptr out, Ptr in, Int n, int BLOCK) {
  auto p = dsl::make_block_ptr(in, {n, n}, {n, 1}, {0, 0}, {16, 16}, {1, 0});
  gLine = __LINE__; p = dsl::advance(p, {16});
}
void blockPointerStoreOfAnotherShape(Ptr out, Ptr in, Int n, int BLOCK) {
  auto p = dsl::make_block_ptr(out, {n, n}, {n, 1}, {0, 0}, {16, 16}, {1, 0});
  gLine = __LINE__; dsl::store(p, dsl::zeros({16, 32}, dsl::float32));
}
void blockPointerFloatOffset(Ptr out, Ptr in, Int n, int BLOCK) {
  gLine = __LINE__; auto p = dsl::make_block_ptr(in, {n}, {1}, {0.5}, {16}, {0});
}

TEST_F(DslErrorTest, BlockPointerMistakes) {
  expectUserError([] { traceKernel(blockPointerOrderNotPermutation); },
                  {"make_block_ptr: order [1, 1]", "permutation"});
  expectUserError([] { traceKernel(blockPointerRanksDisagree); },
                  {"block_shape [16, 16] has rank 2", "offsets 1"});
  expectUserError([] { traceKernel(blockPointerBoundaryCheckOutOfRange); },
                  {"load of a block pointer: boundary_check names dimension 2", "rank 2"});
  expectUserError([] { traceKernel(blockPointerAdvanceWrongCount); },
                  {"advance takes 2 offsets", "got 1"});
  expectUserError([] { traceKernel(blockPointerStoreOfAnotherShape); },
                  {"store to a block pointer of block_shape [16, 16]", "block<16x32xf32>"});
  expectUserError([] { traceKernel(blockPointerFloatOffset); },
                  {"make_block_ptr's offsets[0] must be an integer"});
}

TEST_F(DslErrorTest, TensorDescriptorMistakes) {
  expectUserError([] { traceKernel(descriptorStrideNotOne); },
                  {"the last dimension must be contiguous", "the literal 1"});
  expectUserError([] { traceKernel(descriptorRanksDisagree); },
                  {"block_shape [16, 16] has rank 2", "strides 1"});
  expectUserError([] { traceKernel(descriptorBaseNotPointer); },
                  {"make_tensor_descriptor's base must be a pointer"});
  expectUserError([] { traceKernel(descriptorBlockNotPowerOfTwo); },
                  {"block_shape [16, 24]", "powers of two"});
  expectUserError([] { traceKernel(descriptorWrongOffsets); },
                  {"load of a tensor descriptor takes 2 offsets", "got 1"});
  expectUserError([] { traceKernel(descriptorStoreOfAnotherShape); },
                  {"store to a tensor descriptor of block_shape [16, 16]", "block<16x32xf32>"});
  expectUserError([] { traceKernel(descriptorAtomicOfAnotherShape); },
                  {"atomic_add of a tensor descriptor of block_shape [16, 16]",
                   "block<16x32xf32>"});
  expectUserError([] { traceKernel(descriptorAtomicWrongOffsets); },
                  {"atomic_max of a tensor descriptor takes 2 offsets", "got 1"});
  expectUserError([] { traceKernel(descriptorAtomicAndOfFloats); }, {"atomic_and", "f32"});
}
