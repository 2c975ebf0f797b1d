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
  auto sleeping = aref(c->agent_sleeping);
  // relaxed: ordered by the fences.
  if (sleeping.load(std::memory_order_relaxed) != PD3_AGENT_SLEEPING) return;
  // One wake per sleep: the publisher that takes the announcement back to AWAKE wakes the agent;
  // the others then see it awake. The agent clears it itself only once it runs again, and until
  // then every publication would wake it again, a system call each (on a busy machine, nearly every
  // batch). A publisher that loses this race read a value older than the agent's next announcement,
  // so its fence precedes that arm's and the arm's look at the ring sees its request; the winner's
  // increment comes after the announcement it took back, hence after the count that sleep waits on
  // (AgentDoorbell::arm reads it first), so the agent never sleeps through it.
  // seq_cst: part of the doorbell's handshake like the fence; relaxed on failure: nothing to order.
  uint32_t expected = PD3_AGENT_SLEEPING;
  if (!sleeping.compare_exchange_strong(expected, PD3_AGENT_AWAKE, std::memory_order_seq_cst,
                                        std::memory_order_relaxed))
    return;
  // seq_cst: a waiter that loaded the old value before sleeping sees the change (FUTEX_WAIT fails).
  aref(c->agent_doorbell).fetch_add(1, std::memory_order_seq_cst);
  // Shared futex (no FUTEX_PRIVATE_FLAG): the word is in a mapping other processes share.
  (void)syscall(SYS_futex, &c->agent_doorbell, FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

}  // namespace pd3
