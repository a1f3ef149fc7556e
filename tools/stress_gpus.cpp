// The multi-GPU stress test: 8 host threads per GPU (with one GPU, per each of two contexts on
// it) launch a mix of kernels (softmax, vector add, RMSNorm from the library, and a scaled add
// through CompiledKernel::launch) on their own streams, check every result at the end of each
// round, and the device memory (cuMemGetInfo) and the modules tritium holds
// (rt::moduleCounts) must stay flat after the warm-up round. Prints one table row per round;
// exits 1 on any failure or leak, 2 on a usage error.
#include "CommandLine.h"
#include "MixedWork.h"

#include "kernels/Autotuner.h"
#include "runtime/Device.h"
#include "runtime/Driver.h"
#include "runtime/Module.h"

#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace tritium;

namespace {

const char *Tool = "stress_gpus";
const char *Usage = R"(usage: stress_gpus [--threads=8] [--launches=1000] [--rounds=3] [--autotune]
  8 threads per GPU (two contexts on one GPU when the machine has one), each launching
  --launches kernels of a mix (softmax, vector add, RMSNorm, scaled add) per round on its own
  stream, results checked at the end of every round. Round 0 is the warm-up (compiles, loads,
  tunes with --autotune); device memory and loaded modules must not grow after it.
)";

struct Options {
  int threads = 8;
  int launches = 1000;
  int rounds = 3;
  bool autotune = false;
};

Options parse(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char *flag) -> std::optional<std::string> {
      std::string prefix = std::string(flag) + "=";
      if (a.rfind(prefix, 0) == 0)
        return a.substr(prefix.size());
      return std::nullopt;
    };
    if (a == "--help" || a == "-h") {
      std::fputs(Usage, stdout);
      std::exit(0);
    } else if (auto v = value("--threads")) {
      o.threads = tools::parseInt32(Tool, "--threads", *v);
    } else if (auto v = value("--launches")) {
      o.launches = tools::parseInt32(Tool, "--launches", *v);
    } else if (auto v = value("--rounds")) {
      o.rounds = tools::parseInt32(Tool, "--rounds", *v);
    } else if (a == "--autotune") {
      o.autotune = true;
    } else {
      tools::usageError(Tool, "unknown argument '" + a + "'");
    }
  }
  if (o.threads < 1 || o.launches < 4 || o.rounds < 2)
    tools::usageError(Tool, "--threads >= 1, --launches >= 4 and --rounds >= 2");
  return o;
}

// Where a group of threads runs: a GPU's primary context, or a context created on GPU 0.
struct Lane {
  std::string name;
  CUcontext context = nullptr;
  bool created = false;
};

size_t freeBytes(CUcontext context) {
  TRITIUM_CU(cuCtxSetCurrent(context));
  size_t free = 0, total = 0;
  TRITIUM_CU(cuMemGetInfo(&free, &total));
  return free;
}

} // namespace

int main(int argc, char **argv) {
  Options o = parse(argc, argv);
  std::string why;
  if (!rt::Driver::available(&why)) {
    std::printf("stress_gpus: skipped, no GPU: %s\n", why.c_str());
    return 0;
  }
  kernels::setAutotune(o.autotune);

  std::vector<Lane> lanes;
  int gpus = rt::deviceCount();
  for (int g = 0; g < gpus; ++g)
    lanes.push_back({"GPU " + std::to_string(g), rt::useDevice(g).handle(), false});
  if (gpus == 1) {
    CUdevice device = 0;
    CUcontext created = nullptr;
    TRITIUM_CU(cuDeviceGet(&device, 0));
    CUctxCreateParams params{}; // no affinity, no CIG: a plain context
    TRITIUM_CU(cuCtxCreate(&created, &params, 0, device));
    lanes.push_back({"GPU 0, 2nd ctx", created, true});
    lanes[0].name = "GPU 0, primary";
  }
  std::printf("%s: %d thread(s) x %zu lane(s) (%d GPU%s) x %d launches per round, %d rounds\n",
              Tool, o.threads, lanes.size(), gpus, gpus == 1 ? "" : "s", o.launches, o.rounds);
  std::printf("%-6s %10s %8s %12s %8s %8s %9s", "round", "launches", "seconds", "launches/s",
              "modules", "JITs", "failures");
  for (const Lane &l : lanes)
    std::printf("  %18s", ("free MiB " + l.name).c_str());
  std::printf("\n");

  const int workers = o.threads * int(lanes.size());
  std::vector<size_t> baseline;
  int64_t baselineModules = 0;
  bool ok = true;
  for (int round = 0; round < o.rounds; ++round) {
    std::mutex problemsMutex;
    std::vector<std::string> problems;
    std::barrier start(workers);
    auto begin = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int w = 0; w < workers; ++w)
      threads.emplace_back([&, w] {
        const Lane &lane = lanes[size_t(w) % lanes.size()];
        try {
          TRITIUM_CU(cuCtxSetCurrent(lane.context));
          // Fresh inputs every round, of a size of this thread's own.
          uint32_t seed = uint32_t(round * 1000 + w) ^ 0x5eedu;
          tools::MixedWork work(seed, 16 + w % 48, 500 + 61 * (w % 16), (1 << 14) + 17 * w);
          rt::Stream stream;
          start.arrive_and_wait();
          for (int i = 0; i < o.launches; ++i)
            work.launch(i + w, stream.get());
          stream.sync();
          if (std::string p = work.check(); !p.empty()) {
            std::lock_guard<std::mutex> lock(problemsMutex);
            problems.push_back(lane.name + ", thread " + std::to_string(w) + ":\n" + p);
          }
        } catch (const std::exception &e) {
          std::lock_guard<std::mutex> lock(problemsMutex);
          problems.push_back(lane.name + ", thread " + std::to_string(w) + ": " + e.what());
        }
      });
    for (auto &t : threads)
      t.join();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    rt::ModuleCounts modules = rt::moduleCounts();
    std::vector<size_t> free;
    for (const Lane &l : lanes)
      free.push_back(freeBytes(l.context));
    int64_t launches = int64_t(workers) * o.launches;
    std::printf("%-6s %10lld %8.2f %12.0f %8lld %8lld %9zu", round == 0 ? "warmup" : std::to_string(round).c_str(),
                (long long)launches, seconds, double(launches) / seconds, (long long)modules.live,
                (long long)modules.fromPTX, problems.size());
    for (size_t f : free)
      std::printf("  %18.1f", double(f) / (1 << 20));
    std::printf("\n");
    for (const std::string &p : problems)
      std::fprintf(stderr, "FAILED: %s\n", p.c_str());
    ok = ok && problems.empty();
    if (round == 0) {
      baseline = free;
      baselineModules = modules.live;
      continue;
    }
    if (modules.live != baselineModules) {
      std::fprintf(stderr, "LEAK: %lld modules loaded after round %d, %lld after the warm-up\n",
                   (long long)modules.live, round, (long long)baselineModules);
      ok = false;
    }
    for (size_t l = 0; l < lanes.size(); ++l) {
      // The driver may round allocations; anything beyond 4 MiB that does not come back is a leak.
      if (free[l] + (4u << 20) < baseline[l]) {
        std::fprintf(stderr, "LEAK: %s has %.1f MiB less free memory than after the warm-up\n",
                     lanes[l].name.c_str(), double(baseline[l] - free[l]) / (1 << 20));
        ok = false;
      }
    }
  }
  for (const Lane &l : lanes)
    if (l.created) {
      rt::forgetContext(l.context);
      rt::Driver::get().cuCtxDestroy(l.context);
    }
  std::printf("%s: %s\n", Tool, ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
