// request_batch.hpp — a handle's ring requests, staged and then published together: one
// reservation, one slot header and seal, one doorbell and one counter update per batch instead of
// per request (issue 14).
#pragma once

#include <atomic>
#include <cassert>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/slot_records.hpp"
#include "common/slot_ring.hpp"
#include "pd3/segment.h"
#include "pd3/wire.h"

namespace pd3 {

// One staged request: its id (what it is waiting for is in the in-flight table) and its record.
struct StagedRequest {
  uint16_t id = 0;
  uint32_t record_offset = 0;  // its record (header + payload) in the batch's bytes
  uint32_t record_len = 0;
};

// Requests staged in order. Not thread-safe: its handle's issue_mu guards it.
// The staged bytes are already the image of the PD3_SLOT_RECORDS slot body they will become (each
// record on its PD3_RECORD_ALIGN boundary, padding cleared): publishing a prefix is a slot header,
// one copy and one seal.
class RequestBatch {
 public:
  // Staged record bytes past which a handle publishes at once rather than at its next poll.
  static constexpr uint64_t kMaxSlotBytes = 64u << 10;

  // Appends request `id`: `hdr` already carries the id; `payload_len` bytes of `payload` follow it.
  void add(uint16_t id, const pd3_request& hdr, const void* payload, uint32_t payload_len);

  bool empty() const { return meta_.empty(); }
  uint32_t size() const { return uint32_t(meta_.size()); }
  // Whether a handle must publish now rather than at its next poll: `limit` requests staged
  // (pd3_host_config.publish_batch), or kMaxSlotBytes of them.
  bool full(uint32_t limit) const { return size() >= limit || slot_bytes() >= kMaxSlotBytes; }
  // Ring bytes the staged requests take as one slot (its header and padding included).
  uint64_t slot_bytes() const { return prefix_bytes(size()); }
  const StagedRequest& at(uint32_t i) const { return meta_[i]; }
  const uint8_t* record(uint32_t i) const { return bytes_.get() + meta_[i].record_offset; }

  // Writes the first `n` staged requests into `ring` as one PD3_SLOT_RECORDS slot and seals it.
  // Returns false (nothing written) if the ring lacks room for it.
  [[nodiscard]] bool publish_prefix(const SlotRing& ring, uint32_t n, std::atomic<uint64_t>* head_cache) const;
  // Ring bytes of the first `n` staged requests as one slot.
  uint64_t prefix_bytes(uint32_t n) const { return n == 0 ? 0 : slot_len(record_bytes(n)); }
  // Bytes of the first `n` staged records (their spans), the body of that slot before its padding.
  uint32_t record_bytes(uint32_t n) const {
    assert(n <= meta_.size());
    // The records are contiguous: the first n end where record n starts (or where the batch ends).
    return n == meta_.size() ? bytes_used_ : meta_[n].record_offset;
  }

  // Forgets the first `n` staged requests (published or failed).
  void drop_front(uint32_t n);
  // Forgets the last staged request (it was refused).
  void drop_back();

 private:
  // Takes `more` further bytes at the end, without zero-filling them (they are written next).
  uint8_t* extend(uint32_t more) {
    if (bytes_used_ + more > bytes_cap_) grow(more);
    uint8_t* at = bytes_.get() + bytes_used_;
    bytes_used_ += more;
    return at;
  }
  // Reallocates bytes_ with room for `more` further bytes (rare: the buffer is kept).
  void grow(uint32_t more);

  std::vector<StagedRequest> meta_;
  std::unique_ptr<uint8_t[]> bytes_;
  uint32_t bytes_used_ = 0;
  uint32_t bytes_cap_ = 0;
};

}  // namespace pd3
