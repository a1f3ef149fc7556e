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
  // 1. Compile every seed, several at a time (each seed is its own specialization).
  std::atomic<uint32_t> next{0}, compileFailures{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (uint32_t i = next++; i < count; i = next++) {
        try {
          compileSeed(start + i);
        } catch (const std::exception &e) {
          ++compileFailures;
          std::printf("seed %u: compile failed: %s\n", start + i, e.what());
        }
      }
    });
  for (auto &t : pool)
    t.join();
  auto t1 = std::chrono::steady_clock::now();
  // 2. Interpreter, then GPU, seed by seed.
  uint32_t passed = 0, failed = compileFailures;
  std::optional<rt::Stream> stream;
  if (gpu)
    stream.emplace();
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t seed = start + i;
    try {
      setInterpret(true);
      Outcome ref = runSeed<interpreter::HostBuffer>(seed, nullptr);
      resetInterpret();
      if (gpu) {
        setInterpret(false);
        Outcome got = runSeed<rt::DeviceBuffer>(seed, stream->get());
        resetInterpret();
        std::string diff = compareOutcomes(got, ref);
        if (!diff.empty()) {
          ++failed;
          std::printf("seed %u: GPU and interpreter differ: %s\n", seed, diff.c_str());
          continue;
        }
      }
      ++passed;
    } catch (const std::exception &e) {
      resetInterpret();
      ++failed;
      std::printf("seed %u: %s\n", seed, e.what());
    }
    if ((i + 1) % 1000 == 0) {
      std::printf("%u of %u programs run\n", i + 1, count);
      std::fflush(stdout);
    }
  }
  auto t2 = std::chrono::steady_clock::now();
  auto s = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  std::printf("compile %.1f s on %u threads, run %.1f s\n", s(t0, t1), threads, s(t1, t2));
  std::printf("random programs: %u passed, %u failed\n", passed, failed);
  return failed ? 1 : 0;
}
