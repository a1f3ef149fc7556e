// The multi-context runtime without a GPU: the context registry with made-up handles, the
// per-context table under racing threads, the foreign-pointer decision for given driver
// answers, which architectures may run which code, and what the runtime says with no driver.
#include "runtime/ContextRegistry.h"
#include "runtime/Device.h"
#include "runtime/Driver.h"
#include "runtime/Module.h"
#include "runtime/PerContext.h"
#include "runtime/PointerCheck.h"
#include "TestSupport.h"
#include "tools/MixedWork.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

using namespace tritium::rt;

namespace {

CUcontext fakeHandle(uintptr_t n) { return reinterpret_cast<CUcontext>(n * 64); }

DeviceProps fakeDevice(int ordinal) {
  DeviceProps p;
  p.ordinal = ordinal;
  p.name = "fake GPU " + std::to_string(ordinal);
  p.ccMajor = ordinal == 0 ? 9 : 8;
  p.smCount = 100 + ordinal;
  return p;
}

struct CountingQuery {
  std::shared_ptr<std::atomic<int>> calls = std::make_shared<std::atomic<int>>(0);
  DeviceProps operator()(int ordinal) const {
    ++*calls;
    return fakeDevice(ordinal);
  }
};

} // namespace

TEST(ContextRegistryTest, OneEntryPerContextAndPropsPerDevice) {
  CountingQuery query;
  ContextRegistry r(query);
  Context &a = r.enter(fakeHandle(1), 11, 0);
  Context &b = r.enter(fakeHandle(2), 12, 0); // a second context on the same GPU
  EXPECT_EQ(&r.enter(fakeHandle(1), 11, 0), &a) << "the same context twice is one entry";
  EXPECT_NE(a.slot(), b.slot());
  EXPECT_EQ(&a.props(), &b.props()) << "properties are shared per device";
  EXPECT_EQ(*query.calls, 1) << "properties are queried once per device";
  EXPECT_EQ(a.ordinal(), 0);
  EXPECT_EQ(b.props().smCount, 100);
  EXPECT_FALSE(r.severalDevices()) << "two contexts on one GPU are one device";
  Context &c = r.enter(fakeHandle(3), 13, 1);
  EXPECT_TRUE(r.severalDevices());
  EXPECT_EQ(c.ordinal(), 1);
  EXPECT_EQ(c.props().arch(), "sm_80");
  EXPECT_EQ(*query.calls, 2);
  EXPECT_EQ(r.liveContexts(), 3u);
  EXPECT_EQ(r.find(fakeHandle(2)), &b);
  EXPECT_EQ(r.find(fakeHandle(9)), nullptr);
}

TEST(ContextRegistryTest, AReusedHandleIsANewContext) {
  ContextRegistry r(fakeDevice);
  Context &old = r.enter(fakeHandle(1), 100, 0);
  uint64_t epoch = r.epoch();
  // cuCtxDestroy, then cuCtxCreate handing out the same pointer: the id tells them apart.
  Context &fresh = r.enter(fakeHandle(1), 101, 0);
  EXPECT_NE(&fresh, &old);
  EXPECT_FALSE(old.alive()) << "its modules and buffers must not be freed in a stranger";
  EXPECT_TRUE(fresh.alive());
  EXPECT_NE(fresh.slot(), old.slot()) << "slots are never reused";
  EXPECT_GT(r.epoch(), epoch) << "threads' cached lookups must look again";
  EXPECT_EQ(r.find(fakeHandle(1)), &fresh);
}

TEST(ContextRegistryTest, RetireForgetsTheHandle) {
  ContextRegistry r(fakeDevice);
  Context &c = r.enter(fakeHandle(5), 1, 0);
  uint64_t epoch = r.epoch();
  r.retire(fakeHandle(5));
  EXPECT_FALSE(c.alive());
  EXPECT_EQ(r.find(fakeHandle(5)), nullptr);
  EXPECT_EQ(r.epoch(), epoch + 1);
  r.retire(fakeHandle(5)); // unknown now: nothing happens
  EXPECT_EQ(r.epoch(), epoch + 1);
  EXPECT_EQ(r.liveContexts(), 0u);
}

