// direct_membership_test.cpp — direct mode following a pool's membership
// (pd3_host_set_direct_member): a server that joins gets a connection and new regions, one that
// leaves gets no new region while its old ones are still served, one that returns is placed again,
// and the 64 places for servers are reused only from servers that left and hold nothing.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "direct_fixture.hpp"
#include "fake_memserver.hpp"
#include "harness.hpp"
#include "pd3/host.h"

namespace {

using namespace pd3test::direct;

// The server id of a new region's id, or 0 when the allocation fails (its status in *status).
uint32_t allocate_on(pd3_host* h, int* status) {
  pd3_completion c{};
  *status = pd3_host_allocate(h, 4096, 1);
  if (*status < 0) return 0;
  *status = await(h, &c);
  return *status == PD3_OK ? pd3_region_server(c.region) : 0;
}

// Writes `text` at the start of `region`, reads it back; whether it came back whole.
bool round_trip(pd3_host* h, uint32_t region, const char* text) {
  pd3_completion c{};
  const uint32_t n = uint32_t(std::strlen(text) + 1);
  if (pd3_host_write(h, region, 0, text, n, 2) < 0 || await(h, &c) != PD3_OK) return false;
  char back[64] = {};
  if (pd3_host_read(h, region, 0, n, back, 3) < 0 || await(h, &c) != PD3_OK) return false;
  return std::memcmp(back, text, n) == 0;
}

}  // namespace

TEST(direct_members_join_leave_and_return) {
  pd3test::FakeMemServer a({.server_id = 1, .token = "t", .capacity = 1 << 20});
  pd3test::FakeMemServer b({.server_id = 2, .token = "t", .capacity = 8 << 20});
  REQUIRE(a.start() && b.start());
  // Started from A alone, as a host started from the pool's membership of the moment.
  DirectHost host(at(a.port()), "t", PD3_HOST_DIRECT_ONLY, PD3_FALLBACK_FAIL, PD3_PLACEMENT_MOST_FREE);
  REQUIRE(host.rc == PD3_OK);
  int status = 0;
  CHECK_EQ(allocate_on(host.h, &status), 1u);

  // B joins: it has the most free bytes, so new regions go there.
  CHECK_EQ(pd3_host_set_direct_member(host.h, at(b.port()).c_str(), 1), PD3_OK);
  pd3_completion c{};
  REQUIRE(pd3_host_allocate(host.h, 4096, 1) >= 0);
  REQUIRE(await(host.h, &c) == PD3_OK);
  const uint32_t on_b = c.region;
  CHECK_EQ(pd3_region_server(on_b), 2u);
  CHECK(round_trip(host.h, on_b, "on b"));

  // B leaves: no new region there, its region still served.
  CHECK_EQ(pd3_host_set_direct_member(host.h, at(b.port()).c_str(), 0), PD3_OK);
  for (int i = 0; i < 5; ++i) CHECK_EQ(allocate_on(host.h, &status), 1u);
  CHECK(round_trip(host.h, on_b, "still on b"));

  // Every server gone: an allocation has nowhere to go, and says so.
  CHECK_EQ(pd3_host_set_direct_member(host.h, at(a.port()).c_str(), 0), PD3_OK);
  CHECK_EQ(allocate_on(host.h, &status), 0u);
  CHECK_EQ(status, PD3_E_UNAVAILABLE);
  CHECK(std::strstr(pd3_last_error(), "left the pool") != nullptr);

  // B returns: placed again.
  CHECK_EQ(pd3_host_set_direct_member(host.h, at(b.port()).c_str(), 1), PD3_OK);
  CHECK_EQ(allocate_on(host.h, &status), 2u);
  // Leaving twice, or leaving when never known, changes nothing.
  CHECK_EQ(pd3_host_set_direct_member(host.h, at(a.port()).c_str(), 0), PD3_OK);
  CHECK_EQ(pd3_host_set_direct_member(host.h, "127.0.0.1:9", 0), PD3_OK);
  CHECK_EQ(allocate_on(host.h, &status), 2u);
}

