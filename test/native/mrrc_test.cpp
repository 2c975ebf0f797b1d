// mrrc_test.cpp — the registration region cache (native/mrrc): hits, splitting and merging on crafted
// sequences, MRE and LRU eviction orders, batched deregistration, bad input, a random model test of
// the pin-down policy against a linear-scan reference and of MRE's invariants, a multi-threaded stress
// test, and the mlock backend really pinning (VmLck in /proc/self/status).
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "harness.hpp"
#include "util.hpp"
#include "mrrc/counting_pinner.hpp"
#include "mrrc/mlock_pinner.hpp"
#include "mrrc/region_cache.hpp"
#include "mrrc/trace_file.hpp"

namespace {

using namespace pd3::mrrc;

constexpr size_t kPage = 4096;
constexpr uintptr_t kBase = 0x10000000;  // simulated addresses (the counting backend pins nothing)

uintptr_t page(size_t i) { return kBase + i * kPage; }

std::unique_ptr<RegionCache> make(Pinner& pinner, size_t pages, Replacement rep, double frequent = 0.5,
                                  double eviction = 0.0) {
  Config c;
  c.capacity_bytes = pages * kPage;
  c.replacement = rep;
  c.frequent_share = frequent;
  c.eviction_share = eviction;
  std::unique_ptr<RegionCache> cache;
  Result r = RegionCache::create(c, pinner, &cache);
  REQUIRE(r.ok());
  return cache;
}

// Acquires and releases at once: the range stays cached.
void touch(RegionCache& cache, size_t first, size_t pages) {
  Handle h = 0;
  REQUIRE(cache.acquire(page(first), pages * kPage, &h).ok());
  REQUIRE(cache.release(h).ok());
}

}  // namespace

TEST(mrrc_hit_exact_and_subset) {
  CountingPinner pinner;
  auto cache = make(pinner, 64, Replacement::kMre);
  touch(*cache, 0, 8);
  touch(*cache, 0, 8);                       // exact
  Handle h = 0;
  CHECK(cache->acquire(page(2) + 100, 3 * kPage, &h).ok());  // inside, unaligned
  CHECK(cache->release(h).ok());
  const Stats s = cache->stats();
  CHECK_EQ(s.misses, 1u);
  CHECK_EQ(s.hits, 2u);
  CHECK_EQ(s.registrations, 1u);
  CHECK_EQ(s.regions, 1u);
  CHECK_EQ(pinner.counts().pin_pages, 8u);
}

TEST(mrrc_split_registers_only_the_uncovered_part) {
  CountingPinner pinner;
  auto cache = make(pinner, 64, Replacement::kMre);
  touch(*cache, 0, 4);   // [0, 4)
  touch(*cache, 2, 6);   // [2, 8): [2, 4) cached, [4, 8) registered
  Stats s = cache->stats();
  CHECK_EQ(s.partial_hits, 1u);
  CHECK_EQ(s.registrations, 2u);
  CHECK_EQ(s.registered_bytes, 8 * kPage);
  CHECK_EQ(s.regions, 2u);
  // Gaps on both sides of a cached region: two registrations, no page twice.
  touch(*cache, 12, 2);   // [12, 14)
  touch(*cache, 10, 6);   // [10, 16): gaps [10, 12) and [14, 16)
  s = cache->stats();
  CHECK_EQ(s.registrations, 5u);
  CHECK_EQ(s.regions, 5u);
  CHECK_EQ(pinner.counts().overlaps, 0u);
  CHECK_EQ(s.pinned_bytes, 14 * kPage);
}

