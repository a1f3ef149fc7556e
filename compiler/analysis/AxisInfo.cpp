// The axis analysis's transfer functions, one forward walk in program order (loop-carried
// values are taken as unknown, so no fixed point is needed). Elementwise rules apply dimension
// by dimension; shape changes move, insert or drop dimensions.
#include "compiler/analysis/AxisInfo.h"

#include "compiler/analysis/AffineCarries.h"

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
  // |v| without the overflow of negating INT64_MIN, whose lowest set bit is 2^63.
  uint64_t u = v < 0 ? ~uint64_t(v) + 1 : uint64_t(v);
  return std::min<int64_t>(int64_t(std::min<uint64_t>(u & (~u + 1), uint64_t(kUnbounded))),
                           kUnbounded);
}

int rankOf(const ir::Value *v) { return std::max(1, v->type().rank()); }

int64_t extent(const ir::Value *v, int d) {
  return v->type().isBlock() ? v->type().shape()[size_t(d)] : 1;
}

int64_t elementBytes(const ir::Type &t) { return ir::byteWidth(t.kind()); }

AxisInfo uniform(const ir::Value *v, int64_t divisibility) {
  AxisInfo r = AxisInfo::unknown(rankOf(v));
  for (int d = 0; d < r.rank(); ++d) {
    r.constancy[size_t(d)] = extent(v, d);
    r.divisibility[size_t(d)] = divisibility;
  }
  return r;
}

// Whether `v` is the integer 1 everywhere: a constant, or a splat or broadcast of one (a stride
// specialized as 1 becomes such a constant; x * 1 is then x itself).
bool isOne(const ir::Value *v) {
  const ir::Op *def = v->definingOp();
  using ir::OpKind;
  while (def && (def->kind() == OpKind::Splat || def->kind() == OpKind::Broadcast ||
                 def->kind() == OpKind::ExpandDims))
    def = def->operand(0)->definingOp();
  if (!def || def->kind() != OpKind::Constant)
    return false;
  const ir::Attr &a = def->attr("value");
  return std::holds_alternative<int64_t>(a) && std::get<int64_t>(a) == 1;
}

} // namespace

AxisInfo AxisInfo::unknown(int rank) {
  return {std::vector<int64_t>(size_t(rank), 1), std::vector<int64_t>(size_t(rank), 1),
          std::vector<int64_t>(size_t(rank), 1)};
}

int64_t AxisInfo::elementDivisibility() const {
  int64_t div = kUnbounded;
  for (int d = 0; d < rank(); ++d)
    div = std::min(div, contiguity[size_t(d)] > 1 ? 1 : divisibility[size_t(d)]);
  return div;
}

AxisAnalysis::AxisAnalysis(const ir::Function &fn) {
  for (auto &arg : fn.body().arguments()) {
    const ir::Type &t = arg->type();
    int64_t natural = t.isPtr() ? elementBytes(t) : 1; // valid pointers are element-aligned
    info_[arg.get()] = uniform(arg.get(), std::max<int64_t>(natural, arg->divisibility()));
    info_[arg.get()].constancy.assign(size_t(rankOf(arg.get())), 1);
  }
  ir::walk(const_cast<ir::Block &>(fn.body()), [&](ir::Op &op) { visit(op); });
  // A carried value that advances by a loop-invariant step (AffineCarries.h) is init + k x
  // step: what init and step share holds for it. Its step is usually made inside the body, so
  // this second look comes after the first walk, and the body is walked again with it known.
  ir::walk(const_cast<ir::Block &>(fn.body()), [&](ir::Op &op) {
    std::vector<AffineCarry> carries = affineCarries(op);
    if (carries.empty())
      return;
    for (const AffineCarry &c : carries) {
      const ir::Value *arg = op.body()->argument(c.arg);
      AxisInfo init = get(op.operand(2 + c.arg)), step = get(c.step);
      int64_t scale = arg->type().isPtr() ? elementBytes(arg->type()) : 1;
      AxisInfo r = AxisInfo::unknown(rankOf(arg));
      for (size_t d = 0; d < size_t(r.rank()); ++d) {
        size_t sd = step.rank() == r.rank() ? d : 0;
        r.contiguity[d] = std::gcd(init.contiguity[d], step.constancy[sd]);
        r.divisibility[d] = std::gcd(init.divisibility[d],
                                     std::min(kUnbounded, step.elementDivisibility() * scale));
        r.constancy[d] = std::gcd(init.constancy[d], step.constancy[sd]);
      }
      info_[arg] = r;
    }
    ir::walk(*op.body(), [&](ir::Op &inner) { visit(inner); });
  });
}

