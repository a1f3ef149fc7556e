// Names and printing of TIR types.
#include <algorithm>
#include "compiler/ir/Types.h"

namespace tritium::ir {

std::string dtypeName(ScalarKind k) {
  switch (k) {
  case ScalarKind::I1: return "i1";
  case ScalarKind::I32: return "i32";
  case ScalarKind::I64: return "i64";
  case ScalarKind::F16: return "fp16";
  case ScalarKind::BF16: return "bf16";
  case ScalarKind::F32: return "fp32";
  }
  return "?";
}

std::string irName(ScalarKind k) {
  switch (k) {
  case ScalarKind::F16: return "f16";
  case ScalarKind::F32: return "f32";
  default: return dtypeName(k);
  }
}

std::optional<ScalarKind> parseDtype(const std::string &name) {
  for (ScalarKind k : {ScalarKind::I1, ScalarKind::I32, ScalarKind::I64, ScalarKind::F16,
                       ScalarKind::BF16, ScalarKind::F32})
    if (name == dtypeName(k) || name == irName(k))
      return k;
  return std::nullopt;
}

int bitWidth(ScalarKind k) {
  switch (k) {
  case ScalarKind::I1: return 1;
  case ScalarKind::I32: case ScalarKind::F32: return 32;
  case ScalarKind::I64: return 64;
  case ScalarKind::F16: case ScalarKind::BF16: return 16;
  }
  return 0;
}

int byteWidth(ScalarKind k) { return std::max(1, bitWidth(k) / 8); }

bool isFloatKind(ScalarKind k) {
  return k == ScalarKind::F16 || k == ScalarKind::BF16 || k == ScalarKind::F32;
}

int64_t Type::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape_)
    n *= d;
  return n;
}

std::string Type::str() const {
  std::string elem = isPtr_ ? "ptr<" + irName(kind_) + ">" : irName(kind_);
  if (shape_.empty())
    return elem;
  std::string s = "block<";
  for (int64_t d : shape_)
    s += std::to_string(d) + "x";
  return s + elem + ">";
}

} // namespace tritium::ir
