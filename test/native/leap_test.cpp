// leap_test.cpp — the C++ Leap baseline prefetcher (native/workloads/leap.hpp): the decision digest
// test/leap.test.ts checks too (so both languages decide alike), trends, the adaptive window,
// read-around, bounds, 64-bit addresses and option errors.
#include "../../native/workloads/leap.hpp"

#include <cstring>
#include <unordered_set>
#include <vector>

#include "harness.hpp"
#include "pd3/status.h"

namespace {

using pd3::leap::Decision;
using pd3::leap::Options;
using pd3::leap::Prefetcher;
using pd3::leap::Trend;

std::unique_ptr<Prefetcher> make(const Options& o = {}) {
  std::unique_ptr<Prefetcher> p;
  if (Prefetcher::create(o, &p) != PD3_OK) std::fprintf(stderr, "  create failed: %s\n", pd3::workloads::last_error());
  return p;
}

// xorshift32, as in leap.test.ts.
struct XorShift32 {
  uint32_t x;
  uint32_t next() {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return x;
  }
};

uint64_t fnv_le(uint64_t h, uint64_t v, int width) {
  for (int i = 0; i < width; i++) h = (h ^ ((v >> (8 * i)) & 0xFF)) * 0x100000001B3ull;
  return h;
}

}  // namespace

TEST(leap_digest_matches_ts) {
  // scriptDigest in leap.test.ts: 50 phases of 200 accesses against a prefetch cache.
  Options o;
  o.address_limit = 100000;
  auto p = make(o);
  REQUIRE(p);
  XorShift32 rng{0x9E3779B9u};
  std::unordered_set<uint64_t> cache;
  std::vector<uint64_t> prefetch;
  uint64_t h = 0xCBF29CE484222325ull;
  int hits = 0, misses = 0;
  for (int phase = 0; phase < 50; phase++) {
    const uint64_t base = rng.next() % 50000 + 10000;
    for (uint64_t i = 0; i < 200; i++) {
      uint64_t addr;
      switch (phase % 5) {
        case 0: addr = base + i; break;
        case 1: addr = base + 3 * i; break;
        case 2: addr = base - 2 * i; break;
        case 3: addr = rng.next() % 100000; break;
        default: addr = i % 4 == 3 ? rng.next() % 100000 : base + 7 * i; break;
      }
      if (cache.erase(addr) != 0) {
        p->record_hit(addr);
        hits++;
        continue;
      }
      misses++;
      const Decision d = p->record_miss(addr, &prefetch);
      h = fnv_le(h, uint64_t(d.trend), 1);
      h = fnv_le(h, d.window, 4);
      h = fnv_le(h, uint64_t(d.delta), 8);
      h = fnv_le(h, prefetch.size(), 4);
      for (uint64_t a : prefetch) {
        h = fnv_le(h, a, 8);
        cache.insert(a);
      }
    }
  }
  CHECK_EQ(hits + misses, 10000);
  // Same constants as leap.test.ts: change both, and only when decisions are meant to change.
  CHECK_EQ(h, 0x2bc3f00439c7bc3dull);
  CHECK_EQ(hits, 5044);
}

TEST(leap_sequential_window_growth) {
  auto p = make();
  REQUIRE(p);
  std::vector<uint64_t> out;
  CHECK(p->record_miss(100, &out).trend == Trend::kSuspended);
  Decision d = p->record_miss(101, &out);
  CHECK(d.trend == Trend::kMajority && d.window == 1 && d.delta == 1);
  CHECK(out == std::vector<uint64_t>{102});
  uint64_t addr = 102;
  const uint32_t expected[] = {2, 4, 8, 8, 8};
  for (uint32_t want : expected) {
    const size_t n = out.size();
    for (size_t i = 0; i < n; i++) p->record_hit(addr++);
    CHECK_EQ(p->pending_hits(), n);
    d = p->record_miss(addr, &out);
    CHECK_EQ(d.window, want);
    REQUIRE(out.size() == want);
    for (uint32_t i = 0; i < want; i++) CHECK_EQ(out[i], addr + 1 + i);
    addr++;
  }
}

