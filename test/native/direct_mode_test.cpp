// direct_mode_test.cpp — the host library's direct mode (PD3_HOST_DIRECT_ONLY and the fallback
// when the agent is down) against in-test memory servers: routing by region id, placement by
// policy and refraction after NOSPACE, config errors, a killed server, a server that never answers, a wrong token.
#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "direct_fixture.hpp"
#include "fake_memserver.hpp"
#include "harness.hpp"
#include "util.hpp"

namespace {

using namespace pd3test::direct;

// One in-test server (id 1, token "t"), a direct-only host on it and a region of `region_bytes`
// there: the set-up most tests here share.
struct OneServer {
  pd3test::FakeMemServer s{{.server_id = 1, .token = "t"}};
  DirectHost host;
  uint32_t region = 0;
  explicit OneServer(uint32_t region_bytes = 4096, uint32_t publish_batch = 0)
      : host(at(started(s)), "t", PD3_HOST_DIRECT_ONLY, PD3_FALLBACK_FAIL, PD3_PLACEMENT_P2C, 0, publish_batch) {
    REQUIRE(host.rc == PD3_OK);
    region = allocate_region(host.h, region_bytes);
  }
};

}  // namespace

TEST(direct_round_trip_and_routing_by_region_id) {
  pd3test::FakeMemServer a({.server_id = 2, .token = "t", .capacity = 1 << 20});
  pd3test::FakeMemServer b({.server_id = 5, .token = "t", .capacity = 8 << 20});
  REQUIRE(a.start() && b.start());
  DirectHost host(at(a.port()) + "," + at(b.port()), "t");
  REQUIRE(host.rc == PD3_OK);
  pd3_completion c{};
  // Allocation goes to the server announcing the most free bytes (b), and its id says so.
  REQUIRE(pd3_host_allocate(host.h, 4096, 1) >= 0);
  CHECK_EQ(await(host.h, &c), PD3_OK);
  const uint32_t region = c.region;
  CHECK_EQ(pd3_region_server(region), 5u);
  const char msg[] = "direct to server 5";
  REQUIRE(pd3_host_write(host.h, region, 100, msg, sizeof msg, 2) >= 0);
  CHECK_EQ(await(host.h, &c), PD3_OK);
  char back[sizeof msg] = {};
  REQUIRE(pd3_host_read(host.h, region, 100, sizeof back, back, 3) >= 0);
  CHECK_EQ(await(host.h, &c), PD3_OK);
  CHECK(std::memcmp(back, msg, sizeof msg) == 0);
  CHECK(b.records.load() >= 3);
  CHECK_EQ(a.records.load(), 0u);
  // A region of a server nobody configured: refused at issue.
  CHECK_EQ(pd3_host_read(host.h, pd3_region_id(9, 1), 0, 8, back, 4), PD3_E_BAD_REGION);
  // Bounds errors come back from the server as statuses.
  REQUIRE(pd3_host_read(host.h, region, 4090, 64, back, 5) >= 0);
  CHECK_EQ(await(host.h, &c), PD3_E_RANGE);
}

