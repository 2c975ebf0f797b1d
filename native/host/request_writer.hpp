// request_writer.hpp — host side of the request ring: publish one request, lock-free, any thread.
#pragma once

#include "common/doorbell.hpp"
#include "common/segment_rings.hpp"
#include "pd3/status.h"

namespace pd3 {

// Publishes `hdr` followed by `payload_len` bytes of `payload` (write data or a key), and wakes the
// agent if it sleeps. Returns PD3_OK, PD3_E_AGAIN (ring full: nothing written) or PD3_E_TOO_BIG.
inline int publish_request(pd3_control* c, const pd3_request& hdr, const void* payload, uint32_t payload_len) {
  const int rc = request_ring(c).publish_record(&hdr, sizeof hdr, payload, payload_len, /*many_producers=*/true);
  if (rc == PD3_OK) {
    count(c->host_requests);
    ring_agent(c);
  }
  if (rc == PD3_E_AGAIN) count(c->host_ring_full);
  return rc;
}

}  // namespace pd3
