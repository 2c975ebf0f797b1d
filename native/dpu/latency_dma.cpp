// latency_dma.cpp — see latency_dma.hpp.
#include "dpu/latency_dma.hpp"

#include "common/net.hpp"

namespace pd3 {

namespace {

// Single-writer increment: a relaxed load and store, no locked instruction (see the class).
void bump(std::atomic<uint64_t>& c, uint64_t n = 1) { c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }

}  // namespace

LatencyDma::LatencyDma(std::unique_ptr<ShmDma> memory, uint64_t latency_ns)
    : memory_(std::move(memory)), latency_ns_(latency_ns) {
  assert(latency_ns <= kMaxLatencyNs);
}

void LatencyDma::wait_until(uint64_t start_ns, uint64_t deadline_ns) {
  // Busy-wait, as an engine polling its completion queue does: the wait is µs, below a sleep's
  // granularity, and it is the engine's time (its core) the model charges.
  uint64_t now = start_ns;
  if (now >= deadline_ns) return;
  while (now < deadline_ns) now = now_ns();
  bump(wait_ns_, now - start_ns);
}

void LatencyDma::blocking_op(std::atomic<uint64_t>& ops, std::atomic<uint64_t>* bytes, uint64_t n) {
  bump(ops);
  if (bytes) bump(*bytes, n);
  if (latency_ns_) {
    const uint64_t start = now_ns();
    wait_until(start, start + latency_ns_);
  }
}

void LatencyDma::posted_op(uint64_t n) {
  bump(writes_);
  bump(write_bytes_, n);
  if (latency_ns_) writes_complete_ns_ = now_ns() + latency_ns_;
}

void LatencyDma::read(uint64_t off, void* dst, size_t len) {
  memory_->read(off, dst, len);
  blocking_op(reads_, &read_bytes_, len);
}
uint64_t LatencyDma::read64(uint64_t off) {
  const uint64_t v = memory_->read64(off);
  blocking_op(reads_, &read_bytes_, 8);
  return v;
}
uint32_t LatencyDma::read32(uint64_t off) {
  const uint32_t v = memory_->read32(off);
  blocking_op(reads_, &read_bytes_, 4);
  return v;
}
void LatencyDma::write(uint64_t off, const void* src, size_t len) {
  memory_->write(off, src, len);
  posted_op(len);
}
void LatencyDma::write64(uint64_t off, uint64_t value) {
  memory_->write64(off, value);
  posted_op(8);
}
void LatencyDma::write32(uint64_t off, uint32_t value) {
  memory_->write32(off, value);
  posted_op(4);
}
void LatencyDma::fence(DmaFence kind) {
  bump(fences_);
  if (latency_ns_) wait_until(now_ns(), writes_complete_ns_);  // the writes before it have landed
  memory_->fence(kind);
}
uint64_t LatencyDma::swap64(uint64_t off, uint64_t value) {
  const uint64_t v = memory_->swap64(off, value);
  blocking_op(atomics_, nullptr, 0);
  return v;
}
bool LatencyDma::cas64(uint64_t off, uint64_t expected, uint64_t desired, uint64_t* found) {
  const bool ok = memory_->cas64(off, expected, desired, found);
  blocking_op(atomics_, nullptr, 0);
  return ok;
}
bool LatencyDma::wait32(uint64_t off, uint32_t expected, const timespec* timeout) {
  return memory_->wait32(off, expected, timeout);  // a sleep, not a DMA: not charged
}
void LatencyDma::wake32(uint64_t off) {
  wakes_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic; any thread
  memory_->wake32(off);
}

DmaCounts LatencyDma::counts() const {
  DmaCounts c;
  c.reads = reads_.load(std::memory_order_relaxed);
  c.read_bytes = read_bytes_.load(std::memory_order_relaxed);
  c.writes = writes_.load(std::memory_order_relaxed);
  c.write_bytes = write_bytes_.load(std::memory_order_relaxed);
  c.atomics = atomics_.load(std::memory_order_relaxed);
  c.fences = fences_.load(std::memory_order_relaxed);
  c.wakes = wakes_.load(std::memory_order_relaxed);
  c.wait_ns = wait_ns_.load(std::memory_order_relaxed);
  return c;
}

}  // namespace pd3
