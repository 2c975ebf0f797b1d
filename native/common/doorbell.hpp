// doorbell.hpp — the host's side of the agent's doorbell: the engine announces how it sleeps in the
// control block (pd3_control line 12), and a host thread that published a request rings only then,
// through a futex on the shared word. The engine's side is dpu/agent_doorbell.hpp.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>

#include "common/atomics.hpp"
#include "pd3/segment.h"
#include "pd3/status.h"

namespace pd3 {

// Rings the agent of segment `c` from any process, after publishing a request. seq_cst fence:
// pairs with AgentDoorbell::arm's — either the agent's check after arming sees our request, or we see
// that it sleeps and wake it. Costs a fence and a load while the agent is awake.
inline void ring_agent(pd3_control* c) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // relaxed: ordered by the fences.
  if (aref(c->agent_sleeping).load(std::memory_order_relaxed) != PD3_AGENT_SLEEPING) return;
  // seq_cst: a waiter that loaded the old value before sleeping sees the change (FUTEX_WAIT fails).
  aref(c->agent_doorbell).fetch_add(1, std::memory_order_seq_cst);
  // Shared futex (no FUTEX_PRIVATE_FLAG): the word is in a mapping other processes share.
  (void)syscall(SYS_futex, &c->agent_doorbell, FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

}  // namespace pd3
