// agent_doorbell.hpp — wakes the Transfer Engine when work arrives while it sleeps, without a
// system call per hand-off: the engine announces how it sleeps in the control block (pd3_control
// line 12, through HostDma), and producers ring only then. Host threads ring through the shared
// futex word (ring_agent, common/doorbell.hpp); the engine's own threads (capture, Host View
// shards) read the announcement from agent memory and ring through an eventfd, which the engine
// polls alongside its sockets when it waits for responses, or through the futex when it sleeps.
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "common/unique_fd.hpp"
#include "dpu/host_layout.hpp"
#include "pd3/status.h"

namespace pd3 {

// The engine's side, and its own threads' ring. One sleeper (the engine thread).
class AgentDoorbell {
 public:
  // Opens the eventfd; the futex words are reached through `dma`. PD3_OK or PD3_E_SYS.
  [[nodiscard]] int open(HostDma* dma) {
    dma_ = dma;
    fd_.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    return fd_.valid() ? PD3_OK : PD3_E_SYS;
  }
  // Poll this for POLLIN while armed as PD3_AGENT_POLLING.
  int fd() const { return fd_.get(); }

  // The engine's threads, after publishing work. seq_cst fence: pairs with arm()'s — either the
  // engine's check after arming sees our work, or we see its announcement and wake it.
  void ring() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    // relaxed: ordered by the fences.
    const uint32_t how = announced_.load(std::memory_order_relaxed);
    if (how == PD3_AGENT_POLLING) {
      const uint64_t one = 1;
      (void)!::write(fd_.get(), &one, sizeof one);
    } else if (how == PD3_AGENT_SLEEPING) {
      dma_->wake32(PD3_CTL(agent_doorbell));
    }
  }

  // The engine, before its last check for work: `how` is PD3_AGENT_POLLING or PD3_AGENT_SLEEPING.
  // Returns the doorbell's count to hand to sleep(), read before the announcement: every ring that
  // sees this announcement increments after it, so the sleep returns at once. (Read after it, the
  // count could already hold the increment of a host thread that saw the announcement while another
  // host thread, finding it taken back by that one, skipped its ring: ring_agent.) DMA: a read, a
  // write, a fence(kAll).
  uint32_t arm(uint32_t how) {
    const uint32_t count = dma_->read32(PD3_CTL(agent_doorbell));
    announced_.store(how, std::memory_order_relaxed);  // relaxed: the fence below orders it
    dma_->write32(PD3_CTL(agent_sleeping), how);
    dma_->fence(DmaFence::kAll);  // the host's side: ring_agent fences between publish and check
    std::atomic_thread_fence(std::memory_order_seq_cst);  // our threads' side: see ring()
    return count;
  }
  // PD3_AGENT_SLEEPING: waits until a ring, or `timeout` (relative) passes. Returns true if rung
  // (woken, or rung before the wait began), false on timeout.
  bool sleep(uint32_t armed_count, const timespec* timeout) {
    return dma_->wait32(PD3_CTL(agent_doorbell), armed_count, timeout);
  }
  // After the wait (or after deciding not to wait); `rung`: fd() polled readable.
  void disarm(bool rung) {
    // relaxed: a late ring only costs a write or a wake.
    announced_.store(PD3_AGENT_AWAKE, std::memory_order_relaxed);
    dma_->write32(PD3_CTL(agent_sleeping), PD3_AGENT_AWAKE);
    if (rung) {
      uint64_t count;
      (void)!::read(fd_.get(), &count, sizeof count);  // resets the counter
    }
  }

 private:
  HostDma* dma_ = nullptr;
  UniqueFd fd_;
  std::atomic<uint32_t> announced_{PD3_AGENT_AWAKE};  // what arm() last wrote to agent_sleeping
};

}  // namespace pd3
