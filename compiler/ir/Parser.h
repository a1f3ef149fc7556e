// Reads the text form of TIR and GIR (what Printer.cpp writes, with or without loc(...), with
// layouts, vec/smem attributes and {divisibility = 16} on arguments) back into an ir::Function,
// so that print -> parse -> print is the identity and passes can be tested on hand-written text.
#pragma once

#include "compiler/ir/IR.h"

#include <memory>
#include <string>

namespace tritium::ir {

// How deeply `for` bodies may nest in text IR. The parser, the verifier, the passes and the
// lowering all recurse once per level, so an unbounded depth would overflow the stack; real
// kernels nest a handful of loops. Deeper text is a UserError naming the line of the `for`.
inline constexpr int kMaxLoopNesting = 64;

// Parses one kernel. Mistakes are UserErrors naming fileName:line:column and what was expected.
// The result is not verified: callers run ir::verify when they need well-typed IR.
std::unique_ptr<Function> parseTIR(const std::string &text, const std::string &fileName);

} // namespace tritium::ir
