// response_writer.hpp — agent side of the response ring: publish one response (single producer).
#pragma once

#include <cstring>

#include "common/segment_rings.hpp"
#include "pd3/status.h"

namespace pd3 {

// The agent's "DMA write" of one response (paper §6.1 step ④). `status` is PD3_OK or a negative
// pd3_status; `data` (READ data or a CONTROL reply) is only sent with PD3_OK. Must be called from
// one thread only. Returns PD3_OK, PD3_E_AGAIN (ring full: the host has not polled; retry later)
// or PD3_E_TOO_BIG.
inline int publish_response(pd3_control* c, uint16_t op_id, int status, const void* data, uint32_t size) {
  const SlotRing ring = response_ring(c);
  pd3_response hdr{op_id, uint16_t(status < 0 ? -status : status), size};
  const uint32_t data_len = pd3_response_data_len(&hdr);
  const uint64_t len = SlotRing::slot_len(sizeof hdr + uint64_t(data_len));
  if (len > ring.max_slot()) return PD3_E_TOO_BIG;
  SlotReservation r;
  if (!ring.reserve_sp(len, &r)) return PD3_E_AGAIN;
  uint8_t* rec = ring.record_at(r);
  std::memcpy(rec, &hdr, sizeof hdr);
  if (data_len) std::memcpy(rec + sizeof hdr, data, data_len);
  ring.publish(r, len);
  count(c->agent_responses);
  return PD3_OK;
}

}  // namespace pd3
