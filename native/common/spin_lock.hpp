// spin_lock.hpp — a lock for critical sections of tens of nanoseconds that are almost never
// contended (a handle's staging, taken once per request): one atomic exchange to take and a plain
// release store to give back, where a pthread mutex pays a second locked instruction to unlock.
// A waiter spins briefly, then yields, so a holder preempted on a shared core is not spun against.
#pragma once

#include <atomic>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace pd3 {

// Meets the Lockable requirements (std::lock_guard, std::unique_lock).
class SpinLock {
 public:
  void lock() {
    for (uint32_t spins = 0;; ++spins) {
      // acquire: what the previous holder wrote before its release store is visible to us.
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      // relaxed: only a hint of when to try the exchange again; the exchange decides.
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins > kSpinsBeforeYield) {
          std::this_thread::yield();
        } else {
          relax();
        }
      }
    }
  }
  bool try_lock() {
    // relaxed first: a failed attempt must not take the line exclusively; acquire as in lock().
    return !locked_.load(std::memory_order_relaxed) && !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() {
    // release: our writes in the critical section are visible to the next holder's acquire.
    locked_.store(false, std::memory_order_release);
  }

 private:
  static constexpr uint32_t kSpinsBeforeYield = 64;
  static void relax() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
  }
  std::atomic<bool> locked_{false};
};

}  // namespace pd3
