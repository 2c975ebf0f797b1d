// request_reader.hpp — agent side of the request ring: take every contiguous published request.
#pragma once

#include <cstring>

#include "common/segment_rings.hpp"
#include "pd3/status.h"

namespace pd3 {

// One request as the agent sees it in the ring.
struct RequestView {
  pd3_request hdr;
  const uint8_t* payload;  // pd3_request_payload_len(&hdr) bytes (write data or key)
  int status;              // PD3_OK, or PD3_E_CORRUPT: answer with this status
};

// The agent's "DMA read" (paper §6.1 step ①): calls fn(const RequestView&) for every contiguous
// published request, up to `max`, then frees them all with one release. Records whose length
// disagrees with their header still reach fn (status PD3_E_CORRUPT) so their ids can be answered
// with an error. Returns the number of records taken, or PD3_E_CORRUPT when a slot's framing is
// broken (SlotRing::drain): nothing past that slot is taken.
template <class Fn>
int drain_requests(pd3_control* c, uint32_t max, Fn&& fn) {
  uint64_t taken = 0;  // counted here: a framing break may end a pass that already took records
  const int rc = request_ring(c).drain(max, [&](const uint8_t* rec, uint32_t len) {
    RequestView v{};
    v.payload = rec + sizeof(pd3_request);
    if (len < sizeof(pd3_slot) + sizeof(pd3_request)) {
      v.status = PD3_E_CORRUPT;
    } else {
      std::memcpy(&v.hdr, rec, sizeof v.hdr);
      const uint64_t want = SlotRing::slot_len(sizeof(pd3_request) + uint64_t(pd3_request_payload_len(&v.hdr)));
      v.status = want == len ? PD3_OK : PD3_E_CORRUPT;
    }
    if (v.status != PD3_OK) count(c->agent_corrupt);
    fn(static_cast<const RequestView&>(v));
    ++taken;
  });
  if (taken > 0) {
    count(c->agent_batches);
    count(c->agent_requests, taken);
  }
  if (rc == PD3_E_CORRUPT) count(c->agent_corrupt);
  return rc;
}

}  // namespace pd3
