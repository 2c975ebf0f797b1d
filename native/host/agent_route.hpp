// agent_route.hpp — whether the agent is there to take ring requests, and what happens to the
// requests it took when it is not (docs/host-library.md, "When the agent dies").
#pragma once

#include <cstdint>

#include "common/atomics.hpp"
#include "host/host_core.hpp"

namespace pd3 {

class CompletionSink;

// CLOCK_MONOTONIC_COARSE: a few ns instead of ~20, at a resolution of a few ms (the precise clock
// is now_ns in common/net.hpp).
uint64_t coarse_ns();

// Is the agent's heartbeat fresher than the core's timeout?
bool agent_alive(const HostCore& core);
// How many times an agent attached the segment.
inline uint32_t agent_attaches(const HostCore& core) {
  // acquire: pairs with the attach's release increment (the repaired response ring is visible).
  return aref(core.control()->agent_attaches).load(std::memory_order_acquire);
}

// The agent that took the ring's requests is gone — its heartbeat stopped, or a new agent attached
// in its place (`restart`) — so some may never be answered: fails every request waiting on the
// ring, fences the ring so no agent executes them later, and holds their ids until an agent
// acknowledges the fence. Takes route_mu exclusively, then id_mu.
void declare_agent_down(HostCore& core, bool restart);

// Frees quarantined ids once an agent has acknowledged the fence and every response it published
// before the acknowledgement was drained (the caller loaded `ack` before draining).
void release_quarantine(HostCore& core, uint64_t ack);

// Settles the ring first if a new agent attached since it was last settled. Inline: every request
// issued checks, and nearly always finds nothing to do.
inline void settle_after_restart(HostCore& core) {
  // relaxed: a hint, re-checked under the exclusive route lock.
  if (agent_attaches(core) != core.seen_attaches.load(std::memory_order_relaxed)) declare_agent_down(core, true);
}

}  // namespace pd3
