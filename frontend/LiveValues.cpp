// The per-thread list of live Value objects (LiveValues.h).
#include "frontend/LiveValues.h"

#include "frontend/Tracer.h"

#include <unordered_map>

namespace tritium::dsl {

namespace {
thread_local Value *gHead = nullptr;
thread_local uint64_t gNextSerial = 1;
} // namespace

void Value::link() {
  serial_ = gNextSerial++;
  next_ = gHead;
  if (gHead)
    gHead->prev_ = this;
  gHead = this;
}

void Value::unlink() {
  if (prev_)
    prev_->next_ = next_;
  else if (gHead == this)
    gHead = next_;
  if (next_)
    next_->prev_ = prev_;
  prev_ = next_ = nullptr;
}

std::vector<LiveValues::Entry> LiveValues::snapshot() {
  std::vector<Entry> out;
  uint64_t trace = Tracer::currentSerial();
  for (Value *v = gHead; v; v = v->next_)
    if (v->v_ && v->trace_ == trace)
      out.push_back({v, v->serial_, v->v_});
  return out;
}

void LiveValues::rebind(Value *var, ir::Value *v) {
  var->v_ = v;
  var->trace_ = Tracer::currentSerial();
}

std::vector<LiveValues::Change> LiveValues::compare(const std::vector<Entry> &before) {
  std::unordered_map<Value *, const Entry *> byAddress;
  for (const Entry &e : before)
    byAddress.emplace(e.var, &e);
  std::vector<Change> out;
  // Walk the live list: an entry whose variable died is never dereferenced. A variable the body
  // gave a value of another trace is left alone: its next use reports it (Value::checked).
  uint64_t trace = Tracer::currentSerial();
  for (Value *v = gHead; v; v = v->next_) {
    auto it = byAddress.find(v);
    if (it == byAddress.end() || it->second->serial != v->serial_ || v->trace_ != trace)
      continue;
    out.push_back({v, it->second->held, v->v_});
  }
  return out;
}

} // namespace tritium::dsl
