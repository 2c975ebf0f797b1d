// tier_policy_test.cpp — the SSD tier's eviction policies (native/memserver/tier/eviction_*.cpp)
// against reference models on crafted and random sequences, the epoch policy's defining properties
// (deterministic passes, then a stress run with its sampler thread), the prefetchers on crafted
// streams, and the --evict / --tier-prefetch names.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <list>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "harness.hpp"
#include "memserver/tier/eviction_cflru.hpp"
#include "memserver/tier/eviction_epoch.hpp"
#include "memserver/tier/eviction_policy.hpp"
#include "memserver/tier/frame_pool.hpp"
#include "memserver/tier/prefetch_best_offset.hpp"
#include "memserver/tier/prefetch_leap.hpp"
#include "memserver/tier/prefetch_policy.hpp"

namespace {

using namespace pd3::tier;

// The pool's answers, set by the test.
struct TestView final : FrameView {
  explicit TestView(uint32_t frames) : pinned(frames, false), dirty_(frames, false) {}
  bool evictable(FrameId f) const override { return !pinned[f]; }
  bool dirty(FrameId f) const override { return dirty_[f]; }
  std::vector<bool> pinned;
  std::vector<bool> dirty_;
};

// Reference for lru / fifo / cflru: a plain list, front = newest, searched linearly.
struct ListModel {
  EvictionKind kind;
  uint32_t window;  // cflru
  std::list<FrameId> order;

  void fill(FrameId f) { order.push_front(f); }
  void hit(FrameId f) {
    if (kind == EvictionKind::kFifo) return;
    order.remove(f);
    order.push_front(f);
  }
  void drop(FrameId f) { order.remove(f); }
  FrameId victim(const TestView& v) const {
    if (kind == EvictionKind::kCflru) {
      uint32_t pos = 0;
      for (auto it = order.rbegin(); it != order.rend() && pos < window; ++it, ++pos)
        if (v.evictable(*it) && !v.dirty(*it)) return *it;
    }
    for (auto it = order.rbegin(); it != order.rend(); ++it)
      if (v.evictable(*it)) return *it;
    return kNoFrame;
  }
};

// Random operations on a policy and its model, checking every victim() against the model's.
void replay_against_model(EvictionKind kind, uint32_t frames, uint64_t seed, int steps) {
  EvictionOptions options;
  options.cflru_window = 0.25;
  auto policy = make_eviction_policy(kind, frames, options);
  ListModel model{kind, std::max<uint32_t>(1, uint32_t((frames + 3) / 4)), {}};
  if (kind == EvictionKind::kCflru) CHECK_EQ(static_cast<CflruPolicy*>(policy.get())->window_frames(), model.window);
  TestView view(frames);
  std::vector<bool> filled(frames, false);
  std::mt19937_64 rng(seed);
  int mismatches = 0;
  for (int step = 0; step < steps; step++) {
    const FrameId f = FrameId(rng() % frames);
    switch (rng() % 6) {
      case 0:
      case 1:
        if (!filled[f]) {
          policy->on_fill(f);
          model.fill(f);
          filled[f] = true;
        } else {
          const bool write = rng() % 3 == 0;
          if (write) view.dirty_[f] = true;
          policy->on_hit(f, write);
          model.hit(f);
        }
        break;
      case 2: view.pinned[f] = !view.pinned[f]; break;
      case 3: {
        // A page becomes clean only by a write-back, which the pool reports (on_clean); it may
        // become dirty without a write hit (a failed sync re-dirties it), which it does not report.
        const bool dirty = rng() % 2 == 0;
        const bool cleaned = view.dirty_[f] && !dirty;
        view.dirty_[f] = dirty;
        if (cleaned && filled[f]) policy->on_clean(f);
        break;
      }
      case 4:
        if (filled[f] && rng() % 4 == 0) {
          policy->on_drop(f);
          model.drop(f);
          filled[f] = false;
        }
        break;
      default: {
        const FrameId want = model.victim(view);
        const FrameId got = policy->victim(view);
        if (got != want) mismatches++;
        if (got != kNoFrame && rng() % 2 == 0) {
          policy->on_drop(got);
          model.drop(got);
          filled[got] = false;
          view.dirty_[got] = false;
        }
      }
    }
  }
  CHECK_EQ(mismatches, 0);
}

}  // namespace

