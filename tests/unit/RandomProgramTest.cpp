// Random programs (tests/RandomPrograms.h) without a GPU: each seed traces, verifies, compiles
// through every stage to PTX, prints, parses and prints again to the same text (TIR and GIR),
// and runs in the interpreter with its atomic count exact. The GPU comparison is
// tests/gpu/RandomProgramGpuTest.cpp and tools/random_programs.cpp.
#include "RandomPrograms.h"
#include "TestSupport.h"

#include "compiler/ir/Parser.h"
#include "compiler/ir/Printer.h"

#include <gtest/gtest.h>

using namespace tritium;
using namespace tritium::testing::random;

namespace {

class RandomProgramTest : public tritium::testing::CompilerTest {
protected:
  void SetUp() override { setInterpret(true); }
  void TearDown() override { resetInterpret(); }
};

TEST_F(RandomProgramTest, CompileRoundTripAndInterpret) {
  uint32_t first = tritium::testing::freshSeed();
  for (uint32_t seed = first; seed < first + 60; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    CompiledKernel &k = compileSeed(seed);
    for (const std::string *text : {&k.artifacts().tir, &k.artifacts().gir}) {
      auto fn = ir::parseTIR(*text, "random.tir");
      EXPECT_EQ(ir::print(*fn), *text);
    }
    Outcome o = runSeed<interpreter::HostBuffer>(seed, nullptr);
    std::vector<float> x, y;
    int32_t n, flag;
    inputsFor(seed, x, y, n, flag);
    EXPECT_EQ(o.count, 2 * n); // two programs, each counting the active elements
  }
}

} // namespace
