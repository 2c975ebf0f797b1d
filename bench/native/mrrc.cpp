// mrrc.cpp — the native side of `npm run bench -- mrrc` (bench/mrrc.ts): the registration cost model
// T = a·p + b fitted for mlock and munlock on this machine, then the Cello92-like and HTTPD-like
// traces (and a recorded one with --trace FILE) replayed against no cache, the pin-down LRU cache and
// MRRC at several cache sizes: hit ratios and total registration cost by the model for every size,
// and real mlock/munlock time through the mlock backend for one size. Also the hit path's cost (ns per
// acquire + release of a cached range) beside a mutex-guarded std::map. Last line: one JSON object.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "mrrc/cost_model.hpp"
#include "mrrc/counting_pinner.hpp"
#include "mrrc/mlock_pinner.hpp"
#include "mrrc/region_cache.hpp"
#include "mrrc/trace_file.hpp"
#include "mrrc_bound.hpp"
#include "mrrc_traces.hpp"

namespace {

using namespace pd3::mrrc;
using pd3::bench::kTracePage;
using Clock = std::chrono::steady_clock;

[[noreturn]] void usage_error(const char* fmt, const char* arg) {
  std::fprintf(stderr, "pd3_bench_mrrc: ");
  std::fprintf(stderr, fmt, arg);
  std::fprintf(stderr, "\n");
  std::exit(2);
}

// The command line.
struct Options {
  bool quick = false;
  uint64_t requests = 0;  // 0 = by mode
  uint64_t seed = 42;
  uint64_t mlock_pages = 1024;  // cache size of the real mlock replay and of the headline figures
  std::string trace_file;
  double frequent_share = pd3::mrrc::Config{}.frequent_share;  // MRE's sections (docs/mrrc.md)
  double eviction_share = pd3::mrrc::Config{}.eviction_share;
};

double parse_share(const char* flag, const char* v) {
  char* end = nullptr;
  const double d = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(d >= 0 && d <= 1)) usage_error("%s needs a number from 0 to 1", flag);
  return d;
}

uint64_t parse_count(const char* flag, const char* v) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || n == 0 || v[0] == '-') usage_error("%s needs a positive integer", flag);
  return n;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage_error("%s needs a value", argv[i]);
      return argv[++i];
    };
    if (a == "--quick") o.quick = true;
    else if (a == "--requests") o.requests = parse_count("--requests", value());
    else if (a == "--seed") o.seed = parse_count("--seed", value());
    else if (a == "--cache-pages") o.mlock_pages = parse_count("--cache-pages", value());
    else if (a == "--trace") o.trace_file = value();
    else if (a == "--frequent-share") o.frequent_share = parse_share("--frequent-share", value());
    else if (a == "--eviction-share") o.eviction_share = parse_share("--eviction-share", value());
    else usage_error("unknown option '%s' (try --help)", argv[i]);
  }
  if (o.requests == 0) o.requests = o.quick ? 40'000 : 400'000;
  return o;
}

// ---- the cost model: least squares over page counts, both coefficients kept non-negative --------

// T = a·p + b, in microseconds.
struct Fit {
  double a = 0, b = 0;
};

