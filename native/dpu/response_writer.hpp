// response_writer.hpp — agent side of the response ring: publish one response (single producer).
#pragma once

#include "common/segment_rings.hpp"
#include "pd3/status.h"

namespace pd3 {

// The agent's "DMA write" of one response (paper §6.1 step ④). `status` is PD3_OK or a negative
// pd3_status; `data` (READ data or a CONTROL reply) is only sent with PD3_OK. Must be called from
// one thread only. Returns PD3_OK, PD3_E_AGAIN (ring full: the host has not polled; retry later)
// or PD3_E_TOO_BIG.
inline int publish_response(pd3_control* c, uint16_t op_id, int status, const void* data, uint32_t size) {
  const pd3_response hdr{op_id, uint16_t(status < 0 ? -status : status), size};
  const int rc = response_ring(c).publish_record(&hdr, sizeof hdr, data, pd3_response_data_len(&hdr),
                                                 /*many_producers=*/false);
  if (rc == PD3_OK) count_by_agent(c->agent_responses);
  return rc;
}

}  // namespace pd3
