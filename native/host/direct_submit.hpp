// direct_submit.hpp — issuing one request in direct mode: from the host straight to its memory
// server (PD3_HOST_DIRECT_ONLY, or the agent down under PD3_FALLBACK_DIRECT), without the rings.
#pragma once

#include "host/host_core.hpp"
#include "host/ring_submit.hpp"

namespace pd3 {

// Queues `r` on the direct path. The id comes from the handle's id cache and the in-flight entry
// is written under the handle's own lock, so issuing takes no core-wide lock but the direct
// path's. Registers the caller's buffer first, as an RDMA NIC would need it (a READ's destination
// until its completion, a WRITE's source only while it is copied). Returns the request id,
// PD3_E_INFLIGHT (no id left), or DirectPath::submit's error (nothing was issued).
[[nodiscard]] int issue_direct(pd3_host* h, const RingRequest& r);

}  // namespace pd3
