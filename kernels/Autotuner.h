// The autotuner: on the first call of a kernel for a (device, shape bucket), it times each
// candidate launch plan on the caller's own arguments and keeps the fastest, in memory and on
// disk beside the compiled kernels (<cache root>/autotune/<tritium version>/<device>/<kernel>/
// <bucket>.json), so that another process on the same device does not tune again.
//
// A record on disk names its winner by the plan's fields, and is used only when those fields
// are one of the candidates the library makes now: an old, foreign or edited record can choose
// among valid plans, never invent one. Records are written through a temporary file and a
// rename, as cache entries are, so processes tuning at once each leave a whole record (the last
// rename wins; both chose a valid plan).
//
// Tuning is on by default and off with TRITIUM_AUTOTUNE=0 (or setAutotune(false)); then, in
// interpret mode, during a CUDA graph capture and where a launch cannot run twice on the same
// arguments (an output overlapping an input), the planner's choice is used.
#pragma once

#include <cuda.h>

#include <compare>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace tritium::kernels {

// A plan as named integers ("block" 4096, "warps" 8, ...): how a winner is written and found.
using PlanFields = std::vector<std::pair<std::string, int64_t>>;
// "block=4096 warps=8 ...": a plan in logs, warnings and test traces.
std::string describe(const PlanFields &fields);

// What one tuning result is for. Both strings become file names: letters, digits, '-', '_'
// and '.' only.
struct TuningKey {
  std::string kernel; // e.g. "layer_norm_forward"
  std::string bucket; // e.g. "bf16-cols4096-rows4096"
};

// The time of candidate i, in any unit (smaller is better); throws to reject the candidate.
using CandidateTimer = std::function<double(size_t)>;

class Autotuner {
public:
  // Records live under `root`/<device>/; `device` names the GPU (name and architecture).
  Autotuner(std::filesystem::path root, std::string device);
  // The process's tuner for the current context's GPU (one per device and cache root), rooted
  // in the kernel cache's folder. Devices of one model share the records on disk.
  static Autotuner &forCurrentDevice();

  // The recorded winner among `candidates` (memory, else disk), if any.
  std::optional<size_t> recorded(const TuningKey &key, const std::vector<PlanFields> &candidates);
  // Times every candidate, records the fastest and returns its index. Throws only when every
  // candidate was rejected (the first rejection's error). The first candidate stays the
  // winner unless another is faster by more than `firstMargin` (0.03: 3%).
  size_t tune(const TuningKey &key, const std::vector<PlanFields> &candidates,
              const CandidateTimer &time, double firstMargin = 0);

  std::filesystem::path recordPath(const TuningKey &key) const;

private:
  std::optional<size_t> readRecord(const TuningKey &key,
                                   const std::vector<PlanFields> &candidates) const;
  void writeRecord(const TuningKey &key, const std::vector<PlanFields> &candidates,
                   const std::vector<double> &times, size_t winner) const;

  std::filesystem::path dir_;
  std::mutex mutex_;
  std::map<std::string, PlanFields> winners_; // kernel/bucket -> the winner's fields
};

// Whether tuning runs (TRITIUM_AUTOTUNE, unless setAutotune decided).
bool autotuneEnabled();
void setAutotune(bool on);
void resetAutotune(); // back to following TRITIUM_AUTOTUNE

// Median time in milliseconds of `launch` on `stream` (CUDA events, L2 flushed before each of
// `repetitions` runs, after `warmups` untimed runs, the first of which also compiles and
// loads). The autotuner's trials.
double timeLaunches(CUstream stream, const std::function<void()> &launch, int repetitions = 9,
                    int warmups = 1);

// Median time in milliseconds of `launch` on `stream` timed as the peers' scripts time theirs
// (triton.testing.do_bench(warmup=25, rep=200)): five flushed launches estimate one, then
// about `warmupMs` of untimed launches and `repeatMs` of timed ones, each after an L2 flush.
// A fixed count of repetitions would time a 2-ms kernel over 50 ms while its peers run for
// 200, at clocks that a longer run of tensor-core work lowers. The examples' timings.
double benchmarkLaunches(CUstream stream, const std::function<void()> &launch,
                         double warmupMs = 25, double repeatMs = 200);

