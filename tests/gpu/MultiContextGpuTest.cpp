// One CompiledKernel launched in several CUDA contexts and from several host threads: two
// contexts on one GPU (the module loaded once per context, the PTX JIT-ed once), threads racing
// to load and launch on their own streams, one thread per GPU when there are two, and a pointer
// of another device refused by name. Fresh random inputs, poisoned outputs, double references
// (tools/MixedWork.h, tests/SoftmaxProblem.h). Each test skips, saying why, without the GPUs it
// needs.
#include "GpuTestSupport.h"
#include "SoftmaxProblem.h"
#include "TestSupport.h"

#include "compiler/support/Error.h"
#include "kernels/Autotuner.h"
#include "kernels/Softmax.h"
#include "runtime/Device.h"
#include "runtime/Driver.h"
#include "runtime/Memory.h"
#include "runtime/Module.h"
#include "runtime/PointerCheck.h"
#include "tools/MixedWork.h"

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <thread>
#include <vector>

using namespace tritium;
using tritium::testing::freshSeed;

namespace {

// A context of our own on device `ordinal`, destroyed (after telling tritium) at scope end.
// Creating it leaves the caller's current context as it was.
class OwnedContext {
public:
  explicit OwnedContext(int ordinal) {
    rt::Driver &d = rt::Driver::get();
    CUdevice device = 0;
    TRITIUM_CU(cuDeviceGet(&device, ordinal));
    CUctxCreateParams params{}; // no affinity, no CIG: a plain context
    TRITIUM_CU(cuCtxCreate(&context_, &params, 0, device)); // pushed onto this thread
    CUcontext popped = nullptr;
    TRITIUM_CU(cuCtxPopCurrent(&popped));
    (void)d;
  }
  ~OwnedContext() {
    rt::forgetContext(context_);
    rt::Driver::get().cuCtxDestroy(context_);
  }
  CUcontext get() const { return context_; }
  void makeCurrent() const { TRITIUM_CU(cuCtxSetCurrent(context_)); }

private:
  CUcontext context_ = nullptr;
};

// A kernel of this test alone (not shared with other tests through a static), so that its
// loads can be counted from zero.
void copyScaled(dsl::Ptr out, dsl::Ptr in, dsl::Int n, int BLOCK) {
  auto offs = dsl::program_id(0) * BLOCK + dsl::arange(0, BLOCK);
  auto mask = offs < n;
  dsl::store(out + offs, dsl::load(in + offs, mask, 0.0) * 3.0 + 1.0, mask);
}

// Launches `k` on fresh data in the current context and checks every element.
void runCopyScaled(CompiledKernel &k, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
  for (float &v : x)
    v = normal(rng);
  rt::DeviceBuffer in(x.size() * 4), out(x.size() * 4);
  in.upload(x.data(), x.size() * 4);
  out.fill32(tools::MixedWork::Poison);
  rt::Stream stream;
  k.launch((n + 255) / 256, stream.get(), {out, in, int32_t(n)});
  stream.sync();
  out.download(y.data(), y.size() * 4);
  size_t bad = 0;
  for (size_t i = 0; i < y.size(); ++i)
    if (!(std::fabs(double(y[i]) - (double(x[i]) * 3.0 + 1.0)) <= 1e-5 * (1 + std::fabs(x[i]))))
      ++bad;
  EXPECT_EQ(bad, 0u) << "of " << n << " elements on device " << rt::Context::current().ordinal()
                     << " (seed " << seed << ")";
}

class MultiContextGpuTest : public tritium::testing::CompilerTest {
protected:
  void SetUp() override { kernels::setAutotune(false); } // the planners' choices: quick
  void TearDown() override { kernels::resetAutotune(); }
};

} // namespace

