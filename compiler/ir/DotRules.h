// The type rules of dot (Triton's tl.dot), shared by the DSL (which reports a broken rule as a
// user error at the caller's line) and the verifier (which reports it as a compiler bug).
#pragma once

#include "compiler/ir/Types.h"

#include <optional>
#include <string>

namespace tritium::ir {

// The accumulator's element type when none is given: f32 for float operands, i32 for 8-bit
// integers; nullopt for operand types the tensor cores do not take.
std::optional<ScalarKind> defaultDotAccumulator(ScalarKind operand);

// Why (a, b, acc) with `precision` ("" where the operands are not f32) is not a valid dot, or
// "" when it is: ranks 2 or 3, [.., M, K] x [.., K, N] -> [.., M, N], M, N and K powers of two
// of at least 16, the operands' and accumulator's element types a pair the tensor cores take.
std::string dotTypeError(const Type &a, const Type &b, const Type &acc,
                         const std::string &precision);

// Why a dot whose first operand is `a` cannot take max_num_imprecise_acc = n, or "": fp8
// operands only, n a positive multiple of 32 (the instruction's K) and at most K.
std::string impreciseAccumulationError(const Type &a, int64_t n);

// The input precisions of f32 operands, as Triton names them.
bool isDotInputPrecision(const std::string &p);

} // namespace tritium::ir
