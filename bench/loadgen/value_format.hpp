// value_format.hpp — the bytes written under a record at a version, and the check of bytes read
// back: YCSB's deterministic values (ycsb::value_bytes(key, version), as valueBytes in
// workloads/ycsb.ts), or for the hash map's own bulk load protocol.hpp's load_value(key).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "protocol.hpp"
#include "ycsb.hpp"

namespace pd3::loadgen {

// Version markers beside the YCSB versions (0 = as loaded, seq + 1 = written by op seq).
inline constexpr uint64_t kAbsent = UINT64_MAX;         // the key holds nothing
inline constexpr uint64_t kHashmapLoad = UINT64_MAX - 1;  // the hash map's start-up load value

// Writes and recognises values of one fixed size.
class ValueFormat {
 public:
  explicit ValueFormat(uint32_t size) : size_(size), scratch_(size) {}

  uint32_t size() const { return size_; }

  // The value of record `key` at `version` (not kAbsent) into out[0 .. size).
  void write(uint64_t key, uint64_t version, uint8_t* out) const {
    if (version == kHashmapLoad) {
      uint8_t v[8];
      hashmap::store_u64(v, hashmap::load_value(key));
      std::memcpy(out, v, size_ < 8 ? size_ : 8);
      return;
    }
    ycsb::value_bytes(key, version, out, size_);
  }

  // Whether `got` is record key's value at `version` (kAbsent: never; a nil reply is not bytes).
  bool matches(uint64_t key, uint64_t version, std::string_view got) {
    if (version == kAbsent || got.size() != size_) return false;
    write(key, version, scratch_.data());
    return std::memcmp(scratch_.data(), got.data(), size_) == 0;
  }

 private:
  uint32_t size_;
  std::vector<uint8_t> scratch_;
};

}  // namespace pd3::loadgen
