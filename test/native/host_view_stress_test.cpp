// host_view_stress_test.cpp — Host View concurrency: SPSC queue under a producer/consumer pair, sharded HostView via run() and submit/complete, several instances at once.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <thread>
#include <unordered_set>
#include <vector>

#include "dpu/host_view.hpp"
#include "dpu/spsc_queue.hpp"
#include "harness.hpp"
#include "util.hpp"
#include "pd3/status.h"

namespace {

using pd3::HostView;
using pd3::HostViewBatch;
using pd3::HostViewOp;
using pd3::HostViewOptions;
using Clock = std::chrono::steady_clock;

const uint32_t kScale = pd3test::stress_scale();

using pd3test::ms_since;
using pd3test::Rng;

using pd3test::Errors;

// ---- SPSC queue --------------------------------------------------------------------------------

TEST(spsc_queue_basics) {
  for (size_t asked : {0, 1, 2, 3, 5, 64, 65, 1000}) {
    pd3::SpscQueue<uint64_t> q(asked);
    const size_t cap = q.capacity();
    CHECK(cap >= 2 && cap >= asked && (cap & (cap - 1)) == 0 && (asked <= 2 || cap < 2 * asked));
    uint64_t v = 0;
    CHECK(!q.pop(&v));
    for (int round = 0; round < 3; ++round) {  // wraps around the ring
      for (size_t i = 0; i < cap; ++i) CHECK(q.push(round * 1000 + i));
      CHECK(!q.push(12345));  // full
      for (size_t i = 0; i < cap; ++i) {
        CHECK(q.pop(&v));
        CHECK_EQ(v, uint64_t(round * 1000 + i));
      }
      CHECK(!q.pop(&v));  // empty
    }
  }
}

// A record whose fields all derive from its sequence number, so a torn copy is detected.
struct Seq {
  uint64_t seq;
  uint64_t a, b, c;
  static Seq of(uint64_t i) { return {i, ~i, i * 0x9E3779B97F4A7C15ull, i ^ 0x5555AAAA5555AAAAull}; }
  bool valid() const { return a == ~seq && b == seq * 0x9E3779B97F4A7C15ull && c == (seq ^ 0x5555AAAA5555AAAAull); }
};

TEST(spsc_queue_stress) {
  const uint64_t items = 5'000'000 / kScale;
  pd3::SpscQueue<Seq> q(64);
  const auto t0 = Clock::now();
  std::thread producer([&] {
    for (uint64_t i = 0; i < items; ++i) {
      const Seq s = Seq::of(i);
      for (uint32_t spins = 0; !q.push(s);)
        if (++spins > 64) std::this_thread::yield();
    }
  });
  uint64_t expect = 0, out_of_order = 0, torn = 0, full_spins = 0;
  std::thread consumer([&] {
    Seq s;
    uint32_t spins = 0;
    while (expect < items) {
      if (!q.pop(&s)) {
        ++full_spins;
        if (++spins > 64) std::this_thread::yield();
        continue;
      }
      spins = 0;
      out_of_order += s.seq != expect;
      torn += !s.valid();
      expect = s.seq + 1;  // resynchronise so one error is counted once
    }
  });
  producer.join();
  consumer.join();
  Seq extra;
  CHECK(!q.pop(&extra));
  std::printf("  %llu items through capacity %zu in %.0f ms (%llu empty polls)\n", (unsigned long long)items, q.capacity(),
              ms_since(t0), (unsigned long long)full_spins);
  CHECK_EQ(expect, items);
  CHECK_EQ(out_of_order, 0u);
  CHECK_EQ(torn, 0u);
}

// ---- HostView via run() ------------------------------------------------------------------------

// Distinct for distinct i (mix64 is a bijection).
uint64_t key_of(uint64_t i) { return pd3test::mix64(i + 2); }

void sharded_run(uint32_t shards, uint32_t idle_spin_us = 0) {
  const uint64_t N = std::max<uint64_t>(20'000, 200'000 / kScale);
  HostViewOptions o;
  o.capacity = N + N / 4;
  o.shards = shards;
  o.queue_depth = 16;
  o.idle_spin_us = idle_spin_us;
  std::unique_ptr<HostView> hv;
  REQUIRE(HostView::create(o, &hv) == PD3_OK);
  CHECK_EQ(hv->shards(), std::max(shards, 1u));  // 0: no threads, one table
  CHECK_EQ(hv->runs_inline(), shards == 0);
  CHECK_EQ(hv->size(), 0u);

  std::vector<uint64_t> keys(N), absent(N);
  for (uint64_t i = 0; i < N; ++i) keys[i] = key_of(i), absent[i] = key_of(N + i);
  const uint32_t tables = hv->shards();
  std::vector<uint64_t> per_shard(tables);
  for (uint64_t k : keys) {
    const uint32_t s = hv->shard_of(k);
    REQUIRE(s < tables);
    ++per_shard[s];
  }
  for (uint64_t c : per_shard) CHECK(c > N / tables * 9 / 10 && c < N / tables * 11 / 10);

  const auto t0 = Clock::now();
  std::vector<uint8_t> v(2 * N, 0xAA);
  hv->run(HostViewOp::kInsert, keys.data(), N, v.data());
  CHECK(std::count(v.begin(), v.begin() + N, 1) == int64_t(N));
  CHECK(v[N] == 0xAA);  // nothing written past n
  CHECK_EQ(hv->size(), N);
  // Inserting present keys again: verdict 1, no growth.
  hv->run(HostViewOp::kInsert, keys.data(), 1000, v.data());
  CHECK(std::count(v.begin(), v.begin() + 1000, 1) == 1000);
  CHECK_EQ(hv->size(), N);

  // Half present, half absent, interleaved.
  std::vector<uint64_t> q(2 * N);
  for (uint64_t i = 0; i < N; ++i) q[2 * i] = keys[i], q[2 * i + 1] = absent[i];
  std::fill(v.begin(), v.end(), 0xAA);
  hv->run(HostViewOp::kLookup, q.data(), q.size(), v.data());
  uint64_t bad = 0;
  for (uint64_t i = 0; i < 2 * N; ++i) bad += v[i] != uint8_t(i % 2 == 0);
  CHECK_EQ(bad, 0u);

  // Erase every third key plus some absent ones: exact verdicts, then lookups reflect it.
  std::vector<uint64_t> er;
  std::vector<uint8_t> want;
  for (uint64_t i = 0; i < N; i += 3) er.push_back(keys[i]), want.push_back(1);
  for (uint64_t i = 0; i < N; i += 7) er.push_back(absent[i]), want.push_back(0);
  for (uint64_t i = 0; i < N; i += 6) er.push_back(keys[i]), want.push_back(0);  // erased just before (i % 3 == 0)
  std::vector<uint8_t> ev(er.size(), 0xAA);
  hv->run(HostViewOp::kErase, er.data(), er.size(), ev.data());
  CHECK(ev == want);
  const uint64_t erased = (N + 2) / 3;
  CHECK_EQ(hv->size(), N - erased);
  std::fill(v.begin(), v.end(), 0xAA);
  hv->run(HostViewOp::kLookup, q.data(), q.size(), v.data());
  bad = 0;
  for (uint64_t i = 0; i < 2 * N; ++i) bad += v[i] != uint8_t(i % 2 == 0 && (i / 2) % 3 != 0);
  CHECK_EQ(bad, 0u);
  hv->run(HostViewOp::kLookup, q.data(), 0, v.data());  // empty call
  std::printf("  %u shards (spin %u us): %llu keys, %llu lookups, %.1f MiB (%s, %s) in %.0f ms\n", shards, idle_spin_us, (unsigned long long)N,
              (unsigned long long)(4 * N), double(hv->bytes()) / (1 << 20), pd3::page_kind_name(hv->pages()),
              pd3::simd_path_name(hv->simd()), ms_since(t0));
}

TEST(host_view_sharded_run_2) { sharded_run(2); }
TEST(host_view_sharded_run_4) { sharded_run(4); }
// No shard threads: the caller's thread runs each batch.
TEST(host_view_inline_run) { sharded_run(0); }
// Shards that busy-poll between batches (the --host-view-spin-us path) give the same verdicts.
TEST(host_view_sharded_run_spinning) { sharded_run(2, 200); }

// ---- HostView via submit/complete, as the prefetcher drives it -----------------------------------

// Drives one HostView from one thread: keeps up to `inflight` batches per shard queued, mixing
// lookups, inserts and erases of a per-shard key pool, and checks each completed batch against a
// reference updated in submission order (each shard executes its batches in that order).
struct Driver {
  struct Slot {
    std::vector<uint64_t> hashes;
    std::vector<uint8_t> verdicts, expect;
    HostViewOp op = HostViewOp::kLookup;
    uint32_t n = 0;
    bool busy = false;
  };
  struct PerShard {
    std::vector<uint64_t> pool;          // keys this shard owns
    std::unordered_set<uint64_t> ref;    // what the shard holds, per submission order
    std::vector<Slot> slots;
    std::deque<uint64_t> fifo;           // tags in submission order
    uint64_t next_tag = 0;
  };