TEST_F(MultiContextGpuTest, TwoContextsOnOneGpuLoadOncePerContextAndJitOnce) {
  SKIP_WITHOUT_GPU();
  auto kernel = tritium::kernel("two_contexts_copy", copyScaled, {"out", "in", "n", "BLOCK"});
  CompiledKernel &k = kernel.compile({.signature = {"*fp32", "*fp32", "i32"}, .constexprs = {256}});
  rt::ModuleCounts before = rt::moduleCounts();

  rt::Context &primary = rt::useDevice(0);
  runCopyScaled(k, 100003, freshSeed());
  EXPECT_EQ(k.loadedContexts(), 1u);
  EXPECT_EQ(rt::moduleCounts().fromPTX - before.fromPTX, 1) << "the first load JITs the PTX";

  {
    OwnedContext second(0);
    second.makeCurrent();
    rt::Context &other = rt::Context::current();
    EXPECT_NE(&other, &primary);
    EXPECT_EQ(other.handle(), second.get()) << "tritium must use the caller's current context";
    EXPECT_EQ(other.ordinal(), 0);
    EXPECT_NE(other.slot(), primary.slot());
    EXPECT_EQ(&other.props(), &primary.props()) << "one device, one set of properties";
    runCopyScaled(k, 77777, freshSeed());
    EXPECT_EQ(k.loadedContexts(), 2u);
    rt::ModuleCounts after = rt::moduleCounts();
    EXPECT_EQ(after.fromPTX - before.fromPTX, 1) << "the second context must reuse the cubin";
    EXPECT_EQ(after.fromCubin - before.fromCubin, 1);
    EXPECT_EQ(after.live - before.live, 2);

    // Back and forth: nothing loads again.
    rt::useDevice(0);
    runCopyScaled(k, 4097, freshSeed());
    second.makeCurrent();
    runCopyScaled(k, 4099, freshSeed());
    EXPECT_EQ(rt::moduleCounts().fromCubin - before.fromCubin, 1);
    EXPECT_EQ(rt::moduleCounts().fromPTX - before.fromPTX, 1);
    EXPECT_EQ(rt::Context::current().handle(), second.get())
        << "launching must not change the current context";
    rt::useDevice(0);
  } // the second context is forgotten and destroyed: its module must not be unloaded later
  runCopyScaled(k, 1000, freshSeed());
  EXPECT_EQ(&rt::Context::current(), &primary);
}

TEST_F(MultiContextGpuTest, ThreadsRacingInTwoContextsLoadOncePerContext) {
  SKIP_WITHOUT_GPU();
  auto kernel = tritium::kernel("racing_copy", copyScaled, {"out", "in", "n", "BLOCK"});
  CompiledKernel &k = kernel.compile({.signature = {"*fp32", "*fp32", "i32"}, .constexprs = {256}});
  OwnedContext second(0);
  CUcontext primary = rt::useDevice(0).handle();
  rt::ModuleCounts before = rt::moduleCounts();
  constexpr int Threads = 8;
  std::barrier start(Threads);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  uint32_t seed = freshSeed();
  for (int t = 0; t < Threads; ++t)
    threads.emplace_back([&, t] {
      try {
        TRITIUM_CU(cuCtxSetCurrent(t % 2 ? second.get() : primary));
        start.arrive_and_wait(); // every thread's first launch at once
        for (int i = 0; i < 5; ++i)
          runCopyScaled(k, 65536 + t * 1000 + i, seed + uint32_t(t * 10 + i));
      } catch (const std::exception &e) {
        ++failures;
        ADD_FAILURE() << "thread " << t << ": " << e.what();
      }
    });
  for (auto &t : threads)
    t.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(k.loadedContexts(), 2u);
  rt::ModuleCounts after = rt::moduleCounts();
  EXPECT_EQ(after.fromPTX - before.fromPTX, 1) << "one JIT, however many threads race";
  EXPECT_EQ(after.fromCubin - before.fromCubin, 1) << "one cubin load for the other context";
}