TEST(tier_policy_names_round_trip_and_reject_others) {
  for (EvictionKind k : {EvictionKind::kLru, EvictionKind::kFifo, EvictionKind::kRandom, EvictionKind::kCflru, EvictionKind::kEpoch}) {
    EvictionKind back = EvictionKind::kLru;
    CHECK(parse_eviction_kind(eviction_kind_name(k), &back));
    CHECK(back == k);
    auto p = make_eviction_policy(k, 4, {});
    CHECK(p->kind() == k);
  }
  for (PrefetchKind k : {PrefetchKind::kNone, PrefetchKind::kNextN, PrefetchKind::kBestOffset, PrefetchKind::kLeap}) {
    PrefetchKind back = PrefetchKind::kNone;
    CHECK(parse_prefetch_kind(prefetch_kind_name(k), &back));
    CHECK(back == k);
    CHECK(make_prefetch_policy(k, {})->kind() == k);
  }
  EvictionKind e = EvictionKind::kFifo;
  for (const char* bad : {"", "LRU", "lru ", "clock", "epoch\n", "lfu"}) CHECK(!parse_eviction_kind(bad, &e));
  CHECK(e == EvictionKind::kFifo);  // untouched on failure
  PrefetchKind p = PrefetchKind::kLeap;
  for (const char* bad : {"", "next_n", "nextn", "Leap", "best offset", "none "}) CHECK(!parse_prefetch_kind(bad, &p));
  CHECK(p == PrefetchKind::kLeap);
}

TEST(tier_policy_lru_crafted) {
  auto lru = make_eviction_policy(EvictionKind::kLru, 4, {});
  TestView view(4);
  CHECK_EQ(lru->victim(view), kNoFrame);  // nothing filled
  for (FrameId f = 0; f < 4; f++) lru->on_fill(f);
  lru->on_hit(0, false);  // order (new -> old): 0 3 2 1
  CHECK_EQ(lru->victim(view), 1u);
  view.pinned[1] = true;
  CHECK_EQ(lru->victim(view), 2u);
  lru->on_hit(2, true);
  CHECK_EQ(lru->victim(view), 3u);
  lru->on_drop(3);
  CHECK_EQ(lru->victim(view), 0u);
  view.pinned = {true, true, true, true};
  CHECK_EQ(lru->victim(view), kNoFrame);
}

TEST(tier_policy_fifo_ignores_hits) {
  auto fifo = make_eviction_policy(EvictionKind::kFifo, 3, {});
  TestView view(3);
  for (FrameId f : {2u, 0u, 1u}) fifo->on_fill(f);
  for (int i = 0; i < 5; i++) fifo->on_hit(2, false);
  CHECK_EQ(fifo->victim(view), 2u);
  fifo->on_drop(2);
  CHECK_EQ(fifo->victim(view), 0u);
  fifo->on_fill(2);
  fifo->on_drop(0);
  CHECK_EQ(fifo->victim(view), 1u);
}

TEST(tier_policy_cflru_prefers_clean_in_window_only) {
  EvictionOptions o;
  o.cflru_window = 0.5;
  auto cf = make_eviction_policy(EvictionKind::kCflru, 8, o);
  TestView view(8);
  for (FrameId f = 0; f < 8; f++) cf->on_fill(f);  // LRU end: 0 1 2 3 | 4 5 6 7
  for (FrameId f : {0u, 1u, 2u}) view.dirty_[f] = true;
  CHECK_EQ(cf->victim(view), 3u);  // the oldest clean frame within the window
  view.dirty_[3] = true;
  CHECK_EQ(cf->victim(view), 0u);  // window all dirty: plain LRU, even though 4 is clean
  view.pinned[0] = true;
  CHECK_EQ(cf->victim(view), 1u);
  // Odd shares round up; nonsense shares clamp.
  CHECK_EQ(CflruPolicy(10, 0.25).window_frames(), 3u);
  CHECK_EQ(CflruPolicy(10, -1).window_frames(), 1u);
  CHECK_EQ(CflruPolicy(10, 7).window_frames(), 10u);
}

