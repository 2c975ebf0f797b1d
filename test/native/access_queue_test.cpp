// access_queue_test.cpp — the capture → engine access ring: order, wraparound with padding, loss
// when full (counted, WRITE/DELETE separately), and a two-thread stress run.
#include <string>
#include <thread>
#include <vector>

#include "dpu/access_queue.hpp"
#include "harness.hpp"
#include "util.hpp"

TEST(access_queue_order_and_wraparound) {
  pd3::AccessQueue q(4096);
  pd3test::Rng rng(5);
  uint64_t pushed = 0, popped = 0;
  for (int round = 0; round < 2000; ++round) {
    const int burst = 1 + int(rng.below(6));
    for (int i = 0; i < burst; ++i) {
      std::string key(1, 'k');  // appended piece by piece: GCC 12 warns (falsely) on the chained form
      key += std::to_string(pushed);
      key.append(rng.below(200), 'x');
      if (q.push(PD3_ACCESS_READ + uint32_t(pushed % 3), reinterpret_cast<const uint8_t*>(key.data()),
                 uint32_t(key.size()), pushed))
        ++pushed;
    }
    q.drain(1000, [&](const pd3::AccessRecord& r) {
      const std::string key(reinterpret_cast<const char*>(r.key), r.key_len);
      CHECK_EQ(r.capture_ns, popped);
      CHECK_EQ(r.op, PD3_ACCESS_READ + uint32_t(popped % 3));
      const std::string number = std::to_string(popped);
      CHECK(key.size() > number.size() && key[0] == 'k' && key.compare(1, number.size(), number) == 0);
      ++popped;
    });
  }
  CHECK_EQ(popped, pushed);
  CHECK(pushed > 5000);  // many laps of a 4 KiB ring
}

TEST(access_queue_full_ring_counts_losses) {
  pd3::AccessQueue q(4096);
  const std::string key(100, 'k');
  int accepted = 0;
  for (int i = 0; i < 100; ++i)
    accepted += q.push(i % 2 ? PD3_ACCESS_WRITE : PD3_ACCESS_READ, reinterpret_cast<const uint8_t*>(key.data()),
                       uint32_t(key.size()), 0);
  CHECK(accepted > 0 && accepted < 100);
  CHECK_EQ(q.dropped(), uint64_t(100 - accepted));
  CHECK(q.lost_writes() > 0 && q.lost_writes() < q.dropped());
  const std::string huge(3000, 'h');  // more than half the ring: never fits
  CHECK(!q.push(PD3_ACCESS_READ, reinterpret_cast<const uint8_t*>(huge.data()), uint32_t(huge.size()), 0));
  CHECK_EQ(q.drain(1000, [](const pd3::AccessRecord&) {}), size_t(accepted));
}

TEST(access_queue_stress_two_threads) {
  pd3::AccessQueue q(1 << 14);
  const uint64_t n = 2000000 / pd3test::stress_scale();
  std::thread producer([&] {
    uint8_t key[64];
    for (uint64_t i = 0; i < n;) {
      const uint32_t len = 1 + uint32_t(pd3test::mix64(i) % 60);
      for (uint32_t b = 0; b < len; ++b) key[b] = uint8_t(i + b);
      if (q.push(PD3_ACCESS_READ, key, len, i)) ++i;
    }
  });
  uint64_t next = 0, bad = 0;
  while (next < n) {
    q.drain(256, [&](const pd3::AccessRecord& r) {
      const uint32_t len = 1 + uint32_t(pd3test::mix64(next) % 60);
      bad += r.capture_ns != next || r.key_len != len;
      for (uint32_t b = 0; b < r.key_len && b < len; ++b) bad += r.key[b] != uint8_t(next + b);
      ++next;
    });
  }
  producer.join();
  CHECK_EQ(bad, 0u);
  CHECK_EQ(next, n);
}
