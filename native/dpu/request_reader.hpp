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
  int status;              // PD3_OK, or PD3_E_CORRUPT / PD3_E_BAD_OP: answer with this status
};

// The agent's "DMA read" (paper §6.1 step ①): calls fn(const RequestView&) for every contiguous
// published request, up to `max`, then frees them all with one release. Records with a bad op or
// inconsistent length still reach fn (status set) so their ids can be answered with an error.
// Returns the number of records taken, or PD3_E_CORRUPT if a slot's framing is broken: the ring
// cannot be resynchronised and nothing past that slot is taken.
template <class Fn>
int drain_requests(pd3_control* c, uint32_t max, Fn&& fn) {
  const SlotRing ring = request_ring(c);
  uint64_t pos = ring.head();
  int taken = 0;
  int rc = 0;
  while (uint32_t(taken) < max) {
    const pd3_slot* s = ring.published_at(pos);
    if (s == nullptr) break;
    const uint32_t len = s->length;
    if (!ring.length_ok(pos, len) || (s->kind != PD3_SLOT_RECORD && s->kind != PD3_SLOT_PAD)) {
      count(c->agent_corrupt);
      rc = PD3_E_CORRUPT;
      break;
    }
    if (s->kind == PD3_SLOT_RECORD) {
      const auto* rec = reinterpret_cast<const uint8_t*>(s + 1);
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
    }
    pos += len;
  }
  if (pos != ring.head()) ring.release_to(pos);
  if (taken) {
    count(c->agent_batches);
    count(c->agent_requests, uint64_t(taken));
  }
  return rc ? rc : taken;
}

}  // namespace pd3
