// frame_list.hpp — an intrusive doubly linked list of frame ids (prev/next arrays indexed by frame),
// the O(1) recency and arrival orders of the lru, fifo and cflru eviction policies.
#pragma once

#include <cassert>
#include <cstdint>
#include <vector>

#include "memserver/tier/eviction_policy.hpp"

namespace pd3::tier {

// A list of the filled frames of a pool of `frames`, head = most recently pushed. Each frame is in
// it at most once; every operation is O(1). Single-threaded (the tier's owner).
class FrameList {
 public:
  explicit FrameList(uint32_t frames) : prev_(frames, kNoFrame), next_(frames, kNoFrame), linked_(frames, 0) {}

  uint32_t capacity() const { return uint32_t(prev_.size()); }
  bool contains(FrameId f) const { return f < capacity() && linked_[f] != 0; }
  FrameId head() const { return head_; }  // newest, or kNoFrame
  FrameId tail() const { return tail_; }  // oldest, or kNoFrame
  FrameId prev(FrameId f) const { return prev_[f]; }  // towards the head
  FrameId next(FrameId f) const { return next_[f]; }  // towards the tail

  // Precondition: f < capacity() and f is not in the list.
  void push_front(FrameId f) {
    assert(f < capacity() && !linked_[f]);
    prev_[f] = kNoFrame;
    next_[f] = head_;
    if (head_ != kNoFrame) prev_[head_] = f;
    head_ = f;
    if (tail_ == kNoFrame) tail_ = f;
    linked_[f] = 1;
  }

  // Puts f just towards the tail of `newer` (at the head when newer is kNoFrame).
  // Precondition: f < capacity(), f is not in the list, newer is kNoFrame or in the list.
  void insert_after(FrameId newer, FrameId f) {
    if (newer == kNoFrame) return push_front(f);
    assert(f < capacity() && !linked_[f] && contains(newer));
    const FrameId n = next_[newer];
    prev_[f] = newer;
    next_[f] = n;
    next_[newer] = f;
    if (n != kNoFrame) prev_[n] = f; else tail_ = f;
    linked_[f] = 1;
  }

  // Precondition: f is in the list.
  void remove(FrameId f) {
    assert(contains(f));
    const FrameId p = prev_[f], n = next_[f];
    if (p != kNoFrame) next_[p] = n; else head_ = n;
    if (n != kNoFrame) prev_[n] = p; else tail_ = p;
    prev_[f] = next_[f] = kNoFrame;
    linked_[f] = 0;
  }

  // Precondition: f is in the list.
  void move_to_front(FrameId f) {
    if (head_ == f) return;
    remove(f);
    push_front(f);
  }

 private:
  std::vector<FrameId> prev_;
  std::vector<FrameId> next_;
  std::vector<uint8_t> linked_;
  FrameId head_ = kNoFrame;
  FrameId tail_ = kNoFrame;
};

}  // namespace pd3::tier
