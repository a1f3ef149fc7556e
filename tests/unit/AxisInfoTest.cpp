// The axis analysis at the edges of its input: constants from INT64_MIN to INT64_MAX and 0 get
// the power of two that divides them (INT64_MIN's negation was undefined behaviour, which the
// sanitizer build would report), capped at the "divisible by anything" of 2^30.
#include "compiler/analysis/AxisInfo.h"
#include "compiler/ir/Parser.h"

#include <gtest/gtest.h>

#include <iterator>
#include <memory>
#include <string>

using namespace tritium;

TEST(AxisInfoTest, DivisibilityOfExtremeConstants) {
  const std::string text = "kernel @k() {\n"
                           "  %0 = constant {value = -9223372036854775808} : i64\n"
                           "  %1 = constant {value = 9223372036854775807} : i64\n"
                           "  %2 = constant {value = -8} : i64\n"
                           "  %3 = constant {value = 0} : i32\n"
                           "  %4 = constant {value = -2147483648} : i32\n"
                           "  %5 = constant {value = 4611686018427387904} : block<4xi64>\n"
                           "}\n";
  std::unique_ptr<ir::Function> fn = ir::parseTIR(text, "axis.tir");
  AxisAnalysis axis(*fn);
  auto result = [&](int i) { return (*std::next(fn->body().ops().begin(), i))->result(); };
  auto divisibility = [&](int i) { return axis.get(result(i)).divisibility[0]; }; // per dimension
  const int64_t unbounded = int64_t(1) << 30;
  EXPECT_EQ(divisibility(0), unbounded);
  EXPECT_EQ(divisibility(1), 1);
  EXPECT_EQ(divisibility(2), 8);
  EXPECT_EQ(divisibility(3), unbounded);
  EXPECT_EQ(divisibility(4), int64_t(1) << 30);
  EXPECT_EQ(divisibility(5), unbounded);
  EXPECT_EQ(axis.get(result(5)).constancy[0], 4);
}

// A loop's results of different ranks each get facts of their own rank: a carried [4] first and
// a carried [4, 8] after it once gave the second the first's one-element vectors, and the
// lowering then read the [4, 8] result's second dimension past their end (the attention
// forward's accumulator, yielded after a carried row factor, was marked constant in runs of 8).
TEST(AxisInfoTest, ALoopsResultsOfDifferentRanksHaveTheirOwnFacts) {
  const std::string text = "kernel @k(%n: i32) {\n"
                           "  %0 = constant {value = 0} : i32\n"
                           "  %1 = constant {value = 1} : i32\n"
                           "  %2 = constant {value = 1.0} : f32\n"
                           "  %3 = splat %2 : block<4xf32>\n"
                           "  %4 = splat %2 : block<4x8xf32>\n"
                           "  %5, %6 = for %0, %n, %1, %3, %4 : block<4xf32>, block<4x8xf32> {\n"
                           "  ^body(%7: i32, %8: block<4xf32>, %9: block<4x8xf32>):\n"
                           "    %10 = arange {start = 0, end = 8} : block<8xi32>\n"
                           "    %11 = expand_dims %10 {axis = 0} : block<1x8xi32>\n"
                           "    %12 = broadcast %11 : block<4x8xi32>\n"
                           "    %13 = cast %12 : block<4x8xf32>\n"
                           "    %14 = mul %9, %13 : block<4x8xf32>\n"
                           "    yield %8, %14\n"
                           "  }\n"
                           "}\n";
  std::unique_ptr<ir::Function> fn = ir::parseTIR(text, "axis.tir");
  AxisAnalysis axis(*fn);
  const ir::Op &loop = **std::next(fn->body().ops().begin(), 5);
  AxisInfo first = axis.get(loop.results()[0].get()), second = axis.get(loop.results()[1].get());
  ASSERT_EQ(first.rank(), 1);
  ASSERT_EQ(second.rank(), 2);
  EXPECT_EQ(second.constancy, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(second.contiguity, (std::vector<int64_t>{1, 1}));
}

// A select of two multiples of 16 is one (a varlen run's end, either the next sequence's first
// column or this one's past its keys, both multiples of 16: the run's length minus its start
// then lets `c < length` hold along 16 columns, and the transposition's stores be 16 bytes).
TEST(AxisInfoTest, ASelectOfMultiplesIsAMultipleOfWhatBothAre) {
  const std::string text = "kernel @k(%a: i64 {divisibility = 16}, %b: i64 {divisibility = 32}, "
                           "%c: i64, %n: i64) {\n"
                           "  %0 = cmp %c, %n {pred = \"lt\"} : i1\n"
                           "  %1 = select %0, %a, %b : i64\n"
                           "  %2 = select %0, %a, %c : i64\n"
                           "}\n";
  std::unique_ptr<ir::Function> fn = ir::parseTIR(text, "axis.tir");
  AxisAnalysis axis(*fn);
  auto result = [&](int i) { return (*std::next(fn->body().ops().begin(), i))->result(); };
  EXPECT_EQ(axis.get(result(1)).divisibility[0], 16);
  EXPECT_EQ(axis.get(result(2)).divisibility[0], 1);
}
