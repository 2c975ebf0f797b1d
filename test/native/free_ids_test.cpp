// free_ids_test.cpp — FreeIds, the host's FIFO of unused request ids: its order against a deque
// model across many wraps, and, through the public API, ids issued in the order they were freed.
#include <deque>
#include <memory>
#include <random>
#include <vector>

#include "dpu/agent_session.hpp"
#include "harness.hpp"
#include "host/free_ids.hpp"
#include "util.hpp"

TEST(free_ids_start_full_in_increasing_order) {
  pd3::FreeIds ids;
  CHECK_EQ(ids.size(), PD3_MAX_INFLIGHT);
  for (uint32_t i = 0; i < PD3_MAX_INFLIGHT; ++i) REQUIRE(ids.pop() == i);
  CHECK(ids.empty());
  ids.push(7);
  ids.push(3);
  CHECK_EQ(ids.pop(), 7u);
  CHECK_EQ(ids.pop(), 3u);
  CHECK(ids.empty());
}

TEST(free_ids_match_a_deque_model_across_wraps) {
  pd3::FreeIds ids;
  std::deque<uint16_t> model;
  for (uint32_t i = 0; i < PD3_MAX_INFLIGHT; ++i) model.push_back(uint16_t(i));
  std::vector<uint16_t> taken;  // ids out, returned in a random order
  std::mt19937 rng(5);
  for (int step = 0; step < 200000; ++step) {
    if (!ids.empty() && (taken.empty() || rng() % 2)) {
      const uint16_t id = ids.pop();
      REQUIRE(id == model.front());
      model.pop_front();
      taken.push_back(id);
    } else {
      const size_t at = rng() % taken.size();
      std::swap(taken[at], taken.back());
      ids.push(taken.back());
      model.push_back(taken.back());
      taken.pop_back();
    }
    REQUIRE(ids.size() == model.size());
  }
}

// Issues one READ, lets `agent` answer it, and polls its completion; returns the request's id.
static int read_once(pd3_host* h, pd3::AgentSession& agent) {
  agent.beat();  // a slow run (sanitizers) must not outlive the heartbeat's timeout
  uint8_t dest[8];
  const int id = pd3_host_read(h, 1, 0, sizeof dest, dest, 0);
  if (id < 0 || pd3_host_flush(h) != PD3_OK) return -1;
  int taken = 0;
  agent.take_requests(4, [&](const pd3::RequestView& v) {
    ++taken;
    const uint8_t data[8] = {};
    if (agent.respond(v.hdr.op_id, PD3_OK, data, sizeof data) != PD3_OK) taken = -100;
  });
  pd3_completion c;
  if (taken != 1 || pd3_host_poll(h, &c, 1) != 1 || c.id != id) return -1;
  return id;
}

TEST(host_issues_ids_in_the_order_they_were_freed) {
  pd3test::ScopedHost host("fifo-ids");
  REQUIRE(host.rc == PD3_OK);
  std::unique_ptr<pd3::AgentSession> agent;
  REQUIRE(pd3::AgentSession::attach(host.name.c_str(), &agent) == PD3_OK);
  // One request at a time: each id is freed before the next is issued, yet the next is a new
  // one, until every id has been used once; then they come round again in the same order.
  for (uint32_t round = 0; round < 2; ++round)
    for (uint32_t i = 0; i < PD3_MAX_INFLIGHT; ++i) REQUIRE(read_once(host.h, *agent) == int(i));
}
