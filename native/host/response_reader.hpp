// response_reader.hpp — host side of the response ring: take every published response in order.
#pragma once

#include <cstring>

#include "common/segment_rings.hpp"
#include "common/slot_records.hpp"
#include "pd3/status.h"

namespace pd3 {

// How far ahead of the record being handled drain_responses prefetches the ring: four cache lines,
// a few responses of a batch (A/B against the instant agent, docs/benchmarks.md, "transfer").
inline constexpr uint64_t kResponsePrefetchAhead = 256;

// Bytes of the response record that starts at `rec` (header and data), from its header.
inline uint64_t response_record_len(const uint8_t* rec) {
  pd3_response hdr;
  std::memcpy(&hdr, rec, sizeof hdr);
  return sizeof hdr + uint64_t(pd3_response_data_len(&hdr));
}

// Calls fn(const pd3_response&, const uint8_t* data, bool well_formed) for up to `max` published
// responses (a batch slot is taken whole: SlotRing::drain), then frees them. `data` holds
// pd3_response_data_len(&hdr) bytes when well_formed. A one-record slot whose length disagrees with
// its header is delivered not well formed; of a batch slot whose framing breaks, the records before
// the break are delivered (and the pass ends with PD3_E_CORRUPT there).
// Returns the number taken, or PD3_E_CORRUPT when a slot's framing is broken (SlotRing::drain).
template <class Fn>
int drain_responses(pd3_control* c, uint32_t max, Fn&& fn) {
  uint64_t taken = 0;  // counted here: a framing break may end a pass that already took records
  const int rc = response_ring(c).drain(max, [&](const pd3_slot& s, const uint8_t* body, uint64_t) -> int {
    const uint64_t body_len = s.length - sizeof(pd3_slot);
    if (s.kind == PD3_SLOT_RECORDS) {
      // One pass, delivering as it goes (the responses are read once, while their lines are
      // fresh). A batch whose framing breaks has had the records before the break delivered,
      // each whole and in bounds; the host then treats the ring as broken and reads no further.
      uint32_t n = 0;
      const bool framed = slot_records<sizeof(pd3_response)>(body, body_len, s.count, [](const uint8_t* r) { return response_record_len(r); })
                              .walk([&](const uint8_t* rec, uint32_t len) {
                                // The agent's core wrote these lines: a read of each waits a
                                // line round trip between the cores, so the lines four ahead are
                                // asked for now, while this record is handled. (Past the body's
                                // end it fetches a line for nothing; a prefetch never faults.)
                                __builtin_prefetch(rec + kResponsePrefetchAhead, 0, 3);
                                pd3_response hdr;
                                std::memcpy(&hdr, rec, sizeof hdr);
                                // Judged on this copy of the header, which fn gets: the slot is in
                                // memory a faulty agent could still write, and fn must never be
                                // told of more data than was bounds-checked.
                                fn(static_cast<const pd3_response&>(hdr), rec + sizeof hdr,
                                   sizeof hdr + pd3_response_data_len(&hdr) == len);
                                ++n;
                              });
      taken += n;
      return framed ? int(n) : -1;
    }
    pd3_response hdr{};
    const bool fits = body_len >= sizeof hdr;
    if (fits) std::memcpy(&hdr, body, sizeof hdr);
    const bool well_formed = fits && SlotRing::slot_len(sizeof hdr + uint64_t(pd3_response_data_len(&hdr))) == s.length;
    fn(static_cast<const pd3_response&>(hdr), body + sizeof hdr, well_formed);
    ++taken;
    return 1;
  });
  if (taken > 0) count(c->host_responses, taken);
  return rc;
}

}  // namespace pd3
