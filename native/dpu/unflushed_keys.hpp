// unflushed_keys.hpp — keys whose remote copy is stale: a client wrote or deleted them and the host
// has not flushed them since. A prefetch of such a key would fetch an older value than the client's
// (docs/architecture.md §8), so the prefetcher does not issue one. Bounded, and conservative when full.
#pragma once

#include <cstdint>
#include <memory>

namespace pd3 {

// A set of 64-bit key hashes: exact up to `capacity` keys (open addressing, linear probing,
// backward-shift deletion). A key added while the set is full goes to a coarse bitmap instead,
// where it stays until the agent restarts: every key sharing its bit then counts as unflushed.
// That only loses prefetches; a key is never reported flushed while it is not.
class UnflushedKeys {
 public:
  static constexpr uint64_t kMaxCapacity = uint64_t(1) << 28;
  static constexpr uint32_t kOverflowBits = 1u << 16;  // 8 KiB of bitmap

  // Returns PD3_OK, PD3_E_INVAL (capacity outside 1..kMaxCapacity) or PD3_E_NOMEM.
  static int create(uint64_t capacity, std::unique_ptr<UnflushedKeys>* out);

  void add(uint64_t key_hash);     // a client wrote or deleted the key
  void remove(uint64_t key_hash);  // the host flushed it
  bool contains(uint64_t key_hash) const;

  uint64_t size() const { return size_; }            // keys held exactly
  uint64_t overflows() const { return overflows_; }  // adds that went to the bitmap

 private:
  UnflushedKeys(uint64_t capacity, uint64_t slots);
  static uint64_t stored(uint64_t key_hash) { return key_hash == 0 ? 1 : key_hash; }  // 0 marks empty
  uint64_t home(uint64_t h) const { return (h * 0x9E3779B97F4A7C15ull) >> shift_; }
  bool find(uint64_t h, uint64_t* at) const;
  uint64_t& overflow_word(uint64_t h) const { return overflow_[(h >> 6) & (kOverflowBits / 64 - 1)]; }

  const uint64_t capacity_;
  const uint64_t mask_;
  const uint32_t shift_;
  std::unique_ptr<uint64_t[]> slots_;
  std::unique_ptr<uint64_t[]> overflow_;
  uint64_t size_ = 0;
  uint64_t overflows_ = 0;
};

}  // namespace pd3