TEST(tier_policy_list_policies_match_reference_on_random_sequences) {
  for (EvictionKind k : {EvictionKind::kLru, EvictionKind::kFifo, EvictionKind::kCflru})
    for (uint32_t frames : {1u, 2u, 7u, 64u})
      for (uint64_t seed = 1; seed <= 4; seed++) replay_against_model(k, frames, seed * 7919 + frames, 4000);
  // Larger pools: long clean lists, so on_clean's walk from both ends finds places in the middle.
  for (uint32_t frames : {257u, 1024u})
    for (uint64_t seed = 1; seed <= 3; seed++) replay_against_model(EvictionKind::kCflru, frames, seed * 104729 + frames, 40000);
}

TEST(tier_policy_cflru_on_clean_puts_the_page_back_in_its_recency_place) {
  EvictionOptions o;
  o.cflru_window = 0.5;
  auto cf = make_eviction_policy(EvictionKind::kCflru, 8, o);
  TestView view(8);
  for (FrameId f = 0; f < 8; f++) cf->on_fill(f);  // LRU end: 0 1 2 3 | 4 5 6 7
  for (FrameId f : {1u, 0u, 2u, 3u, 4u, 5u}) {       // written: LRU end 6 7 1 0 | 2 3 4 5
    view.dirty_[f] = true;
    cf->on_hit(f, true);
  }
  CHECK_EQ(cf->victim(view), 6u);
  view.pinned[6] = view.pinned[7] = true;
  CHECK_EQ(cf->victim(view), 1u);  // no evictable clean frame in the window: the oldest evictable
  // 3 is cleaned first, but it lies outside the window: still the plain LRU choice.
  view.dirty_[3] = false;
  cf->on_clean(3);
  CHECK_EQ(cf->victim(view), 1u);
  // 0's write-back completes after 3's: clean at its own recency place (older than 2..5, newer
  // than 6, 7, 1), not as the newest clean frame, so it is in the window and the choice.
  view.dirty_[0] = false;
  cf->on_clean(0);
  CHECK_EQ(cf->victim(view), 0u);
  cf->on_drop(0);  // window now 6 7 1 2: still nothing clean and evictable in it
  CHECK_EQ(cf->victim(view), 1u);
  cf->on_drop(1);  // 6 7 2 3: 3 is in the window
  CHECK_EQ(cf->victim(view), 3u);
  // A page believed clean that the pool reports dirty again (a failed sync) is passed over.
  view.dirty_[3] = true;
  CHECK_EQ(cf->victim(view), 2u);
  cf->on_clean(3);  // written back again: clean, and in the window
  view.dirty_[3] = false;
  CHECK_EQ(cf->victim(view), 3u);
}

TEST(tier_policy_frame_pool_reports_cleanings_not_drops) {
  // The pool's side of on_clean: a filled frame whose page goes from dirty to clean is reported
  // (the tier forwards it to its policy); setting a clean page clean, or emptying a dirty frame, is not.
  std::unique_ptr<FramePool> pool;
  CHECK_EQ(FramePool::create(4, 4096, &pool), PD3_OK);
  std::vector<FrameId> cleaned;
  pool->cleaned = [&](FrameId f) { cleaned.push_back(f); };
  auto file = std::make_shared<RegionFile>();
  file->pages.assign(4, kNoFrame);
  for (uint64_t page = 0; page < 2; page++) {
    const FrameId f = pool->take_free();
    pool->assign(f, file, page, false);
    pool->set_dirty(f, false);  // loading and clean: nothing
    pool->fill(f);
  }
  const FrameId a = file->pages[0], b = file->pages[1];
  pool->set_dirty(a, false);
  CHECK(cleaned.empty());
  pool->set_dirty(a, true);
  pool->set_dirty(b, true);
  CHECK_EQ(pool->dirty(), 2u);
  pool->set_dirty(a, false);  // a's write-back completed
  CHECK_EQ(cleaned.size(), 1u);
  CHECK_EQ(cleaned[0], a);
  pool->at(b).state = Frame::State::kWriting;  // a write-back in flight still holds the page
  pool->set_dirty(b, false);
  CHECK_EQ(cleaned.size(), 2u);
  pool->at(b).state = Frame::State::kResident;
  pool->set_dirty(b, true);
  pool->empty(b);  // evicted dirty (its region freed): gone, not cleaned
  CHECK_EQ(cleaned.size(), 2u);
  CHECK_EQ(pool->dirty(), 0u);
}

