// mix.hpp — the benchmarks' 64-bit mixer: splitmix64's finaliser, a bijection on 64-bit words, so
// distinct inputs give distinct keys.
#pragma once

#include <cstdint>

inline uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}
