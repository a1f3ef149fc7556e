// The rules of inline_asm (Triton's tl.inline_asm_elementwise), shared by the DSL (a broken rule
// is a user error at the caller's line), the verifier (text IR that breaks one does not verify)
// and the lowering (which reads the registers of one asm call from them).
//
// One asm call handles `pack` elements of every argument and result. A register holds one
// element, or several narrow ones packed (8-bit elements four to a 32-bit register, 16-bit ones
// two, as far as the pack goes; the first element in the lowest bits). The constraint string
// lists the outputs' registers ("=r", "=&r" early-clobbered), then the inputs' ("r"), as
// LLVM's and CUDA's: the results' registers in order, each result's `pack / per register` of
// them, then the arguments' the same way. The asm names them $0, $1, ... in that order.
#pragma once

#include "compiler/ir/Types.h"

#include <string>
#include <vector>

namespace tritium::ir {

// Elements of `element` one register holds, and the register's width in bits, when `pack`
// elements go to each call.
int asmElementsPerRegister(const Type &element, int64_t pack);
int asmRegisterBits(const Type &element, int64_t pack);

struct AsmConstraint {
  bool output = false, earlyClobber = false;
  char letter = 0; // h, r, l, f or d
};

// The entries of a constraint string, in order; entries that are not of the forms above come
// back with letter 0 (asmError says why).
std::vector<AsmConstraint> parseAsmConstraints(const std::string &constraints);

// Why an inline_asm of `asmText` with `constraints` over arguments and results of these element
// types is not valid, or "" when it is: a pack that is a power of two, numbers or pointers in
// and numbers out (no masks), as many constraints as registers with outputs first, letters that
// fit their registers (h: 16 bits, r: 32, l: 64, f: one f32, d: one f64, which tritium has no
// elements of; an 8-bit register may travel in h or r, widened), and every $ of the asm naming
// an operand ($0 .. $N-1, ${N}, ${N:modifier}) or written $$.
std::string asmError(const std::string &asmText, const std::string &constraints,
                     const std::vector<Type> &args, const std::vector<Type> &results,
                     int64_t pack);

} // namespace tritium::ir