TEST_F(MultiContextGpuTest, ThreadsLaunchMixedKernelsOnTheirOwnStreams) {
  SKIP_WITHOUT_GPU();
  constexpr int Threads = 8, Launches = 200;
  std::vector<std::thread> threads;
  std::vector<std::string> problems(Threads);
  uint32_t seed = freshSeed();
  for (int t = 0; t < Threads; ++t)
    threads.emplace_back([&, t] {
      try {
        rt::useDevice(0);
        tools::MixedWork work(seed + uint32_t(t), 32 + t, 700 + 37 * t, (1 << 15) + 3 * t);
        rt::Stream stream;
        for (int i = 0; i < Launches; ++i)
          work.launch(i + t, stream.get()); // threads start at different kernels
        stream.sync();
        problems[size_t(t)] = work.check();
      } catch (const std::exception &e) {
        problems[size_t(t)] = e.what();
      }
    });
  for (auto &t : threads)
    t.join();
  for (int t = 0; t < Threads; ++t)
    EXPECT_EQ(problems[size_t(t)], "") << "thread " << t;
}

TEST_F(MultiContextGpuTest, OneThreadPerGpuOnItsOwnStream) {
  SKIP_WITHOUT_GPU();
  int gpus = rt::deviceCount();
  if (gpus < 2)
    GTEST_SKIP() << "needs two GPUs, this machine has " << gpus
                 << " (TwoContextsOnOneGpu* covers the per-context path)";
  auto kernel = tritium::kernel("per_gpu_copy", copyScaled, {"out", "in", "n", "BLOCK"});
  CompiledKernel &k = kernel.compile({.signature = {"*fp32", "*fp32", "i32"}, .constexprs = {256}});
  uint32_t seed = freshSeed();
  {
    // The mix's kernels JIT-ed on device 0 first, so that the count below is copyScaled's alone
    // (an earlier test may or may not have loaded kernels of these shapes).
    rt::useDevice(0);
    tools::MixedWork warm(seed + 50);
    rt::Stream stream;
    for (int i = 0; i < tools::MixedWork::Kinds; ++i)
      warm.launch(i, stream.get());
    stream.sync();
    ASSERT_EQ(warm.check(), "");
  }
  rt::ModuleCounts before = rt::moduleCounts();
  std::vector<std::thread> threads;
  std::vector<std::string> problems(static_cast<size_t>(gpus));
  std::barrier start(gpus);
  for (int g = 0; g < gpus; ++g)
    threads.emplace_back([&, g] {
      try {
        rt::Context &c = rt::useDevice(g);
        start.arrive_and_wait(); // every GPU's first load of copyScaled at once
        if (c.ordinal() != g)
          throw std::runtime_error("useDevice(" + std::to_string(g) + ") gave device " +
                                   std::to_string(c.ordinal()));
        runCopyScaled(k, 1 << 20, seed + uint32_t(g));
        tools::MixedWork work(seed + 100 + uint32_t(g));
        rt::Stream stream;
        for (int i = 0; i < 100; ++i)
          work.launch(i, stream.get());
        stream.sync();
        problems[size_t(g)] = work.check();
      } catch (const std::exception &e) {
        problems[size_t(g)] = e.what();
      }
    });
  for (auto &t : threads)
    t.join();
  for (int g = 0; g < gpus; ++g)
    EXPECT_EQ(problems[size_t(g)], "") << "GPU " << g;
  EXPECT_TRUE(rt::severalDevicesInUse());
  EXPECT_EQ(k.loadedContexts(), size_t(gpus));
  rt::ModuleCounts after = rt::moduleCounts();
  EXPECT_EQ(after.fromPTX - before.fromPTX, 1)
      << "GPUs of one architecture share the first JIT's cubin";
  EXPECT_GE(after.fromCubin - before.fromCubin, (gpus - 1) * (tools::MixedWork::Kinds + 1))
      << "the other GPUs load every kernel from the cubin device 0's JIT made";
}

