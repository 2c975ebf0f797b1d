// request_reader.hpp — agent side of the request ring: take every contiguous published request,
// honouring the host's fence.
#pragma once

#include <cstring>

#include "common/segment_rings.hpp"
#include "pd3/status.h"

namespace pd3 {

// One request as the agent sees it in the ring.
struct RequestView {
  pd3_request hdr;
  const uint8_t* payload;  // pd3_request_payload_len(&hdr) bytes (write data or key)
  uint32_t record_len;     // bytes of header + payload (the record as the transport carries it)
  uint64_t pos;            // the slot's ring position: compare with req_fence before answering
  int status;              // PD3_OK, or PD3_E_CORRUPT: answer with this status
  bool has_header;         // false: the slot is too short for a header, so there is no id to answer
};

// The host's fence (pd3_control.req_fence): requests below it were failed by the host.
inline uint64_t request_fence(pd3_control* c) {
  // acquire: pairs with the host's release store when it declares the agent down; the ids it
  // failed before storing the fence are then known to be failed.
  return aref(c->req_fence).load(std::memory_order_acquire);
}

// True if the request at ring position `pos` must not be answered any more (the host failed it).
inline bool request_fenced(pd3_control* c, uint64_t pos) { return pos < request_fence(c); }

// Tells the host that no response for a request below `fence` will be published after this store.
inline void ack_fence(pd3_control* c, uint64_t fence) {
  // release: every response published before this store is visible to a host that sees the ack.
  aref(c->agent_fence_ack).store(fence, std::memory_order_release);
}

// The agent's "DMA read" (paper §6.1 step ①): calls fn(const RequestView&) for every contiguous
// published request, up to `max`, then frees them all with one release. Requests below the host's
// fence are discarded unseen (counted in agent_fenced). Records whose length disagrees with their
// header still reach fn (status PD3_E_CORRUPT) so their ids can be answered with an error.
// Returns the number of records taken (fenced ones included), or PD3_E_CORRUPT when a slot's
// framing is broken (SlotRing::drain): nothing past that slot is taken.
template <class Fn>
int drain_requests(pd3_control* c, uint32_t max, Fn&& fn) {
  uint64_t taken = 0;  // counted here: a framing break may end a pass that already took records
  uint64_t fenced = 0;
  const uint64_t fence = request_fence(c);
  const int rc = request_ring(c).drain(max, [&](const uint8_t* rec, uint32_t len, uint64_t pos) {
    ++taken;
    if (pos < fence) {
      ++fenced;
      return;
    }
    RequestView v{};
    v.payload = rec + sizeof(pd3_request);
    v.pos = pos;
    v.has_header = len >= sizeof(pd3_slot) + sizeof(pd3_request);
    if (!v.has_header) {
      v.status = PD3_E_CORRUPT;
    } else {
      std::memcpy(&v.hdr, rec, sizeof v.hdr);
      const uint64_t body = sizeof(pd3_request) + uint64_t(pd3_request_payload_len(&v.hdr));
      v.status = SlotRing::slot_len(body) == len ? PD3_OK : PD3_E_CORRUPT;
      v.record_len = v.status == PD3_OK ? uint32_t(body) : 0;
    }
    if (v.status != PD3_OK) count_by_agent(c->agent_corrupt);
    fn(static_cast<const RequestView&>(v));
  });
  if (taken > 0) {
    count_by_agent(c->agent_batches);
    count_by_agent(c->agent_requests, taken);
  }
  if (fenced > 0) count_by_agent(c->agent_fenced, fenced);
  if (rc == PD3_E_CORRUPT) count_by_agent(c->agent_corrupt);
  return rc < 0 ? rc : int(taken);
}

}  // namespace pd3
