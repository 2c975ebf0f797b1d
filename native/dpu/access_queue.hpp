// access_queue.hpp — the parsed key accesses the capture thread hands to the Transfer Engine's
// thread (which applies docs/architecture.md §8 and prefetches): records in a single-producer
// single-consumer byte ring, so keys of any length travel without allocation.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "dpu/spsc_byte_ring.hpp"
#include "pd3/parser.h"

namespace pd3 {

// One access as the consumer sees it; `key` is valid during the drain callback only.
struct AccessRecord {
  uint64_t capture_ns;  // when the packet (or proxied bytes) carrying the request was seen
  uint32_t op;          // PD3_ACCESS_*
  uint32_t key_len;
  const uint8_t* key;
};

// SPSC queue of accesses. push() from one thread, drain() from one other thread.
class AccessQueue {
 public:
  // `bytes`: ring capacity, a power of two ≥ 4096 (the caller checks).
  explicit AccessQueue(size_t bytes) : ring_(bytes) {}

  // Producer: appends one access. False (and counted in dropped()) when the ring lacks room: the
  // access is lost, which costs a prefetch, never correctness — except for WRITE and DELETE, whose
  // loss the consumer must learn about: see lost_writes().
  bool push(uint32_t op, const uint8_t* key, uint32_t key_len, uint64_t capture_ns) {
    uint8_t* at = ring_.reserve(sizeof(Header) + uint64_t(key_len));
    if (at == nullptr) {
      // relaxed: statistics / a flag the consumer polls; nothing else is published with them.
      dropped_.fetch_add(1, std::memory_order_relaxed);
      if (op != PD3_ACCESS_READ) lost_writes_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    const Header h{capture_ns, op, key_len};
    std::memcpy(at, &h, sizeof h);
    std::memcpy(at + sizeof h, key, key_len);
    ring_.commit();
    return true;
  }

  // Consumer: calls fn(const AccessRecord&) for up to `max` records, oldest first, then frees
  // them. Returns how many.
  template <class Fn>
  size_t drain(size_t max, Fn&& fn) {
    return ring_.drain(max, [&](const uint8_t* rec, uint32_t) {
      Header h;
      std::memcpy(&h, rec, sizeof h);
      fn(AccessRecord{h.capture_ns, h.op, h.key_len, rec + sizeof h});
    });
  }

  // Consumer: true if nothing is waiting.
  bool empty() const { return ring_.empty(); }

  // Accesses lost to a full ring, and of those the WRITE/DELETE ones (relaxed: statistics).
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  uint64_t lost_writes() const { return lost_writes_.load(std::memory_order_relaxed); }

 private:
  // What precedes the key in a record.
  struct Header {
    uint64_t capture_ns;
    uint32_t op;  // PD3_ACCESS_*
    uint32_t key_len;
  };

  SpscByteRing ring_;
  alignas(64) std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> lost_writes_{0};
};

}  // namespace pd3
