// A compiled specialization of a kernel: its stages (from the compiler or the disk cache), its
// metadata, and, once loaded on a GPU, the driver function to launch.
#pragma once

#include "compiler/Pipeline.h"
#include "runtime/Module.h"

#include <cuda.h>

#include <filesystem>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace tritium {

namespace rt {
class DeviceBuffer;
}
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
  static ParamType parse(const std::string &type);
};

class CompiledKernel {
public:
  CompiledKernel(KernelMetadata meta, Artifacts artifacts, std::string cubin);

  const KernelMetadata &metadata() const { return meta_; }
  const Artifacts &artifacts() const { return artifacts_; }
  const std::string &cubin() const { return cubin_; }
  // Threads per CTA: the warps of each program times the programs side by side in it.
  int numThreads() const { return 32 * meta_.options.numWarps * meta_.options.programsPerCTA; }

  // Loads the code on the current GPU (once); throws rt::DriverError without a GPU. The first
  // load of a PTX-only entry runs the driver's JIT and records the cubin and registers in the
  // cache entry.
  void load();
  bool loaded() const { return loaded_.has_value(); }
  // Registers, spills and shared memory, as Triton's warmup() reports them (loads if needed).
  const rt::KernelInfo &info();
  // The driver function, for callers that launch it themselves (loads if needed).
  CUfunction function() {
    load();
    return loaded_->function();
  }
  // The tutorial's persistent grid: SMs x blocks per SM by registers and shared memory, capped
  // at the CTAs that `rows` programs fill. In interpret mode (TRITIUM_INTERPRET=1),
  // min(rows, 4 x CPU threads) programs: no GPU needed. Counts CTAs, as launch's grid does.
  int64_t persistentGrid(int64_t rows);

  // Launches on `stream` after checking the arguments against the signature. No allocation, no
  // hashing, no file system: the hot path is the argument check and cuLaunchKernel. In interpret
  // mode the kernel's TIR runs on the CPU instead, synchronously, over host addresses. `grid`
  // counts CTAs: grid x programsPerCTA programs run.
  void launch(int64_t grid, CUstream stream, std::initializer_list<KernelArg> args);
  // A 2-D or 3-D grid of CTAs ({x, y} or {x, y, z}; y and z at most 65535): program_id(1) and
  // program_id(2) number the programs along y and z.
  void launch(Grid3 grid, CUstream stream, std::initializer_list<KernelArg> args);

private:
  void interpret(Grid3 grid, std::initializer_list<KernelArg> args);

  KernelMetadata meta_;
  std::vector<ParamType> params_;
  Artifacts artifacts_;
  std::string cubin_;
  std::once_flag loadOnce_;
  std::optional<rt::LoadedKernel> loaded_;
  std::once_flag parseOnce_;
  std::once_flag clustersOnce_;
  int64_t activeClusters_ = 0; // cuOccupancyMaxActiveClusters, asked once (persistentGrid)
  std::unique_ptr<ir::Function> tir_; // parsed from artifacts_.tir for the interpreter
};

} // namespace tritium
