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
  const StagedRequest m{id, bytes_used_, len};
  uint8_t* at = extend(len);
  std::memcpy(at, &hdr, sizeof hdr);
  if (payload_len) std::memcpy(at + sizeof hdr, payload, payload_len);
  slot_bytes_ += SlotRing::slot_len(len);
  meta_.push_back(m);
}

uint64_t RequestBatch::prefix_bytes(uint32_t n) const {
  assert(n <= meta_.size());
  if (n == meta_.size()) return slot_bytes_;
  uint64_t bytes = 0;
  for (uint32_t i = 0; i < n; ++i) bytes += SlotRing::slot_len(meta_[i].record_len);
  return bytes;
}

bool RequestBatch::publish_prefix(const SlotRing& ring, uint32_t n, std::atomic<uint64_t>* head_cache) const {
  assert(n > 0 && n <= meta_.size());
  const uint64_t total = prefix_bytes(n);
  if (total > ring.max_slot()) return false;  // a run must fit half the ring, as any slot must
  SlotReservation r;
  if (!ring.reserve_mp(total, &r, head_cache)) return false;
  // Every record first, then the seals in order: the agent reads a run's records while the host
  // seals the rest, and writing all data before the first seal keeps the host's stores streaming.
  uint64_t offset = 0;
  for (uint32_t i = 0; i < n; ++i) {
    std::memcpy(ring.record_in_run(r, offset), record(i), meta_[i].record_len);
    offset += SlotRing::slot_len(meta_[i].record_len);
  }
  ring.publish_pad(r);
  offset = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t len = SlotRing::slot_len(meta_[i].record_len);
    ring.publish_in_run(r, offset, len);
    offset += len;
  }
  return true;
}

void RequestBatch::drop_back() {
  assert(!meta_.empty());
  const StagedRequest& last = meta_.back();
  bytes_used_ = last.record_offset;
  slot_bytes_ -= SlotRing::slot_len(last.record_len);
  meta_.pop_back();
}

void RequestBatch::drop_front(uint32_t n) {
  assert(n <= meta_.size());
  if (n == meta_.size()) {
    meta_.clear();
    bytes_used_ = 0;
    slot_bytes_ = 0;
    return;
  }
  // Partial: the rest moves to the front (rare: the ring had room for only part of the batch).
  const uint32_t cut = meta_[n].record_offset;
  std::memmove(bytes_.get(), bytes_.get() + cut, bytes_used_ - cut);
  bytes_used_ -= cut;
  meta_.erase(meta_.begin(), meta_.begin() + n);
  slot_bytes_ = 0;
  for (StagedRequest& m : meta_) {
    m.record_offset -= cut;
    slot_bytes_ += SlotRing::slot_len(m.record_len);
  }
}

}  // namespace pd3
