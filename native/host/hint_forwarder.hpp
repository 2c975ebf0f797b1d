// hint_forwarder.hpp — the host's half of agent-hinted prefetching (pd3_prefetch_hint, the paper's
// §6.2 comparison path): turns each hint from the response ring into a PREFETCH request in the
// request ring, keeping those the ring has no room for until the next poll.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <vector>

#include "pd3/segment.h"
#include "pd3/wire.h"

namespace pd3 {

// Counters of a HintForwarder (relaxed snapshots; any thread).
struct HintStats {
  uint64_t received = 0;   // hints taken from the response ring
  uint64_t forwarded = 0;  // PREFETCH requests published
  uint64_t malformed = 0;  // hints whose size or key length did not add up (dropped)
  uint64_t dropped = 0;    // hints discarded because the agent went away
  uint64_t pending = 0;    // hints waiting for room in the request ring right now
};

// One per segment, driven by whichever thread drains the response ring (the caller serialises
// on_hint, retry and drop_pending; stats may be read from any thread).
class HintForwarder {
 public:
  // Most hints kept waiting for ring room: the agent never has more prefetches in flight than
  // there are prefetch ids, so a longer backlog means a confused agent.
  static constexpr size_t kMaxPending = PD3_MAX_INFLIGHT;

  // A response-ring record whose op is PD3_OP_PREFETCH: forwards it, or keeps it while the ring is
  // full. `data` holds r.size bytes when well_formed.
  void on_hint(pd3_control* c, const pd3_response& r, const uint8_t* data, bool well_formed);
  // Publishes the hints kept from earlier polls, oldest first, until the ring is full again.
  void retry(pd3_control* c);
  // Forgets the kept hints (the agent that sent them is gone; a new one would not know their ids).
  void drop_pending();
  HintStats stats() const;
  // Are hints waiting for ring room? Any thread (a hint: the drainer re-checks).
  bool has_pending() const { return pending_count_.load(std::memory_order_relaxed) > 0; }  // relaxed: a gauge

 private:
  // One kept hint: the PREFETCH request it becomes, key included.
  struct Pending {
    pd3_request hdr;
    std::vector<uint8_t> key;
  };
  bool publish(pd3_control* c, const pd3_request& hdr, const uint8_t* key);

  std::deque<Pending> pending_;
  // Written by the draining thread only; relaxed loads and stores (statistics, they order nothing).
  std::atomic<uint64_t> received_{0}, forwarded_{0}, malformed_{0}, dropped_{0}, pending_count_{0};
};

}  // namespace pd3
