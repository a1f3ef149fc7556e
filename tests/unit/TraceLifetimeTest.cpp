// A DSL value lives only as long as the trace that made it: kept in a static and used while
// another kernel is traced, or after every trace has ended, it is a UserError at the line of the
// use, raised before the freed IR it points into is touched (run under AddressSanitizer once:
// docs/LIMITS.md says how).
#include "TestSupport.h"

#include "compiler/support/Error.h"
#include "frontend/Kernel.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

using namespace tritium;
using dsl::Int;
using dsl::Ptr;

namespace {

int gLine = 0;       // the line of the mistake, set on the line that makes it
dsl::Value gKept;    // a value that outlives the trace that made it
dsl::Value gOuter;   // a value of a trace that is still in progress (an outer one)
Specialization gSpec{.signature = {"*fp32", "*fp32", "i32"}, .constexprs = {128}};
const std::vector<std::string> kNames = {"out", "in", "n", "BLOCK"};

void expectUserError(const std::function<void()> &f, const std::vector<std::string> &needles) {
  gLine = 0;
  try {
    f();
    ADD_FAILURE() << "no UserError was thrown";
  } catch (const UserError &e) {
    std::string msg = e.what();
    std::string where = "TraceLifetimeTest.cpp:" + std::to_string(gLine) + ": error: ";
    EXPECT_EQ(msg.rfind(where, 0), 0u) << "expected '" << where << "' first in: " << msg;
    for (const std::string &needle : needles)
      EXPECT_NE(msg.find(needle), std::string::npos) << "missing '" << needle << "' in: " << msg;
  } catch (const std::exception &e) {
    ADD_FAILURE() << "expected a tritium::UserError, got: " << e.what();
  }
}

void keepsAValue(Ptr out, Ptr in, Int n, int BLOCK) {
  auto offs = dsl::arange(0, BLOCK);
  gKept = offs;
  dsl::store(out + offs, dsl::load(in + offs));
}

void usesTheKeptValue(Ptr out, Ptr in, Int n, int BLOCK) {
  gLine = __LINE__; auto x = dsl::load(in + gKept);
  dsl::store(out + dsl::arange(0, BLOCK), x);
}

void asksTheKeptValuesType(Ptr out, Ptr in, Int n, int BLOCK) {
  auto x = dsl::load(in + dsl::arange(0, BLOCK));
  gLine = __LINE__; auto y = dsl::cast(x, gKept.dtype());
  dsl::store(out + dsl::arange(0, BLOCK), y);
}

void carriesTheKeptValue(Ptr out, Ptr in, Int n, int BLOCK) {
  auto acc = gKept;
  gLine = __LINE__; for (auto i : dsl::range(0, n, 1).carry(acc)) {
    acc = acc + i;
  }
  dsl::store(out + dsl::arange(0, BLOCK), acc);
}

void usesTheOuterValue(Ptr out, Ptr in, Int n, int BLOCK) {
  gLine = __LINE__; auto x = dsl::load(in + gOuter);
  dsl::store(out + dsl::arange(0, BLOCK), x);
}

// A loop whose assigned variables are found by comparing every live variable before and after
// the body (LiveValues.h): the kept value is among them and must not be read.
void loopsWhileAValueIsKept(Ptr out, Ptr in, Int n, int BLOCK) {
  auto offs = dsl::arange(0, BLOCK);
  auto acc = dsl::full(BLOCK, 0.0);
  for (auto i : dsl::range(0, n, 1)) {
    acc = acc + dsl::load(in + i * BLOCK + offs);
  }
  dsl::store(out + offs, acc);
}

// A variable of this trace given the kept value inside a loop body is not carried; its next use
// is the mistake.
void assignsTheKeptValueInALoop(Ptr out, Ptr in, Int n, int BLOCK) {
  auto offs = dsl::arange(0, BLOCK);
  for (auto i : dsl::range(0, n, 1)) {
    offs = gKept;
  }
  gLine = __LINE__; dsl::store(out + offs, 0.0);
}

int gOuterLine = 0;
void tracesAnotherKernelInside(Ptr out, Ptr in, Int n, int BLOCK) {
  gOuterLine = __LINE__; gOuter = dsl::arange(0, BLOCK);
  tritium::kernel("inner_kernel", usesTheOuterValue, kNames).trace(gSpec);
}

class TraceLifetimeTest : public tritium::testing::CompilerTest {
protected:
  void SetUp() override { tritium::kernel("keeper", keepsAValue, kNames).trace(gSpec); }
};

} // namespace

