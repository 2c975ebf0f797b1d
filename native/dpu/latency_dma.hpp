// latency_dma.hpp — LatencyDma: a HostDma that performs each operation on shared memory (ShmDma)
// and makes the engine wait as a DPU's DMA engine would, `latency_ns` per operation, while it
// counts operations and bytes by kind. Selected by --dma-latency-us (docs/transfer-engine.md
// explains the model: reads and atomics wait, writes are posted, a fence waits for them).
#pragma once

#include <atomic>
#include <memory>

#include "dpu/shm_dma.hpp"

namespace pd3 {

// The modelled backend. Counters have one writer (the engine thread) except `wakes`.
class LatencyDma final : public HostDma {
 public:
  // Largest latency accepted: 1 ms per operation.
  static constexpr uint64_t kMaxLatencyNs = 1'000'000;

  LatencyDma(std::unique_ptr<ShmDma> memory, uint64_t latency_ns);

  uint64_t size() const override { return memory_->size(); }
  // false: the model is of a DMA engine, so readers do (and are charged for) what one needs.
  bool ordered_reads() const override { return false; }
  void read(uint64_t off, void* dst, size_t len) override;
  uint64_t read64(uint64_t off) override;
  void write(uint64_t off, const void* src, size_t len) override;
  void write64(uint64_t off, uint64_t value) override;
  void fence(DmaFence kind) override;
  uint64_t swap64(uint64_t off, uint64_t value) override;
  bool cas64(uint64_t off, uint64_t expected, uint64_t desired, uint64_t* found) override;
  uint32_t read32(uint64_t off) override;
  void write32(uint64_t off, uint32_t value) override;
  bool wait32(uint64_t off, uint32_t expected, const timespec* timeout) override;
  void wake32(uint64_t off) override;
  DmaCounts counts() const override;

 private:
  void blocking_op(std::atomic<uint64_t>& ops, std::atomic<uint64_t>* bytes, uint64_t n);
  void posted_op(uint64_t n);
  void wait_until(uint64_t start_ns, uint64_t deadline_ns);

  std::unique_ptr<ShmDma> memory_;
  const uint64_t latency_ns_;
  uint64_t writes_complete_ns_ = 0;  // when the last posted write lands (engine thread only)
  // relaxed everywhere: statistics, one writer each (wakes: any thread, fetch_add).
  std::atomic<uint64_t> reads_{0}, read_bytes_{0}, writes_{0}, write_bytes_{0}, atomics_{0}, fences_{0};
  std::atomic<uint64_t> wakes_{0}, wait_ns_{0};
};

}  // namespace pd3
