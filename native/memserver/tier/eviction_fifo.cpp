// eviction_fifo.cpp — FIFO (eviction_fifo.hpp).
#include "memserver/tier/eviction_fifo.hpp"

namespace pd3::tier {

FrameId FifoPolicy::victim(const FrameView& view) {
  for (FrameId f = order_.tail(); f != kNoFrame; f = order_.prev(f))
    if (view.evictable(f)) return f;
  return kNoFrame;
}

}  // namespace pd3::tier
