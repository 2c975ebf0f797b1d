// prefetch_best_offset.hpp — Michaud's best-offset prefetcher (HPCA'16) per region: over a learning
// phase it tests candidate offsets d one per trigger access X, scoring d when X - d is in a table
// of recent requests; the best-scoring offset D becomes the prefetch offset (degree 1: X + D), or
// prefetching turns off when no offset scores above a floor. Triggers are demand misses and first
// uses of prefetched pages, as in the paper.
#pragma once

#include <array>
#include <cstdint>
#include <unordered_map>

#include "memserver/tier/prefetch_policy.hpp"

namespace pd3::tier {

// --tier-prefetch best-offset.
class BestOffsetPrefetch final : public PrefetchPolicy {
 public:
  // The paper's tuning: offsets 1..256 whose prime factors are 2, 3 and 5 (52 of them), a phase
  // ends after 100 rounds or when an offset scores 31; a best score of 1 or less turns it off.
  static constexpr uint32_t kRounds = 100;
  static constexpr uint32_t kScoreMax = 31;
  static constexpr uint32_t kBadScore = 1;
  static constexpr uint32_t kRecentEntries = 256;  // recent-requests table, direct-mapped
  static constexpr uint32_t kOffsets = 52;

  PrefetchKind kind() const override { return PrefetchKind::kBestOffset; }
  void on_access(const PageAccess& access, std::vector<uint64_t>* out) override;
  void forget(uint32_t region) override { streams_.erase(region); }

  // The offset the region prefetches at now, or 0 when it is off (or the region is unknown).
  uint64_t offset(uint32_t region) const;
  static const std::array<uint32_t, kOffsets>& offsets();

 private:
  // One region's learning state.
  struct Stream {
    std::array<uint64_t, kRecentEntries> recent{};  // page + 1 per slot, 0 = empty
    std::array<uint8_t, kOffsets> score{};
    uint32_t test = 0;    // index of the offset the next trigger tests
    uint32_t round = 0;   // complete passes over the offsets in this phase
    uint32_t best = 1;    // D
    bool on = true;
  };
  static uint32_t slot_of(uint64_t page);
  static void learn(Stream* s, uint64_t page);

  std::unordered_map<uint32_t, Stream> streams_;
};

}  // namespace pd3::tier
