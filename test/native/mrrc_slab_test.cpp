// mrrc_slab_test.cpp — the region cache's handles and locking (native/mrrc/region_cache.hpp): a
// handle lives in a slab slot whose generation moves on at every release, so a stale, repeated or
// made-up handle is kUnknownHandle even once its slot serves another acquire; many handles at once;
// handles holding more regions than fit inline; a hit is not held up by another thread's miss
// inside the backend; and a multi-threaded stress test against a model of what must stay pinned.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "harness.hpp"
#include "mrrc/counting_pinner.hpp"
#include "mrrc/region_cache.hpp"

namespace {

using namespace pd3::mrrc;

constexpr size_t kPage = 4096;
constexpr uintptr_t kBase = 0x20000000;  // simulated addresses (the counting backend pins nothing)

uintptr_t page(size_t i) { return kBase + i * kPage; }

std::unique_ptr<RegionCache> make(Pinner& pinner, size_t pages, Replacement rep) {
  Config c;
  c.capacity_bytes = pages * kPage;
  c.replacement = rep;
  std::unique_ptr<RegionCache> cache;
  REQUIRE(RegionCache::create(c, pinner, &cache).ok());
  return cache;
}

// A backend whose pin() waits until open() (after saying it has started): holds a miss inside
// the backend for as long as a test needs.
class GatedPinner final : public Pinner {
 public:
  Result pin(PageRange range) override {
    std::unique_lock lock(mu_);
    entered_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
    return inner_.pin(range);
  }
  Result unpin(std::span<const PageRange> batch) override { return inner_.unpin(batch); }
  size_t page_size() const override { return kPage; }
  size_t pin_limit() const override { return SIZE_MAX; }

  void open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void close() {
    std::lock_guard lock(mu_);
    open_ = false;
    entered_ = false;
  }
  bool wait_entered(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return entered_; });
  }

 private:
  CountingPinner inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;
  bool entered_ = false;
};

}  // namespace

TEST(mrrc_slab_stale_handle_after_its_slot_is_reused_is_unknown) {
  for (Replacement rep : {Replacement::kMre, Replacement::kLru, Replacement::kNoCache}) {
    CountingPinner pinner;
    auto cache = make(pinner, 64, rep);
    Handle first = 0, second = 0;
    REQUIRE(cache->acquire(page(0), kPage, &first).ok());
    CHECK(first != 0);
    CHECK(cache->release(first).ok());
    REQUIRE(cache->acquire(page(0), kPage, &second).ok());  // the freed slot serves it
    CHECK(second != first);
    CHECK_EQ(second & 0xffffffffu, first & 0xffffffffu);  // same slot, another generation
    CHECK(cache->release(first).status == Status::kUnknownHandle);  // stale: second stays held
    CHECK_EQ(cache->stats().handles, 1u);
    CHECK(cache->release(second).ok());
    CHECK(cache->release(second).status == Status::kUnknownHandle);  // twice
    // Made-up handles: 0, a slot never made, a generation the slot never had.
    CHECK(cache->release(0).status == Status::kUnknownHandle);
    CHECK(cache->release((Handle(1) << 32) | 12345).status == Status::kUnknownHandle);
    CHECK(cache->release(second + (Handle(7) << 32)).status == Status::kUnknownHandle);
    CHECK(cache->release(second & 0xffffffffu).status == Status::kUnknownHandle);  // generation 0
    const Stats s = cache->stats();
    CHECK_EQ(s.handles, 0u);
    if (rep == Replacement::kNoCache) {
      CHECK_EQ(s.deregistrations, 2u);  // a stale release unpinned nothing
      CHECK_EQ(pinner.counts().pinned_pages, 0u);
    }
  }
}

TEST(mrrc_slab_many_handles_outstanding) {
  CountingPinner pinner;
  auto cache = make(pinner, 256, Replacement::kMre);
  constexpr size_t kHandles = 5000;
  std::vector<Handle> held;
  for (size_t i = 0; i < kHandles; ++i) {
    Handle h = 0;
    REQUIRE(cache->acquire(page(i % 200), 1 + i % 3 * kPage, &h).ok());
    held.push_back(h);
  }
  std::vector<Handle> sorted = held;
  std::sort(sorted.begin(), sorted.end());
  CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());  // all distinct
  CHECK_EQ(cache->stats().handles, kHandles);
  CHECK(cache->invalidate(page(0), 200 * kPage).status == Status::kBusy);
  // Released in a random order, each exactly once; the regions stay busy until their last user.
  std::mt19937_64 rng(5);
  std::shuffle(held.begin(), held.end(), rng);
  for (size_t i = 0; i < held.size(); ++i) {
    CHECK(cache->release(held[i]).ok());
    if (i == held.size() / 2) CHECK(cache->release(held[i / 2]).status == Status::kUnknownHandle);
  }
  CHECK_EQ(cache->stats().handles, 0u);
  CHECK(cache->invalidate(page(0), 210 * kPage).ok());  // gaps may start past page 199
  CHECK_EQ(pinner.counts().pinned_pages, 0u);
  // Slots are reused: as many handles again need no new ones and still come out distinct.
  std::vector<Handle> again;
  for (size_t i = 0; i < kHandles; ++i) {
    Handle h = 0;
    REQUIRE(cache->acquire(page(i % 200), kPage, &h).ok());
    again.push_back(h);
  }
  for (Handle h : again) CHECK(!std::binary_search(sorted.begin(), sorted.end(), h));
  for (Handle h : again) CHECK(cache->release(h).ok());
}

