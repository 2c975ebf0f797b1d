// slot_layout.hpp — the table's slots in remote memory: where slot i lives (region, offset) and
// what its 24 bytes hold. Each slot is one pd3/record.h record, so the memory server indexes every
// live key by its 8 bytes and can answer a prefetch with the 8-byte value:
//   live       {key_len 8, value_len 8, key, value}
//   tombstone  {key_len 8, value_len 0, key} + 8 zero bytes (a deleted key: the flush carries the
//              key, so the agent drops its Loading Zone items; a prefetch finds no value)
//   unused     24 zero bytes (key_len 0 ends a record sequence: never part of a multi-slot write)
#pragma once

#include <cstdint>
#include <vector>

#include "pd3/record.h"
#include "protocol.hpp"

namespace pd3::hashmap {

inline constexpr uint32_t kSlotBytes = uint32_t(sizeof(pd3_kv_header)) + kKeyBytes + kValueBytes;

// Where one run of slots lives remotely.
struct SlotAddress {
  uint32_t region;
  uint32_t offset;
};

// What a slot's bytes hold.
enum class SlotKind { kUnused, kLive, kTombstone, kInvalid };

// A decoded slot.
struct SlotRecord {
  SlotKind kind;
  uint64_t key;    // kLive, kTombstone
  uint64_t value;  // kLive
};

inline void encode_live(uint8_t* slot, uint64_t key, uint64_t value) {
  const pd3_kv_header h{kKeyBytes, kValueBytes};
  std::memcpy(slot, &h, sizeof h);
  store_u64(slot + sizeof h, key);
  store_u64(slot + sizeof h + kKeyBytes, value);
}

inline void encode_tombstone(uint8_t* slot, uint64_t key) {
  const pd3_kv_header h{kKeyBytes, 0};
  std::memcpy(slot, &h, sizeof h);
  store_u64(slot + sizeof h, key);
  std::memset(slot + sizeof h + kKeyBytes, 0, kValueBytes);
}

inline SlotRecord decode_slot(const uint8_t* slot) {
  pd3_kv_header h;
  std::memcpy(&h, slot, sizeof h);
  const uint64_t key = load_u64(slot + sizeof h);
  if (h.key_len == 0) return {SlotKind::kUnused, 0, 0};
  if (h.key_len != kKeyBytes) return {SlotKind::kInvalid, 0, 0};
  if (h.value_len == 0) return {SlotKind::kTombstone, key, 0};
  if (h.value_len != kValueBytes) return {SlotKind::kInvalid, 0, 0};
  return {SlotKind::kLive, key, load_u64(slot + sizeof h + kKeyBytes)};
}

// Slot i → (regions[i / per_region], (i % per_region) * kSlotBytes). Fixed once the regions exist.
class SlotLayout {
 public:
  SlotLayout(uint64_t slots, uint32_t per_region, std::vector<uint32_t> regions)
      : slots_(slots), per_region_(per_region), regions_(std::move(regions)) {}

  uint64_t slots() const { return slots_; }
  const std::vector<uint32_t>& regions() const { return regions_; }

  SlotAddress address(uint64_t slot) const {
    return {regions_[slot / per_region_], uint32_t(slot % per_region_) * kSlotBytes};
  }

  // How many of the `count` slots from `first` lie in one region and before the table's end
  // (at least 1), so that they can be read or written in one request.
  uint32_t contiguous(uint64_t first, uint32_t count) const {
    const uint64_t region_left = per_region_ - first % per_region_;
    const uint64_t table_left = slots_ - first;
    uint64_t n = count;
    if (n > region_left) n = region_left;
    if (n > table_left) n = table_left;
    return uint32_t(n);
  }

 private:
  uint64_t slots_;
  uint32_t per_region_;
  std::vector<uint32_t> regions_;
};

}  // namespace pd3::hashmap
