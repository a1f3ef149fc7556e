// The rules of inline_asm: registers per element type and pack, the constraint string, and the
// asm's operand references (LLVM stops the process on a $ that names no operand, so they are
// checked before it sees them).
#include "compiler/ir/InlineAsmRules.h"

#include <algorithm>
#include <bit>
#include <cctype>

namespace tritium::ir {

int asmElementsPerRegister(const Type &element, int64_t pack) {
  if (element.isPtr() || element.isBool())
    return 1;
  int bits = bitWidth(element.kind());
  return bits < 32 ? int(std::min<int64_t>(32 / bits, pack)) : 1;
}

int asmRegisterBits(const Type &element, int64_t pack) {
  if (element.isPtr())
    return 64;
  return asmElementsPerRegister(element, pack) * bitWidth(element.kind());
}

std::vector<AsmConstraint> parseAsmConstraints(const std::string &constraints) {
  std::vector<AsmConstraint> out;
  size_t start = 0;
  while (true) {
    size_t comma = constraints.find(',', start);
    std::string entry = constraints.substr(start, comma == std::string::npos ? std::string::npos
                                                                             : comma - start);
    entry.erase(std::remove_if(entry.begin(), entry.end(),
                               [](unsigned char c) { return std::isspace(c); }),
                entry.end());
    AsmConstraint c;
    size_t at = 0;
    if (at < entry.size() && entry[at] == '=') {
      c.output = true;
      ++at;
      if (at < entry.size() && entry[at] == '&') {
        c.earlyClobber = true;
        ++at;
      }
    }
    if (at + 1 == entry.size() && std::string("hrlfd").find(entry[at]) != std::string::npos)
      c.letter = entry[at];
    out.push_back(c);
    if (comma == std::string::npos)
      return out;
    start = comma + 1;
  }
}

namespace {

// The letters that fit a register of `bits` holding `element`.
std::string fittingLetters(const Type &element, int bits) {
  switch (bits) {
  case 8:
    return "h or r (widened)";
  case 16:
    return "h";
  case 32:
    return element.kind() == ScalarKind::F32 && !element.isPtr() ? "r or f" : "r";
  default:
    return "l";
  }
}

bool fits(char letter, const Type &element, int bits) {
  switch (letter) {
  case 'h':
    return bits == 16 || bits == 8;
  case 'r':
    return bits == 32 || bits == 8;
  case 'l':
    return bits == 64;
  case 'f':
    return bits == 32 && !element.isPtr() && element.kind() == ScalarKind::F32;
  default: // d: an f64, which no tritium element is
    return false;
  }
}

std::string typeList(const std::vector<Type> &types) {
  std::string s;
  for (size_t i = 0; i < types.size(); ++i)
    s += (i ? ", " : "") + types[i].str();
  return s;
}

// Why the asm's $ references are not all operands 0 .. operands-1, or "".
std::string referenceError(const std::string &asmText, int64_t operands) {
  std::string range = operands ? "$0 .. $" + std::to_string(operands - 1) : "none";
  for (size_t i = 0; i < asmText.size(); ++i) {
    if (asmText[i] != '$')
      continue;
    size_t at = i + 1;
    if (at < asmText.size() && asmText[at] == '$') {
      i = at;
      continue;
    }
    bool braced = at < asmText.size() && asmText[at] == '{';
    if (braced)
      ++at;
    size_t digits = at;
    while (at < asmText.size() && std::isdigit(static_cast<unsigned char>(asmText[at])))
      ++at;
    size_t digitsEnd = at;
    bool closed = true;
    if (braced) {
      size_t close = asmText.find('}', at);
      closed = close != std::string::npos && (close == at || asmText[at] == ':');
      if (closed)
        at = close + 1;
    }
    if (digitsEnd == digits || !closed || digitsEnd - digits > 9)
      return "the asm's '" + asmText.substr(i, std::min<size_t>(8, asmText.size() - i)) +
             "' at offset " + std::to_string(i) +
             " names no operand: write $N or ${N} for operand N (" + range + "), $$ for a $";
    int64_t n = std::stoll(asmText.substr(digits, digitsEnd - digits));
    if (n >= operands)
      return "the asm names $" + std::to_string(n) + ", but its operands are " + range;
    i = at - 1;
  }
  return "";
}

} // namespace

std::string asmError(const std::string &asmText, const std::string &constraints,
                     const std::vector<Type> &args, const std::vector<Type> &results,
                     int64_t pack) {
  if (pack < 1 || !std::has_single_bit(uint64_t(pack)))
    return "pack must be a power of two of at least 1, got " + std::to_string(pack);
  if (results.empty())
    return "it needs at least one result dtype";
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].isBool())
      return "argument " + std::to_string(i) + " is a mask (i1), which no asm register takes: "
             "cast it to an integer type first";
  for (size_t i = 0; i < results.size(); ++i)
    if (results[i].isBool() || results[i].isPtr())
      return "result " + std::to_string(i) + " is " + results[i].str() +
             ": results are numbers (cast a mask from an integer result)";
  // One register per entry: each value's registers in turn, results first.
  struct Register {
    std::string what;
    Type element;
    int bits;
  };
  std::vector<Register> registers;
  int64_t outputs = 0;
  for (int pass = 0; pass < 2; ++pass) {
    const std::vector<Type> &values = pass == 0 ? results : args;
    for (size_t i = 0; i < values.size(); ++i) {
      int64_t count = pack / asmElementsPerRegister(values[i], pack);
      for (int64_t r = 0; r < count; ++r)
        registers.push_back({std::string(pass == 0 ? "result " : "argument ") +
                                 std::to_string(i) + " (" + values[i].str() + ")",
                             values[i], asmRegisterBits(values[i], pack)});
      if (pass == 0)
        outputs += count;
    }
  }
  std::vector<AsmConstraint> entries = parseAsmConstraints(constraints);
  int64_t givenOutputs = 0;
  for (const AsmConstraint &c : entries)
    givenOutputs += c.output;
  auto plural = [](int64_t n, const std::string &word) {
    return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
  };
  if (int64_t(entries.size()) != int64_t(registers.size()) || givenOutputs != outputs)
    return "the constraints \"" + constraints + "\" list " + plural(givenOutputs, "output") +
           " and " + plural(int64_t(entries.size()) - givenOutputs, "input") + ", but with pack = " +
           std::to_string(pack) + " the results (" + typeList(results) + ") take " +
           plural(outputs, "register") + " per asm call and the arguments (" + typeList(args) +
           ") take " + std::to_string(int64_t(registers.size()) - outputs);
  for (size_t i = 0; i < entries.size(); ++i) {
    const AsmConstraint &c = entries[i];
    std::string name = "constraint " + std::to_string(i);
    if (!c.letter)
      return name + " of \"" + constraints + "\" is not one tritium takes: outputs are =h, =r, "
             "=l, =f (=&r ... when early-clobbered), inputs h, r, l, f";
    if (c.output != (int64_t(i) < outputs))
      return name + " of \"" + constraints + "\" is " + (c.output ? "an output" : "an input") +
             " where the " + (c.output ? "inputs" : "outputs") + " are: list the outputs first";
    const Register &r = registers[i];
    if (!fits(c.letter, r.element, r.bits))
      return name + " ('" + std::string(1, c.letter) + "') is for $" + std::to_string(i) +
             ", a " + std::to_string(r.bits) + "-bit register of " + r.what + ": it takes " +
             fittingLetters(r.element, r.bits) +
             (c.letter == 'd' ? " (d is an f64 register, and tritium has no f64 elements)" : "");
  }
  return referenceError(asmText, int64_t(registers.size()));
}

} // namespace tritium::ir
