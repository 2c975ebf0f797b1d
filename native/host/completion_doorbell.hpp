// completion_doorbell.hpp — the host's side of the completion doorbell (pd3_control line 13): a
// thread in pd3_host_wait says how many more responses it wants and sleeps on a futex until the
// agent has published that many (or a timeout), instead of guessing how long to sleep. The agent's
// side is ResponseWriter::flush (native/dpu/response_writer.cpp).
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

namespace pd3 {

// How a wait for responses ended.
enum class ResponseWait {
  kReady,     // the agent had published them already: no sleep
  kWoken,     // woken (by the agent, or a futex wake-up the caller must treat as spurious)
  kTimedOut,  // the timeout passed first
};

// Waits until the agent has published `want` (>= 1) responses more than it had when called, or
// `timeout_ns` pass. Any host thread of the segment's owner; several may wait at once.
[[nodiscard]] inline ResponseWait wait_for_responses(pd3_control* c, uint32_t want, uint64_t timeout_ns) {
  auto published = [c] {
    // acquire: pairs with the agent's count, written after the seals of the responses it counts, so
    // the responses counted are visible to the drain that follows the wait.
    return aref(c->agent_responses).load(std::memory_order_acquire);
  };
  const uint64_t target = published() + want;
  auto wake_at = aref(c->host_wake_at);
  // relaxed: the value is only a guess for the CAS below, which revalidates it.
  uint64_t now_at = wake_at.load(std::memory_order_relaxed);
  // relaxed: published to the agent by the release half of the seq_cst increment below.
  while (target < now_at &&
         !wake_at.compare_exchange_weak(now_at, target, std::memory_order_relaxed, std::memory_order_relaxed)) {
  }
  // seq_cst: the agent that sees this count also sees the target stored above (release), and with
  // the fence below forms the doorbell's handshake: either the agent's fence after its count sees us
  // sleeping, or our look at the count after ours sees its responses.
  aref(c->host_sleeping).fetch_add(1, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // acquire: a wake (the agent's seq_cst increment) seen here also shows the count written before it.
  const uint32_t seen = aref(c->host_doorbell).load(std::memory_order_acquire);
  ResponseWait how = ResponseWait::kReady;
  if (published() < target) {
    const timespec ts{time_t(timeout_ns / 1000000000ull), long(timeout_ns % 1000000000ull)};
    // Shared futex (no FUTEX_PRIVATE_FLAG): the agent is another process. A wake between our look at
    // the count and this call changed the word: FUTEX_WAIT then returns at once.
    const long rc = syscall(SYS_futex, &c->host_doorbell, FUTEX_WAIT, seen, &ts, nullptr, 0);
    how = rc != 0 && errno == ETIMEDOUT ? ResponseWait::kTimedOut : ResponseWait::kWoken;
  }
  // relaxed: leaving only makes the agent's check for sleepers skip a wake nobody needs.
  aref(c->host_sleeping).fetch_sub(1, std::memory_order_relaxed);
  return how;
}

}  // namespace pd3