TEST(mrrc_adjacent_regions_serve_one_request) {
  CountingPinner pinner;
  auto cache = make(pinner, 64, Replacement::kMre);
  touch(*cache, 0, 4);
  touch(*cache, 4, 4);
  touch(*cache, 8, 4);
  touch(*cache, 1, 10);  // spans all three: a hit, nothing registered
  const Stats s = cache->stats();
  CHECK_EQ(s.hits, 1u);
  CHECK_EQ(s.registrations, 3u);
  // While held, none of the three can go.
  Handle h = 0;
  REQUIRE(cache->acquire(page(1), 10 * kPage, &h).ok());
  CHECK(cache->invalidate(page(4), kPage).status == Status::kBusy);
  CHECK(cache->release(h).ok());
  CHECK(cache->invalidate(page(4), kPage).ok());
  CHECK_EQ(cache->stats().regions, 2u);
}

TEST(mrrc_lru_evicts_least_recent_one_by_one) {
  CountingPinner pinner;
  auto cache = make(pinner, 4, Replacement::kLru);
  for (size_t i = 0; i < 4; ++i) touch(*cache, 10 * i, 1);  // A B C D
  touch(*cache, 0, 1);                                      // A again: B is now the LRU
  touch(*cache, 100, 2);                                    // needs 2 pages: B and C go
  const PinCounts c = pinner.counts();
  CHECK_EQ(c.unpin_ops, 2u);  // one deregistration each
  CHECK(pinner.covers({page(0), kPage}));
  CHECK(!pinner.covers({page(10), kPage}));
  CHECK(!pinner.covers({page(20), kPage}));
  CHECK(pinner.covers({page(30), kPage}));
}

TEST(mrrc_mre_prefers_large_regions_and_batches) {
  // Everything in the resorting section (frequent share 0), no batch beyond what is needed.
  CountingPinner mre_pinner, lru_pinner;
  auto mre = make(mre_pinner, 8, Replacement::kMre, 0.0, 0.0);
  auto lru = make(lru_pinner, 8, Replacement::kLru);
  for (RegionCache* c : {mre.get(), lru.get()}) {
    touch(*c, 0, 1);    // S1, the oldest
    touch(*c, 10, 4);   // L
    touch(*c, 20, 1);   // S2
    touch(*c, 30, 1);   // S3: 7 pages pinned
    touch(*c, 40, 2);   // needs one page
  }
  // MRE: evictfact = r + 1/s is smallest for the 4-page region; LRU takes the oldest.
  CHECK(mre_pinner.covers({page(0), kPage}));
  CHECK(!mre_pinner.covers({page(10), kPage}));
  CHECK(!lru_pinner.covers({page(0), kPage}));
  CHECK(lru_pinner.covers({page(10), 4 * kPage}));

  // A batch: eviction_share 0.5 of 8 pages frees 4 pages of 1-page regions in one unpin.
  CountingPinner pinner;
  auto cache = make(pinner, 8, Replacement::kMre, 0.0, 0.5);
  for (size_t i = 0; i < 8; ++i) touch(*cache, 10 * i, 1);
  touch(*cache, 200, 1);
  const Stats s = cache->stats();
  CHECK_EQ(s.dereg_batches, 1u);
  CHECK_EQ(s.deregistrations, 4u);
  CHECK_EQ(pinner.counts().unpin_ops, 1u);
}

TEST(mrrc_mre_rereference_resets_the_factor) {
  // After one resort every region has a factor; the one referenced again goes back to the top with
  // none and outlives an older one of the same size.
  CountingPinner pinner;
  auto cache = make(pinner, 4, Replacement::kMre, 0.0, 0.0);
  for (size_t i = 0; i < 4; ++i) touch(*cache, 10 * i, 1);  // A B C D
  touch(*cache, 100, 1);                                    // full: resort, A (bottom) goes
  CHECK(!pinner.covers({page(0), kPage}));
  touch(*cache, 10, 1);                                     // B referenced again
  touch(*cache, 110, 1);                                    // C goes, not B
  CHECK(pinner.covers({page(10), kPage}));
  CHECK(!pinner.covers({page(20), kPage}));
}

