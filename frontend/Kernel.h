// Kernels: a C++ function over DSL values, traced once per specialization, compiled through the
// pipeline, and cached in memory and on disk (TRITIUM_CACHE_DIR).
//
//   void add(Ptr out, Ptr x, Int n, int BLOCK) { ... }
//   auto k = tritium::kernel("add", add, {"out", "x", "n", "BLOCK"});
//   CompiledKernel &c = k.compile({.signature = {"*fp32", "*fp32", "i32"}, .constexprs = {1024}});
//   c.launch(grid, stream, {out, x, n});
//
// or, as Triton's add[grid](out, x, n, BLOCK=1024), with the signature inferred from typed
// arguments (frontend/TypedArguments.h), each specialization compiled once:
//
//   k.launch(grid, stream, {out, x, n}, {{"BLOCK", 1024}});
//
// Parameters of type Ptr, Int and Float are runtime arguments typed by the signature; integer
// parameters are compile-time constants (Triton's tl.constexpr) taken from `constexprs`.
#pragma once

#include "frontend/CompiledKernel.h"
#include "frontend/DSL.h"
#include "frontend/Limits.h"
#include "frontend/TypedArguments.h"

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <type_traits>
#include <unordered_map>

namespace tritium {

struct Specialization {
  std::vector<std::string> signature; // one per runtime parameter: "*fp32", "i32", ...
  std::vector<int64_t> constexprs;    // one per integer (compile-time) parameter, in order
  int numWarps = 4;
  int numStages = 1; // the depth of range() loops that do not give their own
  // Programs per thread-block cluster (Triton's num_ctas), 1 to 16 (above 8 is Hopper's
  // non-portable range); above 1 the grid must be a multiple of it, and cluster_max /
  // cluster_sum reduce across the cluster (sm_90 and later).
  int clusterSize = 1;
  // CUDA's __launch_bounds__ minimum: ptxas keeps registers low enough for this many blocks per
  // SM (1: no limit beyond num_warps'). Two blocks per SM let one row's loads overlap another's
  // reductions.
  int minBlocksPerSM = 1;
  // Programs per CTA, 1 to 32: each warp-sized program (num_warps 1) runs beside the others in
  // one CTA, as torch's softmax gives each warp of a block its own row, so short rows take
  // fewer, larger CTAs. The programs share nothing: kernels that need shared memory (a
  // cp.async ring) are refused. The launch grid counts CTAs; program_id and num_programs count
  // programs (grid x programsPerCTA).
  int programsPerCTA = 1;
  // Pipelined loads that read whole contiguous rows become one bulk copy (TMA) per stage on
  // sm_90; false keeps one 16-byte cp.async per thread and vector (CompileOptions::bulkCopies).
  bool bulkCopies = true;
  // Triton's enable_fp_fusion: a floating-point multiply whose product feeds an add may become
  // one fused multiply-add (one rounding instead of two). false keeps every multiply and add
  // rounded on its own (the fp_fusion = 0 attribute of the kernel's TIR).
  bool fpFusion = true;
  // NVPTX's straight-line strength reduction (addresses computed from one another by adds
  // instead of multiplies), a pass of LLVM's back end. Its analysis grows with the length of a
  // block: in a long loop body of address math it can be most of a cold compile. false leaves
  // it out; the PTX then has a few percent more instructions (the paged decode's at head_dim
  // 128: 3% more, and 78 of its 121 ms of code generation saved; docs/notes/compile-time.md).
  bool strengthReduction = true;
  std::string arch = "sm_90";
  int ptxVersion = 81; // PTX ISA x 10; 8.1 (CUDA 12.1) has st.async, 80 still works
  // Triton's launch_pdl with gdc_wait() first: the kernel's first op is griddep_wait(), so it is
  // launched to start while the stream's previous kernel finishes (programmatic dependent
  // launch, sm_90) and waits for it before anything else. Its launch and set-up overlap the
  // previous kernel's tail; the order of memory effects stays a plain launch's. The kernel
  // library sets it.
  bool awaitPreviousKernel = false;

