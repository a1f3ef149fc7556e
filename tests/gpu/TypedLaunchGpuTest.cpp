// Typed launches on the GPU (tests/TypedLaunchCases.h): the signature inferred from the
// arguments, one compile per specialization, results against a reference.
#include "GpuTestSupport.h"
#include "TypedLaunchCases.h"

#include "runtime/Memory.h"

using namespace tritium;
using namespace tritium::testing::typedlaunch;
using rt::DeviceBuffer;

namespace {

class TypedLaunchGpuTest : public tritium::testing::GpuStreamTest {};

TEST_F(TypedLaunchGpuTest, RunsAndCompilesEachSpecializationOnce) {
  SKIP_WITHOUT_GPU();
  AxpyKernel k = axpyKernel();
  for (int64_t n : {1000, 1 << 20})
    for (bool bf16 : {false, true})
      checkAxpy<DeviceBuffer>(k, stream().get(), sync, n, bf16);
}

} // namespace
