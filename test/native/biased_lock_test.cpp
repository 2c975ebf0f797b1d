// biased_lock_test.cpp — BiasedLock (native/common/biased_lock.hpp): who owns the bias, its hand-over
// to a second thread, the budget of records, and mutual exclusion under stress while the bias moves.
#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "common/biased_lock.hpp"
#include "harness.hpp"
#include "util.hpp"

namespace {

using pd3::BiasedLock;

TEST(biased_lock_first_thread_to_lock_owns_the_bias) {
  BiasedLock lock;
  CHECK(!lock.biased_to_me());
  lock.lock();
  lock.unlock();
  if (!BiasedLock::can_bias()) {  // no membarrier here: the lock is its inner SpinLock
    CHECK_EQ(lock.biases(), 0u);
    CHECK(!lock.biased_to_me());
    return;
  }
  CHECK_EQ(lock.biases(), 1u);
  CHECK(lock.biased_to_me());
  for (int i = 0; i < 1000; ++i) {  // the owner keeps it: no new record
    lock.lock();
    lock.unlock();
  }
  CHECK_EQ(lock.biases(), 1u);
  CHECK(lock.biased_to_me());
}

TEST(biased_lock_moves_to_a_thread_that_takes_over) {
  if (!BiasedLock::can_bias()) return;
  BiasedLock lock;
  lock.lock();  // set up by this thread...
  lock.unlock();
  bool owned_there = false;
  std::thread driver([&] {  // ...then driven by another, which takes the bias
    for (int i = 0; i < 100; ++i) {
      lock.lock();
      lock.unlock();
    }
    owned_there = lock.biased_to_me();
  });
  driver.join();
  CHECK(owned_there);
  CHECK_EQ(lock.biases(), 2u);
  CHECK(!lock.biased_to_me());
}

TEST(biased_lock_threads_taking_turns_use_up_the_records_then_the_spin_lock) {
  if (!BiasedLock::can_bias()) return;
  BiasedLock lock;
  uint64_t counter = 0;  // plain: the lock is all that orders it
  for (int round = 0; round < 20; ++round) {
    std::thread t([&] {
      for (int i = 0; i < 10; ++i) {
        lock.lock();
        ++counter;
        lock.unlock();
      }
    });
    t.join();
    lock.lock();
    ++counter;
    lock.unlock();
  }
  CHECK_EQ(counter, 20u * 11u);
  CHECK_EQ(lock.biases(), BiasedLock::kMaxBiases);
  CHECK(!lock.biased_to_me());  // the last hand-over found no record left
}

// A revoker must wait while the owner is inside: it gets the lock only after the owner's unlock.
TEST(biased_lock_revoker_waits_for_the_owner_to_leave) {
  BiasedLock lock;
  std::atomic<bool> owner_inside{false};
  std::atomic<bool> owner_left{false};
  bool revoker_saw_owner_left = false;
  std::thread owner([&] {
    lock.lock();
    owner_inside.store(true);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    owner_left.store(true);
    lock.unlock();
  });
  while (!owner_inside.load()) std::this_thread::yield();
  lock.lock();
  revoker_saw_owner_left = owner_left.load();
  lock.unlock();
  owner.join();
  CHECK(revoker_saw_owner_left);
}

// Mutual exclusion while the bias moves: each thread holds a phase alone first (so it owns the
// bias), then all run together; inside, a two-word invariant and an occupancy count are checked.
TEST(biased_lock_stress_mutual_exclusion_while_the_bias_moves) {
  const uint32_t kThreads = 4;
  const uint32_t kIters = 200000 / pd3test::stress_scale();
  BiasedLock lock;
  uint64_t a = 0, b = 0;  // plain: always equal outside the lock
  std::atomic<int> occupancy{0};
  std::atomic<uint64_t> violations{0};
  std::atomic<uint32_t> turn{0};
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t + 1);
      while (turn.load() < t) std::this_thread::yield();  // alone first, in turn
      for (uint32_t i = 0; i < kIters; ++i) {
        if (i == kIters / 8) turn.fetch_add(1);  // let the next one start
        lock.lock();
        if (occupancy.fetch_add(1, std::memory_order_relaxed) != 0) violations.fetch_add(1);
        ++a;
        if (rng() % 64 == 0) std::this_thread::yield();  // sometimes preempted inside
        ++b;
        if (a != b) violations.fetch_add(1);
        occupancy.fetch_sub(1, std::memory_order_relaxed);
        lock.unlock();
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK_EQ(violations.load(), 0u);
  CHECK_EQ(a, uint64_t(kThreads) * kIters);
  CHECK_EQ(b, a);
  if (BiasedLock::can_bias()) CHECK(lock.biases() >= 2u);  // the bias moved at least once
}

// The handshake itself, many times: an owner hammering the fast path, and a second thread that
// arrives at a random moment and revokes; the owner then goes on through the slow path. A fresh
// lock per round, so every round starts biased.
TEST(biased_lock_stress_revocation_races_the_fast_path) {
  const uint32_t kRounds = 400 / pd3test::stress_scale();
  std::mt19937 rng(7);
  uint64_t violations = 0;
  for (uint32_t round = 0; round < kRounds; ++round) {
    BiasedLock lock;
    uint64_t a = 0, b = 0;  // plain: equal outside the lock
    std::atomic<bool> stop{false};
    std::atomic<bool> started{false};
    std::atomic<uint64_t> owner_violations{0};
    std::thread owner([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        lock.lock();
        ++a;
        if (a != b + 1) owner_violations.fetch_add(1);
        ++b;
        lock.unlock();
        started.store(true, std::memory_order_relaxed);
      }
    });
    while (!started.load()) std::this_thread::yield();
    for (uint32_t spin = rng() % 20000; spin > 0; --spin) __asm__ __volatile__("" ::: "memory");
    for (int i = 0; i < 50; ++i) {
      lock.lock();
      if (a != b) ++violations;
      ++a;
      ++b;
      lock.unlock();
    }
    stop.store(true);
    owner.join();
    violations += owner_violations.load();
    CHECK_EQ(a, b);
  }
  CHECK_EQ(violations, 0u);
}

}  // namespace
