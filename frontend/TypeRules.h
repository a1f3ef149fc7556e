// The DSL's typing rules: literals take their partner's type, integers widen (i32 -> i64) and
// turn into floats next to floats, scalars broadcast over blocks. Violations are user errors.
#pragma once

#include "compiler/ir/Builder.h"
#include "frontend/DSL.h"

namespace tritium::dsl {

// A literal or value as an IR value of the given element type (shape kept, or splat to `shape`).
ir::Value *materialize(ir::Builder &b, const Operand &x, const ir::Type &like,
                       const SourceLoc &loc);
// Converts `v` to element kind `k`, keeping its shape (no-op if already there).
ir::Value *convert(ir::Builder &b, ir::Value *v, ir::ScalarKind k, const SourceLoc &loc);
// An integer scalar (a value or a literal) as an i64 value in the trace in progress (a block
// pointer's or tensor descriptor's shape, strides, offsets); anything else is a UserError
// naming `what`.
ir::Value *indexScalar(const Operand &x, const std::string &what, const SourceLoc &loc);
// numpy's broadcast of two shapes (aligned at the last dimension, 1s repeat); a UserError
// naming both shapes and `what` when they do not meet.
std::vector<int64_t> broadcastShapes(const std::vector<int64_t> &a, const std::vector<int64_t> &c,
                                     const std::string &what, const SourceLoc &loc);
std::string shapeStr(const std::vector<int64_t> &shape); // "[4, 8]"
// A block shape the DSL accepts (rank 1 to 3, powers of two beyond rank 1), else a UserError
// naming `what` (Ops.cpp).
void checkShape(const std::vector<int64_t> &shape, const std::string &what, const SourceLoc &loc);
// Splats a scalar, or broadcasts a block, to `shape`.
ir::Value *broadcastTo(ir::Builder &b, ir::Value *v, const std::vector<int64_t> &shape,
                       const std::string &what, const SourceLoc &loc);
// Brings two operands of a non-pointer binary op to one type.
std::pair<ir::Value *, ir::Value *> unify(ir::Builder &b, const Operand &a, const Operand &c,
                                          const std::string &opName, const SourceLoc &loc);
std::string describe(const Operand &x); // "block<128xf32>", "int literal 3"

} // namespace tritium::dsl
