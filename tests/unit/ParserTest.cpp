// The TIR/GIR parser: print -> parse -> print is the identity on every kernel tritium ships
// (softmax over many specializations) at the TIR and GIR stages, with and without locations; a
// parsed kernel compiles to the same PTX as the traced one; mistakes in the text are UserErrors
// naming file:line:column and what was expected.
#include "TestSupport.h"

#include "compiler/ir/Parser.h"
#include "compiler/ir/Printer.h"
#include "compiler/ir/Verifier.h"
#include "kernels/Softmax.h"
#include "frontend/Kernel.h"

#include <gtest/gtest.h>

using namespace tritium;

namespace {

std::vector<Specialization> shippedSpecializations() {
  std::vector<Specialization> specs;
  for (int64_t n : {1, 3, 781, 1000, 4096, 12288})
    specs.push_back(kernels::softmaxSpecialization(n));
  for (const char *dtype : {"fp16", "bf16"})
    specs.push_back(kernels::softmaxSpecialization(781, dtype));
  Specialization aligned = kernels::softmaxSpecialization(4096);
  aligned.signature = {"*fp32:16", "*fp32:16", "i32:16", "i32:16", "i32", "i32:16"};
  specs.push_back(aligned);
  Specialization oneWarp = kernels::softmaxSpecialization(781);
  oneWarp.numWarps = 1;
  specs.push_back(oneWarp);
  Specialization stages = aligned;
  stages.constexprs[1] = stages.numStages = 1;
  specs.push_back(stages);
  return specs;
}

std::string roundTrip(const std::string &text, bool locations = true) {
  std::unique_ptr<ir::Function> fn = ir::parseTIR(text, "test.tir");
  return ir::print(*fn, {.locations = locations});
}

class ParserTest : public tritium::testing::CompilerTest {};

} // namespace

TEST_F(ParserTest, SoftmaxRoundTripsAtEveryStageAndSpecialization) {
  for (const Specialization &spec : shippedSpecializations()) {
    SCOPED_TRACE(spec.str());
    Artifacts a = kernels::softmaxKernel().compileTo(spec, Stage::GIR);
    ASSERT_FALSE(a.tir.empty());
    ASSERT_FALSE(a.gir.empty());
    EXPECT_EQ(roundTrip(a.tir), a.tir);
    EXPECT_EQ(roundTrip(a.gir), a.gir);

    // Without locations: the parsed ops have none, and print the same.
    std::unique_ptr<ir::Function> fn = kernels::softmaxKernel().trace(spec);
    optimizeTIR(*fn);
    std::string tir = ir::print(*fn, {.locations = false});
    EXPECT_EQ(roundTrip(tir, false), tir);
    EXPECT_EQ(roundTrip(tir, true), tir) << "a text without loc(...) must parse without locations";
    compileTIR(*fn, CompileOptions{spec.arch, spec.ptxVersion, spec.numWarps, spec.numStages},
               Stage::GIR);
    std::string gir = ir::print(*fn, {.locations = false});
    EXPECT_EQ(roundTrip(gir, false), gir);

    // Parsed IR verifies, GIR with its layouts.
    ir::verify(*ir::parseTIR(a.tir, "t.tir"), "parsing");
    ir::verify(*ir::parseTIR(a.gir, "g.gir"), "parsing", {.requireLayouts = true});
  }
}

TEST_F(ParserTest, ParsedTIRCompilesToTheSamePTX) {
  Specialization spec = kernels::softmaxSpecialization(781);
  Artifacts traced = kernels::softmaxKernel().compileTo(spec, Stage::PTX);
  std::unique_ptr<ir::Function> fn = ir::parseTIR(traced.tir, "softmax.tir");
  Artifacts parsed =
      compileTIR(*fn, CompileOptions{spec.arch, spec.ptxVersion, spec.numWarps, spec.numStages});
  EXPECT_EQ(parsed.gir, traced.gir);
  EXPECT_EQ(parsed.ptx, traced.ptx);
}

TEST_F(ParserTest, LoopsWithCarriedValuesAndSpecialFloats) {
  const std::string text =
      R"(kernel @k(%out: ptr<f32> {divisibility = 16}, %n: i64) {num_warps = 2, note = "a b"} {
  %0 = constant {value = 0} : i64
  %1 = constant {value = 1} : i64
  %2 = constant {value = nan} : f32
  %3 = constant {value = -inf} : f32
  %4 = constant {value = 1e+20} : f32
  %5 = constant {value = -0.0} : f32
  %6 = constant {value = 0.1} : f32
  %7, %8 = for %0, %n, %1, %2, %0 {num_stages = 3} : f32, i64  loc("k.cpp:7") {
  ^body(%9: i64, %10: f32, %11: i64):
    %12 = add %10, %6 : f32
    %13 = maximum %12, %3 : f32
    yield %13, %9  loc("k.cpp:9")
  }
  %14 = add %7, %4 : f32
  %15 = add %14, %5 : f32
  store %out, %15  loc("k.cpp:12")
}
)";
  EXPECT_EQ(roundTrip(text), text);
  ir::verify(*ir::parseTIR(text, "k.tir"), "parsing");
}

