// counting_pinner.hpp — a backend that pins nothing and counts: the simulator's backend (its counts
// feed the cost model) and the tests' (it checks that no page is ever pinned twice by one cache,
// and can be told to fail).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <unordered_map>

#include "mrrc/pinner.hpp"

namespace pd3::mrrc {

// Operation and page counts of a backend.
struct PinCounts {
  uint64_t pin_ops = 0;
  uint64_t pin_pages = 0;
  uint64_t unpin_ops = 0;    // batches: one per unpin() call
  uint64_t unpin_pages = 0;
  uint64_t pinned_pages = 0; // now
  uint64_t overlaps = 0;     // pin() of a page already pinned, or unpin() of one that is not (with tracking)
};

// Counts calls and pages. With `track_pages`, keeps every pinned page to detect overlaps (tests);
// without, only counts (the simulator, over large traces). Thread-safe (one mutex).
class CountingPinner final : public Pinner {
 public:
  explicit CountingPinner(size_t page = 4096, bool track_pages = true, size_t limit = SIZE_MAX)
      : page_(page), track_(track_pages), limit_(limit) {}

  // kOk, or kPinFailed with the errno set by fail_next_pins().
  Result pin(PageRange range) override {
    std::lock_guard lock(mu_);
    if (fail_pins_ > 0) {
      --fail_pins_;
      return {Status::kPinFailed, fail_errno_};
    }
    const uint64_t pages = range.len / page_;
    ++counts_.pin_ops;
    counts_.pin_pages += pages;
    counts_.pinned_pages += pages;
    if (track_)
      for (uintptr_t p = range.addr; p < range.end(); p += page_)
        if (++pages_[p] > 1) ++counts_.overlaps;
    return {};
  }
  // Always kOk.
  Result unpin(std::span<const PageRange> batch) override {
    std::lock_guard lock(mu_);
    ++counts_.unpin_ops;
    for (const PageRange& r : batch) {
      const uint64_t pages = r.len / page_;
      counts_.unpin_pages += pages;
      counts_.pinned_pages -= pages;
      if (!track_) continue;
      for (uintptr_t p = r.addr; p < r.end(); p += page_) {
        auto it = pages_.find(p);
        if (it == pages_.end()) {
          ++counts_.overlaps;
        } else if (--it->second == 0) {
          pages_.erase(it);
        }
      }
    }
    return {};
  }
  size_t page_size() const override { return page_; }
  size_t pin_limit() const override { return limit_; }

  // The next `n` pin() calls fail with `err`.
  void fail_next_pins(int n, int err) {
    std::lock_guard lock(mu_);
    fail_pins_ = n;
    fail_errno_ = err;
  }
  // Whether every page of `range` is pinned now (needs track_pages).
  bool covers(PageRange range) const {
    std::lock_guard lock(mu_);
    for (uintptr_t p = range.addr; p < range.end(); p += page_)
      if (pages_.find(p) == pages_.end()) return false;
    return true;
  }
  PinCounts counts() const {
    std::lock_guard lock(mu_);
    return counts_;
  }

 private:
  const size_t page_;
  const bool track_;
  const size_t limit_;
  mutable std::mutex mu_;
  PinCounts counts_;                              // guarded by mu_
  std::unordered_map<uintptr_t, uint32_t> pages_; // guarded by mu_ (track_ only)
  int fail_pins_ = 0;                             // guarded by mu_
  int fail_errno_ = 0;                            // guarded by mu_
};

}  // namespace pd3::mrrc