// Server ids past 15: 16 and 40000 (alike in 4 server bits) each get their own regions back, and a
// DEALLOCATE of another server's region id is BAD_REGION.
TEST(direct_routes_server_ids_past_15) {
  pd3test::FakeMemServer low({.server_id = 16, .token = "t", .capacity = 1 << 20});
  pd3test::FakeMemServer high({.server_id = 40000, .token = "t", .capacity = 8 << 20});
  REQUIRE(low.start() && high.start());
  DirectHost host(at(low.port()) + "," + at(high.port()), "t", PD3_HOST_DIRECT_ONLY, PD3_FALLBACK_FAIL,
                  PD3_PLACEMENT_MOST_FREE);
  REQUIRE(host.rc == PD3_OK);
  pd3_completion c{};
  REQUIRE(pd3_host_allocate(host.h, 4096, 1) >= 0);
  REQUIRE(await(host.h, &c) == PD3_OK);
  const uint32_t on_high = c.region;
  CHECK_EQ(pd3_region_server(on_high), 40000u);
  const char msg[] = "to server 40000";
  REQUIRE(pd3_host_write(host.h, on_high, 8, msg, sizeof msg, 2) >= 0);
  CHECK_EQ(await(host.h, &c), PD3_OK);
  char back[sizeof msg] = {};
  REQUIRE(pd3_host_read(host.h, on_high, 8, sizeof back, back, 3) >= 0);
  CHECK_EQ(await(host.h, &c), PD3_OK);
  CHECK_EQ(c.region, on_high);
  CHECK(std::memcmp(back, msg, sizeof msg) == 0);
  CHECK_EQ(low.records.load(), 0u);
  // Ids of servers nobody has: refused at issue, whatever their low bits.
  CHECK_EQ(pd3_host_deallocate(host.h, pd3_region_id(40001, pd3_region_local(on_high)), 4), PD3_E_BAD_REGION);
  CHECK_EQ(pd3_host_read(host.h, pd3_region_id(0, pd3_region_local(on_high)), 0, 8, back, 5), PD3_E_BAD_REGION);
  // The server's own verdict on one of its ids it never handed out, then the real release.
  REQUIRE(pd3_host_deallocate(host.h, pd3_region_id(40000, 999), 6) >= 0);
  CHECK_EQ(await(host.h, &c), PD3_E_BAD_REGION);
  REQUIRE(pd3_host_deallocate(host.h, on_high, 7) >= 0);
  CHECK_EQ(await(host.h, &c), PD3_OK);
  CHECK_EQ(c.region, on_high);
  REQUIRE(pd3_host_read(host.h, on_high, 0, 8, back, 8) >= 0);
  CHECK_EQ(await(host.h, &c), PD3_E_BAD_REGION);
  CHECK_EQ(low.records.load(), 0u);
}

// The server a new direct-mode region went to; 0 if the allocation failed (its status in *status).
uint32_t allocate_on(pd3_host* h, uint32_t bytes, int* status) {
  pd3_completion c{};
  if (pd3_host_allocate(h, bytes, 1) < 0) return 0;
  *status = await(h, &c);
  return *status == PD3_OK ? pd3_region_server(c.region) : 0;
}

TEST(direct_placement_policies) {
  pd3test::FakeMemServer small({.server_id = 2, .token = "t", .capacity = 1 << 20});
  pd3test::FakeMemServer big({.server_id = 5, .token = "t", .capacity = 8 << 20});
  REQUIRE(small.start() && big.start());
  const std::string servers = at(small.port()) + "," + at(big.port());
  int status = 0;
  {
    DirectHost most(servers, "t", PD3_HOST_DIRECT_ONLY, PD3_FALLBACK_FAIL, PD3_PLACEMENT_MOST_FREE);
    REQUIRE(most.rc == PD3_OK);
    for (int i = 0; i < 8; ++i) CHECK_EQ(allocate_on(most.h, 4096, &status), 5u);  // 8 MiB free beats 1 MiB
  }
  {
    // Random ignores free bytes: both servers get regions.
    DirectHost rnd(servers, "t", PD3_HOST_DIRECT_ONLY, PD3_FALLBACK_FAIL, PD3_PLACEMENT_RANDOM);
    REQUIRE(rnd.rc == PD3_OK);
    int on_small = 0;
    for (int i = 0; i < 64; ++i) on_small += allocate_on(rnd.h, 4096, &status) == 2u;
    CHECK(on_small > 10 && on_small < 54);
  }
  {
    // p2c between two servers compares both: the freer one, like most-free.
    DirectHost p2c(servers, "t");
    REQUIRE(p2c.rc == PD3_OK);
    for (int i = 0; i < 8; ++i) CHECK_EQ(allocate_on(p2c.h, 4096, &status), 5u);
  }
  DirectHost bad(servers, "t", PD3_HOST_DIRECT_ONLY, PD3_FALLBACK_FAIL, 3);
  CHECK_EQ(bad.rc, PD3_E_INVAL);
  CHECK(std::strstr(pd3_last_error(), "PD3_PLACEMENT_") != nullptr);
}

