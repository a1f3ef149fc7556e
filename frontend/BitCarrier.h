// A block's elements as the integers that carry their bits through compositions that move
// elements with xor reductions (frontend/Sort.cpp, frontend/OneHot.cpp): the xor of one
// element and zeros is that element's bits exactly, NaN payloads and -0.0 included. Floats are
// bitcast, 8- and 16-bit elements widened to 32 bits (so every reduction runs on 32- or 64-bit
// integers), masks carried as i32.
#pragma once

#include "frontend/DSL.h"

namespace tritium::dsl {

struct BitCarrier {
  ir::ScalarKind kind; // the elements' type
  Loc l;               // the user's call, the location of every op made

  bool narrowFloat() const {
    return kind == ir::ScalarKind::F16 || kind == ir::ScalarKind::BF16;
  }
  DType wide() const {
    if (kind == ir::ScalarKind::F32)
      return int32;
    if (kind == ir::ScalarKind::I64 || kind == ir::ScalarKind::U64)
      return DType(kind);
    return ir::isUnsignedKind(kind) ? uint32 : int32;
  }
  // The carrier of x's elements.
  Value in(const Value &x) const {
    if (kind == ir::ScalarKind::F32)
      return bitcast(x, int32, l);
    if (narrowFloat())
      return cast(bitcast(x, int16, l), int32, l);
    return cast(x, wide(), l);
  }
  // What comparisons see: the elements' own values (widened integers order as they did).
  Value key(const Value &w) const {
    if (kind == ir::ScalarKind::F32)
      return bitcast(w, float32, l);
    if (narrowFloat())
      return bitcast(cast(w, int16, l), DType(kind), l);
    return w;
  }
  // The elements again.
  Value out(const Value &w) const {
    if (kind == ir::ScalarKind::F32 || narrowFloat())
      return key(w);
    return cast(w, DType(kind), l);
  }
};

} // namespace tritium::dsl
