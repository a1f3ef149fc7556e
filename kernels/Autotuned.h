// Autotuning of a user's own kernel, as Triton's @triton.autotune(configs, key,
// prune_configs_by, reset_to_zero, restore_value) and @triton.heuristics: on the first launch
// for a key (the pointers' dtypes and alignment, the values of the integer arguments named in
// `key`, the compile-time parameters given at the launch) every config is timed on the caller's
// arguments and the fastest kept, in memory and in the kernel library's records on disk
// (Autotuner.h); later launches with that key take it at once. Without tuning (interpret mode,
// TRITIUM_AUTOTUNE=0, a CUDA graph capture) the first config after pruning runs.
//
//   auto k = tritium::kernel("add", add, {"x", "y", "out", "n", "BLOCK"});
//   tritium::kernels::AutotunedKernel tuned(k, {{{{"BLOCK", 1024}}, {.numWarps = 4}},
//                                               {{{"BLOCK", 4096}}, {.numWarps = 8}}},
//                                           {.key = {"n"}});
//   tuned.launch([&](const Meta &m) { return Grid3{(n + m["BLOCK"] - 1) / m["BLOCK"]}; },
//                stream, {x, y, out, n});
#pragma once

#include "frontend/Kernel.h"
#include "kernels/Autotuner.h"

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace tritium::kernels {

// Triton's triton.Config: compile-time parameters by name, and the launch options.
struct Config {
  std::vector<std::pair<std::string, int64_t>> constexprs;
  LaunchOptions options;
  // How a record on disk names it: the constexprs, then warps, stages, cluster size.
  PlanFields fields() const;
};

// A launch's runtime arguments by parameter name, for the hooks.
class LaunchArguments {
public:
  LaunchArguments(const Kernel &kernel, std::initializer_list<Arg> args);
  // The argument of runtime parameter `name`; a UserError names an unknown one.
  const Arg &operator[](std::string_view name) const;

private:
  std::string kernel_;
  std::vector<std::pair<std::string, Arg>> args_;
};

// The compile-time values a launch uses (the config's, the heuristics', the caller's): what
// Triton's grid(META) reads.
class Meta {
public:
  explicit Meta(std::vector<std::pair<std::string, int64_t>> values) : values_(std::move(values)) {}
  int64_t operator[](std::string_view name) const; // a UserError names an unknown one
  const std::vector<std::pair<std::string, int64_t>> &values() const { return values_; }

private:
  std::vector<std::pair<std::string, int64_t>> values_;
};

struct AutotuneOptions {
  // Integer runtime arguments whose values key the choice (Triton's `key`).
  std::vector<std::string> key;
  // Triton's prune_configs_by: the configs worth timing for these arguments (at least one).
  std::function<std::vector<Config>(std::vector<Config>, const LaunchArguments &)> prune;
  // Outputs zeroed before each timed trial, and tensors a trial writes in place that are put
  // back after each (and once tuning ends): both given at the launch as tensor views (their
  // bytes are the view's span).
  std::vector<std::string> resetToZero, restoreValue;
  // Triton's @triton.heuristics: compile-time parameters computed from the arguments.
  std::vector<std::pair<std::string, std::function<int64_t(const LaunchArguments &)>>> heuristics;
};

class AutotunedKernel {
public:
  using GridFn = std::function<Grid3(const Meta &)>;

  // `kernel` must outlive this object; `configs` must not be empty.
  AutotunedKernel(Kernel &kernel, std::vector<Config> configs, AutotuneOptions options = {});

  // Chooses the config (tuning first where tuning runs) and launches it over grid(meta).
  CompiledKernel &launch(const GridFn &grid, CUstream stream, std::initializer_list<Arg> args,
                         std::initializer_list<ConstexprArg> constexprs = {});

  // The config index a launch with these arguments takes: memory, else a record of `tuner`,
  // else the fastest by `time` (then recorded). For tests and tools; launch() passes the
  // current device's tuner and timed trials.
  size_t choose(std::initializer_list<Arg> args, std::initializer_list<ConstexprArg> constexprs,
                Autotuner &tuner, const CandidateTimer &time);
  // The tuning key's bucket for these arguments (letters, digits, '-' and '.').
  std::string bucket(std::initializer_list<Arg> args,
                     std::initializer_list<ConstexprArg> constexprs) const;
  const std::vector<Config> &configs() const { return configs_; }

private:
  std::vector<size_t> candidates(const LaunchArguments &named) const;
  Meta metaFor(const Config &config, const LaunchArguments &named,
               std::initializer_list<ConstexprArg> constexprs) const;
  CompiledKernel &launchConfig(const Config &config, const GridFn &grid, CUstream stream,
                               std::initializer_list<Arg> args, const LaunchArguments &named,
                               std::initializer_list<ConstexprArg> constexprs);

  Kernel &kernel_;
  std::vector<Config> configs_;
  AutotuneOptions options_;
  std::mutex mutex_;
  std::map<std::string, size_t> chosen_; // bucket (untuned/bucket without tuning) -> config
};

} // namespace tritium::kernels
