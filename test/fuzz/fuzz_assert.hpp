// fuzz_assert.hpp — the property check of the fuzz targets: abort() so libFuzzer records a crash.
#pragma once

#include <cstdlib>

#define PD3_FUZZ_ASSERT(cond) \
  do {                        \
    if (!(cond)) std::abort(); \
  } while (0)
