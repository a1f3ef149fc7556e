// Host-side helpers for the softmax kernels' element types (fp32, fp16, bf16): conversions from
// and to float for filling inputs and reading outputs (rounding to nearest even, as the GPU's
// cvt.rn), the tolerance a check allows per dtype, and a poison that is NaN in every dtype.
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

// A NaN in every dtype: 0x7fc07fc0 as fp32, and 0x7fc0 in each half for fp16 and bf16. Outputs
// are filled with it before a run, so an element the kernel never wrote fails the check.
inline constexpr uint32_t kPoisonBits = 0x7fc07fc0u;

// |got - ref| <= atol + rtol * |ref|: for 16-bit outputs, the rounding to the dtype dominates.
struct Tolerance {
  double atol, rtol;
};
inline Tolerance toleranceFor(const std::string &dtype) {
  if (dtype == "fp16")
    return {2e-5, 1.5e-3};
  if (dtype == "bf16")
    return {2e-5, 1e-2};
  return {1e-5, 1e-5};
}

} // namespace tritium::kernels
