// completion_pacer.hpp — how long pd3_host_wait sleeps between looks at the response ring, which
// has no doorbell: long enough that a wake-up finds a batch of completions (a wake-up costs the
// host several microseconds of CPU, more than handling dozens of completions), short enough that
// a request waits little beyond its answer.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace pd3 {

// Learns the rate at which ring requests complete and turns it into a sleep, and how long waits
// that the completion doorbell ends take. Written by the response ring's drainer (under poll_mu),
// by the publisher that ends an idle spell (under id_mu) and by woken waiters; any thread reads.
class CompletionPacer {
 public:
  static constexpr uint64_t kMinSleepNs = 50'000;    // the sleep of a wait with nothing learnt
  static constexpr uint64_t kMaxSleepNs = 1'000'000;
  static constexpr uint32_t kBatchDivisor = 2;       // wake when ~half of the handle's requests are done
  static constexpr uint32_t kMaxBatch = 1024;

  // Ring requests were published at `now_ns` while none were in flight: the time since the last
  // drain was idle, not spent waiting for answers.
  void on_busy(uint64_t now_ns) {
    since_ns_.store(now_ns, std::memory_order_relaxed);  // relaxed: see on_drain
  }

  // After a drain at `now_ns` that completed `completed` (> 0) ring requests.
  void on_drain(uint64_t now_ns, uint32_t completed) {
    // relaxed: the start of the interval is a hint like the rate itself. on_busy cannot race a
    // drain that completes something (requests are in flight then, so no spell is ending).
    const uint64_t since = since_ns_.load(std::memory_order_relaxed);
    const uint64_t sample = (now_ns - since) / completed;
    since_ns_.store(now_ns, std::memory_order_relaxed);
    // relaxed: a hint for waiters; a stale value only mis-sizes one sleep.
    const uint64_t old = ns_per_completion_.load(std::memory_order_relaxed);
    ns_per_completion_.store(old == 0 ? sample : (old * 7 + sample) / 8, std::memory_order_relaxed);
  }

  // Completions worth a wake-up for a handle with `inflight` requests out.
  static uint32_t batch(uint32_t inflight) { return std::clamp<uint32_t>(inflight / kBatchDivisor, 1, kMaxBatch); }

  // The sleep for a handle with `inflight` requests out, at most `remaining_ns`.
  uint64_t sleep_ns(uint32_t inflight, uint64_t remaining_ns) const {
    // relaxed: see on_drain.
    const uint64_t per = ns_per_completion_.load(std::memory_order_relaxed);
    const uint64_t want = batch(inflight);
    const uint64_t ns = std::clamp<uint64_t>(per * want, kMinSleepNs, kMaxSleepNs);
    return std::min(ns, remaining_ns);
  }

  // A wait that the completion doorbell ended took `waited_ns` from its first sleep. Any waiter
  // calls it; two at once may lose one sample, which only mis-sizes one cap.
  void on_woken(uint64_t waited_ns) {
    // relaxed: a hint like the rate; see on_drain.
    const uint64_t old = woken_after_ns_.load(std::memory_order_relaxed);
    woken_after_ns_.store(old == 0 ? waited_ns : (old * 7 + waited_ns) / 8, std::memory_order_relaxed);
  }

  // How long a doorbell wait sleeps at most, for a wait whose guessed sleep is `sleep_ns`, at most
  // `remaining_ns`: twice the guess, or twice what woken waits have lately taken where that is
  // longer. Answers that arrive in bursts (an agent that sends a whole window to its memory
  // servers and gets it back at once) take longer to reach a wait's target than the mean rate
  // says, and a cap at the guess would end most waits in a time-out and a second sleep. Where the
  // doorbell cannot wake the host (a DPU without an interrupt path), no wait is ever woken and the
  // cap stays twice the guess.
  uint64_t wait_cap_ns(uint64_t sleep_ns, uint64_t remaining_ns) const {
    // relaxed: see on_woken.
    const uint64_t learnt = woken_after_ns_.load(std::memory_order_relaxed);
    return std::min<uint64_t>({2 * std::max(sleep_ns, learnt), kMaxSleepNs, remaining_ns});
  }

  // Nanoseconds per completion learnt so far (0: nothing yet).
  uint64_t ns_per_completion() const { return ns_per_completion_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> since_ns_{0};
  std::atomic<uint64_t> ns_per_completion_{0};
  std::atomic<uint64_t> woken_after_ns_{0};  // moving mean of woken waits' length (0: none yet)
};

}  // namespace pd3
