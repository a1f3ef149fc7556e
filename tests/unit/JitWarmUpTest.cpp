// The JIT warm-up never throws and never leaves a caller waiting on nothing: without a driver it
// starts nothing; with one it finishes, and a real kernel still compiles and loads after it.
#include "runtime/Device.h"
#include "runtime/Driver.h"
#include "runtime/JitWarmUp.h"
#include "runtime/Module.h"

#include <gtest/gtest.h>

#include <chrono>

using namespace tritium::rt;

TEST(JitWarmUpTest, FinishesOrDoesNothing) {
  auto start = std::chrono::steady_clock::now();
  startJitWarmUp(81);
  startJitWarmUp(81); // started once per process: the second call does nothing
  waitForJitWarmUp();
  waitForJitWarmUp(); // and waiting again returns at once
  if (!Driver::available()) {
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1))
        << "without a driver the warm-up must not start";
    return;
  }
  std::string ptx = ".version 8.1\n.target " + Context::current().props().arch() +
                    "\n.address_size 64\n.visible .entry after_warm_up(.param .u64 p)\n{\n"
                    "  .reg .b64 %rd<2>;\n  ld.param.u64 %rd1, [p];\n  ret;\n}\n";
  std::string cubin;
  LoadedKernel k = LoadedKernel::fromPTX(ptx, "after_warm_up", &cubin);
  EXPECT_NE(k.function(), nullptr);
  EXPECT_FALSE(cubin.empty());
}