TEST(direct_refraction_after_nospace) {
  pd3test::FakeMemServer boaster({.server_id = 1, .token = "t", .capacity = 8 << 20, .limit = 1 << 20});
  pd3test::FakeMemServer honest({.server_id = 2, .token = "t", .capacity = 2 << 20});
  REQUIRE(boaster.start() && honest.start());
  const std::string servers = at(boaster.port()) + "," + at(honest.port());
  DirectHost host(servers, "t", PD3_HOST_DIRECT_ONLY, PD3_FALLBACK_FAIL, PD3_PLACEMENT_MOST_FREE, 300);
  REQUIRE(host.rc == PD3_OK);
  int status = 0;
  // Direct mode does not retry elsewhere: the boaster's refusal reaches the caller.
  CHECK_EQ(allocate_on(host.h, 1536u << 10, &status), 0u);
  CHECK_EQ(status, PD3_E_NOSPACE);
  // Still the most free by its hello, but resting: the next region goes to the honest one.
  CHECK_EQ(allocate_on(host.h, 4096, &status), 2u);
  std::this_thread::sleep_for(std::chrono::milliseconds(350));
  CHECK_EQ(allocate_on(host.h, 4096, &status), 1u);  // rested
}

TEST(direct_config_errors) {
  DirectHost no_servers("", "t");
  CHECK_EQ(no_servers.rc, PD3_E_INVAL);
  DirectHost bad_list("127.0.0.1:notaport", "t");
  CHECK_EQ(bad_list.rc, PD3_E_INVAL);
  DirectHost fallback_without_servers("", "t", 0, PD3_FALLBACK_DIRECT);
  CHECK_EQ(fallback_without_servers.rc, PD3_E_INVAL);
  DirectHost bad_fallback("127.0.0.1:1", "t", 0, 7);
  CHECK_EQ(bad_fallback.rc, PD3_E_INVAL);
  const std::string long_token(PD3_TOKEN_MAX + 1, 'x');
  DirectHost token_too_long("127.0.0.1:1", long_token.c_str());
  CHECK_EQ(token_too_long.rc, PD3_E_INVAL);
}

TEST(direct_wrong_token_and_unreachable_server) {
  pd3test::FakeMemServer s({.server_id = 1, .token = "right"});
  REQUIRE(s.start());
  DirectHost wrong(at(s.port()), "wrong");
  REQUIRE(wrong.rc == PD3_OK);
  CHECK_EQ(pd3_host_allocate(wrong.h, 4096, 1), PD3_E_AUTH);
  CHECK_EQ(pd3_host_allocate(wrong.h, 4096, 1), PD3_E_AUTH);  // while backing off: same reason
  CHECK(s.refused.load() >= 1);
  s.kill();
  DirectHost nobody(at(s.port()), "right");
  REQUIRE(nobody.rc == PD3_OK);
  CHECK_EQ(pd3_host_allocate(nobody.h, 4096, 1), PD3_E_UNAVAILABLE);
}

