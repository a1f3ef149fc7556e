// Loading and launching a compiled kernel.
#include "frontend/CompiledKernel.h"

#include "compiler/ir/Parser.h"
#include "compiler/ir/Verifier.h"
#include "compiler/support/Log.h"
#include "interpreter/Interpreter.h"
#include "runtime/Cache.h"
#include "runtime/Device.h"
#include "runtime/Grid.h"
#include "runtime/Memory.h"

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
  if (base.size() != type.size())
    p.divisibility = 16;
  p.kind = base[0] == '*'      ? Kind::Ptr
           : base == "i32" ? Kind::I32
           : base == "i64" ? Kind::I64
           : base == "u32" ? Kind::U32
           : base == "u64" ? Kind::U64
                           : Kind::F32;
  return p;
}

CompiledKernel::CompiledKernel(KernelMetadata meta, Artifacts artifacts, std::string cubin)
    : meta_(std::move(meta)), artifacts_(std::move(artifacts)), cubin_(std::move(cubin)) {
  for (const std::string &t : meta_.signature.types)
    params_.push_back(ParamType::parse(t));
}

void CompiledKernel::load() {
  std::call_once(loadOnce_, [&] {
    rt::Context::current();
    if (!cubin_.empty()) {
      loaded_.emplace(rt::LoadedKernel::fromCubin(cubin_, meta_.name));
      log().debug("loaded {} from its cubin", meta_.name);
    } else {
      std::string cubin;
      loaded_.emplace(rt::LoadedKernel::fromPTX(artifacts_.ptx, meta_.name, &cubin));
      cubin_ = std::move(cubin);
      if (!meta_.cacheDir.empty()) {
        // The cubin and register counts exist only now: add them to the cache entry.
        const rt::KernelInfo &info = loaded_->info();
        rt::CacheEntry e;
        e.kernelName = meta_.name;
        e.files[meta_.name + ".cubin"] = cubin_;
        e.metadata["regs"] = info.numRegs;
        e.metadata["local_bytes"] = info.localBytes;
        e.metadata["spill_bytes"] = rt::spillBytesFromLog(info.jitLog);
        e.metadata["static_shared"] = info.staticSharedBytes;
        e.metadata["max_threads"] = info.maxThreadsPerBlock;
        rt::DiskCache(meta_.cacheDir.parent_path()).addFiles(meta_.cacheKey, e); // its own entry
      }
    }
    const rt::KernelInfo &info = loaded_->info();
    if (info.maxThreadsPerBlock < numThreads())
      throw UserError("kernel '" + meta_.name + "' needs " + std::to_string(numThreads()) +
                      " threads per block but the GPU allows " +
                      std::to_string(info.maxThreadsPerBlock) + " with " +
                      std::to_string(info.numRegs) + " registers per thread: lower num_warps");
    loaded_->setDynamicShared(int(meta_.sharedBytes));
    if (meta_.options.clusterSize > 8)
      loaded_->allowNonPortableClusters();
    log().debug("{}: {} registers, {} local bytes, {} shared bytes", meta_.name, info.numRegs,
                info.localBytes, meta_.sharedBytes);
  });
  if (!loaded_)
    throw UserError("kernel '" + meta_.name + "' failed to load earlier");
}

const rt::KernelInfo &CompiledKernel::info() {
  load();
  return loaded_->info();
}

int64_t CompiledKernel::persistentGrid(int64_t rows) {
  int64_t cluster = meta_.options.clusterSize, programs = meta_.options.programsPerCTA;
  auto ctasFor = [&](int64_t n) { return std::max<int64_t>(1, (n + programs - 1) / programs); };
  if (interpreting())
    return ctasFor(interpreter::defaultGrid(rows)) * cluster;
  const rt::KernelInfo &i = info();
  if (cluster > 1) {
    // One row per cluster at a time: as many clusters as can be resident, at most one per row.
    // A driver query: asked once, not on every launch that plans its grid.
    std::call_once(clustersOnce_, [&] {
      activeClusters_ = rt::driverActiveClusters(loaded_->function(), int(cluster), numThreads(),
                                                 int(meta_.sharedBytes));
    });
    int64_t clusters = activeClusters_;
    if (clusters == 0)
      throw UserError("kernel '" + meta_.name + "': no cluster of " + std::to_string(cluster) +
                      " programs of " + std::to_string(numThreads()) + " threads and " +
                      std::to_string(meta_.sharedBytes) +
                      " bytes of shared memory fits on this GPU at once: use a smaller cluster "
                      "size, fewer warps or fewer stages");
    return std::max<int64_t>(1, std::min(clusters, rows)) * cluster;
  }
  const rt::DeviceProps &d = rt::Context::current().props();
  rt::Occupancy o = rt::occupancy(d, i.numRegs, meta_.options.numWarps * int(programs),
                                  int(meta_.sharedBytes) + i.staticSharedBytes);
  return rt::persistentGridSize(d, o, ctasFor(rows));
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

void CompiledKernel::launch(Grid3 grid3, CUstream stream, std::initializer_list<KernelArg> args) {
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
  if (int cluster = meta_.options.clusterSize; grid % cluster != 0)
    throw UserError("launch of '" + name + "': grid size " + std::to_string(grid) +
                    " is not a multiple of the cluster size " + std::to_string(cluster));
  constexpr size_t kMaxArgs = 64;
  if (args.size() > kMaxArgs)
    throw UserError("launch of '" + name + "': more than 64 arguments");
  // The arguments are packed into the kernel's parameter block on the stack, each at its
  // natural alignment as the PTX declares them: the hot path allocates nothing, and the driver
  // copies one buffer (within 1% of an array of pointers to them, docs/PERF.md, eighth session).
  alignas(8) std::array<unsigned char, kMaxArgs * 8> block;
  size_t used = 0;
  auto put = [&](auto value) {
    constexpr size_t bytes = sizeof value;
    used = (used + bytes - 1) / bytes * bytes;
    std::memcpy(block.data() + used, &value, bytes);
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
      if (a.ptr() % uint64_t(p.divisibility) != 0)
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
    if (p.kind != ParamType::Kind::Ptr && a.intValue() % p.divisibility != 0)
      throw fail("was specialized as divisible by 16 but is " + std::to_string(a.intValue()) +
                 "; compile a specialization without ':16' for it");
    ++i;
  }
  if (interpreting())
    return interpret(grid3, args);
  load();
  // The driver launches in the calling thread's current context: make the device's primary
  // context current once per thread, so launches from any thread work.
  static thread_local bool contextCurrent = false;
  if (!contextCurrent) {
    rt::Context::current();
    contextCurrent = true;
  }
  rt::launchKernelPacked(loaded_->function(), unsigned(grid), unsigned(numThreads()),
                         unsigned(meta_.sharedBytes), stream, block.data(), used,
                         unsigned(grid3.y), unsigned(grid3.z));
}

// Interpret mode: the cached TIR text (with its source locations) parsed once, then run on the
// CPU. Parsing rather than keeping the traced Function serves disk-cache hits alike.
void CompiledKernel::interpret(Grid3 grid, std::initializer_list<KernelArg> args) {
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
