// doorbell.hpp — wakes the Transfer Engine when work arrives while it sleeps, without a system call
// per hand-off: the engine announces how it sleeps in the control block (pd3_control line 12), and
// producers ring only then. Host threads in another process ring through a futex on the shared
// word; the engine's own threads (capture, Host View shards) also through an eventfd, which the
// engine polls alongside its sockets when it waits for responses.
#pragma once

#include <linux/futex.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>

#include "common/atomics.hpp"
#include "common/unique_fd.hpp"
#include "pd3/segment.h"
#include "pd3/status.h"

namespace pd3 {

// Rings the agent of segment `c` from any process, after publishing a request. seq_cst fence:
// pairs with Doorbell::arm's — either the agent's check after arming sees our request, or we see
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

// The engine's side, and its own threads' ring. One sleeper (the engine thread).
class Doorbell {
 public:
  // Opens the eventfd; the futex words are `c`'s. PD3_OK or PD3_E_SYS.
  int open(pd3_control* c) {
    control_ = c;
    fd_.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    return fd_.valid() ? PD3_OK : PD3_E_SYS;
  }
  // Poll this for POLLIN while armed as PD3_AGENT_POLLING.
  int fd() const { return fd_.get(); }

  // The engine's threads, after publishing work (see ring_agent for the ordering).
  void ring() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    // relaxed: ordered by the fences.
    const uint32_t how = aref(control_->agent_sleeping).load(std::memory_order_relaxed);
    if (how == PD3_AGENT_POLLING) {
      const uint64_t one = 1;
      (void)!::write(fd_.get(), &one, sizeof one);
    } else if (how == PD3_AGENT_SLEEPING) {
      ring_agent(control_);
    }
  }

  // The engine, before its last check for work: `how` is PD3_AGENT_POLLING or PD3_AGENT_SLEEPING.
  // Returns the doorbell's count to hand to sleep() (read after the announcement, so a ring after
  // it changes the count and the sleep returns at once).
  uint32_t arm(uint32_t how) {
    aref(control_->agent_sleeping).store(how, std::memory_order_relaxed);  // relaxed: the fence orders it
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return aref(control_->agent_doorbell).load(std::memory_order_seq_cst);  // seq_cst: see ring_agent
  }
  // PD3_AGENT_SLEEPING: waits until a ring, or `timeout` (relative) passes. Returns true if rung
  // (woken, or rung before the wait began), false on timeout.
  bool sleep(uint32_t armed_count, const timespec* timeout) {
    if (syscall(SYS_futex, &control_->agent_doorbell, FUTEX_WAIT, armed_count, timeout, nullptr, 0) == 0) return true;
    return errno != ETIMEDOUT;  // EAGAIN: the count changed (rung); EINTR: look again
  }
  // After the wait (or after deciding not to wait); `rung`: fd() polled readable.
  void disarm(bool rung) {
    // relaxed: a late ring only costs a write or a wake.
    aref(control_->agent_sleeping).store(PD3_AGENT_AWAKE, std::memory_order_relaxed);
    if (rung) {
      uint64_t count;
      (void)!::read(fd_.get(), &count, sizeof count);  // resets the counter
    }
  }

 private:
  pd3_control* control_ = nullptr;
  UniqueFd fd_;
};

}  // namespace pd3
