// clock.hpp — the monotonic clock in nanoseconds (vDSO clock_gettime: no system call).
#pragma once

#include <time.h>

#include <cstdint>

namespace pd3::loadgen {

inline uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

}  // namespace pd3::loadgen
