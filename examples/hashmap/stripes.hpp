// stripes.hpp — per-stripe state that orders operations on keys and on remote slots:
//  - a lock per key stripe: every operation on a key (and every eviction of it) holds its key's
//    stripe, so a key's cache entry, control byte and remote slot change one operation at a time;
//  - a write count per slot stripe, bumped after each write to a slot is issued, so a read that was
//    issued without the key's lock (the async mode's batch reads, Leap's prefetches) can tell
//    whether its slots were written since;
//  - write-backs in flight per key stripe, so the pd3 mode does not take a Loading Zone item of a
//    key whose flush the agent may not have seen yet.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace pd3::hashmap {

// Lock stripes, slot write counters and in-flight write-back counters.
class Stripes {
 public:
  static constexpr uint32_t kKeyStripes = 4096;   // power of two
  static constexpr uint32_t kSlotStripes = 4096;  // power of two
  static constexpr uint32_t kSlotsPerStripe = 8;  // neighbours share a counter: a run read checks few

  Stripes()
      : locks_(new std::atomic<uint32_t>[kKeyStripes]), inflight_(new std::atomic<uint32_t>[kKeyStripes]),
        writes_(new std::atomic<uint64_t>[kSlotStripes]) {
    for (uint32_t i = 0; i < kKeyStripes; ++i) {
      locks_[i].store(0, std::memory_order_relaxed);     // relaxed: before any thread starts
      inflight_[i].store(0, std::memory_order_relaxed);  // relaxed: as above
    }
    for (uint32_t i = 0; i < kSlotStripes; ++i) writes_[i].store(0, std::memory_order_relaxed);  // relaxed: as above
  }

  void lock(uint32_t stripe) {
    // acquire: the holder sees everything the previous holder did under the lock.
    while (locks_[stripe].exchange(1, std::memory_order_acquire) != 0)
      locks_[stripe].wait(1, std::memory_order_relaxed);  // relaxed: the exchange above re-checks with acquire
  }

  bool try_lock(uint32_t stripe) {
    // acquire: as in lock().
    return locks_[stripe].exchange(1, std::memory_order_acquire) == 0;
  }

  void unlock(uint32_t stripe) {
    locks_[stripe].store(0, std::memory_order_release);  // release: publishes the holder's changes
    locks_[stripe].notify_one();
  }

  static uint32_t slot_stripe(uint64_t slot) { return uint32_t(slot / kSlotsPerStripe) & (kSlotStripes - 1); }

  // Writes issued to the slot's stripe so far. acquire: pairs with the release in wrote().
  uint64_t writes(uint64_t slot) const { return writes_[slot_stripe(slot)].load(std::memory_order_acquire); }

  // Called after a write to `slot` was issued (the request is in the ring or the direct queue).
  // release: a reader that sees the new count sees the write issued before its own read.
  void wrote(uint64_t slot) { writes_[slot_stripe(slot)].fetch_add(1, std::memory_order_release); }

  // relaxed: the writer increments under the key's stripe lock, and the pd3 path reads the count
  // under the same lock, whose release/acquire orders the two.
  void writeback_issued(uint32_t key_stripe) { inflight_[key_stripe].fetch_add(1, std::memory_order_relaxed); }
  // release: publishes that the completion was seen (the agent took the flush and withdrew the
  // key's zone items before it answered) to the acquire load in writeback_pending().
  void writeback_done(uint32_t key_stripe) { inflight_[key_stripe].fetch_sub(1, std::memory_order_release); }
  // acquire: pairs with writeback_done, so zero means every completion counted so far happened
  // before this thread goes on to check_and_return.
  bool writeback_pending(uint32_t key_stripe) const {
    return inflight_[key_stripe].load(std::memory_order_acquire) != 0;
  }

 private:
  std::unique_ptr<std::atomic<uint32_t>[]> locks_;
  std::unique_ptr<std::atomic<uint32_t>[]> inflight_;
  std::unique_ptr<std::atomic<uint64_t>[]> writes_;
};

// Holds one key stripe for a scope.
class StripeGuard {
 public:
  StripeGuard(Stripes& s, uint32_t stripe) : s_(s), stripe_(stripe) { s_.lock(stripe_); }
  ~StripeGuard() { s_.unlock(stripe_); }
  StripeGuard(const StripeGuard&) = delete;
  StripeGuard& operator=(const StripeGuard&) = delete;

 private:
  Stripes& s_;
  uint32_t stripe_;
};

}  // namespace pd3::hashmap
