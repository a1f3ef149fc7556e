// Formatting of user and internal errors.
#include "compiler/support/Error.h"

#include <filesystem>

namespace tritium {

std::string SourceLoc::str() const {
  if (!known())
    return "<unknown>";
  return std::filesystem::path(file).filename().string() + ":" + std::to_string(line);
}

UserError::UserError(const std::string &message, const SourceLoc &loc)
    : std::runtime_error(loc.known() ? loc.str() + ": error: " + message : "error: " + message),
      loc_(loc) {}

UserError::UserError(const std::string &message) : std::runtime_error("error: " + message) {}

UserError UserError::atColumn(const std::string &message, const SourceLoc &loc) {
  return UserError(loc.file + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.column) +
                       ": error: " + message,
                   loc, true);
}

void userError(const std::string &message, const SourceLoc &loc) { throw UserError(message, loc); }

void internalError(const std::string &message) {
  throw InternalError("tritium internal error: " + message);
}

} // namespace tritium
