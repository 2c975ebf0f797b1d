// key_hash.hpp — the 64-bit hash of a key that the memory server's key→address index is keyed by.
// It is stored in index files, so changing it requires a new index file version (key_index.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace pd3 {

// Index hashes 0 and 1 mark empty and deleted index slots; key_hash64 never returns them.
inline constexpr uint64_t kKeyHashReserved = 2;

namespace key_hash_detail {

inline constexpr uint64_t kSeed = 0x6A09E667F3BCC909ull;   // fractional bits of sqrt(2)
inline constexpr uint64_t kMulA = 0x9E3779B97F4A7C15ull;   // fractional bits of the golden ratio
inline constexpr uint64_t kMulB = 0xA54FF53A5F1D36F1ull;   // fractional bits of sqrt(5)
inline constexpr uint64_t kMaskA = 0x510E527FADE682D1ull;  // fractional bits of sqrt(19)
inline constexpr uint64_t kMaskB = 0x3C6EF372FE94F82Bull;  // fractional bits of sqrt(3)

// Up to 8 bytes, little-endian, zero-extended (the key length is hashed separately, so a shorter
// key padded with zeros does not collide with a longer one).
inline uint64_t load_partial(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  if (n != 0) std::memcpy(&v, p, n);
  return v;
}

// The 128-bit product of a and b with its halves xor-ed: every input bit reaches many output bits.
inline uint64_t fold_mul(uint64_t a, uint64_t b) {
  const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(p) ^ static_cast<uint64_t>(p >> 64);
}

inline uint64_t rotl(uint64_t x, unsigned r) { return (x << r) | (x >> (64u - r)); }

// Absorbs one 16-byte block into the running state; the state is rotated and multiplied by an odd
// constant (a bijection) so block order matters and no earlier block is cancelled out.
inline uint64_t absorb(uint64_t acc, uint64_t lo, uint64_t hi) {
  return rotl(acc, 23) * kMulA + fold_mul(lo ^ kMaskA, hi ^ kMaskB);
}

}  // namespace key_hash_detail

// Hash of key[0, len): 16 bytes per multiply, then a xor-shift/multiply avalanche. Little-endian
// loads (x86 and the DPU's Arm cores). Result ≥ kKeyHashReserved.
inline uint64_t key_hash64(const void* key, size_t len) {
  using namespace key_hash_detail;
  const auto* p = static_cast<const uint8_t*>(key);
  uint64_t acc = kSeed ^ (static_cast<uint64_t>(len) * kMulB);
  size_t i = 0;
  for (; len - i >= 16; i += 16) acc = absorb(acc, load_partial(p + i, 8), load_partial(p + i + 8, 8));
  const size_t rest = len - i;
  const uint64_t lo = load_partial(p + i, rest < 8 ? rest : 8);
  const uint64_t hi = rest > 8 ? load_partial(p + i + 8, rest - 8) : 0;
  acc = absorb(acc, lo, hi);
  acc ^= acc >> 31;
  acc *= kMulB;
  acc ^= acc >> 29;
  acc *= kMulA;
  acc ^= acc >> 32;
  return acc < kKeyHashReserved ? acc + kKeyHashReserved : acc;
}

}  // namespace pd3
