// agent_session.hpp — the agent's attachment to one host segment: validation, heartbeat, the
// agent's halves of the three rings.
#pragma once

#include <memory>

#include "common/segment.hpp"
#include "dpu/lz_producer.hpp"
#include "dpu/request_reader.hpp"
#include "dpu/response_writer.hpp"

namespace pd3 {

// One agent ↔ host segment session. Not thread-safe: owned by the Transfer Engine's thread.
class AgentSession {
 public:
  // Maps and validates the segment `name` (see Segment::attach), records this agent's pid and
  // beats once. Returns PD3_OK or the attach error (pd3_last_error says why).
  static int attach(const char* name, std::unique_ptr<AgentSession>* out);

  // Stores the current CLOCK_MONOTONIC time as the heartbeat the host checks.
  void beat();

  // Request ring: see drain_requests().
  template <class Fn>
  int take_requests(uint32_t max, Fn&& fn) {
    return drain_requests(control(), max, std::forward<Fn>(fn));
  }
  // Response ring: see publish_response().
  int respond(uint16_t op_id, int status, const void* data, uint32_t size) {
    return publish_response(control(), op_id, status, data, size);
  }
  LzProducer& zone() { return zone_; }
  pd3_control* control() const { return segment_->control(); }

 private:
  explicit AgentSession(std::unique_ptr<Segment> s) : segment_(std::move(s)), zone_(segment_->control()) {}

  std::unique_ptr<Segment> segment_;
  LzProducer zone_;
};

}  // namespace pd3
