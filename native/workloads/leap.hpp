// leap.hpp — the "leap" baseline prefetcher for native hosts: Leap's majority-trend detection and
// adaptive prefetch window (Maruf & Chowdhury, USENIX ATC'20, Algorithms 1–2), making the same
// decisions as workloads/leap.ts (docs/workloads.md). Header-only; create() reports bad
// options through workloads::fail, read back with pd3::workloads::last_error() (no library needed).
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <memory>
#include <vector>

#include "pd3/status.h"
#include "workload_error.hpp"

namespace pd3::leap {

inline constexpr uint32_t kMaxHistory = 4096;
inline constexpr uint32_t kMaxWindow = 4096;

// What Prefetcher::create accepts (LeapOptions in leap.ts).
struct Options {
  uint32_t history_size = 32;             // deltas kept, H
  uint32_t split = 2;                     // detection starts on the newest H/split deltas
  uint32_t max_window = 8;                // PWsize_max
  uint64_t address_limit = UINT64_MAX;    // candidates must be below this (leap.ts: 2^53)
};

// How record_miss chose its candidates (LeapTrend in leap.ts).
enum class Trend : uint8_t {
  kSuspended,  // window 0: no prefetch hits and the miss is off the trend
  kMajority,   // along the majority delta from the miss
  kAround,     // no majority now: around the miss, spaced by the last majority delta
};

// The outcome of one miss; the addresses go to the caller's vector.
struct Decision {
  Trend trend = Trend::kSuspended;
  uint32_t window = 0;  // Pwsize_t
  int64_t delta = 0;    // stride used (0 when suspended)
};

// Majority detection over the current history.
struct TrendResult {
  bool found = false;
  int64_t delta = 0;  // the majority delta when found (0: one address repeated)
  uint32_t span = 0;  // newest deltas the last vote covered
};

// Leap's prefetcher for one access stream: record_hit(addr) for an access a prefetch served,
// record_miss(addr) for one that had to be fetched. Not thread-safe: one per stream or a lock.
class Prefetcher {
 public:
  // PD3_E_INVAL with the reason in pd3_last_error() for bad options.
  static int create(const Options& options, std::unique_ptr<Prefetcher>* out) {
    if (options.history_size < 1 || options.history_size > kMaxHistory) {
      return workloads::fail(PD3_E_INVAL, "history_size must be 1 .. %u, got %u", kMaxHistory, options.history_size);
    }
    if (options.split < 1 || options.split > options.history_size) {
      return workloads::fail(PD3_E_INVAL, "split must be 1 .. history_size (%u), got %u", options.history_size, options.split);
    }
    if (options.max_window < 1 || options.max_window > kMaxWindow) {
      return workloads::fail(PD3_E_INVAL, "max_window must be 1 .. %u, got %u", kMaxWindow, options.max_window);
    }
    if (options.address_limit < 1) return workloads::fail(PD3_E_INVAL, "address_limit must be at least 1");
    out->reset(new Prefetcher(options));
    return PD3_OK;
  }

  // An access served by an earlier prefetch: grows the next window.
  void record_hit(uint64_t addr) {
    log(addr);
    if (hits_ < UINT32_MAX) hits_++;
  }

