// segment_rings.hpp — SlotRing views of a mapped segment's request and response rings.
#pragma once

#include "common/slot_ring.hpp"
#include "pd3/segment.h"

namespace pd3 {

inline SlotRing request_ring(pd3_control* c) {
  return SlotRing(reinterpret_cast<uint8_t*>(c) + c->req_offset, c->req_size, &c->req_tail, &c->req_head,
                  c->seal_salt);
}

inline SlotRing response_ring(pd3_control* c) {
  return SlotRing(reinterpret_cast<uint8_t*>(c) + c->resp_offset, c->resp_size, &c->resp_tail,
                  &c->resp_head, c->seal_salt);
}

// Increment of a counter only the agent writes (the agent is one thread per segment): a relaxed
// load and store rather than a locked read-modify-write, which on x86 is a full barrier and would
// stall the engine behind the stores of the record it just published to the host.
inline void count_by_agent(uint64_t& counter, uint64_t n = 1) {
  auto c = aref(counter);
  // relaxed: a statistic with a single writer; readers only want an eventually-current total.
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

// Relaxed increment of a statistics counter in the control block written by many host threads.
inline void count(uint64_t& counter, uint64_t n = 1) {
  // relaxed: counters order nothing; readers only want an eventually-current total.
  aref(counter).fetch_add(n, std::memory_order_relaxed);
}

}  // namespace pd3
