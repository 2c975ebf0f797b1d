// ring_submit.hpp — requests through the agent: staged by the issuing handle, then published to
// the request ring in batches (one reservation, one doorbell check and one counter update each).
// A handle publishes at its next pd3_host_poll, pd3_host_wait or pd3_host_flush, or as soon as it
// holds its core's publish_batch requests.
#pragma once

#include <cstdint>

#include "host/host_core.hpp"

namespace pd3 {

// What one ring request is: its header fields, payload and where its answer goes.
struct RingRequest {
  uint16_t op = 0;
  uint16_t ctl = 0;            // CONTROL sub-op, else 0
  uint32_t region_field = 0;   // the header's region field (the sub-op for CONTROL)
  uint32_t offset = 0;
  uint32_t size = 0;
  const void* payload = nullptr;
  uint32_t payload_len = 0;
  void* dest = nullptr;        // READ destination
  uint64_t user_data = 0;
  uint32_t names = 0;          // the region to report in the completion
};

// Writes request `id`'s in-flight entry for `r`, issued on `h`, all but its flags (Inflight says
// who reads it when). Caller holds h->issue_mu and took `id` from h->ids.
void write_entry(HostCore& core, uint16_t id, pd3_host* h, const RingRequest& r);

// Ends request `id` of `h`, staged and never sent, with `status`: its completion goes to h's
// queue, and its registration (a direct READ's) and its id are freed. Caller holds h->issue_mu.
void complete_unsent(pd3_host* h, uint16_t id, int status);

// Stages `r` on `h`. Returns the request id, or PD3_E_AGENT_DOWN (the agent's heartbeat is stale:
// nothing was staged; the caller falls back), PD3_E_INFLIGHT (no id left), PD3_E_AGAIN (the batch
// this request fills could not all be published: this one was not staged) or PD3_E_TOO_BIG (the request
// could never fit the ring).
[[nodiscard]] int stage_ring_request(pd3_host* h, const RingRequest& r);

// Publishes what `h` has staged. If the agent went down since the requests were staged, they
// complete with PD3_E_AGENT_DOWN, or go to the memory servers directly under PD3_FALLBACK_DIRECT.
// Returns PD3_OK, or PD3_E_AGAIN when the ring had room for only some (or none): the rest stay
// staged for the next call.
[[nodiscard]] int publish_staged(pd3_host* h);

// Forgets what `h` has staged and hands its ids back to the core (the handle is closing).
void drop_staged(pd3_host* h);

}  // namespace pd3
