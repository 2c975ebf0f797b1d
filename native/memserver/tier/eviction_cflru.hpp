// eviction_cflru.hpp — clean-first LRU (Park et al., CASES'06): within the window of the LRU end
// (options.cflru_window of the frames), the least recently used clean frame is the victim, so a
// write-back is paid only when the window holds no evictable clean frame; then the plain LRU choice.
#pragma once

#include <cstdint>
#include <vector>

#include "memserver/tier/eviction_policy.hpp"
#include "memserver/tier/frame_list.hpp"

namespace pd3::tier {

// LRU order, plus the clean frames on their own list in the same order, so the oldest clean frame
// is at hand; a recency stamp per frame against the stamp of the window's youngest frame says
// whether it lies in the window. Hits, fills, drops and victims are O(1) but for pinned frames
// skipped; on_clean of a frame that is not the newest or oldest clean one walks the clean list
// from both ends to its place: O(min(older, newer clean frames)).
class CflruPolicy final : public EvictionPolicy {
 public:
  // window: the share of the frames searched for a clean page, clamped to (0, 1]; at least 1 frame.
  CflruPolicy(uint32_t frames, double window);
  EvictionKind kind() const override { return EvictionKind::kCflru; }
  void on_fill(FrameId frame) override;
  void on_hit(FrameId frame, bool write) override;
  void on_drop(FrameId frame) override;
  void on_clean(FrameId frame) override;
  FrameId victim(const FrameView& view) override;
  uint32_t window_frames() const { return window_; }

 private:
  // Precondition: f is in order_. Whether f is among the window_ oldest frames.
  bool in_window(FrameId f) const { return stamp_[f] <= stamp_[edge_]; }
  void link_front(FrameId f);  // into order_, newest; keeps edge_
  void unlink(FrameId f);      // out of order_ and clean_; keeps edge_

  FrameList order_;              // every filled frame, head = most recently used
  FrameList clean_;              // the filled frames believed clean, in the same order
  std::vector<uint64_t> stamp_;  // per frame: its last use, a count that grows towards order_'s head
  uint64_t now_ = 0;             // the last stamp given
  FrameId edge_ = kNoFrame;      // the window's newest frame: the min(size_, window_)-th from the tail
  uint32_t size_ = 0;            // frames in order_
  uint32_t window_;              // frames of the LRU end searched for a clean one
};

}  // namespace pd3::tier
