// Typed launch arguments, as Triton's `kernel[grid](x, y, out, n, BLOCK=1024)` takes them: a
// pointer knows its element type from its C++ type (float *, __nv_bfloat16 *, int8_t *, ...)
// or from a tensor view, an integer is i32 or i64 by its value, a float is fp32. Kernel::launch
// (Kernel.h) infers the signature from them, specializes it as Triton does (pointers on 16
// bytes and integers divisible by 16 marked ":16", integers equal to 1 ":1"), compiles each
// specialization once and launches it.
//
//   add.launch(grid, stream, {x, y, out, n}, {{"BLOCK", 1024}}, {.numWarps = 4});
#pragma once

#include "compiler/ir/Types.h"

#include <cuda.h>

#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

// CUDA's 16-bit float types (cuda_fp16.h, cuda_bf16.h): a pointer to one needs only the name.
struct __half;
struct __nv_bfloat16;

namespace tritium {

namespace detail {
template <typename T> constexpr std::optional<ir::ScalarKind> scalarKindOf() {
  using U = std::remove_cv_t<T>;
  using K = ir::ScalarKind;
  if constexpr (std::is_same_v<U, float>)
    return K::F32;
  else if constexpr (std::is_same_v<U, _Float16> || std::is_same_v<U, __half>)
    return K::F16;
  else if constexpr (std::is_same_v<U, __nv_bfloat16>)
    return K::BF16;
  else if constexpr (std::is_same_v<U, bool>)
    return K::I1;
  else if constexpr (std::is_integral_v<U> && std::is_signed_v<U>)
    return sizeof(U) == 1 ? K::I8 : sizeof(U) == 2 ? K::I16 : sizeof(U) == 4 ? K::I32 : K::I64;
  else if constexpr (std::is_integral_v<U>)
    return sizeof(U) == 1 ? K::U8 : sizeof(U) == 2 ? K::U16 : sizeof(U) == 4 ? K::U32 : K::U64;
  else
    return std::nullopt;
}
} // namespace detail

// A tensor in device memory (a host address under TRITIUM_INTERPRET=1) with its element type,
// shape and strides in elements (row-major when none are given): what a torch tensor gives a
// Triton kernel. As a launch argument it is its data pointer, typed; `size` and `stride` are
// there to pass as the kernel's integer arguments.
struct Tensor {
  const void *data = nullptr;
  ir::ScalarKind dtype = ir::ScalarKind::F32;
  std::vector<int64_t> shape, strides;
  int64_t size(int d) const { return shape.at(size_t(d)); }
  int64_t stride(int d) const { return strides.at(size_t(d)); }
};
// `dtype` is a name as the signatures spell it ("fp32", "bf16", "i8", ...); an unknown name,
// or strides of another rank than the shape, is a UserError.
Tensor tensor(const void *data, std::string_view dtype, std::vector<int64_t> shape,
              std::vector<int64_t> strides = {});

class Arg {
public:
  enum class Kind { Pointer, Int, Float };
  // A typed pointer; a pointer to a type without a dtype (void, double, a struct) does not
  // compile: wrap it in tensor(p, "bf16", {n}).
  template <typename T> Arg(T *p) : kind_(Kind::Pointer), ptr_(CUdeviceptr(p)) {
    constexpr std::optional<ir::ScalarKind> k = detail::scalarKindOf<T>();
    static_assert(k.has_value(), "a launch argument points to a type without a tritium dtype "
                                 "(void, double, a struct): give tritium::tensor(p, \"bf16\", {n}) instead");
    dtype_ = *k;
  }
  Arg(const Tensor &t)
      : kind_(Kind::Pointer), ptr_(CUdeviceptr(t.data)), dtype_(t.dtype), bytes_(spanBytes(t)) {}
  template <std::integral T>
    requires(!std::is_same_v<T, bool>)
  Arg(T v) : kind_(Kind::Int), int_(int64_t(v)) {}
  Arg(float v) : kind_(Kind::Float), float_(v) {}
  Arg(double v) : kind_(Kind::Float), float_(float(v)) {} // fp32, as Triton passes floats

  Kind kind() const { return kind_; }
  CUdeviceptr ptr() const { return ptr_; }
  ir::ScalarKind dtype() const { return dtype_; }
  int64_t intValue() const { return int_; }
  float floatValue() const { return float_; }
  // The bytes a tensor view spans from its data pointer (0 for a bare pointer: unknown). An
  // autotuner that resets or restores an output between its trials needs it.
  int64_t bytes() const { return bytes_; }

private:
  Kind kind_;
  CUdeviceptr ptr_ = 0;
  ir::ScalarKind dtype_ = ir::ScalarKind::F32;
  int64_t int_ = 0;
  float float_ = 0;
  int64_t bytes_ = 0;
  static int64_t spanBytes(const Tensor &t) {
    int64_t last = 0, count = 1;
    bool strided = t.strides.size() == t.shape.size(); // else dense rows
    for (size_t d = 0; d < t.shape.size(); ++d) {
      if (t.shape[d] == 0)
        return 0;
      count *= t.shape[d];
      last += (t.shape[d] - 1) * (strided ? t.strides[d] : 0);
    }
    return (strided ? last + 1 : count) * ir::byteWidth(t.dtype);
  }
};

// A compile-time parameter given by name: {"BLOCK", 1024}.
struct ConstexprArg {
  std::string_view name;
  int64_t value;
};

// The launch options Triton takes beside the arguments.
struct LaunchOptions {
  int numWarps = 4;
  int numStages = 1;
  int clusterSize = 1;    // Triton's num_ctas
  int minBlocksPerSM = 1; // __launch_bounds__'s minimum
  bool fpFusion = true;   // Triton's enable_fp_fusion (Specialization::fpFusion)
  std::string arch;       // "": the current device's (sm_90a on an sm_90 GPU)
};

} // namespace tritium
