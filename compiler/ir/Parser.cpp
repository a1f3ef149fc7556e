// A recursive-descent parser of TIR/GIR text, character by character (shapes such as
// "1024xf32" do not split into tokens cleanly). Whitespace is free except that an op's operands
// stay on its line, and "//" starts a comment, so lit tests can carry RUN lines in .tir files.
// Value names are scoped like the verifier's dominance: a loop body's names end with it.
// Loops nest at most kMaxLoopNesting deep, and a constant's literal must fit its type
// (checkLiteral), so that nothing after the parser sees a stack-breaking or out-of-range input.
#include "compiler/ir/Parser.h"

#include <llvm/ADT/APFloat.h>
#include <llvm/ADT/SmallString.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <unordered_map>

namespace tritium::ir {

namespace {

// The largest {divisibility = N} an argument may claim: the axis analysis treats 2^30 as
// "divisible by anything" (the divisibility of 0).
constexpr int64_t kMaxDivisibility = int64_t(1) << 30;

// The most elements a block type may have, Triton's limit (TRITON_MAX_TENSOR_NUMEL): the
// lowering gives every thread its share of them as separate values.
constexpr int64_t kMaxBlockElements = int64_t(1) << 20;

// An attribute as written: its value, and where and how for messages about it.
struct ParsedAttr {
  std::string key;
  Attr value;
  SourceLoc at;
  std::string text;
};

class Parser {
public:
  Parser(const std::string &text, const std::string &file) : s_(text), file_(file) {}

  std::unique_ptr<Function> run() {
    skip();
    SourceLoc kernelLoc = here();
    expectWord("kernel");
    expect('@', "'@' before the kernel's name");
    std::string name = identifier("the kernel's name");
    auto fn = std::make_unique<Function>(name, kernelLoc);
    expect('(', "'(' to open the kernel's arguments");
    if (!peekIs(')')) {
      do {
        std::string arg = valueName();
        expect(':', "':' after argument " + arg);
        std::optional<Layout> layout;
        Value *v = fn->body().addArgument(type(&layout));
        if (layout)
          v->setLayout(*layout);
        noteLayout(*v, typeAt_);
        define(arg, v);
        if (peekIs('{') && !opensBody(true)) {
          for (const ParsedAttr &a : attrDict()) {
            auto *d = std::get_if<int64_t>(&a.value);
            if (a.key != "divisibility" || !d || *d < 1 || *d > kMaxDivisibility)
              throw UserError::atColumn("only {divisibility = N} (N from 1 to " +
                                            std::to_string(kMaxDivisibility) +
                                            ") may follow an argument's type",
                                        a.at);
            v->setDivisibility(int(*d));
          }
        }
      } while (accept(','));
    }
    expect(')', "')' or ',' in the kernel's arguments");
    if (peekIs('{') && !opensBody(true))
      for (ParsedAttr &a : attrDict())
        fn->setAttr(a.key, std::move(a.value));
    expect('{', "'{' to open the kernel's body");
    parseOps(fn->body());
    expect('}', "'}' to close the kernel's body");
    skip();
    if (pos_ < s_.size())
      fail("expected the end of the input after the kernel");
    return fn;
  }

private:
  // --- characters ---------------------------------------------------------------------------

  [[noreturn]] void fail(const std::string &msg) { throw UserError::atColumn(msg, here()); }

  SourceLoc here() const {
    SourceLoc l;
    l.file = file_;
    l.line = line_;
    l.column = unsigned(pos_ - lineStart_ + 1);
    return l;
  }

  char cur() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }

  void advance() {
    if (cur() == '\n') {
      ++line_;
      lineStart_ = pos_ + 1;
    }
    ++pos_;
  }

  // Skips blanks and comments; newlines too unless `sameLine`.
  void skip(bool sameLine = false) {
    while (pos_ < s_.size()) {
      char c = cur();
      if (c == '\n' && sameLine)
        return;
      if (std::isspace(static_cast<unsigned char>(c))) {
        advance();
      } else if (c == '/' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '/') {
        while (pos_ < s_.size() && cur() != '\n')
          advance();
      } else {
        return;
      }
    }
  }

  bool peekIs(char c, bool sameLine = false) {
    skip(sameLine);
    return cur() == c;
  }

