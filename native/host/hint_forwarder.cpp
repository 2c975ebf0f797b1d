// hint_forwarder.cpp — see hint_forwarder.hpp.
#include "host/hint_forwarder.hpp"

#include <cstring>

#include "host/request_writer.hpp"
#include "pd3/status.h"

namespace pd3 {

namespace {

// Single writer: a relaxed load and store instead of a locked add (see HintForwarder).
void bump(std::atomic<uint64_t>& counter, uint64_t n = 1) {
  counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

}  // namespace

void HintForwarder::on_hint(pd3_control* c, const pd3_response& r, const uint8_t* data, bool well_formed) {
  bump(received_);
  pd3_prefetch_hint h{};
  if (!well_formed || r.status != 0 || r.size < sizeof h) return bump(malformed_);
  std::memcpy(&h, data, sizeof h);
  if (h.key_len == 0 || r.size != sizeof h + h.key_len) return bump(malformed_);
  const pd3_request req = pd3_make_request(r.op_id, h.server, h.max_size, h.key_len);
  const uint8_t* key = data + sizeof h;
  // In order: a hint never overtakes one kept from an earlier poll.
  if (pending_.empty() && publish(c, req, key)) return;
  if (pending_.size() >= kMaxPending) return bump(dropped_);
  pending_.push_back(Pending{req, std::vector<uint8_t>(key, key + h.key_len)});
  pending_count_.store(pending_.size(), std::memory_order_relaxed);  // relaxed: a gauge
}

void HintForwarder::retry(pd3_control* c) {
  while (!pending_.empty() && publish(c, pending_.front().hdr, pending_.front().key.data())) pending_.pop_front();
  pending_count_.store(pending_.size(), std::memory_order_relaxed);  // relaxed: a gauge
}

void HintForwarder::drop_pending() {
  bump(dropped_, pending_.size());
  pending_.clear();
  pending_count_.store(0, std::memory_order_relaxed);  // relaxed: a gauge
}

bool HintForwarder::publish(pd3_control* c, const pd3_request& hdr, const uint8_t* key) {
  const int rc = publish_request(c, hdr, key, hdr.size);
  if (rc == PD3_E_AGAIN) return false;
  if (rc == PD3_OK) {
    bump(forwarded_);
  } else {
    bump(dropped_);  // PD3_E_TOO_BIG: a key the ring can never hold (the agent checks key sizes)
  }
  return true;
}

HintStats HintForwarder::stats() const {
  // relaxed: statistics (see the members).
  return HintStats{received_.load(std::memory_order_relaxed), forwarded_.load(std::memory_order_relaxed),
                   malformed_.load(std::memory_order_relaxed), dropped_.load(std::memory_order_relaxed),
                   pending_count_.load(std::memory_order_relaxed)};
}

}  // namespace pd3
