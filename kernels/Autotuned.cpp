// See Autotuned.h.
#include "kernels/Autotuned.h"

#include "compiler/support/Error.h"
#include "runtime/Device.h"
#include "runtime/Driver.h"
#include "runtime/Memory.h"

#include <algorithm>
#include <cctype>

namespace tritium::kernels {

PlanFields Config::fields() const {
  PlanFields f(constexprs.begin(), constexprs.end());
  f.emplace_back("num_warps", options.numWarps);
  f.emplace_back("num_stages", options.numStages);
  f.emplace_back("cluster_size", options.clusterSize);
  f.emplace_back("min_blocks_per_sm", options.minBlocksPerSM);
  if (!options.fpFusion)
    f.emplace_back("fp_fusion", 0);
  return f;
}

LaunchArguments::LaunchArguments(const Kernel &kernel, std::initializer_list<Arg> args)
    : kernel_(kernel.name()) {
  const Arg *a = args.begin();
  for (size_t i = 0; i < kernel.paramKinds().size() && a != args.end(); ++i)
    if (kernel.paramKinds()[i] != Kernel::ParamKind::Constexpr)
      args_.emplace_back(kernel.paramNames()[i], *a++);
}

const Arg &LaunchArguments::operator[](std::string_view name) const {
  for (const auto &[n, a] : args_)
    if (n == name)
      return a;
  throw UserError("kernel '" + kernel_ + "' has no runtime argument '" + std::string(name) + "'");
}

int64_t Meta::operator[](std::string_view name) const {
  for (const auto &[n, v] : values_)
    if (n == name)
      return v;
  throw UserError("no compile-time value '" + std::string(name) + "' in this launch's configs, "
                  "heuristics or arguments");
}

AutotunedKernel::AutotunedKernel(Kernel &kernel, std::vector<Config> configs,
                                 AutotuneOptions options)
    : kernel_(kernel), configs_(std::move(configs)), options_(std::move(options)) {
  if (configs_.empty())
    throw UserError("autotune of '" + kernel_.name() + "': no configs");
  // Every name the options give must be a parameter of the kind they use: a misspelt one
  // would otherwise be ignored wherever tuning does not run.
  auto require = [&](const std::string &name, Kernel::ParamKind kind, const char *what,
                     const char *kindName) {
    auto at = std::find(kernel_.paramNames().begin(), kernel_.paramNames().end(), name);
    if (at == kernel_.paramNames().end() ||
        kernel_.paramKinds()[size_t(at - kernel_.paramNames().begin())] != kind)
      throw UserError("autotune of '" + kernel_.name() + "': " + what + " '" + name +
                      "' is not " + kindName + " parameter");
  };
  for (const std::string &name : options_.key)
    require(name, Kernel::ParamKind::Int, "key", "an integer runtime");
  for (const std::string &name : options_.resetToZero)
    require(name, Kernel::ParamKind::Ptr, "reset_to_zero", "a pointer");
  for (const std::string &name : options_.restoreValue)
    require(name, Kernel::ParamKind::Ptr, "restore_value", "a pointer");
  for (const auto &[name, h] : options_.heuristics)
    require(name, Kernel::ParamKind::Constexpr, "heuristic", "a compile-time");
}

std::string AutotunedKernel::bucket(std::initializer_list<Arg> args,
                                    std::initializer_list<ConstexprArg> constexprs) const {
  LaunchArguments named(kernel_, args);
  std::string b;
  auto add = [&](const std::string &part) { b += (b.empty() ? "" : "-") + part; };
  auto number = [](int64_t v) { return (v < 0 ? "m" : "") + std::to_string(v < 0 ? -v : v); };
  for (const Arg &a : args) // Triton keys on every argument's dtype
    if (a.kind() == Arg::Kind::Pointer)
      add(ir::dtypeName(a.dtype()) + (a.ptr() % 16 == 0 ? "a16" : "a1"));
  for (const std::string &name : options_.key)
    add(name + number(named[name].intValue()));
  for (const ConstexprArg &c : constexprs)
    add(std::string(c.name) + number(c.value));
  std::replace_if(b.begin(), b.end(), [](char ch) { return !std::isalnum((unsigned char)ch) && ch != '-'; }, '.');
  return b.empty() ? "any" : b;
}

std::vector<size_t> AutotunedKernel::candidates(const LaunchArguments &named) const {
  std::vector<size_t> all(configs_.size());
  for (size_t i = 0; i < all.size(); ++i)
    all[i] = i;
  if (!options_.prune)
    return all;
  std::vector<Config> kept = options_.prune(configs_, named);
  std::vector<size_t> out;
  for (const Config &c : kept) {
    auto at = std::find_if(configs_.begin(), configs_.end(),
                           [&](const Config &o) { return o.fields() == c.fields(); });
    if (at == configs_.end())
      throw UserError("autotune of '" + kernel_.name() + "': prune_configs_by returned " +
                      describe(c.fields()) + ", which is not one of the configs");
    out.push_back(size_t(at - configs_.begin()));
  }
  if (out.empty())
    throw UserError("autotune of '" + kernel_.name() + "': prune_configs_by kept no config");
  return out;
}

size_t AutotunedKernel::choose(std::initializer_list<Arg> args,
                               std::initializer_list<ConstexprArg> constexprs, Autotuner &tuner,
                               const CandidateTimer &time) {
  std::string b = bucket(args, constexprs);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = chosen_.find(b); it != chosen_.end())
      return it->second;
  }
  std::vector<size_t> kept = candidates(LaunchArguments(kernel_, args));
  size_t winner = kept[0];
  if (kept.size() > 1) {
    std::vector<PlanFields> fields;
    for (size_t i : kept)
      fields.push_back(configs_[i].fields());
    TuningKey key{"user-" + kernel_.name(), b};
    std::optional<size_t> r = tuner.recorded(key, fields);
    winner = kept[r ? *r : tuner.tune(key, fields, [&](size_t c) { return time(kept[c]); })];
  }
  std::lock_guard<std::mutex> lock(mutex_);
  chosen_[b] = winner;
  return winner;
}