  std::string str() const; // canonical text: the in-memory cache key and the disk key's part
  // Triton's specialization: marks each pointer argument that is 16-byte aligned and each
  // integer divisible by 16 with ":16", so the compiler may use 16-byte vector accesses. The
  // launch checks the marks.
  Specialization specializedFor(std::initializer_list<KernelArg> args) const;
};

class Kernel {
public:
  enum class ParamKind { Ptr, Int, Float, Constexpr };

  virtual ~Kernel() = default;
  const std::string &name() const { return name_; }
  const std::vector<ParamKind> &paramKinds() const { return kinds_; }
  const std::vector<std::string> &paramNames() const { return names_; }

  // Traces the body for `spec` into fresh TIR (checked against the parameters).
  std::unique_ptr<ir::Function> trace(const Specialization &spec) const;
  // Returns the compiled specialization: from memory, else the disk cache, else the compiler.
  // The kernel owns it: `kernel(...).compile(...)` on a temporary would hand back a reference
  // that dies with the temporary, so that form does not compile.
  CompiledKernel &compile(const Specialization &spec) &;
  CompiledKernel &compile(const Specialization &spec) && = delete;
  // Triton's kernel[grid](args..., BLOCK=...): infers the signature from typed `args` (one per
  // runtime parameter, in order), takes every compile-time parameter by name, specializes as
  // Triton does (":16" for 16-byte aligned pointers and integers divisible by 16, ":1" for
  // integers equal to 1), compiles the specialization on its first use and launches it. A
  // cached call costs a key of a few integers and one hash lookup beside the launch. Mistakes
  // (a count, a kind, a missing or unknown name) are UserErrors naming the parameter.
  CompiledKernel &launch(Grid3 grid, CUstream stream, std::initializer_list<Arg> args,
                         std::initializer_list<ConstexprArg> constexprs = {},
                         const LaunchOptions &options = {}) & {
    return launch(grid, stream, std::span<const Arg>(args.begin(), args.size()),
                  std::span<const ConstexprArg>(constexprs.begin(), constexprs.size()), options);
  }
  CompiledKernel &launch(int64_t grid, CUstream stream, std::initializer_list<Arg> args,
                         std::initializer_list<ConstexprArg> constexprs = {},
                         const LaunchOptions &options = {}) & {
    return launch(Grid3{grid, 1, 1}, stream, args, constexprs, options);
  }
  // The same with the arguments and constexprs in arrays (what an autotuner assembles).
  CompiledKernel &launch(Grid3 grid, CUstream stream, std::span<const Arg> args,
                         std::span<const ConstexprArg> constexprs,
                         const LaunchOptions &options) &;
  CompiledKernel &launch(Grid3, CUstream, std::initializer_list<Arg>,
                         std::initializer_list<ConstexprArg> = {},
                         const LaunchOptions & = {}) && = delete;
  CompiledKernel &launch(int64_t, CUstream, std::initializer_list<Arg>,
                         std::initializer_list<ConstexprArg> = {},
                         const LaunchOptions & = {}) && = delete;
  // The specialization a typed launch compiles for these arguments (for tools and tests).
  Specialization specializationFor(std::span<const Arg> args,
                                   std::span<const ConstexprArg> constexprs = {},
                                   const LaunchOptions &options = {}) const;
  Specialization specializationFor(std::initializer_list<Arg> args,
                                   std::initializer_list<ConstexprArg> constexprs = {},
                                   const LaunchOptions &options = {}) const {
    return specializationFor(std::span<const Arg>(args.begin(), args.size()),
                             std::span<const ConstexprArg>(constexprs.begin(), constexprs.size()),
                             options);
  }
  // Stops after `last` and returns the stages so far (no cache): for tools and tests.
  Artifacts compileTo(const Specialization &spec, Stage last,
                      const ir::PrintOptions &print = {}) const;

protected:
  // Checks the names (frontend/Limits.h) at the declaration `loc`. `ranges` holds, per
  // parameter, what its C++ type can hold (used for compile-time ones only).
  Kernel(std::string name, std::vector<ParamKind> kinds, std::vector<ConstexprRange> ranges,
         std::vector<std::string> names, SourceLoc loc);
  // Calls the user's function with the traced parameters.
  virtual void invoke(const std::vector<ir::Value *> &runtime,
                      const std::vector<int64_t> &constexprs) const = 0;

private:
  std::string name_;
  std::vector<ParamKind> kinds_;
  std::vector<ConstexprRange> ranges_;
  std::vector<std::string> names_;
  SourceLoc loc_;
  // One slot per specialization: the map's lock is held only to find or add a slot, so that
  // different specializations (an autotuner's candidates) compile on several threads at once,
  // while callers of one specialization wait for its single compile.
  struct Slot {
    std::mutex mutex; // held while this specialization compiles
    std::unique_ptr<CompiledKernel> kernel;
    std::atomic<CompiledKernel *> ready{nullptr};
  };
  std::unique_ptr<CompiledKernel> build(const Specialization &spec, const std::string &specKey);
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Slot>> compiled_;
  // Typed launches: a compact key of the arguments' kinds, dtypes and marks, the constexprs
  // and the options, to the compiled specialization (TypedLaunch.cpp).
  struct KeyHash {
    size_t operator()(const std::vector<int64_t> &key) const;
  };
  std::mutex typedMutex_;
  std::unordered_map<std::vector<int64_t>, CompiledKernel *, KeyHash> typed_;
};

namespace detail {

template <typename T> constexpr Kernel::ParamKind paramKindOf() {
  using U = std::remove_cvref_t<T>;
  if constexpr (std::is_same_v<U, dsl::Ptr>)
    return Kernel::ParamKind::Ptr;
  else if constexpr (std::is_same_v<U, dsl::Int>)
    return Kernel::ParamKind::Int;
  else if constexpr (std::is_same_v<U, dsl::Float>)
    return Kernel::ParamKind::Float;
  else {
    static_assert(std::is_integral_v<U>,
                  "kernel parameters are dsl::Ptr, dsl::Int, dsl::Float or integers (constexpr)");
    return Kernel::ParamKind::Constexpr;
  }
}

template <typename... P> class FunctionKernel : public Kernel {
public:
  FunctionKernel(std::string name, std::function<void(P...)> body,
                 std::vector<std::string> names, SourceLoc loc)
      : Kernel(std::move(name), {paramKindOf<P>()...}, {constexprRangeOf<P>()...},
               std::move(names), std::move(loc)),
        body_(std::move(body)) {}

protected:
  // The compile-time values were checked against their parameters' types (Kernel::trace).
  void invoke(const std::vector<ir::Value *> &runtime,
              const std::vector<int64_t> &constexprs) const override {
    size_t r = 0, c = 0;
    auto next = [&]<typename T>(std::type_identity<T>) -> std::remove_cvref_t<T> {
      using U = std::remove_cvref_t<T>;
      if constexpr (paramKindOf<T>() == ParamKind::Constexpr)
        return static_cast<U>(constexprs[c++]);
      else
        return U(runtime[r++]);
    };
    // Braced initialisation evaluates the parameters left to right; the parameters move into
    // the body, so no other live Value shares their values (LiveValues.h).
    std::tuple<std::remove_cvref_t<P>...> args{next(std::type_identity<P>{})...};
    std::apply([&](auto &...a) { body_(std::move(a)...); }, args);
  }

private:
  std::function<void(P...)> body_;
};

} // namespace detail

// Declares a kernel from a function; `paramNames` name the parameters in order (runtime and
// compile-time) for the IR, the metadata and error messages.
template <typename... P>
detail::FunctionKernel<P...> kernel(std::string name, void (*body)(P...),
                                    std::vector<std::string> paramNames = {},
                                    std::source_location loc = std::source_location::current()) {
  return detail::FunctionKernel<P...>(std::move(name), body, std::move(paramNames), loc);
}

} // namespace tritium