TEST(direct_members_bad_input) {
  pd3test::FakeMemServer a({.server_id = 1, .token = "t"});
  REQUIRE(a.start());
  DirectHost host(at(a.port()), "t");
  REQUIRE(host.rc == PD3_OK);
  CHECK_EQ(pd3_host_set_direct_member(host.h, nullptr, 1), PD3_E_INVAL);
  for (const char* bad : {"", "nohost", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:70000", ":80", "127.0.0.1:-1", "127.0.0.1:8x"})
    CHECK_EQ(pd3_host_set_direct_member(host.h, bad, 1), PD3_E_INVAL);
  CHECK_EQ(pd3_host_set_direct_member(nullptr, at(a.port()).c_str(), 1), PD3_E_INVAL);
  // A segment without direct mode has no servers to follow.
  pd3test::ScopedHost plain("nodirect");
  REQUIRE(plain.rc == PD3_OK);
  CHECK_EQ(pd3_host_set_direct_member(plain.h, at(a.port()).c_str(), 1), PD3_E_INVAL);
  CHECK(std::strstr(pd3_last_error(), "direct") != nullptr);
}

// 64 servers known at most: a 65th takes the place of one that left and was never connected, and
// is refused while every place is a member's.
TEST(direct_members_at_most_64_places_reused_from_servers_that_left) {
  pd3test::FakeMemServer a({.server_id = 1, .token = "t"});
  pd3test::FakeMemServer late({.server_id = 7, .token = "t", .capacity = 64 << 20});
  REQUIRE(a.start() && late.start());
  DirectHost host(at(a.port()), "t", PD3_HOST_DIRECT_ONLY, PD3_FALLBACK_FAIL, PD3_PLACEMENT_MOST_FREE);
  REQUIRE(host.rc == PD3_OK);
  int status = 0;
  CHECK_EQ(allocate_on(host.h, &status), 1u);  // A is connected from here on
  // 63 more members no server listens for (never connected: nothing allocates while they are members).
  for (int port = 1; port <= 63; ++port)
    REQUIRE(pd3_host_set_direct_member(host.h, ("127.0.0.2:" + std::to_string(port)).c_str(), 1) == PD3_OK);
  CHECK_EQ(pd3_host_set_direct_member(host.h, at(late.port()).c_str(), 1), PD3_E_NOSPACE);
  CHECK(std::strstr(pd3_last_error(), "64") != nullptr);
  // A leaves, but its connection holds its place; one that never connected gives its place up.
  CHECK_EQ(pd3_host_set_direct_member(host.h, at(a.port()).c_str(), 0), PD3_OK);
  CHECK_EQ(pd3_host_set_direct_member(host.h, at(late.port()).c_str(), 1), PD3_E_NOSPACE);
  CHECK_EQ(pd3_host_set_direct_member(host.h, "127.0.0.2:5", 0), PD3_OK);
  CHECK_EQ(pd3_host_set_direct_member(host.h, at(late.port()).c_str(), 1), PD3_OK);
  // The newcomer is placed; the 62 unreachable members are tried and found down.
  for (int port = 1; port <= 63; ++port)
    if (port != 5) REQUIRE(pd3_host_set_direct_member(host.h, ("127.0.0.2:" + std::to_string(port)).c_str(), 0) == PD3_OK);
  CHECK_EQ(allocate_on(host.h, &status), 7u);
}

// Membership changes from one thread while others allocate, write and read through their own
// handles: every request completes with its own bytes or a clean refusal, nothing hangs.
TEST(direct_members_stress_changes_while_requests_flow) {
  pd3test::FakeMemServer a({.server_id = 1, .token = "t", .capacity = 256 << 20});
  pd3test::FakeMemServer b({.server_id = 2, .token = "t", .capacity = 256 << 20});
  REQUIRE(a.start() && b.start());
  DirectHost host(at(a.port()), "t");
  REQUIRE(host.rc == PD3_OK);
  const std::string name = pd3_host_name(host.h);
  const int rounds = std::max(20, 300 / int(pd3test::stress_scale()));
  std::atomic<bool> done{false};
  std::atomic<int> wrong{0}, on_b{0};
  auto worker = [&](int seed) {
    pd3_host* h = nullptr;
    if (pd3_host_attach(name.c_str(), &h) != PD3_OK) return wrong.fetch_add(1), void();
    for (int i = 0; i < rounds; ++i) {
      int status = 0;
      pd3_completion c{};
      if (pd3_host_allocate(h, 4096, 1) < 0 || (status = await(h, &c)) != PD3_OK) {
        wrong.fetch_add(1);
        continue;
      }
      if (pd3_region_server(c.region) == 2) on_b.fetch_add(1);
      const std::string text = "seed " + std::to_string(seed) + " round " + std::to_string(i);
      if (!round_trip(h, c.region, text.c_str())) wrong.fetch_add(1);
      if (pd3_host_deallocate(h, c.region, 4) < 0 || await(h, &c) != PD3_OK) wrong.fetch_add(1);
    }
    pd3_host_close(h);
  };
  std::thread t1(worker, 1), t2(worker, 2);
  std::thread churn([&] {
    for (int i = 0; !done.load(); ++i) {
      // B in and out of the pool; A stays, so an allocation always has somewhere to go.
      if (pd3_host_set_direct_member(host.h, at(b.port()).c_str(), i % 2 == 0) != PD3_OK) wrong.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  t1.join();
  t2.join();
  done.store(true);
  churn.join();
  CHECK_EQ(wrong.load(), 0);
  CHECK(on_b.load() > 0);  // B was placed while it was in
}
