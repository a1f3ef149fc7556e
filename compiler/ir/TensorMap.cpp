#include "compiler/ir/TensorMap.h"

#include "compiler/support/Error.h"

#include <cmath>
#include <sstream>
#include <variant>

namespace tritium::ir {

int64_t tensorRank(const Op &op) {
  bool carries = op.kind() == OpKind::Load || op.kind() == OpKind::Store ||
                 op.kind() == OpKind::AtomicRMW || op.kind() == OpKind::TensorStore;
  if (!carries || !op.hasAttr("tensor_rank"))
    return 0;
  return op.intAttr("tensor_rank");
}

unsigned tensorScalarsStart(const Op &op) { return op.kind() == OpKind::TensorStore ? 1 : 3; }

Value *tensorBase(const Op &op) { return op.operand(tensorScalarsStart(op)); }
Value *tensorShape(const Op &op, int64_t d) {
  return op.operand(unsigned(tensorScalarsStart(op) + 1 + d));
}
Value *tensorStride(const Op &op, int64_t d) {
  return op.operand(unsigned(tensorScalarsStart(op) + 1 + tensorRank(op) + d));
}
Value *tensorOffset(const Op &op, int64_t d) {
  return op.operand(unsigned(tensorScalarsStart(op) + 1 + 2 * tensorRank(op) + d));
}

bool hasMask(const Op &op) { return op.kind() != OpKind::TensorStore && op.numOperands() >= 3; }

bool isPositiveZero(const Value *v) {
  const Op *def = v->definingOp();
  if (def && def->kind() == OpKind::Splat)
    return isPositiveZero(def->operand(0));
  if (!def || def->kind() != OpKind::Constant)
    return false;
  const Attr &a = def->attr("value");
  if (std::holds_alternative<int64_t>(a))
    return std::get<int64_t>(a) == 0;
  return std::holds_alternative<double>(a) && std::get<double>(a) == 0.0 &&
         !std::signbit(std::get<double>(a));
}

bool tensorCopyReads(const Op &op, unsigned index) {
  if (op.kind() == OpKind::TensorStore) // all of them (codegen/LowerTensorStore.cpp)
    return true;
  int64_t rank = tensorRank(op);
  unsigned offsets = unsigned(4 + 2 * rank);
  if (index >= offsets && index < offsets + unsigned(rank))
    return true;
  return (index == 1 || index == 2) && !isPositiveZero(op.operand(2));
}

std::string TensorMapTerm::str() const {
  if (arg < 0)
    return std::to_string(scale / divisor);
  std::string s = "a" + std::to_string(arg);
  if (scale != 1)
    s += "*" + std::to_string(scale);
  if (divisor != 1)
    s += "/" + std::to_string(divisor);
  return s;
}

namespace {

std::string join(const std::vector<std::string> &parts) {
  std::string s;
  for (const std::string &p : parts)
    s += (s.empty() ? "" : ",") + p;
  return s;
}

template <typename T> std::string joinTerms(const std::vector<T> &xs) {
  std::vector<std::string> parts;
  for (const T &x : xs) {
    if constexpr (std::is_same_v<T, TensorMapTerm>)
      parts.push_back(x.str());
    else
      parts.push_back(std::to_string(x));
  }
  return join(parts);
}

std::optional<int64_t> parseInt(const std::string &s) {
  if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::stoll(s);
}

std::optional<TensorMapTerm> parseTerm(const std::string &s) {
  TensorMapTerm t;
  if (s.empty() || s[0] != 'a') {
    std::optional<int64_t> c = parseInt(s);
    if (!c)
      return std::nullopt;
    t.scale = *c;
    return t;
  }
  size_t end = s.find_first_of("*/", 1);
  std::optional<int64_t> arg = parseInt(s.substr(1, end - 1));
  if (!arg || *arg > 1000)
    return std::nullopt;
  t.arg = int(*arg);
  while (end != std::string::npos) {
    char sign = s[end];
    size_t next = s.find_first_of("*/", end + 1);
    std::optional<int64_t> v = parseInt(s.substr(end + 1, next - end - 1));
    if (!v || *v == 0)
      return std::nullopt;
    (sign == '*' ? t.scale : t.divisor) = *v;
    end = next;
  }
  return t;
}

std::vector<std::string> splitOn(const std::string &s, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep))
    parts.push_back(part);
  return parts;
}