TEST(direct_server_killed_mid_run_fails_outstanding_requests) {
  OneServer rig(1 << 16);
  auto& [s, host, region] = rig;
  pd3_completion c{};
  s.mute = true;  // requests are held, then the server dies with them
  std::vector<uint8_t> buf(64);
  for (int i = 0; i < 20; ++i) REQUIRE(pd3_host_read(host.h, region, 0, 64, buf.data(), 100 + i) >= 0);
  pd3_host_poll(host.h, &c, 0);  // sends them
  for (int i = 0; i < 200 && s.records.load() < 21; ++i) usleep(1000);
  s.kill();
  const auto t0 = std::chrono::steady_clock::now();
  int failed = 0;
  while (failed < 20 && pd3test::ms_since(t0) < 3000) {
    if (pd3_host_poll(host.h, &c, 1) == 1) failed += c.status == PD3_E_UNAVAILABLE;
    else pd3_host_wait(host.h, 1000);
  }
  CHECK_EQ(failed, 20);
  // The server comes back on the same port: after the retry delay, requests flow again.
  s.mute = false;
  REQUIRE(s.start());
  usleep(150 * 1000);
  REQUIRE(pd3_host_read(host.h, region, 0, 64, buf.data(), 7) >= 0);
  CHECK_EQ(await(host.h, &c), PD3_OK);
}

// A server that grants PD3_HELLO_ANY_ORDER answers three frames newest first: each request completes
// with its own bytes. One that does not grant it answers in order, and the same holds.
TEST(direct_responses_in_any_order_complete_their_own_requests) {
  for (const bool grant : {true, false}) {
    pd3test::FakeMemServer s({.server_id = 1, .token = "t"});
    s.any_order = grant;
    REQUIRE(s.start());
    DirectHost host(at(s.port()), "t");
    REQUIRE(host.rc == PD3_OK);
    const uint32_t region = allocate_region(host.h, 4096);
    pd3_completion c{};
    for (uint32_t i = 0; i < 3; ++i) {
      const uint64_t word = 0x1111111111111111ull * (i + 1);
      REQUIRE(pd3_host_write(host.h, region, i * 8, &word, 8, 10 + i) >= 0);
      REQUIRE(await(host.h, &c) == PD3_OK);
    }
    s.mute = true;
    uint64_t back[3] = {};
    const uint64_t frames_before = s.frames.load();
    for (uint32_t i = 0; i < 3; ++i) {  // three frames: each read is sent by its own poll
      REQUIRE(pd3_host_read(host.h, region, i * 8, 8, &back[i], 20 + i) >= 0);
      CHECK_EQ(pd3_host_poll(host.h, &c, 0), 0);
      for (int t = 0; t < 1000 && s.frames.load() < frames_before + i + 1; ++t) usleep(1000);
    }
    REQUIRE(s.frames.load() == frames_before + 3);
    s.mute = false;
    std::vector<uint64_t> order;
    for (int i = 0; i < 3; ++i) {
      REQUIRE(await(host.h, &c) == PD3_OK);
      order.push_back(c.user_data);
    }
    CHECK(order == (grant ? std::vector<uint64_t>{22, 21, 20} : std::vector<uint64_t>{20, 21, 22}));
    for (uint32_t i = 0; i < 3; ++i) CHECK_EQ(back[i], 0x1111111111111111ull * (i + 1));
  }
}

TEST(direct_mute_server_times_out) {
  OneServer rig(4096);
  auto& [s, host, region] = rig;
  pd3_completion c{};
  s.mute = true;
  uint8_t buf[8];
  REQUIRE(pd3_host_read(host.h, region, 0, 8, buf, 2) >= 0);
  const auto t0 = std::chrono::steady_clock::now();
  const int status = await(host.h, &c);
  CHECK_EQ(status, PD3_E_TIMEOUT);
  CHECK(pd3test::ms_since(t0) < 4000);  // the 2 s request timeout, not a hang
  s.mute = false;
}

