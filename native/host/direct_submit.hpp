// direct_submit.hpp — issuing requests in direct mode: from the host straight to their memory
// servers (PD3_HOST_DIRECT_ONLY, or the agent down under PD3_FALLBACK_DIRECT), without the rings.
// With publish_batch above 1 a handle stages them, as it does ring requests, and queues them on
// the direct path together: one lock of the direct path per batch instead of one per request.
#pragma once

#include "host/ring_submit.hpp"

namespace pd3 {

// Issues `r` on the direct path: queued at once with publish_batch 1, else staged until the batch
// is full or the handle's next poll, wait, flush or close. The id comes from the handle's id cache
// and the in-flight entry is written under the handle's own lock: the in-flight table's mutex is
// not taken, and the direct path's only once per request (publish_batch 1) or per batch.
// Registers the caller's buffer first, as an RDMA NIC would need it (a READ's destination until
// its completion, a WRITE's source only while it is copied). Returns the request id,
// PD3_E_INFLIGHT (no id left), or, when this request is queued at once, DirectPath::submit's error
// (nothing was issued). A staged request that no server can take completes with the reason.
[[nodiscard]] int issue_direct(pd3_host* h, const RingRequest& r);

// Queues what `h` has staged for the direct path (its poll, wait, flush and close call this).
void publish_direct(pd3_host* h);

}  // namespace pd3