  HostView& hv;
  Errors err;
  Rng rng;
  std::vector<PerShard> shard;
  uint32_t inflight;
  uint64_t submitted = 0, completed = 0, refused = 0, keys_checked = 0;

  Driver(HostView& h, const char* label, uint64_t seed, uint32_t pool_per_shard, uint32_t inflight_)
      : hv(h), err{label}, rng(seed), shard(h.shards()), inflight(inflight_) {
    for (auto& s : shard) {
      s.slots.resize(inflight);
      for (auto& sl : s.slots) sl.hashes.resize(256), sl.verdicts.resize(257), sl.expect.resize(256);
    }
    // Random keys routed by shard_of until every shard has its pool.
    uint32_t full = 0;
    while (full < shard.size()) {
      const uint64_t k = rng.next() | 2;  // never 0/1 (they alias)
      auto& p = shard[hv.shard_of(k)].pool;
      if (p.size() < pool_per_shard) {
        p.push_back(k);
        full += p.size() == pool_per_shard;
      }
    }
  }

  void drain(uint32_t s) {
    PerShard& ps = shard[s];
    HostViewBatch b;
    while (hv.complete(s, &b)) {
      if (ps.fifo.empty()) {
        err.fail("shard %u: completion with nothing in flight", s);
        continue;
      }
      const uint64_t tag = ps.fifo.front();
      ps.fifo.pop_front();
      if (b.tag != tag) err.fail("shard %u: completed tag %llu, expected %llu (order)", s, (unsigned long long)b.tag, (unsigned long long)tag);
      Slot& sl = ps.slots[b.tag % inflight];
      if (!sl.busy || b.hashes != sl.hashes.data() || b.verdicts != sl.verdicts.data() || b.n != sl.n || b.op != sl.op)
        err.fail("shard %u: batch came back changed", s);
      for (uint32_t i = 0; i < sl.n; ++i)
        if (sl.verdicts[i] != sl.expect[i])
          err.fail("shard %u op %d: verdict[%u] = %d, expected %d", s, int(sl.op), i, int(sl.verdicts[i]), int(sl.expect[i]));
      if (sl.verdicts[sl.n] != 0xAA) err.fail("shard %u: verdict written past n", s);
      keys_checked += sl.n;
      sl.busy = false;
      ++completed;
    }
  }