TEST(direct_fallback_only_while_the_agent_is_down) {
  pd3test::FakeMemServer s({.server_id = 1, .token = "t"});
  REQUIRE(s.start());
  DirectHost host(at(s.port()), "t", 0, PD3_FALLBACK_DIRECT);
  REQUIRE(host.rc == PD3_OK);
  pd3_completion c{};
  // No agent ever attached: the request goes direct.
  REQUIRE(pd3_host_allocate(host.h, 4096, 1) >= 0);
  CHECK_EQ(await(host.h, &c), PD3_OK);
  CHECK_EQ(const_cast<pd3_control*>(pd3_host_control(host.h))->host_requests, 0u);
  // With a fresh heartbeat, requests go to the ring instead.
  pd3test::fake_agent_beat(pd3_host_control(host.h));
  uint8_t buf[8];
  REQUIRE(pd3_host_read(host.h, c.region, 0, 8, buf, 2) >= 0);
  CHECK_EQ(const_cast<pd3_control*>(pd3_host_control(host.h))->host_requests, 1u);
}

// A request refused at issue (no server reachable) gives its id back: more refusals than there
// are ids never turn into PD3_E_INFLIGHT, and nothing stays counted in flight.
TEST(direct_refused_requests_give_their_ids_back) {
  OneServer rig(4096);
  auto& [s, host, region] = rig;
  s.kill();
  uint8_t buf[8];
  pd3_completion c{};
  // The first read finds the connection dead at its poll; after that, reads are refused at issue.
  if (pd3_host_read(host.h, region, 0, 8, buf, 1) >= 0) CHECK_EQ(await(host.h, &c), PD3_E_UNAVAILABLE);
  int unavailable = 0, other = 0;
  for (uint32_t i = 0; i < PD3_MAX_INFLIGHT + 100; ++i) {
    const int rc = pd3_host_read(host.h, region, 0, 8, buf, i);
    if (rc == PD3_E_UNAVAILABLE) ++unavailable;
    else ++other;
  }
  CHECK_EQ(other, 0);
  CHECK_EQ(unavailable, int(PD3_MAX_INFLIGHT + 100));
  CHECK_EQ(pd3_host_inflight(host.h), 0u);
}

