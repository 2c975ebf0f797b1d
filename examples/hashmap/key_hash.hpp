// key_hash.hpp — the one hash of a key and what each part of it selects: the home slot (where the
// key's probe sequence starts), the fingerprint kept in the slot's control byte, the lock stripe
// and the cache shard. Every part must be computable from the key alone, so a miss knows which
// remote slots to read without asking anyone.
#pragma once

#include <cstdint>

namespace pd3::hashmap {

// A key's 64-bit hash, with the selectors derived from it.
struct KeyHash {
  uint64_t bits;

  static KeyHash of(uint64_t key) {
    uint64_t x = key + 0x9E3779B97F4A7C15ull;
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 31;
    return {x};
  }

  // First slot of the probe sequence: the high bits scaled to [0, slots) (no modulo bias).
  uint64_t home(uint64_t slots) const { return uint64_t((unsigned __int128)bits * slots >> 64); }
  // 7 low bits: independent of the high bits that pick the home slot.
  uint8_t fingerprint() const { return uint8_t(bits & 0x7F); }
  // Lock stripe and cache shard: middle bits, independent of both of the above.
  uint32_t stripe(uint32_t stripes) const { return uint32_t(bits >> 20) & (stripes - 1); }
  uint32_t shard(uint32_t shards) const { return uint32_t(bits >> 40) & (shards - 1); }
};

}  // namespace pd3::hashmap
