// completion_pacer_test.cpp — CompletionPacer (native/host/completion_pacer.hpp): the sleep it
// guesses from the completion rate, and the cap of a doorbell wait, which follows how long woken
// waits took when answers come in bursts.
#include "harness.hpp"
#include "host/completion_pacer.hpp"

namespace {

using pd3::CompletionPacer;

constexpr uint64_t kUs = 1000;
constexpr uint64_t kForever = ~uint64_t{0};

TEST(completion_pacer_sleep_follows_the_rate_within_its_bounds) {
  CompletionPacer p;
  CHECK_EQ(p.sleep_ns(100, kForever), CompletionPacer::kMinSleepNs);  // nothing learnt yet
  p.on_busy(0);
  p.on_drain(1000 * kUs, 1000);  // 1 µs per completion
  CHECK_EQ(p.ns_per_completion(), 1 * kUs);
  CHECK_EQ(p.sleep_ns(400, kForever), 200 * kUs);  // half of 400 completions
  CHECK_EQ(p.sleep_ns(100'000, kForever), CompletionPacer::kMaxSleepNs);  // 1,024 at most: 1,024 µs, above the bound
  CHECK_EQ(p.sleep_ns(400, 30 * kUs), 30 * kUs);  // never past the caller's timeout
  CHECK_EQ(CompletionPacer::batch(1), 1u);
  CHECK_EQ(CompletionPacer::batch(10'000), CompletionPacer::kMaxBatch);
}

TEST(completion_pacer_cap_is_twice_the_guess_until_a_wait_is_woken) {
  CompletionPacer p;
  CHECK_EQ(p.wait_cap_ns(100 * kUs, kForever), 200 * kUs);
  CHECK_EQ(p.wait_cap_ns(700 * kUs, kForever), CompletionPacer::kMaxSleepNs);
  CHECK_EQ(p.wait_cap_ns(100 * kUs, 150 * kUs), 150 * kUs);
}

TEST(completion_pacer_cap_follows_how_long_woken_waits_took) {
  CompletionPacer p;
  p.on_woken(300 * kUs);  // answers came in a burst: the wait took three times the guess
  CHECK_EQ(p.wait_cap_ns(100 * kUs, kForever), 600 * kUs);
  CHECK_EQ(p.wait_cap_ns(400 * kUs, kForever), 800 * kUs);  // a longer guess still counts
  CHECK_EQ(p.wait_cap_ns(100 * kUs, 250 * kUs), 250 * kUs);  // never past the caller's timeout
  p.on_woken(2000 * kUs);
  CHECK_EQ(p.wait_cap_ns(100 * kUs, kForever), CompletionPacer::kMaxSleepNs);  // bounded
  // A moving mean: shorter waits bring the cap back down, a sample at a time.
  uint64_t last = p.wait_cap_ns(10 * kUs, kForever);
  for (int i = 0; i < 60; ++i) {
    p.on_woken(20 * kUs);
    const uint64_t cap = p.wait_cap_ns(10 * kUs, kForever);
    CHECK(cap <= last);
    last = cap;
  }
  CHECK(last >= 40 * kUs && last < 50 * kUs);
}

}  // namespace
