// latency_histogram.hpp — a log-linear histogram of durations in nanoseconds: quantiles of a
// latency (the prefetch lead time) without keeping samples. One writer, readers on any thread.
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstdint>

namespace pd3 {

// Counts per bucket: exact below 16 ns, then 16 buckets per power of two, so a bucket's width is
// at most 1/16 of its lower bound and a quantile read from it (its midpoint) is within ±3.2%.
class LatencyHistogram {
 public:
  static constexpr uint32_t kSubBits = 4;
  static constexpr uint32_t kSub = 1u << kSubBits;            // buckets per power of two
  static constexpr uint32_t kBuckets = (64 - kSubBits + 1) * kSub;  // covers every uint64_t

  // Bucket of a value: [0, 16) exact; else the top kSubBits + 1 bits select it.
  static constexpr uint32_t bucket_of(uint64_t ns) {
    if (ns < kSub) return uint32_t(ns);
    const uint32_t msb = uint32_t(std::bit_width(ns)) - 1;  // ≥ kSubBits
    const uint32_t shift = msb - kSubBits;
    return (shift + 1) * kSub + uint32_t((ns >> shift) & (kSub - 1));
  }
  // Smallest value of a bucket.
  static constexpr uint64_t lower_bound(uint32_t bucket) {
    if (bucket < kSub) return bucket;
    const uint32_t shift = bucket / kSub - 1;
    return (uint64_t(kSub) + bucket % kSub) << shift;
  }
  // One past the largest value of a bucket (saturating at the top).
  static constexpr uint64_t upper_bound(uint32_t bucket) {
    return bucket + 1 >= kBuckets ? UINT64_MAX : lower_bound(bucket + 1);
  }

  // A copy of the counts, taken with relaxed loads (not one instant: good enough for statistics).
  struct Snapshot {
    std::array<uint64_t, kBuckets> counts{};
    uint64_t total = 0;

    // The value below which a fraction q (0..1) of the samples lie: the midpoint of the bucket
    // holding the ⌈q·total⌉-th smallest sample. 0 when empty.
    uint64_t quantile(double q) const {
      if (total == 0) return 0;
      if (q < 0) q = 0;
      if (q > 1) q = 1;
      uint64_t rank = uint64_t(q * double(total) + 0.999999);
      if (rank == 0) rank = 1;
      uint64_t seen = 0;
      for (uint32_t b = 0; b < kBuckets; ++b) {
        seen += counts[b];
        if (seen >= rank) {
          const uint64_t lo = lower_bound(b), hi = upper_bound(b);
          return hi - lo <= 1 ? lo : lo + (hi - lo) / 2;
        }
      }
      return lower_bound(kBuckets - 1);
    }
  };

  // Writer only. relaxed: a load and a store instead of a locked add — there is one writer, and a
  // count publishes no other memory.
  void record(uint64_t ns) {
    std::atomic<uint64_t>& c = counts_[bucket_of(ns)];
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  Snapshot snapshot() const {
    Snapshot s;
    for (uint32_t b = 0; b < kBuckets; ++b) {
      s.counts[b] = counts_[b].load(std::memory_order_relaxed);  // relaxed: see record()
      s.total += s.counts[b];
    }
    return s;
  }

 private:
  std::array<std::atomic<uint64_t>, kBuckets> counts_{};
};

static_assert(LatencyHistogram::bucket_of(UINT64_MAX) == LatencyHistogram::kBuckets - 1);
static_assert(LatencyHistogram::bucket_of(15) == 15 && LatencyHistogram::bucket_of(16) == 16);
static_assert(LatencyHistogram::lower_bound(LatencyHistogram::bucket_of(1000)) <= 1000 &&
              LatencyHistogram::upper_bound(LatencyHistogram::bucket_of(1000)) > 1000);

}  // namespace pd3
