// control_bytes.cpp — probe sequences over the control bytes (linear probing, wrapping at the end).
//
// Memory order: every access is relaxed. A byte only needs to be atomic (concurrent scans and
// claims of different keys); everything that must be ordered with a key's byte — its cache entry,
// its remote slot — is changed under the key's stripe lock, whose acquire/release orders it.
// Bytes go unused → full ↔ tombstone and never back to unused, so a key's probe sequence never
// ends early while the key is present.
#include "control_bytes.hpp"

namespace pd3::hashmap {

ControlBytes::ControlBytes(uint64_t slots) : slots_(slots), bytes_(new std::atomic<uint8_t>[slots]) {
  for (uint64_t i = 0; i < slots; ++i) bytes_[i].store(kUnused, std::memory_order_relaxed);  // relaxed: before any thread starts
}

void ControlBytes::candidates(KeyHash h, std::vector<uint64_t>* out) const {
  out->clear();
  const uint8_t want = kFull | h.fingerprint();
  uint64_t s = h.home(slots_);
  for (uint64_t n = 0; n < slots_; ++n, s = next(s)) {
    const uint8_t b = bytes_[s].load(std::memory_order_relaxed);  // relaxed: see the file comment
    if (b == kUnused) return;
    if (b == want) out->push_back(s);
  }
}

bool ControlBytes::claim(KeyHash h, uint64_t* slot) {
  const uint8_t full = kFull | h.fingerprint();
  uint64_t s = h.home(slots_);
  for (uint64_t n = 0; n < slots_; ++n, s = next(s)) {
    uint8_t b = bytes_[s].load(std::memory_order_relaxed);  // relaxed: see the file comment
    // A lost race for this slot leaves b = the winner's byte (full): keep probing past it.
    if ((b == kUnused || b == kTombstone) &&
        bytes_[s].compare_exchange_strong(b, full, std::memory_order_relaxed)) {  // relaxed: as above
      *slot = s;
      return true;
    }
  }
  return false;
}

void ControlBytes::bury(uint64_t slot) {
  bytes_[slot].store(kTombstone, std::memory_order_relaxed);  // relaxed: see the file comment
}

bool ControlBytes::matches(uint64_t slot, KeyHash h) const {
  return bytes_[slot].load(std::memory_order_relaxed) == (kFull | h.fingerprint());  // relaxed: as above
}

bool ControlBytes::occupied(uint64_t slot) const {
  return (bytes_[slot].load(std::memory_order_relaxed) & kFull) != 0;  // relaxed: see the file comment
}

}  // namespace pd3::hashmap
