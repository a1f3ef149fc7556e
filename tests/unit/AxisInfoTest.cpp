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
