// Loading and launching a compiled kernel.
#include "frontend/CompiledKernel.h"

#include "compiler/ir/Parser.h"
#include "compiler/ir/Verifier.h"
#include "compiler/support/Log.h"
#include "interpreter/Interpreter.h"
#include "runtime/Cache.h"
#include "runtime/Driver.h"
#include "runtime/Device.h"
#include "runtime/Grid.h"
#include "runtime/Memory.h"
#include "runtime/PointerCheck.h"
#include "runtime/TensorMap.h"

#include <array>
#include <cstring>
#include <limits>

namespace tritium {

KernelArg::KernelArg(const rt::DeviceBuffer &buffer) : kind_(Kind::Pointer), p_(buffer.ptr()) {}
KernelArg::KernelArg(const interpreter::HostBuffer &buffer)
    : kind_(Kind::Pointer), p_(CUdeviceptr(buffer.ptr())) {}

ParamType ParamType::parse(const std::string &type) {
  ParamType p{Kind::F32};
  std::string base = type.substr(0, type.find(':'));
  if (base.size() != type.size()) {
    p.equalsOne = type.substr(base.size() + 1) == "1";
    p.divisibility = p.equalsOne ? 1 : 16;
  }
  p.kind = base[0] == '*'      ? Kind::Ptr
           : base == "i32" ? Kind::I32
           : base == "i64" ? Kind::I64
           : base == "u32" ? Kind::U32
           : base == "u64" ? Kind::U64
                           : Kind::F32;
  return p;
}

CompiledKernel::CompiledKernel(KernelMetadata meta, Artifacts artifacts, std::string cubin,
                               std::string cubinArch)
    : meta_(std::move(meta)), artifacts_(std::move(artifacts)), firstCubin_(std::move(cubin)) {
  for (const std::string &t : meta_.signature.types)
    params_.push_back(ParamType::parse(t));
  if (!artifacts_.tensorMaps.empty()) {
    auto maps = ir::parseTensorMaps(artifacts_.tensorMaps);
    if (!maps)
      throw UserError("kernel '" + meta_.name + "': its cached tensor_maps are malformed ('" +
                      artifacts_.tensorMaps + "'); clear the cache entry");
    tensorMaps_ = std::move(*maps);
  }
  if (!firstCubin_.empty())
    cubins_[cubinArch.empty() ? meta_.options.arch : cubinArch] = firstCubin_;
}

CompiledKernel::~CompiledKernel() = default;

std::string CompiledKernel::cubin() const {
  std::lock_guard<std::mutex> lock(loadMutex_);
  return firstCubin_;
}

std::string CompiledKernel::cubinFor(const std::string &deviceArch) const {
  std::lock_guard<std::mutex> lock(loadMutex_);
  auto it = cubins_.find(deviceArch);
  return it == cubins_.end() ? std::string() : it->second;
}

void CompiledKernel::load() { loadedHere(); }

// The launch path's lookup: the current context (one cuCtxGetCurrent, rt::Context::current)
// and its entry (one atomic load); the lock only on a context's first launch.
CompiledKernel::Loaded &CompiledKernel::loadedHere() {
  rt::Context &context = rt::Context::current();
  if (Loaded *l = perContext_.find(context.slot()))
    return *l;
  return loadIn(context);
}

CompiledKernel::Loaded &CompiledKernel::loadIn(rt::Context &context) {
  // One load at a time per kernel: threads racing to load it in one context wait for the
  // first, and a second context finds the cubin the first JIT produced.
  std::lock_guard<std::mutex> lock(loadMutex_);
  if (Loaded *l = perContext_.find(context.slot()))
    return *l;
  const rt::DeviceProps &device = context.props();
  if (std::string why = rt::whyArchCannotRun(meta_.options.arch, device); !why.empty())
    throw UserError("kernel '" + meta_.name + "' " + why);
  auto load = [&] {
    std::string &cubin = cubins_[device.arch()];
    if (!cubin.empty()) {
      log().debug("loading {} from its {} cubin in the context of device {}", meta_.name,
                  device.arch(), device.ordinal);
      return rt::LoadedKernel::fromCubin(cubin, meta_.name);
    }
    rt::LoadedKernel k = rt::LoadedKernel::fromPTX(artifacts_.ptx, meta_.name, &cubin);
    if (firstCubin_.empty()) {
      firstCubin_ = cubin;
      if (!meta_.cacheDir.empty()) {
        // The cubin and register counts exist only now: add them to the cache entry, once.
        const rt::KernelInfo &info = k.info();
        rt::CacheEntry e;
        e.kernelName = meta_.name;
        e.files[meta_.name + ".cubin"] = cubin;
        e.metadata["cubin_arch"] = device.arch();
        e.metadata["regs"] = info.numRegs;
        e.metadata["local_bytes"] = info.localBytes;
        e.metadata["spill_bytes"] = rt::spillBytesFromLog(info.jitLog);
        e.metadata["static_shared"] = info.staticSharedBytes;
        e.metadata["max_threads"] = info.maxThreadsPerBlock;
        rt::DiskCache(meta_.cacheDir.parent_path()).addFiles(meta_.cacheKey, e); // its own entry
      }
    }
    return k;
  };
  auto loaded = std::make_unique<Loaded>(load());
  const rt::KernelInfo &info = loaded->kernel.info();
  if (info.maxThreadsPerBlock < numThreads())
    throw UserError("kernel '" + meta_.name + "' needs " + std::to_string(numThreads()) +
                    " threads per block but the GPU allows " +
                    std::to_string(info.maxThreadsPerBlock) + " with " +
                    std::to_string(info.numRegs) + " registers per thread: lower num_warps");
  loaded->kernel.setDynamicShared(int(meta_.sharedBytes));
  if (meta_.options.clusterSize > 8)
    loaded->kernel.allowNonPortableClusters();
  log().debug("{}: {} registers, {} local bytes, {} shared bytes", meta_.name, info.numRegs,
              info.localBytes, meta_.sharedBytes);
  return perContext_.insert(context.slot(), std::move(loaded));
}

const rt::KernelInfo &CompiledKernel::info() { return loadedHere().kernel.info(); }

CUfunction CompiledKernel::function() { return loadedHere().kernel.function(); }

int64_t CompiledKernel::persistentGrid(int64_t rows) {
  int64_t cluster = meta_.options.clusterSize, programs = meta_.options.programsPerCTA;
  auto ctasFor = [&](int64_t n) { return std::max<int64_t>(1, (n + programs - 1) / programs); };
  if (interpreting())
    return ctasFor(interpreter::defaultGrid(rows)) * cluster;
  Loaded &here = loadedHere();
  const rt::KernelInfo &i = here.kernel.info();
  if (cluster > 1) {
    // One row per cluster at a time: as many clusters as can be resident, at most one per row.
    // A driver query: asked once per context (a race asks twice, harmlessly), not on every
    // launch that plans its grid.
    int64_t clusters = here.activeClusters.load(std::memory_order_relaxed);
    if (clusters < 0) {
      clusters = rt::driverActiveClusters(here.kernel.function(), int(cluster), numThreads(),
                                          int(meta_.sharedBytes));
      here.activeClusters.store(clusters, std::memory_order_relaxed);
    }
    if (clusters == 0)
      throw UserError("kernel '" + meta_.name + "': no cluster of " + std::to_string(cluster) +
                      " programs of " + std::to_string(numThreads()) + " threads and " +
                      std::to_string(meta_.sharedBytes) +
                      " bytes of shared memory fits on this GPU at once: use a smaller cluster "
                      "size, fewer warps or fewer stages");
    return std::max<int64_t>(1, std::min(clusters, rows)) * cluster;
  }
  const rt::DeviceProps &d = here.kernel.context()->props(); // this context's device
  rt::Occupancy o = rt::occupancy(d, i.numRegs, numThreads() / 32,
                                  int(meta_.sharedBytes) + i.staticSharedBytes);
  return rt::persistentGridSize(d, o, ctasFor(rows));
}

void CompiledKernel::checkPointers(const rt::Context &context,
                                   std::span<const KernelArg> args) const {
  size_t i = 0;
  for (const KernelArg &a : args) {
    if (params_[i].kind == ParamType::Kind::Ptr && a.ptr() != 0) {
      std::string problem =
          rt::pointerProblem(rt::queryPointer(a.ptr(), context.ordinal()), context.ordinal());
      if (!problem.empty())
        throw UserError("launch of '" + meta_.name + "': argument " + std::to_string(i) + " ('" +
                        meta_.signature.names[i] + "') " + problem);
    }
    ++i;
  }
}

static const char *describeKind(KernelArg::Kind k) {
  switch (k) {
  case KernelArg::Kind::Pointer: return "a pointer";
  case KernelArg::Kind::Int: return "an integer";
  case KernelArg::Kind::Float: return "a float";
  }
  return "?";
}

void CompiledKernel::launch(int64_t grid, CUstream stream, std::initializer_list<KernelArg> args) {
  launch(Grid3{grid, 1, 1}, stream, args);
}

static thread_local bool tPrepareOnly = false;

PrepareOnlyScope::PrepareOnlyScope() : was_(tPrepareOnly) { tPrepareOnly = true; }
PrepareOnlyScope::~PrepareOnlyScope() { tPrepareOnly = was_; }

void CompiledKernel::launch(Grid3 grid3, CUstream stream, std::initializer_list<KernelArg> args) {
  launch(grid3, stream, std::span<const KernelArg>(args.begin(), args.size()));
}

void CompiledKernel::launch(Grid3 grid3, CUstream stream, std::span<const KernelArg> args) {
  if (tPrepareOnly) {
    if (!interpreting())
      loadedHere(); // the driver's JIT, once per context
    return;
  }
  const Signature &sig = meta_.signature;
  const std::string &name = meta_.name;
  int64_t grid = grid3.x;
  for (auto [extent, axis] : {std::pair{grid3.y, "y"}, std::pair{grid3.z, "z"}})
    if (extent < 1 || extent > 65535)
      throw UserError("launch of '" + name + "': grid size along " + axis + " " +
                      std::to_string(extent) + " is out of range (1 to 65535)");
  if (args.size() != sig.types.size())
    throw UserError("launch of '" + name + "': expected " + std::to_string(sig.types.size()) +
                    " arguments but got " + std::to_string(args.size()));
  if (grid < 1 || grid > std::numeric_limits<int32_t>::max())
    throw UserError("launch of '" + name + "': grid size " + std::to_string(grid) +
                    " is out of range (1 to 2^31-1)");
  if (int64_t programs = grid * meta_.options.programsPerCTA;
      programs > std::numeric_limits<int32_t>::max())
    throw UserError("launch of '" + name + "': " + std::to_string(grid) + " CTAs of " +
                    std::to_string(meta_.options.programsPerCTA) + " programs are " +
                    std::to_string(programs) + " programs, more than program_id can count");
  if (int cluster = meta_.options.clusterSize; cluster > 1 && grid % cluster != 0)
    throw UserError("launch of '" + name + "': grid size " + std::to_string(grid) +
                    " is not a multiple of the cluster size " + std::to_string(cluster));
  constexpr size_t kMaxArgs = 64, kMaxTensorMaps = 16;
  if (args.size() > kMaxArgs)
    throw UserError("launch of '" + name + "': more than 64 arguments");
  if (tensorMaps_.size() > kMaxTensorMaps)
    throw UserError("launch of '" + name + "': more than 16 TMA tensor maps");
  // The arguments are packed into the kernel's parameter block on the stack, each at its
  // natural alignment as the PTX declares them: the hot path allocates nothing, and the driver
  // copies one buffer (within 1% of an array of pointers to them, docs/notes/hardware.md).
  // CUtensorMaps follow the arguments, each 128 bytes on a 64-byte boundary.
  alignas(64) std::array<unsigned char, kMaxArgs * 8 + kMaxTensorMaps * (128 + 64)> block;
  std::array<void *, kMaxArgs + kMaxTensorMaps> each; // where each sits (cooperative launches)
  size_t used = 0, count = 0;
  const bool cooperative = artifacts_.syncsGrid;
  // Kernels taking CUtensorMaps get their arguments through pointers (kernelParams) too.
  const bool pointers = cooperative || !tensorMaps_.empty();
  auto put = [&](auto value) {
    constexpr size_t bytes = sizeof value;
    used = (used + bytes - 1) / bytes * bytes;
    std::memcpy(block.data() + used, &value, bytes);
    if (pointers)
      each[count++] = block.data() + used;
    used += bytes;
  };
  size_t i = 0;
  for (const KernelArg &a : args) {
    const ParamType &p = params_[i];
    auto fail = [&](const std::string &what) {
      return UserError("launch of '" + name + "': argument " + std::to_string(i) + " ('" +
                       sig.names[i] + "') " + what);
    };
    auto mismatch = [&] {
      return fail("must be " + sig.types[i] + " but " + describeKind(a.kind()) + " was given");
    };
    switch (p.kind) {
    case ParamType::Kind::Ptr:
      if (a.kind() != KernelArg::Kind::Pointer)
        throw mismatch();
      if ((a.ptr() & p.alignmentMask()) != 0)
        throw fail("was specialized as 16-byte aligned but the pointer is not; compile a "
                   "specialization without ':16' for it");
      put(a.ptr());
      break;
    case ParamType::Kind::I32:
      if (a.kind() != KernelArg::Kind::Int)
        throw mismatch();
      if (a.intValue() < std::numeric_limits<int32_t>::min() ||
          a.intValue() > std::numeric_limits<int32_t>::max())
        throw fail("is i32 but " + std::to_string(a.intValue()) + " does not fit");
      put(int32_t(a.intValue()));
      break;
    case ParamType::Kind::I64:
      if (a.kind() != KernelArg::Kind::Int)
        throw mismatch();
      put(a.intValue());
      break;
    case ParamType::Kind::U32:
      if (a.kind() != KernelArg::Kind::Int)
        throw mismatch();
      if (a.intValue() < 0 || a.intValue() > int64_t(std::numeric_limits<uint32_t>::max()))
        throw fail("is u32 but " + std::to_string(a.intValue()) + " does not fit");
      put(uint32_t(a.intValue()));
      break;
    case ParamType::Kind::U64: // the bits of the int64 given
      if (a.kind() != KernelArg::Kind::Int)
        throw mismatch();
      put(a.intValue());
      break;
    case ParamType::Kind::F32:
      if (a.kind() != KernelArg::Kind::Float)
        throw mismatch();
      put(a.floatValue());
      break;
    }
    if (p.equalsOne && a.intValue() != 1)
      throw fail("was specialized as equal to 1 but is " + std::to_string(a.intValue()) +
                 "; compile a specialization without ':1' for it");
    if (p.kind != ParamType::Kind::Ptr && (uint64_t(a.intValue()) & p.alignmentMask()) != 0)
      throw fail("was specialized as divisible by 16 but is " + std::to_string(a.intValue()) +
                 "; compile a specialization without ':16' for it");
    ++i;
  }
  if (interpreting())
    return interpret(grid3, args);
  if (!tensorMaps_.empty()) {
    const KernelArg *first = args.data();
    auto arg = [&](int k) {
      const KernelArg &a = first[k];
      return a.kind() == KernelArg::Kind::Pointer ? int64_t(a.ptr()) : a.intValue();
    };
    auto argName = [&](int k) { return sig.names.at(size_t(k)); };
    for (const ir::TensorMapRecipe &r : tensorMaps_) {
      used = (used + 63) / 64 * 64;
      auto *map = reinterpret_cast<CUtensorMap *>(block.data() + used);
      std::string why = rt::encodeTensorMap(r, arg, argName, map);
      if (!why.empty())
        throw UserError("launch of '" + name + "': " + why);
      each[count++] = map;
      used += sizeof(CUtensorMap);
    }
  }
  // What a launch costs beyond the argument check: one cuCtxGetCurrent and a thread-local
  // compare (rt::Context::current), one atomic load for this context's module, one relaxed load
  // for the pointer-check switch, then cuLaunchKernel. Loading, the first time in a context,
  // takes a lock.
  Loaded &here = loadedHere();
  rt::Context &context = *here.kernel.context();
  if (rt::pointerChecksOn())
    checkPointers(context, args);
  try {
    rt::launchKernelPacked(here.kernel.function(), unsigned(grid), unsigned(numThreads()),
                           unsigned(meta_.sharedBytes), stream, block.data(), used,
                           unsigned(grid3.y), unsigned(grid3.z), artifacts_.waitsOnPriorKernel,
                           cooperative ? each.data() : nullptr,
                           !cooperative && pointers ? each.data() : nullptr);
  } catch (const rt::DriverError &e) {
    if (e.result() != CUDA_ERROR_INVALID_HANDLE && e.result() != CUDA_ERROR_INVALID_CONTEXT)
      throw;
    throw rt::DriverError(std::string(e.what()) + " (launch of '" + name +
                              "' in the current context, on device " +
                              std::to_string(context.ordinal()) +
                              ": a stream of another context is a common cause)",
                          e.result());
  }
}

// Interpret mode: the cached TIR text (with its source locations) parsed once, then run on the
// CPU. Parsing rather than keeping the traced Function serves disk-cache hits alike.
void CompiledKernel::interpret(Grid3 grid, std::span<const KernelArg> args) {
  std::call_once(parseOnce_, [&] {
    auto fn = ir::parseTIR(artifacts_.tir, meta_.name + ".tir");
    ir::verify(*fn, "parsing the TIR for the interpreter");
    tir_ = std::move(fn);
  });
  if (!tir_)
    throw UserError("kernel '" + meta_.name + "': its TIR failed to parse earlier");
  std::vector<interpreter::Arg> values;
  for (const KernelArg &a : args) {
    interpreter::Arg v;
    if (a.kind() == KernelArg::Kind::Pointer)
      v.i = int64_t(a.ptr());
    else if (a.kind() == KernelArg::Kind::Int)
      v.i = a.intValue();
    else
      v.f = a.floatValue();
    values.push_back(v);
  }
  // One machine program per program: programs per CTA multiply the x extent.
  interpreter::run(*tir_, {grid.x * meta_.options.programsPerCTA, grid.y, grid.z}, values);
}

} // namespace tritium
