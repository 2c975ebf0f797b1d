// eviction_epoch.cpp — epoch-approximated LRU (eviction_epoch.hpp).
#include "memserver/tier/eviction_epoch.hpp"

#include <algorithm>
#include <array>
#include <bit>
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

// The candidates a pass of `sample` frames queues: `share` of them (a share outside (0, 1] is
// clamped to it), at least one.
uint32_t queued_per_pass(uint32_t sample, double share) {
  const double s = share > 0 ? std::min(share, 1.0) : 0;  // NaN -> 0
  return std::clamp<uint32_t>(uint32_t(double(sample) * s), 1, sample);
}

}  // namespace

uint32_t EpochPolicy::age(uint32_t g, uint32_t last) {
  const uint32_t d = g - last;  // modulo 2^32
  return int32_t(d) < 0 ? 0 : d;
}

uint32_t EpochPolicy::age_bucket(uint32_t g, uint32_t last) {
  return std::min<uint32_t>(uint32_t(std::bit_width(age(g, last))), kAgeBuckets - 1);
}

EpochPolicy::EpochPolicy(uint32_t frames, const EvictionOptions& options, bool start_sampler)
    : frames_(frames),
      sample_(std::min(std::max<uint32_t>(options.epoch_sample, 1), frames)),
      per_pass_(queued_per_pass(sample_, options.epoch_share)),
      period_us_(std::max<uint32_t>(options.epoch_period_us, 1)),
      last_(new std::atomic<uint32_t>[frames]),
      owner_rng_(options.seed),
      owner_scratch_(new Candidate[sample_]),
      sampler_scratch_(new Candidate[sample_]),
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
  // relaxed, both: as on_fill. Stored on every hit: at a server's pace an epoch spans about a
  // hundred accesses, so "store only when the epoch moved" stored on most hits anyway and its
  // branch was mispredicted on about one hit in three (callgrind, bench tier's zipfian replay).
  // A store of the value the line already holds costs the sampler nothing more: its cached copy
  // is invalidated at the first store after its read either way.
  last_[frame].store(epoch(), std::memory_order_relaxed);
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

uint32_t EpochPolicy::sample_into(uint64_t* rng, Candidate* slots) const {
  // Frames are ranked by age = g - last epoch, in kAgeBuckets octaves (the oldest one open-ended).
  // A histogram of part of the run finds the age above which the oldest per_pass_ frames lie; one
  // read of the whole run then keeps the frames past it, branch-free, in run order. (A counting
  // sort of the whole run, read twice and placed by bucket, cost ~50 instructions per frame and
  // a mispredicted branch on most; the order it gave the queue did not change the hit ratio.)
  const uint32_t g = epoch();
  // The sample is sample_ consecutive frames from a random start (wrapping): which frame a page
  // lands in has nothing to do with its age, so a random run is as fair as scattered picks, and
  // reading it in order costs a few cache lines instead of one miss per frame.
  const FrameId start = sample_ == frames_ ? 0 : FrameId(splitmix(rng) % frames_);
  std::array<uint32_t, kAgeBuckets> count = histogram(g, start, std::max<uint32_t>(1, sample_ / kHistogramFrames));
  // The oldest buckets that hold per_pass_ frames; hot frames (bucket 0) only if nothing is older.
  uint32_t taken = 0, lowest = kAgeBuckets;
  while (lowest > 1 && taken < per_pass_) taken += count[--lowest];
  if (taken == 0) {
    // Nothing older than hot in the part counted: count every frame before taking hot ones, so
    // that a few old frames the stride stepped over are not passed over for hot ones.
    count = histogram(g, start, 1);
    lowest = kAgeBuckets;
    while (lowest > 1 && taken < per_pass_) taken += count[--lowest];
    if (taken == 0) {
      lowest = 0;
      taken = count[0];
    }
  }
  // Every frame of an older bucket is kept, and `wanted` of the youngest chosen one (by the
  // histogram's estimate), which holds ages lo .. hi - 1.
  const uint32_t keep = std::min(taken, per_pass_);
  const uint32_t wanted = count[lowest] - (taken - keep);
  const uint32_t lo = lowest == 0 ? 0 : 1u << (lowest - 1);
  const uint32_t hi = lowest == kAgeBuckets - 1 ? kAgeLimit : 1u << lowest;
  // Where a frame lies in the run says nothing of its age, so the youngest chosen bucket's frames
  // are spread evenly over the run: those in its first `cut` positions are about `wanted`. Each
  // part is then one comparison per frame (age at least lo, then at least hi), no count to carry.
  const uint32_t cut = count[lowest] == 0 ? 0 : uint32_t((uint64_t(sample_) * wanted + count[lowest] - 1) / count[lowest]);
  uint32_t n = keep_aged(g, start, 0, std::min(cut, sample_), lo, slots, 0);
  n = keep_aged(g, start, std::min(cut, sample_), sample_, hi, slots, n);
  if (n > 0 && n >= keep / 2) return n;
  // Far fewer than estimated (or none): ages follow frame order in this run (frames filled in
  // order, as in a pool's first minutes). Counted out exactly instead: the first `wanted` of the
  // bucket in the run.
  n = 0;
  uint32_t wanted_left = wanted;
  for (uint32_t k = 0; k < sample_; k++) {
    const FrameId f = start + k < frames_ ? start + k : start + k - frames_;
    // relaxed: as on_fill.
    const uint32_t last = last_[f].load(std::memory_order_relaxed);
    const uint32_t d = g - last;
    if (last == 0) continue;
    const bool older = d - hi < kAgeLimit - hi;
    const bool boundary = !older && d - lo < hi - lo && wanted_left != 0;
    wanted_left -= uint32_t(boundary);
    if (older || boundary) slots[n++] = {f, last};
  }
  return n;
}

