// Floats of tritium's 16- and 32-bit kinds held in a double bit for bit. The interpreter keeps
// every float as a double; converting through float or _Float16 would quiet a signalling NaN
// (x86 does), while the GPU moves its bits untouched through loads, stores and bitcasts. Here a
// NaN's sign and mantissa (its quiet bit and payload) move into the top of the double's
// mantissa and back unchanged; every other value converts as the hardware rounds it.
#pragma once

#include "compiler/ir/Types.h"

#include <bit>
#include <cmath>
#include <cstdint>

namespace tritium::interpreter {

struct FloatFormat {
  int mantissa, exponent;
};

// F32, F16 and BF16 (fp8 kinds have their own codecs in ir::toFp8 / ir::fromFp8).
inline FloatFormat floatFormat(ir::ScalarKind k) {
  return k == ir::ScalarKind::F16 ? FloatFormat{10, 5}
         : k == ir::ScalarKind::BF16 ? FloatFormat{7, 8}
                                     : FloatFormat{23, 8};
}

// The value of `bits` in kind k (F32, F16 or BF16).
inline double floatFromBits(ir::ScalarKind k, uint64_t bits) {
  FloatFormat f = floatFormat(k);
  uint64_t sign = (bits >> (f.mantissa + f.exponent)) & 1;
  uint64_t exponent = (bits >> f.mantissa) & ((uint64_t(1) << f.exponent) - 1);
  uint64_t mantissa = bits & ((uint64_t(1) << f.mantissa) - 1);
  if (exponent == (uint64_t(1) << f.exponent) - 1 && mantissa != 0) // NaN: keep every bit
    return std::bit_cast<double>(sign << 63 | uint64_t(0x7ff) << 52 |
                                 mantissa << (52 - f.mantissa));
  switch (k) {
  case ir::ScalarKind::F16:
    return double(std::bit_cast<_Float16>(uint16_t(bits)));
  case ir::ScalarKind::BF16:
    return double(std::bit_cast<float>(uint32_t(bits) << 16));
  default:
    return double(std::bit_cast<float>(uint32_t(bits)));
  }
}

// The bits of `x` in kind k: rounded to nearest even (BF16 too); a NaN keeps its sign and the
// top of its payload (a payload that would vanish becomes the quiet NaN's).
inline uint64_t floatToBits(ir::ScalarKind k, double x) {
  FloatFormat f = floatFormat(k);
  if (std::isnan(x)) {
    uint64_t d = std::bit_cast<uint64_t>(x);
    uint64_t mantissa = (d & ((uint64_t(1) << 52) - 1)) >> (52 - f.mantissa);
    if (mantissa == 0)
      mantissa = uint64_t(1) << (f.mantissa - 1);
    return (d >> 63) << (f.mantissa + f.exponent) |
           ((uint64_t(1) << f.exponent) - 1) << f.mantissa | mantissa;
  }
  switch (k) {
  case ir::ScalarKind::F16:
    return std::bit_cast<uint16_t>(_Float16(x));
  case ir::ScalarKind::BF16: {
    uint32_t u = std::bit_cast<uint32_t>(float(x));
    return ((u + 0x7fffu + ((u >> 16) & 1u)) >> 16) & 0xffffu;
  }
  default:
    return std::bit_cast<uint32_t>(float(x));
  }
}

} // namespace tritium::interpreter
