// eviction_epoch.hpp — epoch-approximated LRU (after ScaleStore, SIGMOD'22; docs/tier-policies.md):
// a global epoch advances with time, a hit stores it in the frame's last epoch (one relaxed store,
// none when it is already current), and a background sampler looks at a few thousand random frames
// per pass and queues the coldest as victim candidates. The hit path takes no lock and moves no
// list node; victim() pops a candidate that is still as cold as when it was sampled.
#pragma once

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
  // start_sampler=false: no thread; the epoch moves only by advance_epoch() and candidates come from
  // refill() or victim()'s own pass (deterministic, for tests and single-threaded replays).
  EpochPolicy(uint32_t frames, const EvictionOptions& options, bool start_sampler);
  ~EpochPolicy() override = default;  // the sampler (declared last) stops and joins first
  EpochPolicy(const EpochPolicy&) = delete;
  EpochPolicy& operator=(const EpochPolicy&) = delete;

  EvictionKind kind() const override { return EvictionKind::kEpoch; }
  void on_fill(FrameId frame) override;
  void on_hit(FrameId frame, bool write) override;
  void on_drop(FrameId frame) override;
  FrameId victim(const FrameView& view) override;

  // The global epoch (starts at 1; 0 marks an empty frame).
  uint64_t epoch() const;
  void advance_epoch();
  Temperature temperature(FrameId frame) const;
  // One sampler pass on the calling thread: samples, queues the coldest; returns how many it queued.
  uint32_t refill();
  uint32_t sample_size() const { return sample_; }
  uint32_t candidates_per_pass() const { return per_pass_; }

 private:
  // A frame queued by a pass, with the last epoch it had then: if that changed, it was used since.
  struct Candidate {
    FrameId frame;
    uint64_t epoch;
  };
  void sample_into(uint64_t* rng, std::vector<Candidate>* out) const;
  FrameId pop_valid(const FrameView& view);
  FrameId scan_all(const FrameView& view) const;
  void sampler_loop(std::stop_token stop);

  const uint32_t frames_;
  const uint32_t sample_;    // frames per pass (all of them when the pool is smaller)
  const uint32_t per_pass_;  // candidates a pass queues: the coldest eighth of the sample
  const uint64_t period_us_;
  std::unique_ptr<std::atomic<uint64_t>[]> last_;  // per frame: last epoch used, 0 = empty
  std::atomic<uint64_t> epoch_{1};
  uint64_t owner_rng_;             // victim()'s own passes
  std::vector<Candidate> taken_;   // owner's: candidates moved out of queue_, coldest at the back

  std::mutex mu_;                  // guards queue_, refill_wanted_, sampler_rng_
  std::condition_variable_any wake_;
  std::vector<Candidate> queue_;   // filled by passes, emptied by victim()
  bool refill_wanted_ = false;
  uint64_t sampler_rng_;
  std::jthread sampler_;           // last: stopped and joined before the members it uses go
};

}  // namespace pd3::tier
