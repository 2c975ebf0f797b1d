// eviction_epoch.cpp — epoch-approximated LRU (eviction_epoch.hpp).
#include "memserver/tier/eviction_epoch.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <chrono>

namespace pd3::tier {

namespace {

uint64_t splitmix(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

uint32_t EpochPolicy::age(uint32_t g, uint32_t last) {
  const uint32_t d = g - last;  // modulo 2^32
  return int32_t(d) < 0 ? 0 : d;
}

uint32_t EpochPolicy::age_bucket(uint32_t g, uint32_t last) { return std::min(age(g, last), kAgeBuckets - 1); }

EpochPolicy::EpochPolicy(uint32_t frames, const EvictionOptions& options, bool start_sampler)
    : frames_(frames),
      sample_(std::min(std::max<uint32_t>(options.epoch_sample, 1), frames)),
      per_pass_(std::max<uint32_t>(1, std::min(std::max<uint32_t>(options.epoch_sample, 1), frames) / 4)),
      period_us_(std::max<uint32_t>(options.epoch_period_us, 1)),
      last_(new std::atomic<uint32_t>[frames]),
      owner_rng_(options.seed),
      sampler_rng_(options.seed ^ 0xA5A5A5A5DEADBEEFull),
      depth_(per_pass_) {
  assert(frames >= 1);
  // relaxed: no thread runs yet; the thread's start below synchronises these stores with it.
  for (uint32_t f = 0; f < frames; f++) last_[f].store(0, std::memory_order_relaxed);
  if (start_sampler) sampler_ = std::jthread([this](std::stop_token stop) { sampler_loop(stop); });
}

uint32_t EpochPolicy::epoch() const {
  // relaxed: the epoch orders nothing else; a reader one epoch behind only ages frames less.
  return epoch_.load(std::memory_order_relaxed);
}

void EpochPolicy::advance_epoch() {
  // relaxed: as epoch(); the sampler thread is the only writer once it runs (tests call this
  // without one).
  if (epoch_.fetch_add(1, std::memory_order_relaxed) + 1 == 0) epoch_.fetch_add(1, std::memory_order_relaxed);
}

void EpochPolicy::on_fill(FrameId frame) {
  assert(frame < frames_);
  // relaxed: the last epoch is a hint the sampler reads for ranking; victim() revalidates every
  // candidate on this thread, so a sampler seeing an older value picks a worse victim, never a
  // wrong one.
  last_[frame].store(epoch(), std::memory_order_relaxed);
}

void EpochPolicy::on_hit(FrameId frame, bool /*write*/) {
  assert(frame < frames_);
  const uint32_t now = epoch();
  // relaxed, both: as on_fill. Storing only when the epoch moved keeps the line clean (shared with
  // the sampler's cache) for the many hits within one epoch.
  if (last_[frame].load(std::memory_order_relaxed) != now) last_[frame].store(now, std::memory_order_relaxed);
}

void EpochPolicy::on_drop(FrameId frame) {
  assert(frame < frames_);
  // relaxed: as on_fill; a pass that still sees the old epoch queues a candidate victim() rejects.
  last_[frame].store(0, std::memory_order_relaxed);
}

Temperature EpochPolicy::temperature(FrameId frame) const {
  // relaxed: as on_fill.
  const uint32_t last = last_[frame].load(std::memory_order_relaxed);
  if (last == 0) return Temperature::kEmpty;
  const uint32_t a = age(epoch(), last);
  return a == 0 ? Temperature::kHot : a == 1 ? Temperature::kWarm : Temperature::kCold;
}

void EpochPolicy::sample_into(uint64_t* rng, std::vector<Candidate>* seen_buffer, std::vector<Candidate>* out) const {
  // Frames are ranked by age = g - last epoch, in kAgeBuckets classes (the oldest one open-ended):
  // a counting sort, O(sample), where a comparison sort made each pass cost more than the
  // evictions it serves.
  const uint32_t g = epoch();
  std::array<uint32_t, kAgeBuckets> count{};
  std::vector<Candidate>& seen = *seen_buffer;
  seen.clear();
  // The sample is sample_ consecutive frames from a random start (wrapping): which frame a page
  // lands in has nothing to do with its age, so a random run is as fair as scattered picks, and
  // reading it in order costs a few cache lines instead of one miss per frame.
  const FrameId start = sample_ == frames_ ? 0 : FrameId(splitmix(rng) % frames_);
  for (uint32_t i = 0; i < sample_; i++) {
    const FrameId f = start + i < frames_ ? start + i : start + i - frames_;
    // relaxed: as on_fill.
    const uint32_t last = last_[f].load(std::memory_order_relaxed);
    if (last == 0) continue;
    seen.push_back({f, last});
    count[age_bucket(g, last)]++;
  }
  // The oldest buckets that hold per_pass_ frames; hot frames (bucket 0) only if nothing is older.
  uint32_t taken = 0, lowest = kAgeBuckets;
  while (lowest > 1 && taken < per_pass_) taken += count[--lowest];
  if (taken == 0) {
    lowest = 0;
    taken = count[0];
  }
  // Place the chosen frames youngest first, so the oldest end up at the back, where victim() pops;
  // the youngest chosen bucket is cut to fill exactly per_pass_ (or all of it when short).
  const uint32_t keep = std::min(taken, per_pass_);
  const uint32_t cut = count[lowest] - (taken - keep);
  std::array<uint32_t, kAgeBuckets> at{};
  uint32_t pos = uint32_t(out->size());
  for (uint32_t b = lowest; b < kAgeBuckets; b++) {
    at[b] = pos;
    pos += b == lowest ? cut : count[b];
  }
  out->resize(pos);
  uint32_t placed_lowest = 0;
  for (const Candidate& c : seen) {
    const uint32_t b = age_bucket(g, c.epoch);
    if (b < lowest || (b == lowest && placed_lowest++ >= cut)) continue;
    (*out)[at[b]++] = c;
  }
}

uint32_t EpochPolicy::refill() {
  std::vector<Candidate> fresh;
  uint64_t rng;
  {
    std::lock_guard lock(mu_);
    rng = sampler_rng_;
    sampler_rng_ = splitmix(&rng);
  }
  // refill() runs on the sampler thread, or on a test's thread with no sampler: never two at once.
  sample_into(&rng, &sampler_seen_, &fresh);
  std::lock_guard lock(mu_);
  // On top of the older ones: the newest pass saw the newest epochs.
  queue_.insert(queue_.end(), fresh.begin(), fresh.end());
  return uint32_t(fresh.size());
}

FrameId EpochPolicy::pop_valid(const FrameView& view) {
  while (!taken_.empty()) {
    const Candidate c = taken_.back();
    taken_.pop_back();
    // relaxed: as on_fill (this is the owner thread, which wrote the value itself).
    const uint32_t last = last_[c.frame].load(std::memory_order_relaxed);
    if (last != 0 && last == c.epoch && view.evictable(c.frame)) return c.frame;
  }
  return kNoFrame;
}

FrameId EpochPolicy::scan_all(const FrameView& view) const {
  const uint32_t g = epoch();
  FrameId best = kNoFrame;
  uint32_t best_age = 0;
  for (FrameId f = 0; f < frames_; f++) {
    // relaxed: as on_fill.
    const uint32_t last = last_[f].load(std::memory_order_relaxed);
    if (last == 0 || !view.evictable(f)) continue;
    if (best == kNoFrame || age(g, last) > best_age) {
      best = f;
      best_age = age(g, last);
    }
  }
  return best;
}

FrameId EpochPolicy::victim(const FrameView& view) {
  FrameId f = pop_valid(view);
  if (f != kNoFrame) return f;
  {
    std::lock_guard lock(mu_);
    taken_.swap(queue_);  // taken_ was empty: queue_ is left empty
    drained_ = true;
  }
  f = pop_valid(view);
  if (f != kNoFrame) return f;
  // The sampler is behind (or absent): one pass here, as it would have made.
  sample_into(&owner_rng_, &owner_seen_, &taken_);
  f = pop_valid(view);
  if (f != kNoFrame) return f;
  // The sample held nothing evictable (most frames pinned, or the pool nearly empty).
  return scan_all(view);
}

void EpochPolicy::tick() {
  advance_epoch();
  // Candidates to keep queued: adapted each period to the owner's pace, so the sampler runs once
  // per period (no wake-up per eviction) and the owner rarely has to sample itself.
  const size_t max_depth = std::max<size_t>(per_pass_, frames_ / 8);
  size_t queued;
  bool drained;
  {
    std::lock_guard lock(mu_);
    queued = queue_.size();
    drained = drained_;
    drained_ = false;
  }
  // Ran dry within the period: twice as deep; more than half left over: half as deep.
  if (drained) depth_ = std::min(depth_ * 2, max_depth);
  else if (queued > depth_ / 2) depth_ = std::max<size_t>(depth_ / 2, per_pass_);
  while (queued < depth_) {
    const uint32_t added = refill();
    if (added == 0) break;  // nothing filled to sample
    queued += added;
  }
}

void EpochPolicy::sampler_loop(std::stop_token stop) {
  using Clock = std::chrono::steady_clock;
  const auto period = std::chrono::microseconds(period_us_);
  auto next_tick = Clock::now() + period;
  while (!stop.stop_requested()) {
    {
      std::unique_lock lock(mu_);
      wake_.wait_until(lock, stop, next_tick, [] { return false; });  // sleeps a period, or until stopped
    }
    if (stop.stop_requested()) break;
    next_tick = Clock::now() + period;
    tick();
  }
}

}  // namespace pd3::tier
