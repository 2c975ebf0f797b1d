// latency_histogram_test.cpp — LatencyHistogram: bucket bounds, quantile accuracy, a concurrent reader.
#include <algorithm>
#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "common/latency_histogram.hpp"
#include "harness.hpp"

using pd3::LatencyHistogram;

TEST(latency_histogram_buckets_tile_the_range) {
  // Every bucket starts where the previous one ended, and each holds exactly its own values.
  for (uint32_t b = 1; b < LatencyHistogram::kBuckets; ++b) {
    CHECK_EQ(LatencyHistogram::lower_bound(b), LatencyHistogram::upper_bound(b - 1));
    CHECK_EQ(LatencyHistogram::bucket_of(LatencyHistogram::lower_bound(b)), b);
    CHECK_EQ(LatencyHistogram::bucket_of(LatencyHistogram::lower_bound(b) - 1), b - 1);
  }
  // Relative width never above 1/16 past the exact range.
  for (uint32_t b = LatencyHistogram::kSub; b + 1 < LatencyHistogram::kBuckets; ++b) {
    const uint64_t lo = LatencyHistogram::lower_bound(b), hi = LatencyHistogram::upper_bound(b);
    CHECK((hi - lo) * 16 <= lo);
  }
}

TEST(latency_histogram_quantiles_are_within_bucket_error) {
  LatencyHistogram h;
  CHECK_EQ(h.snapshot().quantile(0.5), 0u);  // empty
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(9.0, 1.0);  // ~8 µs median, long tail
  std::vector<uint64_t> samples(100000);
  for (auto& s : samples) {
    s = uint64_t(dist(rng));
    h.record(s);
  }
  std::sort(samples.begin(), samples.end());
  const auto snap = h.snapshot();
  CHECK_EQ(snap.total, samples.size());
  for (double q : {0.01, 0.5, 0.9, 0.99, 1.0}) {
    const uint64_t exact = samples[std::max<size_t>(1, size_t(q * double(samples.size()) + 0.999999)) - 1];
    const uint64_t got = snap.quantile(q);
    CHECK(got * 1000 >= exact * 967 && got * 1000 <= exact * 1033);
  }
  CHECK_EQ(snap.quantile(-1), snap.quantile(0));  // out-of-range q is clamped
  CHECK_EQ(snap.quantile(7), snap.quantile(1));
}

TEST(latency_histogram_small_values_are_exact) {
  LatencyHistogram h;
  for (uint64_t v = 0; v < 16; ++v) h.record(v);
  const auto snap = h.snapshot();
  for (uint64_t v = 0; v < 16; ++v) CHECK_EQ(snap.counts[v], 1u);
  CHECK_EQ(snap.quantile(1.0 / 16), 0u);
  CHECK_EQ(snap.quantile(1.0), 15u);
}

TEST(latency_histogram_reader_concurrent_with_writer) {
  // One writer, one reader taking snapshots: totals only grow and end exact.
  LatencyHistogram h;
  std::atomic<bool> done{false};
  const uint64_t n = 200000;
  std::thread writer([&] {
    for (uint64_t i = 0; i < n; ++i) h.record(i * 37 % 100000);
    done.store(true, std::memory_order_release);  // release: the reader's last snapshot sees every count
  });
  uint64_t last = 0;
  while (!done.load(std::memory_order_acquire)) {  // acquire: pairs with the writer's release
    const uint64_t t = h.snapshot().total;
    CHECK(t >= last);
    last = t;
  }
  writer.join();
  CHECK_EQ(h.snapshot().total, n);
}
