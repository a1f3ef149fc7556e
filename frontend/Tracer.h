// The trace in progress: kernel bodies are C++ that runs once per specialization, and each DSL
// call records an op here. One trace per thread at a time.
#pragma once

#include "compiler/ir/Builder.h"

#include <cstdint>
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
  // The active trace's serial, 0 outside any trace. Serials are unique in the process and never
  // reused, so a dsl::Value that records one can tell that its trace has ended without touching
  // anything the trace owned.
  static uint64_t currentSerial();
  // The trace with this serial if it is still in progress on this thread (an outer trace of a
  // nested one), else null: only such a trace's IR may still be read.
  static Tracer *liveOnThisThread(uint64_t serial);
  uint64_t serial() const { return serial_; }

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
  uint64_t serial_;
  std::unique_ptr<UserError> deferred_;
};

} // namespace tritium::dsl