uint32_t EpochPolicy::keep_aged(uint32_t g, FrameId start, uint32_t from, uint32_t to, uint32_t min_age, Candidate* slots,
                                uint32_t n) const {
  const uint32_t span = kAgeLimit - min_age;  // ages min_age .. 2^31 - 1: d - min_age below span
  while (from < to) {
    // The run positions from .. to as frames, up to the end of the pool at a time (the run wraps).
    const FrameId begin = start + from < frames_ ? start + from : start + from - frames_;
    const FrameId end = begin + std::min(to - from, frames_ - begin);
    for (FrameId f = begin; f < end; f++) {
      // relaxed: as on_fill.
      const uint32_t last = last_[f].load(std::memory_order_relaxed);
      slots[n] = {f, last};  // written always, kept when old enough: no branch to mispredict
      n += uint32_t((last != 0) & (g - last - min_age < span));
    }
    from += end - begin;
  }
  return n;
}

std::array<uint32_t, EpochPolicy::kAgeBuckets> EpochPolicy::histogram(uint32_t g, FrameId start, uint32_t stride) const {
  // Four tables used in turn: neighbouring frames mostly share a bucket, and with one table each
  // increment would wait for the store of the one before. Slot kAgeBuckets: empty frames.
  std::array<std::array<uint32_t, kAgeBuckets + 1>, 4> tables{};
  uint32_t i = 0;
  for (uint32_t k = 0; k < sample_; k += stride, i++) {
    const FrameId f = start + k < frames_ ? start + k : start + k - frames_;
    // relaxed: as on_fill.
    const uint32_t last = last_[f].load(std::memory_order_relaxed);
    tables[i & 3][last == 0 ? kAgeBuckets : age_bucket(g, last)]++;
  }
  std::array<uint32_t, kAgeBuckets> count{};
  for (uint32_t b = 0; b < kAgeBuckets; b++) count[b] = (tables[0][b] + tables[1][b] + tables[2][b] + tables[3][b]) * stride;
  return count;
}

uint32_t EpochPolicy::refill() {
  uint64_t rng;
  {
    std::lock_guard lock(mu_);
    rng = sampler_rng_;
    sampler_rng_ = splitmix(&rng);
  }
  // refill() runs on the sampler thread, or on a test's thread with no sampler: never two at once.
  const uint32_t n = sample_into(&rng, sampler_scratch_.get());
  std::lock_guard lock(mu_);
  // On top of the older ones: the newest pass saw the newest epochs.
  queue_.insert(queue_.end(), sampler_scratch_.get(), sampler_scratch_.get() + n);
  return n;
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
  const uint32_t n = sample_into(&owner_rng_, owner_scratch_.get());
  taken_.assign(owner_scratch_.get(), owner_scratch_.get() + n);
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
  // Ran dry within the period: twice as deep; more than half left over: half as deep, down to one
  // candidate, not one pass's worth: queued candidates age, and about a fifth of them were used
  // before their turn when the floor was a pass (bench tier, zipfian); one pass still refills it.
  if (drained) depth_ = std::min(depth_ * 2, max_depth);
  else if (queued > depth_ / 2) depth_ = std::max<size_t>(depth_ / 2, 1);
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
