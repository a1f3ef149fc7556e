// Construction and attribute access for TIR nodes.
#include "compiler/ir/IR.h"

#include <charconv>

namespace tritium::ir {

namespace {
struct OpInfo {
  const char *mnemonic;
  OpTrait trait;
};
constexpr OpInfo kOpInfo[] = {
#define OP(kind, mnemonic, trait) {mnemonic, OpTrait::trait},
#include "compiler/ir/Ops.def"
};
} // namespace

const char *mnemonic(OpKind k) { return kOpInfo[static_cast<int>(k)].mnemonic; }
OpTrait trait(OpKind k) { return kOpInfo[static_cast<int>(k)].trait; }

namespace {
struct MathInfo {
  const char *name;
  int arity;
  bool ints;
};
constexpr MathInfo kMathInfo[] = {
#define MATH(name, text, arity, ints) {text, arity, ints},
#include "compiler/ir/MathFunctions.def"
};
} // namespace

const char *mathName(MathFn f) { return kMathInfo[int(f)].name; }
int mathArity(MathFn f) { return kMathInfo[int(f)].arity; }
bool mathAcceptsIntegers(MathFn f) { return kMathInfo[int(f)].ints; }
std::optional<MathFn> parseMathFn(const std::string &name) {
  for (size_t i = 0; i < std::size(kMathInfo); ++i)
    if (name == kMathInfo[i].name)
      return MathFn(i);
  return std::nullopt;
}

bool isElementwise(OpKind k) {
  switch (k) {
  case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div: case OpKind::Rem:
  case OpKind::Minimum: case OpKind::Maximum: case OpKind::And: case OpKind::Or:
  case OpKind::Xor: case OpKind::Shl: case OpKind::Shr: case OpKind::Not: case OpKind::UMulHi:
  case OpKind::Bitcast: case OpKind::Hint: case OpKind::Cmp: case OpKind::Select: case OpKind::Neg: case OpKind::Exp: case OpKind::Cast:
  case OpKind::AddPtr: case OpKind::Math: case OpKind::InlineAsm:
    return true;
  default:
    return false;
  }
}

std::optional<OpKind> parseMnemonic(const std::string &s) {
  for (size_t i = 0; i < std::size(kOpInfo); ++i)
    if (s == kOpInfo[i].mnemonic)
      return static_cast<OpKind>(i);
  return std::nullopt;
}

std::string formatOrder(const std::vector<int64_t> &order) {
  std::string s;
  for (size_t i = 0; i < order.size(); ++i)
    s += (i ? "," : "") + std::to_string(order[i]);
  return s;
}

std::vector<int64_t> parseOrder(const std::string &text) {
  std::vector<int64_t> order;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string::npos)
      end = text.size();
    std::string item = text.substr(pos, end - pos);
    if (item.empty() || item.size() > 2 || item.find_first_not_of("0123456789") != std::string::npos)
      return {};
    order.push_back(std::stoll(item));
    pos = end + 1;
  }
  // A permutation of 0 .. n-1.
  std::vector<bool> seen(order.size(), false);
  for (int64_t d : order) {
    if (d >= int64_t(order.size()) || seen[size_t(d)])
      return {};
    seen[size_t(d)] = true;
  }
  return order;
}

std::vector<int64_t> parseIntList(const std::string &text) {
  std::vector<int64_t> values;
  const char *p = text.data(), *end = text.data() + text.size();
  while (true) {
    int64_t v = 0;
    auto [next, ec] = std::from_chars(p, end, v);
    if (ec != std::errc())
      return {};
    values.push_back(v);
    if (next == end)
      return values;
    if (*next != ',')
      return {};
    p = next + 1;
  }
}

Value *Block::addArgument(Type type, std::string name) {
  args_.push_back(std::make_unique<Value>(std::move(type), nullptr, this,
                                          static_cast<unsigned>(args_.size())));
  args_.back()->setName(std::move(name));
  return args_.back().get();
}

Op::Op(OpKind kind, std::vector<Value *> operands, const std::vector<Type> &resultTypes,
       SourceLoc loc)
    : kind_(kind), operands_(std::move(operands)), loc_(std::move(loc)) {
  for (const Type &t : resultTypes)
    results_.push_back(
        std::make_unique<Value>(t, this, nullptr, static_cast<unsigned>(results_.size())));
}

static Attr *findAttr(std::vector<std::pair<std::string, Attr>> &attrs, const std::string &name) {
  for (auto &[n, v] : attrs)
    if (n == name)
      return &v;
  return nullptr;
}

void Op::setAttr(const std::string &name, Attr value) {
  if (Attr *a = findAttr(attrs_, name))
    *a = std::move(value);
  else
    attrs_.emplace_back(name, std::move(value));
}

bool Op::hasAttr(const std::string &name) const {
  for (auto &[n, v] : attrs_)
    if (n == name)
      return true;
  return false;
}

const Attr &Op::attr(const std::string &name) const {
  for (auto &[n, v] : attrs_)
    if (n == name)
      return v;
  internalError(std::string("op '") + this->name() + "' has no attribute '" + name + "'");
}

OpTrait trait(const Op &op) {
  if (op.kind() == OpKind::InlineAsm && op.hasAttr("pure"))
    if (const int64_t *pure = std::get_if<int64_t>(&op.attr("pure")); pure && *pure == 1)
      return OpTrait::Pure;
  return trait(op.kind());
}

int64_t Op::intAttr(const std::string &name) const {
  const Attr &a = attr(name);
  if (auto *i = std::get_if<int64_t>(&a))
    return *i;
  internalError(std::string("attribute '") + name + "' of '" + this->name() + "' is not an int");
}

double Op::floatAttr(const std::string &name) const {
  const Attr &a = attr(name);
  if (auto *f = std::get_if<double>(&a))
    return *f;
  if (auto *i = std::get_if<int64_t>(&a))
    return static_cast<double>(*i);
  internalError(std::string("attribute '") + name + "' of '" + this->name() + "' is not a number");
}

const std::string &Op::strAttr(const std::string &name) const {
  const Attr &a = attr(name);
  if (auto *s = std::get_if<std::string>(&a))
    return *s;
  internalError(std::string("attribute '") + name + "' of '" + this->name() + "' is not a string");
}

Value *Op::addResult(Type type) {
  results_.push_back(
      std::make_unique<Value>(std::move(type), this, nullptr, unsigned(results_.size())));
  return results_.back().get();
}

void replaceUsesIn(Block &block, const Value *from, Value *to) {
  walk(block, [&](Op &op) {
    for (unsigned i = 0; i < op.numOperands(); ++i)
      if (op.operand(i) == from)
        op.setOperand(i, to);
  });
}

Block *Op::createRegion() {
  regions_.push_back(std::make_unique<Block>(this));
  return regions_.back().get();
}

void Function::setAttr(const std::string &name, Attr value) {
  if (Attr *a = findAttr(attrs_, name))
    *a = std::move(value);
  else
    attrs_.emplace_back(name, std::move(value));
}

std::optional<int64_t> Function::intAttr(const std::string &name) const {
  for (auto &[n, v] : attrs_)
    if (n == name)
      if (auto *i = std::get_if<int64_t>(&v))
        return *i;
  return std::nullopt;
}

} // namespace tritium::ir
