// Kernel::launch with typed arguments (TypedArguments.h): the signature Triton would infer, a
// compact key for the specializations already compiled, and the launch.
#include "compiler/support/Error.h"
#include "frontend/Kernel.h"
#include "interpreter/Interpreter.h"
#include "runtime/Device.h"

#include <algorithm>
#include <functional>
#include <limits>

namespace tritium {

Tensor tensor(const void *data, std::string_view dtype, std::vector<int64_t> shape,
              std::vector<int64_t> strides) {
  std::optional<ir::ScalarKind> kind = ir::parseDtype(std::string(dtype));
  if (!kind)
    throw UserError("tensor: unknown dtype '" + std::string(dtype) + "' (the dtypes: " +
                    ir::dtypeNames() + ")");
  if (strides.empty()) { // row-major
    strides.assign(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 1;)
      strides[d - 1] = strides[d] * shape[d];
  } else if (strides.size() != shape.size()) {
    throw UserError("tensor: " + std::to_string(strides.size()) + " strides for a shape of " +
                    std::to_string(shape.size()) + " dimensions");
  }
  return Tensor{data, *kind, std::move(shape), std::move(strides)};
}

namespace {

bool fitsI32(int64_t v) {
  return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
}

// One integer per argument with everything its signature entry depends on: the kind (bits 0-1),
// the marks (bits 2-4) and a pointer's dtype (bits 8 on).
int64_t argumentCode(const Arg &a) {
  switch (a.kind()) {
  case Arg::Kind::Pointer:
    return (int64_t(a.dtype()) << 8) | (a.ptr() % 16 == 0 ? 4 : 0);
  case Arg::Kind::Int: {
    int64_t v = a.intValue();
    return 1 | (v % 16 == 0 ? 4 : 0) | (v == 1 ? 8 : 0) | (fitsI32(v) ? 0 : 16);
  }
  case Arg::Kind::Float:
    return 2;
  }
  return 3;
}

// Triton's specialization of an argument: "*bf16:16", "i32:1", "i64", "fp32".
std::string signatureOf(const Arg &a) {
  switch (a.kind()) {
  case Arg::Kind::Pointer:
    return "*" + ir::dtypeName(a.dtype()) + (a.ptr() % 16 == 0 ? ":16" : "");
  case Arg::Kind::Int: {
    int64_t v = a.intValue();
    std::string t = fitsI32(v) ? "i32" : "i64";
    return v == 1 ? t + ":1" : v % 16 == 0 ? t + ":16" : t;
  }
  case Arg::Kind::Float:
    return "fp32";
  }
  return "";
}

const char *kindName(Arg::Kind k) {
  return k == Arg::Kind::Pointer ? "a pointer" : k == Arg::Kind::Int ? "an integer" : "a float";
}

} // namespace

size_t Kernel::KeyHash::operator()(const std::vector<int64_t> &key) const {
  size_t h = key.size();
  for (int64_t v : key)
    h ^= std::hash<int64_t>{}(v) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

Specialization Kernel::specializationFor(std::span<const Arg> args,
                                         std::span<const ConstexprArg> constexprs,
                                         const LaunchOptions &options) const {
  auto fail = [&](const std::string &what) { throw UserError("kernel '" + name_ + "': " + what); };
  std::vector<std::string> runtimeNames, constexprNames;
  for (size_t i = 0; i < kinds_.size(); ++i)
    (kinds_[i] == ParamKind::Constexpr ? constexprNames : runtimeNames).push_back(names_[i]);
  if (args.size() != runtimeNames.size()) {
    std::string list;
    for (const std::string &n : runtimeNames)
      list += (list.empty() ? "" : ", ") + n;
    fail("takes " + std::to_string(runtimeNames.size()) + " runtime arguments (" + list +
         "), but " + std::to_string(args.size()) + " were given");
  }
  Specialization spec;
  const Arg *arg = args.data();
  for (size_t i = 0; i < kinds_.size(); ++i) {
    if (kinds_[i] == ParamKind::Constexpr)
      continue;
    Arg::Kind want = kinds_[i] == ParamKind::Ptr   ? Arg::Kind::Pointer
                     : kinds_[i] == ParamKind::Int ? Arg::Kind::Int
                                                   : Arg::Kind::Float;
    if (arg->kind() != want)
      fail("argument '" + names_[i] + "' is " + kindName(want) + " parameter, but " +
           kindName(arg->kind()) + " was given" +
           (want == Arg::Kind::Float ? " (pass a float: 2.0f)" : ""));
    spec.signature.push_back(signatureOf(*arg));
    ++arg;
  }
  for (const ConstexprArg &c : constexprs) {
    auto at = std::find(names_.begin(), names_.end(), c.name);
    if (at == names_.end())
      fail("has no parameter '" + std::string(c.name) + "'");
    if (kinds_[size_t(at - names_.begin())] != ParamKind::Constexpr)
      fail("'" + std::string(c.name) +
           "' is a runtime parameter: pass it among the arguments, not by name");
    if (std::count_if(constexprs.begin(), constexprs.end(),
                      [&](const ConstexprArg &o) { return o.name == c.name; }) > 1)
      fail("the compile-time parameter '" + std::string(c.name) + "' was given twice");
  }
  for (const std::string &n : constexprNames) {
    auto given = std::find_if(constexprs.begin(), constexprs.end(),
                              [&](const ConstexprArg &c) { return c.name == n; });
    if (given == constexprs.end())
      fail("the compile-time parameter '" + n + "' was not given ({\"" + n + "\", value})");
    spec.constexprs.push_back(given->value);
  }
  spec.numWarps = options.numWarps;
  spec.numStages = options.numStages;
  spec.clusterSize = options.clusterSize;
  spec.minBlocksPerSM = options.minBlocksPerSM;
  spec.fpFusion = options.fpFusion;
  if (!options.arch.empty())
    spec.arch = options.arch;
  else if (!interpreting()) // the GPU's own; Hopper's wgmma and TMA need sm_90a
    spec.arch = rt::Context::current().props().arch() == "sm_90"
                    ? "sm_90a"
                    : rt::Context::current().props().arch();
  if (std::any_of(args.begin(), args.end(), [](const Arg &a) {
        return a.kind() == Arg::Kind::Pointer && (a.dtype() == ir::ScalarKind::F8E4M3 ||
                                                  a.dtype() == ir::ScalarKind::F8E5M2);
      }))
    spec.ptxVersion = 84; // fp8's conversions and mma.sync (Ada) need PTX 8.4's names
  return spec;
}

CompiledKernel &Kernel::launch(Grid3 grid, CUstream stream, std::span<const Arg> args,
                               std::span<const ConstexprArg> constexprs,
                               const LaunchOptions &options) & {
  // The key: each argument's code, each given constexpr (name hash, value), the options and
  // the device (whose architecture the compile targets).
  std::vector<int64_t> key;
  key.reserve(args.size() + 2 * constexprs.size() + 7);
  for (const Arg &a : args)
    key.push_back(argumentCode(a));
  for (const ConstexprArg &c : constexprs) {
    key.push_back(int64_t(std::hash<std::string_view>{}(c.name)));
    key.push_back(c.value);
  }
  key.push_back(options.numWarps);
  key.push_back(options.numStages);
  key.push_back(options.clusterSize);
  key.push_back(options.minBlocksPerSM);
  key.push_back(options.fpFusion);
  key.push_back(options.arch.empty()
                    ? (interpreting() ? -1 : int64_t(intptr_t(&rt::Context::current().props())))
                    : int64_t(std::hash<std::string>{}(options.arch)));
  CompiledKernel *compiled = nullptr;
  {
    std::lock_guard<std::mutex> lock(typedMutex_);
    if (auto it = typed_.find(key); it != typed_.end())
      compiled = it->second;
  }
  if (!compiled) {
    compiled = &compile(specializationFor(args, constexprs, options));
    std::lock_guard<std::mutex> lock(typedMutex_);
    typed_.emplace(std::move(key), compiled);
  }
  thread_local std::vector<KernelArg> values;
  values.clear();
  for (const Arg &a : args)
    values.push_back(a.kind() == Arg::Kind::Pointer ? KernelArg::pointer(a.ptr())
                     : a.kind() == Arg::Kind::Int   ? KernelArg(a.intValue())
                                                    : KernelArg(a.floatValue()));
  compiled->launch(grid, stream, std::span<const KernelArg>(values));
  return *compiled;
}

} // namespace tritium