TEST(mrrc_in_use_regions_are_never_evicted) {
  for (Replacement rep : {Replacement::kMre, Replacement::kLru, Replacement::kNoCache}) {
    CountingPinner pinner;
    auto cache = make(pinner, 4, rep);
    Handle a = 0, b = 0;
    REQUIRE(cache->acquire(page(0), 3 * kPage, &a).ok());
    CHECK(cache->acquire(page(10), 2 * kPage, &b).status == Status::kNoSpace);
    CHECK(pinner.covers({page(0), 3 * kPage}));
    CHECK(cache->release(a).ok());
    CHECK(cache->acquire(page(10), 2 * kPage, &b).ok());
    CHECK(cache->release(b).ok());
    CHECK(cache->stats().pinned_bytes <= 4 * kPage);
  }
}

TEST(mrrc_no_cache_registers_every_time) {
  CountingPinner pinner;
  auto cache = make(pinner, 64, Replacement::kNoCache);
  for (int i = 0; i < 3; ++i) touch(*cache, 0, 4);
  const Stats s = cache->stats();
  CHECK_EQ(s.misses, 3u);
  CHECK_EQ(s.hits, 0u);
  CHECK_EQ(pinner.counts().pin_ops, 3u);
  CHECK_EQ(pinner.counts().unpin_ops, 3u);
  CHECK_EQ(pinner.counts().pinned_pages, 0u);
}

TEST(mrrc_bad_input) {
  CountingPinner pinner;
  auto cache = make(pinner, 16, Replacement::kMre);
  Handle h = 0;
  CHECK(cache->acquire(page(0), 0, &h).status == Status::kInvalid);
  CHECK(cache->acquire(UINTPTR_MAX - 10, 100, &h).status == Status::kInvalid);   // wraps
  CHECK(cache->acquire(UINTPTR_MAX - 10, 5, &h).status == Status::kInvalid);     // last page's end wraps
  CHECK(cache->acquire(page(0), 17 * kPage, &h).status == Status::kTooLarge);
  CHECK(cache->acquire(page(0) + 1, 16 * kPage, &h).status == Status::kTooLarge);  // 17 pages once aligned
  CHECK(cache->release(0).status == Status::kUnknownHandle);
  CHECK(cache->release(12345).status == Status::kUnknownHandle);
  REQUIRE(cache->acquire(page(0), 16 * kPage, &h).ok());
  CHECK(cache->release(h).ok());
  CHECK(cache->release(h).status == Status::kUnknownHandle);  // twice
  CHECK(cache->invalidate(page(0), 0).status == Status::kInvalid);
  CHECK_EQ(cache->stats().handles, 0u);
  CHECK_EQ(pinner.counts().overlaps, 0u);

  std::unique_ptr<RegionCache> bad;
  Config c;
  c.capacity_bytes = kPage - 1;
  CHECK(RegionCache::create(c, pinner, &bad).status == Status::kInvalid);
  c.capacity_bytes = 1 << 20;
  c.frequent_share = 1.5;
  CHECK(RegionCache::create(c, pinner, &bad).status == Status::kInvalid);
  c.frequent_share = 0.5;
  c.eviction_share = -0.1;
  CHECK(RegionCache::create(c, pinner, &bad).status == Status::kInvalid);
  Replacement rep;
  CHECK(!parse_replacement("arc", &rep));
  CHECK(parse_replacement("pindown", &rep) && rep == Replacement::kLru);
}

TEST(mrrc_capacity_capped_to_the_pin_limit) {
  CountingPinner pinner(kPage, true, 8 * kPage + 100);
  Config c;
  c.capacity_bytes = 1 << 30;
  std::unique_ptr<RegionCache> cache;
  REQUIRE(RegionCache::create(c, pinner, &cache).ok());
  CHECK_EQ(cache->capacity(), 8 * kPage);
  Handle h = 0;
  CHECK(cache->acquire(page(0), 9 * kPage, &h).status == Status::kTooLarge);
}

