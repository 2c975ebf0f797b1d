// client_latency.hpp — request latencies in a log-linear histogram (16 sub-buckets per power of
// two: percentiles within about 6%), cheap enough to record every request, mergeable across threads.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace pd3::hashmap {

// Counts of latencies in nanoseconds.
class LatencyHistogram {
 public:
  void record(uint64_t ns) {
    ++counts_[bucket(ns)];
    ++total_;
  }

  void merge(const LatencyHistogram& o) {
    for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += o.counts_[i];
    total_ += o.total_;
  }

  uint64_t count() const { return total_; }

  // The latency (ns, the bucket's upper edge) below which a fraction q of the samples lie.
  uint64_t percentile(double q) const {
    if (total_ == 0) return 0;
    const uint64_t want = uint64_t(q * double(total_ - 1)) + 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < counts_.size(); ++i) {
      seen += counts_[i];
      if (seen >= want) return upper(i);
    }
    return upper(counts_.size() - 1);
  }

 private:
  static constexpr unsigned kSubBits = 4;

  static size_t bucket(uint64_t ns) {
    if (ns < (1u << kSubBits)) return size_t(ns);
    const unsigned top = 63u - unsigned(std::countl_zero(ns));  // ≥ kSubBits
    const uint64_t sub = (ns >> (top - kSubBits)) & ((1u << kSubBits) - 1);
    return size_t((top - kSubBits + 1) << kSubBits) + size_t(sub);
  }

  static uint64_t upper(size_t b) {
    if (b < (1u << kSubBits)) return b;
    const unsigned top = unsigned(b >> kSubBits) + kSubBits - 1;
    const uint64_t sub = b & ((1u << kSubBits) - 1);
    return ((uint64_t(1) << kSubBits) + sub + 1) << (top - kSubBits);
  }

  std::array<uint64_t, (64 - kSubBits + 1) << kSubBits> counts_{};
  uint64_t total_ = 0;
};

}  // namespace pd3::hashmap
