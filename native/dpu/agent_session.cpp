// agent_session.cpp — attach to a host segment and keep its heartbeat fresh.
#include "dpu/agent_session.hpp"

#include <time.h>
#include <unistd.h>

#include "common/atomics.hpp"
#include "common/error.hpp"
#include "common/segment_rings.hpp"
#include "pd3/status.h"

namespace pd3 {

namespace {

// Checks the cursors the agent will act on. The agent owns one side of every cursor pair (and all
// Loading Zone cursors), so reading its own side first gives an exact check even while the host
// keeps running: impossible values (head past tail, more in flight than fits) would make the
// agent lose requests or spin, so such a segment is refused.
int check_cursors(const pd3_control* c) {
  // One cursor pair and the capacity between them.
  struct Pair {
    const char* what;
    uint64_t head, tail, capacity;
  };
  // relaxed: a snapshot; only the monotonic order of each cursor matters (head read before tail).
  const uint64_t req_head = load_relaxed(c->req_head);
  const uint64_t resp_tail = load_relaxed(c->resp_tail);
  const Pair pairs[] = {
      {"request ring", req_head, load_relaxed(c->req_tail), c->req_size},
      {"response ring", load_relaxed(c->resp_head), resp_tail, c->resp_size},
      {"loading zone data", load_relaxed(c->lz_data_head), load_relaxed(c->lz_data_tail), c->lz_data_size},
      {"loading zone items", load_relaxed(c->lz_head_seq), load_relaxed(c->lz_tail_seq), c->lz_desc_count},
  };
  for (const Pair& p : pairs)
    if (p.head > p.tail || p.tail - p.head > p.capacity)
      return fail(PD3_E_BAD_LAYOUT, "%s cursors are impossible: head %llu, tail %llu, capacity %llu", p.what,
                  (unsigned long long)p.head, (unsigned long long)p.tail, (unsigned long long)p.capacity);
  if (load_relaxed(c->lz_head_seq) == 0)
    return fail(PD3_E_BAD_LAYOUT, "loading zone head seq is 0 (seqs start at 1)");
  return PD3_OK;
}

// A previous agent killed between reserving a response slot and sealing it leaves a hole the host
// would wait at forever: cover it with PAD slots. (The host fails what that agent took when it
// sees this attach; docs/host-library.md.)
void repair_response_ring(pd3_control* c) {
  const SlotRing ring = response_ring(c);
  const uint64_t end = ring.published_end();
  if (end < ring.tail()) ring.pad_hole(end, ring.tail());
}

}  // namespace

int AgentSession::attach(const char* name, std::unique_ptr<AgentSession>* out) {
  std::unique_ptr<Segment> seg;
  if (const int rc = Segment::attach(name, &seg)) return rc;
  if (const int rc = check_cursors(seg->control())) return rc;
  out->reset(new AgentSession(std::move(seg)));
  pd3_control* c = (*out)->control();
  repair_response_ring(c);
  // relaxed: informational.
  aref(c->agent_pid).store(uint32_t(getpid()), std::memory_order_relaxed);
  // release: a host that sees the new count also sees the repaired response ring.
  aref(c->agent_attaches).fetch_add(1, std::memory_order_release);
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
