// eviction_lru.cpp — LRU (eviction_lru.hpp).
#include "memserver/tier/eviction_lru.hpp"

namespace pd3::tier {

void LruPolicy::on_fill(FrameId frame) { order_.push_front(frame); }

void LruPolicy::on_hit(FrameId frame, bool /*write*/) { order_.move_to_front(frame); }

void LruPolicy::on_drop(FrameId frame) { order_.remove(frame); }

FrameId LruPolicy::victim(const FrameView& view) {
  // Pinned or in-flight frames are skipped, not reordered: they keep their recency.
  for (FrameId f = order_.tail(); f != kNoFrame; f = order_.prev(f))
    if (view.evictable(f)) return f;
  return kNoFrame;
}

}  // namespace pd3::tier
