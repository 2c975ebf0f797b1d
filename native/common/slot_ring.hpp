// slot_ring.hpp — a byte ring of sealed, variable-length slots: the request and response rings.
//
// Cursors are monotonic byte positions in the control block; a slot at position p lives at
// offset p & (size - 1) and never wraps: a producer that would cross the end first fills the rest
// of the ring with a PAD slot. Producers reserve space by advancing `tail` (a CAS for many
// producers, a store for one), write the slot, then publish it by storing its seal with release
// order. The consumer reads seals from `head` with acquire order, processes every contiguous
// published slot, and frees them all with one release store of `head`.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "common/atomics.hpp"
#include "common/slot_records.hpp"
#include "pd3/status.h"
#include "pd3/wire.h"

namespace pd3 {

// A write prefetch of the cache line holding `p`: the line arrives owned, so the store that
// follows needs no second request. PREFETCHW on x86-64 CPUs that have it (CPUID 0x80000001 ECX bit
// 8: AMD's CPUs, Intel's since Broadwell); a read prefetch elsewhere. (GCC's write hint emits
// PREFETCHW only when the whole translation unit is built for it, so the instruction is spelt out.)
inline void prefetch_line_for_write(const void* p) {
#if defined(__x86_64__)
  static const bool has_prefetchw = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(0x80000001u, &a, &b, &c, &d) != 0 && (c & (1u << 8)) != 0;
  }();
  if (has_prefetchw) {
    asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
    return;
  }
#endif
  __builtin_prefetch(p, 1, 3);
}

// Where a reservation landed: `pad` bytes of filler at `pos`, then the slot at `pos + pad`.
struct SlotReservation {
  uint64_t pos;
  uint64_t pad;
};

// A view of one ring in a mapped segment (no ownership).
class SlotRing {
 public:
  SlotRing() = default;
  SlotRing(uint8_t* data, uint64_t size, uint64_t* tail, uint64_t* head, uint64_t salt)
      : data_(data), size_(size), mask_(size - 1), tail_(tail), head_(head), salt_(salt) {}

  uint64_t size() const { return size_; }
  // Largest slot that can ever be reserved: half the ring, so a PAD plus the slot always fit.
  uint64_t max_slot() const { return size_ / 2; }

  // Slot bytes needed for a record of `record_bytes` (pd3::slot_len).
  static uint64_t slot_len(uint64_t record_bytes) { return pd3::slot_len(record_bytes); }

