// agent_route.cpp — see agent_route.hpp.
#include "host/agent_route.hpp"

#include <time.h>

#include "common/atomics.hpp"
#include "host/completions.hpp"

namespace pd3 {

// Plenty against a timeout of (by default) a second; checked on every request issued.
uint64_t coarse_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

bool agent_alive(const HostCore& core) {
  // acquire: pairs with the agent's release store of its beat (nothing depends on it but freshness).
  const uint64_t beat = aref(core.control()->agent_heartbeat_ns).load(std::memory_order_acquire);
  if (beat == 0) return false;
  const uint64_t now = coarse_ns();
  // The coarse clock lags the agent's precise one by up to a tick: a beat "from the future" is fresh.
  return now < beat || now - beat < uint64_t(core.agent_timeout_ms) * 1000000ull;
}

void declare_agent_down(HostCore& core, bool restart) {
  std::unique_lock route(core.route_mu);  // no ring request is between its liveness check and publish
  const uint32_t attaches = agent_attaches(core);
  if (restart ? attaches == core.seen_attaches.load(std::memory_order_relaxed) : agent_alive(core)) return;
  std::lock_guard lock(core.id_mu);
  // relaxed: written under route_mu held exclusively, read as a hint by issuers (settle_after_restart).
  core.seen_attaches.store(attaches, std::memory_order_relaxed);
  if (core.ring_inflight.load(std::memory_order_relaxed) == 0) return;  // relaxed: id_mu is held
  pd3_control* c = core.control();
  // acquire: tail covers every reservation; with route_mu held exclusively all were published.
  const uint64_t fence = aref(c->req_tail).load(std::memory_order_acquire);
  // release: an agent that sees the fence also sees everything before it (pairs with request_fence).
  aref(c->req_fence).store(fence, std::memory_order_release);
  core.quarantine_fence.store(fence, std::memory_order_relaxed);  // relaxed: id_mu is held
  CompletionSink sink(lock);
  for (uint32_t id = 0; id < PD3_MAX_INFLIGHT; ++id) {
    Inflight& e = core.table[id];
    if (!e.busy_now() || !e.via_ring) continue;
    const pd3_completion done{e.user_data, PD3_E_AGENT_DOWN, 0, uint16_t(id), e.op, e.region};
    finish(core, id, done, /*quarantine=*/true, sink);
  }
}

void release_quarantine(HostCore& core, uint64_t ack) {
  // relaxed: a hint that spares every poll the lock; set under id_mu and re-read under it below.
  if (core.quarantine_fence.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard lock(core.id_mu);
  const uint64_t fence = core.quarantine_fence.load(std::memory_order_relaxed);  // relaxed: id_mu is held
  if (fence == 0 || ack < fence) return;
  for (uint32_t id = 0; id < PD3_MAX_INFLIGHT; ++id) {
    Inflight& e = core.table[id];
    if (!e.quarantined) continue;
    e.clear();
    core.free_ids.push(uint16_t(id));
  }
  core.quarantine_fence.store(0, std::memory_order_relaxed);  // relaxed: id_mu is held
}

}  // namespace pd3
