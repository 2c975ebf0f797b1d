// eviction_random.hpp — random replacement: the victim is a uniformly drawn filled frame (seeded,
// so a run is reproducible), redrawn a few times if it is not evictable, then searched for.
#pragma once

#include <cstdint>
#include <vector>

#include "memserver/tier/eviction_policy.hpp"

namespace pd3::tier {

// Random over the filled frames, kept in a dense array for O(1) draws, fills and drops.
class RandomPolicy final : public EvictionPolicy {
 public:
  RandomPolicy(uint32_t frames, uint64_t seed);
  EvictionKind kind() const override { return EvictionKind::kRandom; }
  void on_fill(FrameId frame) override;
  void on_hit(FrameId /*frame*/, bool /*write*/) override {}
  void on_drop(FrameId frame) override;
  FrameId victim(const FrameView& view) override;

 private:
  static constexpr uint32_t kDraws = 8;  // random draws before the linear search
  uint64_t next_random();

  std::vector<FrameId> filled_;    // the filled frames, any order
  std::vector<uint32_t> slot_;     // frame -> index in filled_, or kNoFrame
  uint64_t state_;                 // splitmix64 state
};

}  // namespace pd3::tier
