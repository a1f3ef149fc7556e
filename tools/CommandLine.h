// What tritium's command-line tools share: usage errors, integer flags and writing the result.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace tritium::tools {

// Prints "<tool>: <msg>" and a pointer to --help, and exits with status 2.
[[noreturn]] inline void usageError(const char *tool, const std::string &msg) {
  std::fprintf(stderr, "%s: %s\n(run %s --help for usage)\n", tool, msg.c_str(), tool);
  std::exit(2);
}

inline int64_t parseInt(const char *tool, const std::string &flag, const std::string &v) {
  char *end = nullptr;
  errno = 0;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end)
    usageError(tool, flag + " expects an integer, got '" + v + "'");
  if (errno == ERANGE)
    usageError(tool, flag + "=" + v + " is out of range (a 64-bit integer)");
  return x;
}

// For options that become an `int`: values that int cannot hold are refused, not wrapped.
inline int parseInt32(const char *tool, const std::string &flag, const std::string &v) {
  int64_t x = parseInt(tool, flag, v);
  if (x < INT32_MIN || x > INT32_MAX)
    usageError(tool, flag + "=" + v + " is out of range (a 32-bit integer)");
  return int(x);
}

// Writes `text` to `path`, or to standard output when `path` is empty; false on failure.
inline bool writeOutput(const char *tool, const std::string &path, const std::string &text) {
  if (path.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return true;
  }
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) {
    std::fprintf(stderr, "%s: cannot write %s\n", tool, path.c_str());
    return false;
  }
  return true;
}

} // namespace tritium::tools
