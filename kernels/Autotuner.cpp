#include "kernels/Autotuner.h"

#include "compiler/support/Error.h"
#include "compiler/support/Log.h"
#include "frontend/CompiledKernel.h"
#include "interpreter/Interpreter.h"
#include "runtime/CacheDir.h"
#include "runtime/Device.h"
#include "runtime/Driver.h"
#include "runtime/Memory.h"
#include "runtime/TuningRecord.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <thread>

namespace fs = std::filesystem;

namespace tritium::kernels {

namespace {

// -1: follow TRITIUM_AUTOTUNE; 0 or 1: setAutotune decided.
std::atomic<int> autotuneOverride{-1};

std::string fileSafe(const std::string &s) {
  std::string out;
  for (char c : s)
    out +=
        std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ? c : '-';
  return out;
}

void checkName(const char *what, const std::string &s) {
  if (s.empty() || s != fileSafe(s) || s[0] == '.')
    throw InternalError(std::string("autotuner: the ") + what + " '" + s +
                        "' is not a plain file name");
}

std::map<std::string, int64_t> asMap(const PlanFields &fields) {
  return std::map<std::string, int64_t>(fields.begin(), fields.end());
}

std::optional<size_t> find(const PlanFields &winner, const std::vector<PlanFields> &candidates) {
  auto want = asMap(winner);
  for (size_t i = 0; i < candidates.size(); ++i)
    if (asMap(candidates[i]) == want)
      return i;
  return std::nullopt;
}

bool sticky(CUresult r) {
  switch (r) {
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_LAUNCH_FAILED:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case CUDA_ERROR_INVALID_PC:
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
  case CUDA_ERROR_ASSERT:
  case CUDA_ERROR_LAUNCH_TIMEOUT:
  case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    return true;
  default:
    return false;
  }
}

} // namespace

std::string describe(const PlanFields &fields) {
  std::string s;
  for (const auto &[name, value] : fields)
    s += (s.empty() ? "" : " ") + name + "=" + std::to_string(value);
  return s;
}

Autotuner::Autotuner(fs::path root, std::string device)
    : dir_(std::move(root) / fileSafe(device)) {}

Autotuner &Autotuner::forCurrentDevice() {
  // One tuner per cache root (TRITIUM_CACHE_DIR is read on every call, as the kernel cache
  // reads it) and device; the version in the folder keeps one release's measurements from
  // choosing for another's code.
  static std::mutex mutex;
  static std::map<std::pair<fs::path, int>, std::unique_ptr<Autotuner>> tuners;
  const rt::DeviceProps &props = rt::Context::current().props();
  fs::path root = rt::defaultCacheDir() / "autotune" / TRITIUM_VERSION;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<Autotuner> &t = tuners[{root, props.ordinal}];
  if (!t)
    t = std::make_unique<Autotuner>(root, props.name + "-" + props.arch());
  return *t;
}

fs::path Autotuner::recordPath(const TuningKey &key) const {
  checkName("kernel", key.kernel);
  checkName("bucket", key.bucket);
  return dir_ / key.kernel / (key.bucket + ".json");
}

std::optional<size_t> Autotuner::recorded(const TuningKey &key,
                                          const std::vector<PlanFields> &candidates) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string id = key.kernel + "/" + key.bucket;
  if (auto it = winners_.find(id); it != winners_.end())
    return find(it->second, candidates);
  std::optional<size_t> i = readRecord(key, candidates);
  if (i)
    winners_[id] = candidates[*i];
  return i;
}

std::optional<size_t> Autotuner::readRecord(const TuningKey &key,
                                            const std::vector<PlanFields> &candidates) const {
  fs::path path = recordPath(key);
  std::string why;
  std::optional<rt::TuningRecord> record = rt::readTuningRecord(path, &why);
  auto bad = [&](const std::string &what) -> std::optional<size_t> {
    log().warn("autotuner: ignoring {} ({}); tuning again", path.string(), what);
    return std::nullopt;
  };
  if (!record)
    return why.empty() ? std::nullopt : bad(why);
  if (record->kernel != key.kernel || record->bucket != key.bucket)
    return bad("it names another kernel or bucket");
  std::optional<size_t> i = find(record->winner, candidates);
  if (!i)
    return bad("its winner (" + describe(record->winner) + ") is not one of today's candidates");
  log().debug("autotuner: {} {}: {} (from {})", key.kernel, key.bucket, describe(record->winner),
              path.string());
  return i;
}

