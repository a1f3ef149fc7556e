// Prints TIR/GIR in an MLIR-like generic form:
//   %3 = add %1, %2 : block<1024xi32>  loc("softmax.cpp:21")
// Results are numbered in program order; block arguments print with their names.
#include "compiler/ir/Printer.h"

#include <charconv>
#include <cmath>
#include <unordered_map>

namespace tritium::ir {

std::string formatAttr(const Attr &a) {
  if (auto *i = std::get_if<int64_t>(&a))
    return std::to_string(*i);
  if (auto *s = std::get_if<std::string>(&a)) {
    // One line, parsed back by Parser.cpp: an inline asm's newlines and quotes escaped.
    std::string out = "\"";
    for (char c : *s)
      out += c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '"' ? "\\\"" : c == '\\' ? "\\\\" : std::string(1, c);
    return out + "\"";
  }
  double d = std::get<double>(a);
  if (std::isnan(d))
    return "nan";
  if (std::isinf(d))
    return d < 0 ? "-inf" : "inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d); // shortest exact round-trip form
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0"; // keep floats recognisable as floats
  return s;
}

namespace {

class Printer {
public:
  Printer(const PrintOptions &o) : opts_(o) {}

  std::string run(const Function &fn) {
    out_ += "kernel @" + fn.name() + "(";
    const Block &body = fn.body();
    for (size_t i = 0; i < body.arguments().size(); ++i) {
      Value *arg = body.argument(static_cast<unsigned>(i));
      out_ += (i ? ", " : "") + name(arg) + ": " + type(arg);
      if (arg->divisibility() > 1)
        out_ += " {divisibility = " + std::to_string(arg->divisibility()) + "}";
    }
    out_ += ")";
    printAttrs(fn.attrs());
    out_ += " {\n";
    printBlock(body, 1);
    out_ += "}\n";
    return out_;
  }

private:
  std::string name(const Value *v) {
    auto it = names_.find(v);
    if (it != names_.end())
      return it->second;
    std::string n = !v->name().empty() ? "%" + v->name() : "%" + std::to_string(next_++);
    names_[v] = n;
    return n;
  }

  std::string type(const Value *v) {
    std::string t = v->type().str();
    if (v->layout() && v->type().isBlock())
      t.insert(t.size() - 1, ", " + v->layout()->str());
    return t;
  }

  void printAttrs(const std::vector<std::pair<std::string, Attr>> &attrs) {
    if (attrs.empty())
      return;
    out_ += " {";
    for (size_t i = 0; i < attrs.size(); ++i)
      out_ += (i ? ", " : "") + attrs[i].first + " = " + formatAttr(attrs[i].second);
    out_ += "}";
  }

  void printBlock(const Block &block, int depth) {
    std::string indent(2 * depth, ' ');
    if (block.parentOp()) {
      out_ += indent.substr(2) + "^body(";
      for (size_t i = 0; i < block.arguments().size(); ++i) {
        Value *arg = block.argument(static_cast<unsigned>(i));
        out_ += (i ? ", " : "") + name(arg) + ": " + type(arg);
      }
      out_ += "):\n";
    }
    for (const auto &op : block.ops())
      printOp(*op, depth);
  }

  void printOp(const Op &op, int depth) {
    std::string indent(2 * depth, ' ');
    out_ += indent;
    for (unsigned i = 0; i < op.numResults(); ++i)
      out_ += (i ? ", " : "") + name(op.result(i));
    if (op.numResults())
      out_ += " = ";
    out_ += op.name();
    for (unsigned i = 0; i < op.numOperands(); ++i)
      out_ += (i ? ", " : " ") + name(op.operand(i));
    printAttrs(op.attrs());
    if (op.numResults()) {
      out_ += " : ";
      for (unsigned i = 0; i < op.numResults(); ++i)
        out_ += (i ? ", " : "") + type(op.result(i));
    }
    if (opts_.locations && op.loc().known())
      out_ += "  loc(\"" + op.loc().str() + "\")";
    for (unsigned r = 0; r < op.numRegions(); ++r) { // "{ ^body(...): ... } { ... }"
      out_ += " {\n";
      printBlock(*op.region(r), depth + 1);
      out_ += indent + "}";
    }
    out_ += "\n";
  }

  const PrintOptions &opts_;
  std::string out_;
  std::unordered_map<const Value *, std::string> names_;
  unsigned next_ = 0;
};

} // namespace

std::string print(const Function &fn, const PrintOptions &options) {
  return Printer(options).run(fn);
}

} // namespace tritium::ir