TEST(ContextRegistryTest, AFailedPropertyQueryRegistersNothing) {
  bool fail = true;
  ContextRegistry r([&](int ordinal) {
    if (fail)
      throw DriverError("cuDeviceGetAttribute failed");
    return fakeDevice(ordinal);
  });
  EXPECT_THROW(r.enter(fakeHandle(1), 1, 0), DriverError);
  EXPECT_EQ(r.liveContexts(), 0u);
  fail = false;
  EXPECT_EQ(r.enter(fakeHandle(1), 1, 0).ordinal(), 0) << "the next sight tries again";
}

TEST(ContextRegistryTest, ThreadsEnteringAtOnceGetOneEntryPerContext) {
  CountingQuery query;
  ContextRegistry r(query);
  std::vector<std::thread> threads;
  std::vector<Context *> seen(16 * 4);
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&, t] {
      for (int c = 0; c < 4; ++c)
        seen[t * 4 + c] = &r.enter(fakeHandle(c + 1), 1000 + c, c % 2);
    });
  for (auto &t : threads)
    t.join();
  for (int t = 0; t < 16; ++t)
    for (int c = 0; c < 4; ++c)
      EXPECT_EQ(seen[t * 4 + c], seen[c]);
  EXPECT_EQ(r.liveContexts(), 4u);
  EXPECT_EQ(*query.calls, 2);
}

TEST(PerContextTest, FindIsNullUntilInserted) {
  PerContext<int> table;
  EXPECT_EQ(table.find(0), nullptr);
  EXPECT_EQ(table.find(PerContext<int>::FastSlots + 3), nullptr);
  table.insert(2, std::make_unique<int>(7));
  table.insert(PerContext<int>::FastSlots + 3, std::make_unique<int>(9)); // past the fast slots
  ASSERT_NE(table.find(2), nullptr);
  EXPECT_EQ(*table.find(2), 7);
  EXPECT_EQ(*table.find(PerContext<int>::FastSlots + 3), 9);
  EXPECT_EQ(table.size(), 2u);
  table.erase(2);
  EXPECT_EQ(table.find(2), nullptr);
  EXPECT_EQ(table.size(), 1u);
}

TEST(PerContextTest, RacingLoadersMakeEachEntryOnce) {
  // The pattern CompiledKernel uses: find without a lock, and on a miss make the entry under
  // the owner's lock after looking again.
  PerContext<int> table;
  std::mutex ownerLock;
  std::atomic<int> made{0};
  constexpr uint32_t Slots = PerContext<int>::FastSlots + 4;
  auto get = [&](uint32_t slot) -> int & {
    if (int *v = table.find(slot))
      return *v;
    std::lock_guard<std::mutex> lock(ownerLock);
    if (int *v = table.find(slot))
      return *v;
    ++made;
    return table.insert(slot, std::make_unique<int>(int(slot) * 10));
  };
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        uint32_t slot = uint32_t((i * 7 + t) % Slots);
        if (get(slot) != int(slot) * 10)
          ++wrong;
      }
    });
  for (auto &t : threads)
    t.join();
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(made, int(Slots)) << "each context's entry is made exactly once";
}

TEST(PointerCheckTest, OwnDeviceManagedAndPinnedMemoryPass) {
  PointerFacts own{.known = true, .device = 0};
  EXPECT_EQ(pointerProblem(own, 0), "");
  PointerFacts managed{.known = true, .managed = true, .device = 1};
  EXPECT_EQ(pointerProblem(managed, 0), "");
  PointerFacts pinned{.known = true, .hostMemory = true, .device = 1};
  EXPECT_EQ(pointerProblem(pinned, 0), "");
}

