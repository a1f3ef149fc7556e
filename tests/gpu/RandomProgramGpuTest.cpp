// Random programs (tests/RandomPrograms.h) on the GPU against the interpreter: a few hundred
// fresh seeds per run (tools/random_programs.cpp runs ten thousand on the GPU machine).
#include "RandomPrograms.h"
#include "GpuTestSupport.h"
#include "TestSupport.h"

#include <gtest/gtest.h>

using namespace tritium;
using namespace tritium::testing::random;

namespace {

class RandomProgramGpuTest : public tritium::testing::CompilerTest {};

TEST_F(RandomProgramGpuTest, GpuMatchesInterpreter) {
  SKIP_WITHOUT_GPU();
  uint32_t first = tritium::testing::freshSeed();
  rt::Stream stream;
  int failures = 0;
  for (uint32_t seed = first; seed < first + 300 && failures < 5; ++seed) {
    setInterpret(true);
    Outcome ref = runSeed<interpreter::HostBuffer>(seed, nullptr);
    resetInterpret();
    setInterpret(false);
    Outcome gpu = runSeed<rt::DeviceBuffer>(seed, stream.get());
    resetInterpret();
    std::string diff = compareOutcomes(gpu, ref);
    if (!diff.empty()) {
      ++failures;
      ADD_FAILURE() << "seed " << seed << ": " << diff;
    }
  }
}

} // namespace