Fit least_squares(const std::vector<double>& p, const std::vector<double>& t) {
  double mp = 0, mt = 0;
  for (size_t i = 0; i < p.size(); ++i) mp += p[i], mt += t[i];
  mp /= double(p.size());
  mt /= double(t.size());
  double cov = 0, var = 0;
  for (size_t i = 0; i < p.size(); ++i) cov += (p[i] - mp) * (t[i] - mt), var += (p[i] - mp) * (p[i] - mp);
  Fit f;
  f.a = cov / var;
  f.b = mt - f.a * mp;
  // Costs are never negative: when noise pushes one coefficient below zero, the best line with it
  // at zero (through the origin, or flat).
  if (f.b < 0) {
    double pt = 0, pp = 0;
    for (size_t i = 0; i < p.size(); ++i) pt += p[i] * t[i], pp += p[i] * p[i];
    f = {pt / pp, 0};
  }
  if (f.a < 0) f = {0, mt};
  return f;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double us_since(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }

// Least squares over the median per page count (the typical call, little moved by other load on
// the machine: the model the replays use) and over every sample (the mean, tail included: on a
// loaded machine a few slow calls, waiting for the other CPU, dominate it).
struct Fits {
  Fit reg, dereg, reg_warm;                // medians
  Fit reg_mean, dereg_mean, reg_warm_mean; // every sample
};

// For each page count, `reps` ranges of fresh (never touched) pages are mlocked one by one, then
// munlocked. "Warm" repeats it on pages written first (an application buffer already in memory).
Fits fit_mlock(int reps) {
  const std::vector<size_t> counts = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  std::vector<double> ps, reg, dereg, warm;              // medians per page count
  std::vector<double> all_p, all_reg, all_dereg, all_warm;  // every sample
  for (size_t pages : counts) {
    const size_t bytes = pages * page * size_t(reps);
    for (int pass = 0; pass < 2; ++pass) {
      auto* mem = static_cast<uint8_t*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
      if (mem == MAP_FAILED) {
        std::perror("mmap");
        std::exit(1);
      }
      if (pass == 1) std::memset(mem, 1, bytes);
      std::vector<double> lock_us, unlock_us;
      for (int r = 0; r < reps; ++r) {
        uint8_t* at = mem + size_t(r) * pages * page;
        auto t0 = Clock::now();
        if (mlock(at, pages * page) != 0) {
          std::fprintf(stderr, "pd3_bench_mrrc: mlock of %zu pages failed: %s (RLIMIT_MEMLOCK?)\n", pages, std::strerror(errno));
          std::exit(1);
        }
        lock_us.push_back(us_since(t0));
        t0 = Clock::now();
        (void)munlock(at, pages * page);
        unlock_us.push_back(us_since(t0));
      }
      munmap(mem, bytes);
      for (int r = 0; r < reps; ++r) {
        if (pass == 0) {
          all_p.push_back(double(pages));
          all_reg.push_back(lock_us[size_t(r)]);
          all_dereg.push_back(unlock_us[size_t(r)]);
        } else {
          all_warm.push_back(lock_us[size_t(r)]);
        }
      }
      if (pass == 0) {
        ps.push_back(double(pages));
        reg.push_back(median(lock_us));
        dereg.push_back(median(unlock_us));
      } else {
        warm.push_back(median(lock_us));
      }
    }
  }
  return {least_squares(ps, reg),         least_squares(ps, dereg),         least_squares(ps, warm),
          least_squares(all_p, all_reg), least_squares(all_p, all_dereg), least_squares(all_p, all_warm)};
}

// ---- trace replays ---------------------------------------------------------------------------------

// Times the backend's calls: the real cost of registration on this machine.
class TimedPinner final : public Pinner {
 public:
  explicit TimedPinner(Pinner& inner) : inner_(inner) {}
  Result pin(PageRange range) override {
    const auto t0 = Clock::now();
    Result r = inner_.pin(range);
    pin_us += us_since(t0);
    return r;
  }
  Result unpin(std::span<const PageRange> batch) override {
    const auto t0 = Clock::now();
    Result r = inner_.unpin(batch);
    unpin_us += us_since(t0);
    return r;
  }
  size_t page_size() const override { return inner_.page_size(); }
  size_t pin_limit() const override { return inner_.pin_limit(); }
  double pin_us = 0, unpin_us = 0;

 private:
  Pinner& inner_;
};

// What one replay of one trace under one policy and size gave.
struct Outcome {
  double hit = 0, partial = 0;
  Stats stats;
  double cost_us = 0;        // by the model fitted here
  double cost_paper_us = 0;  // by the paper's constants
  double cost_touch_us = 0;  // by the first-touch model (FirstTouch below); simulated replays only
  double real_us = 0;        // time in mlock/munlock (real replay only)
  double pin_us = 0, unpin_us = 0;
};

// Counts, for every pin, the pages pinned for the first time in the replay and those pinned before:
// mlock faults a page in (allocates and zeroes it) only the first time; a page pinned again after
// its munlock is still resident and costs the "warm" rate. Forwards to `inner`.
class FirstTouch final : public Pinner {
 public:
  explicit FirstTouch(Pinner& inner) : inner_(inner) {}
  Result pin(PageRange range) override {
    for (uintptr_t p = range.addr / kTracePage; p < range.end() / kTracePage; ++p) {
      if (p >= seen_.size()) seen_.resize(std::max<size_t>(p + 1, seen_.size() * 2), false);
      if (seen_[p]) {
        ++warm_pages;
      } else {
        seen_[p] = true;
        ++fresh_pages;
      }
    }
    return inner_.pin(range);
  }
  Result unpin(std::span<const PageRange> batch) override { return inner_.unpin(batch); }
  size_t page_size() const override { return inner_.page_size(); }
  size_t pin_limit() const override { return inner_.pin_limit(); }
  uint64_t fresh_pages = 0, warm_pages = 0;

 private:
  Pinner& inner_;
  std::vector<bool> seen_;
};

// The first-touch model: the warm fit (mlock of resident pages, with the fitted munlock) for every
// pin, plus the difference to the fresh per-page rate for each page pinned the first time. Set in
// main() from the fits.
CostModel g_warm_model;
double g_fresh_extra_us = 0;  // fresh minus warm, per page

// MRE's section shares for every replay (from --frequent-share, --eviction-share).
Config g_mre_shares;

constexpr Replacement kPolicies[] = {Replacement::kNoCache, Replacement::kLru, Replacement::kMre};

// Each request is acquired and released at once (one RDMA operation at a time, as in the paper's
// simulator). `base` is added to every address (the arena of a real replay). A trailing flush is not
// charged: regions still cached at the end were not deregistered during the trace.
Outcome replay(const std::vector<TraceRequest>& trace, Replacement rep, size_t cache_pages, Pinner& pinner,
               uintptr_t base, const CostModel& model) {
  Config c = g_mre_shares;
  c.capacity_bytes = cache_pages * kTracePage;
  c.replacement = rep;
  std::unique_ptr<RegionCache> cache;
  if (!RegionCache::create(c, pinner, &cache).ok()) {
    std::fprintf(stderr, "pd3_bench_mrrc: cannot make a cache of %zu pages\n", cache_pages);
    std::exit(1);
  }
  for (const TraceRequest& r : trace) {
    if (r.len > cache->capacity()) continue;  // larger than the whole cache: never registrable
    Handle h = 0;
    const Result res = cache->acquire(base + r.addr, r.len, &h);
    if (!res.ok()) {
      std::fprintf(stderr, "pd3_bench_mrrc: acquire failed: %s (errno %d)\n", status_name(res.status), res.sys_errno);
      std::exit(1);
    }
    (void)cache->release(h);
  }
  Outcome o;
  o.stats = cache->stats();
  const double n = double(trace.size());
  o.hit = double(o.stats.hits) / n;
  o.partial = double(o.stats.partial_hits) / n;
  const uint64_t reg_pages = o.stats.registered_bytes / kTracePage;
  const uint64_t dereg_pages = o.stats.deregistered_bytes / kTracePage;
  o.cost_us = model.total_us(o.stats.registrations, reg_pages, o.stats.dereg_batches, dereg_pages);
  o.cost_paper_us = kPaperCostModel.total_us(o.stats.registrations, reg_pages, o.stats.dereg_batches, dereg_pages);
  return o;
}

Outcome simulate(const std::vector<TraceRequest>& trace, Replacement rep, size_t cache_pages, const CostModel& model) {
  CountingPinner pinner(kTracePage, false);
  FirstTouch touch(pinner);
  Outcome o = replay(trace, rep, cache_pages, touch, 0, model);
  o.cost_touch_us = g_warm_model.total_us(o.stats.registrations, touch.fresh_pages + touch.warm_pages,
                                          o.stats.dereg_batches, o.stats.deregistered_bytes / kTracePage) +
                    g_fresh_extra_us * double(touch.fresh_pages);
  return o;
}

// The same replay through the mlock backend, on an arena that spans the trace.
Outcome replay_mlock(const std::vector<TraceRequest>& trace, Replacement rep, size_t cache_pages, const CostModel& model) {
  uint64_t span = 0;
  for (const auto& r : trace) span = std::max(span, r.addr + r.len);
  void* arena = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (arena == MAP_FAILED) {
    std::perror("mmap arena");
    std::exit(1);
  }
  MlockPinner mlock_pinner;
  TimedPinner timed(mlock_pinner);
  Outcome o = replay(trace, rep, cache_pages, timed, reinterpret_cast<uintptr_t>(arena), model);
  o.pin_us = timed.pin_us;
  o.unpin_us = timed.unpin_us;
  o.real_us = timed.pin_us + timed.unpin_us;
  munmap(arena, span);  // the cache is gone: everything it pinned was unpinned
  return o;
}

// ---- the hit path -----------------------------------------------------------------------------------

// What a hit costs its caller, once every buffer is registered (direct mode after warm-up): ns per
// acquire + release pair on one thread, cycling over kHitPages cached one-page regions (so the
// lookup is not of a one-entry map and the recency list moves), through the mlock backend (nothing
// is pinned inside the loop). Beside it, a baseline a reader can judge: the same pairs through a
// std::mutex-guarded std::map lookup (lock, find the covering entry, count a user, unlock; lock,
// uncount, unlock), the least a locked range cache does.
constexpr size_t kHitPages = 64;

// Medians and minimums over kHitRuns timed runs (the minimum: the cost with the least interference
// from other load on the machine).
struct HitPath {
  double cache_ns = 0, cache_min_ns = 0;
  double map_ns = 0, map_min_ns = 0;
};
constexpr int kHitRuns = 21;

// One user-counted entry of the baseline map.
struct MapEntry {
  size_t len;
  uint32_t users;
};

// ns per pair of each of kHitRuns runs of `pairs` pairs.
template <class Pair>
std::vector<double> ns_per_pair(uint64_t pairs, Pair&& pair) {
  std::vector<double> runs;
  for (int rep = 0; rep < kHitRuns; ++rep) {
    const auto t0 = Clock::now();
    for (uint64_t i = 0; i < pairs; ++i) pair(i);
    runs.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / double(pairs));
  }
  return runs;
}

