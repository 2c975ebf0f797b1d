// biased_lock.hpp — a lock that one thread at a time, the owner of its bias, takes and gives back
// with plain stores. A host handle is nearly always used by one thread at a time (often set up by
// one and then driven by another), and the locked instruction of a SpinLock, taken per request,
// waits for every store before it, including ring lines still on their way from the agent's core.
//
// The fast path is one side of an asymmetric Dekker handshake. The owner announces itself inside
// its bias record (a plain store) and then checks that the record is still the lock's bias, with
// only a compiler barrier between the two. A thread that wants the lock and is not the owner takes
// the inner SpinLock, withdraws the bias, and calls membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED),
// which runs a full memory barrier on every CPU running a thread of this process before it returns:
// either the owner's check comes after that barrier and sees the bias gone, or its announcement came
// before it and the revoker sees it inside and waits for it to leave. The revoker then becomes the
// owner of a fresh record (a thread that sets a handle up and one that drives it cost one revocation).
// Each record is used once and never freed, and a lock hands out at most kMaxBiases of them: threads
// that keep taking the lock in turn end up on the SpinLock alone, paying one membarrier per hand-over
// only until then. Without membarrier (an old kernel, a seccomp filter) or under ThreadSanitizer
// (which cannot see the barrier's ordering) the lock is never biased: it is the SpinLock.
#pragma once

#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "common/spin_lock.hpp"

namespace pd3 {

// Meets the Lockable requirements (std::lock_guard). Not recursive.
class BiasedLock {
 public:
  static constexpr uint32_t kMaxBiases = 4;

  void lock() {
    const uintptr_t me = thread_tag();
    // acquire: pairs with the release that installed the record, so its owner field is visible.
    Bias* b = bias_.load(std::memory_order_acquire);
    if (b != nullptr && b->owner == me) {
      // relaxed, then a compiler barrier only: the owner's side of the handshake (file comment);
      // the hardware order against a revoker comes from its membarrier.
      b->inside.store(true, std::memory_order_relaxed);
      std::atomic_signal_fence(std::memory_order_seq_cst);
      // acquire: costs nothing on x86 and keeps the critical section's accesses after this check
      // (the check is what admits them).
      if (bias_.load(std::memory_order_acquire) == b) {
        held_ = b;
        return;
      }
      // release: our earlier critical sections are visible to the revoker waiting for this.
      b->inside.store(false, std::memory_order_release);
    }
    inner_.lock();
    take_bias_locked(me);
    held_ = nullptr;
  }

  void unlock() {
    if (held_ != nullptr) {
      // release: the critical section's writes are visible to a revoker that sees us leave.
      held_->inside.store(false, std::memory_order_release);
    } else {
      inner_.unlock();
    }
  }

  // Whether the calling thread owns the bias now (for tests).
  bool biased_to_me() const {
    const Bias* b = bias_.load(std::memory_order_acquire);  // acquire: as in lock()
    return b != nullptr && b->owner == thread_tag();
  }
  // Bias records handed out so far (for tests).
  uint32_t biases() const { return used_.load(std::memory_order_relaxed); }  // relaxed: a report

  // Whether this process can bias locks at all (membarrier available, and registered once).
  static bool can_bias() {
    static const bool ok = register_membarrier();
    return ok;
  }

 private:
  // One owner's bias: written by the lock's holder when handed out, then `inside` by its owner only.
  struct Bias {
    uintptr_t owner = 0;
    std::atomic<bool> inside{false};
  };

  // Caller holds inner_, not on the fast path: withdraws another thread's bias (waiting until it is
  // out of any critical section it entered on the fast path), then hands a fresh record to `me`
  // while any are left.
  void take_bias_locked(uintptr_t me) {
    if (!can_bias()) return;
    Bias* old = bias_.load(std::memory_order_relaxed);  // relaxed: only inner_'s holder stores it
    if (old != nullptr && old->owner == me) return;       // ours, entered here after a lost race
    const uint32_t used = used_.load(std::memory_order_relaxed);  // relaxed: only inner_'s holder writes it
    if (old != nullptr) {
      // relaxed: the membarrier below is the fence between this store and the load of inside.
      bias_.store(nullptr, std::memory_order_relaxed);
      // Every thread of this process running now executes a full barrier before this returns;
      // those not running passed one when they were switched out. Registered in can_bias(), so it
      // cannot fail with EPERM, and nothing else is expected from it.
      (void)syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
      // acquire: pairs with the owner's release when it leaves: its critical section happened
      // before ours.
      for (uint32_t spins = 0; old->inside.load(std::memory_order_acquire); ++spins) {
        if (spins > 64) sched_yield();
      }
    }
    if (used == kMaxBiases) return;
    Bias* fresh = &records_[used];
    fresh->owner = me;
    used_.store(used + 1, std::memory_order_relaxed);  // relaxed: see above
    // release: the record's owner is visible to whoever loads the bias with acquire.
    bias_.store(fresh, std::memory_order_release);
  }

  static bool register_membarrier() {
#if defined(__SANITIZE_THREAD__)
    return false;  // ThreadSanitizer cannot see the barrier's ordering: always the inner lock
#else
    const long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (cmds < 0 || (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
    return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#endif
  }

  // A nonzero tag unique to the calling thread among the threads alive. pthread_self() reads the
  // thread pointer: no thread_local, whose every access from a shared library is a call.
  static uintptr_t thread_tag() { return uintptr_t(pthread_self()); }

  std::atomic<Bias*> bias_{nullptr};  // the record of the thread that may take the fast path
  std::atomic<uint32_t> used_{0};     // records handed out
  Bias records_[kMaxBiases];
  Bias* held_ = nullptr;              // the current holder's record (fast path), else null
  SpinLock inner_;
};

}  // namespace pd3