TEST_F(MultiContextGpuTest, APointerOfAnotherGpuIsRefusedByName) {
  SKIP_WITHOUT_GPU();
  int gpus = rt::deviceCount();
  if (gpus < 2)
    GTEST_SKIP() << "needs two GPUs, this machine has " << gpus;
  auto kernel = tritium::kernel("foreign_copy", copyScaled, {"out", "in", "n", "BLOCK"});
  CompiledKernel &k = kernel.compile({.signature = {"*fp32", "*fp32", "i32"}, .constexprs = {256}});
  rt::useDevice(1);
  rt::DeviceBuffer onOne(4096 * 4);
  rt::Context &zero = rt::useDevice(0);
  rt::DeviceBuffer onZero(4096 * 4);
  rt::Stream stream;
  ASSERT_TRUE(rt::severalDevicesInUse());
  // Peer access may have been enabled by an earlier test; start from "off".
  rt::Driver &d = rt::Driver::get();
  CUcontext oneCtx = rt::useDevice(1).handle();
  rt::useDevice(0);
  d.cuCtxDisablePeerAccess(oneCtx); // CUDA_ERROR_PEER_ACCESS_NOT_ENABLED when it was off
  try {
    k.launch(16, stream.get(), {onZero, onOne, int32_t(4096)});
    stream.sync();
    rt::PointerFacts f = rt::queryPointer(onOne.ptr(), 0);
    FAIL() << "a pointer of device 1 passed to a launch on device 0 without peer access (the "
           << "driver said: device " << f.device << ", access " << f.access << ", peer possible "
           << f.peerPossible << ")";
  } catch (const UserError &e) {
    std::string what = e.what();
    EXPECT_NE(what.find("argument 1 ('in')"), std::string::npos) << what;
    EXPECT_NE(what.find("device 1"), std::string::npos) << what;
    EXPECT_NE(what.find("device 0"), std::string::npos) << what;
  }
  // A host pointer is no device memory either.
  std::vector<float> host(4096);
  try {
    k.launch(16, stream.get(), {onZero, KernelArg::pointer(CUdeviceptr(host.data())), 4096});
    FAIL() << "a host pointer passed as a device pointer";
  } catch (const UserError &e) {
    EXPECT_NE(std::string(e.what()).find("argument 1 ('in') is not an address CUDA knows"),
              std::string::npos)
        << e.what();
  }
  // With peer access on, the same launch runs and reads device 1's memory.
  int can = 0;
  TRITIUM_CU(cuDeviceCanAccessPeer(&can, zero.device(), rt::useDevice(1).device()));
  rt::useDevice(0);
  if (!can)
    return;
  TRITIUM_CU(cuCtxEnablePeerAccess(oneCtx, 0));
  std::vector<float> x(4096, 2.0f), y(4096);
  onOne.upload(x.data(), x.size() * 4);
  k.launch(16, stream.get(), {onZero, onOne, int32_t(4096)});
  stream.sync();
  onZero.download(y.data(), y.size() * 4);
  EXPECT_EQ(y[0], 7.0f);
  EXPECT_EQ(y[4095], 7.0f);
  d.cuCtxDisablePeerAccess(oneCtx);
}

TEST_F(MultiContextGpuTest, CodeForANewerArchitectureIsRefusedClearly) {
  SKIP_WITHOUT_GPU();
  rt::Context &c = rt::useDevice(0);
  if (c.props().ccMajor * 10 + c.props().ccMinor >= 90)
    GTEST_SKIP() << "every architecture tritium compiles for runs on this " << c.props().arch()
                 << " GPU";
  auto kernel = tritium::kernel("newer_arch_copy", copyScaled, {"out", "in", "n", "BLOCK"});
  CompiledKernel &k = kernel.compile(
      {.signature = {"*fp32", "*fp32", "i32"}, .constexprs = {256}, .arch = "sm_90"});
  EXPECT_THROW(k.load(), UserError);
}
