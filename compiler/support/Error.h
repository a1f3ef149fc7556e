// Two error channels, as Halide has: a UserError is the kernel author's mistake and names their
// file:line; an InternalError is a tritium bug and carries whatever IR helps to find it.
#pragma once

#include <source_location>
#include <stdexcept>
#include <string>

namespace tritium {

// Where in the user's DSL code an op was traced. Kept as plain data so IR can copy it freely.
struct SourceLoc {
  std::string file;
  unsigned line = 0;
  unsigned column = 0;

  SourceLoc() = default;
  SourceLoc(const std::source_location &loc)
      : file(loc.file_name()), line(loc.line()), column(loc.column()) {}
  bool known() const { return line != 0; }
  // "softmax.cpp:12" (the base name keeps dumps readable and stable across checkouts).
  std::string str() const;
};

class UserError : public std::runtime_error {
public:
  UserError(const std::string &message, const SourceLoc &loc);
  explicit UserError(const std::string &message); // for mistakes without a DSL location (launch)
  // For mistakes in text inputs (TIR files): "file:line:column: error: message".
  static UserError atColumn(const std::string &message, const SourceLoc &loc);
  const SourceLoc &where() const { return loc_; }

private:
  UserError(const std::string &what, SourceLoc loc, bool) : std::runtime_error(what), loc_(loc) {}
  SourceLoc loc_;
};

class InternalError : public std::logic_error {
public:
  explicit InternalError(const std::string &message) : std::logic_error(message) {}
};

[[noreturn]] void userError(const std::string &message, const SourceLoc &loc);
[[noreturn]] void internalError(const std::string &message);

} // namespace tritium
