// mix64.hpp — a bijective 64-bit mixer (murmur3's finaliser): distinct inputs give distinct,
// well-spread outputs. For hashing fixed-size keys (flow tuples) and for tests and benchmarks.
#pragma once

#include <cstdint>

namespace pd3 {

inline uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ull;
  x ^= x >> 33;
  return x;
}

}  // namespace pd3
