// eviction_lru.hpp — least recently used: an O(1) intrusive recency list; the victim is the
// evictable frame nearest the cold end.
#pragma once

#include "memserver/tier/eviction_policy.hpp"
#include "memserver/tier/frame_list.hpp"

namespace pd3::tier {

// Exact LRU over the filled frames: a hit moves the frame to the hot end.
class LruPolicy final : public EvictionPolicy {
 public:
  explicit LruPolicy(uint32_t frames) : order_(frames) {}
  EvictionKind kind() const override { return EvictionKind::kLru; }
  void on_fill(FrameId frame) override;
  void on_hit(FrameId frame, bool write) override;
  void on_drop(FrameId frame) override;
  FrameId victim(const FrameView& view) override;

 private:
  FrameList order_;  // head = most recently used
};

}  // namespace pd3::tier
