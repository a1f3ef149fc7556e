// inline_asm_elementwise without a GPU: mistakes in the constraints, the asm's operand references,
// the pack and the argument types are UserErrors at the call's line; the interpreter refuses
// the op at its line; the GPU test's kernels (tests/InlineAsmCases.h) compile to PTX that holds
// each asm verbatim, once per call, and that ptxas assembles for sm_90.
#include "InlineAsmCases.h"
#include "PtxChecks.h"

#include "compiler/support/Error.h"
#include "interpreter/Interpreter.h"

using namespace tritium;
using namespace tritium::testing;
using namespace tritium::testing::inline_asm;
using dsl::Int;
using dsl::Ptr;

namespace {

int gLine = 0; // the line of the mistake, set by the code that makes it

const std::vector<std::string> kNames = {"out", "in", "n", "BLOCK"};

Specialization spec() {
  return {.signature = {"*fp32", "*fp32", "i32"}, .constexprs = {128}, .numWarps = 4};
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
    std::string where = "InlineAsmTest.cpp:" + std::to_string(gLine) + ": error: ";
    EXPECT_EQ(msg.rfind(where, 0), 0u) << "expected '" << where << "' first in: " << msg;
    for (const std::string &needle : needles)
      EXPECT_NE(msg.find(needle), std::string::npos) << "missing '" << needle << "' in: " << msg;
  } catch (const std::exception &e) {
    ADD_FAILURE() << "expected a tritium::UserError, got: " << e.what();
  }
}

template <typename... P> void trace(void (*body)(P...)) {
  tritium::kernel("asm_kernel", body, kNames).compileTo(spec(), Stage::TIR);
}

// A row of 128 floats for the asms below, each of which makes one mistake.
dsl::Value row(Ptr in) { return dsl::load(in + dsl::arange(0, 128)); }

void tooFewInputs(Ptr out, Ptr in, Int n, int BLOCK) {
  auto x = row(in);
  gLine = __LINE__; dsl::inline_asm_elementwise("add.f32 $0, $1, $2;", "=r,r", {x, x}, dsl::float32, true, 1);
}
void halfRegisterForAFloat(Ptr out, Ptr in, Int n, int BLOCK) {
  auto x = row(in);
  gLine = __LINE__; dsl::inline_asm_elementwise("mov.b32 $0, $1;", "=r,h", {x}, dsl::float32, true, 1);
}
void doubleRegister(Ptr out, Ptr in, Int n, int BLOCK) {
  auto x = row(in);
  gLine = __LINE__; dsl::inline_asm_elementwise("mov.b32 $0, $1;", "=d,r", {x}, dsl::float32, true, 1);
}
void inputBeforeOutput(Ptr out, Ptr in, Int n, int BLOCK) {
  auto x = row(in);
  gLine = __LINE__; dsl::inline_asm_elementwise("mov.b32 $0, $1;", "r,=r", {x}, dsl::float32, true, 1);
}
void unknownLetter(Ptr out, Ptr in, Int n, int BLOCK) {
  auto x = row(in);
  gLine = __LINE__; dsl::inline_asm_elementwise("mov.b32 $0, $1;", "=x,r", {x}, dsl::float32, true, 1);
}
void operandOutOfRange(Ptr out, Ptr in, Int n, int BLOCK) {
  auto x = row(in);
  gLine = __LINE__; dsl::inline_asm_elementwise("mov.b32 $0, $2;", "=r,r", {x}, dsl::float32, true, 1);
}
void dollarWithoutOperand(Ptr out, Ptr in, Int n, int BLOCK) {
  auto x = row(in);
  gLine = __LINE__; dsl::inline_asm_elementwise("mov.b32 $0, $a;", "=r,r", {x}, dsl::float32, true, 1);
}
void packOfThree(Ptr out, Ptr in, Int n, int BLOCK) {
  auto x = row(in);
  gLine = __LINE__; dsl::inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", {x}, dsl::float32, true, 3);
}
void maskArgument(Ptr out, Ptr in, Int n, int BLOCK) {
  auto x = row(in);
  gLine = __LINE__; dsl::inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", {x > 0.0}, dsl::float32, true, 1);
}
void bytesNotCountedAsPacked(Ptr out, Ptr in, Int n, int BLOCK) {
  auto x = row(in);
  gLine = __LINE__; dsl::inline_asm_elementwise("mov.b32 $0, $1;", "=r,r,r,r,r", {dsl::cast(x, dsl::int8)}, dsl::int8, true, 4);
}
void noArguments(Ptr out, Ptr in, Int n, int BLOCK) {
  gLine = __LINE__; dsl::inline_asm_elementwise("mov.u32 $0, 1;", "=r", {}, dsl::int32, true, 1);
}

class InlineAsmTest : public CompilerTest {};

