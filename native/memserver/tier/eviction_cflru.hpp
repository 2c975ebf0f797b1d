// eviction_cflru.hpp — clean-first LRU (Park et al., CASES'06): within the window of the LRU end
// (options.cflru_window of the frames), the least recently used clean frame is the victim, so a
// write-back is paid only when the whole window is dirty; then the plain LRU choice.
#pragma once

#include "memserver/tier/eviction_policy.hpp"
#include "memserver/tier/frame_list.hpp"

namespace pd3::tier {

// LRU order plus a clean-first search of the cold end's window.
class CflruPolicy final : public EvictionPolicy {
 public:
  // window: the share of the frames searched for a clean page, clamped to (0, 1]; at least 1 frame.
  CflruPolicy(uint32_t frames, double window);
  EvictionKind kind() const override { return EvictionKind::kCflru; }
  void on_fill(FrameId frame) override { order_.push_front(frame); }
  void on_hit(FrameId frame, bool /*write*/) override { order_.move_to_front(frame); }
  void on_drop(FrameId frame) override { order_.remove(frame); }
  FrameId victim(const FrameView& view) override;
  uint32_t window_frames() const { return window_; }

 private:
  FrameList order_;  // head = most recently used
  uint32_t window_;  // frames of the LRU end searched for a clean one
};

}  // namespace pd3::tier
