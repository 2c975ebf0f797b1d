// access_queue.hpp — the parsed key accesses the capture thread hands to the Transfer Engine's
// thread (which applies ARCHITECTURE.md §8 and prefetches): a single-producer single-consumer
// byte ring of variable-length records, so keys of any length travel without allocation.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "pd3/parser.h"

namespace pd3 {

// One access as the consumer sees it; `key` is valid during the drain callback only.
struct AccessRecord {
  uint64_t capture_ns;  // when the packet (or proxied bytes) carrying the request was seen
  uint32_t op;          // PD3_ACCESS_*
  uint32_t key_len;
  const uint8_t* key;
};

// SPSC ring. push() from one thread, drain() from one other thread.
class AccessQueue {
 public:
  // `bytes`: ring capacity, a power of two ≥ 4096 (the caller checks).
  explicit AccessQueue(size_t bytes) : size_(bytes), mask_(bytes - 1), ring_(new uint8_t[bytes]) {}

  // Producer: appends one access. False (and counted in dropped()) when the ring lacks room: the
  // access is lost, which costs a prefetch, never correctness — except for WRITE and DELETE, whose
  // loss the consumer must learn about: see lost_writes().
  bool push(uint32_t op, const uint8_t* key, uint32_t key_len, uint64_t capture_ns) {
    const uint64_t len = record_len(key_len);
    // relaxed: only this thread writes tail.
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    uint64_t pad = room_to_end(tail) < len ? room_to_end(tail) : 0;
    // acquire: pairs with the consumer's release of head; the bytes it freed are ours to reuse.
    const uint64_t head = head_.load(std::memory_order_acquire);
    if (len > size_ / 2 || tail + pad + len - head > size_) {
      // relaxed: statistics / a flag the consumer polls; nothing else is published with them.
      dropped_.fetch_add(1, std::memory_order_relaxed);
      if (op != PD3_ACCESS_READ) lost_writes_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    if (pad) write_header(tail, kPad, 0, 0, uint32_t(pad));
    const uint64_t at = tail + pad;
    write_header(at, op, capture_ns, key_len, uint32_t(len));
    std::memcpy(ring_.get() + ((at + kHeader) & mask_), key, key_len);
    // release: the record bytes above are visible to a consumer that acquires this tail.
    tail_.store(at + len, std::memory_order_release);
    return true;
  }

  // Consumer: calls fn(const AccessRecord&) for up to `max` records, oldest first, then frees
  // them. Returns how many.
  template <class Fn>
  size_t drain(size_t max, Fn&& fn) {
    // relaxed: only this thread writes head.
    uint64_t head = head_.load(std::memory_order_relaxed);
    // acquire: pairs with push()'s release; the records before tail are complete.
    const uint64_t tail = tail_.load(std::memory_order_acquire);
    size_t n = 0;
    while (head < tail && n < max) {
      Header h;
      std::memcpy(&h, ring_.get() + (head & mask_), sizeof h);
      if (h.op != kPad) {
        fn(AccessRecord{h.capture_ns, h.op, h.key_len, ring_.get() + ((head + kHeader) & mask_)});
        ++n;
      }
      head += h.len;
    }
    // release: our reads of the freed records happen before the producer reuses their bytes.
    head_.store(head, std::memory_order_release);
    return n;
  }

  // Consumer: true if nothing is waiting. acquire: pairs with push()'s release (a record seen
  // here is complete when drained).
  bool empty() const { return tail_.load(std::memory_order_acquire) == head_.load(std::memory_order_relaxed); }

  // Accesses lost to a full ring, and of those the WRITE/DELETE ones (relaxed: statistics).
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  uint64_t lost_writes() const { return lost_writes_.load(std::memory_order_relaxed); }

 private:
  // Header of one record; the key follows, the record is padded to kAlign bytes.
  struct Header {
    uint64_t capture_ns;
    uint32_t op;  // PD3_ACCESS_*, or kPad: filler to the end of the ring
    uint32_t key_len;
    uint32_t len;  // bytes of the whole record
    uint32_t reserved;
  };
  static constexpr uint32_t kPad = 0xFFFFFFFFu;
  static constexpr uint64_t kHeader = sizeof(Header);
  // Records start on kAlign boundaries, so the room left before the ring's end is either 0 or at
  // least kAlign ≥ kHeader: a PAD header always fits there.
  static constexpr uint64_t kAlign = 32;
  static_assert(kHeader <= kAlign);
  static uint64_t record_len(uint32_t key_len) { return (kHeader + key_len + kAlign - 1) & ~(kAlign - 1); }
  uint64_t room_to_end(uint64_t pos) const { return size_ - (pos & mask_); }
  void write_header(uint64_t pos, uint32_t op, uint64_t ns, uint32_t key_len, uint32_t len) {
    const Header h{ns, op, key_len, len, 0};
    std::memcpy(ring_.get() + (pos & mask_), &h, sizeof h);
  }

  const uint64_t size_;
  const uint64_t mask_;
  std::unique_ptr<uint8_t[]> ring_;
  alignas(64) std::atomic<uint64_t> tail_{0};
  alignas(64) std::atomic<uint64_t> head_{0};
  alignas(64) std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> lost_writes_{0};
};

}  // namespace pd3
