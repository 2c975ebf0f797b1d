// eviction_fifo.hpp — first in, first out: the victim is the evictable frame filled longest ago;
// hits change nothing.
#pragma once

#include "memserver/tier/eviction_policy.hpp"
#include "memserver/tier/frame_list.hpp"

namespace pd3::tier {

// FIFO over the filled frames, in fill order.
class FifoPolicy final : public EvictionPolicy {
 public:
  explicit FifoPolicy(uint32_t frames) : order_(frames) {}
  EvictionKind kind() const override { return EvictionKind::kFifo; }
  void on_fill(FrameId frame) override { order_.push_front(frame); }
  void on_hit(FrameId /*frame*/, bool /*write*/) override {}
  void on_drop(FrameId frame) override { order_.remove(frame); }
  FrameId victim(const FrameView& view) override;

 private:
  FrameList order_;  // head = filled last
};

}  // namespace pd3::tier