TEST(PointerCheckTest, AnotherDevicesMemoryWithoutPeerAccessIsAnError) {
  PointerFacts noPeer{.known = true, .device = 1, .access = -1, .peerPossible = false};
  std::string why = pointerProblem(noPeer, 0);
  EXPECT_NE(why.find("lives on device 1 but the kernel runs on device 0"), std::string::npos)
      << why;
  EXPECT_NE(why.find("cannot reach it"), std::string::npos) << why;

  PointerFacts notEnabled{.known = true, .device = 1, .access = 0, .peerPossible = true};
  why = pointerProblem(notEnabled, 0);
  EXPECT_NE(why.find("lives on device 1"), std::string::npos) << why;
  EXPECT_NE(why.find("cuCtxEnablePeerAccess"), std::string::npos) << why;
}

TEST(PointerCheckTest, PeerAccessLetsAnotherDevicesMemoryThrough) {
  PointerFacts enabled{.known = true, .device = 1, .access = 1, .peerPossible = true};
  EXPECT_EQ(pointerProblem(enabled, 0), "");
  // The driver would not say whether access is on, but it is possible: the launch may try.
  PointerFacts unknown{.known = true, .device = 1, .access = -1, .peerPossible = true};
  EXPECT_EQ(pointerProblem(unknown, 0), "");
}

TEST(PointerCheckTest, AnAddressCudaDoesNotKnowIsAnError) {
  std::string why = pointerProblem(PointerFacts{}, 0);
  EXPECT_NE(why.find("is not an address CUDA knows"), std::string::npos) << why;
}

TEST(ArchTest, CodeRunsOnItsArchitectureAndNewerOnes) {
  DeviceProps h200 = fakeDevice(0); // sm_90
  h200.name = "NVIDIA H200";
  EXPECT_EQ(whyArchCannotRun("sm_90", h200), "");
  EXPECT_EQ(whyArchCannotRun("sm_80", h200), "") << "PTX is forward-compatible";
  EXPECT_EQ(whyArchCannotRun("sm_90a", h200), "");
  DeviceProps a100 = fakeDevice(1); // sm_80
  a100.name = "NVIDIA A100";
  std::string why = whyArchCannotRun("sm_90", a100);
  EXPECT_NE(why.find("was compiled for sm_90 but device 1 ('NVIDIA A100') is sm_80"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find(".arch = \"sm_80\""), std::string::npos) << why;
  DeviceProps b200 = fakeDevice(0);
  b200.ccMajor = 10;
  EXPECT_EQ(whyArchCannotRun("sm_90", b200), "");
  why = whyArchCannotRun("sm_90a", b200);
  EXPECT_NE(why.find("sm_90a code runs on sm_90 only"), std::string::npos) << why;
}

TEST(ContextTest, WithoutADriverNothingIsCurrentAndNothingIsChecked) {
  if (Driver::available())
    GTEST_SKIP() << "a GPU is present: this test is about machines without one";
  EXPECT_THROW(Context::current(), DriverError);
  EXPECT_THROW(useDevice(0), DriverError);
  EXPECT_FALSE(Context::makeCurrentQuietly());
  EXPECT_EQ(deviceCount(), 0);
  EXPECT_FALSE(severalDevicesInUse());
  EXPECT_EQ(moduleCounts().live, 0);
  { ContextScope scope(fakeHandle(1)); } // a no-op without a driver, never throws
  forgetContext(fakeHandle(1));          // unknown: harmless
}

TEST(MixedWorkTest, TheStressToolsOwnKernelCompiles) {
  // tools/MixedWork.h's scaled add is traced and compiled to PTX here, so that a mistake in it
  // shows without a GPU; the GPU tests and tools/stress_gpus.cpp run it.
  tritium::testing::ScopedCacheDir cache;
  tritium::CompiledKernel &k = tritium::tools::scaledAddKernel();
  EXPECT_NE(k.artifacts().ptx.find(".entry stress_scaled_add"), std::string::npos);
  // (Whether it is loaded depends on the GPU tests that ran before in this process.)
}
