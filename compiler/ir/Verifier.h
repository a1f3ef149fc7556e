// Checks TIR/GIR invariants between stages. A failure is a tritium bug: the InternalError names
// the op and carries the printed IR.
#pragma once

#include "compiler/ir/IR.h"

namespace tritium::ir {

struct VerifyOptions {
  bool requireLayouts = false; // GIR: every block value has a layout
};

void verify(const Function &fn, const std::string &stage, const VerifyOptions &options = {});

} // namespace tritium::ir
