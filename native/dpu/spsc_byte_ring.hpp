// spsc_byte_ring.hpp — a single-producer single-consumer ring of variable-length records in one
// buffer, so data of any length crosses threads without allocation: the mechanics shared by the
// capture path's queues (AccessQueue, FlowEventQueue), which only define what a record holds.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

namespace pd3 {

// One producer thread (reserve, commit), one consumer thread (drain, empty).
class SpscByteRing {
 public:
  // `bytes`: capacity, a power of two ≥ 4096 (the owner checks).
  explicit SpscByteRing(size_t bytes) : size_(bytes), mask_(bytes - 1), ring_(new uint8_t[bytes]) {}

  // Producer: room for a record of `len` bytes, contiguous, or nullptr when the ring lacks room
  // now (or the record is larger than half the ring: it could starve every other). Write the
  // record there, then commit(); nothing is visible to the consumer before.
  uint8_t* reserve(uint64_t len) {
    const uint64_t rec = record_size(len);
    // relaxed: only this thread writes tail.
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    const uint64_t to_end = size_ - (tail & mask_);
    const uint64_t pad = to_end < rec ? to_end : 0;
    // acquire: pairs with drain()'s release of head; the bytes it freed are ours to reuse.
    const uint64_t head = head_.load(std::memory_order_acquire);
    if (rec > size_ / 2 || tail + pad + rec - head > size_) return nullptr;
    if (pad != 0) write_frame(tail, 0, 0);  // records start on kAlign: a frame always fits
    const uint64_t at = tail + pad;
    write_frame(at, uint32_t(rec), uint32_t(len));
    pending_ = at + rec;
    return ring_.get() + ((at + kFrame) & mask_);
  }
  // Producer: publishes the record reserve() returned last.
  void commit() {
    // release: the record's bytes are visible to a consumer that acquires this tail.
    tail_.store(pending_, std::memory_order_release);
  }

  // Consumer: calls fn(const uint8_t* record, uint32_t len) for up to `max` records, oldest
  // first, then frees them (a record is valid during its call only). Returns how many.
  template <class Fn>
  size_t drain(size_t max, Fn&& fn) {
    // relaxed: only this thread writes head.
    uint64_t head = head_.load(std::memory_order_relaxed);
    // acquire: pairs with commit()'s release; the records before tail are complete.
    const uint64_t tail = tail_.load(std::memory_order_acquire);
    size_t n = 0;
    while (head < tail && n < max) {
      Frame f;
      std::memcpy(&f, ring_.get() + (head & mask_), sizeof f);
      if (f.rec == 0) {  // pad to the ring's end
        head += size_ - (head & mask_);
        continue;
      }
      fn(static_cast<const uint8_t*>(ring_.get() + ((head + kFrame) & mask_)), f.len);
      head += f.rec;
      ++n;
    }
    // release: our reads of the freed records happen before the producer reuses their bytes.
    head_.store(head, std::memory_order_release);
    return n;
  }
  // Consumer: true if nothing is waiting. acquire: pairs with commit()'s release.
  bool empty() const { return tail_.load(std::memory_order_acquire) == head_.load(std::memory_order_relaxed); }

 private:
  // Each record's frame; 0 in `rec` pads to the end of the ring.
  struct Frame {
    uint32_t rec;  // bytes of frame + record + padding, a multiple of kAlign
    uint32_t len;  // bytes of the record
  };
  static constexpr uint64_t kFrame = sizeof(Frame);
  // Records start on kAlign boundaries, so the room before the ring's end is 0 or ≥ kAlign: a pad
  // frame always fits; kAlign also keeps every record 8-byte aligned.
  static constexpr uint64_t kAlign = 32;
  static_assert(kFrame <= kAlign && kFrame % 8 == 0);
  static constexpr uint64_t record_size(uint64_t len) { return (kFrame + len + kAlign - 1) & ~(kAlign - 1); }
  void write_frame(uint64_t pos, uint32_t rec, uint32_t len) {
    const Frame f{rec, len};
    std::memcpy(ring_.get() + (pos & mask_), &f, sizeof f);
  }

  const uint64_t size_;
  const uint64_t mask_;
  std::unique_ptr<uint8_t[]> ring_;
  uint64_t pending_ = 0;  // producer only: the tail after the record reserved last
  alignas(64) std::atomic<uint64_t> tail_{0};
  alignas(64) std::atomic<uint64_t> head_{0};
};

}  // namespace pd3
