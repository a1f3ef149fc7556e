// A compiled specialization of a kernel: its stages (from the compiler or the disk cache), its
// metadata, and, once loaded in a CUDA context, the driver function to launch there.
#pragma once

#include "compiler/ir/TensorMap.h"
#include "compiler/Pipeline.h"
#include "runtime/Module.h"
#include "runtime/PerContext.h"

#include <cuda.h>

#include <atomic>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tritium {

namespace rt {
class Context;
class DeviceBuffer;
} // namespace rt
namespace interpreter {
class HostBuffer;
}

// The runtime parameters' types as Triton writes them: "*fp32", "i32", "i64", "fp32".
struct Signature {
  std::vector<std::string> types;
  std::vector<std::string> names;
};

// One launch argument, typed so that the launch can be checked against the signature.
class KernelArg {
public:
  enum class Kind { Pointer, Int, Float };
  KernelArg(int32_t v) : kind_(Kind::Int), i_(v) {}
  KernelArg(int64_t v) : kind_(Kind::Int), i_(v) {}
  KernelArg(uint32_t v) : kind_(Kind::Int), i_(int64_t(v)) {}
  KernelArg(uint64_t v) : kind_(Kind::Int), i_(int64_t(v)) {} // u64 parameters take the bits
  KernelArg(float v) : kind_(Kind::Float), f_(v) {}
  KernelArg(const rt::DeviceBuffer &buffer);
  KernelArg(const interpreter::HostBuffer &buffer); // interpret mode: a host address
  template <typename T> KernelArg(T *devicePtr) : kind_(Kind::Pointer), p_(CUdeviceptr(devicePtr)) {}
  static KernelArg pointer(CUdeviceptr p) {
    KernelArg a(int32_t(0));
    a.kind_ = Kind::Pointer;
    a.p_ = p;
    return a;
  }
  Kind kind() const { return kind_; }
  CUdeviceptr ptr() const { return p_; }
  int64_t intValue() const { return i_; }
  float floatValue() const { return f_; }

private:
  Kind kind_;
  int64_t i_ = 0;
  float f_ = 0;
  CUdeviceptr p_ = 0;
};

struct KernelMetadata {
  std::string name;
  Signature signature;
  std::vector<std::pair<std::string, int64_t>> constexprs;
  CompileOptions options;
  int64_t sharedBytes = 0;
  std::string cacheKey;
  std::filesystem::path cacheDir; // empty when the disk cache is not in use
  bool fromCache = false;
};

// A launch grid of CTAs along x, y and z.
struct Grid3 {
  int64_t x, y = 1, z = 1;
};

// A signature entry parsed once, for the launch path.
struct ParamType {
  enum class Kind { Ptr, I32, I64, U32, U64, F32 } kind;
  int divisibility = 1; // 16 when specialized as divisible by 16
  bool equalsOne = false; // specialized as equal to 1 (":1")
  // divisibility - 1: a power of two's test as a mask, since a 64-bit division per argument
  // would cost the launch path tens of nanoseconds.
  uint64_t alignmentMask() const noexcept { return uint64_t(divisibility - 1); }
  static ParamType parse(const std::string &type);
};

// While one lives on a thread, CompiledKernel::launch there only loads the kernel into the
// current context (compiling it was the caller's compile()) and launches nothing: the
// autotuner prepares its candidates so, on several threads at once, before timing them one by
// one. Nests.
class PrepareOnlyScope {
public:
  PrepareOnlyScope();
  ~PrepareOnlyScope();
  PrepareOnlyScope(const PrepareOnlyScope &) = delete;
  PrepareOnlyScope &operator=(const PrepareOnlyScope &) = delete;

private:
  bool was_;
};

// One specialization, launchable from any thread on any GPU of its architecture or a newer one
// (PTX is forward-compatible; sm_90a code runs on sm_90 only): its module is loaded once per
// CUDA context, on first use there (docs/GPUS.md). The first load on a device architecture JITs
// the PTX (unless the disk cache had a cubin for it) and keeps the cubin; later contexts on
// devices of that architecture load the cubin. The first cubin made goes into the cache entry.
class CompiledKernel {
public:
  // `cubin`, when not empty, is machine code for devices of architecture `cubinArch`.
  CompiledKernel(KernelMetadata meta, Artifacts artifacts, std::string cubin = {},
                 std::string cubinArch = {});
  ~CompiledKernel();

