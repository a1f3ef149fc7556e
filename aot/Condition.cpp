// Size-bucket conditions of ahead-of-time variants: parsed from "ARG OP INTEGER".
#include "aot/Aot.h"

#include "compiler/support/Error.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace tritium::aot {

namespace {

std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

bool isIdentifier(const std::string &s) {
  if (s.empty() || !(std::isalpha((unsigned char)s[0]) || s[0] == '_'))
    return false;
  for (char c : s)
    if (!(std::isalnum((unsigned char)c) || c == '_'))
      return false;
  return true;
}

} // namespace

Condition Condition::parse(const std::string &text) {
  auto bad = [&](const std::string &why) {
    return UserError("condition '" + text + "': " + why +
                     "; write ARG OP INTEGER with OP one of <= < >= > == !=, e.g. n_cols<=1024");
  };
  size_t at = text.find_first_of("<>=!");
  if (at == std::string::npos)
    throw bad("no comparison");
  size_t len = at + 1 < text.size() && text[at + 1] == '=' ? 2 : 1;
  Condition c;
  c.arg = trim(text.substr(0, at));
  c.op = text.substr(at, len);
  if (c.op == "=" || c.op == "!")
    throw bad("'" + c.op + "' is not a comparison");
  if (!isIdentifier(c.arg))
    throw bad("'" + c.arg + "' is not an argument name");
  std::string number = trim(text.substr(at + len));
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(number.c_str(), &end, 10);
  if (number.empty() || *end || errno == ERANGE)
    throw bad("'" + number + "' is not a 64-bit integer");
  c.value = v;
  return c;
}

std::string Condition::str() const { return arg + " " + op + " " + std::to_string(value); }

const char *gridRuleName(GridRule rule) {
  return rule == GridRule::Persistent ? "persistent" : "per_program";
}

} // namespace tritium::aot