TEST(tier_policy_random_is_valid_seeded_and_spread) {
  const uint32_t frames = 16;
  TestView view(frames);
  EvictionOptions o;
  o.seed = 42;
  auto a = make_eviction_policy(EvictionKind::kRandom, frames, o);
  auto b = make_eviction_policy(EvictionKind::kRandom, frames, o);
  CHECK_EQ(a->victim(view), kNoFrame);
  for (FrameId f = 0; f < frames; f++) {
    a->on_fill(f);
    b->on_fill(f);
  }
  for (FrameId f = 0; f < frames; f += 2) view.pinned[f] = true;
  std::vector<int> count(frames, 0);
  bool same = true;
  for (int i = 0; i < 8000; i++) {
    const FrameId v = a->victim(view);
    same = same && v == b->victim(view);
    REQUIRE(v != kNoFrame);
    CHECK(!view.pinned[v]);
    count[v]++;
  }
  CHECK(same);
  for (FrameId f = 1; f < frames; f += 2) CHECK(count[f] > 700 && count[f] < 1300);  // 1000 expected each
  // Dropped frames are never chosen; all pinned -> none.
  for (FrameId f = 1; f < frames; f += 2)
    if (f != 5) a->on_drop(f);
  for (int i = 0; i < 100; i++) CHECK_EQ(a->victim(view), 5u);
  view.pinned[5] = true;
  CHECK_EQ(a->victim(view), kNoFrame);
}

// Fills every frame of `ep` (frames 0..frames-1), then lets `epochs` epochs pass.
static void fill_and_age(EpochPolicy& ep, uint32_t frames, int epochs) {
  for (FrameId f = 0; f < frames; f++) ep.on_fill(f);
  for (int e = 0; e < epochs; e++) ep.advance_epoch();
}

TEST(tier_policy_epoch_classes_and_victims_deterministic) {
  const uint32_t frames = 64;
  EvictionOptions o;
  EpochPolicy ep(frames, o, /*start_sampler=*/false);
  TestView view(frames);
  CHECK_EQ(ep.epoch(), 1u);
  CHECK(ep.temperature(0) == Temperature::kEmpty);
  CHECK_EQ(ep.victim(view), kNoFrame);
  fill_and_age(ep, frames, 1);
  for (FrameId f = 0; f < 32; f++) ep.on_hit(f, false);
  ep.advance_epoch();
  for (FrameId f = 0; f < 16; f++) ep.on_hit(f, false);
  CHECK(ep.temperature(3) == Temperature::kHot);
  CHECK(ep.temperature(20) == Temperature::kWarm);
  CHECK(ep.temperature(40) == Temperature::kCold);
  // Victims come cold first, then warm, then hot; never a pinned frame.
  view.pinned[33] = view.pinned[17] = true;
  std::vector<FrameId> order;
  for (;;) {
    const FrameId v = ep.victim(view);
    if (v == kNoFrame) break;
    CHECK(!view.pinned[v]);
    order.push_back(v);
    ep.on_drop(v);
  }
  REQUIRE(order.size() == frames - 2);
  for (size_t i = 0; i < order.size(); i++) {
    const FrameId v = order[i];
    if (i < 31) CHECK(v >= 32);
    else if (i < 46) CHECK(v >= 16 && v < 32);
    else CHECK(v < 16);
  }
}

