// eviction_cflru.cpp — clean-first LRU (eviction_cflru.hpp).
#include "memserver/tier/eviction_cflru.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace pd3::tier {

CflruPolicy::CflruPolicy(uint32_t frames, double window) : order_(frames), clean_(frames), stamp_(frames, 0) {
  // NaN and non-positive shares search one frame (plain LRU); shares above 1 search the whole pool.
  const double share = std::isnan(window) ? 0.0 : std::clamp(window, 0.0, 1.0);
  window_ = std::max<uint32_t>(1, uint32_t(std::ceil(share * frames)));
}

void CflruPolicy::link_front(FrameId f) {
  stamp_[f] = ++now_;
  order_.push_front(f);
  // With fewer than window_ frames before, every frame is in the window and f is its newest.
  if (size_++ < window_) edge_ = f;
}

void CflruPolicy::unlink(FrameId f) {
  if (size_ <= window_) {
    // Every frame is in the window and edge_ is the head: the next one becomes the head.
    if (f == edge_) edge_ = order_.next(f);
  } else if (in_window(f)) {
    // The window loses f and takes in the frame just newer than its edge (there is one: size_ > window_).
    edge_ = order_.prev(edge_);
  }
  order_.remove(f);
  size_--;
  if (clean_.contains(f)) clean_.remove(f);
}

void CflruPolicy::on_fill(FrameId frame) {
  link_front(frame);
  clean_.push_front(frame);  // a page just read is clean
}

void CflruPolicy::on_hit(FrameId frame, bool write) {
  // unlink + link_front in one: with every frame in the window, the head is its edge; else a frame
  // leaving the window makes room for the one just newer than the edge.
  if (size_ <= window_) edge_ = frame;
  else if (in_window(frame)) edge_ = order_.prev(edge_);
  stamp_[frame] = ++now_;
  order_.move_to_front(frame);
  if (!clean_.contains(frame)) return;
  if (write) clean_.remove(frame);
  else clean_.move_to_front(frame);
}

void CflruPolicy::on_drop(FrameId frame) { unlink(frame); }

void CflruPolicy::on_clean(FrameId frame) {
  assert(order_.contains(frame));
  if (clean_.contains(frame)) return;
  // Its place in clean_ is just older than the oldest clean frame newer than it. Walk from both
  // ends at once, so the cost is the shorter side: a victim's write-back (the usual caller) sits
  // at the cold end.
  const uint64_t s = stamp_[frame];
  FrameId from_tail = clean_.tail();
  FrameId newer = kNoFrame, next = clean_.head();  // from the head: newer's stamp > s, next is older
  for (;;) {
    if (from_tail == kNoFrame || stamp_[from_tail] > s) {
      newer = from_tail;
      break;
    }
    from_tail = clean_.prev(from_tail);
    if (next == kNoFrame || stamp_[next] < s) break;
    newer = next;
    next = clean_.next(next);
  }
  clean_.insert_after(newer, frame);
}

FrameId CflruPolicy::victim(const FrameView& view) {
  // The oldest clean frame in the window that is evictable. A frame believed clean that the pool
  // reports dirty (a failed sync re-dirtied it) leaves clean_ for good: each is skipped once.
  for (FrameId c = clean_.tail(); c != kNoFrame && in_window(c);) {
    const FrameId newer = clean_.prev(c);
    if (view.dirty(c)) clean_.remove(c);
    else if (view.evictable(c)) return c;
    c = newer;
  }
  // No evictable clean frame in the window: the oldest evictable frame, dirty or not.
  for (FrameId f = order_.tail(); f != kNoFrame; f = order_.prev(f))
    if (view.evictable(f)) return f;
  return kNoFrame;
}

}  // namespace pd3::tier
