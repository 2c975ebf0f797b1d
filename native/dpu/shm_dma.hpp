// shm_dma.hpp — ShmDma: the shared-memory backend of HostDma (what runs on this machine): each
// operation is a load, store or atomic on the mapped segment, with the memory order the contract
// in host_dma.hpp asks for. The only agent file, with shm_dma.cpp, that touches segment pointers.
#pragma once

#include <atomic>
#include <cassert>
#include <cstring>
#include <memory>

#include "common/atomics.hpp"
#include "dpu/host_dma.hpp"

namespace pd3 {

class Segment;

// Shared memory as a HostDma. Either owns an attached segment (open) or views memory it does not
// own (tests, benchmarks: a segment the caller keeps mapped).
class ShmDma final : public HostDma {
 public:
  ShmDma(uint8_t* base, uint64_t size);
  ~ShmDma() override;
  // Attaches and validates the segment `name` (Segment::attach). PD3_OK or the attach error.
  [[nodiscard]] static int open(const char* name, std::unique_ptr<ShmDma>* out);

  uint64_t size() const override { return size_; }
  bool ordered_reads() const override { return true; }  // see read()

  void read(uint64_t off, void* dst, size_t len) override {
    check(off, len, 8);
    auto* out = static_cast<uint8_t*>(dst);
    auto* src = reinterpret_cast<uint64_t*>(base_ + off);
    for (size_t i = 0; i < len / 8; ++i) {
      // acquire per word, ascending: a word (a seal) seen published orders the words after it.
      // On x86-64 and AArch64 (LDAR/LDAPR) this costs no more than a plain copy of small records.
      const uint64_t w = aref(src[i]).load(std::memory_order_acquire);
      std::memcpy(out + 8 * i, &w, 8);
    }
  }
  uint64_t read64(uint64_t off) override {
    // acquire: pairs with the host's release store of the word (seal, fence, cursor).
    return aref(word(off)).load(std::memory_order_acquire);
  }
  void write(uint64_t off, const void* src, size_t len) override {
    check(off, (len + 7) & ~size_t{7}, 8);
    // relaxed word stores (store_words): ordered for the host only by a later fence().
    store_words(reinterpret_cast<uint64_t*>(base_ + off), src, len);
  }
  void write64(uint64_t off, uint64_t value) override {
    // release, though the contract only promises a posted write: it also keeps the engine's
    // earlier reads before it (the host reuses ring bytes once it sees a freed head), which a DPU
    // gets from waiting for its reads' completions. Free on x86-64 (a plain store).
    aref(word(off)).store(value, std::memory_order_release);
  }
  void fence(DmaFence kind) override {
    // release fence: every store before it happens-before the stores after it for a host that
    // acquires one of those (compiler-only on x86-64). seq_cst: also store → load (doorbell).
    std::atomic_thread_fence(kind == DmaFence::kAll ? std::memory_order_seq_cst : std::memory_order_release);
  }
  uint64_t swap64(uint64_t off, uint64_t value) override {
    // acq_rel: see the host's release before us, and publish our earlier writes to it.
    return aref(word(off)).exchange(value, std::memory_order_acq_rel);
  }
  bool cas64(uint64_t off, uint64_t expected, uint64_t desired, uint64_t* found) override {
    // acq_rel on success (as swap64); relaxed on failure: the value found orders nothing.
    const bool ok = aref(word(off)).compare_exchange_strong(expected, desired, std::memory_order_acq_rel,
                                                            std::memory_order_relaxed);
    *found = expected;
    return ok;
  }
  uint32_t read32(uint64_t off) override {
    // seq_cst: the doorbell's load after its fence (see AgentDoorbell::arm and ring_agent).
    return aref(word32(off)).load(std::memory_order_seq_cst);
  }
  void write32(uint64_t off, uint32_t value) override {
    // relaxed: the doorbell's announcement; a fence(kAll) orders it before the check that follows.
    aref(word32(off)).store(value, std::memory_order_relaxed);
  }
  bool wait32(uint64_t off, uint32_t expected, const timespec* timeout) override;
  void wake32(uint64_t off) override;
  DmaCounts counts() const override { return {}; }

 private:
  void check([[maybe_unused]] uint64_t off, [[maybe_unused]] uint64_t len, [[maybe_unused]] uint64_t align) const {
    assert(off % align == 0 && off <= size_ && len <= size_ - off);
  }
  uint64_t& word(uint64_t off) const {
    check(off, 8, 8);
    return *reinterpret_cast<uint64_t*>(base_ + off);
  }
  uint32_t& word32(uint64_t off) const {
    check(off, 4, 4);
    return *reinterpret_cast<uint32_t*>(base_ + off);
  }

  std::unique_ptr<Segment> segment_;  // set by open(); null for a view
  uint8_t* base_;
  uint64_t size_;
};

}  // namespace pd3
