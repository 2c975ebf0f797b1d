// control_bytes.hpp — the table's local probe metadata: one byte per slot saying whether the slot
// was never used, holds a deleted key (tombstone), or holds a key with a given 7-bit fingerprint.
// With it a miss reads only the remote slots that can hold the key, a read of an absent key
// usually needs no remote access, and inserts claim slots without reading remote memory.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "key_hash.hpp"

namespace pd3::hashmap {

// Control bytes of every slot, shared by all worker threads.
class ControlBytes {
 public:
  explicit ControlBytes(uint64_t slots);

  uint64_t slots() const { return slots_; }

  // The slots of `h`'s probe sequence whose byte carries its fingerprint, in probe order, up to
  // the first never-used slot. The key, if present, is in one of them.
  void candidates(KeyHash h, std::vector<uint64_t>* out) const;

  // Claims the first never-used or tombstone slot of `h`'s probe sequence for a new key.
  // Returns false if the whole table is taken.
  bool claim(KeyHash h, uint64_t* slot);

  // Marks a slot whose key was deleted; probes pass over it and inserts may reuse it.
  void bury(uint64_t slot);

  // True if the slot holds a key with `h`'s fingerprint.
  bool matches(uint64_t slot, KeyHash h) const;

  // True if the slot holds some key.
  bool occupied(uint64_t slot) const;

 private:
  static constexpr uint8_t kUnused = 0;
  static constexpr uint8_t kTombstone = 1;
  static constexpr uint8_t kFull = 0x80;  // | fingerprint

  uint64_t next(uint64_t slot) const { return slot + 1 == slots_ ? 0 : slot + 1; }

  uint64_t slots_;
  std::unique_ptr<std::atomic<uint8_t>[]> bytes_;
};

}  // namespace pd3::hashmap
