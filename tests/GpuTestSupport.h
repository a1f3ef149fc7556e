// Shared by the GPU tests: each one skips, saying why, where no GPU is usable.
#pragma once

#include "TestSupport.h"
#include "runtime/Driver.h"
#include "runtime/Memory.h"

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>

#define SKIP_WITHOUT_GPU()                                                                         \
  do {                                                                                             \
    std::string why;                                                                               \
    if (!tritium::rt::Driver::available(&why))                                                     \
      GTEST_SKIP() << "no GPU: " << why;                                                           \
  } while (0)

namespace tritium::testing {

// A GPU test's stream, made on first use (after SKIP_WITHOUT_GPU has let the test go on), and
// a `sync` that waits for it.
class GpuStreamTest : public CompilerTest {
protected:
  rt::Stream &stream() {
    if (!stream_)
      stream_.emplace();
    return *stream_;
  }
  std::function<void()> sync = [this] { stream().sync(); };

private:
  std::optional<rt::Stream> stream_;
};

} // namespace tritium::testing
