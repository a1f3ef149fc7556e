// The thread-local current trace, and the check that a DSL value belongs to it (a value kept
// past its trace would otherwise point into freed IR).
#include "frontend/Tracer.h"

#include "frontend/DSL.h"

#include <atomic>
#include <unordered_set>

namespace tritium::dsl {

static thread_local Tracer *gCurrent = nullptr;
static std::atomic<uint64_t> gNextSerial{1}; // 0 means "no trace"

Tracer::Tracer(ir::Function &fn)
    : fn_(fn), builder_(&fn.body()), previous_(gCurrent), serial_(gNextSerial.fetch_add(1)) {
  gCurrent = this;
}

uint64_t Tracer::currentSerial() { return gCurrent ? gCurrent->serial_ : 0; }

Tracer *Tracer::liveOnThisThread(uint64_t serial) {
  for (Tracer *t = gCurrent; t; t = t->previous_)
    if (t->serial_ == serial)
      return t;
  return nullptr;
}

Value::Value(ir::Value *v) : v_(v), trace_(Tracer::currentSerial()) { link(); }

// Only the serials are compared until the owning trace is known to be alive: the IR of an ended
// trace may already be freed.
ir::Value *Value::checked(const SourceLoc &use) const {
  if (!v_ || trace_ == Tracer::currentSerial())
    return v_;
  std::string made = "a tritium value";
  if (Tracer *owner = trace_ ? Tracer::liveOnThisThread(trace_) : nullptr) {
    made += " made while tracing kernel '" + owner->function().name() + "'";
    if (const ir::Op *def = v_->definingOp(); def && def->loc().known())
      made += " (at " + def->loc().str() + ")";
  } else if (trace_) {
    made += " made during a trace that has ended";
  } else {
    made += " made outside any trace";
  }
  if (!gCurrent)
    userError(made + " is used outside any trace; DSL values live only while their kernel is "
                     "traced: do not keep them (in a static, a global or an object) for later",
              use);
  userError(made + " is used while tracing kernel '" + gCurrent->function().name() +
                "'; DSL values belong to the trace that made them: do not keep them (in a "
                "static, a global or an object) from one kernel or specialization to another",
            use);
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
