// Shared by the GPU tests: each one skips, saying why, where no GPU is usable.
#pragma once

#include "runtime/Driver.h"

#include <gtest/gtest.h>

#include <string>

#define SKIP_WITHOUT_GPU()                                                                         \
  do {                                                                                             \
    std::string why;                                                                               \
    if (!tritium::rt::Driver::available(&why))                                                     \
      GTEST_SKIP() << "no GPU: " << why;                                                           \
  } while (0)
