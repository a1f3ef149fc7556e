// The storage types of the kernel library's tensors: fp32, fp16 and bf16 (math is always fp32).
#pragma once

#include <cstdint>
#include <string>

namespace tritium::kernels {

enum class Dtype { fp32, fp16, bf16 };

// "fp32", "fp16", "bf16": the names of tritium's signatures ("*bf16").
inline std::string dtypeName(Dtype d) {
  return d == Dtype::fp32 ? "fp32" : d == Dtype::fp16 ? "fp16" : "bf16";
}
inline int64_t dtypeBytes(Dtype d) { return d == Dtype::fp32 ? 4 : 2; }

} // namespace tritium::kernels
