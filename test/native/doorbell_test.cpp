// doorbell_test.cpp — Doorbell: a ring reaches a sleeper that armed, costs nothing otherwise, and
// the arm / check / ring handshake never loses a hand-off (stress with a real sleeping thread).
#include <poll.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "common/doorbell.hpp"
#include "harness.hpp"
#include "util.hpp"

namespace {

bool readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

}  // namespace

TEST(doorbell_rings_only_for_an_armed_sleeper) {
  pd3::Doorbell d;
  REQUIRE(d.open() == PD3_OK);
  d.ring();  // nobody sleeps: no write
  CHECK(!readable(d.fd(), 0));
  d.arm();
  d.ring();
  CHECK(readable(d.fd(), 0));
  d.disarm(true);  // resets the counter
  CHECK(!readable(d.fd(), 0));
  d.ring();  // disarmed again
  CHECK(!readable(d.fd(), 0));
}

TEST(doorbell_stress_no_lost_handoff) {
  // A producer publishes numbered work items; the consumer checks for work after arming and
  // otherwise sleeps on the doorbell with a long timeout. A lost hand-off would show up as a
  // timeout with work pending.
  pd3::Doorbell d;
  REQUIRE(d.open() == PD3_OK);
  const uint64_t items = 20000 * pd3test::stress_scale();
  std::atomic<uint64_t> published{0};
  uint64_t taken = 0, sleeps = 0, lost = 0;
  std::thread consumer([&] {
    while (taken < items) {
      // acquire: pairs with the producer's release; items below are "done".
      if (published.load(std::memory_order_acquire) > taken) {
        ++taken;
        continue;
      }
      d.arm();
      if (published.load(std::memory_order_acquire) > taken) {  // acquire: as above
        d.disarm(false);
        continue;
      }
      ++sleeps;
      const bool rung = readable(d.fd(), 2000);
      // acquire: as above.
      if (!rung && published.load(std::memory_order_acquire) > taken) ++lost;
      d.disarm(rung);
    }
  });
  for (uint64_t i = 0; i < items; ++i) {
    published.store(i + 1, std::memory_order_release);  // release: the consumer's acquire sees it
    d.ring();
    if (i % 64 == 0) std::this_thread::yield();
  }
  consumer.join();
  CHECK_EQ(taken, items);
  CHECK_EQ(lost, 0u);
  std::printf("    %llu items, %llu sleeps\n", (unsigned long long)items, (unsigned long long)sleeps);
}
