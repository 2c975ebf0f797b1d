// host_view_test.cpp — Host View table: SIMD paths agree, CuckooSet vs a reference set, full table and kick exhaustion, load, huge pages, options, key hash.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <unordered_set>
#include <vector>

#include "dpu/cuckoo_set.hpp"
#include "dpu/host_view.hpp"
#include "dpu/huge_alloc.hpp"
#include "dpu/simd_match.hpp"
#include "harness.hpp"
#include "util.hpp"
#include "pd3/status.h"

namespace {

using pd3::CuckooOptions;
using pd3::CuckooSet;
using pd3::SimdPath;
using Clock = std::chrono::steady_clock;

const uint32_t kScale = pd3test::stress_scale();

using pd3test::ms_since;
using pd3test::Rng;

// How the table stores a key hash: 0 is the empty-slot marker, so 0 and 1 are the same key.
uint64_t canon(uint64_t h) { return h == 0 ? 1 : h; }

const SimdPath kAllPaths[] = {SimdPath::kScalar, SimdPath::kSse41, SimdPath::kAvx2, SimdPath::kNeon};

std::vector<SimdPath> supported_paths() {
  std::vector<SimdPath> v;
  for (SimdPath p : kAllPaths)
    if (pd3::simd_supported(p)) v.push_back(p);
  return v;
}

using pd3test::Errors;

// ---- SIMD paths ---------------------------------------------------------------------------------

uint32_t naive_match(const uint64_t* b, uint64_t key) {
  uint32_t m = 0;
  for (uint32_t i = 0; i < 8; ++i)
    if (b[i] == key) m |= 1u << i;
  return m;
}

TEST(host_view_simd_paths_agree) {
  std::vector<SimdPath> paths = supported_paths();
  paths.push_back(SimdPath::kBest);
  REQUIRE(pd3::simd_supported(SimdPath::kScalar) && pd3::simd_supported(SimdPath::kBest));
  std::vector<pd3::MatchFn> fns;
  for (SimdPath p : paths) {
    pd3::MatchFn f = pd3::simd_match(p);
    REQUIRE(f != nullptr);
    fns.push_back(f);
  }
  CHECK(pd3::simd_match(SimdPath::kBest) == pd3::simd_match(pd3::best_simd_path()));
  CHECK(pd3::best_simd_path() != SimdPath::kBest && pd3::simd_supported(pd3::best_simd_path()));
  for (SimdPath p : kAllPaths)
    if (!pd3::simd_supported(p)) CHECK(pd3::simd_match(p) == nullptr);
  CHECK(std::strcmp(pd3::simd_path_name(SimdPath::kScalar), "scalar") == 0);
  CHECK(std::strcmp(pd3::simd_path_name(SimdPath::kAvx2), "avx2") == 0);
  CHECK(std::strcmp(pd3::simd_path_name(SimdPath::kSse41), "sse4.1") == 0);
  CHECK(std::strcmp(pd3::simd_path_name(SimdPath::kNeon), "neon") == 0);
  CHECK(std::strcmp(pd3::simd_path_name(SimdPath::kBest), "best") == 0);
  std::printf("  paths:");
  for (SimdPath p : paths) std::printf(" %s", pd3::simd_path_name(p));
  std::printf(" (best = %s)\n", pd3::simd_path_name(pd3::best_simd_path()));

  Errors err{"simd"};
  alignas(64) uint64_t b[8];
  Rng rng(0x51AD);
  auto check_all = [&](uint64_t key, uint32_t want) {
    for (size_t i = 0; i < fns.size(); ++i) {
      const uint32_t got = fns[i](b, key);
      if (got != want)
        err.fail("%s: key %016llx mask %02x, want %02x", pd3::simd_path_name(paths[i]), (unsigned long long)key, got, want);
    }
  };

  // Every mask, for keys that stress sign bits and 32-bit halves; the other slots differ from the
  // key in exactly one bit (high half, low half, sign bit) or are zero.
  const uint64_t special[] = {0, 1, ~0ull, 0x8000000000000000ull, 0x00000000FFFFFFFFull, 0xFFFFFFFF00000000ull,
                              0x7FFFFFFFFFFFFFFFull, rng.next(), rng.next()};
  for (uint64_t key : special)
    for (uint32_t m = 0; m < 256; ++m)
      for (int variant = 0; variant < 4; ++variant) {
        for (uint32_t i = 0; i < 8; ++i) {
          uint64_t other;
          switch (variant) {
            case 0: other = key ^ (1ull << (32 + rng.below(32))); break;  // differs in the high half only
            case 1: other = key ^ (1ull << rng.below(32)); break;          // low half only
            case 2: other = key ^ 0x8000000000000000ull; break;             // sign bit only
            default: other = key == 0 ? 1 : 0; break;                      // empty slots
          }
          b[i] = (m >> i & 1) ? key : other;
        }
        check_all(key, m);
      }

  // Random (bucket, key) pairs of assorted shapes, against the naive compare.
  const uint64_t pairs = 3'000'000 / kScale;
  uint64_t pool[4];
  const auto t0 = Clock::now();
  uint64_t hits = 0;
  for (uint64_t n = 0; n < pairs; ++n) {
    if ((n & 1023) == 0)
      for (uint64_t& v : pool) v = rng.below(4) == 0 ? 0 : rng.next();
    const uint64_t r = rng.next();
    uint64_t key = pool[r & 3];
    switch ((r >> 2) % 7) {
      case 0:  // values from a pool of 4 (duplicates, zeros)
        for (uint64_t& v : b) v = pool[rng.below(4)];
        break;
      case 1:  // all zero (an empty bucket); key zero or not
        for (uint64_t& v : b) v = 0;
        if (r & 64) key = 0;
        break;
      case 2:  // all equal to the key
        for (uint64_t& v : b) v = key;
        break;
      case 3: {  // key at one position, random elsewhere
        for (uint64_t& v : b) v = rng.next();
        key = rng.next();
        b[(r >> 8) & 7] = key;
        break;
      }
      case 4:  // random everywhere (almost always no match)
        for (uint64_t& v : b) v = rng.next();
        key = rng.next();
        break;
      case 5:  // near misses: one bit off the key, with some exact copies
        key = rng.next();
        for (uint64_t& v : b) v = rng.below(3) == 0 ? key : key ^ (1ull << rng.below(64));
        break;
      default:  // key is all-equal bucket's value with one slot changed
        for (uint64_t& v : b) v = key;
        b[(r >> 8) & 7] ^= 1ull << ((r >> 11) & 63);
        break;
    }
    const uint32_t want = naive_match(b, key);
    hits += want != 0;
    check_all(key, want);
  }
  std::printf("  %llu random pairs x %zu paths (%llu with a match) in %.0f ms\n", (unsigned long long)pairs, fns.size(),
              (unsigned long long)hits, ms_since(t0));
  CHECK_EQ(err.n, 0u);
}

// ---- property test against a reference set -----------------------------------------------------

struct PropConfig {
  const char* label;
  CuckooOptions opt;
  uint64_t ops;
  uint64_t seed;
};

// Random insert/erase/contains/contains_batch on a CuckooSet and a std::unordered_set, in phases that
// grow the table to full (so NOSPACE and the undo happen), hold it, and shrink it again.
void property_run(const PropConfig& cfg) {
  std::unique_ptr<CuckooSet> set;
  REQUIRE(CuckooSet::create(cfg.opt, &set) == PD3_OK);
  const uint64_t slots = set->buckets() * CuckooSet::kSlots;
  Rng rng(cfg.seed);

  // The universe: 0 (stored as 1, so 1 is kept out), a cluster sharing one first bucket (high 32
  // bits), a cluster sharing the low 32 bits, and random keys; a quarter larger than the table.
  std::vector<uint64_t> universe;
  {
    std::unordered_set<uint64_t> seen;
    auto add = [&](uint64_t k) {
      if (k != 1 && seen.insert(k).second) universe.push_back(k);
    };
    add(0);
    const uint64_t hi = rng.next() & 0xFFFFFFFF00000000ull, lo = rng.next() & 0xFFFFFFFFull;
    for (int i = 0; i < 40; ++i) add(hi | uint32_t(rng.next()));
    for (int i = 0; i < 40; ++i) add((rng.next() << 32) | lo);
    while (universe.size() < slots + slots / 4) add(rng.next());
  }
  const uint32_t U = uint32_t(universe.size());

  std::unordered_set<uint64_t> ref;
  ref.reserve(U * 2);
  Errors err{cfg.label};
  uint64_t nospace = 0, min_nospace_size = ~0ull, batch_keys = 0, max_stashed = 0, max_size = 0;
  std::vector<uint64_t> keys(CuckooSet::kMaxBatch);
  std::vector<uint8_t> out(CuckooSet::kMaxBatch + 1);

  // Keys to insert or erase come from the universe; lookups sometimes ask for keys outside it.
  auto pick = [&](bool lookup = false) -> uint64_t {
    const uint32_t r = rng.below(100);
    if (lookup && r < 2) return rng.next();  // outside the universe (absent, barring a 2^-64 accident)
    if (r < 6) return universe[rng.below(81)];  // 0 and the clusters
    return universe[rng.below(U)];
  };
  auto scan = [&](const char* when) {
    for (uint64_t k : universe)
      if (set->contains(k) != (ref.count(canon(k)) != 0))
        err.fail("%s: contains(%016llx) = %d", when, (unsigned long long)k, int(set->contains(k)));
    std::vector<uint8_t> all(U, 0xAA);
    set->contains_batch(universe.data(), U, all.data());
    for (uint32_t i = 0; i < U; ++i)
      if (all[i] != uint8_t(ref.count(canon(universe[i])) != 0))
        err.fail("%s: contains_batch[%u] = %d", when, i, int(all[i]));
    if (set->size() != ref.size()) err.fail("%s: size %llu, reference %zu", when, (unsigned long long)set->size(), ref.size());
  };

  const auto t0 = Clock::now();
  const uint64_t phase_len = 60'000;
  for (uint64_t op = 0; op < cfg.ops; ++op) {
    const uint32_t phase = uint32_t(op / phase_len % 3);  // 0 grow, 1 churn near full, 2 shrink
    const uint32_t ins = phase == 0 ? 60 : phase == 1 ? 35 : 15;
    const uint32_t del = phase == 0 ? 3 : phase == 1 ? 25 : 45;
    const uint32_t r = rng.below(100);
    if (r < ins) {
      const uint64_t k = pick();
      const uint64_t before = set->size();
      const bool had = ref.count(canon(k)) != 0;
      const int rc = set->insert(k);
      if (rc == PD3_OK) {
        ref.insert(canon(k));
        if (set->size() != before + (had ? 0 : 1)) err.fail("insert size %llu -> %llu (had %d)", (unsigned long long)before, (unsigned long long)set->size(), int(had));
      } else if (rc == PD3_E_NOSPACE) {
        ++nospace;
        min_nospace_size = std::min(min_nospace_size, before);
        if (had) err.fail("NOSPACE for a present key %016llx", (unsigned long long)k);
        if (set->contains(k)) err.fail("NOSPACE key %016llx is present", (unsigned long long)k);
        if (set->size() != before) err.fail("NOSPACE changed size");
        if (cfg.opt.max_kicks > 0 && set->stashed() != CuckooSet::kStash) err.fail("NOSPACE with stash %u", set->stashed());
      } else {
        err.fail("insert rc %d", rc);
      }
    } else if (r < ins + del) {
      const uint64_t k = pick();
      const bool want = ref.erase(canon(k)) != 0;
      if (set->erase(k) != want) err.fail("erase(%016llx) != %d", (unsigned long long)k, int(want));
      if (set->contains(k)) err.fail("erased key %016llx still present", (unsigned long long)k);
    } else if (r < 98) {
      const uint64_t k = pick(true);
      if (set->contains(k) != (ref.count(canon(k)) != 0)) err.fail("contains(%016llx)", (unsigned long long)k);
    } else {
      // A batch of 0..256 keys; a quarter of batches draw from 4 keys so duplicates are common.
      const uint32_t n = rng.below(40) == 0 ? 0 : 1 + rng.below(CuckooSet::kMaxBatch);
      const bool dups = rng.below(4) == 0;
      uint64_t few[4] = {pick(true), pick(true), pick(true), pick(true)};
      for (uint32_t i = 0; i < n; ++i) keys[i] = dups ? few[rng.below(4)] : pick(true);
      std::fill(out.begin(), out.end(), 0xAA);
      set->contains_batch(keys.data(), n, out.data());
      for (uint32_t i = 0; i < n; ++i)
        if (out[i] != uint8_t(ref.count(canon(keys[i])) != 0))
          err.fail("contains_batch n=%u [%u] = %d (key %016llx)", n, i, int(out[i]), (unsigned long long)keys[i]);
      if (out[n] != 0xAA) err.fail("contains_batch wrote past n=%u", n);
      batch_keys += n;
    }
    if ((op & 4095) == 0) {
      if (set->size() != ref.size()) err.fail("op %llu: size %llu, reference %zu", (unsigned long long)op, (unsigned long long)set->size(), ref.size());
      if (set->stashed() > CuckooSet::kStash) err.fail("stashed %u", set->stashed());
      max_stashed = std::max<uint64_t>(max_stashed, set->stashed());
      max_size = std::max<uint64_t>(max_size, set->size());
    }
    if ((op + 1) % phase_len == 0) scan("phase end");
    if (err.n > 64) break;
  }
  scan("end");
  // Drain: erase everything the reference holds; the table must end empty, stash included.
  for (uint64_t k : universe)
    if (set->erase(k) != (ref.erase(canon(k)) != 0)) err.fail("drain erase(%016llx)", (unsigned long long)k);
  CHECK_EQ(set->size(), 0u);
  CHECK_EQ(set->stashed(), 0u);
  scan("drained");

  std::printf("  %-22s %s: %llu ops, %llu batch keys, %llu slots, peak %llu (%.1f%%), stash peak %llu, NOSPACE %llu (first at %.1f%% of slots), %.0f ms\n",
              cfg.label, pd3::simd_path_name(set->simd()), (unsigned long long)cfg.ops, (unsigned long long)batch_keys,
              (unsigned long long)slots, (unsigned long long)max_size, 100.0 * double(max_size) / double(slots),
              (unsigned long long)max_stashed, (unsigned long long)nospace,
              nospace ? 100.0 * double(min_nospace_size) / double(slots) : 0.0, ms_since(t0));
  CHECK_EQ(err.n, 0u);
  // The table must actually get full (so NOSPACE and the undo are exercised), and not early.
  CHECK(nospace > 0);
  if (nospace) CHECK(double(min_nospace_size) >= 0.9 * double(slots));
}

CuckooOptions prop_options(SimdPath p) {
  CuckooOptions o;
  o.capacity = 12000;
  o.max_load = 0.95;
  o.simd = p;
  o.batch = 32;
  return o;
}

void property_for_path(SimdPath p, const char* label) {
  if (!pd3::simd_supported(p)) {
    std::printf("  %s not supported on this CPU: skipped\n", pd3::simd_path_name(p));
    return;
  }
  property_run({label, prop_options(p), 2'000'000 / kScale, 0xC0FFEE ^ uint64_t(p)});
}

TEST(host_view_cuckoo_property_scalar) { property_for_path(SimdPath::kScalar, "default"); }
TEST(host_view_cuckoo_property_sse41) { property_for_path(SimdPath::kSse41, "default"); }
TEST(host_view_cuckoo_property_avx2) { property_for_path(SimdPath::kAvx2, "default"); }
TEST(host_view_cuckoo_property_neon) { property_for_path(SimdPath::kNeon, "default"); }

// The ablation switches and batch sizes, spread over the supported paths.
TEST(host_view_cuckoo_property_options) {
  const std::vector<SimdPath> paths = supported_paths();
  struct Variant {
    const char* label;
    void (*apply)(CuckooOptions&);
  };
  const Variant variants[] = {
      {"batched=false", [](CuckooOptions& o) { o.batched = false; }},
      {"delayed_second=false", [](CuckooOptions& o) { o.delayed_second = false; o.batch = 256; }},
      {"huge_pages=false", [](CuckooOptions& o) { o.huge_pages = false; o.batch = 1; }},
      {"batch=7,kicks=16", [](CuckooOptions& o) { o.batch = 7; o.max_kicks = 16; }},
      {"batch=256,kicks=2000", [](CuckooOptions& o) { o.batch = 256; o.max_kicks = 2000; }},
  };
  uint64_t i = 0;
  for (const Variant& v : variants) {
    CuckooOptions o = prop_options(paths[i % paths.size()]);
    v.apply(o);
    property_run({v.label, o, 600'000 / kScale, 0xABCD + i});
    ++i;
  }
}

// Key hash 0 is stored as 1 (0 marks an empty slot): the two are the same key, by design.
TEST(host_view_cuckoo_zero_alias) {
  for (SimdPath p : supported_paths()) {
    CuckooOptions o;
    o.capacity = 100;
    o.simd = p;
    std::unique_ptr<CuckooSet> set;
    REQUIRE(CuckooSet::create(o, &set) == PD3_OK);
    CHECK(!set->contains(0) && !set->contains(1));
    CHECK(set->insert(0) == PD3_OK);
    CHECK(set->contains(0) && set->contains(1));
    CHECK_EQ(set->size(), 1u);
    CHECK(set->insert(1) == PD3_OK);  // already present (as 1)
    CHECK_EQ(set->size(), 1u);
    uint64_t q[3] = {0, 1, 2};
    uint8_t out[3] = {9, 9, 9};
    set->contains_batch(q, 3, out);
    CHECK(out[0] == 1 && out[1] == 1 && out[2] == 0);
    CHECK(set->erase(1));
    CHECK(!set->contains(0));
    CHECK(!set->erase(0));
    CHECK_EQ(set->size(), 0u);
    // An empty table reports nothing, even for 0 (the empty-slot marker).
    CHECK(!set->contains(0));
  }
}

// ---- full table, kick-path exhaustion ----------------------------------------------------------

struct FillStats {
  uint64_t trials = 0, nospace = 0, stash_used = 0, retries_ok = 0, retries = 0;
  double fill_min = 1e9, fill_sum = 0;
};

// Fills a small table with distinct random keys until NOSPACE, then checks nothing was lost or
// changed; keeps trying fresh keys, erases and re-inserts.
void fill_trial(const CuckooOptions& o, uint64_t seed, Errors& err, FillStats& st) {
  std::unique_ptr<CuckooSet> set;
  if (CuckooSet::create(o, &set) != PD3_OK) {
    err.fail("create");
    return;
  }
  const uint64_t slots = set->buckets() * CuckooSet::kSlots;
  Rng rng(seed);
  std::vector<uint64_t> accepted;
  std::unordered_set<uint64_t> seen;
  auto fresh = [&] {
    for (;;) {
      const uint64_t k = rng.next();
      if (k > 1 && seen.insert(k).second) return k;
    }
  };
  auto verify = [&](const char* when) {
    if (set->size() != accepted.size()) err.fail("%s: size %llu, accepted %zu", when, (unsigned long long)set->size(), accepted.size());
    if (set->stashed() > CuckooSet::kStash) err.fail("%s: stashed %u", when, set->stashed());
    for (uint64_t k : accepted)
      if (!set->contains(k)) err.fail("%s: lost key %016llx", when, (unsigned long long)k);
    std::vector<uint8_t> out(accepted.size() + 1, 0xAA);
    set->contains_batch(accepted.data(), accepted.size(), out.data());
    for (size_t i = 0; i < accepted.size(); ++i)
      if (out[i] != 1) err.fail("%s: contains_batch lost key %zu", when, i);
  };
  // A failed insert must leave the table exactly as it was: size, every key, and the key absent.
  auto check_failed = [&](uint64_t k, uint64_t before) {
    if (set->size() != before) err.fail("NOSPACE changed size %llu -> %llu", (unsigned long long)before, (unsigned long long)set->size());
    if (set->contains(k)) err.fail("NOSPACE key present");
    if (o.max_kicks > 0 && set->stashed() != CuckooSet::kStash) err.fail("NOSPACE with stash %u of %u", set->stashed(), CuckooSet::kStash);
  };

  uint64_t failed_key = 0;
  for (;;) {
    const uint64_t k = fresh();
    const uint64_t before = set->size();
    const int rc = set->insert(k);
    if (rc == PD3_OK) {
      accepted.push_back(k);
      if (set->size() != before + 1) err.fail("insert did not count");
      if (accepted.size() > slots + CuckooSet::kStash) {
        err.fail("accepted %zu keys into %llu slots + stash", accepted.size(), (unsigned long long)slots);
        return;
      }
      continue;
    }
    if (rc != PD3_E_NOSPACE) {
      err.fail("insert rc %d", rc);
      return;
    }
    failed_key = k;
    check_failed(k, before);
    break;
  }
  ++st.trials;
  ++st.nospace;
  st.stash_used += set->stashed() > 0;
  const double fill = double(set->size()) / double(slots);
  st.fill_min = std::min(st.fill_min, fill);
  st.fill_sum += fill;
  verify("after first NOSPACE");

  // Present keys are still accepted (no-op) in a full table.
  for (int i = 0; i < 8; ++i) {
    const uint64_t k = accepted[rng.below(uint32_t(accepted.size()))];
    if (set->insert(k) != PD3_OK) err.fail("re-insert of a present key failed in a full table");
  }
  // More fresh keys: each either fits (a luckier walk) or fails cleanly.
  for (int i = 0; i < 48; ++i) {
    const uint64_t k = fresh();
    const uint64_t before = set->size();
    const int rc = set->insert(k);
    if (rc == PD3_OK)
      accepted.push_back(k);
    else if (rc == PD3_E_NOSPACE)
      check_failed(k, before);
    else
      err.fail("insert rc %d", rc);
  }
  verify("after more attempts");

  // Erase one key: exactly that key goes; inserting it again succeeds (its slot, or a stash slot,
  // is free again).
  for (int i = 0; i < 8; ++i) {
    const uint32_t j = rng.below(uint32_t(accepted.size()));
    const uint64_t e = accepted[j];
    const uint64_t before = set->size();
    if (!set->erase(e)) err.fail("erase of a present key failed");
    if (set->contains(e)) err.fail("erased key present");
    if (set->erase(e)) err.fail("double erase succeeded");
    if (set->size() != before - 1) err.fail("erase did not count");
    if (set->insert(e) != PD3_OK) err.fail("re-insert after erase failed");
    if (set->size() != before) err.fail("re-insert did not count");
  }
  verify("after erase/re-insert");

  // Erase half; the failed key now usually fits (not guaranteed by a random walk: only counted).
  std::vector<uint64_t> kept;
  for (uint64_t k : accepted) {
    if (rng.below(2)) {
      kept.push_back(k);
    } else if (!set->erase(k)) {
      err.fail("erase half: key missing");
    }
  }
  accepted.swap(kept);
  verify("after erasing half");
  ++st.retries;
  if (set->insert(failed_key) == PD3_OK) {
    ++st.retries_ok;
    accepted.push_back(failed_key);
  }
  verify("after retry");
  for (uint64_t k : accepted)
    if (!set->erase(k)) err.fail("final erase: key missing");
  accepted.clear();
  verify("empty");
  if (set->stashed() != 0) err.fail("stash not empty after erasing all");
}

TEST(host_view_cuckoo_full_table) {
  const std::vector<SimdPath> paths = supported_paths();
  Errors err{"full"};
  FillStats st;
  const uint32_t trials = std::max<uint32_t>(40, 600 / kScale);
  const auto t0 = Clock::now();
  for (uint32_t t = 0; t < trials; ++t) {
    CuckooOptions o;
    o.capacity = 64;
    o.max_load = 0.98;
    o.max_kicks = 8;
    o.batch = 1 + t % 16;
    o.simd = paths[t % paths.size()];
    o.seed = 1000 + t;
    fill_trial(o, 0xF111 + t * 7919, err, st);
  }
  std::printf("  capacity 64 / kicks 8: %llu trials, size at first NOSPACE min %.1f%% avg %.1f%% of bucket slots (stash incl.), stash used in %llu, retry fit %llu/%llu, %.0f ms\n",
              (unsigned long long)st.trials, 100 * st.fill_min, 100 * st.fill_sum / double(st.trials), (unsigned long long)st.stash_used,
              (unsigned long long)st.retries_ok, (unsigned long long)st.retries, ms_since(t0));
  CHECK_EQ(err.n, 0u);
  CHECK_EQ(st.trials, uint64_t(trials));
  CHECK(st.stash_used == st.trials);  // NOSPACE only once the stash is full

  // A bigger table with the default walk fills almost completely before NOSPACE.
  FillStats big;
  Errors err2{"full-4096"};
  for (uint32_t t = 0; t < std::max<uint32_t>(3, 20 / kScale); ++t) {
    CuckooOptions o;
    o.capacity = 4096;
    o.max_load = 0.98;
    o.simd = paths[t % paths.size()];
    o.seed = 77 + t;
    fill_trial(o, 0xB16 + t, err2, big);
  }
  std::printf("  capacity 4096 / kicks 500: size at NOSPACE min %.2f%% avg %.2f%% of slots\n", 100 * big.fill_min,
              100 * big.fill_sum / double(big.trials));
  CHECK_EQ(err2.n, 0u);
  CHECK(big.fill_min >= 0.95);
}

// max_kicks = 0: no walk at all; a key fits only into a free slot of one of its two buckets.
TEST(host_view_cuckoo_zero_kicks) {
  Errors err{"kicks=0"};
  FillStats st;
  uint64_t stash_seen = 0;
  for (uint32_t t = 0; t < 50; ++t) {
    CuckooOptions o;
    o.capacity = 64;
    o.max_load = 0.98;
    o.max_kicks = 0;
    o.seed = t;
    std::unique_ptr<CuckooSet> set;
    REQUIRE(CuckooSet::create(o, &set) == PD3_OK);
    fill_trial(o, 0x2E80 + t, err, st);
    // Also: with max_kicks = 0, does a failed insert ever use the stash?
    Rng rng(t);
    for (int i = 0; i < 200; ++i) {
      const uint64_t k = rng.next() | 2;
      const uint64_t before = set->size();
      const int rc = set->insert(k);
      if (rc == PD3_E_NOSPACE) {
        if (set->size() != before || set->contains(k)) err.fail("NOSPACE changed the table");
        break;
      }
    }
    stash_seen += set->stashed();
  }
  std::printf("  fill at NOSPACE min %.1f%% avg %.1f%% of slots; stash entries used with max_kicks=0: %llu\n", 100 * st.fill_min,
              100 * st.fill_sum / double(st.trials), (unsigned long long)stash_seen);
  CHECK_EQ(err.n, 0u);
  CHECK_EQ(st.trials, 50u);
}

// ---- load --------------------------------------------------------------------------------------

uint64_t load_key(uint64_t i) {  // distinct for distinct i (an invertible mix), never 0 or 1
  uint64_t x = i + 2;
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ull;
  x ^= x >> 33;
  return x <= 1 ? x + 0x100 : x;  // (the one colliding i is far outside the ranges used)
}

TEST(host_view_cuckoo_load) {
  const uint64_t N = 1'000'000;
  for (double load : {0.8, 0.95}) {
    CuckooOptions o;
    o.capacity = N;
    o.max_load = load;
    std::unique_ptr<CuckooSet> set;
    REQUIRE(CuckooSet::create(o, &set) == PD3_OK);
    const auto t0 = Clock::now();
    uint64_t ok = 0, fail = 0;
    std::vector<uint64_t> keys(N);
    for (uint64_t i = 0; i < N; ++i) keys[i] = load_key(i);
    std::vector<uint8_t> accepted(N);
    for (uint64_t i = 0; i < N; ++i) {
      const int rc = set->insert(keys[i]);
      accepted[i] = rc == PD3_OK;
      (rc == PD3_OK ? ok : fail)++;
    }
    const double ins_ms = ms_since(t0);
    std::vector<uint8_t> out(N);
    set->contains_batch(keys.data(), N, out.data());
    CHECK(out == accepted);
    CHECK_EQ(set->size(), ok);
    // Absent keys: none reported present.
    std::vector<uint64_t> absent(N / 4);
    for (uint64_t i = 0; i < absent.size(); ++i) absent[i] = load_key(N + i);
    std::vector<uint8_t> out2(absent.size());
    set->contains_batch(absent.data(), absent.size(), out2.data());
    CHECK(std::count(out2.begin(), out2.end(), 1) == 0);
    const double per_key = double(set->bytes()) / double(N);
    std::printf("  load %.2f: %llu of %llu inserted (%llu NOSPACE), stash %u, %.2f bytes/key, %s, %s, insert %.0f ms\n", load,
                (unsigned long long)ok, (unsigned long long)N, (unsigned long long)fail, set->stashed(), per_key,
                pd3::page_kind_name(set->pages()), pd3::simd_path_name(set->simd()), ins_ms);
    if (load == 0.8) {
      CHECK_EQ(ok, N);
      CHECK(per_key <= 12.0);
    } else {
      CHECK(ok >= N - N / 1000);  // nearly all
    }
  }
}

// ---- huge pages, options -----------------------------------------------------------------------

TEST(host_view_huge_memory) {
  using pd3::HugeMemory;
  using pd3::PageKind;
  for (bool want : {true, false}) {
    for (size_t bytes : {size_t(1), size_t(4096), (size_t(2) << 20) + 1, size_t(6) << 20}) {
      HugeMemory m = HugeMemory::map(bytes, want);
      REQUIRE(m.data() != nullptr);
      CHECK(m.bytes() >= bytes);
      CHECK(m.bytes() % (size_t(2) << 20) == 0);
      CHECK(reinterpret_cast<uintptr_t>(m.data()) % 4096 == 0);
      const PageKind k = m.kind();
      CHECK(k == PageKind::kHugeTlb || k == PageKind::kTransparent || k == PageKind::kNormal);
      if (!want) CHECK(k == PageKind::kNormal);  // documented: no huge pages asked, 4K pages
      if (bytes == 1) std::printf("  want_huge=%d: %s\n", int(want), pd3::page_kind_name(k));
      const auto* w = static_cast<const uint64_t*>(m.data());
      uint64_t nonzero = 0;
      for (size_t i = 0; i < m.bytes() / 8; ++i) nonzero += w[i] != 0;
      CHECK_EQ(nonzero, 0u);
      // Writable end to end; moves transfer ownership.
      auto* p = static_cast<uint8_t*>(m.data());
      p[0] = 1;
      p[m.bytes() - 1] = 2;
      HugeMemory moved(std::move(m));
      CHECK(m.data() == nullptr && m.bytes() == 0 && m.kind() == PageKind::kNone);
      CHECK(moved.data() == p && moved.kind() == k);
      HugeMemory assigned = HugeMemory::map(4096, false);
      assigned = std::move(moved);
      CHECK(assigned.data() == p && p[0] == 1 && p[assigned.bytes() - 1] == 2);
      assigned = std::move(assigned);  // self-move keeps the mapping
      CHECK(assigned.data() == p);
    }
  }
  HugeMemory empty;
  CHECK(empty.data() == nullptr && empty.kind() == pd3::PageKind::kNone);
  CHECK(std::strcmp(pd3::page_kind_name(pd3::PageKind::kNone), "none") == 0);
}

TEST(host_view_options_invalid) {
  auto rc_of = [](void (*tweak)(CuckooOptions&)) {
    CuckooOptions o;
    o.capacity = 1000;
    tweak(o);
    std::unique_ptr<CuckooSet> set;
    const int rc = CuckooSet::create(o, &set);
    if (rc != PD3_OK) CHECK(set == nullptr);
    return rc;
  };
  CHECK_EQ(rc_of([](CuckooOptions&) {}), PD3_OK);
  CHECK_EQ(rc_of([](CuckooOptions& o) { o.capacity = 0; }), PD3_E_INVAL);
  CHECK_EQ(rc_of([](CuckooOptions& o) { o.max_load = 0; }), PD3_E_INVAL);
  CHECK_EQ(rc_of([](CuckooOptions& o) { o.max_load = -0.5; }), PD3_E_INVAL);
  CHECK_EQ(rc_of([](CuckooOptions& o) { o.max_load = 0.981; }), PD3_E_INVAL);
  CHECK_EQ(rc_of([](CuckooOptions& o) { o.max_load = 1.0; }), PD3_E_INVAL);
  CHECK_EQ(rc_of([](CuckooOptions& o) { o.max_load = std::numeric_limits<double>::quiet_NaN(); }), PD3_E_INVAL);
  CHECK_EQ(rc_of([](CuckooOptions& o) { o.max_load = std::numeric_limits<double>::infinity(); }), PD3_E_INVAL);
  CHECK_EQ(rc_of([](CuckooOptions& o) { o.max_load = 0.98; }), PD3_OK);
  CHECK_EQ(rc_of([](CuckooOptions& o) { o.max_load = 0.01; }), PD3_OK);
  CHECK_EQ(rc_of([](CuckooOptions& o) { o.batch = 0; }), PD3_E_INVAL);
  CHECK_EQ(rc_of([](CuckooOptions& o) { o.batch = 257; }), PD3_E_INVAL);
  CHECK_EQ(rc_of([](CuckooOptions& o) { o.batch = 1; }), PD3_OK);
  CHECK_EQ(rc_of([](CuckooOptions& o) { o.batch = 256; }), PD3_OK);
  CHECK_EQ(rc_of([](CuckooOptions& o) { o.capacity = 1ull << 40; }), PD3_E_INVAL);  // > 2^32 buckets
  CHECK_EQ(rc_of([](CuckooOptions& o) { o.capacity = 1; }), PD3_OK);
  CHECK_EQ(rc_of([](CuckooOptions& o) { o.simd = static_cast<SimdPath>(99); }), PD3_E_INVAL);
  int unsupported = 0;
  for (SimdPath p : kAllPaths) {
    CuckooOptions o;
    o.capacity = 1000;
    o.simd = p;
    std::unique_ptr<CuckooSet> set;
    const int rc = CuckooSet::create(o, &set);
    CHECK_EQ(rc, pd3::simd_supported(p) ? PD3_OK : PD3_E_INVAL);
    if (rc == PD3_OK) CHECK(set->simd() == p);
    unsupported += !pd3::simd_supported(p);
  }
  CHECK(unsupported >= 1);  // NEON on x86-64, SSE4.1/AVX2 on AArch64
  {  // kBest resolves to a concrete path; capacity 1 still gets two buckets.
    CuckooOptions o;
    o.capacity = 1;
    std::unique_ptr<CuckooSet> set;
    REQUIRE(CuckooSet::create(o, &set) == PD3_OK);
    CHECK(set->simd() == pd3::best_simd_path());
    CHECK(set->buckets() >= 2);
    CHECK(set->options().capacity == 1);
  }

  // The sharded service checks its own options and passes the table's through.
  auto hv_rc = [](void (*tweak)(pd3::HostViewOptions&)) {
    pd3::HostViewOptions o;
    o.capacity = 1000;
    o.shards = 2;
    o.queue_depth = 16;
    tweak(o);
    std::unique_ptr<pd3::HostView> hv;
    const int rc = pd3::HostView::create(o, &hv);
    if (rc != PD3_OK) CHECK(hv == nullptr);
    return rc;
  };
  CHECK_EQ(hv_rc([](pd3::HostViewOptions&) {}), PD3_OK);
  CHECK_EQ(hv_rc([](pd3::HostViewOptions& o) { o.shards = 0; }), PD3_OK);  // no threads: runs inline
  CHECK_EQ(hv_rc([](pd3::HostViewOptions& o) { o.shards = 65; }), PD3_E_INVAL);
  CHECK_EQ(hv_rc([](pd3::HostViewOptions& o) { o.capacity = 0; }), PD3_E_INVAL);
  CHECK_EQ(hv_rc([](pd3::HostViewOptions& o) { o.queue_depth = 0; }), PD3_E_INVAL);
  CHECK_EQ(hv_rc([](pd3::HostViewOptions& o) { o.idle_spin_us = pd3::kMaxHostViewSpinUs; }), PD3_OK);
  CHECK_EQ(hv_rc([](pd3::HostViewOptions& o) { o.idle_spin_us = pd3::kMaxHostViewSpinUs + 1; }), PD3_E_INVAL);
  CHECK_EQ(hv_rc([](pd3::HostViewOptions& o) { o.table.max_load = 0.99; }), PD3_E_INVAL);
  CHECK_EQ(hv_rc([](pd3::HostViewOptions& o) { o.table.batch = 0; }), PD3_E_INVAL);
  CHECK_EQ(hv_rc([](pd3::HostViewOptions& o) { o.table.simd = static_cast<SimdPath>(99); }), PD3_E_INVAL);
}

// ---- key hash ----------------------------------------------------------------------------------

double chi_square(const std::vector<uint64_t>& counts, double expect) {
  double x = 0;
  for (uint64_t c : counts) x += (double(c) - expect) * (double(c) - expect) / expect;
  return x;
}

TEST(host_view_key_hash) {
  using pd3::host_view_key_hash;
  Rng rng(0x4A54);
  alignas(16) uint8_t buf[160];
  for (uint8_t& c : buf) c = uint8_t(rng.next());

  // Deterministic, independent of alignment and of bytes past `len`.
  for (size_t len = 0; len <= 100; ++len) {
    const uint64_t h = host_view_key_hash(buf, len);
    CHECK_EQ(host_view_key_hash(buf, len), h);
    uint8_t copy[128 + 8];
    for (size_t off = 1; off < 8; ++off) {
      std::memcpy(copy + off, buf, len);
      if (off + len < sizeof copy) copy[off + len] = uint8_t(~buf[len]);
      CHECK_EQ(host_view_key_hash(copy + off, len), h);
    }
  }
  // Length 0 with a valid pointer: one value, whatever the pointer.
  CHECK_EQ(host_view_key_hash(buf, 0), host_view_key_hash(buf + 1, 0));
  // An empty key may come with a null pointer (cuckoo_set.cpp guards the tail copy): same value.
  CHECK_EQ(host_view_key_hash(nullptr, 0), host_view_key_hash(buf, 0));

  // Different lengths of the same bytes (zeros too: the length seeds the hash) all differ.
  {
    uint8_t zeros[101] = {};
    std::unordered_set<uint64_t> hs;
    for (size_t len = 0; len <= 100; ++len) hs.insert(host_view_key_hash(zeros, len));
    CHECK_EQ(hs.size(), 101u);
    hs.clear();
    for (size_t len = 0; len <= 100; ++len) hs.insert(host_view_key_hash(buf, len));
    CHECK_EQ(hs.size(), 101u);
  }

  // Avalanche sanity: every single-bit flip changes the hash, by ~32 bits on average.
  for (size_t len : {1, 3, 7, 8, 9, 15, 16, 17, 31, 64, 100}) {
    const uint64_t h = host_view_key_hash(buf, len);
    uint64_t bits = 0, same = 0;
    for (size_t bit = 0; bit < len * 8; ++bit) {
      buf[bit / 8] ^= uint8_t(1u << (bit % 8));
      const uint64_t h2 = host_view_key_hash(buf, len);
      buf[bit / 8] ^= uint8_t(1u << (bit % 8));
      same += h2 == h;
      bits += uint64_t(__builtin_popcountll(h ^ h2));
    }
    const double avg = double(bits) / double(len * 8);
    CHECK_EQ(same, 0u);
    CHECK(avg > 26 && avg < 38);
  }

  // Spread: printable keys and little-endian integers over 1024 table buckets (high 32 bits, as the
  // tables use them) and 64 shards (low 32 bits, as HostView::shard_of does).
  const uint32_t keys = 262'144, B = 1024, S = 64;
  for (int kind = 0; kind < 2; ++kind) {
    std::vector<uint64_t> hb(B), ls(S);
    std::unordered_set<uint64_t> distinct;
    distinct.reserve(keys * 2);
    char s[32];
    for (uint32_t i = 0; i < keys; ++i) {
      uint64_t h;
      if (kind == 0) {
        const int n = std::snprintf(s, sizeof s, "user:%u", i);
        h = host_view_key_hash(s, size_t(n));
      } else {
        const uint64_t v = i;
        h = host_view_key_hash(&v, 8);
      }
      distinct.insert(h);
      ++hb[((h >> 32) * B) >> 32];
      ++ls[(uint64_t(uint32_t(h)) * S) >> 32];
    }
    const double xb = chi_square(hb, double(keys) / B), xs = chi_square(ls, double(keys) / S);
    std::printf("  %s keys: chi2 buckets %.0f (df %u), shards %.0f (df %u), %zu distinct of %u\n", kind ? "int" : "string", xb,
                B - 1, xs, S - 1, distinct.size(), keys);
    CHECK(xb < 1023 + 6 * std::sqrt(2.0 * 1023));  // ~6 sigma
    CHECK(xs < 63 + 6 * std::sqrt(2.0 * 63));
    CHECK_EQ(distinct.size(), size_t(keys));
  }
}

}  // namespace
