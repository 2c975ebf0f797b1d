// prefetch_table.cpp — prefetch entries, their ids and the key → live entry index.
#include "dpu/prefetch_table.hpp"

#include <bit>

namespace pd3 {

PrefetchTable::PrefetchTable(uint32_t entries)
    : entries_(entries), free_(entries), free_count_(entries) {
  for (uint32_t i = 0; i < entries; ++i) free_[i] = uint16_t(i);
  // At most half full (only live entries are indexed, at most `entries` of them).
  const uint64_t slots = std::bit_ceil(uint64_t(entries) * 2);
  index_.assign(slots, 0);
  index_mask_ = slots - 1;
  shift_ = uint32_t(64 - std::countr_zero(slots));
}

int PrefetchTable::find(std::string_view key, uint64_t hash) const {
  for (uint64_t i = home(hash);; i = (i + 1) & index_mask_) {
    const uint16_t slot = index_[i];
    if (slot == 0) return -1;
    const PrefetchEntry& e = entries_[slot - 1];
    if (e.hash == hash && e.key == key) return slot - 1;
  }
}

int PrefetchTable::acquire(std::string_view key, uint64_t hash, uint64_t capture_ns) {
  if (free_count_ == 0) return -1;
  const uint32_t id = free_[free_head_];
  free_head_ = (free_head_ + 1) % uint32_t(free_.size());
  --free_count_;
  ++in_use_;
  PrefetchEntry& e = entries_[id];
  e.key.assign(key);  // reuses the string's capacity: no allocation once warm
  e.hash = hash;
  e.capture_ns = capture_ns;
  e.state = PrefetchState::kLookup;
  e.routed = e.broadcast = e.sent_any = e.incomplete = e.held_dropped = false;
  e.unsent = e.waiting = e.oks = e.dest_small = e.failed = 0;
  e.held.clear();
  uint64_t i = home(hash);
  while (index_[i] != 0) i = (i + 1) & index_mask_;
  index_[i] = uint16_t(id + 1);
  e.indexed = true;
  return int(id);
}

void PrefetchTable::unindex(uint32_t id) {
  PrefetchEntry& e = entries_[id];
  if (!e.indexed) return;
  e.indexed = false;
  uint64_t hole = home(e.hash);
  while (index_[hole] != id + 1) hole = (hole + 1) & index_mask_;
  // Backward shift (as in UnflushedKeys::remove): keep every later member of the run reachable.
  for (uint64_t i = (hole + 1) & index_mask_; index_[i] != 0; i = (i + 1) & index_mask_) {
    const uint64_t want = home(entries_[index_[i] - 1].hash);
    if (((i - want) & index_mask_) < ((i - hole) & index_mask_)) continue;
    index_[hole] = index_[i];
    hole = i;
  }
  index_[hole] = 0;
}

void PrefetchTable::release(uint32_t id) {
  PrefetchEntry& e = entries_[id];
  unindex(id);
  e.state = PrefetchState::kFree;
  ++e.gen;
  std::vector<uint8_t>().swap(e.held);  // a held broadcast answer may be large: give it back
  free_[(free_head_ + free_count_) % uint32_t(free_.size())] = uint16_t(id);
  ++free_count_;
  --in_use_;
}

}  // namespace pd3