TEST(mrrc_pin_failure_is_a_status) {
  CountingPinner pinner;
  auto cache = make(pinner, 16, Replacement::kMre);
  Handle h = 0;
  pinner.fail_next_pins(1, EPERM);
  Result r = cache->acquire(page(0), kPage, &h);
  CHECK(r.status == Status::kPinFailed);
  CHECK_EQ(r.sys_errno, EPERM);
  CHECK_EQ(cache->stats().handles, 0u);
  CHECK_EQ(cache->stats().pin_failures, 1u);
  // ENOMEM (a spent RLIMIT_MEMLOCK): the cache gives back its unused regions and retries once.
  touch(*cache, 10, 4);
  pinner.fail_next_pins(1, ENOMEM);
  CHECK(cache->acquire(page(0), kPage, &h).ok());
  CHECK(!pinner.covers({page(10), kPage}));
  CHECK(cache->release(h).ok());
  // Twice ENOMEM: reported.
  pinner.fail_next_pins(2, ENOMEM);
  r = cache->acquire(page(50), kPage, &h);
  CHECK(r.status == Status::kPinFailed);
  CHECK_EQ(r.sys_errno, ENOMEM);
  CHECK(std::string(status_name(r.status)) == "pin-failed");
  CHECK_EQ(cache->stats().handles, 0u);
  CHECK_EQ(pinner.counts().overlaps, 0u);
}

namespace {

// The reference pin-down cache: a vector of regions scanned linearly, the same rules written plainly.
struct RefRegion {
  uintptr_t lo, hi;
  uint32_t users;
  uint64_t last_use;
};
struct RefLru {
  size_t capacity;
  std::vector<RefRegion> regions;
  uint64_t clock = 0, hits = 0, partials = 0, misses = 0, regs = 0, pinned = 0;

  // Returns false for kNoSpace (nothing changes).
  bool acquire(uintptr_t lo, uintptr_t hi, std::vector<size_t>* out_ids, std::vector<std::pair<uintptr_t, uintptr_t>>* out_ranges) {
    std::vector<size_t> cover;
    for (size_t i = 0; i < regions.size(); ++i)
      if (regions[i].lo < hi && regions[i].hi > lo) cover.push_back(i);
    std::sort(cover.begin(), cover.end(), [&](size_t a, size_t b) { return regions[a].lo < regions[b].lo; });
    std::vector<std::pair<uintptr_t, uintptr_t>> gaps;
    uintptr_t cur = lo;
    for (size_t i : cover) {
      if (regions[i].lo > cur) gaps.push_back({cur, regions[i].lo});
      cur = regions[i].hi;
    }
    if (cur < hi) gaps.push_back({cur, hi});
    size_t gap_bytes = 0;
    for (auto& g : gaps) gap_bytes += g.second - g.first;
    for (size_t i : cover) regions[i].users++;
    while (pinned + gap_bytes > capacity) {
      size_t victim = SIZE_MAX;
      for (size_t i = 0; i < regions.size(); ++i)
        if (regions[i].users == 0 && (victim == SIZE_MAX || regions[i].last_use < regions[victim].last_use)) victim = i;
      if (victim == SIZE_MAX) break;
      pinned -= regions[victim].hi - regions[victim].lo;
      regions.erase(regions.begin() + ptrdiff_t(victim));
      for (size_t& i : cover) i -= i > victim ? 1 : 0;
    }
    if (pinned + gap_bytes > capacity) {
      for (size_t i : cover) regions[i].users--;
      return false;
    }
    // Recency as the cache orders it: the new gaps first, then the covering regions, each in
    // address order (the last one is the most recent).
    std::vector<std::pair<uintptr_t, uintptr_t>> held;
    for (size_t i : cover) held.push_back({regions[i].lo, regions[i].hi});
    for (auto& g : gaps) {
      regions.push_back({g.first, g.second, 1, ++clock});
      pinned += g.second - g.first;
      ++regs;
      held.push_back(g);
    }
    for (size_t i : cover) regions[i].last_use = ++clock;
    if (gaps.empty()) ++hits;
    else if (cover.empty()) ++misses;
    else ++partials;
    (void)out_ids;
    *out_ranges = held;
    return true;
  }
  void release(const std::vector<std::pair<uintptr_t, uintptr_t>>& held) {
    for (auto& h : held)
      for (auto& r : regions)
        if (r.lo == h.first && r.hi == h.second) r.users--;
  }
};

}  // namespace

