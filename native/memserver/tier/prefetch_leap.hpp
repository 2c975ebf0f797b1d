// prefetch_leap.hpp — Leap (native/workloads/leap.hpp) per region: demand misses feed its trend
// detection and window; first uses of prefetched pages count as its prefetch hits; plain hits are
// not seen, as a page-fault handler would not see them.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "memserver/tier/prefetch_policy.hpp"
#include "workloads/leap.hpp"

namespace pd3::tier {

// --tier-prefetch leap.
class LeapPrefetch final : public PrefetchPolicy {
 public:
  // max_window is clamped to Leap's 1 .. kMaxWindow.
  explicit LeapPrefetch(uint32_t max_window);
  PrefetchKind kind() const override { return PrefetchKind::kLeap; }
  void on_access(const PageAccess& access, std::vector<uint64_t>* out) override;
  void forget(uint32_t region) override { streams_.erase(region); }
  size_t streams() const { return streams_.size(); }

 private:
  // One region's Leap, bounded by the region's page count when it was created.
  struct Stream {
    uint64_t region_pages;
    std::unique_ptr<leap::Prefetcher> leap;
  };
  Stream* stream(const PageAccess& access);

  uint32_t max_window_;
  std::unordered_map<uint32_t, Stream> streams_;
  std::vector<uint64_t> scratch_;  // record_miss clears its output; on_access appends
};

}  // namespace pd3::tier
