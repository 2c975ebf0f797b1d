// request_writer.hpp — host side of the request ring: publish one request, lock-free, any thread.
#pragma once

#include <cstring>

#include "common/segment_rings.hpp"
#include "pd3/status.h"

namespace pd3 {

// Publishes `hdr` followed by `payload_len` bytes of `payload` (write data or a key).
// Returns PD3_OK, PD3_E_AGAIN (ring full: nothing written) or PD3_E_TOO_BIG.
inline int publish_request(pd3_control* c, const pd3_request& hdr, const void* payload, uint32_t payload_len) {
  const SlotRing ring = request_ring(c);
  const uint64_t len = SlotRing::slot_len(sizeof(pd3_request) + uint64_t(payload_len));
  if (len > ring.max_slot()) return PD3_E_TOO_BIG;
  SlotReservation r;
  if (!ring.reserve_mp(len, &r)) {
    count(c->host_ring_full);
    return PD3_E_AGAIN;
  }
  uint8_t* rec = ring.record_at(r);
  std::memcpy(rec, &hdr, sizeof hdr);
  if (payload_len) std::memcpy(rec + sizeof hdr, payload, payload_len);
  ring.publish(r, len);
  count(c->host_requests);
  return PD3_OK;
}

}  // namespace pd3