TEST(leap_strides_and_noise) {
  auto up = make();
  REQUIRE(up);
  std::vector<uint64_t> out;
  Decision d{};
  for (uint64_t a = 1000; a < 1030; a += 3) d = up->record_miss(a, &out);
  CHECK(d.trend == Trend::kMajority && d.delta == 3 && out == std::vector<uint64_t>{1030});
  auto down = make();
  REQUIRE(down);
  for (uint64_t a : {500, 498, 496, 494, 492}) down->record_miss(a, &out);
  down->record_hit(490);
  down->record_hit(488);
  d = down->record_miss(486, &out);
  CHECK(d.trend == Trend::kMajority && d.window == 4 && d.delta == -2);
  CHECK((out == std::vector<uint64_t>{484, 482, 480, 478}));
  // Every 5th access jumps: 9 of the newest 16 deltas are +1.
  auto noisy = make();
  REQUIRE(noisy);
  XorShift32 rng{7};
  uint64_t a = 5000;
  d = noisy->record_miss(a, &out);
  for (int i = 1; i < 42; i++) d = noisy->record_miss(i % 5 == 4 ? rng.next() % 1000000 : ++a, &out);
  const auto t = noisy->find_trend();
  CHECK(t.found && t.delta == 1 && t.span == 16);
  CHECK(d.trend == Trend::kMajority && out == std::vector<uint64_t>{a + 1});
}

TEST(leap_no_majority_and_span_growth) {
  Options small;
  small.history_size = 8;
  auto q = make(small);
  REQUIRE(q);
  std::vector<uint64_t> out;
  for (uint64_t a : {0, 1, 2, 3, 4, 5, 10, 17, 26}) q->record_miss(a, &out);  // 1 1 1 1 1 5 7 9
  auto t = q->find_trend();
  CHECK(t.found && t.delta == 1 && t.span == 8);  // not in the newest 4, in all 8
  for (uint64_t a : {100, 200, 300}) q->record_miss(a, &out);  // 1 1 5 7 9 74 100 100
  t = q->find_trend();
  CHECK(!t.found && t.span == 8);
  auto r = make();
  REQUIRE(r);
  XorShift32 rng{99};
  r->record_miss(rng.next() % 1000000, &out);
  r->record_miss(rng.next() % 1000000, &out);
  for (int i = 0; i < 100; i++) {
    const Decision d = r->record_miss(rng.next() % 1000000, &out);
    CHECK(d.trend == Trend::kSuspended && d.window == 0 && out.empty());
  }
}

TEST(leap_around_and_bounds) {
  Options o;
  o.history_size = 4;
  o.split = 1;
  auto p = make(o);
  REQUIRE(p);
  std::vector<uint64_t> out;
  for (uint64_t a : {100, 104, 108, 112, 116}) p->record_miss(a, &out);
  p->record_hit(5000);
  p->record_hit(20);
  Decision d = p->record_miss(7777, &out);
  CHECK(d.trend == Trend::kAround && d.window == 4 && d.delta == 4);
  CHECK((out == std::vector<uint64_t>{7769, 7773, 7781, 7785}));
  auto low = make(o);
  REQUIRE(low);
  for (uint64_t a : {9, 6, 3}) low->record_miss(a, &out);
  low->record_hit(50);
  low->record_hit(1);
  d = low->record_miss(2, &out);
  CHECK(d.trend == Trend::kAround && (out == std::vector<uint64_t>{5, 8}));
  // Before any trend was seen, around means the neighbours (stride 1).
  auto fresh = make();
  REQUIRE(fresh);
  fresh->record_hit(5);
  fresh->record_hit(100);
  d = fresh->record_miss(7, &out);
  CHECK(d.trend == Trend::kAround && d.delta == 1 && (out == std::vector<uint64_t>{5, 6, 8, 9}));
  // Near the top of the 64-bit space nothing wraps around.
  auto top = make();
  REQUIRE(top);
  const uint64_t hi = UINT64_MAX - 3;
  top->record_miss(hi - 1, &out);
  top->record_miss(hi, &out);
  top->record_hit(hi + 1);
  top->record_hit(hi + 2);
  d = top->record_miss(hi + 3, &out);  // UINT64_MAX itself is excluded (the limit is exclusive)
  CHECK(d.trend == Trend::kMajority && d.window == 4 && out.empty());
}

TEST(leap_bad_options) {
  std::unique_ptr<Prefetcher> p;
  auto refused = [&](Options o, const char* needle) {
    const int rc = Prefetcher::create(o, &p);
    return rc == PD3_E_INVAL && std::strstr(pd3::workloads::last_error(), needle) != nullptr;
  };
  Options o;
  o.history_size = 0;
  CHECK(refused(o, "history_size must be 1 .. 4096"));
  o.history_size = 5000;
  CHECK(refused(o, "history_size"));
  o = {};
  o.split = 0;
  CHECK(refused(o, "split must be 1 .. history_size (32)"));
  o.split = 33;
  CHECK(refused(o, "split"));
  o = {};
  o.max_window = 0;
  CHECK(refused(o, "max_window"));
  o.max_window = 4097;
  CHECK(refused(o, "max_window"));
  o = {};
  o.address_limit = 0;
  CHECK(refused(o, "address_limit"));
  CHECK(!p);
  CHECK_EQ(Prefetcher::create({}, &p), PD3_OK);
}
