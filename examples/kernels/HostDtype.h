// Host-side conversions between float and the kernels' element types (fp32, fp16, bf16), for
// filling inputs and reading outputs. Rounding is to nearest even, as the GPU's cvt.rn.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

namespace tritium::kernels {

inline bool isSoftmaxDtype(const std::string &dtype) {
  return dtype == "fp32" || dtype == "fp16" || dtype == "bf16";
}

inline int bytesOf(const std::string &dtype) { return dtype == "fp32" ? 4 : 2; }

inline void storeElement(const std::string &dtype, float v, unsigned char *p) {
  if (dtype == "fp32") {
    std::memcpy(p, &v, 4);
  } else if (dtype == "fp16") {
    _Float16 h = _Float16(v);
    std::memcpy(p, &h, 2);
  } else {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    uint16_t b = std::isnan(v) ? uint16_t(0x7fc0)
                               : uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    std::memcpy(p, &b, 2);
  }
}

inline float loadElement(const std::string &dtype, const unsigned char *p) {
  if (dtype == "fp32") {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  if (dtype == "fp16") {
    _Float16 h;
    std::memcpy(&h, p, 2);
    return float(h);
  }
  uint16_t b;
  std::memcpy(&b, p, 2);
  uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

} // namespace tritium::kernels