Meta AutotunedKernel::metaFor(const Config &config, const LaunchArguments &named,
                              std::initializer_list<ConstexprArg> constexprs) const {
  std::vector<std::pair<std::string, int64_t>> values = config.constexprs;
  auto put = [&](const std::string &name, int64_t v, const char *from) {
    if (std::any_of(values.begin(), values.end(), [&](const auto &p) { return p.first == name; }))
      throw UserError("autotune of '" + kernel_.name() + "': '" + name + "' from " + from +
                      " is also set by a config or a heuristic");
    values.emplace_back(name, v);
  };
  for (const auto &[name, h] : options_.heuristics)
    put(name, h(named), "a heuristic");
  for (const ConstexprArg &c : constexprs)
    put(std::string(c.name), c.value, "the launch");
  return Meta(std::move(values));
}

CompiledKernel &AutotunedKernel::launchConfig(const Config &config, const GridFn &grid,
                                              CUstream stream, std::initializer_list<Arg> args,
                                              const LaunchArguments &named,
                                              std::initializer_list<ConstexprArg> constexprs) {
  Meta meta = metaFor(config, named, constexprs);
  std::vector<ConstexprArg> given;
  for (const auto &[name, v] : meta.values())
    given.push_back({name, v});
  return kernel_.launch(grid(meta), stream, std::span<const Arg>(args.begin(), args.size()),
                        given, config.options);
}

namespace {
// The bytes of a tensor argument that a trial resets or restores.
int64_t spanOf(const std::string &kernel, const std::string &name, const Arg &a) {
  if (a.kind() != Arg::Kind::Pointer || a.bytes() <= 0)
    throw UserError("autotune of '" + kernel + "': '" + name +
                    "' is reset or restored between trials, so it must be given as a tensor "
                    "view (tritium::tensor(p, dtype, shape)) for its size");
  return a.bytes();
}
} // namespace

CompiledKernel &AutotunedKernel::launch(const GridFn &grid, CUstream stream,
                                        std::initializer_list<Arg> args,
                                        std::initializer_list<ConstexprArg> constexprs) {
  LaunchArguments named(kernel_, args);
  size_t index;
  if (!mayTune(stream)) {
    // The first config left after pruning, remembered per key apart from tuned choices.
    std::string key = "untuned/" + bucket(args, constexprs);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = chosen_.find(key);
    if (it == chosen_.end())
      it = chosen_.emplace(key, candidates(named)[0]).first;
    index = it->second;
  } else {
    // Tensors a trial writes in place: saved once, put back after each trial and at the end.
    std::vector<std::pair<CUdeviceptr, rt::DeviceBuffer>> saved;
    for (const std::string &name : options_.restoreValue) {
      const Arg &a = named[name];
      rt::DeviceBuffer copy(size_t(spanOf(kernel_.name(), name, a)));
      TRITIUM_CU(cuMemcpyDtoDAsync(copy.ptr(), a.ptr(), copy.bytes(), stream));
      saved.emplace_back(a.ptr(), std::move(copy));
    }
    auto restore = [&] {
      for (auto &[ptr, copy] : saved)
        TRITIUM_CU(cuMemcpyDtoDAsync(ptr, copy.ptr(), copy.bytes(), stream));
    };
    auto trial = [&](size_t c) {
      restore();
      for (const std::string &name : options_.resetToZero) {
        const Arg &a = named[name];
        TRITIUM_CU(cuMemsetD8Async(a.ptr(), 0, size_t(spanOf(kernel_.name(), name, a)), stream));
      }
      launchConfig(configs_[c], grid, stream, args, named, constexprs);
    };
    index = choose(args, constexprs, Autotuner::forCurrentDevice(),
                   [&](size_t c) { return timeLaunches(stream, [&] { trial(c); }); });
    restore();
    for (const std::string &name : options_.resetToZero) { // as the caller left it: zeroed
      const Arg &a = named[name];
      TRITIUM_CU(cuMemsetD8Async(a.ptr(), 0, size_t(spanOf(kernel_.name(), name, a)), stream));
    }
    TRITIUM_CU(cuStreamSynchronize(stream)); // the saved copies die here
  }
  return launchConfig(configs_[index], grid, stream, args, named, constexprs);
}

} // namespace tritium::kernels
