// completion_doorbell_test.cpp — the host's completion doorbell (pd3_control line 13): a waiting
// host thread is woken only once the count of responses it asked for is published, a wait nobody
// answers times out, and under random timing (stress) no wake-up is lost and every response the
// published count covers is visible to the drain that follows the wait.
#include <atomic>
#include <cstdio>
#include <memory>
#include <random>
#include <thread>

#include "agent_rings.hpp"
#include "common/atomics.hpp"
#include "common/segment.hpp"
#include "dpu/response_writer.hpp"
#include "harness.hpp"
#include "host/completion_doorbell.hpp"
#include "host/response_reader.hpp"
#include "util.hpp"

namespace {

using pd3::ResponseWait;

constexpr uint64_t kLongNs = 10'000'000'000ull;  // a wait that ends by a wake, never by this

// A fresh segment with a 64 KiB response ring, unlinked at once (the mapping stays).
std::unique_ptr<pd3::Segment> make_segment() {
  std::unique_ptr<pd3::Segment> seg;
  const std::string name = pd3test::unique_name("cdoorbell");
  if (pd3::Segment::create(name.c_str(), pd3_segment_sizes{4096, 65536, 4096, 16, 0}, false, &seg) == PD3_OK)
    seg->unlink_name();
  return seg;
}

// The agent's publishing side over shared memory, as the engine holds it.
struct Agent {
  std::unique_ptr<pd3::HostDma> dma;
  pd3::AgentCounters counters;
  pd3::ResponseWriter writer;
  explicit Agent(pd3_control* c)
      : dma(pd3test::dma_over(c)), counters(*dma), writer(*dma, pd3::HostLayout::read(*dma), counters) {}
  // Publishes `n` WRITE responses in one batch; false if the ring had no room for all.
  bool publish(uint32_t n) {
    bool ok = true;
    for (uint32_t i = 0; i < n && ok; ++i) ok = writer.add(pd3_op_id(PD3_OP_WRITE, i), PD3_OK, nullptr, 0) == PD3_OK;
    writer.flush();
    return ok;
  }
};

uint64_t published(pd3_control* c) { return pd3::aref(c->agent_responses).load(std::memory_order_acquire); }
uint32_t sleepers(pd3_control* c) { return pd3::aref(c->host_sleeping).load(std::memory_order_acquire); }

}  // namespace

TEST(completion_doorbell_wakes_only_at_the_count_asked_for) {
  auto seg = make_segment();
  REQUIRE(seg != nullptr);
  pd3_control* c = seg->control();
  CHECK_EQ(c->host_wake_at, PD3_WAKE_NEVER);
  Agent agent(c);
  std::atomic<int> result{-1};
  std::thread host([&] { result.store(int(pd3::wait_for_responses(c, 3, kLongNs))); });
  while (sleepers(c) == 0) std::this_thread::yield();
  REQUIRE(agent.publish(1));
  REQUIRE(agent.publish(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK_EQ(result.load(), -1);  // two of three: still asleep
  CHECK_EQ(sleepers(c), 1u);
  CHECK_EQ(c->host_wake_at, 3u);
  REQUIRE(agent.publish(1));
  host.join();
  CHECK_EQ(result.load(), int(ResponseWait::kWoken));
  CHECK_EQ(sleepers(c), 0u);
  CHECK_EQ(c->host_wake_at, PD3_WAKE_NEVER);  // fired: reset for the next waiter
  CHECK_EQ(c->host_doorbell, 1u);
  REQUIRE(agent.publish(4));  // nobody waits: no wake
  CHECK_EQ(c->host_doorbell, 1u);
}

TEST(completion_doorbell_wait_nobody_answers_times_out) {
  auto seg = make_segment();
  REQUIRE(seg != nullptr);
  pd3_control* c = seg->control();
  CHECK_EQ(int(pd3::wait_for_responses(c, 1, 2'000'000)), int(ResponseWait::kTimedOut));
  CHECK_EQ(sleepers(c), 0u);
  CHECK_EQ(c->host_wake_at, 1u);  // left behind: the next publication fires (one spurious wake at most)
}

TEST(completion_doorbell_stress_no_lost_wakeup) {
  // The agent publishes batches of 1..8 responses with random pauses until told to stop. The
  // drainer waits for 1..16 more responses at a time and drains; a second thread only waits, so two
  // sleepers' targets meet in host_wake_at. A lost wake-up is a wait that reaches its 10 s timeout;
  // after every wait, each response counted in agent_responses must be drainable already.
  auto seg = make_segment();
  REQUIRE(seg != nullptr);
  pd3_control* c = seg->control();
  const uint64_t want_total = 20000 * pd3test::stress_scale();
  std::atomic<bool> stop{false}, waiter_done{false};
  std::atomic<uint64_t> lost{0}, unordered{0}, waits{0}, slept{0};
  std::thread agent_thread([&] {
    Agent agent(c);
    std::mt19937 rng(7);
    while (!stop.load(std::memory_order_relaxed)) {  // relaxed: a flag polled in a loop
      (void)agent.publish(1 + rng() % 8);             // a full ring: the drainer frees it
      const uint32_t pause = rng() % 4;
      if (pause == 1) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 200));
      if (pause == 2) std::this_thread::yield();
    }
  });
  std::thread waiter([&] {
    std::mt19937 rng(11);
    for (int i = 0; i < 2000; ++i) {
      const ResponseWait w = pd3::wait_for_responses(c, 1 + rng() % 16, kLongNs);
      if (w == ResponseWait::kTimedOut) lost.fetch_add(1);
    }
    waiter_done.store(true);
  });
  std::mt19937 rng(3);
  uint64_t drained = 0;
  // Drains until the other waiter is done too: its waits need the agent to find room in the ring.
  while (drained < want_total || !waiter_done.load()) {
    const ResponseWait w = pd3::wait_for_responses(c, 1 + rng() % 16, kLongNs);
    waits.fetch_add(1);
    if (w == ResponseWait::kTimedOut) lost.fetch_add(1);
    if (w == ResponseWait::kWoken) slept.fetch_add(1);
    const uint64_t counted = published(c);
    uint64_t now = 0;
    for (;;) {
      const int n = pd3::drain_responses(c, PD3_MAX_INFLIGHT, [](const pd3_response&, const uint8_t*, bool) {});
      REQUIRE(n >= 0);
      if (n == 0) break;
      now += uint64_t(n);
    }
    drained += now;
    if (drained < counted) unordered.fetch_add(1);  // a counted response was not yet visible
  }
  waiter.join();
  stop.store(true);
  agent_thread.join();
  CHECK_EQ(lost.load(), 0u);
  CHECK_EQ(unordered.load(), 0u);
  CHECK(slept.load() > 0);  // the waits did sleep, not only find their responses ready
  CHECK_EQ(sleepers(c), 0u);
  std::printf("    [completion doorbell] %llu responses, %llu waits (%llu slept)\n", (unsigned long long)drained,
              (unsigned long long)waits.load(), (unsigned long long)slept.load());
}
