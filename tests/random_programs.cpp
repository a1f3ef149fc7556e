// The random-program tester for the GPU machine: compiles --count seeds' programs
// (tests/RandomPrograms.h) on --threads threads, runs each in the interpreter and on the GPU,
// and compares them. Prints the seed of every mismatch and a last line
// "random programs: N passed, M failed"; exits 1 on any mismatch.
//
//   random_programs --count=10000 --start=1 --threads=16
#include "RandomPrograms.h"

#include "compiler/support/Error.h"
#include "runtime/Driver.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <thread>

using namespace tritium;
using namespace tritium::testing::random;

int main(int argc, char **argv) {
  uint32_t start = 1, count = 1000;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  for (int i = 1; i < argc; ++i) {
    auto value = [&](const char *name) -> const char * {
      size_t n = std::strlen(name);
      return std::strncmp(argv[i], name, n) == 0 && argv[i][n] == '=' ? argv[i] + n + 1 : nullptr;
    };
    if (const char *v = value("--count"))
      count = uint32_t(std::strtoul(v, nullptr, 10));
    else if (const char *v = value("--start"))
      start = uint32_t(std::strtoul(v, nullptr, 10));
    else if (const char *v = value("--threads"))
      threads = unsigned(std::strtoul(v, nullptr, 10));
    else {
      std::fprintf(stderr, "usage: random_programs [--count=N] [--start=SEED] [--threads=T]\n");
      return 2;
    }
  }
  std::string why;
  bool gpu = rt::Driver::available(&why);
  if (!gpu)
    std::printf("no GPU (%s): compiling and interpreting only\n", why.c_str());
  auto t0 = std::chrono::steady_clock::now();
  // Runs `work(i)` for i in [0, count) on `threads` threads.
  auto parallel = [&](const std::function<void(uint32_t)> &work) {
    std::atomic<uint32_t> next{0};
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&] {
        for (uint32_t i = next++; i < count; i = next++)
          work(i);
      });
    for (auto &t : pool)
      t.join();
  };
  std::vector<std::string> errors(count);
  auto guarded = [&](uint32_t i, const std::function<void()> &f) {
    if (!errors[i].empty())
      return;
    try {
      f();
    } catch (const std::exception &e) {
      errors[i] = e.what();
    }
  };
  // 1. Compile every seed, several at a time (each seed is its own specialization).
  parallel([&](uint32_t i) { guarded(i, [&] { compileSeed(start + i); }); });
  auto t1 = std::chrono::steady_clock::now();
  // 2. Every seed in the interpreter, then on the GPU, several at a time.
  std::vector<Outcome> ref(count), got(count);
  setInterpret(true);
  parallel([&](uint32_t i) {
    guarded(i, [&] { ref[i] = runSeed<interpreter::HostBuffer>(start + i, nullptr); });
  });
  resetInterpret();
  auto t2a = std::chrono::steady_clock::now();
  if (gpu) {
    setInterpret(false);
    parallel([&](uint32_t i) {
      guarded(i, [&] {
        thread_local rt::Stream stream;
        got[i] = runSeed<rt::DeviceBuffer>(start + i, stream.get());
      });
    });
    resetInterpret();
  }
  uint32_t passed = 0, failed = 0;
  for (uint32_t i = 0; i < count; ++i) {
    std::string diff = errors[i].empty() && gpu ? compareOutcomes(got[i], ref[i]) : errors[i];
    if (diff.empty()) {
      ++passed;
    } else {
      ++failed;
      std::printf("seed %u: %s\n", start + i, diff.c_str());
    }
  }
  std::printf("interpreter %.1f s\n",
              std::chrono::duration<double>(t2a - t1).count());
  auto t2 = std::chrono::steady_clock::now();
  auto s = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  std::printf("compile %.1f s on %u threads, run %.1f s (interpreter and GPU)\n", s(t0, t1),
              threads, s(t1, t2));
  std::printf("random programs: %u passed, %u failed\n", passed, failed);
  return failed ? 1 : 0;
}
