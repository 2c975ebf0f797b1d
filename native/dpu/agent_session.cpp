// agent_session.cpp — attach to a host segment and keep its heartbeat fresh.
#include "dpu/agent_session.hpp"

#include <time.h>
#include <unistd.h>

#include "common/atomics.hpp"

namespace pd3 {

int AgentSession::attach(const char* name, std::unique_ptr<AgentSession>* out) {
  std::unique_ptr<Segment> seg;
  if (const int rc = Segment::attach(name, &seg)) return rc;
  out->reset(new AgentSession(std::move(seg)));
  pd3_control* c = (*out)->control();
  // relaxed: informational fields; the heartbeat below is what the host acts on.
  aref(c->agent_pid).store(uint32_t(getpid()), std::memory_order_relaxed);
  aref(c->agent_attaches).fetch_add(1, std::memory_order_relaxed);
  (*out)->beat();
  return PD3_OK;
}

void AgentSession::beat() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  // release: pairs with the host's acquire in pd3_host_agent_alive.
  aref(control()->agent_heartbeat_ns)
      .store(uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec), std::memory_order_release);
}

}  // namespace pd3
