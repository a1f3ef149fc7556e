// Tracing a kernel for a specialization, and compiling it through the memory and disk caches.
#include "frontend/Kernel.h"

#include "compiler/ir/Printer.h"
#include "compiler/support/Log.h"
#include "frontend/Tracer.h"
#include "runtime/Cache.h"
#include "runtime/JitWarmUp.h"
#include "tritium/SourceFingerprint.h" // generated at build time (cmake/SourceFingerprint.cmake)

#include <chrono>

namespace tritium {

std::string Specialization::str() const {
  std::string s = "signature=";
  for (size_t i = 0; i < signature.size(); ++i)
    s += (i ? "," : "") + signature[i];
  s += ";constexprs=";
  for (size_t i = 0; i < constexprs.size(); ++i)
    s += (i ? "," : "") + std::to_string(constexprs[i]);
  s += ";num_warps=" + std::to_string(numWarps) + ";num_stages=" + std::to_string(numStages) +
       ";arch=" + arch + ";ptx=" + std::to_string(ptxVersion);
  if (clusterSize != 1)
    s += ";cluster=" + std::to_string(clusterSize);
  if (minBlocksPerSM != 1)
    s += ";min_blocks=" + std::to_string(minBlocksPerSM);
  if (!bulkCopies)
    s += ";bulk=0";
  if (!fpFusion)
    s += ";fp_fusion=0";
  if (!strengthReduction)
    s += ";slsr=0";
  if (programsPerCTA != 1)
    s += ";programs_per_cta=" + std::to_string(programsPerCTA);
  if (awaitPreviousKernel)
    s += ";await_previous";
  return s;
}

Specialization Specialization::specializedFor(std::initializer_list<KernelArg> args) const {
  Specialization s = *this;
  size_t i = 0;
  for (const KernelArg &a : args) {
    if (i >= s.signature.size())
      break; // the launch reports the count
    std::string &t = s.signature[i++];
    if (t.find(':') != std::string::npos || t == "fp32")
      continue;
    bool divisible = a.kind() == KernelArg::Kind::Pointer ? a.ptr() % 16 == 0
                     : a.kind() == KernelArg::Kind::Int    ? a.intValue() % 16 == 0
                                                           : false;
    if (divisible)
      t += ":16";
  }
  return s;
}

Kernel::Kernel(std::string name, std::vector<ParamKind> kinds,
               std::vector<ConstexprRange> ranges, std::vector<std::string> names, SourceLoc loc)
    : name_(std::move(name)), kinds_(std::move(kinds)), ranges_(std::move(ranges)),
      names_(std::move(names)), loc_(std::move(loc)) {
  checkKernelName(name_, loc_);
  if (!names_.empty() && names_.size() != kinds_.size())
    userError("kernel '" + name_ + "' has " + std::to_string(kinds_.size()) +
                  " parameters but " + std::to_string(names_.size()) + " names were given",
              loc_);
  checkParamNames(name_, names_, loc_);
  for (size_t i = names_.size(); i < kinds_.size(); ++i)
    names_.push_back("arg" + std::to_string(i));
}

// "*fp32:16" / "i32:16": the argument is specialized as divisible by 16 (bytes for pointers);
// "i32:1": as equal to 1, as Triton specializes integers equal to 1 (a unit stride): the body
// sees the constant 1, so that the axis analysis knows the accesses it scales are contiguous.
// The mark: 1 none, 16 divisible by 16, kEqualsOne, -1 unknown.
static constexpr int kEqualsOne = 0;
static std::pair<std::string, int> splitDivisibility(const std::string &type) {
  auto colon = type.find(':');
  if (colon == std::string::npos)
    return {type, 1};
  std::string mark = type.substr(colon + 1);
  return {type.substr(0, colon), mark == "16" ? 16 : mark == "1" ? kEqualsOne : -1};
}

static bool signatureFits(Kernel::ParamKind kind, const std::string &annotated) {
  auto [type, divisibility] = splitDivisibility(annotated);
  if (divisibility < 0 || type.empty() || (divisibility > 1 && kind == Kernel::ParamKind::Float) ||
      (divisibility == kEqualsOne && kind != Kernel::ParamKind::Int))
    return false;
  if (kind == Kernel::ParamKind::Ptr) {
    if (type.empty() || type[0] != '*')
      return false;
    auto k = ir::parseDtype(type.substr(1));
    return k && *k != ir::ScalarKind::I1;
  }
  auto k = ir::parseDtype(type);
  if (!k || type[0] == '*')
    return false;
  if (kind == Kernel::ParamKind::Int)
    return *k == ir::ScalarKind::I32 || *k == ir::ScalarKind::I64 ||
           *k == ir::ScalarKind::U32 || *k == ir::ScalarKind::U64;
  return *k == ir::ScalarKind::F32;
}

static const char *kindName(Kernel::ParamKind k) {
  switch (k) {
  case Kernel::ParamKind::Ptr: return "a pointer (Ptr)";
  case Kernel::ParamKind::Int: return "an integer (Int)";
  case Kernel::ParamKind::Float: return "a float (Float)";
  case Kernel::ParamKind::Constexpr: return "a compile-time integer";
  }
  return "?";
}

std::unique_ptr<ir::Function> Kernel::trace(const Specialization &spec) const {
  size_t runtimeCount = 0, constCount = 0;
  for (ParamKind k : kinds_)
    (k == ParamKind::Constexpr ? constCount : runtimeCount)++;
  if (spec.signature.size() != runtimeCount)
    userError("kernel '" + name_ + "' has " + std::to_string(runtimeCount) +
                  " runtime parameter(s) but the signature lists " +
                  std::to_string(spec.signature.size()) + " types",
              loc_);
  if (spec.constexprs.size() != constCount)
    userError("kernel '" + name_ + "' has " + std::to_string(constCount) +
                  " compile-time parameter(s) but " + std::to_string(spec.constexprs.size()) +
                  " values were given",
              loc_);
  checkSpecialization(name_, spec, loc_);
  for (size_t i = 0, c = 0; i < kinds_.size(); ++i)
    if (kinds_[i] == ParamKind::Constexpr)
      checkConstexpr(name_, names_[i], spec.constexprs[c++], ranges_[i], spec, loc_);

  auto fn = std::make_unique<ir::Function>(name_, loc_);
  fn->setAttr("num_warps", int64_t(spec.numWarps));
  fn->setAttr("num_stages", int64_t(spec.numStages));
  if (spec.clusterSize != 1)
    fn->setAttr("cluster_size", int64_t(spec.clusterSize));
  if (spec.minBlocksPerSM != 1)
    fn->setAttr("min_blocks_per_sm", int64_t(spec.minBlocksPerSM));
  if (!spec.fpFusion)
    fn->setAttr("fp_fusion", int64_t(0));
  if (spec.programsPerCTA != 1) // compileTIR checks it against num_warps and the cluster
    fn->setAttr("programs_per_cta", int64_t(spec.programsPerCTA));
  std::vector<ir::Value *> runtime;
  size_t r = 0, c = 0;
  std::vector<size_t> equalsOne; // runtime arguments specialized as 1
  for (size_t i = 0; i < kinds_.size(); ++i) {
    if (kinds_[i] == ParamKind::Constexpr) {
      fn->setAttr(names_[i], spec.constexprs[c++]);
      continue;
    }
    const std::string &type = spec.signature[r++];
    if (!signatureFits(kinds_[i], type))
      userError("parameter " + std::to_string(i) + " ('" + names_[i] + "') of kernel '" + name_ +
                    "' is " + kindName(kinds_[i]) + " but the signature gives '" + type + "'",
                loc_);
    auto [base, divisibility] = splitDivisibility(type);
    ir::Type t = base[0] == '*' ? ir::Type::pointer(*ir::parseDtype(base.substr(1)))
                                : ir::Type::scalar(*ir::parseDtype(base));
    ir::Value *arg = fn->body().addArgument(t, names_[i]);
    arg->setDivisibility(divisibility == kEqualsOne ? 1 : divisibility);
    runtime.push_back(arg);
    if (divisibility == kEqualsOne)
      equalsOne.push_back(runtime.size() - 1);
  }
  {
    dsl::Tracer tracer(*fn);
    for (size_t j : equalsOne) { // the body sees the constant; the launch checks the value
      ir::Op *one = tracer.builder().create(ir::OpKind::Constant, {}, {runtime[j]->type()}, loc_);
      one->setAttr("value", int64_t(1));
      runtime[j] = one->result();
    }
    if (spec.awaitPreviousKernel) // before the body's first op (Specialization's comment)
      tracer.builder().create(ir::OpKind::GridDepWait, {}, {}, loc_);
    invoke(runtime, spec.constexprs);
    tracer.finish();
  }
  return fn;
}

static CompileOptions optionsOf(const Specialization &spec) {
  return CompileOptions{.arch = spec.arch,
                        .ptxVersion = spec.ptxVersion,
                        .numWarps = spec.numWarps,
                        .numStages = spec.numStages,
                        .clusterSize = spec.clusterSize,
                        .programsPerCTA = spec.programsPerCTA,
                        .bulkCopies = spec.bulkCopies,
                        .llvmPipeline = codegen::llvmPipelineFromEnvironment(),
                        .strengthReduction = spec.strengthReduction};
}

Artifacts Kernel::compileTo(const Specialization &spec, Stage last,
                            const ir::PrintOptions &print) const {
  std::unique_ptr<ir::Function> fn = trace(spec);
  optimizeTIR(*fn);
  return compileTIR(*fn, optionsOf(spec), last, print);
}

CompiledKernel &Kernel::compile(const Specialization &spec) & {
  std::string specKey = spec.str();
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::shared_ptr<Slot> &s = compiled_[specKey];
    if (!s)
      s = std::make_shared<Slot>();
    slot = s;
  }
  if (CompiledKernel *k = slot->ready.load(std::memory_order_acquire))
    return *k;
  std::lock_guard<std::mutex> lock(slot->mutex);
  if (!slot->kernel) { // a compile that throws leaves the slot empty: the next call tries again
    slot->kernel = build(spec, specKey);
    slot->ready.store(slot->kernel.get(), std::memory_order_release);
  }
  return *slot->kernel;
}

