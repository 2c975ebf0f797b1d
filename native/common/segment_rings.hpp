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

// Relaxed increment of a statistics counter in the control block.
inline void count(uint64_t& counter, uint64_t n = 1) {
  // relaxed: counters order nothing; readers only want an eventually-current total.
  aref(counter).fetch_add(n, std::memory_order_relaxed);
}

}  // namespace pd3
