// host_dma.hpp — HostDma: the one way the agent reaches host memory (the shared segment), as the
// DMA engine of a DPU would: reads, posted writes, fences and 8-byte atomics at segment offsets.
//
// Every agent access to the request ring, the response ring, the Loading Zone, the control block
// and the doorbell goes through this interface (scripts/check-dma.mjs fails the tests otherwise).
// Addresses are byte offsets into the segment, never pointers: on a DPU the host's memory is not
// mapped into the agent, and an offset is what a DMA descriptor carries (docs/hardware.md maps each
// operation to DOCA DMA and RDMA verbs).
//
// Ordering, the contract every backend keeps (the model is RDMA's, one queue pair):
//   * read(), read64() return once the bytes are in agent memory, so nothing issued after one is
//     performed before it. read64() is an acquire: what the
//     host wrote before it stored the word returned is seen by every read issued after it. read()
//     gives no order inside its range unless ordered_reads() (shared memory: ascending 8-byte
//     words, each an acquire, so a slot's seal, first in the slot, orders its body after it).
//   * write(), write64() are posted: they return before the host sees them, and two writes are NOT
//     ordered with each other. write64() is single-copy atomic (the host never sees half a word).
//   * fence(kWrites): every write issued before it is visible to the host before any write issued
//     after it. This is how data is published: write the data, fence, write the word that
//     publishes it (a seal, a state word, a cursor).
//   * fence(kAll): as kWrites, and also before any read issued after it (store → load, used by the
//     doorbell handshake).
//   * swap64(), cas64() are atomic with respect to the host's own atomics on the word, act
//     as a fence(kAll) on both sides (acq_rel), and return once their result is known.
//   * wait32() and wake32() are the doorbell: not DMA operations on hardware (docs/hardware.md).
//
// Threads: one thread (the Transfer Engine's) issues every operation except wake32(), which any
// agent thread may call.
#pragma once

#include <time.h>

#include <cstddef>
#include <cstdint>

namespace pd3 {

// What one backend did, by kind of operation (a latency backend counts; shared memory does not).
struct DmaCounts {
  uint64_t reads = 0, read_bytes = 0;    // read(), read64()
  uint64_t writes = 0, write_bytes = 0;  // write(), write64()
  uint64_t atomics = 0;                  // swap64(), cas64()
  uint64_t fences = 0;                   // fence()
  uint64_t wakes = 0;                    // wake32() (doorbell, any thread)
  uint64_t wait_ns = 0;                  // time the engine spent waiting for modelled completions
};

// Which accesses a fence orders (see the contract above).
enum class DmaFence { kWrites, kAll };

// The interface. Offsets must lie in the segment and words be naturally aligned (asserted).
class HostDma {
 public:
  virtual ~HostDma() = default;

  // Bytes of the segment (the highest offset + 1 any operation may touch).
  virtual uint64_t size() const = 0;
  // True if read() orders its words (ascending, each an acquire: a seal seen published orders the
  // slot's bytes after it); false for a DMA engine, whose reads give no order inside, so readers
  // of sealed data read it again once they saw the seal (RequestReader::drain).
  virtual bool ordered_reads() const = 0;

  // Copies `len` bytes at `off` into `dst` (ascending words, each an acquire; `off` and `len`
  // multiples of 8).
  virtual void read(uint64_t off, void* dst, size_t len) = 0;
  // The 8-byte word at `off`, with acquire order.
  [[nodiscard]] virtual uint64_t read64(uint64_t off) = 0;
  // Posted copy of `len` bytes of `src` to `off` (`off` a multiple of 8; the last word is
  // zero-padded past `len`, as records in the segment are).
  virtual void write(uint64_t off, const void* src, size_t len) = 0;
  // Posted single-copy-atomic store of the 8-byte word at `off`.
  virtual void write64(uint64_t off, uint64_t value) = 0;
  // Orders the writes (kWrites) or every access (kAll) before it before those after it.
  virtual void fence(DmaFence kind = DmaFence::kWrites) = 0;
  // Atomically stores `value` at `off`; returns the word it replaced.
  [[nodiscard]] virtual uint64_t swap64(uint64_t off, uint64_t value) = 0;
  // Atomically replaces `expected` by `desired` at `off`. Returns true if it did; either way
  // *found is the word that was there.
  [[nodiscard]] virtual bool cas64(uint64_t off, uint64_t expected, uint64_t desired, uint64_t* found) = 0;

  // The 4-byte words of the doorbell (pd3_control line 12). read32 is an acquire, write32 posted.
  [[nodiscard]] virtual uint32_t read32(uint64_t off) = 0;
  virtual void write32(uint64_t off, uint32_t value) = 0;
  // Sleeps until the 32-bit word at `off` differs from `expected`, a wake32(), or `timeout`
  // (relative). Returns true unless the timeout passed.
  [[nodiscard]] virtual bool wait32(uint64_t off, uint32_t expected, const timespec* timeout) = 0;
  // Increments the 32-bit word at `off` and wakes every waiter on it (an agent's wait32(), or the
  // host threads waiting on the completion doorbell). Any agent thread.
  virtual void wake32(uint64_t off) = 0;

  // Operations so far (all zero for a backend that does not count). Any thread.
  [[nodiscard]] virtual DmaCounts counts() const = 0;
};

}  // namespace pd3