TEST(mrrc_slab_handle_holding_more_regions_than_inline) {
  static_assert(RegionCache::kInlineRegions < 8);
  CountingPinner pinner;
  auto cache = make(pinner, 64, Replacement::kMre);
  // Eight adjacent one-page regions: one acquire over all of them is a hit holding eight.
  for (size_t i = 0; i < 8; ++i) {
    Handle h = 0;
    REQUIRE(cache->acquire(page(i), kPage, &h).ok());
    REQUIRE(cache->release(h).ok());
  }
  Handle wide = 0;
  bool hit = false;
  REQUIRE(cache->acquire(page(0) + 10, 8 * kPage - 20, &wide, &hit).ok());
  CHECK(hit);
  for (size_t i = 0; i < 8; ++i) CHECK(cache->invalidate(page(i), 1).status == Status::kBusy);  // the last too
  // A narrow handle in the same slot after it: it must not inherit the wide one's regions.
  CHECK(cache->release(wide).ok());
  Handle narrow = 0;
  REQUIRE(cache->acquire(page(3), kPage, &narrow).ok());
  CHECK_EQ(narrow & 0xffffffffu, wide & 0xffffffffu);
  CHECK(cache->invalidate(page(7), kPage).ok());
  CHECK(cache->invalidate(page(3), kPage).status == Status::kBusy);
  CHECK(cache->release(narrow).ok());
  // The split path: regions every other page, then one acquire over the span registers the gaps
  // and holds them all (cached and new), beyond the inline ones.
  CHECK(cache->flush().ok());
  for (size_t i = 10; i < 20; i += 2) {
    Handle h = 0;
    REQUIRE(cache->acquire(page(i), kPage, &h).ok());
    REQUIRE(cache->release(h).ok());
  }
  Handle split = 0;
  hit = true;
  REQUIRE(cache->acquire(page(10), 10 * kPage, &split, &hit).ok());
  CHECK(!hit);
  CHECK_EQ(cache->stats().regions, 10u);
  for (size_t i = 10; i < 20; ++i) CHECK(cache->invalidate(page(i), kPage).status == Status::kBusy);
  CHECK(cache->release(split).ok());
  CHECK(cache->flush().ok());
  CHECK_EQ(cache->stats().regions, 0u);
  CHECK_EQ(pinner.counts().pinned_pages, 0u);
  CHECK_EQ(pinner.counts().overlaps, 0u);
}

TEST(mrrc_tally_reports_the_counters_of_the_call) {
  CountingPinner pinner;
  auto cache = make(pinner, 64, Replacement::kMre);
  Handle a = 0, b = 0;
  Tally t;
  REQUIRE(cache->acquire(page(0), kPage, &a, nullptr, &t).ok());  // a miss
  CHECK_EQ(t.hits, 0u);
  CHECK_EQ(t.handles, 1u);
  REQUIRE(cache->acquire(page(0), 100, &b, nullptr, &t).ok());  // a hit
  CHECK_EQ(t.hits, 1u);
  CHECK_EQ(t.handles, 2u);
  CHECK(cache->release(a, &t).ok());
  CHECK_EQ(t.handles, 1u);
  CHECK(cache->release(b, &t).ok());
  CHECK_EQ(t.handles, 0u);
  CHECK_EQ(t.hits, 1u);
}

