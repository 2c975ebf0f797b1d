// mrrc_traces.cpp — the synthetic Cello92-like and HTTPD-like traces (mrrc_traces.hpp).
#include "mrrc_traces.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <unordered_set>

namespace pd3::bench {
namespace {

// Draws ranks 0..n-1 with P(rank k) proportional to 1 / (k + 1)^theta.
class Zipf {
 public:
  Zipf(uint64_t n, double theta) : cdf_(n) {
    double sum = 0;
    for (uint64_t k = 0; k < n; ++k) cdf_[k] = sum += 1.0 / std::pow(double(k + 1), theta);
    for (double& c : cdf_) c /= sum;
  }
  uint64_t operator()(std::mt19937_64& rng) const {
    const double u = std::uniform_real_distribution<double>(0, 1)(rng);
    return uint64_t(std::lower_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin());
  }

 private:
  std::vector<double> cdf_;
};

// A seeded permutation of 0..n-1: popularity ranks land on scattered objects.
std::vector<uint64_t> shuffled(uint64_t n, std::mt19937_64& rng) {
  std::vector<uint64_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

}  // namespace

// Cello92-like: 2-page disk blocks over 256 MiB; block popularity Zipf(0.9) over scattered blocks;
// a request continues sequentially from the previous block with probability 0.3 (disk I/O runs);
// 80% of requests take the whole block (2 pages), 20% one of its pages.
std::vector<mrrc::TraceRequest> cello_like_trace(uint64_t n, uint64_t seed) {
  constexpr uint64_t kBlocks = 32768;
  std::mt19937_64 rng(seed);
  const Zipf zipf(kBlocks, 0.9);
  const std::vector<uint64_t> where = shuffled(kBlocks, rng);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<mrrc::TraceRequest> trace;
  trace.reserve(n);
  uint64_t block = where[zipf(rng)];
  for (uint64_t i = 0; i < n; ++i) {
    block = (i > 0 && u(rng) < 0.3) ? (block + 1) % kBlocks : where[zipf(rng)];
    const uint64_t base = block * 2 * kTracePage;
    if (u(rng) < 0.8) trace.push_back({base, 2 * kTracePage});
    else trace.push_back({base + (rng() % 2) * kTracePage, kTracePage});
  }
  return trace;
}

// HTTPD-like: 8,192 files laid out back to back, page-aligned, read whole. A file's size class is
// 2^k pages, k = 0..5 with probabilities 0.35, 0.25, 0.15, 0.12, 0.08, 0.05 (small files are the
// most common), its size uniform in [2^k, 2^(k+1)) capped at 32 pages. File popularity is Zipf(0.8)
// over a random order of the files, independent of their size.
std::vector<mrrc::TraceRequest> httpd_like_trace(uint64_t n, uint64_t seed) {
  constexpr uint64_t kFiles = 8192;
  std::mt19937_64 rng(seed);
  std::discrete_distribution<int> size_class({0.35, 0.25, 0.15, 0.12, 0.08, 0.05});
  std::vector<mrrc::TraceRequest> files(kFiles);
  uint64_t offset = 0;
  for (auto& f : files) {
    const uint64_t lo = uint64_t(1) << size_class(rng);
    const uint64_t pages = std::min<uint64_t>(32, lo + rng() % lo);
    f = {offset, pages * kTracePage};
    offset += f.len;
  }
  const Zipf zipf(kFiles, 0.8);
  const std::vector<uint64_t> order = shuffled(kFiles, rng);
  std::vector<mrrc::TraceRequest> trace;
  trace.reserve(n);
  for (uint64_t i = 0; i < n; ++i) trace.push_back(files[order[zipf(rng)]]);
  return trace;
}

uint64_t footprint_pages(const std::vector<mrrc::TraceRequest>& trace) {
  std::unordered_set<uint64_t> pages;
  for (const auto& r : trace)
    for (uint64_t p = r.addr / kTracePage; p <= (r.addr + r.len - 1) / kTracePage; ++p) pages.insert(p);
  return pages.size();
}

}  // namespace pd3::bench
