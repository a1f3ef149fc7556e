// The thread-local current trace.
#include "frontend/Tracer.h"

#include <unordered_set>

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

// Values are visible in the block that makes them and in the bodies nested inside it, after
// their definition.
static void checkScopes(const ir::Block &block, std::unordered_set<const ir::Value *> visible) {
  for (const auto &arg : block.arguments())
    visible.insert(arg.get());
  for (const auto &op : block.ops()) {
    for (const ir::Value *v : op->operands()) {
      if (visible.count(v))
        continue;
      std::string where = v->definingOp() ? " (made at " + v->definingOp()->loc().str() + ")"
                                          : "";
      userError("a value made inside a loop body or a branch" + where +
                    " is used after it has ended; to update a variable inside a loop or a "
                    "branch, give the variable its value before it (it is then carried)",
                op->loc());
    }
    for (unsigned r = 0; r < op->numRegions(); ++r)
      checkScopes(*op->region(r), visible);
    for (const auto &r : op->results())
      visible.insert(r.get());
  }
}

void Tracer::finish() {
  raiseDeferred();
  checkScopes(fn_.body(), {});
}

} // namespace tritium::dsl
