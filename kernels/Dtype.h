// The storage types of the kernel library's tensors. The row kernels, attention and the
// elementwise kernels take fp32, fp16 and bf16 (their math is fp32); the matmul also takes
// 8-bit operands (fp8 e4m3 and e5m2, int8) and writes int32 for int8 products.
#pragma once

#include <cstdint>
#include <string>

namespace tritium::kernels {

enum class Dtype { fp32, fp16, bf16, fp8e4m3, fp8e5m2, int8, int32 };

// The names of tritium's signatures ("*bf16", "*fp8e4m3", "*i8").
inline std::string dtypeName(Dtype d) {
  switch (d) {
  case Dtype::fp32: return "fp32";
  case Dtype::fp16: return "fp16";
  case Dtype::bf16: return "bf16";
  case Dtype::fp8e4m3: return "fp8e4m3";
  case Dtype::fp8e5m2: return "fp8e5m2";
  case Dtype::int8: return "i8";
  case Dtype::int32: return "i32";
  }
  return "dtype " + std::to_string(int(d));
}
inline int64_t dtypeBytes(Dtype d) {
  switch (d) {
  case Dtype::fp32:
  case Dtype::int32: return 4;
  case Dtype::fp16:
  case Dtype::bf16: return 2;
  default: return 1;
  }
}
// fp32, fp16 or bf16: what every kernel but the matmul stores.
inline bool isFloatStorage(Dtype d) {
  return d == Dtype::fp32 || d == Dtype::fp16 || d == Dtype::bf16;
}
inline bool isFp8(Dtype d) { return d == Dtype::fp8e4m3 || d == Dtype::fp8e5m2; }

} // namespace tritium::kernels
