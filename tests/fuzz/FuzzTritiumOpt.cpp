// A libFuzzer target for hostile and mistaken text IR: tritium-opt's whole path
// (tools/OptDriver.h) on arbitrary bytes. A UserError is the right answer to bad text; anything
// else is a finding: a crash or sanitizer report, an InternalError or other exception escaping
// (IR that verified but broke a pass), or printed IR that does not parse back to itself.
// Built when TRITIUM_FUZZ is on (clang); tools/ci-sanitizers.sh runs it, seeded from tests/lit.
#include "tools/OptDriver.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace tritium;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  std::string printed;
  try {
    printed = tools::runOpt(text, "fuzz.tir", {});
  } catch (const UserError &) {
    return 0; // rejected with a message: fine
  }
  // What the parser accepted prints as text that parses back to the same text.
  std::string again = tools::runOpt(printed, "printed.tir", {});
  if (again != printed) {
    std::fprintf(stderr, "printed IR does not round-trip:\n--- printed ---\n%s--- again ---\n%s",
                 printed.c_str(), again.c_str());
    std::abort();
  }
  // The whole pipeline: a UserError (a limit of the GPU stages) is fine, nothing else is.
  tools::OptRequest ptx;
  ptx.emit = Stage::PTX;
  try {
    tools::runOpt(text, "fuzz.tir", ptx);
  } catch (const UserError &) {
  }
  return 0;
}
