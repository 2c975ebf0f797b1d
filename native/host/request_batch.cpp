// request_batch.cpp — see request_batch.hpp.
#include "host/request_batch.hpp"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace pd3 {

uint8_t* RequestBatch::extend(uint32_t more) {
  if (bytes_used_ + more > bytes_cap_) {
    const uint32_t cap = std::max<uint32_t>({bytes_cap_ * 2, bytes_used_ + more, 4096});
    std::unique_ptr<uint8_t[]> grown(new uint8_t[cap]);
    if (bytes_used_) std::memcpy(grown.get(), bytes_.get(), bytes_used_);
    bytes_ = std::move(grown);
    bytes_cap_ = cap;
  }
  uint8_t* at = bytes_.get() + bytes_used_;
  bytes_used_ += more;
  return at;
}

void RequestBatch::add(uint16_t id, const pd3_request& hdr, const void* payload, uint32_t payload_len) {
  const uint32_t len = uint32_t(sizeof hdr + payload_len);
  const uint32_t slot = uint32_t(SlotRing::slot_len(len));
  const StagedRequest m{id, bytes_used_, len};
  uint8_t* at = extend(slot);
  // The alignment padding lies in the slot's last 16 bytes: cleared first, so no stale heap bytes
  // reach the ring (the record below overwrites what it covers).
  std::memset(at + slot - PD3_SLOT_ALIGN, 0, PD3_SLOT_ALIGN);
  // Unsealed (seal 0 is never a position's seal): publish_prefix stores the seal in the ring.
  const pd3_slot header{0, slot, PD3_SLOT_RECORD, 0};
  std::memcpy(at, &header, sizeof header);
  std::memcpy(at + sizeof header, &hdr, sizeof hdr);
  if (payload_len) std::memcpy(at + sizeof header + sizeof hdr, payload, payload_len);
  meta_.push_back(m);
}

uint64_t RequestBatch::prefix_bytes(uint32_t n) const {
  assert(n <= meta_.size());
  return n == meta_.size() ? bytes_used_ : meta_[n].slot_offset;  // the slots are contiguous
}

bool RequestBatch::publish_prefix(const SlotRing& ring, uint32_t n, std::atomic<uint64_t>* head_cache) const {
  assert(n > 0 && n <= meta_.size());
  const uint64_t total = prefix_bytes(n);
  if (total > ring.max_slot()) return false;  // a run must fit half the ring, as any slot must
  SlotReservation r;
  if (!ring.reserve_mp(total, &r, head_cache)) return false;
  // The whole run in one copy, all but the first slot's seal word (the agent may be reading it:
  // SlotRing::run_at), then the seals in order: the agent reads a run's first records while the
  // host seals the rest.
  constexpr size_t kSeal = sizeof(pd3_slot::seal);
  std::memcpy(ring.run_at(r) + kSeal, bytes_.get() + kSeal, total - kSeal);
  ring.publish_pad(r);
  for (uint32_t i = 0; i < n; ++i) ring.seal_in_run(r, meta_[i].slot_offset);
  // The next run most likely starts where this one ends and is about as long: its lines are
  // fetched for writing now, while the handle stages it, so its copy does not stall on them.
  ring.prefetch_for_write(r.pos + r.pad + total, total);
  return true;
}

void RequestBatch::drop_back() {
  assert(!meta_.empty());
  bytes_used_ = meta_.back().slot_offset;
  meta_.pop_back();
}

void RequestBatch::drop_front(uint32_t n) {
  assert(n <= meta_.size());
  if (n == meta_.size()) {
    meta_.clear();
    bytes_used_ = 0;
    return;
  }
  // Partial: the rest moves to the front (rare: the ring had room for only part of the batch).
  const uint32_t cut = meta_[n].slot_offset;
  std::memmove(bytes_.get(), bytes_.get() + cut, bytes_used_ - cut);
  bytes_used_ -= cut;
  meta_.erase(meta_.begin(), meta_.begin() + n);
  for (StagedRequest& m : meta_) m.slot_offset -= cut;
}

}  // namespace pd3