HitPath measure_hit_path(bool quick) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  auto* mem = static_cast<uint8_t*>(mmap(nullptr, kHitPages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (mem == MAP_FAILED) {
    std::perror("mmap");
    std::exit(1);
  }
  const uint64_t pairs = quick ? 100'000 : 400'000;  // per run
  auto addr_of = [&](uint64_t i) { return mem + (i * 7 % kHitPages) * page + (i % 32) * 64; };  // 64-byte slots
  HitPath out;
  {
    MlockPinner pinner;
    Config c;
    c.capacity_bytes = 2 * kHitPages * page;
    std::unique_ptr<RegionCache> cache;
    if (!RegionCache::create(c, pinner, &cache).ok()) {
      std::fprintf(stderr, "pd3_bench_mrrc: cannot make a cache of %zu pages (RLIMIT_MEMLOCK?)\n", 2 * kHitPages);
      std::exit(1);
    }
    for (size_t p = 0; p < kHitPages; ++p) {  // warm-up: one region per page
      Handle h = 0;
      if (!cache->acquire(mem + p * page, page, &h).ok()) {
        std::fprintf(stderr, "pd3_bench_mrrc: warm-up acquire failed (RLIMIT_MEMLOCK?)\n");
        std::exit(1);
      }
      (void)cache->release(h);
    }
    const uint64_t hits_before = cache->stats().hits;
    const std::vector<double> runs = ns_per_pair(pairs, [&](uint64_t i) {
      Handle h = 0;
      if (!cache->acquire(addr_of(i), 64, &h).ok()) std::abort();
      (void)cache->release(h);
    });
    out.cache_ns = median(runs);
    out.cache_min_ns = *std::min_element(runs.begin(), runs.end());
    if (cache->stats().hits - hits_before != kHitRuns * pairs) {
      std::fprintf(stderr, "pd3_bench_mrrc: the hit path loop missed the cache\n");
      std::exit(1);
    }
  }
  {
    std::mutex mu;
    std::map<uintptr_t, MapEntry> map;
    for (size_t p = 0; p < kHitPages; ++p) map.emplace(reinterpret_cast<uintptr_t>(mem + p * page), MapEntry{page, 0});
    const std::vector<double> runs = ns_per_pair(pairs, [&](uint64_t i) {
      const uintptr_t a = reinterpret_cast<uintptr_t>(addr_of(i));
      MapEntry* e = nullptr;
      {
        std::lock_guard lock(mu);
        auto it = map.upper_bound(a);
        if (it == map.begin() || std::prev(it)->first + std::prev(it)->second.len < a + 64) std::abort();
        e = &std::prev(it)->second;
        ++e->users;
      }
      std::lock_guard lock(mu);
      --e->users;
    });
    out.map_ns = median(runs);
    out.map_min_ns = *std::min_element(runs.begin(), runs.end());
  }
  munmap(mem, kHitPages * page);
  return out;
}

std::string key(const char* what, Replacement rep, const std::string& trace) {
  const char* name = rep == Replacement::kMre ? "mrrc" : rep == Replacement::kLru ? "pindown" : "nocache";
  return std::string(name) + "_" + what + "_" + trace;
}

// The table row of the lower bound on any cache's cost (mrrc_bound.hpp) at `pages`, and at the
// headline size its JSON key, bound_cost_<trace>. Traces whose requested ranges overlap (Cello-like:
// a page inside a block) get no bound: their objects are not independent.
void report_bound(const std::string& trace_name, const std::vector<TraceRequest>& trace, size_t pages, bool headline,
                  const CostModel& model, std::map<std::string, double>* json) {
  const pd3::bench::CostBound b = pd3::bench::registration_cost_bound(trace, pages, kTracePage, model);
  if (!b.applies) return;
  std::printf("  %6zu  %-8s %7s %8s %9s %9s %13.0f %13s %13s   (no cache of this size can expect less)\n", pages, "bound",
              "-", "-", "-", "-", b.cost_us, "-", "-");
  if (headline) (*json)["bound_cost_" + trace_name] = b.cost_us;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--help") == 0) {
      std::printf("usage: pd3_bench_mrrc [--quick] [--requests N] [--seed N] [--cache-pages N] [--trace FILE]\n"
                  "                      [--frequent-share X] [--eviction-share X]\n");
      return 0;
    }
  const Options o = parse(argc, argv);
  g_mre_shares.frequent_share = o.frequent_share;
  g_mre_shares.eviction_share = o.eviction_share;
  std::map<std::string, double> json;

  // A recorded trace is read first: a bad file is refused before anything is measured.
  std::vector<TraceRequest> recorded;
  if (!o.trace_file.empty()) {
    std::ifstream in(o.trace_file, std::ios::binary);
    if (!in) usage_error("cannot read --trace '%s'", o.trace_file.c_str());
    std::stringstream text;
    text << in.rdbuf();
    std::vector<TraceRequest> t;
    std::string error;
    if (!pd3::mrrc::parse_trace(text.str(), &t, &error)) {
      std::fprintf(stderr, "pd3_bench_mrrc: %s: %s\n", o.trace_file.c_str(), error.c_str());
      return 2;
    }
    if (t.empty()) usage_error("--trace '%s' holds no registrations", o.trace_file.c_str());
    recorded = std::move(t);
  }

  // 1. The cost model on this machine.
  const Fits fits = fit_mlock(o.quick ? 15 : 60);
  const CostModel model{fits.reg.a, fits.reg.b, fits.dereg.a, fits.dereg.b};
  g_warm_model = {fits.reg_warm.a, fits.reg_warm.b, fits.dereg.a, fits.dereg.b};
  g_fresh_extra_us = fits.reg.a - fits.reg_warm.a;
  std::printf("cost model on this machine (least squares over 1..256 pages; medians | every sample):\n");
  std::printf("  mlock, fresh pages : T = %.3f us/page * p + %.3f us | %.3f p + %.3f us\n", fits.reg.a, fits.reg.b,
              fits.reg_mean.a, fits.reg_mean.b);
  std::printf("  mlock, warm pages  : T = %.3f us/page * p + %.3f us | %.3f p + %.3f us\n", fits.reg_warm.a, fits.reg_warm.b,
              fits.reg_warm_mean.a, fits.reg_warm_mean.b);
  std::printf("  munlock            : T = %.3f us/page * p + %.3f us | %.3f p + %.3f us\n", fits.dereg.a, fits.dereg.b,
              fits.dereg_mean.a, fits.dereg_mean.b);
  std::printf("  paper (InfiniBand) : reg %.2f p + %.2f us, dereg %.2f p + %.2f us\n", kPaperCostModel.reg_a_us,
              kPaperCostModel.reg_b_us, kPaperCostModel.dereg_a_us, kPaperCostModel.dereg_b_us);
  json["reg_a_us"] = fits.reg.a;
  json["reg_b_us"] = fits.reg.b;
  json["reg_warm_a_us"] = fits.reg_warm.a;
  json["reg_warm_b_us"] = fits.reg_warm.b;
  json["dereg_a_us"] = fits.dereg.a;
  json["dereg_b_us"] = fits.dereg.b;
  json["reg_mean_a_us"] = fits.reg_mean.a;
  json["reg_mean_b_us"] = fits.reg_mean.b;
  json["dereg_mean_a_us"] = fits.dereg_mean.a;
  json["dereg_mean_b_us"] = fits.dereg_mean.b;

  // 2. The hit path: what a registration already cached costs its caller.
  const HitPath hit_path = measure_hit_path(o.quick);
  std::printf("\nhit path (acquire + release of a cached 64-byte range, one thread, %zu one-page regions):\n", kHitPages);
  std::printf("  RegionCache (mlock backend)     : %.1f ns per pair (median of %d runs; best %.1f)\n", hit_path.cache_ns,
              kHitRuns, hit_path.cache_min_ns);
  std::printf("  std::mutex + std::map (baseline): %.1f ns per pair (median of %d runs; best %.1f)\n", hit_path.map_ns,
              kHitRuns, hit_path.map_min_ns);
  json["hit_path_ns"] = hit_path.cache_ns;
  json["hit_path_best_ns"] = hit_path.cache_min_ns;
  json["hit_path_mutex_map_ns"] = hit_path.map_ns;
  json["hit_path_mutex_map_best_ns"] = hit_path.map_min_ns;

  // 3. The traces.
  // A trace and its name in the output.
  struct Named {
    std::string name;
    std::vector<TraceRequest> trace;
    bool real;  // also replayed through mlock
  };
  std::vector<Named> traces = {{"httpd_like", pd3::bench::httpd_like_trace(o.requests, o.seed), true},
                               {"cello_like", pd3::bench::cello_like_trace(o.requests, o.seed + 1), true}};
  if (!recorded.empty()) traces.push_back({"recorded", std::move(recorded), false});

  // 4. Replays.
  const MlockPinner probe;
  size_t real_pages = std::min<size_t>(o.mlock_pages, probe.pin_limit() / kTracePage);
  // 1 to 32 MiB: up to about a sixth of the generated traces' footprints.
  const std::vector<size_t> sizes = {256, 512, 1024, 2048, 4096, 8192};
  for (const Named& t : traces) {
    const uint64_t footprint = pd3::bench::footprint_pages(t.trace);
    std::printf("\n%s: %zu requests, footprint %" PRIu64 " pages (%.0f MiB)\n", t.name.c_str(), t.trace.size(), footprint,
                double(footprint) * kTracePage / 1048576.0);
    std::printf("  %6s  %-8s %7s %8s %9s %9s %13s %13s %13s\n", "pages", "policy", "hit", "partial", "regs", "dereg ops",
                "cost us", "paper-cost us", "touch-cost us");
    // A recorded frame-pool trace reuses a frame only after the whole pool has turned over, so it
    // is also replayed with caches of a quarter, half and all of its footprint (a memory server's
    // default --mr-cache is its DRAM budget: the whole pool).
    std::vector<size_t> trace_sizes = sizes;
    if (!t.real) {
      for (uint64_t share : {4, 2, 1})
        if (footprint / share > sizes.back()) trace_sizes.push_back(size_t(footprint / share));
    }
    // The headline size (--cache-pages) is one of the rows, in order, whatever it is.
    if (std::find(trace_sizes.begin(), trace_sizes.end(), o.mlock_pages) == trace_sizes.end())
      trace_sizes.insert(std::upper_bound(trace_sizes.begin(), trace_sizes.end(), o.mlock_pages), o.mlock_pages);
    std::string by_size;  // MRRC's cost / no cache and hit ratio - pin-down's, size by size
    for (size_t pages : trace_sizes) {
      std::map<Replacement, Outcome> outcomes;
      for (Replacement rep : kPolicies) {
        const Outcome& out = outcomes[rep] = simulate(t.trace, rep, pages, model);
        std::printf("  %6zu  %-8s %7.4f %8.4f %9" PRIu64 " %9" PRIu64 " %13.0f %13.0f %13.0f\n", pages, replacement_name(rep),
                    out.hit, out.partial, out.stats.registrations, out.stats.dereg_batches, out.cost_us, out.cost_paper_us,
                    out.cost_touch_us);
        if (!t.real && pages == footprint) json[key("hit", rep, t.name + "_whole_pool")] = out.hit;
        if (pages == o.mlock_pages) {
          json[key("hit", rep, t.name)] = out.hit;
          json[key("cost", rep, t.name)] = out.cost_us;
          json[key("paper_cost", rep, t.name)] = out.cost_paper_us;
          json[key("touch_cost", rep, t.name)] = out.cost_touch_us;
        }
      }
      report_bound(t.name, t.trace, pages, pages == o.mlock_pages, model, &json);
      const Outcome& mre = outcomes[Replacement::kMre];
      char part[96];
      std::snprintf(part, sizeof part, "%s%.0f MiB %.3f / %+.3f", by_size.empty() ? "" : ", ",
                    double(pages) * kTracePage / 1048576.0, mre.cost_us / outcomes[Replacement::kNoCache].cost_us,
                    mre.hit - outcomes[Replacement::kLru].hit);
      by_size += part;
    }
    // The two figures the targets are about (on HTTPD-like: at most 0.5, at least +0.05).
    std::printf("  MRRC by size (cost / no cache, hit ratio - pin-down's): %s\n", by_size.c_str());
    if (!t.real || real_pages == 0) continue;
    std::printf("  real mlock/munlock replay at %zu pages (%.1f MiB):\n", real_pages, double(real_pages) * kTracePage / 1048576.0);
    for (Replacement rep : kPolicies) {
      const Outcome out = replay_mlock(t.trace, rep, real_pages, model);
      std::printf("    %-8s hit %.4f, %" PRIu64 " registrations: %.0f us in mlock + %.0f us in munlock (model: %.0f us)\n",
                  replacement_name(rep), out.hit, out.stats.registrations, out.pin_us, out.unpin_us, out.cost_us);
      json[key("mlock_us", rep, t.name)] = out.real_us;
    }
  }
  json["cache_pages"] = double(o.mlock_pages);
  json["mlock_replay_pages"] = double(real_pages);
  json["requests"] = double(o.requests);
  json["frequent_share"] = o.frequent_share;
  json["eviction_share"] = o.eviction_share;

  std::string line = "{";
  for (const auto& [k, v] : json) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    if (line.size() > 1) line += ",";
    line += "\"" + k + "\":" + buf;
  }
  std::printf("%s}\n", line.c_str());
  return 0;
}
