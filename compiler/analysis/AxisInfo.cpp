// The axis analysis's transfer functions, one forward walk in program order (loop-carried
// values are taken as unknown, so no fixed point is needed).
#include "compiler/analysis/AxisInfo.h"

#include <algorithm>
#include <numeric>

namespace tritium {

namespace {

constexpr int64_t kUnbounded = int64_t(1) << 30; // divisibility of 0

// The largest power of two dividing v. Computed on the unsigned bit pattern, which has the same
// lowest set bit as |v| and needs no negation (-INT64_MIN overflows; its low bit is 2^63).
int64_t lowBit(int64_t v) {
  if (v == 0)
    return kUnbounded;
  uint64_t u = uint64_t(v);
  return int64_t(std::min<uint64_t>(u & (~u + 1), uint64_t(kUnbounded)));
}

int64_t extent(const ir::Value *v) {
  return v->type().isBlock() ? v->type().numElements() : 1;
}

int64_t elementBytes(const ir::Type &t) { return ir::byteWidth(t.kind()); }

} // namespace

AxisAnalysis::AxisAnalysis(const ir::Function &fn) {
  for (auto &arg : fn.body().arguments()) {
    const ir::Type &t = arg->type();
    int64_t natural = t.isPtr() ? elementBytes(t) : 1; // valid pointers are element-aligned
    info_[arg.get()] = {1, std::max<int64_t>(natural, arg->divisibility()), 1};
  }
  ir::walk(const_cast<ir::Block &>(fn.body()), [&](ir::Op &op) { visit(op); });
}

const AxisInfo &AxisAnalysis::get(const ir::Value *v) const {
  static const AxisInfo unknown;
  auto it = info_.find(v);
  return it == info_.end() ? unknown : it->second;
}

void AxisAnalysis::visit(const ir::Op &op) {
  using ir::OpKind;
  auto in = [&](unsigned i) { return get(op.operand(i)); };
  auto constancyOfAll = [&] {
    int64_t c = extent(op.result());
    for (ir::Value *v : op.operands())
      c = std::gcd(c, get(v).constancy);
    return c;
  };
  AxisInfo r;
  switch (op.kind()) {
  case OpKind::Constant: {
    const ir::Attr &a = op.attr("value");
    r.divisibility = std::holds_alternative<int64_t>(a) ? lowBit(std::get<int64_t>(a)) : 1;
    r.constancy = extent(op.result());
    break;
  }
  case OpKind::Arange:
    r.contiguity = extent(op.result());
    r.divisibility = lowBit(op.intAttr("start"));
    break;
  case OpKind::Splat:
    r.divisibility = in(0).divisibility;
    r.constancy = extent(op.result());
    break;
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::AddPtr: {
    AxisInfo a = in(0), b = in(1);
    int64_t scale = op.kind() == OpKind::AddPtr ? elementBytes(op.result()->type()) : 1;
    r.contiguity = std::max(std::gcd(a.contiguity, b.constancy), std::gcd(a.constancy, b.contiguity));
    if (op.kind() == OpKind::Sub)
      r.contiguity = std::gcd(a.contiguity, b.constancy); // x - arange runs downwards
    r.divisibility = std::gcd(a.divisibility, std::min(kUnbounded, b.divisibility * scale));
    r.constancy = std::gcd(a.constancy, b.constancy);
    break;
  }
  case OpKind::Mul:
    r.divisibility = std::min(kUnbounded, in(0).divisibility * in(1).divisibility);
    r.constancy = std::gcd(in(0).constancy, in(1).constancy);
    break;
  case OpKind::Cmp: {
    AxisInfo a = in(0), b = in(1);
    r.constancy = std::gcd(a.constancy, b.constancy);
    // A run of consecutive values starting at a multiple of d, compared with a constant that
    // is a multiple of d, gives the same answer across each aligned group of d.
    if (b.constancy == extent(op.operand(1)) || !op.operand(1)->type().isBlock()) {
      int64_t g = std::gcd(std::gcd(a.contiguity, a.divisibility), b.divisibility);
      r.constancy = std::max(r.constancy, g);
    }
    break;
  }
  case OpKind::Cast:
    r = in(0);
    if (!op.result()->type().isInt() || !op.operand(0)->type().isInt())
      r = {1, 1, in(0).constancy};
    break;
  case OpKind::For: {
    const ir::Block *body = op.body();
    int64_t d = std::gcd(in(0).divisibility, in(2).divisibility); // iv = lb + k * step
    info_[body->argument(0)] = {1, d, 1};
    break; // carried values: unknown
  }
  default:
    if (op.numResults())
      r.constancy = ir::trait(op.kind()) == ir::OpTrait::Pure ? constancyOfAll() : 1;
    break;
  }
  for (auto &res : op.results())
    info_[res.get()] = r;
}

} // namespace tritium