TEST(tier_policy_epoch_rejects_candidates_used_since_sampling) {
  const uint32_t frames = 16;
  EvictionOptions o;
  EpochPolicy ep(frames, o, false);
  TestView view(frames);
  fill_and_age(ep, frames, 1);
  for (FrameId f = 2; f < frames; f++) ep.on_hit(f, false);  // 0 and 1 stay old
  CHECK_EQ(ep.candidates_per_pass(), 4u);                    // 16 / 4
  CHECK_EQ(ep.refill(), 2u);                                 // queues 0 and 1 (not the hot ones)
  ep.on_hit(0, false);                                       // 0 is used after the pass
  ep.on_drop(1);                                             // 1 leaves
  ep.advance_epoch();
  for (FrameId f = 3; f < frames; f++) ep.on_hit(f, false);  // now 0 and 2 are the oldest
  const FrameId v = ep.victim(view);
  CHECK(v == 0 || v == 2);  // a fresh pass's choice, not a stale queued one
  CHECK(ep.temperature(v) == Temperature::kWarm);
}

TEST(tier_policy_epoch_samples_large_pools) {
  // A pool four times the sample: victims must still be cold frames (10% of the pool).
  const uint32_t frames = 8192;
  EvictionOptions o;
  o.epoch_sample = 2048;
  o.seed = 9;
  EpochPolicy ep(frames, o, false);
  TestView view(frames);
  fill_and_age(ep, frames, 2);
  for (FrameId f = 0; f < frames; f++)
    if (f % 10 != 0) ep.on_hit(f, false);
  CHECK_EQ(ep.sample_size(), 2048u);
  for (int i = 0; i < 400; i++) {
    const FrameId v = ep.victim(view);
    REQUIRE(v != kNoFrame);
    CHECK(v % 10 == 0);
    ep.on_drop(v);
  }
}

TEST(tier_policy_epoch_tick_is_the_samplers_period_on_the_callers_clock) {
  // What the simulator's virtual clock drives: one tick = one period of the sampler thread.
  EvictionOptions o;
  o.epoch_sample = 256;  // 64 candidates per pass; the depth may grow to 1024 / 8 = 128
  constexpr uint32_t frames = 1024;
  EpochPolicy ep(frames, o, false);
  TestView view(frames);
  for (FrameId f = 0; f < frames; f++) ep.on_fill(f);
  CHECK_EQ(ep.epoch(), 1u);
  CHECK_EQ(ep.queue_depth(), 64u);
  ep.tick();  // epoch 2; the queue was empty: one pass queues 64 warm frames
  CHECK_EQ(ep.epoch(), 2u);
  CHECK_EQ(ep.queue_depth(), 64u);
  for (FrameId f = 0; f < frames; f += 2) ep.on_hit(f, false);  // even frames hot now
  for (int i = 0; i < 20; i++) {
    const FrameId v = ep.victim(view);  // from the tick's candidates: never one used since
    CHECK(v != kNoFrame && v % 2 == 1);
    CHECK(ep.temperature(v) == Temperature::kWarm);
    ep.on_drop(v);
    ep.on_fill(v);
  }
  ep.tick();  // victim() took the queue within the period: twice as deep, refilled to it
  CHECK_EQ(ep.epoch(), 3u);
  CHECK_EQ(ep.queue_depth(), 128u);
  ep.tick();  // nothing taken, more than half left: half as deep again
  CHECK_EQ(ep.epoch(), 4u);
  CHECK_EQ(ep.queue_depth(), 64u);
  // The queued frames are revalidated: after a hit on every frame none is a victim until a pass
  // sees them cold again, and victim()'s own pass then finds only hot ones (all of the same age).
  for (FrameId f = 0; f < frames; f++) ep.on_hit(f, false);
  const FrameId v = ep.victim(view);
  CHECK(v != kNoFrame && ep.temperature(v) == Temperature::kHot);
}

// A pool of `frames` frames, each hit in its own epoch in `order` (order[e] is hit in epoch e + 2),
// so frame order[e] ends with age frames - e. Returns the epoch each frame was last used in.
static std::vector<uint32_t> age_one_frame_per_epoch(EpochPolicy& ep, const std::vector<FrameId>& order) {
  std::vector<uint32_t> used(order.size());
  for (FrameId f = 0; f < order.size(); f++) ep.on_fill(f);
  for (const FrameId f : order) {
    ep.advance_epoch();
    ep.on_hit(f, false);
    used[f] = ep.epoch();
  }
  ep.advance_epoch();
  return used;
}

