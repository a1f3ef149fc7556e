// The TIR/GIR parser: print -> parse -> print is the identity on every kernel tritium ships
// (softmax over many specializations) at the TIR and GIR stages, with and without locations; a
// parsed kernel compiles to the same PTX as the traced one; mistakes in the text are UserErrors
// naming file:line:column and what was expected.
#include "TestSupport.h"

#include "compiler/ir/Parser.h"
#include "compiler/ir/Printer.h"
#include "compiler/ir/Verifier.h"
#include "examples/kernels/Softmax.h"
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
