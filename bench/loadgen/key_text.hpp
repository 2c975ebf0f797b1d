// key_text.hpp — the text key of a record as workloads/ycsb.ts and ycsb.hpp spell it ("user" and
// the record number zero-padded to 12 digits, the JS harness' KEY_WIDTH), written straight into a
// buffer; test/native/loadgen_test.cpp checks it against ycsb::format_key.
#pragma once

#include <cstdint>
#include <cstring>

namespace pd3::loadgen {

inline constexpr char kKeyPrefix[] = "user";
inline constexpr uint32_t kKeyWidth = 12;
inline constexpr uint32_t kKeyLength = sizeof(kKeyPrefix) - 1 + kKeyWidth;  // 16
inline constexpr uint64_t kMaxTextKey = 999999999999ull;  // the largest number that fits 12 digits

// Writes the kKeyLength bytes of record n's key (n <= kMaxTextKey) to out.
inline void write_text_key(uint64_t n, char* out) {
  std::memcpy(out, kKeyPrefix, sizeof(kKeyPrefix) - 1);
  char* d = out + kKeyLength;
  for (uint32_t i = 0; i < kKeyWidth; ++i) {
    *--d = char('0' + n % 10);
    n /= 10;
  }
}

}  // namespace pd3::loadgen
