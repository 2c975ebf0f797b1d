// frame_list.hpp — an intrusive doubly linked list of frame ids (a prev/next pair per frame, indexed
// by frame), the O(1) recency and arrival orders of the lru, fifo and cflru eviction policies.
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
  explicit FrameList(uint32_t frames) : links_(frames) {}

  uint32_t capacity() const { return uint32_t(links_.size()); }
  // A linked frame has a neighbour towards the head, or is the head.
  bool contains(FrameId f) const { return f < capacity() && (links_[f].prev != kNoFrame || head_ == f); }
  FrameId head() const { return head_; }  // newest, or kNoFrame
  FrameId tail() const { return tail_; }  // oldest, or kNoFrame
  FrameId prev(FrameId f) const { return links_[f].prev; }  // towards the head
  FrameId next(FrameId f) const { return links_[f].next; }  // towards the tail

  // Precondition: f < capacity() and f is not in the list.
  void push_front(FrameId f) {
    assert(f < capacity() && !contains(f));
    links_[f] = {kNoFrame, head_};
    if (head_ != kNoFrame) links_[head_].prev = f;
    head_ = f;
    if (tail_ == kNoFrame) tail_ = f;
  }

  // Puts f just towards the tail of `newer` (at the head when newer is kNoFrame).
  // Precondition: f < capacity(), f is not in the list, newer is kNoFrame or in the list.
  void insert_after(FrameId newer, FrameId f) {
    if (newer == kNoFrame) return push_front(f);
    assert(f < capacity() && !contains(f) && contains(newer));
    const FrameId n = links_[newer].next;
    links_[f] = {newer, n};
    links_[newer].next = f;
    if (n != kNoFrame) links_[n].prev = f; else tail_ = f;
  }

  // Precondition: f is in the list.
  void remove(FrameId f) {
    assert(contains(f));
    const auto [p, n] = links_[f];
    if (p != kNoFrame) links_[p].next = n; else head_ = n;
    if (n != kNoFrame) links_[n].prev = p; else tail_ = p;
    links_[f] = {kNoFrame, kNoFrame};
  }

  // Precondition: f is in the list.
  void move_to_front(FrameId f) {
    if (head_ == f) return;
    remove(f);
    push_front(f);
  }

 private:
  // One frame's neighbours, side by side: a move touches one cache line per frame, not two.
  struct Links {
    FrameId prev = kNoFrame;
    FrameId next = kNoFrame;
  };
  std::vector<Links> links_;
  FrameId head_ = kNoFrame;
  FrameId tail_ = kNoFrame;
};

}  // namespace pd3::tier