// A pool of 1,024 frames, each used once, in `order` (one epoch apart), then one pass of the whole
// pool: it queues about the oldest quarter (256), and every frame it queues lies in the octave of
// ages 512 .. 1024.
static void check_pass_queues_the_oldest_octave(const std::vector<FrameId>& order) {
  const uint32_t frames = 1024;
  EvictionOptions o;
  o.epoch_sample = frames;
  EpochPolicy ep(frames, o, false);
  TestView view(frames);
  const std::vector<uint32_t> used = age_one_frame_per_epoch(ep, order);
  const uint32_t g = ep.epoch();
  const uint32_t queued = ep.refill();
  CHECK(queued >= 256 / 2 && queued <= 2 * 256);
  for (uint32_t i = 0; i < queued; i++) {
    const FrameId v = ep.victim(view);
    REQUIRE(v != kNoFrame);
    CHECK(g - used[v] >= 512);
    ep.on_drop(v);
  }
}

TEST(tier_policy_epoch_ranks_ages_far_beyond_sixteen_epochs) {
  // Ages 1 .. 1024, frames shuffled: not any frame 15 or more epochs old, as single-epoch classes
  // capped at 15 ranked them.
  std::vector<FrameId> order(1024);
  for (FrameId f = 0; f < order.size(); f++) order[f] = f;
  std::shuffle(order.begin(), order.end(), std::mt19937(3));
  check_pass_queues_the_oldest_octave(order);
}

TEST(tier_policy_epoch_pass_counts_out_when_age_follows_frame_order) {
  // Frame 1023 oldest (a pool filled and used in frame order): the youngest chosen octave lies at
  // the end of the run, where a cut by run position finds 2 of it (frames 511 and 1023); the pass
  // counts them out instead.
  std::vector<FrameId> order(1024);
  for (FrameId f = 0; f < order.size(); f++) order[f] = FrameId(order.size()) - 1 - f;
  check_pass_queues_the_oldest_octave(order);
}

TEST(tier_policy_epoch_pass_wanting_one_frame_still_finds_it) {
  // One candidate per pass (a share of 1/512) and ages following frame order (frame f has age
  // f + 1, frame 511 age 1): the run position that should hold the one wanted frame of the oldest
  // octave (256 .. 511) holds only young frames, so a pass counts it out: frame 255, age 256.
  const uint32_t frames = 512;
  EvictionOptions o;
  o.epoch_sample = frames;
  o.epoch_share = 1.0 / frames;
  EpochPolicy ep(frames, o, false);
  TestView view(frames);
  CHECK_EQ(ep.candidates_per_pass(), 1u);
  std::vector<FrameId> order;
  for (FrameId f = frames - 1; f-- > 0;) order.push_back(f);  // 510 first (oldest) .. 0
  order.push_back(frames - 1);
  const std::vector<uint32_t> used = age_one_frame_per_epoch(ep, order);
  CHECK_EQ(ep.refill(), 1u);
  const FrameId v = ep.victim(view);
  REQUIRE(v != kNoFrame);
  CHECK(ep.epoch() - used[v] >= 256);
}

TEST(tier_policy_epoch_share_sets_candidates_per_pass) {
  const uint32_t frames = 4096;
  const struct {
    double share;
    uint32_t per_pass;
  } cases[] = {{0.25, 512}, {0.5, 1024}, {1.0, 2048}, {0.125, 256}, {1e-9, 1}, {0.0, 1}, {-1.0, 1}, {7.0, 2048}, {std::nan(""), 1}};
  for (const auto& c : cases) {
    EvictionOptions o;
    o.epoch_sample = 2048;
    o.epoch_share = c.share;
    EpochPolicy ep(frames, o, false);
    CHECK_EQ(ep.candidates_per_pass(), c.per_pass);
  }
  // The sample is capped at the pool, and the share applies to what is sampled.
  EvictionOptions o;
  o.epoch_sample = 2048;
  o.epoch_share = 0.5;
  EpochPolicy small(100, o, false);
  CHECK_EQ(small.sample_size(), 100u);
  CHECK_EQ(small.candidates_per_pass(), 50u);
}