TEST(mrrc_hit_is_not_held_up_by_a_miss_in_the_backend) {
  // A miss pins with no lock a hit needs: while one thread's mlock (here: a gate) is under way,
  // another thread's hit and release complete.
  GatedPinner pinner;
  auto cache = make(pinner, 64, Replacement::kMre);
  Handle cached = 0;
  REQUIRE(cache->acquire(page(0), 4 * kPage, &cached).ok());
  REQUIRE(cache->release(cached).ok());
  pinner.close();
  std::thread miss([&] {
    Handle h = 0;
    if (cache->acquire(page(20), 2 * kPage, &h).ok()) (void)cache->release(h);
  });
  REQUIRE(pinner.wait_entered(std::chrono::seconds(10)));
  std::atomic<bool> done{false};
  std::thread hit([&] {
    Handle h = 0;
    bool was_hit = false;
    if (cache->acquire(page(1), kPage, &h, &was_hit).ok() && was_hit && cache->release(h).ok()) done = true;
  });
  for (int i = 0; i < 10000 && !done.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(done.load());
  pinner.open();
  miss.join();
  hit.join();
  const Stats s = cache->stats();
  CHECK_EQ(s.hits, 1u);
  CHECK_EQ(s.misses, 2u);
  CHECK_EQ(s.handles, 0u);
}

TEST(mrrc_stress_cross_thread_release_invalidate_against_a_model) {
  // Four threads acquire overlapping ranges; half of what they acquire is released by another
  // thread (as a completion is, in direct mode); a fifth thread invalidates and flushes. The model:
  // every held range stays pinned in the backend (covers), and the backend never holds more than
  // the capacity, whatever the interleaving. At the end the counters agree with the backend's.
  for (Replacement rep : {Replacement::kMre, Replacement::kLru}) {
    CountingPinner pinner;
    constexpr size_t kCapacityPages = 48;
    auto cache = make(pinner, kCapacityPages, rep);
    std::atomic<uint64_t> ok{0}, nospace{0}, bad{0}, hits{0}, over{0};
    std::mutex handoff_mu;
    std::deque<std::pair<Handle, PageRange>> handoff;  // acquired by one thread, released by another
    std::atomic<bool> stop{false};
    auto release_checked = [&](Handle h, PageRange range) {
      if (!pinner.covers(range)) bad++;
      if (!cache->release(h).ok()) bad++;
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937_64 rng(300 + t);
        std::vector<std::pair<Handle, PageRange>> mine;
        uint64_t last_hits = 0;
        for (int i = 0; i < 15000; ++i) {
          if (pinner.counts().pinned_pages > kCapacityPages) over++;
          if (!mine.empty() && (rng() % 2 == 0 || mine.size() > 3)) {
            release_checked(mine.back().first, mine.back().second);
            mine.pop_back();
            continue;
          }
          if (rng() % 4 == 0) {  // someone else's handle
            std::pair<Handle, PageRange> other{};
            {
              std::lock_guard lock(handoff_mu);
              if (!handoff.empty()) {
                other = handoff.front();
                handoff.pop_front();
              }
            }
            if (other.first != 0) release_checked(other.first, other.second);
          }
          const size_t first = rng() % 96, pages = 1 + rng() % 6;  // 1..6 pages: up to 3 regions each
          const PageRange range{page(first), pages * kPage};
          Handle h = 0;
          bool hit = false;
          Tally tally;
          const Result r = cache->acquire(range.addr + rng() % 64, range.len - 64, &h, &hit, &tally);
          if (r.ok()) {
            ok++;
            if (hit) hits++;
            if (tally.hits < last_hits || tally.handles == 0) bad++;  // counters only grow; this one is held
            last_hits = tally.hits;
            if (!pinner.covers(range)) bad++;
            if (rng() % 2 == 0) {
              std::lock_guard lock(handoff_mu);
              handoff.push_back({h, range});
            } else {
              mine.push_back({h, range});
            }
          } else if (r.status == Status::kNoSpace) {
            nospace++;
          } else {
            bad++;
          }
        }
        for (auto& [h, range] : mine) release_checked(h, range);
      });
    }
    std::thread janitor([&] {
      std::mt19937_64 rng(9);
      while (!stop.load()) {
        const Result r = rng() % 4 == 0 ? cache->flush() : cache->invalidate(page(rng() % 96), kPage);
        if (!r.ok() && r.status != Status::kBusy) bad++;
        std::this_thread::yield();
      }
    });
    for (auto& th : threads) th.join();
    stop = true;
    janitor.join();
    for (auto& [h, range] : handoff) release_checked(h, range);
    CHECK_EQ(bad.load(), 0u);
    CHECK_EQ(over.load(), 0u);
    CHECK(ok.load() > 10000u);
    const Stats s = cache->stats();
    const PinCounts c = pinner.counts();
    CHECK_EQ(s.handles, 0u);
    CHECK_EQ(s.hits, hits.load());
    CHECK_EQ(s.hits + s.partial_hits + s.misses, ok.load());
    CHECK_EQ(c.overlaps, 0u);
    CHECK_EQ(s.registrations, c.pin_ops);
    CHECK_EQ(s.registered_bytes, c.pin_pages * kPage);
    CHECK_EQ(s.dereg_batches, c.unpin_ops);
    CHECK_EQ(s.deregistered_bytes, c.unpin_pages * kPage);
    CHECK_EQ(s.pinned_bytes, c.pinned_pages * kPage);
    CHECK_EQ(s.registered_bytes - s.deregistered_bytes, s.pinned_bytes);
    CHECK(s.pinned_bytes <= kCapacityPages * kPage);
    CHECK(cache->flush().ok());
    CHECK_EQ(pinner.counts().pinned_pages, 0u);
    CHECK_EQ(cache->stats().regions, 0u);
  }
}
