// eviction_epoch.hpp — epoch-approximated LRU (after ScaleStore, SIGMOD'22; docs/tier-policies.md):
// a global epoch advances with time, a hit stores it in the frame's last epoch (one relaxed store),
// and a background sampler looks at a few thousand frames (a run from a random start) per pass and
// queues the oldest share (a quarter by default) as victim candidates. The hit path
// takes no lock and moves no list node; victim() pops a candidate whose epoch is still the sampled one.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stop_token>
#include <thread>
#include <vector>

#include "memserver/tier/eviction_policy.hpp"

namespace pd3::tier {

// How recently a frame was used, relative to the global epoch g.
enum class Temperature : uint8_t {
  kEmpty,  // holds no page
  kHot,    // last epoch == g
  kWarm,   // last epoch == g - 1
  kCold,   // last epoch <  g - 1
};

// Epoch LRU. Owner-thread calls as the contract says; the sampler thread (when started) only reads
// last epochs, advances the epoch and fills the candidate queue.
class EpochPolicy final : public EvictionPolicy {
 public:
  // start_sampler=false: no thread; the epoch moves only by advance_epoch() or tick() and candidates
  // come from refill(), tick() or victim()'s own pass (deterministic: tests, and the simulator's
  // replays on a virtual clock, which call tick() once per virtual period).
  EpochPolicy(uint32_t frames, const EvictionOptions& options, bool start_sampler);
  ~EpochPolicy() override = default;  // the sampler (declared last) stops and joins first
  EpochPolicy(const EpochPolicy&) = delete;
  EpochPolicy& operator=(const EpochPolicy&) = delete;

  EvictionKind kind() const override { return EvictionKind::kEpoch; }
  void on_fill(FrameId frame) override;
  void on_hit(FrameId frame, bool write) override;
  void on_drop(FrameId frame) override;
  FrameId victim(const FrameView& view) override;

  // The global epoch (starts at 1; 0 marks an empty frame, and is skipped when the count wraps,
  // every 2^32 periods: ages are computed modulo 2^32).
  uint32_t epoch() const;
  void advance_epoch();
  Temperature temperature(FrameId frame) const;
  // One sampler pass on the calling thread: samples, queues the coldest; returns how many it queued.
  uint32_t refill();
  // One period of the sampler's work on the calling thread: advances the epoch, adapts the queue
  // depth to the owner's pace, refills the queue to it. The sampler thread calls it once per
  // period of wall time; without a sampler, the owner may call it on its own clock (the
  // simulator's virtual time). Never from two threads at once.
  void tick();
  // The queue depth tick() refills to (read it only when no sampler thread runs).
  size_t queue_depth() const { return depth_; }
  uint32_t sample_size() const { return sample_; }
  uint32_t candidates_per_pass() const { return per_pass_; }

 private:
  // A frame queued by a pass, with the last epoch it had then: if that changed, it was used since.
  struct Candidate {
    FrameId frame;
    uint32_t epoch;
  };
  // Age classes by octave: 0 (hot), 1 (warm), then b holds ages 2^(b-1) .. 2^b - 1, and the last
  // one 2^14 epochs and older. Octaves, not single epochs: at a server's pace a frame stays in the
  // pool hundreds to thousands of epochs, which single-epoch classes lumped into one.
  static constexpr uint32_t kAgeBuckets = 16;
  // An age is g - last modulo 2^32, below 2^31; from 2^31 up the owner stored an epoch newer than
  // the g a pass read: a hot frame.
  static constexpr uint32_t kAgeLimit = 1u << 31;
  static constexpr uint32_t kHistogramFrames = 256;  // about how many frames of a pass the age histogram reads
  // Epochs from `last` to `g` (0 when `last` is not older: a stale read of g).
  static uint32_t age(uint32_t g, uint32_t last);
  static uint32_t age_bucket(uint32_t g, uint32_t last);
  // One pass: writes the candidates it queues to slots[0 .. n), room for sample_; returns n.
  uint32_t sample_into(uint64_t* rng, Candidate* slots) const;
  // Appends to slots[n ..] the filled frames of run positions from .. to (the run of sample_
  // frames from `start`) whose age is at least min_age; returns the new count.
  uint32_t keep_aged(uint32_t g, FrameId start, uint32_t from, uint32_t to, uint32_t min_age, Candidate* slots, uint32_t n) const;
  // Frames per age bucket in the sample run from `start`, every stride-th one counted stride times.
  std::array<uint32_t, kAgeBuckets> histogram(uint32_t g, FrameId start, uint32_t stride) const;
  FrameId pop_valid(const FrameView& view);
  FrameId scan_all(const FrameView& view) const;
  void sampler_loop(std::stop_token stop);

  const uint32_t frames_;
  const uint32_t sample_;    // frames per pass (all of them when the pool is smaller)
  const uint32_t per_pass_;  // candidates a pass queues: the oldest epoch_share of the sample
  const uint64_t period_us_;
  // Per frame: last epoch used, 0 = empty. 32 bits: 16 frames per cache line, so the lines the
  // sampler reads and the owner writes are half as many as with 64.
  std::unique_ptr<std::atomic<uint32_t>[]> last_;
  std::atomic<uint32_t> epoch_{1};
  uint64_t owner_rng_;             // victim()'s own passes
  std::vector<Candidate> taken_;   // owner's: candidates moved out of queue_, newest pass at the back
  std::unique_ptr<Candidate[]> owner_scratch_;    // victim()'s passes write here (sample_ slots)
  std::unique_ptr<Candidate[]> sampler_scratch_;  // refill()'s passes write here (sample_ slots)

  std::mutex mu_;                  // guards queue_, drained_, sampler_rng_
  std::condition_variable_any wake_;  // only to wake the sampler early when it must stop
  std::vector<Candidate> queue_;   // filled by passes, emptied by victim()
  bool drained_ = false;           // victim() took the queue since the sampler last looked
  uint64_t sampler_rng_;
  size_t depth_;                   // tick()'s: candidates to keep queued
  std::jthread sampler_;           // last: stopped and joined before the members it uses go
};

}  // namespace pd3::tier
