// The text form of TIR and GIR: stable, one op per line, for dumps and FileCheck tests.
#pragma once

#include "compiler/ir/IR.h"

#include <string>

namespace tritium::ir {

struct PrintOptions {
  bool locations = true; // trailing loc("file:line") on each op
};

std::string print(const Function &fn, const PrintOptions &options = {});
std::string formatAttr(const Attr &a);

} // namespace tritium::ir
