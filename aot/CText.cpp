// C source text for embedded data (CText.h).
#include "aot/CText.h"

#include <cctype>
#include <cstdio>

namespace tritium::aot {

std::string byteArrayBody(const std::string &bytes) {
  static const char *digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 6 + bytes.size() / 16 * 4);
  for (size_t i = 0; i < bytes.size(); ++i) {
    unsigned char b = static_cast<unsigned char>(bytes[i]);
    out += i % 16 == 0 ? "  " : " ";
    out += "0x";
    out += digits[b >> 4];
    out += digits[b & 15];
    out += ',';
    if (i % 16 == 15 || i + 1 == bytes.size())
      out += '\n';
  }
  return out;
}

std::string stringLiteralLines(const std::string &text, const std::string &indent) {
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    size_t end = nl == std::string::npos ? text.size() : nl + 1;
    out += indent + '"';
    for (size_t i = pos; i < end; ++i) {
      unsigned char c = static_cast<unsigned char>(text[i]);
      switch (c) {
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '?': out += "\\?"; break; // no trigraphs, whatever the compiler's mode
      default:
        if (c < 0x20 || c >= 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\%03o", c);
          out += buf;
        } else {
          out += char(c);
        }
      }
    }
    out += "\"\n";
    pos = end;
  }
  if (out.empty())
    out = indent + "\"\"\n";
  return out;
}

bool isCIdentifier(const std::string &name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])))
    return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
      return false;
  return true;
}

} // namespace tritium::aot