TEST_F(InlineAsmTest, ConstraintMistakesNameTheLine) {
  expectUserError([] { trace(tooFewInputs); },
                  {"inline_asm_elementwise: the constraints \"=r,r\" list 1 output and 1 input, "
                   "but with pack = 1 the results (f32) take 1 register per asm call and the "
                   "arguments (f32, f32) take 2"});
  expectUserError([] { trace(halfRegisterForAFloat); },
                  {"constraint 1 ('h') is for $1, a 32-bit register of argument 0 (f32): it "
                   "takes r or f"});
  expectUserError([] { trace(doubleRegister); },
                  {"constraint 0 ('d') is for $0, a 32-bit register of result 0 (f32)",
                   "tritium has no f64 elements"});
  expectUserError([] { trace(inputBeforeOutput); },
                  {"constraint 0 of \"r,=r\" is an input where the outputs are: list the outputs "
                   "first"});
  expectUserError([] { trace(unknownLetter); },
                  {"constraint 0 of \"=x,r\" is not one tritium takes"});
  expectUserError([] { trace(bytesNotCountedAsPacked); },
                  {"list 1 output and 4 inputs, but with pack = 4 the results (i8) take 1 "
                   "register per asm call and the arguments (i8) take 1"});
}

TEST_F(InlineAsmTest, OperandsPackAndTypeMistakesNameTheLine) {
  expectUserError([] { trace(operandOutOfRange); },
                  {"the asm names $2, but its operands are $0 .. $1"});
  expectUserError([] { trace(dollarWithoutOperand); },
                  {"the asm's '$a;' at offset 12 names no operand", "$$ for a $"});
  expectUserError([] { trace(packOfThree); },
                  {"pack must be a power of two of at least 1, got 3"});
  expectUserError([] { trace(maskArgument); },
                  {"argument 0 is a mask (i1), which no asm register takes"});
  expectUserError([] { trace(noArguments); },
                  {"inline_asm_elementwise needs at least one argument"});
}

void asmInTheInterpreter(Ptr out, Ptr in, Int n, int BLOCK) {
  auto offs = dsl::arange(0, 128);
  auto x = dsl::load(in + offs);
  gLine = __LINE__; auto y = dsl::inline_asm_elementwise("mul.rn.f32 $0, $1, $1;", "=f,f", {x}, dsl::float32, true, 1);
  dsl::store(out + offs, y);
}

TEST_F(InlineAsmTest, InterpreterRefusesAtTheLine) {
  setInterpret(true);
  interpreter::HostBuffer in(128 * 4), out(128 * 4);
  expectUserError(
      [&] {
        auto k = tritium::kernel("asm_kernel", asmInTheInterpreter, kNames);
        k.compile(spec()).launch(1, nullptr, {out, in, 128});
      },
      {"interpreting 'asm_kernel': inline_asm_elementwise runs PTX, which only a GPU can run"});
  resetInterpret();
}

// The PTX of `k` for `s`: `calls` inline asm calls, each text of `texts` in it, assembled.
template <typename... P>
void expectAsmCalls(const std::string &name, void (*k)(P...), const std::vector<std::string> &names,
                    const Specialization &s, size_t calls, const std::vector<std::string> &texts) {
  Artifacts a = tritium::kernel(name, k, names).compileTo(s, Stage::PTX);
  EXPECT_EQ(count(a.ptx, "// begin inline asm"), calls) << a.ptx;
  for (const std::string &text : texts)
    EXPECT_NE(a.ptx.find(text), std::string::npos) << text << " is not in:\n" << a.ptx;
  expectAssembles(a, s.arch);
}

TEST_F(InlineAsmTest, GpuKernelsCompileWithTheirAsmVerbatim) {
  // 1024 u32 over 128 threads: 8 elements each, a call per element.
  expectAsmCalls("funnel_shift", funnelShift, kFunnelNames, funnelSpec(1024), 8,
                 {"shf.l.wrap.b32"});
  // 8 bytes per thread: two calls of four; 1 byte per thread: one call, filled with zeros.
  expectAsmCalls("packed_bytes", packedBytes, kPackedNames, packedSpec(1024), 2, {"0x1F1F1F1F"});
  expectAsmCalls("packed_bytes", packedBytes, kPackedNames, packedSpec(128), 1, {"0x1F1F1F1F"});
  expectAsmCalls("two_results", twoResults, kTwoNames, twoSpec(512), 1,
                 {"mov.b32 {tmp0, tmp1, tmp2, tmp3}", "cvt.u32.u8"});
  // Three asms of 4 elements per thread: f32 and i64 one per call, fp16 two.
  expectAsmCalls("other_registers", otherRegisters, kOtherNames, otherSpec(512), 4 + 2 + 4,
                 {"mul.rn.f32", "add.rn.f16x2", "add.s64"});
  // The block's asm (one element per thread) and the scalar's.
  expectAsmCalls("lanes_and_scalars", lanesAndScalars, kLaneNames, laneSpec(128), 2,
                 {"%laneid", "add.u32"});
}

} // namespace
