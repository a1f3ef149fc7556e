// Writing data as C source text that stays stable and diffable: byte arrays in fixed columns,
// text as one string literal per line, and comment-safe text.
#pragma once

#include <string>

namespace tritium::aot {

// "  0x7f, 0x45, ...,\n": 16 bytes per line, every line the same width but the last.
std::string byteArrayBody(const std::string &bytes);
// The text as adjacent string literals, one per line of the text ("...\n"), each indented by
// `indent`; quotes, backslashes and control characters escaped.
std::string stringLiteralLines(const std::string &text, const std::string &indent);
// Whether `name` is a C identifier (letters, digits, underscores, not starting with a digit).
bool isCIdentifier(const std::string &name);

} // namespace tritium::aot
