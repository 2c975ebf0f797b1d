// shm_dma.cpp — see shm_dma.hpp: attaching the segment, and the doorbell's futex.
#include "dpu/shm_dma.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

#include "common/segment.hpp"
#include "pd3/status.h"

namespace pd3 {

ShmDma::ShmDma(uint8_t* base, uint64_t size) : base_(base), size_(size) {}
ShmDma::~ShmDma() = default;

int ShmDma::open(const char* name, std::unique_ptr<ShmDma>* out) {
  std::unique_ptr<Segment> seg;
  if (const int rc = Segment::attach(name, &seg)) return rc;
  auto dma = std::make_unique<ShmDma>(seg->base(), seg->size());
  dma->segment_ = std::move(seg);
  *out = std::move(dma);
  return PD3_OK;
}

bool ShmDma::wait32(uint64_t off, uint32_t expected, const timespec* timeout) {
  // Shared futex (no FUTEX_PRIVATE_FLAG): host threads in another process wake it (ring_agent).
  if (syscall(SYS_futex, &word32(off), FUTEX_WAIT, expected, timeout, nullptr, 0) == 0) return true;
  return errno != ETIMEDOUT;  // EAGAIN: the word changed (rung); EINTR: look again
}

void ShmDma::wake32(uint64_t off) {
  // seq_cst: a waiter that loaded the old value before sleeping sees the change (FUTEX_WAIT fails).
  aref(word32(off)).fetch_add(1, std::memory_order_seq_cst);
  // Every waiter: the agent's doorbell has one, the host's completion doorbell one per waiting thread.
  (void)syscall(SYS_futex, &word32(off), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace pd3
