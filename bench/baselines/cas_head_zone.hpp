// cas_head_zone.hpp — baseline Loading Zone: a lock-free ring buffer whose consumers CAS each item's
// state and CAS-advance a shared Head (the "lock-free" line of the PD3 paper's Fig. 8, §7.2 Fig. 7a).
//
// Items are fixed 32-byte slots {state, key, value} with 8-byte keys and values. The state word is
// (position << 2) | FREE/PRODUCED/CONSUMED, so a word names the item it belongs to and no CAS can
// succeed on a slot that was reused (no ABA). A consumer reads Head and Tail, scans the items in
// between for its key, copies the value, takes the item with one CAS PRODUCED→CONSUMED (same-key
// contention is settled there) and then moves Head past every consumed item at its front with a
// CAS on the shared Head (the head contention the paper measures). One producer at a time appends
// at Tail; when the ring is full it drops the oldest item (CAS PRODUCED→FREE) and moves Head itself.
//
// Choices made to give the baseline its best shot: Head and Tail sit on separate cache lines (the
// producer's Tail stores do not disturb the consumers' Head CASes); Head is advanced over a whole run
// of consumed items with one CAS, and not touched at all when the item at Head is still live; the
// producer publishes Tail once per batch.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <new>

namespace pd3bench {

class CasHeadZone {
 public:
  // `capacity` must be a power of two.
  explicit CasHeadZone(uint32_t capacity) : slots_(allocate(capacity)), mask_(capacity - 1) {
    // Position p uses slot p & mask; mark every slot as holding a consumed item of the previous lap
    // so that the first lap's positions never match a stale word.
    for (uint64_t i = 0; i <= mask_; ++i) slots_[i].state.store(word(i - (mask_ + 1), kFree), std::memory_order_relaxed);
  }

  CasHeadZone(const CasHeadZone&) = delete;
  CasHeadZone& operator=(const CasHeadZone&) = delete;

  // Looks up `key`; on a hit copies its value into *value, takes the item, advances Head past the
  // consumed items at its front and returns 8 (the item size); returns 0 on a miss.
  int64_t check_and_return(uint64_t key, uint64_t* value) {
    // acquire: items below Tail are published; Head bounds the scan from below.
    const uint64_t head = head_.v.load(std::memory_order_acquire);
    const uint64_t tail = tail_.v.load(std::memory_order_acquire);
    for (uint64_t i = head; i < tail; ++i) {
      Slot& s = slots_[i & mask_];
      uint64_t expected = word(i, kProduced);
      // acquire: the key and value stores of item i happened before its PRODUCED word.
      if (s.state.load(std::memory_order_acquire) != expected) continue;  // consumed, dropped or reused
      if (s.key.load(std::memory_order_relaxed) != key) continue;
      const uint64_t v = s.value.load(std::memory_order_relaxed);
      // acq_rel: release orders our reads of the slot before anyone who later sees it CONSUMED
      // (and so before the producer reuses it); failure means another consumer took it or the
      // producer dropped it, and the copy is discarded.
      if (!s.state.compare_exchange_strong(expected, word(i, kConsumed), std::memory_order_acq_rel,
                                           std::memory_order_relaxed))
        continue;
      *value = v;
      advance_head();
      return 8;
    }
    return 0;
  }

  // Appends `n` items at Tail and publishes them with one Tail store. Single producer: calls must
  // not overlap (the caller serialises them). A full ring drops its oldest items first. Returns how
  // many still-unconsumed items were dropped.
  uint32_t produce(const uint64_t* keys, const uint64_t* values, uint32_t n) {
    uint32_t dropped = 0;
    uint64_t tail = tail_.v.load(std::memory_order_relaxed);
    for (uint32_t k = 0; k < n; ++k) {
      // acquire: consumers' reads of the slot we are about to reuse happened before Head passed it.
      while (tail - head_.v.load(std::memory_order_acquire) > mask_) dropped += drop_oldest();
      Slot& s = slots_[tail & mask_];
      s.key.store(keys[k], std::memory_order_relaxed);
      s.value.store(values[k], std::memory_order_relaxed);
      // release: key and value are visible to whoever acquires the PRODUCED word.
      s.state.store(word(tail, kProduced), std::memory_order_release);
      ++tail;
    }
    // release: Tail is the scan bound; everything below it is published.
    tail_.v.store(tail, std::memory_order_release);
    return dropped;
  }

 private:
  static constexpr uint64_t kFree = 0, kProduced = 1, kConsumed = 2;
  static constexpr uint64_t word(uint64_t pos, uint64_t state) { return (pos << 2) | state; }

  struct alignas(32) Slot {
    std::atomic<uint64_t> state;
    std::atomic<uint64_t> key;
    std::atomic<uint64_t> value;
  };
  struct alignas(64) Cursor {
    std::atomic<uint64_t> v{0};
  };
  struct AlignedDelete {
    void operator()(Slot* p) const { ::operator delete(p, std::align_val_t(64)); }
  };
  static Slot* allocate(uint32_t n) {
    void* p = ::operator new(sizeof(Slot) * n, std::align_val_t(64));
    return new (p) Slot[n];
  }

  // Moves Head past the run of consumed (or dropped) items at its front, one CAS per attempt.
  void advance_head() {
    uint64_t head = head_.v.load(std::memory_order_acquire);
    for (;;) {
      const uint64_t tail = tail_.v.load(std::memory_order_acquire);
      uint64_t next = head;
      while (next < tail) {
        const uint64_t w = slots_[next & mask_].state.load(std::memory_order_acquire);
        if (w != word(next, kConsumed) && w != word(next, kFree)) break;
        ++next;
      }
      if (next == head) return;
      // acq_rel: publishes the consumers' CONSUMED CASes (and their reads) to the producer, which
      // acquires Head before it reuses a slot. On failure `head` is reloaded and we retry.
      if (head_.v.compare_exchange_weak(head, next, std::memory_order_acq_rel, std::memory_order_acquire)) return;
    }
  }

  // Producer, ring full: drops the item at Head if still live, then advances Head. Returns 1 if a
  // live item was dropped.
  uint32_t drop_oldest() {
    const uint64_t head = head_.v.load(std::memory_order_acquire);
    uint64_t expected = word(head, kProduced);
    const bool dropped = slots_[head & mask_].state.compare_exchange_strong(
        expected, word(head, kFree), std::memory_order_acq_rel, std::memory_order_relaxed);
    advance_head();
    return dropped ? 1u : 0u;
  }

  Cursor head_;  // oldest item not yet passed; CASed by consumers (and the producer when full)
  Cursor tail_;  // next position to produce; stored by the producer only
  std::unique_ptr<Slot[], AlignedDelete> slots_;
  const uint64_t mask_;
};

}  // namespace pd3bench