TEST(mrrc_random_model_lru_matches_reference) {
  std::mt19937_64 rng(7);
  CountingPinner pinner;
  auto cache = make(pinner, 48, Replacement::kLru);
  RefLru ref{48 * kPage, {}};
  struct Live {
    Handle h;
    std::vector<std::pair<uintptr_t, uintptr_t>> ref_held;
  };
  std::vector<Live> live;
  for (int step = 0; step < 20000; ++step) {
    if (!live.empty() && (rng() % 3 == 0 || live.size() > 6)) {
      const size_t i = rng() % live.size();
      CHECK(cache->release(live[i].h).ok());
      ref.release(live[i].ref_held);
      live.erase(live.begin() + ptrdiff_t(i));
      continue;
    }
    const size_t first = rng() % 96, pages = 1 + rng() % 8;
    const uintptr_t addr = page(first) + rng() % kPage;
    const size_t len = pages * kPage - rng() % kPage;
    const uintptr_t lo = page(first), hi = lo + ((addr + len - lo + kPage - 1) / kPage) * kPage;
    Handle h = 0;
    std::vector<std::pair<uintptr_t, uintptr_t>> held;
    const bool ref_ok = ref.acquire(lo, hi, nullptr, &held);
    const Result r = cache->acquire(addr, len, &h);
    CHECK_EQ(int(r.status), int(ref_ok ? Status::kOk : Status::kNoSpace));
    if (r.ok()) {
      CHECK(pinner.covers({lo, size_t(hi - lo)}));
      live.push_back({h, held});
    }
    const Stats s = cache->stats();
    CHECK_EQ(s.hits, ref.hits);
    CHECK_EQ(s.partial_hits, ref.partials);
    CHECK_EQ(s.misses, ref.misses);
    CHECK_EQ(s.registrations, ref.regs);
    CHECK_EQ(s.pinned_bytes, ref.pinned);
    if (pd3test::failures() > 0) {
      std::fprintf(stderr, "  diverged at step %d\n", step);
      return;
    }
  }
  CHECK_EQ(pinner.counts().overlaps, 0u);
}

TEST(mrrc_random_model_mre_invariants) {
  std::mt19937_64 rng(11);
  for (double eviction : {0.0, 0.1, 0.3}) {
    CountingPinner pinner;
    auto cache = make(pinner, 64, Replacement::kMre, 0.5, eviction);
    std::vector<std::pair<Handle, PageRange>> live;
    for (int step = 0; step < 20000; ++step) {
      if (!live.empty() && (rng() % 3 == 0 || live.size() > 6)) {
        const size_t i = rng() % live.size();
        CHECK(cache->release(live[i].first).ok());
        live.erase(live.begin() + ptrdiff_t(i));
        continue;
      }
      const size_t first = rng() % 200, pages = 1 + rng() % 16;
      Handle h = 0;
      const Result r = cache->acquire(page(first), pages * kPage, &h);
      CHECK(r.ok() || r.status == Status::kNoSpace);
      if (r.ok()) live.push_back({h, {page(first), pages * kPage}});
      // Every held range stays pinned, the cache never passes its capacity, no page is pinned twice,
      // and the cache's pinned bytes are the backend's.
      for (auto& [hh, range] : live) CHECK(pinner.covers(range));
      const Stats s = cache->stats();
      CHECK(s.pinned_bytes <= 64 * kPage);
      CHECK_EQ(s.pinned_bytes, pinner.counts().pinned_pages * kPage);
      if (pd3test::failures() > 0) return;
    }
    CHECK_EQ(pinner.counts().overlaps, 0u);
    for (auto& [h, range] : live) CHECK(cache->release(h).ok());
    CHECK(cache->flush().ok());
    CHECK_EQ(pinner.counts().pinned_pages, 0u);
  }
}

