// lz_view.hpp — pointers into a mapped segment's Loading Zone: descriptors, index buckets, data ring.
//
// How the zone works (docs/loading-zone.md has the full argument):
//   * Items get increasing sequence numbers (seq >= 1). Item `seq` uses descriptor seq % desc_count
//     and a contiguous record in the data ring; the agent reclaims items strictly oldest-first.
//   * The index is an array of bucket heads. A bucket holds the seq of its newest item; each
//     descriptor links to the next-older item of its bucket (next_seq). Chains are therefore in
//     decreasing seq order, so a consumer that meets a reclaimed item knows the rest is reclaimed
//     too. Nothing is ever unlinked: stale links are recognised by their seq.
//   * A descriptor's state word is (seq << 2) | state. A consumer takes an item with one CAS from
//     (seq, PRODUCED) to (seq, CONSUMED). The agent reclaims an item by exchanging its state word to
//     (seq, FREE) before it reuses the item's bytes, so a consumer whose CAS succeeds copied bytes
//     the agent had not yet overwritten, and one whose copy raced a reclaim fails its CAS: a miss.
#pragma once

#include <cstdint>

#include "common/lz_state.hpp"
#include "pd3/segment.h"
#include "pd3/wire.h"

namespace pd3 {

// A view of the Loading Zone sections of a mapped segment (no ownership).
struct LzView {
  pd3_control* control = nullptr;
  pd3_lz_desc* desc = nullptr;
  uint64_t* bucket = nullptr;
  uint8_t* data = nullptr;
  uint64_t data_size = 0;
  uint64_t data_mask = 0;
  uint64_t desc_mask = 0;
  uint64_t bucket_mask = 0;

  explicit LzView(pd3_control* c)
      : control(c),
        desc(reinterpret_cast<pd3_lz_desc*>(reinterpret_cast<uint8_t*>(c) + c->lz_desc_offset)),
        bucket(reinterpret_cast<uint64_t*>(reinterpret_cast<uint8_t*>(c) + c->lz_bucket_offset)),
        data(reinterpret_cast<uint8_t*>(c) + c->lz_data_offset),
        data_size(c->lz_data_size),
        data_mask(c->lz_data_size - 1),
        desc_mask(uint64_t(c->lz_desc_count) - 1),
        bucket_mask(uint64_t(c->lz_bucket_count) - 1) {}

  pd3_lz_desc& desc_of(uint64_t seq) const { return desc[seq & desc_mask]; }
  uint64_t& bucket_of(uint32_t key_hash) const { return bucket[key_hash & bucket_mask]; }
  // The record at monotonic position `pos`; records never wrap, so the whole record is contiguous.
  uint64_t* record_words(uint64_t pos) const { return reinterpret_cast<uint64_t*>(data + (pos & data_mask)); }
};


}  // namespace pd3
