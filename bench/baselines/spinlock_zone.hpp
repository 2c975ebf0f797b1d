// spinlock_zone.hpp — baseline Loading Zone: a conventional ring buffer guarded by one
// test-and-test-and-set spinlock (the "spinlock" line of the PD3 paper's Fig. 8, §7.2 Fig. 7a).
//
// Items are fixed 16-byte slots {key, value} with 8-byte keys and values. A consumer takes the lock,
// scans from Head to Tail for its key, copies the value out, removes the item (key := 0, a
// tombstone) and, if the item sat at Head, advances Head past every consumed item. The producer
// appends at Tail under the same lock; when the ring is full it drops the oldest item, as the PD3
// zone reclaims its oldest item. Keys must be non-zero (0 marks a consumed slot).
//
// Choices made to give the baseline its best shot: the lock word, Head and Tail share one cache line
// (whoever holds the lock touches all three, so one line moves per critical section instead of
// three); the lock is test-and-test-and-set with a pause in the spin; the producer appends a whole
// batch under one acquisition.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <new>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace pd3bench {

class SpinlockZone {
 public:
  // `capacity` must be a power of two.
  explicit SpinlockZone(uint32_t capacity)
      : slots_(allocate(capacity)), mask_(capacity - 1) {}

  SpinlockZone(const SpinlockZone&) = delete;
  SpinlockZone& operator=(const SpinlockZone&) = delete;

  // Looks up `key`; on a hit copies its value into *value, removes the item and returns 8 (the item
  // size); returns 0 on a miss.
  int64_t check_and_return(uint64_t key, uint64_t* value) {
    lock();
    uint64_t head = ctl_.head;
    const uint64_t tail = ctl_.tail;
    for (uint64_t i = head; i != tail; ++i) {
      Slot& s = slots_[i & mask_];
      if (s.key != key) continue;
      *value = s.value;
      s.key = 0;
      if (i == head) {  // advance Head past every consumed item
        while (head != tail && slots_[head & mask_].key == 0) ++head;
        ctl_.head = head;
      }
      unlock();
      return 8;
    }
    unlock();
    return 0;
  }

  // Appends `n` items at Tail (one lock acquisition); a full ring drops its oldest items first.
  // Returns how many still-unconsumed items were dropped.
  uint32_t produce(const uint64_t* keys, const uint64_t* values, uint32_t n) {
    uint32_t dropped = 0;
    lock();
    uint64_t head = ctl_.head;
    uint64_t tail = ctl_.tail;
    for (uint32_t k = 0; k < n; ++k) {
      if (tail - head > mask_) {  // full: drop the oldest, then skip consumed ones
        if (slots_[head & mask_].key != 0) ++dropped;
        ++head;
        while (head != tail && slots_[head & mask_].key == 0) ++head;
      }
      Slot& s = slots_[tail & mask_];
      s.key = keys[k];
      s.value = values[k];
      ++tail;
    }
    ctl_.head = head;
    ctl_.tail = tail;
    unlock();
    return dropped;
  }

 private:
  struct Slot {
    uint64_t key;
    uint64_t value;
  };
  // The lock word and the cursors it protects, on one cache line.
  struct alignas(64) Control {
    std::atomic<uint32_t> lock{0};
    uint64_t head = 0;
    uint64_t tail = 0;
  };
  struct AlignedDelete {
    void operator()(Slot* p) const { ::operator delete(p, std::align_val_t(64)); }
  };
  // Zeroed, cache-line-aligned slots (trivial type: no destructor to run).
  static Slot* allocate(uint32_t n) {
    void* p = ::operator new(sizeof(Slot) * n, std::align_val_t(64));
    return new (p) Slot[n]();
  }

  static void relax() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }
  void lock() {
    for (;;) {
      // acquire: the critical section reads what the previous holder wrote before its release.
      if (ctl_.lock.exchange(1, std::memory_order_acquire) == 0) return;
      while (ctl_.lock.load(std::memory_order_relaxed) != 0) relax();
    }
  }
  void unlock() { ctl_.lock.store(0, std::memory_order_release); }

  Control ctl_;
  std::unique_ptr<Slot[], AlignedDelete> slots_;
  const uint64_t mask_;
};

}  // namespace pd3bench