TEST(mrrc_stress_threads_acquire_release) {
  for (Replacement rep : {Replacement::kMre, Replacement::kLru, Replacement::kNoCache}) {
    CountingPinner pinner;
    auto cache = make(pinner, 96, rep);
    std::atomic<uint64_t> ok{0}, nospace{0}, bad{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937_64 rng(100 + t);
        std::vector<Handle> mine;
        for (int i = 0; i < 20000; ++i) {
          if (!mine.empty() && (rng() % 2 == 0 || mine.size() > 4)) {
            if (!cache->release(mine.back()).ok()) bad++;
            mine.pop_back();
            continue;
          }
          Handle h = 0;
          const size_t first = rng() % 256, pages = 1 + rng() % 12;
          const Result r = cache->acquire(page(first), pages * kPage, &h);
          if (r.ok()) {
            if (!pinner.covers({page(first), pages * kPage})) bad++;
            mine.push_back(h);
            ok++;
          } else if (r.status == Status::kNoSpace) {
            nospace++;
          } else {
            bad++;
          }
        }
        for (Handle h : mine)
          if (!cache->release(h).ok()) bad++;
      });
    }
    for (auto& th : threads) th.join();
    CHECK_EQ(bad.load(), 0u);
    CHECK(ok.load() > 20000u);  // about half of the 80,000 steps acquire
    const Stats s = cache->stats();
    CHECK_EQ(s.handles, 0u);
    CHECK_EQ(s.hits + s.partial_hits + s.misses, ok.load());
    // Cached regions never overlap (without a cache, handles pin their own ranges, which may).
    if (rep != Replacement::kNoCache) CHECK_EQ(pinner.counts().overlaps, 0u);
    CHECK_EQ(s.pinned_bytes, pinner.counts().pinned_pages * kPage);
    CHECK(cache->flush().ok());
    CHECK_EQ(pinner.counts().pinned_pages, 0u);
  }
}

using pd3test::vm_locked_kib;

