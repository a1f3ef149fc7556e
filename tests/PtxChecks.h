// Checks of compiled PTX shared by the tests that read it without a GPU.
#pragma once

#include "TestSupport.h"
#include "compiler/Pipeline.h"

#include <gtest/gtest.h>

#include <string>

namespace tritium::testing {

// How often `needle` occurs in `text`.
inline size_t count(const std::string &text, const std::string &needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++n;
  return n;
}

// ptxas takes the kernel for `arch` without spills and without serializing its wgmma (which it
// does, and says so, when it cannot prove the accumulators untouched).
inline void expectAssembles(const Artifacts &a, const std::string &arch) {
  if (ptxasPath().empty())
    GTEST_SKIP() << "ptxas was not found at configure time; the PTX was not assembled";
  PtxasResult r = runPtxas(a.ptx, arch);
  ASSERT_EQ(r.exitCode, 0) << "ptxas failed:\n" << r.output;
  EXPECT_NE(r.output.find("0 bytes spill stores"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("wgmma"), std::string::npos) << r.output;
}

} // namespace tritium::testing
