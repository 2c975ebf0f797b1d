// host_poll_test.cpp — what pd3_host_poll hands out and in what order: a poll with less room than
// answers leaves the rest queued for the next, oldest first; completions another handle's poll
// drained come before newer ones; a poll for none still drains. The agent is an AgentSession
// driven on the test's thread, so each step is deterministic.
#include <array>
#include <cstring>
#include <memory>
#include <vector>

#include "dpu/agent_session.hpp"
#include "harness.hpp"
#include "pd3/host.h"
#include "util.hpp"

namespace {

// The byte a test read of `offset` brings back.
uint8_t byte_for(uint32_t offset) { return uint8_t(offset * 7 + 1); }

// Answers every request in the request ring: a READ with bytes from byte_for(offset).
uint32_t answer_all(pd3::AgentSession& agent) {
  std::vector<pd3_request> taken;
  const int n = agent.take_requests(1024, [&](const pd3::RequestView& v) { taken.push_back(v.hdr); });
  for (const pd3_request& r : taken) {
    std::vector<uint8_t> data(r.size, byte_for(r.offset));
    if (agent.respond(r.op_id, PD3_OK, data.data(), r.size) != PD3_OK) return 0;
  }
  return n < 0 ? 0 : uint32_t(n);
}

// Issues `count` 8-byte reads on `h`: user_data first..first+count-1, offsets 8 × user_data, into
// dest[user_data].
bool issue_reads(pd3_host* h, uint64_t first, uint32_t count, std::vector<std::array<uint8_t, 8>>& dest) {
  for (uint64_t u = first; u < first + count; ++u)
    if (pd3_host_read(h, 1, uint32_t(u * 8), 8, dest[u].data(), u) < 0) return false;
  return pd3_host_flush(h) == PD3_OK;
}

// The user_data of out[0, n), and whether each read brought its own bytes.
std::vector<uint64_t> checked(const pd3_completion* out, int n, const std::vector<std::array<uint8_t, 8>>& dest) {
  std::vector<uint64_t> seen;
  for (int i = 0; i < n; ++i) {
    const uint64_t u = out[i].user_data;
    const bool ok = out[i].status == PD3_OK && out[i].size == 8 && dest[u][0] == byte_for(uint32_t(u * 8)) &&
                    dest[u][7] == byte_for(uint32_t(u * 8));
    seen.push_back(ok ? u : ~0ull);
  }
  return seen;
}

std::vector<uint64_t> range(uint64_t first, uint64_t count) {
  std::vector<uint64_t> v;
  for (uint64_t u = first; u < first + count; ++u) v.push_back(u);
  return v;
}

}  // namespace

TEST(host_poll_hands_out_completions_oldest_first_across_polls) {
  pd3test::ScopedHost host("poll");
  REQUIRE(host.rc == PD3_OK);
  std::unique_ptr<pd3::AgentSession> agent;
  REQUIRE(pd3::AgentSession::attach(host.name.c_str(), &agent) == PD3_OK);
  agent->beat();
  pd3_host* other = nullptr;
  REQUIRE(pd3_host_attach(host.name.c_str(), &other) == PD3_OK);
  std::vector<std::array<uint8_t, 8>> dest(200);
  pd3_completion out[32];
  // Reads [first, first + count) issued on `h` and answered by the agent.
  auto served = [&](pd3_host* h, uint64_t first, uint32_t count) {
    return issue_reads(h, first, count, dest) && answer_all(*agent) == count;
  };
  // What a poll of `h` for up to `max` hands out (checked()).
  auto polled = [&](pd3_host* h, uint32_t max) { return checked(out, pd3_host_poll(h, out, max), dest); };

  // Room for all: each handle gets exactly its own, in the order they were issued.
  REQUIRE(issue_reads(host.h, 0, 20, dest));
  REQUIRE(issue_reads(other, 100, 5, dest));
  REQUIRE(answer_all(*agent) == 25);
  CHECK(polled(host.h, 32) == range(0, 20));
  CHECK_EQ(pd3_host_inflight(host.h), 0u);
  CHECK_EQ(pd3_host_inflight(other), 0u);  // counted when queued
  CHECK(polled(other, 32) == range(100, 5));

  // Less room than answers: the rest wait for the next polls, in order.
  REQUIRE(served(host.h, 20, 20));
  CHECK(polled(host.h, 8) == range(20, 8));
  CHECK_EQ(pd3_host_inflight(host.h), 0u);
  CHECK(polled(host.h, 8) == range(28, 8));
  CHECK(polled(host.h, 8) == range(36, 4));

  // Completions already queued (another handle's poll drained them) come before newer ones.
  REQUIRE(served(host.h, 40, 10));
  CHECK_EQ(pd3_host_poll(other, out, 32), 0);
  REQUIRE(served(host.h, 50, 10));
  CHECK(polled(host.h, 15) == range(40, 15));
  CHECK(polled(host.h, 15) == range(55, 5));

  // A poll for none still drains the ring, into the queue.
  REQUIRE(served(host.h, 60, 3));
  CHECK_EQ(pd3_host_poll(host.h, nullptr, 0), 0);
  CHECK_EQ(pd3_host_inflight(host.h), 0u);  // counted when queued
  CHECK(polled(host.h, 32) == range(60, 3));
  CHECK_EQ(pd3_host_poll(host.h, out, 32), 0);
  pd3_host_close(other);
}