TEST(tier_policy_epoch_share_half_queues_half_of_a_cold_sample) {
  // Half the frames cold, half warm, interleaved; share 1/2: the pass queues exactly the cold ones.
  const uint32_t frames = 512;
  EvictionOptions o;
  o.epoch_sample = frames;
  o.epoch_share = 0.5;
  EpochPolicy ep(frames, o, false);
  TestView view(frames);
  fill_and_age(ep, frames, 3);
  for (FrameId f = 0; f < frames; f += 2) ep.on_hit(f, false);
  CHECK_EQ(ep.refill(), frames / 2);
  for (uint32_t i = 0; i < frames / 2; i++) {
    const FrameId v = ep.victim(view);
    REQUIRE(v != kNoFrame);
    CHECK(v % 2 == 1);
    ep.on_drop(v);
  }
}

TEST(tier_policy_epoch_stress_with_sampler_thread) {
  // The owner fills, hits, pins and evicts (pages 4x the frames) while the sampler advances epochs
  // and refills its queue; every victim must be a filled, unpinned frame.
  const uint32_t frames = 4096;
  const uint32_t pages = 4 * frames;
  EvictionOptions o;
  o.epoch_sample = 1024;
  o.epoch_period_us = 50;
  auto policy = make_eviction_policy(EvictionKind::kEpoch, frames, o);
  auto* ep = static_cast<EpochPolicy*>(policy.get());
  TestView view(frames);
  std::vector<FrameId> frame_of(pages, kNoFrame);
  std::vector<uint32_t> page_in(frames, UINT32_MAX);
  std::vector<FrameId> free_frames;
  for (FrameId f = 0; f < frames; f++) free_frames.push_back(f);
  std::mt19937_64 rng(5);
  uint64_t evictions = 0, bad = 0, none = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(400);
  while (std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < 1000; i++) {
      // Skewed: half the accesses go to the first eighth of the pages.
      const uint32_t page = uint32_t(rng() % 2 ? rng() % (pages / 8) : rng() % pages);
      if (rng() % 64 == 0) {
        const FrameId f = FrameId(rng() % frames);
        view.pinned[f] = !view.pinned[f];
      }
      if (frame_of[page] != kNoFrame) {
        policy->on_hit(frame_of[page], rng() % 4 == 0);
        continue;
      }
      FrameId into;
      if (!free_frames.empty()) {
        into = free_frames.back();
        free_frames.pop_back();
      } else {
        into = policy->victim(view);
        if (into == kNoFrame) {
          none++;
          continue;
        }
        if (page_in[into] == UINT32_MAX || view.pinned[into]) bad++;
        policy->on_drop(into);
        frame_of[page_in[into]] = kNoFrame;
        evictions++;
      }
      policy->on_fill(into);
      page_in[into] = page;
      frame_of[page] = into;
    }
  }
  CHECK_EQ(bad, 0u);
  CHECK_EQ(none, 0u);  // about half the frames are unpinned at any time
  CHECK(evictions > 1000);
  CHECK(ep->epoch() > 2);  // the sampler advanced it with time
}

// ---- prefetchers -------------------------------------------------------------------------------

namespace {

std::vector<uint64_t> access(PrefetchPolicy* p, uint32_t region, uint64_t page, uint64_t pages, bool miss, bool prefetched = false) {
  std::vector<uint64_t> out{777777};  // on_access appends: the sentinel must survive
  p->on_access({region, page, pages, miss, prefetched}, &out);
  CHECK_EQ(out.front(), 777777u);
  out.erase(out.begin());
  return out;
}

}  // namespace

TEST(tier_prefetch_none_and_next_n) {
  auto none = make_prefetch_policy(PrefetchKind::kNone, {});
  CHECK(access(none.get(), 1, 5, 100, true).empty());
  PrefetchOptions o;
  o.next_n = 3;
  auto nn = make_prefetch_policy(PrefetchKind::kNextN, o);
  CHECK((access(nn.get(), 1, 5, 100, true) == std::vector<uint64_t>{6, 7, 8}));
  CHECK(access(nn.get(), 1, 6, 100, false).empty());  // a plain hit
  CHECK((access(nn.get(), 1, 6, 100, false, true) == std::vector<uint64_t>{7, 8, 9}));
  CHECK((access(nn.get(), 1, 97, 99, true) == std::vector<uint64_t>{98}));  // bounded by the region
  CHECK(access(nn.get(), 1, 98, 99, true).empty());
  CHECK(access(nn.get(), 1, UINT64_MAX, UINT64_MAX, true).empty());  // no wrap past 2^64
}

