// response_reader.hpp — host side of the response ring: take every published response in order.
#pragma once

#include <cstring>

#include "common/segment_rings.hpp"
#include "pd3/status.h"

namespace pd3 {

// Calls fn(const pd3_response&, const uint8_t* data, bool well_formed) for up to `max` published
// responses, then frees them. `data` holds pd3_response_data_len(&hdr) bytes when well_formed.
// Returns the number taken, or PD3_E_CORRUPT when a slot's framing is broken: the ring cannot be
// resynchronised, so nothing past that slot is taken (the agent must recreate the session).
template <class Fn>
int drain_responses(pd3_control* c, uint32_t max, Fn&& fn) {
  const SlotRing ring = response_ring(c);
  uint64_t pos = ring.head();
  int taken = 0;
  int rc = 0;
  while (uint32_t(taken) < max) {
    const pd3_slot* s = ring.published_at(pos);
    if (s == nullptr) break;
    const uint32_t len = s->length;
    if (!ring.length_ok(pos, len) || (s->kind != PD3_SLOT_RECORD && s->kind != PD3_SLOT_PAD)) {
      rc = PD3_E_CORRUPT;
      break;
    }
    if (s->kind == PD3_SLOT_RECORD) {
      const auto* rec = reinterpret_cast<const uint8_t*>(s + 1);
      pd3_response hdr{};
      const bool fits = len >= sizeof(pd3_slot) + sizeof hdr;
      if (fits) std::memcpy(&hdr, rec, sizeof hdr);
      const bool well_formed =
          fits && SlotRing::slot_len(sizeof hdr + uint64_t(pd3_response_data_len(&hdr))) == len;
      fn(hdr, rec + sizeof hdr, well_formed);
      ++taken;
    }
    pos += len;
  }
  if (pos != ring.head()) ring.release_to(pos);
  if (taken) count(c->host_responses, uint64_t(taken));
  return rc ? rc : taken;
}

}  // namespace pd3
