// eviction_cflru.cpp — clean-first LRU (eviction_cflru.hpp).
#include "memserver/tier/eviction_cflru.hpp"

#include <algorithm>
#include <cmath>

namespace pd3::tier {

CflruPolicy::CflruPolicy(uint32_t frames, double window) : order_(frames) {
  // NaN and non-positive shares search one frame (plain LRU); shares above 1 search the whole pool.
  const double share = std::isnan(window) ? 0.0 : std::clamp(window, 0.0, 1.0);
  window_ = std::max<uint32_t>(1, uint32_t(std::ceil(share * frames)));
}

FrameId CflruPolicy::victim(const FrameView& view) {
  FrameId first_evictable = kNoFrame;
  uint32_t seen = 0;
  // The window counts positions from the LRU end, pinned frames included: it is a region of the
  // recency order, not a number of candidates.
  for (FrameId f = order_.tail(); f != kNoFrame; f = order_.prev(f)) {
    const bool in_window = seen++ < window_;
    if (!view.evictable(f)) continue;
    if (in_window && !view.dirty(f)) return f;
    if (first_evictable == kNoFrame) first_evictable = f;
    if (!in_window) break;  // past the window: the oldest evictable one, dirty or not
  }
  return first_evictable;
}

}  // namespace pd3::tier
