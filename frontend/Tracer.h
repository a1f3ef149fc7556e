// The trace in progress: kernel bodies are C++ that runs once per specialization, and each DSL
// call records an op here. One trace per thread at a time.
#pragma once

#include "compiler/ir/Builder.h"

#include <memory>
#include <string>

namespace tritium::dsl {

class Tracer {
public:
  explicit Tracer(ir::Function &fn);
  ~Tracer();
  Tracer(const Tracer &) = delete;
  Tracer &operator=(const Tracer &) = delete;

  // The active trace; a DSL call outside a kernel body is a user error at `loc`.
  static Tracer &current(const SourceLoc &loc);

  ir::Function &function() { return fn_; }
  ir::Builder &builder() { return builder_; }

  // Loops: range() opens a body, the end of the C++ for statement closes it.
  void enterBody(ir::Block *body) { builder_.setBlock(body); }
  void exitBody(ir::Block *parent) { builder_.setBlock(parent); }

  // A mistake found where throwing is unsafe (a destructor) is raised at the next DSL call or
  // at the end of the trace.
  void deferError(const std::string &message, const SourceLoc &loc);
  void raiseDeferred();

  // Ends the trace: raises a deferred error, then reports any value used outside the loop body
  // that made it (a variable assigned in a range loop without carry()).
  void finish();

private:
  ir::Function &fn_;
  ir::Builder builder_;
  Tracer *previous_;
  std::unique_ptr<UserError> deferred_;
};

} // namespace tritium::dsl
