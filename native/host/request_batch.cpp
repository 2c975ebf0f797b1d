// request_batch.cpp — see request_batch.hpp.
#include "host/request_batch.hpp"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "common/slot_records.hpp"
#include "pd3/host.h"

namespace pd3 {

static_assert(PD3_MAX_PUBLISH_BATCH <= PD3_SLOT_MAX_RECORDS, "a full batch fits one slot's count");

void RequestBatch::grow(uint32_t more) {
  const uint32_t cap = std::max<uint32_t>({bytes_cap_ * 2, bytes_used_ + more, 4096});
  std::unique_ptr<uint8_t[]> grown(new uint8_t[cap]);
  if (bytes_used_) std::memcpy(grown.get(), bytes_.get(), bytes_used_);
  bytes_ = std::move(grown);
  bytes_cap_ = cap;
}

void RequestBatch::add(uint16_t id, const pd3_request& hdr, const void* payload, uint32_t payload_len) {
  assert(meta_.size() < PD3_SLOT_MAX_RECORDS);
  const uint32_t len = uint32_t(sizeof hdr + payload_len);
  const uint32_t span = uint32_t(record_span(len));
  const StagedRequest m{id, bytes_used_, len};
  uint8_t* at = extend(span);
  // The alignment padding lies in the span's last word: cleared first, so no stale heap bytes reach
  // the ring (the record below overwrites what it covers).
  std::memset(at + span - PD3_RECORD_ALIGN, 0, PD3_RECORD_ALIGN);
  std::memcpy(at, &hdr, sizeof hdr);
  if (payload_len) std::memcpy(at + sizeof hdr, payload, payload_len);
  meta_.push_back(m);
}

bool RequestBatch::publish_prefix(const SlotRing& ring, uint32_t n, std::atomic<uint64_t>* head_cache) const {
  assert(n > 0 && n <= meta_.size());
  const uint64_t total = prefix_bytes(n);
  if (total > ring.max_slot()) return false;  // a slot must fit half the ring
  SlotReservation r;
  if (!ring.reserve_mp(total, &r, head_cache)) return false;
  // Everything but the seal word first (the agent may be reading it: SlotRing::slot_at), then the
  // seal, which publishes the whole batch.
  uint8_t* slot = ring.slot_at(r);
  const pd3_slot header{0, uint32_t(total), PD3_SLOT_RECORDS, uint16_t(n)};
  constexpr size_t kSeal = sizeof(pd3_slot::seal);
  std::memcpy(slot + kSeal, reinterpret_cast<const uint8_t*>(&header) + kSeal, sizeof header - kSeal);
  const uint64_t body = total - sizeof header;
  const uint64_t records = record_bytes(n);
  std::memcpy(slot + sizeof header, bytes_.get(), records);
  if (records < body) std::memset(slot + sizeof header + records, 0, body - records);  // the slot's padding
  ring.publish_written(r);
  // The next batch most likely starts where this one ends and is about as long: its lines are
  // fetched for writing now, while the handle stages it, so its copy does not stall on them.
  ring.prefetch_for_write(r.pos + r.pad + total, total);
  return true;
}

void RequestBatch::drop_back() {
  assert(!meta_.empty());
  bytes_used_ = meta_.back().record_offset;
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
  const uint32_t cut = meta_[n].record_offset;
  std::memmove(bytes_.get(), bytes_.get() + cut, bytes_used_ - cut);
  bytes_used_ -= cut;
  meta_.erase(meta_.begin(), meta_.begin() + n);
  for (StagedRequest& m : meta_) m.record_offset -= cut;
}

}  // namespace pd3
