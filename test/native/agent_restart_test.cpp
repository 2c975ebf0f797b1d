// agent_restart_test.cpp — what the host and a new agent do after an agent dies: the fence, the
// quarantine of failed ids, a restart noticed before the heartbeat goes stale, and the repair of
// a response slot the dead agent reserved but never sealed.
#include <cstring>
#include <memory>
#include <vector>

#include "common/segment_rings.hpp"
#include "agent_rings.hpp"
#include "dpu/agent_session.hpp"
#include "harness.hpp"
#include "util.hpp"

namespace {

// Polls until one completion arrives (bounded).
bool poll_one(pd3_host* h, pd3_completion* c) {
  for (int i = 0; i < 2000; ++i) {
    if (pd3_host_poll(h, c, 1) == 1) return true;
    usleep(500);
  }
  return false;
}

// Takes every request from the ring with `agent` and answers each READ with `fill` bytes.
int serve_reads(pd3::AgentSession& agent, uint8_t fill) {
  std::vector<pd3::RequestView> got;
  agent.take_requests(64, [&](const pd3::RequestView& v) { got.push_back(v); });
  for (const auto& v : got) {
    std::vector<uint8_t> data(v.hdr.size, fill);
    if (agent.respond(v.hdr.op_id, PD3_OK, data.data(), v.hdr.size) != PD3_OK) return -1;
  }
  return int(got.size());
}

}  // namespace

TEST(agent_restart_before_timeout_fails_what_the_old_agent_took) {
  pd3test::ScopedHost host("restart");
  REQUIRE(host.rc == PD3_OK);
  std::unique_ptr<pd3::AgentSession> old_agent;
  REQUIRE(pd3::AgentSession::attach(host.name.c_str(), &old_agent) == PD3_OK);
  uint8_t dest[64];
  const int lost = pd3_host_read(host.h, 1, 0, 16, dest, 1);
  REQUIRE(lost >= 0);
  REQUIRE(pd3_host_flush(host.h) == PD3_OK);  // staged until now: the old agent must take it
  std::vector<pd3::RequestView> taken;
  old_agent->take_requests(64, [&](const pd3::RequestView& v) { taken.push_back(v); });
  CHECK_EQ(taken.size(), 1u);
  // The old agent dies mid-publish: a response slot reserved, never sealed.
  pd3::SlotReservation r;
  REQUIRE(pd3::response_ring(host.control()).reserve_sp(64, &r));
  old_agent.reset();

  // A new agent attaches while the heartbeat is still fresh.
  std::unique_ptr<pd3::AgentSession> agent;
  REQUIRE(pd3::AgentSession::attach(host.name.c_str(), &agent) == PD3_OK);
  CHECK_EQ(pd3::response_ring(host.control()).published_end(), pd3::response_ring(host.control()).tail());

  // The host notices the attach: the old request fails at once instead of waiting forever.
  pd3_completion c{};
  REQUIRE(poll_one(host.h, &c));
  CHECK_EQ(c.user_data, 1u);
  CHECK_EQ(c.status, PD3_E_AGENT_DOWN);
  CHECK(host.control()->req_fence > 0);

  // New requests go to the new agent and complete: nothing is stuck behind the repaired hole.
  const int fresh = pd3_host_read(host.h, 1, 0, 16, dest, 2);
  REQUIRE(fresh >= 0);
  CHECK_EQ(serve_reads(*agent, 0x5A), 1);
  REQUIRE(poll_one(host.h, &c));
  CHECK_EQ(c.user_data, 2u);
  CHECK_EQ(c.status, PD3_OK);
  CHECK_EQ(dest[15], 0x5A);
}

TEST(agent_restart_quarantined_ids_return_after_the_fence_ack) {
  pd3test::ScopedHost host("quarantine");
  REQUIRE(host.rc == PD3_OK);
  std::unique_ptr<pd3::AgentSession> old_agent;
  REQUIRE(pd3::AgentSession::attach(host.name.c_str(), &old_agent) == PD3_OK);
  uint8_t dest[64];
  std::vector<int> ids;
  for (int i = 0; i < 8; ++i) ids.push_back(pd3_host_read(host.h, 1, 0, 8, dest, uint64_t(i)));
  for (int id : ids) REQUIRE(id >= 0);
  REQUIRE(pd3_host_flush(host.h) == PD3_OK);  // in the ring before the old agent goes
  old_agent.reset();
  std::unique_ptr<pd3::AgentSession> agent;
  REQUIRE(pd3::AgentSession::attach(host.name.c_str(), &agent) == PD3_OK);
  pd3_completion c[16];
  int failed = 0;
  for (int i = 0; i < 100 && failed < 8; ++i) {
    const int n = pd3_host_poll(host.h, c, 16);
    for (int k = 0; k < n; ++k) failed += c[k].status == PD3_E_AGENT_DOWN;
  }
  CHECK_EQ(failed, 8);
  // The new agent discards the fenced requests without answering them...
  CHECK_EQ(serve_reads(*agent, 1), 0);
  CHECK_EQ(host.control()->agent_fenced, 8u);
  // ...and, once it acknowledges the fence, the ids are free again: a new request may reuse them.
  pd3test::ack_fence(host.control(), host.control()->req_fence);
  CHECK_EQ(pd3_host_poll(host.h, c, 16), 0);
  // Every id, the 8 quarantined ones included, can be issued again.
  int issued = 0, rc;
  while ((rc = pd3_host_read(host.h, 1, 0, 8, dest, 99)) >= 0) ++issued;
  CHECK_EQ(rc, PD3_E_INFLIGHT);
  CHECK_EQ(issued, int(PD3_MAX_INFLIGHT));
  CHECK_EQ(serve_reads(*agent, 2), 64);
  REQUIRE(poll_one(host.h, c));
  CHECK_EQ(c[0].user_data, 99u);
  CHECK_EQ(c[0].status, PD3_OK);
}

TEST(agent_restart_pad_hole_across_the_ring_end) {
  pd3test::ScopedHost host("padhole", pd3_segment_sizes{4096, 4096, 0, 0, 0});
  REQUIRE(host.rc == PD3_OK);
  pd3_control* c = host.control();
  const pd3::SlotRing ring = pd3::response_ring(c);
  // Move both cursors close to the end, then reserve a slot that needs a PAD before it.
  c->resp_head = c->resp_tail = 4096 * 3 + 4096 - 32;
  pd3::SlotReservation r;
  REQUIRE(ring.reserve_sp(256, &r));
  CHECK_EQ(r.pad, 32u);
  CHECK_EQ(ring.published_end(), c->resp_head);
  ring.pad_hole(ring.published_end(), ring.tail());
  CHECK_EQ(ring.published_end(), ring.tail());
  // The consumer walks over both PADs and finds nothing to deliver.
  int records = 0;
  CHECK_EQ(ring.drain(16, [&](const pd3_slot&, const uint8_t*, uint64_t) {
    ++records;
    return 1;
  }), 0);
  CHECK_EQ(records, 0);
  CHECK_EQ(c->resp_head, c->resp_tail);
}