  // Many producers: reserves one slot of `len` bytes (a slot_len). Returns false if the ring lacks
  // room (back-pressure: nothing was reserved). `head_cache`, if given, is the producers' private
  // copy of head: the consumer's line is read only when the copy says the ring is full, so
  // producers do not pull the line the consumer writes at every reservation.
  bool reserve_mp(uint64_t len, SlotReservation* r, std::atomic<uint64_t>* head_cache = nullptr) const {
    // relaxed: the value is only a guess for the CAS; the CAS below revalidates it.
    uint64_t tail = aref(*tail_).load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t pad = pad_for(tail, len);
      // acquire: the cache was stored with release after an acquire load of head, so the bytes the
      // consumer freed up to the cached value are ours to write (happens-before is transitive).
      uint64_t head = head_cache ? head_cache->load(std::memory_order_acquire) : 0;
      if (head_cache == nullptr || !fits(tail, pad + len, head)) {
        // acquire: pairs with the consumer's release of head, so the bytes it freed are ours to write.
        head = aref(*head_).load(std::memory_order_acquire);
        // release: publishes what the acquire above learned to producers that read the cache.
        // Head only grows; a racing producer storing an older value only makes the cache more
        // conservative (it underestimates the free space, never overstates it).
        if (head_cache) head_cache->store(head, std::memory_order_release);
      }
      // A stale `tail` (older than `head`) would underflow into "full": let the CAS refresh it instead.
      if (int64_t(tail - head) >= 0 && !fits(tail, pad + len, head)) return false;
      // relaxed on success: ordering of our writes comes from the seal's release store, not from
      // tail; on failure we just retry with the fresher tail.
      if (aref(*tail_).compare_exchange_weak(tail, tail + pad + len, std::memory_order_relaxed,
                                             std::memory_order_relaxed)) {
        *r = {tail, pad};
        return true;
      }
    }
  }

  // One producer: as reserve_mp, without the CAS.
  bool reserve_sp(uint64_t len, SlotReservation* r) const {
    // relaxed: only this thread writes tail.
    const uint64_t tail = aref(*tail_).load(std::memory_order_relaxed);
    const uint64_t pad = pad_for(tail, len);
    // acquire: pairs with the consumer's release of head (the freed bytes are ours to reuse).
    const uint64_t head = aref(*head_).load(std::memory_order_acquire);
    if (tail + pad + len - head > size_) return false;
    // relaxed: consumers never read tail to find records (they read seals), it only bounds space.
    aref(*tail_).store(tail + pad + len, std::memory_order_relaxed);
    *r = {tail, pad};
    return true;
  }

  // Address of the record area of the slot reserved in `r`.
  uint8_t* record_at(const SlotReservation& r) const {
    return data_ + ((r.pos + r.pad) & mask_) + sizeof(pd3_slot);
  }

  // Publishes the PAD (if any) and the slot of `r`, after the record bytes were written.
  void publish(const SlotReservation& r, uint64_t len) const {
    if (r.pad) seal(r.pos, r.pad, PD3_SLOT_PAD);
    seal(r.pos + r.pad, len, PD3_SLOT_RECORD);
  }

  // A slot the producer writes whole, header included (RequestBatch::publish_prefix: a batch slot,
  // whose count only the producer knows): the first byte of the slot reserved in `r`. The caller
  // writes everything there except the seal word (the consumer may be reading it already), then
  // calls publish_written.
  uint8_t* slot_at(const SlotReservation& r) const { return data_ + ((r.pos + r.pad) & mask_); }
  // Producer hint: asks the cache for the lines of [pos, pos + len) in a state to be written (the
  // bytes wrap like the ring's; at most kPrefetchMax of them). A producer calls it for the bytes it
  // expects to write next, well before it writes them: the ring's lines were last read by the
  // consumer's core a lap ago, so a store there otherwise waits for the line's ownership, and the
  // next locked instruction (a lock, a fence) waits for every such store. Changes no data.
  void prefetch_for_write(uint64_t pos, uint64_t len) const {
    len = std::min(len, kPrefetchMax);
    for (uint64_t at = pos & ~uint64_t{63}; at < pos + len; at += 64) prefetch_line_for_write(data_ + (at & mask_));
  }
  static constexpr uint64_t kPrefetchMax = 8192;

  // Publishes the PAD of `r` (if any), then the slot written whole at slot_at(r): only its seal is
  // stored.
  void publish_written(const SlotReservation& r) const {
    if (r.pad) seal(r.pos, r.pad, PD3_SLOT_PAD);
    const uint64_t pos = r.pos + r.pad;
    auto* s = reinterpret_cast<pd3_slot*>(data_ + (pos & mask_));
    // release: the slot's header and record bytes, copied before, are visible to whoever acquires
    // this seal.
    aref(s->seal).store(expected_seal(pos), std::memory_order_release);
  }

  // Consumer: the slot at monotonic position `pos` if it is published, else nullptr.
  const pd3_slot* published_at(uint64_t pos) const {
    auto* s = reinterpret_cast<pd3_slot*>(data_ + (pos & mask_));
    // acquire: pairs with the producer's release store of the seal; the slot's bytes are visible.
    const uint64_t seal = aref(s->seal).load(std::memory_order_acquire);
    return seal == expected_seal(pos) ? s : nullptr;
  }

  // Consumer: is `len` (read from a published slot at `pos`) a sane slot length?
  bool length_ok(uint64_t pos, uint32_t len) const {
    return len >= sizeof(pd3_slot) && len % PD3_SLOT_ALIGN == 0 && (pos & mask_) + len <= size_;
  }

  // Producer recovery: seals [from, to) as PAD slots (split at the ring's end), so the consumer
  // skips a reservation whose producer died before sealing it. `from` and `to` are slot positions
  // (multiples of PD3_SLOT_ALIGN) with nothing published in between.
  void pad_hole(uint64_t from, uint64_t to) const {
    while (from < to) {
      const uint64_t room = size_ - (from & mask_);
      const uint64_t len = std::min(room, to - from);
      seal(from, len, PD3_SLOT_PAD);
      from += len;
    }
  }

  // Producer recovery: the position after the last contiguous published slot from head (at most
  // tail). A dead single producer leaves at most its last reservation unsealed, right there.
  uint64_t published_end() const {
    uint64_t pos = head();
    const uint64_t end = tail();
    while (pos < end) {
      const pd3_slot* s = published_at(pos);
      if (s == nullptr || !length_ok(pos, s->length)) break;
      pos += s->length;
    }
    return pos;
  }

  // Consumer: frees every slot before `pos`.
  void release_to(uint64_t pos) const {
    // release: our reads of the freed slots happen before a producer reuses their bytes.
    aref(*head_).store(pos, std::memory_order_release);
  }

  // Producer: one record = `hdr` followed by `payload`, in one slot. Returns PD3_OK, PD3_E_AGAIN
  // (ring full: nothing written) or PD3_E_TOO_BIG (could never fit). `many_producers` picks the
  // CAS reservation; a single producer may use the cheaper store.
  int publish_record(const void* hdr, size_t hdr_len, const void* payload, size_t payload_len,
                     bool many_producers) const {
    const uint64_t len = slot_len(uint64_t(hdr_len) + payload_len);
    if (len > max_slot()) return PD3_E_TOO_BIG;
    SlotReservation r;
    if (!(many_producers ? reserve_mp(len, &r) : reserve_sp(len, &r))) return PD3_E_AGAIN;
    uint8_t* rec = record_at(r);
    std::memcpy(rec, hdr, hdr_len);
    if (payload_len) std::memcpy(rec + hdr_len, payload, payload_len);
    publish(r, len);
    return PD3_OK;
  }

  // Consumer: calls fn(const pd3_slot& slot, const uint8_t* body, uint64_t pos) for every
  // contiguous published slot that carries records (PD3_SLOT_RECORD or PD3_SLOT_RECORDS; PAD slots
  // are skipped) from head, then frees them all with one release store. `body` is the slot's
  // slot.length - 16 bytes after its header; `pos` is its monotonic position. fn returns the
  // records it took from the slot, or a negative value when their framing inside the slot is
  // broken (nothing of that slot is taken). A drain stops before a slot that would take it past
  // `max` records, unless that slot is its first (a slot is taken whole). Returns the number of
  // records taken, or PD3_E_CORRUPT when a slot's framing is broken (bad length or kind, or fn's
  // verdict): a ring whose framing is lost cannot be resynchronised, so nothing from that slot on is
  // taken.
  template <class Fn>
  int drain(uint32_t max, Fn&& fn) const {
    uint64_t pos = head();
    uint32_t taken = 0;
    int rc = 0;
    while (taken < max) {
      const pd3_slot* s = published_at(pos);
      if (s == nullptr) break;
      const uint32_t len = s->length;
      const uint16_t kind = s->kind;
      if (!length_ok(pos, len) || (kind != PD3_SLOT_RECORD && kind != PD3_SLOT_RECORDS && kind != PD3_SLOT_PAD)) {
        rc = PD3_E_CORRUPT;
        break;
      }
      if (kind != PD3_SLOT_PAD) {
        if (kind == PD3_SLOT_RECORDS && taken > 0 && s->count > max - taken) break;
        const int took = fn(*s, reinterpret_cast<const uint8_t*>(s + 1), pos);
        if (took < 0) {
          rc = PD3_E_CORRUPT;
          break;
        }
        taken += uint32_t(took);
      }
      pos += len;
    }
    if (pos != head()) release_to(pos);
    return rc ? rc : int(taken);
  }

  uint64_t head() const { return aref(*head_).load(std::memory_order_relaxed); }
  uint64_t tail() const { return aref(*tail_).load(std::memory_order_relaxed); }

 private:
  // Does a reservation of `len` bytes (pad included) at `tail` fit with the consumer at `head`?
  bool fits(uint64_t tail, uint64_t len, uint64_t head) const { return tail + len - head <= size_; }
  uint64_t pad_for(uint64_t tail, uint64_t len) const {
    const uint64_t off = tail & mask_;
    return off + len > size_ ? size_ - off : 0;
  }
  uint64_t expected_seal(uint64_t pos) const { return (pos ^ salt_) | 1u; }
  void seal(uint64_t pos, uint64_t len, uint16_t kind) const {
    auto* s = reinterpret_cast<pd3_slot*>(data_ + (pos & mask_));
    s->length = uint32_t(len);
    s->kind = kind;
    s->count = 0;
    // release: the record bytes and length/kind above are visible to whoever acquires this seal.
    aref(s->seal).store(expected_seal(pos), std::memory_order_release);
  }

  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  uint64_t mask_ = 0;
  uint64_t* tail_ = nullptr;
  uint64_t* head_ = nullptr;
  uint64_t salt_ = 0;
};

}  // namespace pd3
