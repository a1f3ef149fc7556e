// Tensor descriptors in the IR. A load traced from a tensor descriptor (frontend/
// TensorDescriptor.cpp) is an ordinary masked load whose operands go on after (ptr, mask,
// other) with the descriptor's scalars, {tensor_rank = r} saying how many dimensions:
//   load(ptr, mask, other, base, shape[0..r), strides[0..r), offsets[0..r)) {tensor_rank = r}
// (i64 scalars after the base pointer); a store or atomic_rmw likewise after (ptr, value,
// mask). The pointer and mask already say which elements the op touches; the scalars let the
// GPU passes move the same tile with one TMA copy (gpu/ChooseTensorMaps.cpp), or replace a
// store or reduction by a tensor_store (value, base, shape, strides, offsets; gpu/
// ChooseTensorStores.cpp), whose descriptor, a CUtensorMap, the launch encodes from the
// kernel's arguments following a TensorMapRecipe.
#pragma once

#include "compiler/ir/IR.h"

#include <optional>
#include <string>
#include <vector>

namespace tritium::ir {

// r for a load, store, atomic_rmw or tensor_store traced from a tensor descriptor, 0 for any
// other op.
int64_t tensorRank(const Op &op);
Value *tensorBase(const Op &op);
Value *tensorShape(const Op &op, int64_t d);
Value *tensorStride(const Op &op, int64_t d);
Value *tensorOffset(const Op &op, int64_t d);
// Whether a load or store has a mask (and a load its `other`).
bool hasMask(const Op &op);
// Whether `v` is the constant +0.0 or 0, or a block of it: what TMA fills out-of-bounds elements with, and what a
// cp.async of zero bytes leaves in its buffer.
bool isPositiveZero(const Value *v);
// Whether the TMA copy of a load traced from a descriptor, or a tensor_store, reads its operand
// `index`: a load's tile offsets always, its mask and `other` only where `other` is not the zero
// TMA fills with, never its element pointers, base, shape or strides (the launch encodes
// those); every operand of a tensor_store (its element path reads the base, shape and strides).
bool tensorCopyReads(const Op &op, unsigned index);

// One number of a CUtensorMap: (arg < 0 ? 1 : the kernel's argument `arg`) x scale / divisor.
struct TensorMapTerm {
  int arg = -1;
  int64_t scale = 1, divisor = 1;
  std::string str() const; // "8", "a3", "a3*2", "a3/16"
};

// How the launch builds one CUtensorMap (cuTensorMapEncodeTiled) from the kernel's arguments:
// the global address is argument `baseArg`; dims and box are innermost first; strides (bytes)
// are those of dims 1 .. rank - 1; swizzle is 0 (none), 32, 64 or 128 bytes.
struct TensorMapRecipe {
  int baseArg = 0;
  ScalarKind dtype = ScalarKind::F32;
  std::vector<TensorMapTerm> dims, strides;
  std::vector<int64_t> box;
  int64_t swizzle = 0;
  bool operator==(const TensorMapRecipe &o) const { return str() == o.str(); }
  // "bf16 a0 dims=a4,8,2,a3/16 strides=a5*4,a5*2,a5*32 box=64,8,2,8 swizzle=128"
  std::string str() const;
};

// A kernel's recipes, separated by "; ", as the {tensor_maps} attribute and the cache's metadata
// keep them; parsing gives nullopt for malformed text.
std::string printTensorMaps(const std::vector<TensorMapRecipe> &maps);
std::optional<std::vector<TensorMapRecipe>> parseTensorMaps(const std::string &text);
// The recipes of a kernel's {tensor_maps} (none without it).
std::vector<TensorMapRecipe> tensorMapsOf(const Function &fn);

} // namespace tritium::ir
