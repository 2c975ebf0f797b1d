// agent_rings.hpp — the agent's ring operations on a segment a test maps itself (the host's view):
// each call goes through a fresh HostDma (shared memory, or the latency backend when latency_ns
// >= 0) over that mapping, resuming from the cursors in the control block, as the agent does.
#pragma once

#include <memory>

#include "dpu/agent_session.hpp"
#include "dpu/latency_dma.hpp"

namespace pd3test {

inline std::unique_ptr<pd3::HostDma> dma_over(pd3_control* c, int64_t latency_ns = -1) {
  auto shm = std::make_unique<pd3::ShmDma>(reinterpret_cast<uint8_t*>(c), c->segment_size);
  if (latency_ns < 0) return shm;
  return std::make_unique<pd3::LatencyDma>(std::move(shm), uint64_t(latency_ns));
}

// RequestReader::drain over `c`.
template <class Fn>
int drain_requests(pd3_control* c, uint32_t max, Fn&& fn, int64_t latency_ns = -1) {
  auto dma = dma_over(c, latency_ns);
  pd3::AgentCounters counters(*dma);
  pd3::RequestReader reader(*dma, pd3::HostLayout::read(*dma), counters);
  return reader.drain(max, std::forward<Fn>(fn));
}

// One response, published at once (ResponseWriter::add + flush).
inline int publish_response(pd3_control* c, uint16_t op_id, int status, const void* data, uint32_t size,
                            int64_t latency_ns = -1) {
  auto dma = dma_over(c, latency_ns);
  pd3::AgentCounters counters(*dma);
  pd3::ResponseWriter writer(*dma, pd3::HostLayout::read(*dma), counters);
  const int rc = writer.add(op_id, status, data, size);
  writer.flush();
  return rc;
}

// AgentSession::ack_fence over `c`.
inline void ack_fence(pd3_control* c, uint64_t fence) {
  auto dma = dma_over(c);
  dma->fence();
  dma->write64(PD3_CTL(agent_fence_ack), fence);
}

}  // namespace pd3test