TEST_F(TraceLifetimeTest, ValueOfAnEndedTraceUsedInAnotherKernel) {
  expectUserError(
      [] { tritium::kernel("user_kernel", usesTheKeptValue, kNames).trace(gSpec); },
      {"a tritium value made during a trace that has ended is used while tracing kernel "
       "'user_kernel'",
       "do not keep them (in a static, a global or an object)"});
}

TEST_F(TraceLifetimeTest, ValueOfAnEndedTraceUsedInTheSameKernelAgain) {
  // Another specialization of the kernel that made it is another trace.
  auto k = tritium::kernel("keeper_and_user", usesTheKeptValue, kNames);
  expectUserError([&] { k.compileTo(gSpec, Stage::TIR); }, {"made during a trace that has ended"});
}

TEST_F(TraceLifetimeTest, ValueUsedAfterEveryTraceEnded) {
  expectUserError(
      [] {
        gLine = __LINE__; auto v = gKept + 1;
        (void)v;
      },
      {"a tritium value made during a trace that has ended is used outside any trace"});
  expectUserError(
      [] {
        gLine = __LINE__; auto t = gKept.dtype();
        (void)t;
      },
      {"used outside any trace"});
}

TEST_F(TraceLifetimeTest, TypeOfAValueOfAnEndedTrace) {
  expectUserError(
      [] { tritium::kernel("typer", asksTheKeptValuesType, kNames).trace(gSpec); },
      {"made during a trace that has ended is used while tracing kernel 'typer'"});
}

TEST_F(TraceLifetimeTest, CarryOfAValueOfAnEndedTrace) {
  expectUserError(
      [] { tritium::kernel("carrier", carriesTheKeptValue, kNames).trace(gSpec); },
      {"made during a trace that has ended is used while tracing kernel 'carrier'"});
}

TEST_F(TraceLifetimeTest, ValueOfAnOuterTraceNamesWhereItWasMade) {
  // The outer trace is still in progress, so its IR is alive and the value's origin is named.
  try {
    tritium::kernel("outer_kernel", tracesAnotherKernelInside, kNames).trace(gSpec);
    ADD_FAILURE() << "no UserError was thrown";
  } catch (const UserError &e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("TraceLifetimeTest.cpp:" + std::to_string(gLine) + ": error: ", 0), 0u)
        << msg;
    EXPECT_NE(msg.find("a tritium value made while tracing kernel 'outer_kernel' (at "
                       "TraceLifetimeTest.cpp:" + std::to_string(gOuterLine) +
                       ") is used while tracing kernel 'inner_kernel'"),
              std::string::npos)
        << msg;
  }
}

TEST_F(TraceLifetimeTest, LoopsIgnoreAKeptValue) {
  EXPECT_NO_THROW(
      tritium::kernel("looper", loopsWhileAValueIsKept, kNames).compileTo(gSpec, Stage::GIR));
  expectUserError(
      [] { tritium::kernel("assigner", assignsTheKeptValueInALoop, kNames).trace(gSpec); },
      {"made during a trace that has ended is used while tracing kernel 'assigner'"});
}

TEST_F(TraceLifetimeTest, FreshValuesStillWork) {
  // The check costs nothing to correct kernels: the same kernels trace without the kept value.
  EXPECT_NO_THROW(tritium::kernel("keeper", keepsAValue, kNames).compileTo(gSpec, Stage::PTX));
}
