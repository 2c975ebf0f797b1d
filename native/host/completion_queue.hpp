// completion_queue.hpp — a handle's finished requests, oldest first: appended in runs by the
// drainer, taken in runs by pd3_host_poll, in one vector that keeps its capacity (no allocation
// per completion, one copy per run). Not thread-safe: the handle's queue_mu guards it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "pd3/host.h"

namespace pd3 {

class CompletionQueue {
 public:
  bool empty() const { return head_ == items_.size(); }
  size_t size() const { return items_.size() - head_; }
  // Completions the queue has room for without allocating (its memory, for tests).
  size_t capacity() const { return items_.capacity(); }

  void push(const pd3_completion& c) { items_.push_back(c); }
  void push(const pd3_completion* first, size_t n) { items_.insert(items_.end(), first, first + n); }

  // Moves up to `max` of the oldest into `out`; returns how many.
  size_t pop(pd3_completion* out, size_t max) {
    const size_t n = std::min(max, size());
    if (n) std::memcpy(out, items_.data() + head_, n * sizeof(pd3_completion));
    head_ += n;
    if (head_ == items_.size()) {
      items_.clear();  // keeps the capacity
      head_ = 0;
    } else if (head_ >= kCompactAfter && head_ * 2 >= items_.size()) {
      // A queue that is never emptied (new completions arrive before the last are taken) would
      // otherwise grow for ever: drop the taken half, moving at most as many as were taken.
      items_.erase(items_.begin(), items_.begin() + ptrdiff_t(head_));
      head_ = 0;
    }
    return n;
  }

 private:
  static constexpr size_t kCompactAfter = 1024;
  std::vector<pd3_completion> items_;
  size_t head_ = 0;  // items_[0, head_) were taken
};

}  // namespace pd3