size_t Autotuner::tune(const TuningKey &key, const std::vector<PlanFields> &candidates,
                       const CandidateTimer &time, double firstMargin) {
  // One tuning at a time: candidates timed side by side would slow each other down.
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<double> times(candidates.size(), std::numeric_limits<double>::infinity());
  std::exception_ptr firstFailure;
  for (size_t i = 0; i < candidates.size(); ++i) {
    try {
      times[i] = time(i);
    } catch (const rt::DriverError &e) {
      // A fault in a kernel leaves the context unusable: nothing after it can be trusted.
      // Refusals (too many resources, a cluster that does not fit) only reject the candidate.
      if (sticky(e.result()))
        throw;
      log().debug("autotuner: {} {}: candidate {} rejected: {}", key.kernel, key.bucket,
                  describe(candidates[i]), e.what());
      if (!firstFailure)
        firstFailure = std::current_exception();
    } catch (const std::exception &e) {
      log().debug("autotuner: {} {}: candidate {} rejected: {}", key.kernel, key.bucket,
                  describe(candidates[i]), e.what());
      if (!firstFailure)
        firstFailure = std::current_exception();
    }
  }
  size_t winner = size_t(std::min_element(times.begin(), times.end()) - times.begin());
  if (times[winner] == std::numeric_limits<double>::infinity())
    std::rethrow_exception(firstFailure);
  if (times[0] <= times[winner] * (1 + firstMargin))
    winner = 0;
  winners_[key.kernel + "/" + key.bucket] = candidates[winner];
  writeRecord(key, candidates, times, winner);
  noteTuned();
  log().debug("autotuner: {} {}: {} of {} candidates won ({:.4f})", key.kernel, key.bucket,
              describe(candidates[winner]), candidates.size(), times[winner]);
  return winner;
}

void Autotuner::writeRecord(const TuningKey &key, const std::vector<PlanFields> &candidates,
                            const std::vector<double> &times, size_t winner) const {
  rt::TuningRecord record{key.kernel, key.bucket, candidates[winner], {}};
  for (size_t i = 0; i < candidates.size(); ++i)
    record.candidates.emplace_back(candidates[i],
                                   times[i] == std::numeric_limits<double>::infinity()
                                       ? std::nullopt
                                       : std::optional<double>(times[i]));
  // Like the kernel cache, the record only saves time: a failure to write it is a warning.
  if (std::string err = rt::writeTuningRecord(recordPath(key), record); !err.empty())
    log().warn("autotuner: cannot record the winner for {} {}: {}", key.kernel, key.bucket, err);
}

bool autotuneEnabled() {
  if (int o = autotuneOverride.load(); o >= 0)
    return o == 1;
  const char *v = std::getenv("TRITIUM_AUTOTUNE");
  if (!v || !*v)
    return true;
  return !(std::strcmp(v, "0") == 0 || std::strcmp(v, "off") == 0 || std::strcmp(v, "false") == 0);
}

void setAutotune(bool on) { autotuneOverride = on ? 1 : 0; }
void resetAutotune() { autotuneOverride = -1; }

bool interpretingForTuning() { return interpreting(); }

int deviceForChoices() noexcept {
  try {
    return interpreting() ? -1 : rt::Context::current().ordinal();
  } catch (...) {
    return -1; // no GPU: the launch that follows reports it
  }
}

bool streamMayTune(CUstream stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  rt::check(rt::Driver::get().cuStreamIsCapturing(stream, &status), "cuStreamIsCapturing");
  return status == CU_STREAM_CAPTURE_STATUS_NONE;
}

bool mayTune(CUstream stream) {
  return autotuneEnabled() && !interpreting() && streamMayTune(stream);
}

namespace {
std::atomic<uint64_t> generation{0};
}
uint64_t tuningGeneration() { return generation.load(); }
void noteTuned() { ++generation; }

void prepareCandidates(size_t count, const std::function<void(size_t)> &prepare) {
  unsigned threads = std::min<unsigned>({std::max(std::thread::hardware_concurrency(), 1u), 8u,
                                         unsigned(std::min<size_t>(count, 8))});
  if (threads < 2)
    return; // the timing compiles them as before
  auto start = std::chrono::steady_clock::now();
  CUcontext context = nullptr;
  try {
    context = rt::Context::current().handle();
  } catch (const std::exception &) {
    return;
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    rt::ContextScope scope(context);
    PrepareOnlyScope prepareOnly;
    for (size_t c; (c = next.fetch_add(1)) < count;) {
      try {
        prepare(c);
      } catch (const std::exception &e) {
        log().debug("autotuner: candidate {} not prepared: {}", c, e.what());
      } catch (...) {
        log().debug("autotuner: candidate {} not prepared", c);
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(work);
    } catch (const std::exception &) {
      break; // no more threads to be had: those started, and this one, share the work
    }
  }
  work();
  for (std::thread &t : pool)
    t.join();
  log().debug("autotuner: prepared {} candidates on {} threads in {} ms", count, threads,
              std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::steady_clock::now() - start)
                  .count());
}

double timeLaunches(CUstream stream, const std::function<void()> &launch, int repetitions,
                    int warmups) {
  for (int w = 0; w < warmups; ++w)
    launch(); // the first compiles and loads
  std::vector<double> ms;
  rt::Event start, end;
  for (int r = 0; r < std::max(repetitions, 1); ++r) {
    rt::l2Flush(stream);
    start.record(stream);
    launch();
    end.record(stream);
    ms.push_back(end.msSince(start));
  }
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2];
}

double benchmarkLaunches(CUstream stream, const std::function<void()> &launch, double warmupMs,
                         double repeatMs) {
  launch(); // compiles and loads
  rt::Event start, end;
  start.record(stream);
  for (int i = 0; i < 5; ++i) {
    rt::l2Flush(stream);
    launch();
  }
  end.record(stream);
  double estimate = std::max(double(end.msSince(start)) / 5, 1e-3);
  return timeLaunches(stream, launch, std::max(1, int(repeatMs / estimate)),
                      std::max(1, int(warmupMs / estimate)));
}

} // namespace tritium::kernels
