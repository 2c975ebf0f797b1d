// eviction_epoch.cpp — epoch-approximated LRU (eviction_epoch.hpp).
#include "memserver/tier/eviction_epoch.hpp"

#include <algorithm>
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

EpochPolicy::EpochPolicy(uint32_t frames, const EvictionOptions& options, bool start_sampler)
    : frames_(frames),
      sample_(std::min(std::max<uint32_t>(options.epoch_sample, 1), frames)),
      per_pass_(std::max<uint32_t>(1, std::min(std::max<uint32_t>(options.epoch_sample, 1), frames) / 8)),
      period_us_(std::max<uint32_t>(options.epoch_period_us, 1)),
      last_(new std::atomic<uint64_t>[frames]),
      owner_rng_(options.seed),
      sampler_rng_(options.seed ^ 0xA5A5A5A5DEADBEEFull) {
  assert(frames >= 1);
  // relaxed: no thread runs yet; the thread's start below synchronises these stores with it.
  for (uint32_t f = 0; f < frames; f++) last_[f].store(0, std::memory_order_relaxed);
  if (start_sampler) sampler_ = std::jthread([this](std::stop_token stop) { sampler_loop(stop); });
}

uint64_t EpochPolicy::epoch() const {
  // relaxed: the epoch orders nothing else; a reader one epoch behind only ages frames less.
  return epoch_.load(std::memory_order_relaxed);
}

void EpochPolicy::advance_epoch() {
  // relaxed: as epoch(); the sampler thread is the only writer once it runs (tests call this
  // without one).
  epoch_.fetch_add(1, std::memory_order_relaxed);
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
  const uint64_t now = epoch();
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
  const uint64_t last = last_[frame].load(std::memory_order_relaxed);
  if (last == 0) return Temperature::kEmpty;
  const uint64_t g = epoch();
  if (last >= g) return Temperature::kHot;
  return last + 1 == g ? Temperature::kWarm : Temperature::kCold;
}

void EpochPolicy::sample_into(uint64_t* rng, std::vector<Candidate>* out) const {
  std::vector<Candidate> seen;
  seen.reserve(sample_);
  for (uint32_t i = 0; i < sample_; i++) {
    // A pool no larger than the sample is read whole, in order; a larger one at random (repeats
    // are harmless: victim() rejects a frame whose page already left).
    const FrameId f = sample_ == frames_ ? i : FrameId(splitmix(rng) % frames_);
    // relaxed: as on_fill.
    const uint64_t last = last_[f].load(std::memory_order_relaxed);
    if (last != 0) seen.push_back({f, last});
  }
  const size_t keep = std::min<size_t>(per_pass_, seen.size());
  auto colder = [](const Candidate& a, const Candidate& b) { return a.epoch < b.epoch || (a.epoch == b.epoch && a.frame < b.frame); };
  std::partial_sort(seen.begin(), seen.begin() + keep, seen.end(), colder);
  seen.resize(keep);
  // Hot frames (used in the current epoch) are queued only when the sample held nothing older.
  const uint64_t g = epoch();
  if (!seen.empty() && seen.front().epoch < g)
    seen.erase(std::find_if(seen.begin(), seen.end(), [g](const Candidate& c) { return c.epoch >= g; }), seen.end());
  // Coldest last: victim() pops from the back.
  out->insert(out->end(), seen.rbegin(), seen.rend());
}

uint32_t EpochPolicy::refill() {
  std::vector<Candidate> fresh;
  uint64_t rng;
  {
    std::lock_guard lock(mu_);
    rng = sampler_rng_;
    sampler_rng_ = splitmix(&rng);
  }
  sample_into(&rng, &fresh);
  std::lock_guard lock(mu_);
  // The new candidates go under the older ones, which were colder when taken.
  queue_.insert(queue_.begin(), fresh.begin(), fresh.end());
  refill_wanted_ = false;
  return uint32_t(fresh.size());
}

FrameId EpochPolicy::pop_valid(const FrameView& view) {
  while (!taken_.empty()) {
    const Candidate c = taken_.back();
    taken_.pop_back();
    // relaxed: as on_fill (this is the owner thread, which wrote the value itself).
    const uint64_t last = last_[c.frame].load(std::memory_order_relaxed);
    if (last != 0 && last == c.epoch && view.evictable(c.frame)) return c.frame;
  }
  return kNoFrame;
}

FrameId EpochPolicy::scan_all(const FrameView& view) const {
  FrameId best = kNoFrame;
  uint64_t best_epoch = UINT64_MAX;
  for (FrameId f = 0; f < frames_; f++) {
    // relaxed: as on_fill.
    const uint64_t last = last_[f].load(std::memory_order_relaxed);
    if (last != 0 && last < best_epoch && view.evictable(f)) {
      best = f;
      best_epoch = last;
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
    refill_wanted_ = true;
  }
  wake_.notify_one();
  f = pop_valid(view);
  if (f != kNoFrame) return f;
  // The sampler is behind (or absent): one pass here, as it would have made.
  sample_into(&owner_rng_, &taken_);
  f = pop_valid(view);
  if (f != kNoFrame) return f;
  // The sample held nothing evictable (most frames pinned, or the pool nearly empty).
  return scan_all(view);
}

void EpochPolicy::sampler_loop(std::stop_token stop) {
  using Clock = std::chrono::steady_clock;
  const auto period = std::chrono::microseconds(period_us_);
  auto next_tick = Clock::now() + period;
  while (!stop.stop_requested()) {
    bool wanted;
    {
      std::unique_lock lock(mu_);
      wake_.wait_until(lock, stop, next_tick, [this] { return refill_wanted_; });
      wanted = refill_wanted_ || queue_.size() < per_pass_;
    }
    if (stop.stop_requested()) break;
    const auto now = Clock::now();
    if (now >= next_tick) {
      advance_epoch();
      next_tick = now + period;
    }
    if (wanted) refill();
  }
}

}  // namespace pd3::tier