// Threads issue on handles of their own while every thread's poll completes whichever handle's
// requests it receives, and one thread keeps closing its handle with reads in flight and
// attaching a new one. Each read brings back its own bytes, and at the end every id is free
// again: a fresh handle can have all PD3_MAX_INFLIGHT in flight at once.
// Run with each request queued at once, and with batches of 8 staged per handle.
namespace {
void stress_handles(uint32_t publish_batch) {
  pd3test::FakeMemServer s({.server_id = 1, .token = "t"});
  REQUIRE(s.start());
  DirectHost owner(at(s.port()), "t", PD3_HOST_DIRECT_ONLY | PD3_HOST_DIRECT_UNREGISTERED, PD3_FALLBACK_FAIL,
                   PD3_PLACEMENT_P2C, 0, publish_batch);
  REQUIRE(owner.rc == PD3_OK);
  constexpr uint32_t kWords = 4096;  // the region: word i holds i * kTag
  constexpr uint64_t kTag = 0x9E3779B97F4A7C15ull;
  const uint32_t region = allocate_region(owner.h, kWords * 8);
  pd3_completion c{};
  for (uint32_t i = 0; i < kWords; i += 512) {
    uint64_t words[512];
    for (uint32_t j = 0; j < 512; ++j) words[j] = uint64_t(i + j) * kTag;
    REQUIRE(pd3_host_write(owner.h, region, i * 8, words, sizeof words, i) >= 0);
    REQUIRE(await(owner.h, &c) == PD3_OK);
  }
  const std::string name = pd3_host_name(owner.h);
  constexpr int kThreads = 4, kWindow = 64;
  const int kReads = int(6000 / pd3test::stress_scale());
  std::atomic<int> wrong{0}, failed{0}, closes{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      pd3_host* h = nullptr;
      if (pd3_host_attach(name.c_str(), &h) != PD3_OK) return failed++, void();
      // A read's slot: its destination word and the word it asked for.
      std::vector<uint64_t> dest(kWindow);
      std::vector<uint32_t> asked(kWindow);
      std::vector<int> free_slots;
      for (int i = 0; i < kWindow; ++i) free_slots.push_back(i);
      pd3_completion out[kWindow];
      for (int issued = 0; issued < kReads;) {
        while (!free_slots.empty() && issued < kReads) {
          const int slot = free_slots.back();
          asked[slot] = uint32_t(issued * 7919 + t * 131) % kWords;
          const int rc = pd3_host_read(h, region, asked[slot] * 8, 8, &dest[slot], uint64_t(slot));
          if (rc < 0) {
            failed++;
            break;
          }
          free_slots.pop_back();
          ++issued;
        }
        // The last thread closes its handle after each round of issues, its window still in
        // flight, while the others' polls may be completing its requests.
        if (t == kThreads - 1 && free_slots.size() < size_t(kWindow)) {
          pd3_host_close(h);
          closes++;
          if (pd3_host_attach(name.c_str(), &h) != PD3_OK) return failed++, void();
          free_slots.clear();
          for (int i = 0; i < kWindow; ++i) free_slots.push_back(i);
          continue;
        }
        const int n = pd3_host_poll(h, out, kWindow);
        for (int i = 0; i < n; ++i) {
          const int slot = int(out[i].user_data);
          if (out[i].status != PD3_OK) failed++;
          else if (dest[slot] != uint64_t(asked[slot]) * kTag) wrong++;
          free_slots.push_back(slot);
        }
        if (n == 0) pd3_host_wait(h, 1000);
      }
      while (free_slots.size() < size_t(kWindow)) {  // the rest of the window
        const int n = pd3_host_poll(h, out, kWindow);
        for (int i = 0; i < n; ++i) {
          if (out[i].status != PD3_OK) failed++;
          else if (dest[out[i].user_data] != uint64_t(asked[out[i].user_data]) * kTag) wrong++;
          free_slots.push_back(int(out[i].user_data));
        }
        if (n == 0) pd3_host_wait(h, 1000);
      }
      pd3_host_close(h);
    });
  }
  for (auto& th : threads) th.join();
  CHECK_EQ(failed.load(), 0);
  CHECK_EQ(wrong.load(), 0);
  CHECK(closes.load() >= kReads / kWindow);  // a round issues at most a window
  // Every id is back: the closed handles' reads were answered and discarded, their caches returned.
  pd3_host* fresh = nullptr;
  REQUIRE(pd3_host_attach(name.c_str(), &fresh) == PD3_OK);
  std::vector<uint64_t> sink(64);
  int taken = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (taken < int(PD3_MAX_INFLIGHT) && pd3test::ms_since(t0) < 5000) {
    const int rc = pd3_host_read(fresh, region, 0, 8, &sink[taken % 64], 0);
    if (rc >= 0) ++taken;
    else if (rc == PD3_E_INFLIGHT) pd3_host_poll(owner.h, &c, 0);  // lets late answers of closed handles in
    else break;
  }
  CHECK_EQ(taken, int(PD3_MAX_INFLIGHT));
  pd3_completion drain[256];
  while (pd3_host_inflight(fresh) > 0 && pd3test::ms_since(t0) < 10000)
    if (pd3_host_poll(fresh, drain, 256) == 0) pd3_host_wait(fresh, 1000);
  CHECK_EQ(pd3_host_inflight(fresh), 0u);
  pd3_host_close(fresh);
}
}  // namespace

TEST(direct_stress_handles_issue_poll_and_close_concurrently) {
  stress_handles(1);
  stress_handles(8);
}

