// key_directory.hpp — where the prefetcher sends a prefetch: key hash → memory server id, learnt
// from the host's flushes (a key lives where the host last wrote it). Bounded and direct-mapped.
#pragma once

#include <cstdint>
#include <memory>

namespace pd3 {

// A direct-mapped table of 4-byte slots: slot = low hash bits, and each slot keeps a 27-bit tag
// (high hash bits) and the server id. Collisions: the newest flush takes the slot and the key it
// displaced becomes unknown (the prefetcher then asks every server); a tag that matches a different
// key (about 2^-27 per lookup of an unknown key whose slot is taken) routes to a server that
// answers NOT_FOUND, which only loses that prefetch.
class KeyDirectory {
 public:
  static constexpr int kUnknown = -1;
  static constexpr uint64_t kMaxSlots = uint64_t(1) << 30;  // index bits stay clear of the tag bits
  static constexpr uint32_t kMaxServers = 31;               // ids 0..30 fit the slot's 5 bits

  // `slots`: 1..kMaxSlots, rounded up to a power of two. Returns PD3_OK, PD3_E_INVAL or PD3_E_NOMEM.
  static int create(uint64_t slots, std::unique_ptr<KeyDirectory>* out);

  // Records that the key lives on `server_id` (0..kMaxServers-1; others are ignored).
  void learn(uint64_t key_hash, int server_id);
  // The server last learnt for the key, or kUnknown.
  int server_of(uint64_t key_hash) const;

  uint64_t size() const { return used_; }  // slots holding a key
  uint64_t bytes() const { return (mask_ + 1) * sizeof(uint32_t); }

 private:
  explicit KeyDirectory(uint64_t slots);
  static uint32_t tag_of(uint64_t key_hash) { return uint32_t(key_hash >> 37); }

  std::unique_ptr<uint32_t[]> slots_;  // 0: empty; else tag << 5 | (server id + 1)
  uint64_t mask_;
  uint64_t used_ = 0;
};

}  // namespace pd3
