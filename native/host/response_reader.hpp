// response_reader.hpp — host side of the response ring: take every published response in order.
#pragma once

#include <cstring>

#include "common/segment_rings.hpp"
#include "pd3/status.h"

namespace pd3 {

// Calls fn(const pd3_response&, const uint8_t* data, bool well_formed) for up to `max` published
// responses, then frees them. `data` holds pd3_response_data_len(&hdr) bytes when well_formed.
// Returns the number taken, or PD3_E_CORRUPT when a slot's framing is broken (SlotRing::drain).
template <class Fn>
int drain_responses(pd3_control* c, uint32_t max, Fn&& fn) {
  uint64_t taken = 0;  // counted here: a framing break may end a pass that already took records
  const int rc = response_ring(c).drain(max, [&](const uint8_t* rec, uint32_t len, uint64_t) {
    pd3_response hdr{};
    const bool fits = len >= sizeof(pd3_slot) + sizeof hdr;
    if (fits) std::memcpy(&hdr, rec, sizeof hdr);
    const bool well_formed = fits && SlotRing::slot_len(sizeof hdr + uint64_t(pd3_response_data_len(&hdr))) == len;
    fn(static_cast<const pd3_response&>(hdr), rec + sizeof hdr, well_formed);
    ++taken;
  });
  if (taken > 0) count(c->host_responses, taken);
  return rc;
}

}  // namespace pd3