TEST(mrrc_mlock_backend_really_pins) {
  if (!pd3test::kMlockPins) {
    std::printf("  (skipped: the sanitizers turn mlock and munlock into no-ops)\n");
    return;
  }
  MlockPinner pinner;
  const size_t page_size = pinner.page_size();
  const size_t pages = 64;
  void* mem = mmap(nullptr, pages * page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(mem != MAP_FAILED);
  const auto base = reinterpret_cast<uintptr_t>(mem);
  const long before = vm_locked_kib();
  REQUIRE(before >= 0);
  {
    Config c;
    c.capacity_bytes = 32 * page_size;
    std::unique_ptr<RegionCache> a, b;
    Result r = RegionCache::create(c, pinner, &a);
    if (r.status == Status::kInvalid) {
      std::printf("  (skipped: RLIMIT_MEMLOCK below 32 pages)\n");
      munmap(mem, pages * page_size);
      return;
    }
    REQUIRE(r.ok());
    REQUIRE(RegionCache::create(c, pinner, &b).ok());
    Handle h = 0;
    r = a->acquire(base, 16 * page_size, &h);
    if (r.status == Status::kPinFailed) {
      std::printf("  (mlock refused: errno %d; the status surfaced, nothing crashed)\n", r.sys_errno);
      munmap(mem, pages * page_size);
      return;
    }
    REQUIRE(r.ok());
    CHECK_EQ(vm_locked_kib() - before, long(16 * page_size / 1024));
    CHECK(a->release(h).ok());
    CHECK_EQ(vm_locked_kib() - before, long(16 * page_size / 1024));  // cached: still pinned
    // A second cache pins an overlapping range: the shared pages are not locked twice...
    REQUIRE(b->acquire(base + 8 * page_size, 16 * page_size, &h).ok());
    CHECK_EQ(vm_locked_kib() - before, long(24 * page_size / 1024));
    // ...and the first cache letting go does not unlock what the second holds.
    CHECK(a->flush().ok());
    CHECK_EQ(vm_locked_kib() - before, long(16 * page_size / 1024));
    CHECK(b->release(h).ok());
  }  // both caches deregister everything
  CHECK_EQ(vm_locked_kib(), before);
  CHECK_EQ(MlockPinner::pinned_pages(), 0u);
  munmap(mem, pages * page_size);
}

// ---- the registration trace format (mrrc/trace_file.hpp) ------------------------------------------

TEST(mrrc_trace_parses_and_round_trips) {
  std::vector<TraceRequest> t;
  std::string error;
  std::string text = std::string(kTraceHeader) + "\n0 65536\n# a comment\n\n131072 4096\r\n18446744073709551614 1\n";
  REQUIRE(parse_trace(text, &t, &error));
  REQUIRE(t.size() == 3u);
  CHECK_EQ(t[0].addr, 0u);
  CHECK_EQ(t[0].len, 65536u);
  CHECK_EQ(t[1].addr, 131072u);
  CHECK_EQ(t[2].len, 1u);
  std::string again = std::string(kTraceHeader) + "\n";
  for (const auto& r : t) again += format_trace_line(r);
  std::vector<TraceRequest> t2;
  REQUIRE(parse_trace(again, &t2, &error));
  REQUIRE(t2.size() == t.size());
  for (size_t i = 0; i < t.size(); ++i) CHECK(t2[i].addr == t[i].addr && t2[i].len == t[i].len);
  CHECK(parse_trace(std::string(kTraceHeader), &t2, &error) && t2.empty());
}

TEST(mrrc_trace_bad_input) {
  const std::string h = std::string(kTraceHeader) + "\n";
  const std::pair<std::string, std::string> cases[] = {
      {"", "line 1: empty file"},
      {"# pd3 registration trace v2\n0 1\n", "line 1: expected the header"},
      {h + "0 0\n", "line 2: zero length"},
      {h + "-1 10\n", "line 2: the address is not"},
      {h + "10\n", "line 2: expected one space"},
      {h + "10  5\n", "line 2: the length is not"},
      {h + "10 5 7\n", "line 2: unexpected text"},
      {h + "10 5x\n", "line 2: unexpected text"},
      {h + "0 1\n18446744073709551615 2\n", "line 3: address + length passes"},
      {h + "99999999999999999999 1\n", "line 2: the address is not"},
      {h + " 1 1\n", "line 2: the address is not"},
  };
  for (const auto& [text, want] : cases) {
    std::vector<TraceRequest> t;
    std::string error;
    CHECK(!parse_trace(text, &t, &error));
    if (error.rfind(want, 0) != 0) {
      std::fprintf(stderr, "  got '%s', want '%s...'\n", error.c_str(), want.c_str());
      CHECK(false);
    }
  }
}

TEST(mrrc_trace_fuzz_never_crashes_or_accepts_garbage) {
  // Random mutations of a valid trace: the parser either accepts (then every entry is valid) or
  // names a line; it never reads out of bounds (run under ASan in CI's sanitizer build).
  std::mt19937_64 rng(99);
  const std::string base = std::string(kTraceHeader) + "\n0 4096\n8192 65536\n1048576 4096\n";
  const char alphabet[] = "0123456789 \n#-x\r";
  for (int i = 0; i < 20000; ++i) {
    std::string s = base;
    const int edits = 1 + int(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % (s.size() + 1);
      switch (rng() % 3) {
        case 0: s.insert(s.begin() + ptrdiff_t(at), alphabet[rng() % (sizeof alphabet - 1)]); break;
        case 1: if (at < s.size()) s.erase(at, 1); break;
        default: if (at < s.size()) s[at] = char(rng() % 256); break;
      }
    }
    std::vector<TraceRequest> t;
    std::string error;
    if (parse_trace(s, &t, &error)) {
      for (const auto& r : t) CHECK(r.len > 0 && r.addr <= UINT64_MAX - r.len);
    } else {
      CHECK(error.rfind("line ", 0) == 0);
    }
  }
}

TEST(mrrc_mlock_stress_caches_share_pages_across_threads) {
  if (!pd3test::kMlockPins) {
    std::printf("  (skipped: the sanitizers turn mlock and munlock into no-ops)\n");
    return;
  }
  // Four threads, each with its own cache (as host handles have), over one shared buffer: the
  // per-page counts keep every held range locked whatever the others release, and everything is
  // unlocked at the end.
  MlockPinner pinner;
  const size_t page_size = pinner.page_size();
  const size_t pages = 128;
  void* mem = mmap(nullptr, pages * page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(mem != MAP_FAILED);
  const auto base = reinterpret_cast<uintptr_t>(mem);
  const long before = vm_locked_kib();
  std::atomic<uint64_t> bad{0}, ok{0};
  {
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        Config c;
        c.capacity_bytes = 24 * page_size;
        c.replacement = t % 2 ? Replacement::kMre : Replacement::kLru;
        std::unique_ptr<RegionCache> cache;
        if (!RegionCache::create(c, pinner, &cache).ok()) {
          bad++;
          return;
        }
        std::mt19937_64 rng(500 + t);
        for (int i = 0; i < 3000; ++i) {
          Handle h = 0;
          const size_t first = rng() % (pages - 8), n = 1 + rng() % 8;
          const Result r = cache->acquire(base + first * page_size, n * page_size, &h);
          if (!r.ok()) {
            bad++;
            continue;
          }
          // Held: the process-wide table counts at least this range's pages as pinned.
          if (MlockPinner::pinned_pages() < n) bad++;
          ok++;
          if (cache->release(h).status != Status::kOk) bad++;
        }
      });
    }
    for (auto& th : threads) th.join();
  }
  CHECK_EQ(bad.load(), 0u);
  CHECK_EQ(ok.load(), 12000u);
  CHECK_EQ(MlockPinner::pinned_pages(), 0u);
  CHECK_EQ(vm_locked_kib(), before);
  munmap(mem, pages * page_size);
}

TEST(mrrc_mlock_failure_surfaces_with_its_errno) {
  if (!pd3test::kMlockPins) {
    std::printf("  (skipped: the sanitizers turn mlock and munlock into no-ops)\n");
    return;
  }
  // mlock of memory that is not mapped fails with ENOMEM, as it does past RLIMIT_MEMLOCK: the cache
  // returns kPinFailed with the errno, holds nothing and leaves nothing pinned.
  MlockPinner pinner;
  const size_t page_size = pinner.page_size();
  void* mem = mmap(nullptr, 8 * page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(mem != MAP_FAILED);
  munmap(mem, 8 * page_size);
  Config c;
  c.capacity_bytes = 16 * page_size;
  std::unique_ptr<RegionCache> cache;
  REQUIRE(RegionCache::create(c, pinner, &cache).ok());
  Handle h = 0;
  const Result r = cache->acquire(mem, 4 * page_size, &h);
  CHECK(r.status == Status::kPinFailed);
  CHECK_EQ(r.sys_errno, ENOMEM);
  const Stats s = cache->stats();
  CHECK_EQ(s.handles, 0u);
  CHECK_EQ(s.pinned_bytes, 0u);
  CHECK_EQ(MlockPinner::pinned_pages(), 0u);
}