TEST(tier_prefetch_best_offset_learns_stride_and_turns_off_on_random) {
  BestOffsetPrefetch bo;
  const uint64_t pages = 1 << 20;
  // Stride 3 (misses until prefetching starts, then first uses of prefetched pages).
  std::set<uint64_t> prefetched;
  uint64_t useful = 0;
  for (uint64_t i = 0; i < 20000; i++) {
    const uint64_t page = 3 * i;
    const bool was = prefetched.count(page) != 0;
    useful += was;
    for (uint64_t q : access(&bo, 7, page, pages, !was, was)) {
      CHECK(q < pages && q != page);
      prefetched.insert(q);
    }
  }
  CHECK_EQ(bo.offset(7), 3u);
  CHECK(useful > 18000);  // all but the first learning phase (31 rounds of 52 offsets)
  // Random pages in another region: no offset scores, prefetching turns off there only.
  std::mt19937_64 rng(3);
  for (int i = 0; i < 20000; i++) access(&bo, 8, rng() % pages, pages, true);
  CHECK_EQ(bo.offset(8), 0u);
  CHECK_EQ(bo.offset(7), 3u);
  bo.forget(7);
  CHECK_EQ(bo.offset(7), 0u);
  CHECK_EQ(bo.offsets().size(), 52u);
  CHECK_EQ(bo.offsets().back(), 256u);
}

TEST(tier_prefetch_leap_follows_trend_and_forgets) {
  LeapPrefetch lp(8);
  const uint64_t pages = 100000;
  std::set<uint64_t> prefetched;
  uint64_t useful = 0, issued = 0;
  for (uint64_t i = 0; i < 2000; i++) {
    const uint64_t page = 10 + 5 * i;
    const bool was = prefetched.count(page) != 0;
    useful += was;
    for (uint64_t q : access(&lp, 1, page, pages, !was, was)) {
      CHECK(q < pages && q != page);
      CHECK((q - 10) % 5 == 0);  // along the stride
      prefetched.insert(q);
      issued++;
    }
  }
  CHECK(useful > 1700);  // a miss, then a window of 8 prefetched pages: 8/9 of the stream
  CHECK(issued > 0);
  // Random misses: Leap suspends (window 0) most of the time.
  std::mt19937_64 rng(11);
  uint64_t random_issued = 0;
  for (int i = 0; i < 2000; i++) random_issued += access(&lp, 2, rng() % pages, pages, true).size();
  CHECK(random_issued < 400);
  CHECK_EQ(lp.streams(), 2u);
  lp.forget(1);
  CHECK_EQ(lp.streams(), 1u);
  // Bounds: a region of 4 pages, pages at the end, never a candidate at or past the end.
  for (uint64_t i = 0; i < 50; i++)
    for (uint64_t q : access(&lp, 3, i % 4, 4, true)) CHECK(q < 4);
  CHECK(access(&lp, 4, 9, 4, true).empty());  // a page outside its region: ignored
}

TEST(tier_prefetch_fuzz_candidates_stay_in_region) {
  std::mt19937_64 rng(77);
  for (PrefetchKind k : {PrefetchKind::kNextN, PrefetchKind::kBestOffset, PrefetchKind::kLeap}) {
    auto p = make_prefetch_policy(k, {});
    for (int i = 0; i < 30000; i++) {
      const uint32_t region = uint32_t(rng() % 5);
      const uint64_t pages = 1 + region * 37 + (region == 4 ? UINT64_MAX / 2 : 0);
      const uint64_t page = rng() % 3 == 0 ? pages - 1 - rng() % std::min<uint64_t>(pages, 3) : rng() % pages;
      const bool miss = rng() % 2 == 0;
      for (uint64_t q : access(p.get(), region, page, pages, miss, !miss && rng() % 2 == 0)) {
        CHECK(q < pages);
        CHECK(q != page);
      }
      if (rng() % 1000 == 0) p->forget(region);
    }
  }
}
