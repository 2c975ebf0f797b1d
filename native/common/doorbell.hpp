// doorbell.hpp — wakes a thread that sleeps in poll() when another thread hands it work, without a
// system call per hand-off: the sleeper announces that it is about to sleep, and producers ring
// (write an eventfd) only then. Used by the Transfer Engine, whose idle sleep would otherwise
// delay every prefetch the capture thread queues by up to the sleep's length.
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "common/unique_fd.hpp"
#include "pd3/status.h"

namespace pd3 {

// One sleeper, any number of producers.
class Doorbell {
 public:
  // PD3_OK, or PD3_E_SYS when no eventfd can be made.
  int open() {
    fd_.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    return fd_.valid() ? PD3_OK : PD3_E_SYS;
  }
  // Poll this for POLLIN alongside the sleeper's other fds.
  int fd() const { return fd_.get(); }

  // Producer, after publishing work (with its own release store): wakes the sleeper if it is
  // asleep or about to be. seq_cst fence: pairs with arm()'s — either the sleeper's check after
  // arm() sees our work, or we see its announcement and ring (the two cannot miss each other).
  void ring() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    // relaxed: ordered by the fences.
    if (!sleeping_.load(std::memory_order_relaxed)) return;
    const uint64_t one = 1;
    (void)!::write(fd_.get(), &one, sizeof one);
  }

  // Sleeper, before its last check for work; if the check finds none, sleep polling fd().
  void arm() {
    sleeping_.store(true, std::memory_order_relaxed);  // relaxed: ordered by the fence
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  // Sleeper, after the sleep (or after deciding not to sleep); `rung`: fd() polled readable.
  void disarm(bool rung) {
    sleeping_.store(false, std::memory_order_relaxed);  // relaxed: a late ring only costs a write
    if (rung) {
      uint64_t count;
      (void)!::read(fd_.get(), &count, sizeof count);  // resets the counter
    }
  }

 private:
  UniqueFd fd_;
  std::atomic<bool> sleeping_{false};
};

}  // namespace pd3
