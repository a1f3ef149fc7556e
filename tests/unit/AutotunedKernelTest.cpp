// Autotuning of a user's kernel (kernels/Autotuned.h) without a GPU: the choice by a stand-in
// timer through a tuner rooted in a temporary folder (recorded, then read back by a second
// kernel object), the key (dtypes, the named integers' values), prune_configs_by, heuristics,
// and the launch in interpret mode, which takes the first config left after pruning.
#include "TestSupport.h"

#include "frontend/Kernel.h"
#include "interpreter/Interpreter.h"
#include "interpreter/Memory.h"
#include "kernels/Autotuned.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

using namespace tritium;
using namespace tritium::dsl;
using namespace tritium::kernels;
using interpreter::HostBuffer;
using tritium::testing::ScopedTempDir;

namespace {

// out[i] = x[i] * SCALE over n elements, BLOCK at a time.
void scaled(Ptr x, Ptr out, Int n, int BLOCK, int SCALE) {
  auto i = program_id(0) * BLOCK + arange(0, BLOCK);
  store(out + i, load(x + i, i < n, 0) * SCALE, i < n);
}

class AutotunedKernelTest : public tritium::testing::CompilerTest {
protected:
  detail::FunctionKernel<Ptr, Ptr, Int, int, int> k =
      kernel("scaled", scaled, {"x", "out", "n", "BLOCK", "SCALE"});
  std::vector<Config> configs = {{{{"BLOCK", 64}}, {.numWarps = 2}},
                                 {{{"BLOCK", 128}}, {.numWarps = 4}},
                                 {{{"BLOCK", 256}}, {.numWarps = 8}}};
};

TEST_F(AutotunedKernelTest, TimesEachConfigOnceAndRecordsTheFastest) {
  ScopedTempDir dir;
  Autotuner tuner(dir.path(), "test-device");
  AutotunedKernel tuned(k, configs, {.key = {"n"}});
  HostBuffer b(4096);
  auto *p = static_cast<float *>(b.data());
  std::vector<size_t> timed;
  auto timer = [&](size_t c) {
    timed.push_back(c);
    return c == 1 ? 1.0 : 2.0; // BLOCK 128 is the fastest
  };
  EXPECT_EQ(tuned.choose({p, p, 1000}, {{"SCALE", 3}}, tuner, timer), 1u);
  EXPECT_EQ(timed, (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(tuned.choose({p, p, 1000}, {{"SCALE", 3}}, tuner, timer), 1u);
  EXPECT_EQ(timed.size(), 3u) << "the choice is remembered";
  EXPECT_EQ(tuned.bucket({p, p, 1000}, {{"SCALE", 3}}), "fp32a16-fp32a16-n1000-SCALE3");
  // Another n is another key; another kernel object reads the record instead of timing.
  EXPECT_EQ(tuned.choose({p, p, 2000}, {{"SCALE", 3}}, tuner, timer), 1u);
  EXPECT_EQ(timed.size(), 6u);
  AutotunedKernel again(k, configs, {.key = {"n"}});
  Autotuner reread(dir.path(), "test-device");
  EXPECT_EQ(again.choose({p, p, 1000}, {{"SCALE", 3}}, reread, timer), 1u);
  EXPECT_EQ(timed.size(), 6u) << "read from the record on disk";
}

TEST_F(AutotunedKernelTest, PruningAndHeuristics) {
  ScopedTempDir dir;
  Autotuner tuner(dir.path(), "test-device");
  AutotuneOptions o{
      .key = {"n"},
      .prune = [](std::vector<Config> all, const LaunchArguments &args) {
        std::vector<Config> kept; // tiles no larger than the problem
        for (const Config &c : all)
          if (c.constexprs[0].second <= args["n"].intValue())
            kept.push_back(c);
        return kept;
      },
      .heuristics = {{"SCALE", [](const LaunchArguments &args) {
                        return args["n"].intValue() % 2 == 0 ? 2 : 5;
                      }}}};
  AutotunedKernel tuned(k, configs, o);
  HostBuffer x(4096), out(4096);
  auto *xp = static_cast<float *>(x.data()), *op = static_cast<float *>(out.data());
  std::vector<size_t> timed;
  auto timer = [&](size_t c) {
    timed.push_back(c);
    return double(c);
  };
  EXPECT_EQ(tuned.choose({xp, op, 100}, {}, tuner, timer), 0u);
  EXPECT_EQ(timed, (std::vector<size_t>{})) << "one config left: nothing to time";
  EXPECT_EQ(tuned.choose({xp, op, 200}, {}, tuner, timer), 0u);
  EXPECT_EQ(timed, (std::vector<size_t>{0, 1}));
  // In the interpreter the first config left runs, with the heuristic's SCALE.
  setInterpret(true);
  std::vector<float> v(101);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = float(i);
  x.upload(v.data(), v.size() * 4);
  out.fill32(0x7fc00001u);
  int64_t n = 101;
  CompiledKernel &c = tuned.launch(
      [&](const Meta &m) { return Grid3{(n + m["BLOCK"] - 1) / m["BLOCK"]}; }, nullptr,
      {xp, op, n});
  EXPECT_EQ(c.numThreads(), 64) << "BLOCK 64 on 2 warps";
  std::vector<float> got(101);
  out.download(got.data(), got.size() * 4);
  EXPECT_EQ(got[100], 500.0f);
  EXPECT_EQ(got[7], 35.0f);
  resetInterpret();
}

TEST_F(AutotunedKernelTest, MistakesAreNamed) {
  auto message = [](const std::function<void()> &f) {
    try {
      f();
    } catch (const UserError &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { AutotunedKernel(k, {}, {}); }).find("autotune of 'scaled': no configs"),
            std::string::npos);
  EXPECT_NE(message([&] { AutotunedKernel(k, configs, {.key = {"BLOCK"}}); })
                .find("key 'BLOCK' is not an integer runtime parameter"),
            std::string::npos);
  EXPECT_NE(message([&] { AutotunedKernel(k, configs, {.resetToZero = {"outt"}}); })
                .find("reset_to_zero 'outt' is not a pointer parameter"),
            std::string::npos);
  EXPECT_NE(message([&] { AutotunedKernel(k, configs, {.restoreValue = {"n"}}); })
                .find("restore_value 'n' is not a pointer parameter"),
            std::string::npos);
  EXPECT_NE(message([&] {
              AutotunedKernel(k, configs,
                              {.heuristics = {{"x", [](const LaunchArguments &) { return 1; }}}});
            }).find("heuristic 'x' is not a compile-time parameter"),
            std::string::npos);
  ScopedTempDir dir;
  Autotuner tuner(dir.path(), "test-device");
  HostBuffer b(4096);
  auto *p = static_cast<float *>(b.data());
  AutotunedKernel foreign(k, configs, {.prune = [](std::vector<Config>, const LaunchArguments &) {
                                        return std::vector<Config>{{{{"BLOCK", 32}}, {}}};
                                      }});
  EXPECT_NE(message([&] { foreign.choose({p, p, 10}, {{"SCALE", 1}}, tuner, [](size_t) { return 1.0; }); })
                .find("prune_configs_by returned BLOCK=32"),
            std::string::npos);
  setInterpret(true);
  AutotunedKernel tuned(k, configs, {});
  EXPECT_NE(message([&] {
              tuned.launch([](const Meta &m) { return Grid3{m["TILE"]}; }, nullptr, {p, p, 10},
                           {{"SCALE", 1}});
            }).find("no compile-time value 'TILE'"),
            std::string::npos);
  EXPECT_NE(message([&] {
              tuned.launch([](const Meta &) { return Grid3{1}; }, nullptr, {p, p, 10},
                           {{"BLOCK", 1}, {"SCALE", 1}});
            }).find("'BLOCK' from the launch is also set by a config or a heuristic"),
            std::string::npos);
  resetInterpret();
}

} // namespace
