// member_inbox_test.cpp — MemberInbox, the engine's queue of pool-membership changes: bad endpoints
// refused, changes taken oldest first, and, under four posting threads, a consumer that takes only
// when waiting() says so still gets every change exactly once, in each poster's order.
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "dpu/engine_members.hpp"
#include "harness.hpp"
#include "pd3/status.h"

TEST(member_inbox_refuses_an_endpoint_without_host_or_port) {
  pd3::MemberInbox inbox;
  CHECK_EQ(inbox.post(pd3::Endpoint{"", 7000}, true), PD3_E_INVAL);
  CHECK_EQ(inbox.post(pd3::Endpoint{"127.0.0.1", 0}, false), PD3_E_INVAL);
  CHECK(!inbox.waiting());
  CHECK(inbox.take().empty());
}

TEST(member_inbox_hands_changes_over_oldest_first) {
  pd3::MemberInbox inbox;
  REQUIRE(inbox.post(pd3::Endpoint{"10.0.0.1", 7001}, false) == PD3_OK);
  REQUIRE(inbox.post(pd3::Endpoint{"10.0.0.2", 7002}, true) == PD3_OK);
  CHECK(inbox.waiting());
  const std::vector<pd3::MemberInbox::Command> got = inbox.take();
  REQUIRE(got.size() == 2);
  CHECK_EQ(got[0].endpoint.port, 7001);
  CHECK(!got[0].member);
  CHECK(got[1].endpoint.host == "10.0.0.2");
  CHECK(got[1].member);
  CHECK(!inbox.waiting());
  CHECK(inbox.take().empty());
}

TEST(member_inbox_stress_four_posters_one_taker) {
  constexpr int kPosters = 4, kEach = 5000;
  pd3::MemberInbox inbox;
  std::atomic<int> started{0};
  std::vector<std::thread> posters;
  for (int p = 0; p < kPosters; ++p) {
    posters.emplace_back([&, p] {
      started.fetch_add(1);
      while (started.load() < kPosters) std::this_thread::yield();
      // port encodes (poster, sequence number); member alternates
      for (int i = 0; i < kEach; ++i)
        if (inbox.post(pd3::Endpoint{"h", uint16_t(p * 10000 + i + 1)}, i % 2 == 0) != PD3_OK) return;
    });
  }
  std::vector<int> next(kPosters, 1);  // the sequence number expected next from each poster
  int received = 0;
  bool in_order = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (received < kPosters * kEach && std::chrono::steady_clock::now() < deadline) {
    if (!inbox.waiting()) {  // the engine thread's way: take only when the flag says so
      std::this_thread::yield();
      continue;
    }
    for (const pd3::MemberInbox::Command& c : inbox.take()) {
      const int p = c.endpoint.port / 10000, seq = c.endpoint.port % 10000;
      if (p >= kPosters || seq != next[size_t(p)] || c.member != ((seq - 1) % 2 == 0)) in_order = false;
      if (p < kPosters) next[size_t(p)] = seq + 1;
      ++received;
    }
  }
  for (auto& t : posters) t.join();
  CHECK_EQ(received, kPosters * kEach);
  CHECK(in_order);
  CHECK(inbox.take().empty());
}