// Runs prepare(0 .. count-1) on up to 8 threads, each with the caller's CUDA context current
// and launches there only loading their kernels (PrepareOnlyScope): the candidates' compiles
// and the driver's JIT of each run side by side instead of one after another inside the timing.
// A candidate that fails here is left for the timing to reject. Never throws.
void prepareCandidates(size_t count, const std::function<void(size_t)> &prepare);

// Whether tuning may run on this stream now: tuning on, a GPU (not interpret mode), and the
// stream not capturing a CUDA graph.
bool mayTune(CUstream stream);
bool interpretingForTuning();        // interpret mode (TRITIUM_INTERPRET or setInterpret)
bool streamMayTune(CUstream stream); // the stream is not capturing a CUDA graph

// What decided a plan for one call's exact shape, kept so that the next call of that shape
// skips making and matching the candidates (tens of microseconds): the hot path stays a lookup.
struct ChoiceKey {
  std::string kernel;
  std::vector<int64_t> shape; // every input the candidates and the choice depend on
  bool rerunSafe = true;
  auto operator<=>(const ChoiceKey &) const = default;
};
// The ordinal of the current context's device, -1 in interpret mode or without a GPU: plans
// are remembered per device. Never throws.
int deviceForChoices() noexcept;

// Bumped whenever a tuner records a winner: a planner's fallback chosen before may now have a
// recorded winner to use instead.
uint64_t tuningGeneration();
void noteTuned();

// The plan a launch uses: `given` when the caller chose one, else the recorded or tuned winner
// for (choice.kernel, bucket()) among `candidates()` (each launched through `launch`), else
// `planned()`. Plans have `PlanFields fields() const`. `rerunSafe` says that launching twice on
// these arguments gives the same result as launching once. Decisions are remembered per exact shape
// (ChoiceKey). Where the planner's plan leads the candidates, it keeps its place unless another
// runs faster by more than `plannerMargin` (Autotuner::tune).
template <typename Plan>
Plan choosePlan(const Plan *given, ChoiceKey choice, const std::function<std::string()> &bucket,
                CUstream stream, const std::function<Plan()> &planned,
                const std::function<std::vector<Plan>()> &candidates,
                const std::function<void(const Plan &)> &launch, double plannerMargin = 0) {
  if (given)
    return *given;
  struct Remembered {
    Plan plan;
    bool final;          // a winner, or tuning off: valid until the switches change
    uint64_t generation; // for a fallback: the tuning generation it saw
  };
  static std::mutex mutex;
  static std::map<std::tuple<ChoiceKey, int, int>, Remembered> memo;
  // Interpret mode, the tuning switch and the device change what is chosen: they are part of
  // the key.
  int state = (autotuneEnabled() ? 1 : 0) | (interpretingForTuning() ? 2 : 0);
  auto id = std::make_tuple(std::move(choice), state, deviceForChoices());
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = memo.find(id);
        it != memo.end() && (it->second.final || it->second.generation == tuningGeneration()))
      return it->second.plan;
  }
  auto remember = [&](const Plan &p, bool final) {
    std::lock_guard<std::mutex> lock(mutex);
    memo.insert_or_assign(id, Remembered{p, final, tuningGeneration()});
    return p;
  };
  if (state != 1) // tuning off, or the interpreter: the planner's choice, for good
    return remember(planned(), true);
  if (!streamMayTune(stream)) // capturing a graph: decide again afterwards
    return planned();
  std::vector<Plan> all = candidates();
  if (all.size() < 2)
    return remember(all.empty() ? planned() : all[0], true);
  std::vector<PlanFields> fields;
  for (const Plan &c : all)
    fields.push_back(c.fields());
  Autotuner &tuner = Autotuner::forCurrentDevice();
  TuningKey key{std::get<0>(id).kernel, bucket()};
  if (auto i = tuner.recorded(key, fields))
    return remember(all[*i], true);
  if (!std::get<0>(id).rerunSafe)
    return remember(planned(), false);
  prepareCandidates(all.size(), [&](size_t c) { launch(all[c]); });
  double margin = fields[0] == planned().fields() ? plannerMargin : 0;
  size_t i = tuner.tune(
      key, fields, [&](size_t c) { return timeLaunches(stream, [&] { launch(all[c]); }); },
      margin);
  return remember(all[i], true);
}

} // namespace tritium::kernels