TEST_F(ParserTest, CommentsAndFreeLayoutAreAccepted) {
  const std::string text = "// a comment\nkernel @k(%p: ptr<i32>)\n{ // body\n"
                           "  %0 = arange {start = 0, end = 4} : block<4xi32>\n"
                           "  %1 = splat %p : block<4xptr<i32>>\n"
                           "  %2 = addptr %1,   %0 : block<4xptr<i32>>\n"
                           "  store %2, %0\n}\n";
  EXPECT_EQ(roundTrip(text), "kernel @k(%p: ptr<i32>) {\n"
                             "  %0 = arange {start = 0, end = 4} : block<4xi32>\n"
                             "  %1 = splat %p : block<4xptr<i32>>\n"
                             "  %2 = addptr %1, %0 : block<4xptr<i32>>\n"
                             "  store %2, %0\n}\n");
}

TEST_F(ParserTest, MistakesNameFileLineColumnAndWhatWasExpected) {
  struct Case {
    std::string text, expected;
  };
  const std::vector<Case> cases = {
      {"kernal @k() {\n}\n", "bad.tir:1:1: error: expected 'kernel'"},
      {"kernel @k(%a i32) {\n}\n",
       "bad.tir:1:14: error: expected ':' after argument %a, found 'i32)'"},
      {"kernel @k() {\n  %0 = frobnicate : i32\n}\n",
       "bad.tir:2:8: error: unknown op 'frobnicate'"},
      {"kernel @k() {\n  %0 = add %1, %2 : i32\n}\n",
       "bad.tir:2:12: error: use of undefined value %1"},
      {"kernel @k() {\n  %0 = program_id {axis = 0}\n}\n",
       "bad.tir:3:1: error: expected ':' and the result types of 'program_id'"},
      {"kernel @k() {\n  %0 = program_id {axis = 0} : f33\n}\n",
       "bad.tir:2:32: error: expected an element type"},
      {"kernel @k() {\n  %0 = arange {start = 0, end = 4} : block<4xi32, #blocked<spt=[1]>>\n}\n",
       "bad.tir:2:67: error: expected ',' between the layout's fields, found '>>'"},
      {"kernel @k() {\n  %0 = program_id {axis 0} : i32\n}\n",
       "bad.tir:2:25: error: expected '=' after attribute axis"},
      {"kernel @k(%n: i32) {\n  %0 = add %n, %n : i32\n  %0 = add %n, %n : i32\n}\n",
       "bad.tir:3:3: error: value %0 is defined twice"},
      {"kernel @k(%n: i32) {\n  %0 = add %n, %n : i32  loc(\"nowhere\")\n}\n",
       "bad.tir:2:39: error: expected \"file:line\" in loc(...), got \"nowhere\""},
      {"kernel @k() {\n", "bad.tir:2:1: error: expected '}' to close the kernel's body"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.text);
    try {
      ir::parseTIR(c.text, "bad.tir");
      ADD_FAILURE() << "no error";
    } catch (const UserError &e) {
      EXPECT_EQ(std::string(e.what()).rfind(c.expected, 0), 0u)
          << "expected '" << c.expected << "...', got: " << e.what();
    }
  }
}

namespace {

// The first error that parsing `text` gives, or "" when it parses.
std::string parseError(const std::string &text) {
  try {
    ir::parseTIR(text, "bad.tir");
  } catch (const UserError &e) {
    return e.what();
  }
  return "";
}

std::string constantOf(const std::string &literal, const std::string &type) {
  return "kernel @k() {\n  %0 = constant {value = " + literal + "} : " + type + "\n}\n";
}

} // namespace