std::unique_ptr<CompiledKernel> Kernel::build(const Specialization &spec,
                                              const std::string &specKey) {
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<ir::Function> fn = trace(spec);
  optimizeTIR(*fn);

  KernelMetadata meta;
  meta.name = name_;
  meta.options = optionsOf(spec);
  meta.signature.types = spec.signature;
  for (size_t i = 0, c = 0; i < kinds_.size(); ++i) {
    if (kinds_[i] == ParamKind::Constexpr)
      meta.constexprs.emplace_back(names_[i], spec.constexprs[c++]);
    else
      meta.signature.names.push_back(names_[i]);
  }
  // The key: the kernel's meaning (TIR without source locations) and everything that shapes
  // the code made from it. The source fingerprint (a hash of compiler/, frontend/ and runtime/
  // taken at build time) keeps a rebuilt compiler from loading kernels compiled by older code
  // from a persistent cache when the version string did not change.
  meta.cacheKey =
      rt::cacheKey({{"ir", ir::print(*fn, {.locations = false})},
                    {"specialization", specKey},
                    {"tritium_version", TRITIUM_VERSION},
                    {"source_fingerprint", TRITIUM_SOURCE_FINGERPRINT},
                    {"llvm_version", TRITIUM_LLVM_VERSION},
                    {"llvm_pipeline", codegen::llvmPipelineName(meta.options.llvmPipeline)}});
  rt::DiskCache cache;
  meta.cacheDir = cache.entryDir(meta.cacheKey);

  // What an entry for this key must say about itself: loaded entries are checked against it
  // (a hand-edited json is rebuilt, not trusted), stored entries carry it.
  rt::CacheExpectation expect;
  expect.requiredFiles = {name_ + ".tir", name_ + ".gir", name_ + ".ll", name_ + ".ptx"};
  expect.counts = {"shared"};
  llvm::json::Object &f = expect.fields;
  f["name"] = name_;
  llvm::json::Array sig, names, consts;
  for (auto &t : meta.signature.types)
    sig.push_back(t);
  for (auto &n : meta.signature.names)
    names.push_back(n);
  for (auto &[n, v] : meta.constexprs)
    consts.push_back(llvm::json::Object{{"name", n}, {"value", v}});
  f["signature"] = std::move(sig);
  f["arg_names"] = std::move(names);
  f["constexprs"] = std::move(consts);
  f["specialization"] = specKey;
  f["num_warps"] = spec.numWarps;
  f["num_stages"] = spec.numStages;
  f["arch"] = spec.arch;
  f["ptx_version"] = spec.ptxVersion;
  f["threads"] = 32 * spec.numWarps * spec.programsPerCTA;
  f["programs_per_cta"] = spec.programsPerCTA;
  f["cluster_size"] = spec.clusterSize;
  f["min_blocks_per_sm"] = spec.minBlocksPerSM;
  f["bulk_copies"] = spec.bulkCopies;
  f["fp_fusion"] = spec.fpFusion;
  f["strength_reduction"] = spec.strengthReduction;
  f["await_previous_kernel"] = spec.awaitPreviousKernel;
  f["tritium_version"] = TRITIUM_VERSION;
  f["source_fingerprint"] = TRITIUM_SOURCE_FINGERPRINT;
  f["llvm_version"] = TRITIUM_LLVM_VERSION;

  std::unique_ptr<CompiledKernel> result;
  if (auto entry = cache.load(meta.cacheKey, name_, expect)) {
    Artifacts a;
    a.tir = entry->files[name_ + ".tir"];
    a.gir = entry->files[name_ + ".gir"];
    a.llvm = entry->files[name_ + ".ll"];
    a.ptx = entry->files[name_ + ".ptx"];
    a.sharedBytes = *entry->metadata.getInteger("shared"); // checked by load
    a.waitsOnPriorKernel = entry->metadata.getBoolean("waits_on_prior_kernel").value_or(false);
    a.syncsGrid = entry->metadata.getBoolean("syncs_grid").value_or(false);
    a.producerWarps = int(entry->metadata.getInteger("producer_warps").value_or(0));
    a.computeGroups = int(entry->metadata.getInteger("compute_groups").value_or(1));
    a.tensorMaps = entry->metadata.getString("tensor_maps").value_or("").str();
    std::string cubin = entry->files.count(name_ + ".cubin") ? entry->files[name_ + ".cubin"] : "";
    // The device architecture the driver's JIT made the cubin for (a PTX for sm_80 may have
    // been loaded first on an sm_90 GPU).
    std::string cubinArch = entry->metadata.getString("cubin_arch").value_or(spec.arch).str();
    meta.sharedBytes = a.sharedBytes;
    meta.fromCache = true;
    result = std::make_unique<CompiledKernel>(std::move(meta), std::move(a), std::move(cubin),
                                              std::move(cubinArch));
  } else {
    // The driver's JIT starts up on another thread while LLVM compiles (runtime/JitWarmUp.h).
    rt::startJitWarmUp(spec.ptxVersion);
    Artifacts a = compileTIR(*fn, meta.options);
    meta.sharedBytes = a.sharedBytes;
    rt::CacheEntry e;
    e.kernelName = name_;
    e.files = {{name_ + ".tir", a.tir}, {name_ + ".gir", a.gir}, {name_ + ".ll", a.llvm},
               {name_ + ".ptx", a.ptx}};
    e.metadata = std::move(expect.fields);
    e.metadata["shared"] = a.sharedBytes;
    e.metadata["waits_on_prior_kernel"] = a.waitsOnPriorKernel;
    e.metadata["syncs_grid"] = a.syncsGrid;
    if (a.producerWarps)
      e.metadata["producer_warps"] = a.producerWarps;
    if (a.computeGroups > 1)
      e.metadata["compute_groups"] = a.computeGroups;
    if (!a.tensorMaps.empty())
      e.metadata["tensor_maps"] = a.tensorMaps;
    cache.store(meta.cacheKey, e);
    result = std::make_unique<CompiledKernel>(std::move(meta), std::move(a));
  }
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                std::chrono::steady_clock::now() - start)
                .count();
  log().debug("{} {} in {} us ({})", result->metadata().fromCache ? "loaded" : "compiled", name_,
              us, result->metadata().cacheDir.string());
  return result;
}

} // namespace tritium
