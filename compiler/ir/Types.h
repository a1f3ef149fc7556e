// TIR types: scalars (i1; signed i8, i16, i32, i64; unsigned u8, u16, u32, u64; floats f8e4m3,
// f8e5m2, f16, bf16, f32), pointers to a scalar type, and blocks of a static shape whose
// elements are scalars or pointers. Types are small values compared by value. Integer
// signedness is part of the type, as in Triton: it picks division, shifts, comparisons and
// widening.
#pragma once

#include <cstdint>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tritium::ir {

enum class ScalarKind { I1, I8, I16, I32, I64, U8, U16, U32, U64, F8E4M3, F8E5M2, F16, BF16, F32 };

// Triton's spelling ("fp32", "i32", ...), used in signatures; and the IR spelling ("f32").
std::string dtypeName(ScalarKind k);
std::string irName(ScalarKind k);
std::optional<ScalarKind> parseDtype(const std::string &name); // accepts "fp32" and "f32"
int bitWidth(ScalarKind k);
int byteWidth(ScalarKind k); // bytes an element takes in memory (an i1 takes one)
bool isFloatKind(ScalarKind k);
bool isUnsignedKind(ScalarKind k); // u8 .. u64 (i1 is neither signed nor unsigned)
// The integers a constant of integer kind `k` may be written as, in the text IR and the DSL:
// the kind's values, and for unsigned kinds narrower than 64 bits also the negatives of the
// same width (-1 is all ones, as in C); 64-bit kinds take any 64-bit integer (a u64 past 2^63
// keeps its bits). i1 takes 0 and 1.
std::pair<int64_t, int64_t> literalRange(ScalarKind k);
bool literalFits(int64_t v, ScalarKind k); // true for float kinds
// fp8 (e4m3 "fn": no infinities, largest 448; e5m2: largest finite 57344) on the host: a value
// rounded to nearest even and saturated to the largest finite magnitude (NaN stays NaN), as
// the GPU's cvt.rn.satfinite does; and the exact value of a bit pattern.
uint8_t toFp8(double x, ScalarKind k);
double fromFp8(uint8_t bits, ScalarKind k);
// Every scalar kind, and the valid dtype names for error messages.
const std::vector<ScalarKind> &allScalarKinds();
std::string dtypeNames(); // "i1, i8, ..., fp32"

class Type {
public:
  static Type scalar(ScalarKind k) { return Type(k, false, {}); }
  static Type pointer(ScalarKind pointee) { return Type(pointee, true, {}); }
  // A block of `shape` whose elements have the type `elem` (a scalar or pointer type).
  static Type block(const Type &elem, std::vector<int64_t> shape) {
    return Type(elem.kind_, elem.isPtr_, std::move(shape));
  }

  bool isBlock() const { return !shape_.empty(); }
  bool isPtr() const { return isPtr_; }       // a pointer, or a block of pointers
  bool isFloat() const { return !isPtr_ && isFloatKind(kind_); }
  bool isInt() const { return !isPtr_ && !isFloatKind(kind_) && kind_ != ScalarKind::I1; }
  bool isBool() const { return !isPtr_ && kind_ == ScalarKind::I1; }
  bool isUnsigned() const { return !isPtr_ && isUnsignedKind(kind_); }
  // The scalar kind, or for pointers the pointee's kind.
  ScalarKind kind() const { return kind_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t numElements() const;

  Type element() const { return Type(kind_, isPtr_, {}); } // drops the shape
  Type withShape(std::vector<int64_t> shape) const { return Type(kind_, isPtr_, std::move(shape)); }
  Type withKind(ScalarKind k) const { return Type(k, false, shape_); } // same shape, new scalar
  Type pointee() const { return Type(kind_, false, shape_); }          // ptr -> its element

  // "f32", "ptr<f32>", "block<128xf32>", "block<128xptr<f32>>"
  std::string str() const;
  bool operator==(const Type &o) const = default;

private:
  Type(ScalarKind k, bool isPtr, std::vector<int64_t> shape)
      : kind_(k), isPtr_(isPtr), shape_(std::move(shape)) {}
  ScalarKind kind_;
  bool isPtr_;
  std::vector<int64_t> shape_;
};

} // namespace tritium::ir