TEST_F(ParserTest, LiteralsMustFitTheirType) {
  for (auto [literal, type] : std::vector<std::pair<std::string, std::string>>{
           {"0", "i1"}, {"1", "i1"}, {"-2147483648", "i32"}, {"2147483647", "block<4xi32>"},
           {"-9223372036854775808", "i64"}, {"9223372036854775807", "i64"},
           {"65504.0", "f16"}, {"-65519.0", "f16"}, {"3.3895313892515355e+38", "bf16"},
           {"3.4028234663852886e+38", "f32"}, {"inf", "f16"}, {"-inf", "bf16"},
           {"nan", "f32"}, {"7", "f32"}, {"1e-60", "f32"}, {"-128", "i8"}, {"127", "i8"},
           {"255", "u8"}, {"-1", "u8"}, {"-32768", "i16"}, {"65535", "u16"},
           {"4294967295", "u32"}, {"-1", "u32"}, {"-1", "u64"}, {"9223372036854775807", "u64"}}) {
    SCOPED_TRACE(literal + " : " + type);
    EXPECT_EQ(parseError(constantOf(literal, type)), "");
  }
  struct Case {
    std::string literal, type, expected;
  };
  const std::vector<Case> cases = {
      {"2", "i1", "bad.tir:2:26: error: literal 2 is out of range for i1 (0 to 1)"},
      {"-1", "i1", "literal -1 is out of range for i1 (0 to 1)"},
      {"-9223372036854775808", "i32",
       "literal -9223372036854775808 is out of range for i32 (-2147483648 to 2147483647)"},
      {"2147483648", "block<8xi32>", "literal 2147483648 is out of range for i32"},
      {"9223372036854775808", "i64",
       "bad.tir:2:26: error: integer literal 9223372036854775808 is out of range: integers in "
       "the IR are at most 64-bit, from -9223372036854775808 to 9223372036854775807"},
      {"65520.0", "f16", "literal 65520.0 overflows f16 (finite values are at most 65504"},
      {"-1e5", "f16", "literal -1e5 overflows f16"},
      {"3.4e38", "bf16", "literal 3.4e38 overflows bf16"},
      {"1e39", "f32", "literal 1e39 overflows f32"},
      {"1e309", "f32",
       "bad.tir:2:26: error: float literal 1e309 is out of the range of a 64-bit float"},
      {"300", "i8", "literal 300 is out of range for i8 (-128 to 127)"},
      {"128", "i8", "literal 128 is out of range for i8 (-128 to 127)"},
      {"256", "u8", "literal 256 is out of range for u8 (-128 to 255)"},
      {"-32769", "i16", "literal -32769 is out of range for i16 (-32768 to 32767)"},
      {"65536", "block<4xu16>", "literal 65536 is out of range for u16 (-32768 to 65535)"},
      {"4294967296", "u32", "literal 4294967296 is out of range for u32 (-2147483648 to 4294967295)"},
      {"1.5", "i32", "literal 1.5 is not an integer, as a constant of type i32 needs"},
      {"nan", "i64", "literal nan is not an integer"},
      {"\"7\"", "f32", "literal \"7\" is not a number, as a constant of type f32 needs"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.literal + " : " + c.type);
    std::string error = parseError(constantOf(c.literal, c.type));
    EXPECT_NE(error.find(c.expected), std::string::npos)
        << "expected '" << c.expected << "' in: " << error;
  }
}

TEST_F(ParserTest, BlocksAndDivisibilityHaveLimits) {
  EXPECT_NE(parseError(constantOf("0", "block<1024x1024x2xi32>"))
                .find("bad.tir:2:47: error: blocks hold at most 1048576 elements"),
            std::string::npos);
  EXPECT_EQ(parseError(constantOf("0", "block<1024x1024xi32>")), "");
  EXPECT_NE(parseError(constantOf("0", "block<4294967296x4294967296xi32>")).find("at most"),
            std::string::npos);
  EXPECT_NE(parseError("kernel @k(%p: ptr<f32> {divisibility = 4294967312}) {\n}\n")
                .find("bad.tir:1:40: error: only {divisibility = N} (N from 1 to 1073741824)"),
            std::string::npos);
}

// Nests of `for` deeper than kMaxLoopNesting are an error naming the line of the first loop too
// deep, however deep (100000 levels used to overflow the stack); at the limit they parse.
TEST_F(ParserTest, LoopNestingIsLimited) {
  auto nest = [](int depth) {
    std::string text = "kernel @k(%n: i32) {\n";
    for (int i = 0; i < depth; ++i)
      text += "for %n, %n, %n {num_stages = 1} {\n^body(%i" + std::to_string(i) + ": i32):\n";
    for (int i = 0; i < depth; ++i)
      text += "yield\n}\n";
    return text + "}\n";
  };
  std::unique_ptr<ir::Function> fn = ir::parseTIR(nest(ir::kMaxLoopNesting), "deep.tir");
  ir::verify(*fn, "parsing");
  for (int depth : {ir::kMaxLoopNesting + 1, 100000}) {
    SCOPED_TRACE(depth);
    std::string error = parseError(nest(depth));
    EXPECT_EQ(error.rfind("bad.tir:" + std::to_string(2 * ir::kMaxLoopNesting + 2) +
                              ":1: error: 'for' nested 65 deep: loops nest at most 64 deep",
                          0),
              0u)
        << error;
  }
}
