// unflushed_keys.cpp — the exact set of unflushed key hashes and its overflow bitmap.
#include "dpu/unflushed_keys.hpp"

#include <bit>
#include <new>

#include "common/error.hpp"
#include "pd3/status.h"

namespace pd3 {

UnflushedKeys::UnflushedKeys(uint64_t capacity, uint64_t slots)
    : capacity_(capacity),
      mask_(slots - 1),
      shift_(uint32_t(64 - std::countr_zero(slots))),
      slots_(new uint64_t[slots]()),
      overflow_(new uint64_t[kOverflowBits / 64]()) {}

int UnflushedKeys::create(uint64_t capacity, std::unique_ptr<UnflushedKeys>* out) {
  if (capacity == 0 || capacity > kMaxCapacity)
    return fail(PD3_E_INVAL, "unflushed-key set of %llu keys: 1 to %llu are supported", (unsigned long long)capacity,
                (unsigned long long)kMaxCapacity);
  // At most half full, so probes stay short; at least 2 slots so the shift is below 64.
  const uint64_t slots = std::bit_ceil(capacity * 2);
  try {
    out->reset(new UnflushedKeys(capacity, slots));
  } catch (const std::bad_alloc&) {
    return fail(PD3_E_NOMEM, "unflushed-key set of %llu slots", (unsigned long long)slots);
  }
  return PD3_OK;
}

bool UnflushedKeys::find(uint64_t h, uint64_t* at) const {
  for (uint64_t i = home(h);; i = (i + 1) & mask_) {
    if (slots_[i] == h) {
      *at = i;
      return true;
    }
    if (slots_[i] == 0) {
      *at = i;
      return false;
    }
  }
}

void UnflushedKeys::add(uint64_t key_hash) {
  const uint64_t h = stored(key_hash);
  uint64_t at;
  if (find(h, &at)) return;
  if (size_ == capacity_) {
    overflow_word(h) |= uint64_t(1) << (h & 63);
    ++overflows_;
    return;
  }
  slots_[at] = h;
  ++size_;
}

void UnflushedKeys::remove(uint64_t key_hash) {
  uint64_t hole;
  if (!find(stored(key_hash), &hole)) return;
  // Backward shift: move later members of the probe run into the hole when their home allows it,
  // so that every member stays reachable from its home without tombstones.
  for (uint64_t i = (hole + 1) & mask_; slots_[i] != 0; i = (i + 1) & mask_) {
    const uint64_t want = home(slots_[i]);
    // The member at i may fill the hole if its home is not in (hole, i] (cyclically).
    const bool home_after_hole = ((i - want) & mask_) < ((i - hole) & mask_);
    if (home_after_hole) continue;
    slots_[hole] = slots_[i];
    hole = i;
  }
  slots_[hole] = 0;
  --size_;
}

bool UnflushedKeys::contains(uint64_t key_hash) const {
  const uint64_t h = stored(key_hash);
  uint64_t at;
  if (find(h, &at)) return true;
  return overflows_ != 0 && (overflow_word(h) >> (h & 63) & 1) != 0;
}

}  // namespace pd3