  bool accept(char c) {
    if (!peekIs(c))
      return false;
    advance();
    return true;
  }

  void expect(char c, const std::string &what) {
    if (!accept(c))
      fail("expected " + what + found());
  }

  std::string found() {
    skip();
    if (pos_ >= s_.size())
      return ", found the end of the input";
    size_t end = pos_;
    while (end < s_.size() && end - pos_ < 16 && !std::isspace(static_cast<unsigned char>(s_[end])))
      ++end;
    return ", found '" + s_.substr(pos_, end - pos_) + "'";
  }

  static bool isIdentChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$' ||
           c == '-';
  }

  std::string identifier(const std::string &what) {
    skip();
    size_t start = pos_;
    if (std::isalpha(static_cast<unsigned char>(cur())) || cur() == '_')
      while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(cur())) || cur() == '_'))
        advance();
    if (pos_ == start)
      fail("expected " + what + found());
    return s_.substr(start, pos_ - start);
  }

  void expectWord(const std::string &word) {
    SourceLoc at = (skip(), here());
    size_t save = pos_;
    std::string w = std::isalpha(static_cast<unsigned char>(cur())) ? identifier(word) : "";
    if (w != word) {
      pos_ = save;
      throw UserError::atColumn("expected '" + word + "'" + found(), at);
    }
  }

  int64_t integer(const std::string &what) {
    skip();
    size_t start = pos_;
    if (cur() == '-')
      advance();
    while (std::isdigit(static_cast<unsigned char>(cur())))
      advance();
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s_.data() + start, s_.data() + pos_, v);
    if (ec == std::errc::result_out_of_range) {
      SourceLoc at = here();
      at.column -= unsigned(pos_ - start);
      throw UserError::atColumn("integer literal " + s_.substr(start, pos_ - start) +
                                    " is out of range: integers in the IR are at most 64-bit, "
                                    "from -9223372036854775808 to 9223372036854775807",
                                at);
    }
    if (ec != std::errc() || p != s_.data() + pos_) {
      pos_ = start;
      fail("expected " + what + found());
    }
    return v;
  }

  // --- values ---------------------------------------------------------------------------------

  std::string valueName() {
    skip();
    if (cur() != '%')
      fail("expected a value name such as %0 or %x" + found());
    size_t start = pos_;
    advance();
    while (pos_ < s_.size() && isIdentChar(cur()))
      advance();
    if (pos_ == start + 1)
      fail("expected a name after '%'");
    return s_.substr(start, pos_ - start);
  }

  static std::string lineColumn(const SourceLoc &l) {
    return std::to_string(l.line) + ":" + std::to_string(l.column);
  }

  // Text is TIR (no layouts) or GIR (a layout on every block value), never a mix: layout
  // assignment keeps the layouts it finds, so a value without one beside values with one would
  // reach the lowering unconverted. `at` is where the value's type was written.
  void noteLayout(const Value &v, const SourceLoc &at) {
    if (!v.type().isBlock())
      return;
    std::optional<SourceLoc> &first = v.layout() ? firstWithLayout_ : firstWithout_;
    if (!first)
      first = at;
    if (firstWithLayout_ && firstWithout_)
      throw UserError::atColumn(
          v.layout() ? "a block type with a layout in TIR (the block type at " +
                           lineColumn(*firstWithout_) + " has none): GIR gives every block a layout"
                     : "a block type without a layout in GIR (the block type at " +
                           lineColumn(*firstWithLayout_) + " has one): GIR gives every block a layout",
          at);
  }

  void define(const std::string &name, Value *v) {
    if (values_.count(name))
      fail("value " + name + " is defined twice");
    values_[name] = v;
    if (!scopes_.empty())
      scopes_.back().push_back(name);
    // Numbered names are the printer's; others ("%input_ptr") are kept.
    bool numbered = name.find_first_not_of("0123456789", 1) == std::string::npos;
    if (!numbered)
      v->setName(name.substr(1));
  }

  Value *use() {
    SourceLoc at = (skip(), here());
    std::string name = valueName();
    auto it = values_.find(name);
    if (it == values_.end())
      throw UserError::atColumn("use of undefined value " + name, at);
    return it->second;
  }

  // --- types ----------------------------------------------------------------------------------

  ScalarKind scalarKind() {
    SourceLoc at = (skip(), here());
    size_t save = pos_;
    std::string w = std::isalpha(static_cast<unsigned char>(cur())) ? identifier("a type") : "";
    auto k = parseDtype(w);
    if (!k) {
      pos_ = save;
      throw UserError::atColumn("expected an element type (i1, i32, i64, f16, bf16, f32)" + found(),
                                at);
    }
    return *k;
  }

  Type elementType() {
    skip();
    if (s_.compare(pos_, 4, "ptr<") == 0) {
      pos_ += 3;
      expect('<', "'<'");
      ScalarKind k = scalarKind();
      expect('>', "'>' to close ptr<...>");
      return Type::pointer(k);
    }
    return Type::scalar(scalarKind());
  }

  std::vector<int> intList() {
    std::vector<int> v;
    expect('[', "'[' to open a list");
    do
      v.push_back(int(integer("an integer")));
    while (accept(','));
    expect(']', "']' to close a list");
    return v;
  }

  // #blocked<spt=[..], tpw=[..], wpc=[..][, order=[..]]> or #slice<dim=D, LAYOUT>
  Layout layout(int depth = 0) {
    skip();
    if (s_.compare(pos_, 7, "#slice<") == 0) {
      if (depth >= 8) // a slice removes one of at most 8 dimensions
        fail("slice layouts nest at most 8 deep");
      pos_ += 6;
      expect('<', "'<'");
      expectWord("dim");
      expect('=', "'=' after dim");
      int64_t dim = integer("a dimension");
      expect(',', "',' after the slice's dim");
      Layout parent = layout(depth + 1);
      expect('>', "'>' to close the slice layout");
      if (dim < 0 || dim >= parent.rank())
        fail("the slice's dim " + std::to_string(dim) + " is out of range for its parent " +
             parent.str());
      return Layout::slice(parent, int(dim));
    }
    if (s_.compare(pos_, 9, "#blocked<") != 0)
      fail("expected a layout '#blocked<spt=[..], tpw=[..], wpc=[..]>' or '#slice<dim=.., ..>'" +
           found());
    pos_ += 8;
    expect('<', "'<'");
    std::vector<int> spt, tpw, wpc, order;
    using Field = std::pair<const char *, std::vector<int> *>;
    for (auto [key, field] : {Field{"spt", &spt}, Field{"tpw", &tpw}, Field{"wpc", &wpc}}) {
      if (key != std::string("spt"))
        expect(',', "',' between the layout's fields");
      expectWord(key);
      expect('=', "'=' after " + std::string(key));
      *field = intList();
    }
    if (accept(',')) {
      expectWord("order");
      expect('=', "'=' after order");
      order = intList();
    }
    expect('>', "'>' to close the layout");
    if (tpw.size() != spt.size() || wpc.size() != spt.size() ||
        (!order.empty() && order.size() != spt.size()))
      fail("the layout's spt, tpw, wpc and order lists must have one entry per dimension");
    std::vector<bool> seen(spt.size(), false);
    for (int d : order) {
      if (d < 0 || d >= int(spt.size()) || seen[size_t(d)])
        fail("the layout's order must be a permutation of its dimensions");
      seen[size_t(d)] = true;
    }
    for (size_t d = 0; d < spt.size(); ++d)
      for (int v : {spt[d], tpw[d], wpc[d]})
        if (v < 1 || v > 1024 || (v & (v - 1)))
          fail("the layout's spt, tpw and wpc entries must be powers of two from 1 to 1024");
    int lanes = 1;
    for (int t : tpw)
      lanes *= t;
    if (lanes != 32)
      fail("the layout's tpw entries must multiply to 32 (the lanes of a warp), not " +
           std::to_string(lanes));
    return Layout::blocked(spt, tpw, wpc, order);
  }

  // A type, and for GIR blocks the layout written inside it.
  Type type(std::optional<Layout> *layoutOut = nullptr) {
    skip();
    typeAt_ = here();
    if (s_.compare(pos_, 6, "block<") != 0)
      return elementType();
    pos_ += 5;
    expect('<', "'<'");
    std::vector<int64_t> shape;
    int64_t elements = 1;
    while (std::isdigit(static_cast<unsigned char>((skip(), cur())))) {
      SourceLoc at = here();
      int64_t d = integer("a dimension");
      if (d < 1)
        fail("block dimensions must be positive");
      if (d > kMaxBlockElements / elements)
        throw UserError::atColumn("blocks hold at most " + std::to_string(kMaxBlockElements) +
                                      " elements",
                                  at);
      elements *= d;
      shape.push_back(d);
      if (cur() != 'x')
        fail("expected 'x' after a block dimension" + found());
      advance();
    }
    if (shape.empty())
      fail("expected a block shape such as 1024x" + found());
    Type t = Type::block(elementType(), shape);
    if (accept(',')) {
      Layout l = layout();
      if (l.rank() != t.rank())
        fail("the layout's rank differs from the block's");
      if (layoutOut)
        *layoutOut = l;
    }
    expect('>', "'>' to close block<...>");
    return t;
  }

  // --- attributes -----------------------------------------------------------------------------

  // After '{': a body rather than an attribute dictionary? An op's body opens with "^body"; the
  // kernel's with ops, which never read "name =".
  bool opensBody(bool kernelBody = false) {
    size_t save = pos_, saveLine = line_, saveStart = lineStart_;
    advance(); // '{'
    skip();
    bool body = true;
    if (!kernelBody) {
      body = cur() == '^';
    } else if (cur() == '}') {
      body = false; // "{}": an empty dictionary
    } else if (std::isalpha(static_cast<unsigned char>(cur())) || cur() == '_') {
      while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(cur())) || cur() == '_'))
        advance();
      skip();
      body = cur() != '=';
    }
    pos_ = save;
    line_ = saveLine;
    lineStart_ = saveStart;
    return body;
  }

  Attr attrValue() {
    skip();
    if (cur() == '"') {
      advance();
      std::string v; // \n, \t, \" and \\ as the printer escapes them
      while (pos_ < s_.size() && cur() != '"' && cur() != '\n') {
        if (cur() == '\\') {
          advance();
          char c = pos_ < s_.size() ? cur() : 0;
          if (c != 'n' && c != 't' && c != '"' && c != '\\')
            fail("unknown escape in a string: write \\n, \\t, \\\" or \\\\");
          v += c == 'n' ? '\n' : c == 't' ? '\t' : c;
        } else {
          v += cur();
        }
        advance();
      }
      if (cur() != '"')
        fail("unterminated string");
      advance();
      return v;
    }
    using Special = std::pair<std::string, double>;
    for (const auto &[word, value] : {Special{"nan", std::numeric_limits<double>::quiet_NaN()},
                                      Special{"inf", INFINITY}, Special{"-inf", -INFINITY}}) {
      size_t end = pos_ + word.size();
      if (s_.compare(pos_, word.size(), word) == 0 && !(end < s_.size() && isIdentChar(s_[end]))) {
        pos_ = end;
        return value;
      }
    }
    size_t start = pos_, end = pos_;
    bool isFloat = false;
    while (end < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[end])) ||
                               std::string("-+.eE").find(s_[end]) != std::string::npos)) {
      isFloat |= std::string(".eE").find(s_[end]) != std::string::npos;
      ++end;
    }
    if (isFloat) {
      double d = 0;
      auto [p, ec] = std::from_chars(s_.data() + start, s_.data() + end, d);
      if (ec == std::errc::result_out_of_range && p == s_.data() + end)
        fail("float literal " + s_.substr(start, end - start) +
             " is out of the range of a 64-bit float");
      if (ec != std::errc() || p != s_.data() + end)
        fail("expected a number" + found());
      pos_ = end;
      return d;
    }
    return integer("an attribute value (integer, float or \"string\")");
  }

  std::vector<ParsedAttr> attrDict() {
    std::vector<ParsedAttr> attrs;
    expect('{', "'{'");
    if (accept('}'))
      return attrs;
    do {
      std::string key = identifier("an attribute name");
      expect('=', "'=' after attribute " + key);
      SourceLoc at = (skip(), here());
      size_t start = pos_;
      Attr value = attrValue();
      attrs.push_back({key, std::move(value), at, s_.substr(start, pos_ - start)});
    } while (accept(','));
    expect('}', "'}' or ',' in the attribute list");
    return attrs;
  }

  // --- ops ------------------------------------------------------------------------------------

  void parseOps(Block &block) {
    while (!peekIs('}') && pos_ < s_.size())
      parseOp(block);
  }

  void parseOp(Block &block) {
    SourceLoc opStart = (skip(), here());
    std::vector<std::pair<std::string, SourceLoc>> results;
    if (cur() == '%') {
      do {
        SourceLoc at = (skip(), here());
        results.emplace_back(valueName(), at);
      } while (accept(','));
      expect('=', "'=' after the op's results");
    }
    SourceLoc mnemonicLoc = (skip(), here());
    std::string word;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(cur())) || cur() == '_'))
      advance(), word.push_back(s_[pos_ - 1]);
    if (word.empty())
      fail("expected an op" + found());
    std::optional<OpKind> kind = parseMnemonic(word);
    if (!kind)
      throw UserError::atColumn("unknown op '" + word + "'", mnemonicLoc);

    std::vector<Value *> operands;
    if (peekIs('%', /*sameLine=*/true)) {
      do
        operands.push_back(use());
      while (accept(','));
    }
    std::vector<ParsedAttr> attrs;
    if (peekIs('{', true) && !opensBody())
      attrs = attrDict();
    std::vector<Type> types;
    std::vector<std::optional<Layout>> layouts;
    std::vector<SourceLoc> typeLocs;
    if (!results.empty()) {
      expect(':', "':' and the result types of '" + word + "'");
      do {
        layouts.emplace_back();
        types.push_back(type(&layouts.back()));
        typeLocs.push_back(typeAt_);
      } while (accept(','));
      if (types.size() != results.size())
        throw UserError::atColumn("'" + word + "' has " + std::to_string(results.size()) +
                                      " result(s) but " + std::to_string(types.size()) + " type(s)",
                                  opStart);
    }
    if (*kind == OpKind::Constant && types.size() == 1)
      for (const ParsedAttr &a : attrs)
        if (a.key == "value")
          checkLiteral(a, types[0]);
    SourceLoc loc;
    skip(true);
    if (s_.compare(pos_, 4, "loc(") == 0)
      loc = location();

    auto op = std::make_unique<Op>(*kind, operands, types, loc);
    op->setParentBlock(&block);
    for (ParsedAttr &a : attrs)
      op->setAttr(a.key, std::move(a.value));
    for (size_t i = 0; i < layouts.size(); ++i) {
      if (layouts[i])
        op->result(unsigned(i))->setLayout(*layouts[i]);
      noteLayout(*op->result(unsigned(i)), typeLocs[i]);
    }
    Op *raw = op.get();
    block.ops().push_back(std::move(op));

    unsigned regions = *kind == OpKind::For || *kind == OpKind::Reduce || *kind == OpKind::Scan
                           ? 1
                       : *kind == OpKind::If || *kind == OpKind::While ? 2
                                                                         : 0;
    if (regions && depth_ == kMaxLoopNesting) // regions of any op count as nesting
      throw UserError::atColumn("'" + word + "' nested " + std::to_string(depth_ + 1) +
                                    " deep: loops nest at most " +
                                    std::to_string(kMaxLoopNesting) + " deep",
                                mnemonicLoc);
    ++depth_;
    for (unsigned r = 0; r < regions; ++r) {
      if (!peekIs('{', true))
        fail("expected '{' and region " + std::to_string(r + 1) + " of " +
             std::to_string(regions) + " of '" + word + "'" + found());
      parseBody(*raw);
    }
    --depth_;
    if (peekIs('{', true))
      fail(regions ? "'" + word + "' has " + std::to_string(regions) + " region(s), not more"
                   : "'" + word + "' has no body");
    // Results become visible after the op (and its body).
    for (size_t i = 0; i < results.size(); ++i) {
      if (values_.count(results[i].first))
        throw UserError::atColumn("value " + results[i].first + " is defined twice",
                                  results[i].second);
      define(results[i].first, raw->result(unsigned(i)));
    }
  }

  void parseBody(Op &op) {
    expect('{', "'{'");
    skip();
    if (s_.compare(pos_, 5, "^body") != 0)
      fail("expected '^body(...):' to open the body" + found());
    pos_ += 5;
    Block *body = op.createRegion();
    scopes_.emplace_back();
    expect('(', "'(' after ^body");
    if (!peekIs(')')) {
      do {
        std::string name = valueName();
        expect(':', "':' after " + name);
        std::optional<Layout> layout;
        Value *v = body->addArgument(type(&layout));
        if (layout)
          v->setLayout(*layout);
        noteLayout(*v, typeAt_);
        define(name, v);
      } while (accept(','));
    }
    expect(')', "')' or ',' in the body's arguments");
    expect(':', "':' after the body's arguments");
    parseOps(*body);
    expect('}', "'}' to close the body");
    for (const std::string &name : scopes_.back())
      values_.erase(name);
    scopes_.pop_back();
  }

  // A constant's literal must be a value of its type: for integers the range literalRange
  // gives (the DSL's rule: i8 -128 to 127, u8 -128 to 255, i32's and u32's likewise, any
  // 64-bit integer for i64 and u64), and for floats a number that does not round to infinity in the
  // type (inf, -inf and nan, as the printer writes them, stay allowed).
  void checkLiteral(const ParsedAttr &a, const Type &type) {
    if (type.isPtr())
      return; // the verifier rejects pointer constants
    ScalarKind k = type.kind();
    std::string name = irName(k);
    auto bad = [&](const std::string &why) {
      throw UserError::atColumn("literal " + a.text + " " + why, a.at);
    };
    if (type.isInt() || type.isBool()) {
      auto *i = std::get_if<int64_t>(&a.value);
      if (!i)
        bad("is not an integer, as a constant of type " + name + " needs");
      auto [lo, hi] = literalRange(k);
      if (!literalFits(*i, k))
        bad("is out of range for " + name + " (" + std::to_string(lo) + " to " +
            std::to_string(hi) + ")");
      return;
    }
    auto *s = std::get_if<std::string>(&a.value);
    if (s)
      bad("is not a number, as a constant of type " + name + " needs");
    double d = std::holds_alternative<double>(a.value) ? std::get<double>(a.value)
                                                       : double(std::get<int64_t>(a.value));
    if (!std::isfinite(d))
      return;
    const llvm::fltSemantics &sem = k == ScalarKind::F16    ? llvm::APFloat::IEEEhalf()
                                    : k == ScalarKind::BF16 ? llvm::APFloat::BFloat()
                                                            : llvm::APFloat::IEEEsingle();
    llvm::APFloat f(d);
    bool lost = false;
    if (f.convert(sem, llvm::APFloat::rmNearestTiesToEven, &lost) & llvm::APFloat::opOverflow) {
      llvm::SmallString<16> max;
      llvm::APFloat::getLargest(sem).toString(max);
      bad("overflows " + name + " (finite values are at most " + std::string(max) +
          " in magnitude; write inf or -inf for infinities)");
    }
  }

  SourceLoc location() {
    pos_ += 3;
    expect('(', "'('");
    skip();
    if (cur() != '"')
      fail("expected a quoted \"file:line\" in loc(...)" + found());
    Attr a = attrValue();
    const std::string &text = std::get<std::string>(a);
    size_t colon = text.rfind(':');
    SourceLoc loc;
    unsigned line = 0;
    if (colon != std::string::npos) {
      auto [p, ec] = std::from_chars(text.data() + colon + 1, text.data() + text.size(), line);
      if (ec != std::errc() || p != text.data() + text.size())
        line = 0;
    }
    if (line == 0)
      fail("expected \"file:line\" in loc(...), got \"" + text + "\"");
    loc.file = text.substr(0, colon);
    loc.line = line;
    expect(')', "')' to close loc(...)");
    return loc;
  }

  const std::string &s_;
  const std::string &file_;
  size_t pos_ = 0;
  unsigned line_ = 1;
  size_t lineStart_ = 0;
  std::unordered_map<std::string, Value *> values_;
  std::vector<std::vector<std::string>> scopes_;
  int depth_ = 0; // loop bodies open around the current op
  SourceLoc typeAt_;                          // where the last type() began
  std::optional<SourceLoc> firstWithLayout_, firstWithout_; // block types, for noteLayout
};

} // namespace

std::unique_ptr<Function> parseTIR(const std::string &text, const std::string &fileName) {
  return Parser(text, fileName).run();
}

} // namespace tritium::ir
