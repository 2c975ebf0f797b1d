// spsc_queue.hpp — a bounded single-producer single-consumer queue: how the agent hands Host View
// batches to a shard thread and gets them back. Each side keeps a cached copy of the other side's
// index so the shared cache line is read only when the queue looks full (or empty).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

namespace pd3 {

// Bounded SPSC queue of trivially copyable T; capacity is rounded up to a power of two.
template <class T>
class SpscQueue {
 public:
  explicit SpscQueue(size_t capacity) {
    size_t cap = 2;
    while (cap < capacity) cap <<= 1;
    mask_ = cap - 1;
    items_ = std::make_unique<T[]>(cap);
  }
  SpscQueue(const SpscQueue&) = delete;
  SpscQueue& operator=(const SpscQueue&) = delete;

  // Producer only. False when full.
  bool push(const T& v) {
    const size_t tail = tail_.load(std::memory_order_relaxed);  // relaxed: only we write tail
    if (tail - head_cache_ > mask_) {
      head_cache_ = head_.load(std::memory_order_acquire);  // acquire: the consumer is done with the slot
      if (tail - head_cache_ > mask_) return false;
    }
    items_[tail & mask_] = v;
    tail_.store(tail + 1, std::memory_order_release);  // release: the item is visible before the index
    return true;
  }

  // Consumer only. False when empty.
  bool pop(T* out) {
    const size_t head = head_.load(std::memory_order_relaxed);  // relaxed: only we write head
    if (head == tail_cache_) {
      tail_cache_ = tail_.load(std::memory_order_acquire);  // acquire: pairs with push's release
      if (head == tail_cache_) return false;
    }
    *out = items_[head & mask_];
    head_.store(head + 1, std::memory_order_release);  // release: our read happens before reuse
    return true;
  }

  // Consumer only: true when nothing is queued (reads the producer's index).
  bool empty() const { return head_.load(std::memory_order_relaxed) == tail_.load(std::memory_order_acquire); }

  size_t capacity() const { return mask_ + 1; }

 private:
  static constexpr size_t kLine = 64;
  std::unique_ptr<T[]> items_;
  size_t mask_ = 0;
  alignas(kLine) std::atomic<size_t> head_{0};
  size_t tail_cache_ = 0;  // consumer's copy of tail
  alignas(kLine) std::atomic<size_t> tail_{0};
  size_t head_cache_ = 0;  // producer's copy of head
  char pad_[kLine - sizeof(size_t)];
};

}  // namespace pd3
