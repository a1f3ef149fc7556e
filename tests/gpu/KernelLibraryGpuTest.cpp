// The kernel library on the GPU against double-precision references (tests/KernelLibraryCases.h):
// every kernel, dtype and direction, odd sizes, padded strides, misaligned bases, extreme rows,
// the cluster path of long rows, and the dropout mask against Triton's tl.rand.
#include "GpuTestSupport.h"
#include "KernelLibraryCases.h"

#include "runtime/Memory.h"

using namespace tritium;
using namespace tritium::testing::library;
using rt::DeviceBuffer;

namespace {

class KernelLibraryGpuTest : public tritium::testing::CompilerTest {
protected:
  rt::Stream &stream() {
    if (!stream_)
      stream_.emplace();
    return *stream_;
  }
  Sync sync = [this] { stream().sync(); };

private:
  std::optional<rt::Stream> stream_;
};

const Dtype kDtypes[] = {Dtype::fp32, Dtype::fp16, Dtype::bf16};

TEST_F(KernelLibraryGpuTest, VectorAdd) {
  SKIP_WITHOUT_GPU();
  for (Dtype d : kDtypes) {
    checkVectorAdd<DeviceBuffer>(stream().get(), sync, d, 1 << 20, 0);
    checkVectorAdd<DeviceBuffer>(stream().get(), sync, d, 1000003, size_t(kernels::dtypeBytes(d)));
  }
}

TEST_F(KernelLibraryGpuTest, DropoutMatchesTritonsMask) {
  SKIP_WITHOUT_GPU();
  for (Dtype d : kDtypes)
    checkDropout<DeviceBuffer>(stream().get(), sync, d, 1 << 20, 0.5, 1234);
  checkDropout<DeviceBuffer>(stream().get(), sync, Dtype::fp32, 1000003, 0.1, -7);
  checkDropout<DeviceBuffer>(stream().get(), sync, Dtype::bf16, 65537, 0.9, int64_t(1) << 40);
}

TEST_F(KernelLibraryGpuTest, LayerNorm) {
  SKIP_WITHOUT_GPU();
  for (Dtype d : kDtypes) {
    for (NormShape s : {NormShape{37, 1000, 1003}, NormShape{64, 512, 512},
                        NormShape{16, 4099, 4104}, NormShape{300, 128, 128}})
      checkNorm<DeviceBuffer>(stream().get(), sync, d, s, false, true,
                              size_t(kernels::dtypeBytes(d)));
  }
  checkNorm<DeviceBuffer>(stream().get(), sync, Dtype::fp32, {9, 33, 40}, false, false);
}

TEST_F(KernelLibraryGpuTest, RMSNorm) {
  SKIP_WITHOUT_GPU();
  for (Dtype d : kDtypes)
    for (NormShape s : {NormShape{37, 1000, 1003}, NormShape{64, 512, 512},
                        NormShape{16, 4099, 4104}, NormShape{300, 128, 128}})
      checkNorm<DeviceBuffer>(stream().get(), sync, d, s, true, false);
}

TEST_F(KernelLibraryGpuTest, NormsOfLongRowsUseClusters) {
  SKIP_WITHOUT_GPU();
  for (Dtype d : {Dtype::fp32, Dtype::bf16}) {
    checkNorm<DeviceBuffer>(stream().get(), sync, d, {8, 20000, 20000}, false, true);
    checkNorm<DeviceBuffer>(stream().get(), sync, d, {8, 65536, 65536}, false, true);
    checkNorm<DeviceBuffer>(stream().get(), sync, d, {5, 70001, 70008}, true, false);
  }
}

TEST_F(KernelLibraryGpuTest, NormGradientsByFiniteDifferences) {
  SKIP_WITHOUT_GPU();
  checkNormFiniteDifferences<DeviceBuffer>(stream().get(), sync, false);
  checkNormFiniteDifferences<DeviceBuffer>(stream().get(), sync, true);
}

TEST_F(KernelLibraryGpuTest, CrossEntropy) {
  SKIP_WITHOUT_GPU();
  for (Dtype d : kDtypes) {
    checkCrossEntropy<DeviceBuffer>(stream().get(), sync, d, {64, 32000, 32000, 0.0f, false});
    checkCrossEntropy<DeviceBuffer>(stream().get(), sync, d, {17, 50257, 50264, 0.1f, true});
  }
  checkCrossEntropy<DeviceBuffer>(stream().get(), sync, Dtype::bf16, {8, 256000, 256000, 0.0f, false});
}

} // namespace