  // Fills free slots of shard s with new batches; returns how many were submitted.
  uint32_t feed(uint32_t s, uint64_t budget) {
    PerShard& ps = shard[s];
    uint32_t sent = 0;
    while (submitted < budget) {
      Slot& sl = ps.slots[ps.next_tag % inflight];
      if (sl.busy) break;  // slots free up in tag order
      const uint32_t r = rng.below(100);
      sl.op = r < 60 ? HostViewOp::kLookup : r < 82 ? HostViewOp::kInsert : HostViewOp::kErase;
      sl.n = 1 + rng.below(256);
      const bool dups = rng.below(8) == 0;
      for (uint32_t i = 0; i < sl.n; ++i)
        sl.hashes[i] = ps.pool[dups ? rng.below(4) : rng.below(uint32_t(ps.pool.size()))];
      std::fill(sl.verdicts.begin(), sl.verdicts.end(), 0xAA);
      if (!hv.submit(s, {sl.op, sl.n, sl.hashes.data(), sl.verdicts.data(), ps.next_tag})) {
        ++refused;  // queue full: the shard is behind; try again later with the same slot
        break;
      }
      // Accepted: the shard will run it after everything submitted before, so the reference
      // advances now, key by key.
      for (uint32_t i = 0; i < sl.n; ++i) {
        const uint64_t k = sl.hashes[i];
        switch (sl.op) {
          case HostViewOp::kLookup: sl.expect[i] = ps.ref.count(k) != 0; break;
          case HostViewOp::kInsert: ps.ref.insert(k), sl.expect[i] = 1; break;
          case HostViewOp::kErase: sl.expect[i] = ps.ref.erase(k) != 0; break;
        }
      }
      sl.busy = true;
      ps.fifo.push_back(ps.next_tag++);
      ++submitted, ++sent;
    }
    return sent;
  }