  const KernelMetadata &metadata() const { return meta_; }
  const Artifacts &artifacts() const { return artifacts_; }
  // The cubin from the cache or the first JIT ("" before either).
  std::string cubin() const;
  // The cubin for devices of architecture `deviceArch` ("" when none was made yet).
  std::string cubinFor(const std::string &deviceArch) const;
  // Threads per CTA: the warps of each program times the programs side by side in it (or the
  // compute groups that take alternate tiles), plus a warp-specialized loop's producer warps.
  int numThreads() const {
    return 32 * (meta_.options.numWarps * meta_.options.programsPerCTA * artifacts_.computeGroups +
                 artifacts_.producerWarps);
  }

  // Loads the code in the calling thread's current context (once per context, however many
  // threads race); throws rt::DriverError without a GPU, UserError on a device of another
  // architecture than the specialization's. The first load of a PTX-only entry runs the
  // driver's JIT and records the cubin and registers in the cache entry.
  void load();
  // Whether it has been loaded in any context (no driver call).
  bool loaded() const { return perContext_.size() > 0; }
  // The contexts it is loaded in.
  size_t loadedContexts() const { return perContext_.size(); }
  // Registers, spills and shared memory, as Triton's warmup() reports them (loads if needed).
  const rt::KernelInfo &info();
  // The driver function in the current context, for callers that launch it themselves (loads
  // if needed).
  CUfunction function();
  // The tutorial's persistent grid for the current context's device: SMs x blocks per SM by
  // registers and shared memory, capped at the CTAs that `rows` programs fill. In interpret
  // mode (TRITIUM_INTERPRET=1), min(rows, 4 x CPU threads) programs: no GPU needed. Counts
  // CTAs, as launch's grid does.
  int64_t persistentGrid(int64_t rows);

  // Launches on `stream` (of the current context) after checking the arguments against the
  // signature. No allocation, no hashing, no file system, no lock: the hot path is the argument
  // check, one cuCtxGetCurrent, one atomic load for this context's module and cuLaunchKernel.
  // In a process using several devices, pointer arguments are also checked to live where the
  // kernel runs (runtime/PointerCheck.h). In interpret mode the kernel's TIR runs on the CPU
  // instead, synchronously, over host addresses. `grid` counts CTAs: grid x programsPerCTA
  // programs run.
  void launch(int64_t grid, CUstream stream, std::initializer_list<KernelArg> args);
  // A 2-D or 3-D grid of CTAs ({x, y} or {x, y, z}; y and z at most 65535): program_id(1) and
  // program_id(2) number the programs along y and z.
  void launch(Grid3 grid, CUstream stream, std::initializer_list<KernelArg> args);
  // The same with the arguments in an array (Kernel::launch's typed arguments).
  void launch(Grid3 grid, CUstream stream, std::span<const KernelArg> args);

private:
  // The kernel as loaded in one context.
  struct Loaded {
    explicit Loaded(rt::LoadedKernel k) : kernel(std::move(k)) {}
    rt::LoadedKernel kernel;
    std::atomic<int64_t> activeClusters{-1}; // cuOccupancyMaxActiveClusters, asked once
  };
  Loaded &loadedHere();
  Loaded &loadIn(rt::Context &context);
  void checkPointers(const rt::Context &context, std::span<const KernelArg> args) const;
  void interpret(Grid3 grid, std::span<const KernelArg> args);

  KernelMetadata meta_;
  std::vector<ParamType> params_;
  Artifacts artifacts_;
  std::vector<ir::TensorMapRecipe> tensorMaps_; // encoded by each launch, after the arguments
  mutable std::mutex loadMutex_; // loads (one context at a time) and the cubins
  std::string firstCubin_;        // the cache's, or the first JIT's
  std::map<std::string, std::string> cubins_; // device architecture -> cubin
  rt::PerContext<Loaded> perContext_;
  std::once_flag parseOnce_;
  std::unique_ptr<ir::Function> tir_; // parsed from artifacts_.tir for the interpreter
};

} // namespace tritium
