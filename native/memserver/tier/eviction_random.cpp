// eviction_random.cpp — random replacement (eviction_random.hpp).
#include "memserver/tier/eviction_random.hpp"

#include <cassert>

namespace pd3::tier {

RandomPolicy::RandomPolicy(uint32_t frames, uint64_t seed) : slot_(frames, kNoFrame), state_(seed) {
  filled_.reserve(frames);
}

uint64_t RandomPolicy::next_random() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void RandomPolicy::on_fill(FrameId frame) {
  assert(frame < slot_.size() && slot_[frame] == kNoFrame);
  slot_[frame] = uint32_t(filled_.size());
  filled_.push_back(frame);
}

void RandomPolicy::on_drop(FrameId frame) {
  assert(frame < slot_.size() && slot_[frame] != kNoFrame);
  const uint32_t at = slot_[frame];
  const FrameId last = filled_.back();
  filled_[at] = last;
  slot_[last] = at;
  filled_.pop_back();
  slot_[frame] = kNoFrame;
}

FrameId RandomPolicy::victim(const FrameView& view) {
  const uint64_t n = filled_.size();
  if (n == 0) return kNoFrame;
  for (uint32_t i = 0; i < kDraws; i++) {
    const FrameId f = filled_[next_random() % n];
    if (view.evictable(f)) return f;
  }
  // Most frames are pinned: search all of them from a random start, so none is favoured.
  const uint64_t start = next_random() % n;
  for (uint64_t i = 0; i < n; i++) {
    const FrameId f = filled_[(start + i) % n];
    if (view.evictable(f)) return f;
  }
  return kNoFrame;
}

}  // namespace pd3::tier