AxisInfo AxisAnalysis::get(const ir::Value *v) const {
  auto it = info_.find(v);
  return it == info_.end() ? AxisInfo::unknown(rankOf(v)) : it->second;
}

void AxisAnalysis::visit(const ir::Op &op) {
  using ir::OpKind;
  auto in = [&](unsigned i) { return get(op.operand(i)); };
  // A loop's induction variable, whether or not the loop carries values (its carried values
  // and results stay unknown).
  if (op.kind() == OpKind::For) {
    const ir::Block *body = op.body();
    int64_t d = std::gcd(in(0).divisibility[0], in(2).divisibility[0]); // iv = lb + k * step
    info_[body->argument(0)] = {{1}, {d}, {1}};
  }
  if (!op.numResults())
    return;
  const ir::Value *res = op.result();
  int rank = rankOf(res);
  AxisInfo r = AxisInfo::unknown(rank);
  auto perDim = [&](auto &&fn) {
    for (int d = 0; d < rank; ++d)
      fn(size_t(d));
  };
  switch (op.kind()) {
  case OpKind::Constant: {
    const ir::Attr &a = op.attr("value");
    r = uniform(res, std::holds_alternative<int64_t>(a) ? lowBit(std::get<int64_t>(a)) : 1);
    break;
  }
  case OpKind::Arange:
    r.contiguity[0] = extent(res, 0);
    r.divisibility[0] = lowBit(op.intAttr("start"));
    break;
  case OpKind::Splat:
    r = uniform(res, in(0).divisibility[0]);
    break;
  case OpKind::ExpandDims: {
    AxisInfo a = in(0);
    size_t axis = size_t(op.intAttr("axis"));
    r = a;
    r.contiguity.insert(r.contiguity.begin() + long(axis), 1);
    r.constancy.insert(r.constancy.begin() + long(axis), 1);
    r.divisibility.insert(r.divisibility.begin() + long(axis), a.elementDivisibility());
    break;
  }
  case OpKind::Broadcast: {
    r = in(0);
    perDim([&](size_t d) {
      if (extent(op.operand(0), int(d)) == 1 && extent(res, int(d)) > 1) {
        r.constancy[d] = extent(res, int(d));
        r.contiguity[d] = 1;
      }
    });
    break;
  }
  case OpKind::Trans: {
    AxisInfo a = in(0);
    std::vector<int64_t> order = ir::parseOrder(op.strAttr("order"));
    perDim([&](size_t d) {
      size_t from = size_t(order[d]);
      r.contiguity[d] = a.contiguity[from];
      r.divisibility[d] = a.divisibility[from];
      r.constancy[d] = a.constancy[from];
    });
    break;
  }
  case OpKind::ConvertLayout:
    r = in(0);
    break;
  case OpKind::Hint: { // the user's promises, on top of what is known
    r = in(0);
    for (const char *key : {"multiple_of", "max_contiguous"}) {
      if (!op.hasAttr(key))
        continue;
      std::vector<int64_t> values = ir::parseIntList(op.strAttr(key)); // verified
      perDim([&](size_t d) {
        int64_t v = d < values.size() ? values[d] : 1;
        if (key[1] == 'u') // multiple_of
          r.divisibility[d] = std::max(r.divisibility[d], std::min(v, kUnbounded));
        else
          r.contiguity[d] = std::max(r.contiguity[d], std::min(v, extent(res, int(d))));
      });
    }
    break;
  }
  case OpKind::Reshape:
    r = uniform(res, in(0).elementDivisibility());
    r.constancy.assign(size_t(rank), 1);
    break;
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::AddPtr: {
    AxisInfo a = in(0), b = in(1);
    int64_t scale = op.kind() == OpKind::AddPtr ? elementBytes(res->type()) : 1;
    perDim([&](size_t d) {
      r.contiguity[d] = std::max(std::gcd(a.contiguity[d], b.constancy[d]),
                                 std::gcd(a.constancy[d], b.contiguity[d]));
      if (op.kind() == OpKind::Sub)
        r.contiguity[d] = std::gcd(a.contiguity[d], b.constancy[d]); // x - arange runs down
      r.divisibility[d] =
          std::gcd(a.divisibility[d], std::min(kUnbounded, b.divisibility[d] * scale));
      r.constancy[d] = std::gcd(a.constancy[d], b.constancy[d]);
    });
    break;
  }
  case OpKind::Mul: {
    AxisInfo a = in(0), b = in(1);
    if (isOne(op.operand(0)) || isOne(op.operand(1))) {
      r = isOne(op.operand(1)) ? a : b;
      break;
    }
    perDim([&](size_t d) {
      // Where an operand is contiguous, only its elements' common divisor is known.
      int64_t da = a.contiguity[d] > 1 ? 1 : a.divisibility[d];
      int64_t db = b.contiguity[d] > 1 ? 1 : b.divisibility[d];
      r.divisibility[d] = std::min(kUnbounded, da * db);
      r.constancy[d] = std::gcd(a.constancy[d], b.constancy[d]);
    });
    break;
  }
  case OpKind::Cmp: {
    AxisInfo a = in(0), b = in(1);
    perDim([&](size_t d) {
      r.constancy[d] = std::gcd(a.constancy[d], b.constancy[d]);
      // A run of consecutive values starting at a multiple of g, compared with a value that
      // is constant along d and a multiple of g, gives the same answer across each aligned
      // group of g.
      if (b.constancy[d] == extent(op.operand(1), int(d))) {
        int64_t g = std::gcd(std::gcd(a.contiguity[d], a.divisibility[d]), b.divisibility[d]);
        r.constancy[d] = std::max(r.constancy[d], g);
      }
    });
    break;
  }
  case OpKind::Select: {
    // Either value is a multiple of what both are (a varlen run's end, one of two multiples
    // of 16, minus its start: a mask that holds along 16 columns and lets stores be 16 bytes).
    AxisInfo c = in(0), a = in(1), b = in(2);
    if (a.rank() != rank || b.rank() != rank)
      break;
    perDim([&](size_t d) {
      r.divisibility[d] = std::gcd(a.divisibility[d], b.divisibility[d]);
      int64_t cond = c.rank() == rank ? c.constancy[d] : extent(res, int(d)); // (a scalar's)
      r.constancy[d] = std::gcd(cond, std::gcd(a.constancy[d], b.constancy[d]));
    });
    break;
  }
  case OpKind::Neg: // -x: multiples of d stay multiples of d (p - n is p + (-n)); runs go down
    r = in(0);
    r.contiguity.assign(size_t(rank), 1);
    break;
  case OpKind::Cast:
    r = in(0);
    if (!res->type().isInt() || !op.operand(0)->type().isInt()) {
      AxisInfo a = in(0);
      r = AxisInfo::unknown(rank);
      r.constancy = a.constancy;
    }
    break;
  case OpKind::Load:
    // Equal addresses under equal masks read equal values: runs of a pointer constant along a
    // dimension (a page's entry broadcast along a tile's row) are runs of the values loaded.
    if (!op.hasAttr("tensor_rank") && rank > 0)
      perDim([&](size_t d) {
        int64_t c = extent(res, int(d));
        for (unsigned i = 0; i < op.numOperands() && i < 3; ++i)
          if (op.operand(i)->type().isBlock())
            c = std::gcd(c, in(i).constancy[d]);
        r.constancy[d] = c;
      });
    break;
  default:
    // Pure elementwise ops keep the runs of equal values their operands share.
    if (ir::trait(op) == ir::OpTrait::Pure && ir::isElementwise(op.kind())) {
      perDim([&](size_t d) {
        int64_t c = extent(res, int(d));
        for (ir::Value *v : op.operands())
          if (v->type().isBlock())
            c = std::gcd(c, get(v).constancy[d]);
        r.constancy[d] = c;
      });
    }
    break;
  }
  // What the cases above found is of the first result; an op of several results (a loop's,
  // an if's) gives each of another rank its own unknown, not vectors of the first's length.
  for (auto &out : op.results())
    info_[out.get()] = rankOf(out.get()) == rank ? r : AxisInfo::unknown(rankOf(out.get()));
}

} // namespace tritium