  // A demand miss on addr: logs it, adapts the window, and fills *prefetch (cleared first) with the
  // addresses to prefetch, the missed one excluded.
  Decision record_miss(uint64_t addr, std::vector<uint64_t>* prefetch) {
    prefetch->clear();
    const bool had_previous = has_last_;
    const uint64_t previous = last_;
    log(addr);
    const TrendResult trend = find_trend();
    // Zero strides go nowhere; INT64_MIN (addresses 2^63 apart) has no magnitude to walk around by.
    const bool usable = trend.found && trend.delta != 0 && trend.delta != INT64_MIN;
    if (usable) last_trend_ = trend.delta;
    // Algorithm 2, GetPrefetchWindowSize.
    uint32_t window;
    if (hits_ == 0) {
      const bool follows = usable && had_previous && int64_t(addr - previous) == trend.delta;
      window = follows ? 1 : 0;
    } else {
      window = round_up_pow2(std::min(hits_, options_.max_window - 1) + 1);
    }
    window = std::min(window, options_.max_window);
    window = std::max(window, prev_window_ / 2);  // shrink at most by half per miss
    hits_ = 0;
    prev_window_ = window;
    if (window == 0) return {Trend::kSuspended, 0, 0};
    // Algorithm 2, DoPrefetch: along the trend, or around the miss with the latest trend.
    if (usable) {
      for (int64_t k = 1; k <= int64_t(window); k++) push(prefetch, addr, k, trend.delta);
      return {Trend::kMajority, window, trend.delta};
    }
    const int64_t stride = last_trend_ < 0 ? -last_trend_ : last_trend_;
    const int64_t first = -int64_t(window / 2);
    for (int64_t k = first; k <= first + int64_t(window); k++)
      if (k != 0) push(prefetch, addr, k, stride);
    return {Trend::kAround, window, stride};
  }

  // Algorithm 1, FindTrend: Boyer–Moore vote over the newest H/split deltas, doubling the span up
  // to the whole history until a strict majority (more than half) shows up.
  TrendResult find_trend() const {
    uint32_t span = std::max<uint32_t>(1, options_.history_size / options_.split);
    for (;;) {
      const uint32_t n = std::min(span, count_);
      if (n == 0) return {};
      int64_t candidate = 0;
      uint32_t votes = 0;
      for (uint32_t i = 0; i < n; i++) {
        const int64_t d = newest(i);
        if (votes == 0) {
          candidate = d;
          votes = 1;
        } else if (d == candidate) {
          votes++;
        } else {
          votes--;
        }
      }
      uint32_t support = 0;
      for (uint32_t i = 0; i < n; i++) support += newest(i) == candidate;
      if (2 * support > n) return {true, candidate, n};
      if (n == count_ || span >= options_.history_size) return {false, 0, n};
      span = std::min(2 * span, options_.history_size);
    }
  }

  uint32_t window() const { return prev_window_; }  // Pwsize_{t-1}
  uint32_t pending_hits() const { return hits_; }   // prefetch hits since the last miss

  // Forgets the history, the hit count and the window.
  void reset() {
    head_ = count_ = hits_ = prev_window_ = 0;
    has_last_ = false;
    last_ = 0;
    last_trend_ = 1;
  }

 private:
  explicit Prefetcher(const Options& options) : options_(options), deltas_(options.history_size) {}

  void log(uint64_t addr) {
    if (has_last_) {
      deltas_[head_] = int64_t(addr - last_);  // two's-complement difference
      head_ = (head_ + 1) % options_.history_size;
      if (count_ < options_.history_size) count_++;
    }
    has_last_ = true;
    last_ = addr;
  }

  int64_t newest(uint32_t i) const {
    const uint32_t h = options_.history_size;
    return deltas_[(head_ + 2 * h - 1 - i) % h];
  }

  // addr + k·stride, if it lies in [0, address_limit) (128-bit so no step can wrap around).
  void push(std::vector<uint64_t>* out, uint64_t addr, int64_t k, int64_t stride) const {
    const __int128 c = static_cast<__int128>(addr) + static_cast<__int128>(k) * stride;
    if (c >= 0 && c < static_cast<__int128>(options_.address_limit)) out->push_back(uint64_t(c));
  }

  static uint32_t round_up_pow2(uint32_t n) {
    uint32_t p = 1;
    while (p < n) p *= 2;
    return p;
  }

  Options options_;
  std::vector<int64_t> deltas_;  // ring of the newest deltas
  uint32_t head_ = 0;            // next slot to write
  uint32_t count_ = 0;           // deltas held, <= history_size
  bool has_last_ = false;
  uint64_t last_ = 0;            // previous access
  uint32_t hits_ = 0;            // prefetch hits since the last miss (Chit)
  uint32_t prev_window_ = 0;     // Pwsize_{t-1}
  int64_t last_trend_ = 1;       // latest non-zero majority delta; read-around (1) until one is seen
};

}  // namespace pd3::leap
