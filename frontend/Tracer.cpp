// The thread-local current trace.
#include "frontend/Tracer.h"

namespace tritium::dsl {

static thread_local Tracer *gCurrent = nullptr;

Tracer::Tracer(ir::Function &fn) : fn_(fn), builder_(&fn.body()), previous_(gCurrent) {
  gCurrent = this;
}

Tracer::~Tracer() { gCurrent = previous_; }

Tracer &Tracer::current(const SourceLoc &loc) {
  if (!gCurrent)
    userError("tritium DSL operations can only be used inside a kernel body while it is traced "
              "(call them from the function given to tritium::kernel)",
              loc);
  gCurrent->raiseDeferred();
  return *gCurrent;
}

void Tracer::deferError(const std::string &message, const SourceLoc &loc) {
  if (!deferred_)
    deferred_ = std::make_unique<UserError>(message, loc);
}

void Tracer::raiseDeferred() {
  if (deferred_) {
    UserError e = *deferred_;
    deferred_.reset();
    throw e;
  }
}

} // namespace tritium::dsl