// With publish_batch 4, a handle's direct requests stay with it until its batch is full or it
// polls, waits, flushes or closes: another handle's poll, which sends whatever the direct path
// holds, sends none of them. A full batch reaches the server as one frame.
TEST(direct_batches_stay_with_their_handle_until_full_or_flushed) {
  OneServer rig(4096, 4);
  auto& [s, host, region] = rig;
  pd3_host* other = nullptr;
  REQUIRE(pd3_host_attach(pd3_host_name(host.h), &other) == PD3_OK);
  pd3_completion c[8];
  uint64_t back[8] = {};
  const uint64_t before = s.records.load();
  // Waits (bounded) until the server has seen `n` more records, polling through `other`.
  const auto seen_after_polls = [&](uint64_t n) {
    for (int i = 0; i < 200 && s.records.load() < before + n; ++i) {
      pd3_host_poll(other, c, 0);
      usleep(1000);
    }
    return s.records.load() - before;
  };
  for (int i = 0; i < 3; ++i) REQUIRE(pd3_host_read(host.h, region, 0, 8, &back[i], uint64_t(i)) >= 0);
  CHECK_EQ(seen_after_polls(1), 0u);  // 200 ms of the other handle's polls: nothing sent
  REQUIRE(pd3_host_read(host.h, region, 0, 8, &back[3], 3) >= 0);  // fills the batch
  CHECK_EQ(seen_after_polls(4), 4u);
  CHECK_EQ(s.largest_frame.load(), 4u);
  REQUIRE(pd3_host_read(host.h, region, 0, 8, &back[4], 4) >= 0);
  CHECK_EQ(pd3_host_flush(host.h), PD3_OK);
  CHECK_EQ(seen_after_polls(5), 5u);
  int got = 0;
  for (int i = 0; i < 2000 && got < 5; ++i) {
    const int n = pd3_host_poll(host.h, c, 8);
    for (int k = 0; k < n; ++k) CHECK_EQ(c[k].status, PD3_OK);
    got += n;
    if (n == 0) pd3_host_wait(host.h, 1000);
  }
  CHECK_EQ(got, 5);
  CHECK_EQ(pd3_host_poll(other, c, 8), 0);  // none of them were other's
  // Closing a handle with staged requests sends them (their answers are discarded).
  REQUIRE(pd3_host_read(other, region, 0, 8, &back[5], 5) >= 0);
  pd3_host_close(other);
  for (int i = 0; i < 200 && s.records.load() < before + 6; ++i) {
    pd3_host_poll(host.h, c, 0);
    usleep(1000);
  }
  CHECK_EQ(s.records.load() - before, 6u);
  CHECK_EQ(pd3_host_inflight(host.h), 0u);
}

// In a staged batch, a request no server can take completes with its reason when the batch is
// queued; the others go on. The request that fills the batch is refused at issue instead, as
// with publish_batch 1, and leaves nothing in flight.
TEST(direct_batch_refusals_complete_with_their_reason) {
  OneServer rig(4096, 4);
  auto& [s, host, region] = rig;
  const uint32_t nowhere = pd3_region_id(5, 1);  // no server has id 5
  uint64_t back[4] = {};
  REQUIRE(pd3_host_read(host.h, region, 0, 8, &back[0], 10) >= 0);
  REQUIRE(pd3_host_read(host.h, nowhere, 0, 8, &back[1], 11) >= 0);  // staged: its verdict comes later
  REQUIRE(pd3_host_read(host.h, region, 8, 8, &back[2], 12) >= 0);
  CHECK_EQ(pd3_host_read(host.h, nowhere, 0, 8, &back[3], 13), PD3_E_BAD_REGION);  // fills the batch
  std::map<uint64_t, int> status;
  pd3_completion c[4];
  for (int i = 0; i < 2000 && status.size() < 3; ++i) {
    const int n = pd3_host_poll(host.h, c, 4);
    for (int k = 0; k < n; ++k) status[c[k].user_data] = c[k].status;
    if (n == 0) pd3_host_wait(host.h, 1000);
  }
  CHECK(status == (std::map<uint64_t, int>{{10, PD3_OK}, {11, PD3_E_BAD_REGION}, {12, PD3_OK}}));
  CHECK_EQ(pd3_host_inflight(host.h), 0u);
  // The server saw the two good reads (and the allocate), nothing for the bad ones.
  CHECK_EQ(s.records.load(), 3u);
}