std::optional<TensorMapRecipe> parseRecipe(const std::string &line) {
  std::vector<std::string> fields = splitOn(line, ' ');
  if (fields.size() != 6 || fields[1].empty() || fields[1][0] != 'a')
    return std::nullopt;
  TensorMapRecipe r;
  std::optional<ScalarKind> k = parseDtype(fields[0]);
  std::optional<int64_t> base = parseInt(fields[1].substr(1));
  if (!k || !base)
    return std::nullopt;
  r.dtype = *k;
  r.baseArg = int(*base);
  auto value = [&](const std::string &field, const char *key) -> std::optional<std::string> {
    std::string prefix = std::string(key) + "=";
    if (field.compare(0, prefix.size(), prefix) != 0)
      return std::nullopt;
    return field.substr(prefix.size());
  };
  auto dims = value(fields[2], "dims"), strides = value(fields[3], "strides"),
       box = value(fields[4], "box"), swizzle = value(fields[5], "swizzle");
  if (!dims || !strides || !box || !swizzle)
    return std::nullopt;
  for (const std::string &t : splitOn(*dims, ','))
    if (auto term = parseTerm(t))
      r.dims.push_back(*term);
    else
      return std::nullopt;
  for (const std::string &t : splitOn(*strides, ','))
    if (auto term = parseTerm(t))
      r.strides.push_back(*term);
    else
      return std::nullopt;
  for (const std::string &t : splitOn(*box, ','))
    if (auto v = parseInt(t))
      r.box.push_back(*v);
    else
      return std::nullopt;
  std::optional<int64_t> s = parseInt(*swizzle);
  if (!s || r.dims.empty() || r.dims.size() > 5 || r.strides.size() + 1 != r.dims.size() ||
      r.box.size() != r.dims.size())
    return std::nullopt;
  r.swizzle = *s;
  return r;
}

} // namespace

std::string TensorMapRecipe::str() const {
  return dtypeName(dtype) + " a" + std::to_string(baseArg) + " dims=" + joinTerms(dims) +
         " strides=" + joinTerms(strides) + " box=" + joinTerms(box) +
         " swizzle=" + std::to_string(swizzle);
}

std::string printTensorMaps(const std::vector<TensorMapRecipe> &maps) {
  std::string s;
  for (const TensorMapRecipe &m : maps)
    s += (s.empty() ? "" : "; ") + m.str();
  return s;
}

std::optional<std::vector<TensorMapRecipe>> parseTensorMaps(const std::string &text) {
  std::vector<TensorMapRecipe> maps;
  for (std::string line : splitOn(text, ';')) {
    line.erase(0, line.find_first_not_of(' '));
    if (line.empty())
      continue;
    std::optional<TensorMapRecipe> r = parseRecipe(line);
    if (!r)
      return std::nullopt;
    maps.push_back(*r);
  }
  return maps;
}

std::vector<TensorMapRecipe> tensorMapsOf(const Function &fn) {
  for (const auto &[name, value] : fn.attrs()) {
    if (name != "tensor_maps")
      continue;
    const std::string *text = std::get_if<std::string>(&value);
    std::optional<std::vector<TensorMapRecipe>> maps =
        text ? parseTensorMaps(*text) : std::nullopt;
    if (!maps)
      internalError("malformed {tensor_maps} on kernel '" + fn.name() + "'");
    return *maps;
  }
  return {};
}

} // namespace tritium::ir
