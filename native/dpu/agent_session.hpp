// agent_session.hpp — the agent's attachment to one host segment: validation, heartbeat, fence,
// and the agent's halves of the three rings, every access through one HostDma.
#pragma once

#include <memory>

#include "dpu/host_dma.hpp"
#include "dpu/lz_producer.hpp"
#include "dpu/request_reader.hpp"
#include "dpu/response_writer.hpp"

namespace pd3 {

// Which HostDma backend a session uses.
struct DmaSetup {
  // < 0: shared memory (ShmDma: no model, nothing counted). 0..LatencyDma::kMaxLatencyNs: the
  // latency-and-accounting backend with this latency per operation.
  int64_t latency_ns = -1;
};

// One agent ↔ host segment session. Not thread-safe: owned by the Transfer Engine's thread.
class AgentSession {
 public:
  // Attaches and validates the segment `name` (Segment::attach), checks its cursors, repairs a
  // hole a killed agent left in the response ring, records this agent's pid and beats once.
  // Returns PD3_OK, PD3_E_INVAL (latency out of range) or the attach error (pd3_last_error says why).
  [[nodiscard]] static int attach(const char* name, std::unique_ptr<AgentSession>* out, const DmaSetup& setup = {});

  // Stores the current CLOCK_MONOTONIC time as the heartbeat the host checks (one posted write).
  void beat();
  // The host's fence (one read): see RequestReader::fence().
  uint64_t request_fence() { return requests_.fence(); }
  // Tells the host that no response for a request below `fence` will be published after this:
  // a fence (every response before it lands first), then the word.
  void ack_fence(uint64_t fence);

  // Request ring: see RequestReader::drain() (this one reads the fence itself).
  template <class Fn>
  int take_requests(uint32_t max, Fn&& fn) {
    return requests_.drain(max, std::forward<Fn>(fn));
  }
  // One response, published at once (a batch of one): see ResponseWriter::add().
  int respond(uint16_t op_id, int status, const void* data, uint32_t size) {
    const int rc = responses_.add(op_id, status, data, size);
    responses_.flush();
    return rc;
  }
  RequestReader& requests() { return requests_; }
  ResponseWriter& responses() { return responses_; }
  LzProducer& zone() { return zone_; }
  HostDma& dma() { return *dma_; }
  const AgentCounters& counters() const { return counters_; }

 private:
  AgentSession(std::unique_ptr<HostDma> dma, const HostLayout& layout);

  std::unique_ptr<HostDma> dma_;
  const HostLayout layout_;
  AgentCounters counters_;
  RequestReader requests_;
  ResponseWriter responses_;
  LzProducer zone_;
};

}  // namespace pd3