  void run(uint64_t batches) {
    const uint64_t budget = submitted + batches;
    while (submitted < budget || completed < submitted) {
      uint32_t progress = 0;
      for (uint32_t s = 0; s < shard.size(); ++s) {
        const uint64_t before = completed;
        drain(s);
        progress += uint32_t(completed - before);
        progress += feed(s, budget);
      }
      if (!progress) std::this_thread::yield();
      if (err.n > 64) return;
    }
  }

  // After everything completed: every pool key's presence matches the reference, and sizes add up.
  void verify() {
    uint64_t total = 0;
    for (uint32_t s = 0; s < shard.size(); ++s) {
      PerShard& ps = shard[s];
      if (!ps.fifo.empty()) err.fail("shard %u: %zu batches never completed", s, ps.fifo.size());
      std::vector<uint8_t> v(ps.pool.size(), 0xAA);
      hv.run(HostViewOp::kLookup, ps.pool.data(), ps.pool.size(), v.data());
      for (size_t i = 0; i < ps.pool.size(); ++i)
        if (v[i] != uint8_t(ps.ref.count(ps.pool[i]) != 0)) err.fail("shard %u: final lookup %zu = %d", s, i, int(v[i]));
      total += ps.ref.size();
    }
    if (hv.size() != total) err.fail("size %llu, reference %llu", (unsigned long long)hv.size(), (unsigned long long)total);
  }
};

void concurrent_load(uint32_t shards, uint32_t depth, uint32_t inflight, uint64_t batches, const char* label) {
  const uint32_t pool = 4096;
  HostViewOptions o;
  o.capacity = uint64_t(pool) * std::max(shards, 1u);
  o.shards = shards;
  o.queue_depth = depth;
  o.table.batch = 16;
  std::unique_ptr<HostView> hv;
  REQUIRE(HostView::create(o, &hv) == PD3_OK);
  Driver d(*hv, label, 0xD00D + shards * 31 + depth, pool, inflight);
  const auto t0 = Clock::now();
  d.run(batches);
  d.verify();
  std::printf("  %s: %u shards, depth %u, %u in flight/shard: %llu batches, %llu verdicts, %llu refused submits, %.0f ms\n", label, shards,
              depth, inflight, (unsigned long long)d.completed, (unsigned long long)d.keys_checked, (unsigned long long)d.refused,
              ms_since(t0));
  CHECK_EQ(d.err.n, 0u);
  CHECK_EQ(d.completed, batches);
}

TEST(host_view_sharded_concurrent_2) { concurrent_load(2, 64, 8, 60'000 / kScale, "deep queues"); }
TEST(host_view_sharded_concurrent_4) { concurrent_load(4, 4, 8, 60'000 / kScale, "shallow queues"); }
// Inline (no threads): submit runs the batch at once, and refuses while 4 finished batches wait.
TEST(host_view_inline_submit_complete) { concurrent_load(0, 4, 8, 60'000 / kScale, "inline"); }

// Several HostView instances at once, each driven by its own thread (one submitter per instance).
TEST(host_view_sharded_instances) {
  const uint32_t kInstances = 3;
  const uint64_t batches = 20'000 / kScale;
  std::vector<uint64_t> errors(kInstances, 0), done(kInstances, 0);
  std::atomic<uint32_t> created{0};
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < kInstances; ++t)
    threads.emplace_back([&, t] {
      HostViewOptions o;
      o.capacity = 2 * 2048;
      o.shards = 2;
      o.queue_depth = t == 0 ? 2 : 32;
      o.table.simd = t == 1 ? pd3::SimdPath::kScalar : pd3::SimdPath::kBest;
      std::unique_ptr<HostView> hv;
      if (HostView::create(o, &hv) != PD3_OK) {
        errors[t] = 1;
        return;
      }
      created.fetch_add(1);
      Driver d(*hv, "instance", 0x1000 + t, 2048, 4 + t);
      d.run(batches);
      d.verify();
      errors[t] = d.err.n;
      done[t] = d.completed;
    });
  for (auto& th : threads) th.join();
  std::printf("  %u instances x %llu batches in %.0f ms\n", kInstances, (unsigned long long)batches, ms_since(t0));
  CHECK_EQ(created.load(), kInstances);
  for (uint32_t t = 0; t < kInstances; ++t) {
    CHECK_EQ(errors[t], 0u);
    CHECK_EQ(done[t], batches);
  }
}

// Create/destroy churn, and destruction with batches still queued and completions never collected
// (a full completion queue must not keep a shard thread from stopping).
TEST(host_view_sharded_shutdown) {
  for (int i = 0; i < 20; ++i) {  // destroy right after create
    HostViewOptions o;
    o.capacity = 1000;
    o.shards = 1 + i % 4;
    std::unique_ptr<HostView> hv;
    REQUIRE(HostView::create(o, &hv) == PD3_OK);
  }
  // The batch arrays outlive a HostView that might hang in its destructor, so they are leaked on
  // purpose if that happens (the hung threads then keep running until the process exits).
  struct Arrays {
    uint64_t keys[64];
    uint8_t v[32][64];
  };
  auto* arrays = new Arrays{};
  for (int i = 0; i < 64; ++i) arrays->keys[i] = uint64_t(i + 2) * 0x9E3779B97F4A7C15ull;
  HostViewOptions o;
  o.capacity = 1000;
  o.shards = 1;
  o.queue_depth = 2;
  std::unique_ptr<HostView> owned;
  REQUIRE(HostView::create(o, &owned) == PD3_OK);
  HostView* hv = owned.release();
  // Submit until the input queue, the shard thread and the completion queue are all full.
  int accepted = 0;
  for (int i = 0, refused = 0; i < 32 && refused < 50; ++i) {
    if (hv->submit(0, {HostViewOp::kLookup, 64, arrays->keys, arrays->v[accepted], uint64_t(i)})) {
      ++accepted, refused = 0;
    } else {
      ++refused, --i;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  auto destroyed = std::make_shared<std::atomic<bool>>(false);
  std::thread killer([destroyed, hv] {
    delete hv;
    destroyed->store(true);
  });
  const auto t0 = Clock::now();
  while (!destroyed->load() && ms_since(t0) < 3000) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const bool ok = destroyed->load();
  std::printf("  %d batches queued, never collected; destructor %s\n", accepted, ok ? "returned" : "HUNG (> 3 s)");
  CHECK(ok);
  if (ok) {
    killer.join();
    delete arrays;
  } else {
    killer.detach();  // leaks hv and arrays: the shard thread still writes into them
  }
}

}  // namespace
