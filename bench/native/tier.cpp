// tier.cpp — the offline simulator of `npm run bench -- tier` (bench/tier.ts): page traces from
// YCSB (native/workloads/ycsb.hpp) over a data set 4x the DRAM budget, replayed through each
// eviction policy of the SSD tier (native/memserver/tier/eviction_*.cpp, the real classes) over a
// frame-pool model, and through Belady's offline optimum on the same trace.
//
// Usage: pd3_bench_tier [--quick] [--frames N] [--accesses N] [--page-size B] [--seed S]
//                       [--epoch-period-us N] [--epoch-sample N] [--epoch-share F] [--trace-out FILE]
//                       [--hit-ns H] [--miss-ns M]   the virtual clock (below)
//                       [--workload NAME] [--policy NAME]   (diagnostics: one workload / policy)
//                       [--repeat N]   zipfian replays per policy (default 3); its CPU per access and
//                                      throughput are the medians (this machine's noise is ±30%)
//   Full run: 65,536 frames, 20M page accesses per workload; --quick: 16,384 frames, 2M.
//
// Workloads (pages = 4 x frames; record i is page i):
//   zipfian     YCSB-C, zipfian (θ 0.99): read-only point reads
//   uniform     YCSB-C, uniform keys
//   scan        YCSB-E: 95% scans of 1..100 consecutive pages from a zipfian start, 5% inserts of
//               new pages (the data set grows past 4x by the inserts)
//   zipfian-rw  YCSB-A, zipfian: half the accesses write, so clean-first LRU and write-backs differ
//
// Time. The replay runs ~100M accesses/s with no I/O, about 1000x faster than a tier serves misses,
// so a policy whose work follows wall time (epoch: its epoch period and sampler) would see ~1000x
// more accesses per period than in a server. Each replay therefore keeps a virtual clock: a hit
// advances it by H ns (--hit-ns, default 1,000: a page served from DRAM by the memory server), a
// miss by M ns (--miss-ns, default 50,000: the tier-io bench's io_uring row on this VM, 18.3 kops/s
// of almost only misses at 32 in flight, ~55 µs per page read; an NVMe read of 64 KiB is of the
// same order). Every policy replays under that clock; epoch runs without its sampler thread, and
// its sampler's work (EpochPolicy::tick: advance the epoch, adapt the queue depth, refill) runs on
// the replay thread each time the clock passes a period, so it is counted in the replay's CPU.
// The "unpaced" replay is the former one: no clock, epoch's sampler thread on wall time.
//
// Per policy and workload: hit ratio over the accesses after the first 20% (the pool is warm by
// then), write-backs (dirty victims), accesses per second of the replay, and CPU per access =
// process CPU time (CLOCK_PROCESS_CPUTIME_ID: the replaying thread, plus epoch's sampler thread
// when unpaced) over the replay, divided by its accesses. The replay loop (page table lookup, free
// list, clock) is the same for every policy; only the policy calls differ. Belady evicts the
// resident page whose next use is furthest away (a lazy max-heap over next-use positions); its hit
// ratio bounds the others.
//
// Prefetchers (zipfian and scan): LRU with each --tier-prefetch policy, regions of 4,096 pages; the
// demand hit ratio, pages prefetched, and how many of those were evicted before any use.
//
// --trace-out FILE: the registration trace (docs/tier-policies.md; `bench mrrc --trace FILE`): each
// frame fill of the lru/zipfian replay as `<frame * page_size> <page_size>`.
// Last line: one JSON object.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "memserver/tier/eviction_epoch.hpp"
#include "memserver/tier/eviction_policy.hpp"
#include "memserver/tier/prefetch_policy.hpp"
#include "workloads/ycsb.hpp"

namespace {

using pd3::tier::EvictionKind;
using pd3::tier::EvictionOptions;
using pd3::tier::FrameId;
using pd3::tier::kNoFrame;

// One page access of a trace.
struct Trace {
  std::string name;
  uint32_t pages = 0;             // page ids are below this
  std::vector<uint32_t> page;     // per access
  std::vector<uint8_t> write;     // per access: 1 = the access writes the page
};

struct Settings {
  uint32_t frames = 65536;
  uint64_t accesses = 20'000'000;
  uint64_t page_size = 64 * 1024;
  uint64_t seed = 1;
  uint32_t epoch_period_us = 1000;
  uint32_t epoch_sample = 2048;
  double epoch_share = 0.25;  // the share of a pass's sample epoch queues (EvictionOptions::epoch_share)
  uint64_t hit_ns = 1000;     // virtual time a hit takes
  uint64_t miss_ns = 50'000;  // virtual time a miss takes (a page read)
  std::string trace_out;
  uint32_t repeat = 3;        // zipfian replays per policy: CPU and throughput are their medians
  std::string only_workload;  // --workload NAME: that workload alone (diagnostics)
  std::string only_policy;    // --policy NAME: that policy alone, plus belady (diagnostics)
};

[[noreturn]] void usage_error(const char* fmt, const char* arg) {
  std::fprintf(stderr, "pd3_bench_tier: ");
  std::fprintf(stderr, fmt, arg);
  std::fprintf(stderr, "\n");
  std::exit(2);
}

uint64_t parse_count(const char* flag, const char* text) {
  if (text == nullptr) usage_error("%s needs a value", flag);
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0' || v == 0 || text[0] == '-') {
    const std::string what = std::string(flag) + " needs a positive integer, got '" + text + "'";
    usage_error("%s", what.c_str());
  }
  return v;
}

// A share in (0, 1], e.g. 0.25.
double parse_share(const char* flag, const char* text) {
  if (text == nullptr) usage_error("%s needs a value", flag);
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(v > 0 && v <= 1)) {
    const std::string what = std::string(flag) + " needs a share in (0, 1], got '" + text + "'";
    usage_error("%s", what.c_str());
  }
  return v;
}

Settings parse(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; i++) {
    if (std::strcmp(argv[i], "--quick") == 0) {  // first, so explicit sizes override it
      s.frames = 16384;
      s.accesses = 2'000'000;
    }
  }
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--quick") continue;
    if (a == "--frames") s.frames = uint32_t(std::min<uint64_t>(parse_count("--frames", v), 1u << 26));
    else if (a == "--accesses") s.accesses = parse_count("--accesses", v);
    else if (a == "--page-size") s.page_size = parse_count("--page-size", v);
    else if (a == "--repeat") s.repeat = uint32_t(std::min<uint64_t>(parse_count("--repeat", v), 99));
    else if (a == "--seed") s.seed = parse_count("--seed", v);
    else if (a == "--epoch-period-us") s.epoch_period_us = uint32_t(parse_count("--epoch-period-us", v));
    else if (a == "--epoch-sample") s.epoch_sample = uint32_t(std::min<uint64_t>(parse_count("--epoch-sample", v), 1u << 26));
    else if (a == "--epoch-share") s.epoch_share = parse_share("--epoch-share", v);
    else if (a == "--hit-ns") s.hit_ns = parse_count("--hit-ns", v);
    else if (a == "--miss-ns") s.miss_ns = parse_count("--miss-ns", v);
    else if (a == "--workload" || a == "--policy") {
      if (v == nullptr) usage_error("%s needs a name", a.c_str());
      (a == "--workload" ? s.only_workload : s.only_policy) = v;
    } else if (a == "--trace-out") {
      if (v == nullptr) usage_error("%s needs a file", "--trace-out");
      s.trace_out = v;
    } else usage_error("unknown option '%s' (see the header of bench/native/tier.cpp)", argv[i]);
    i++;
  }
  return s;
}

Trace make_trace(const char* name, char workload, pd3::ycsb::Distribution dist, const Settings& s) {
  pd3::ycsb::Options o;
  o.workload = workload;
  o.distribution = dist;
  o.record_count = uint64_t(s.frames) * 4;
  o.seed = s.seed;
  std::unique_ptr<pd3::ycsb::Workload> w;
  if (pd3::ycsb::Workload::create(o, &w) != PD3_OK) {
    std::fprintf(stderr, "pd3_bench_tier: ycsb: %s\n", pd3::workloads::last_error());
    std::exit(2);
  }
  Trace t;
  t.name = name;
  t.page.reserve(s.accesses);
  t.write.reserve(s.accesses);
  pd3::ycsb::Op op;
  uint64_t max_page = o.record_count - 1;
  while (t.page.size() < s.accesses && w->next(&op)) {
    const bool writes = op.type != pd3::ycsb::OpType::kRead && op.type != pd3::ycsb::OpType::kScan;
    const uint64_t n = op.type == pd3::ycsb::OpType::kScan ? op.scan_length : 1;
    for (uint64_t k = 0; k < n && t.page.size() < s.accesses; k++) {
      const uint64_t page = std::min<uint64_t>(op.key + k, w->inserted_count() - 1);
      max_page = std::max(max_page, page);
      t.page.push_back(uint32_t(page));
      t.write.push_back(writes);
    }
  }
  t.pages = uint32_t(max_page + 1);
  return t;
}

// The pool's answers in the model: nothing is pinned or in flight; dirty as the trace wrote.
struct PoolView final : pd3::tier::FrameView {
  explicit PoolView(uint32_t frames) : dirty_bits(frames, 0) {}
  bool evictable(FrameId) const override { return true; }
  bool dirty(FrameId f) const override { return dirty_bits[f] != 0; }
  std::vector<uint8_t> dirty_bits;
};

struct Result {
  double hit = 0;
  uint64_t writebacks = 0;
  double cpu_ns_per_access = 0;
  double accesses_per_s = 0;
  uint64_t virtual_ns = 0;  // paced: the virtual clock at the end
  uint64_t periods = 0;  // paced: epoch periods the virtual clock passed
};

uint64_t cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
}

// kPaced: on the virtual clock, epoch's sampler work on this thread (the file's header); else the
// unpaced replay, epoch with its sampler thread on wall time.
template <bool kPaced>
Result replay(const Trace& t, EvictionKind kind, const Settings& s, FILE* registrations) {
  EvictionOptions o;
  o.seed = s.seed;
  o.epoch_period_us = s.epoch_period_us;
  o.epoch_sample = s.epoch_sample;
  o.epoch_share = s.epoch_share;
  PoolView view(s.frames);
  std::vector<FrameId> frame_of(t.pages, kNoFrame);
  std::vector<uint32_t> page_in(s.frames, 0);
  uint32_t next_free = 0;
  const size_t warm = t.page.size() / 5;
  uint64_t hits = 0, writebacks = 0;
  std::unique_ptr<pd3::tier::EvictionPolicy> policy;
  pd3::tier::EpochPolicy* epoch = nullptr;  // paced epoch: ticked by the virtual clock
  if (kPaced && kind == EvictionKind::kEpoch) {
    auto p = std::make_unique<pd3::tier::EpochPolicy>(s.frames, o, /*start_sampler=*/false);
    epoch = p.get();
    policy = std::move(p);
  } else {
    policy = pd3::tier::make_eviction_policy(kind, s.frames, o);
  }
  const uint64_t period_ns = uint64_t(s.epoch_period_us) * 1000;
  uint64_t clock_ns = 0, next_period_ns = period_ns, periods = 0;
  // Advances the virtual clock by one access and runs the periods it passed (paced only).
  auto advance = [&](uint64_t ns) {
    if constexpr (kPaced) {
      clock_ns += ns;
      while (clock_ns >= next_period_ns) {
        if (epoch != nullptr) epoch->tick();
        next_period_ns += period_ns;
        periods++;
      }
    }
  };
  const uint64_t cpu0 = cpu_ns();
  const auto wall0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < t.page.size(); i++) {
    const uint32_t page = t.page[i];
    const bool write = t.write[i] != 0;
    FrameId f = frame_of[page];
    if (f != kNoFrame) {
      hits += i >= warm;
      policy->on_hit(f, write);
      view.dirty_bits[f] |= uint8_t(write);
      advance(s.hit_ns);
      continue;
    }
    if (next_free < s.frames) {
      f = next_free++;
    } else {
      f = policy->victim(view);
      if (f == kNoFrame) {
        std::fprintf(stderr, "pd3_bench_tier: %s found no victim in a full, unpinned pool\n", pd3::tier::eviction_kind_name(kind));
        std::exit(1);
      }
      writebacks += view.dirty_bits[f];
      policy->on_drop(f);
      frame_of[page_in[f]] = kNoFrame;
    }
    policy->on_fill(f);
    frame_of[page] = f;
    page_in[f] = page;
    view.dirty_bits[f] = uint8_t(write);
    if (registrations) std::fprintf(registrations, "%llu %llu\n", (unsigned long long)(uint64_t(f) * s.page_size), (unsigned long long)s.page_size);
    advance(s.miss_ns);
  }
  const uint64_t cpu = cpu_ns() - cpu0;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  policy.reset();
  Result r;
  r.hit = double(hits) / double(t.page.size() - warm);
  r.writebacks = writebacks;
  r.cpu_ns_per_access = double(cpu) / double(t.page.size());
  r.accesses_per_s = double(t.page.size()) / wall;
  r.virtual_ns = clock_ns;
  r.periods = periods;
  return r;
}

// `repeat` replays (the first one writing the registrations, if any); CPU per access, throughput
// and hit ratio are the medians.
template <bool kPaced>
Result replay_median(const Trace& t, EvictionKind kind, const Settings& s, FILE* registrations, uint32_t repeat) {
  std::vector<Result> runs{replay<kPaced>(t, kind, s, registrations)};
  for (uint32_t i = 1; i < repeat; i++) runs.push_back(replay<kPaced>(t, kind, s, nullptr));
  auto median = [&](double Result::*field) {
    std::vector<double> v;
    for (const Result& x : runs) v.push_back(x.*field);
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  Result r = runs[0];
  r.cpu_ns_per_access = median(&Result::cpu_ns_per_access);
  r.accesses_per_s = median(&Result::accesses_per_s);
  r.hit = median(&Result::hit);  // the same each time but for unpaced epoch, whose epochs follow the wall clock
  return r;
}

// What a prefetcher did over a replay.
struct PrefetchResult {
  double hit = 0;           // demand hits / demand accesses after the warm-up
  uint64_t prefetches = 0;  // pages read ahead
  uint64_t useless = 0;     // of which evicted before any use
};

// LRU with a prefetcher, as the tier runs them: the data set is cut into regions of
// kRegionPages pages (each its own stream); after each access the prefetcher's candidates that are
// not resident are read into a frame (a free one or LRU's victim) and marked prefetched until their
// first use.
PrefetchResult replay_prefetch(const Trace& t, pd3::tier::PrefetchKind kind, const Settings& s) {
  constexpr uint32_t kRegionPages = 4096;
  EvictionOptions o;
  o.seed = s.seed;
  PoolView view(s.frames);
  std::vector<FrameId> frame_of(t.pages, kNoFrame);
  std::vector<uint32_t> page_in(s.frames, 0);
  std::vector<uint8_t> prefetched(s.frames, 0);
  uint32_t next_free = 0;
  const size_t warm = t.page.size() / 5;
  auto lru = pd3::tier::make_eviction_policy(EvictionKind::kLru, s.frames, o);
  auto prefetcher = pd3::tier::make_prefetch_policy(kind, {});
  PrefetchResult r;
  uint64_t hits = 0;
  auto place = [&](uint32_t page) {
    FrameId f;
    if (next_free < s.frames) {
      f = next_free++;
    } else {
      f = lru->victim(view);
      r.useless += prefetched[f];
      lru->on_drop(f);
      frame_of[page_in[f]] = kNoFrame;
    }
    lru->on_fill(f);
    frame_of[page] = f;
    page_in[f] = page;
    view.dirty_bits[f] = 0;
    prefetched[f] = 0;  // the caller marks read-ahead pages
    return f;
  };
  std::vector<uint64_t> candidates;
  for (size_t i = 0; i < t.page.size(); i++) {
    const uint32_t page = t.page[i];
    pd3::tier::PageAccess a;
    a.region = page / kRegionPages;
    a.page = page % kRegionPages;
    a.region_pages = std::min<uint64_t>(kRegionPages, t.pages - uint64_t(a.region) * kRegionPages);
    FrameId f = frame_of[page];
    if (f != kNoFrame) {
      hits += i >= warm;
      a.prefetched = prefetched[f] != 0;
      prefetched[f] = 0;
      lru->on_hit(f, false);
    } else {
      a.miss = true;
      place(page);
    }
    candidates.clear();
    prefetcher->on_access(a, &candidates);
    for (uint64_t c : candidates) {
      const uint32_t target = uint32_t(uint64_t(a.region) * kRegionPages + c);
      if (frame_of[target] != kNoFrame) continue;
      prefetched[place(target)] = 1;
      r.prefetches++;
    }
  }
  r.hit = double(hits) / double(t.page.size() - warm);
  return r;
}

// Belady's MIN: on a miss with a full pool, evict the resident page used furthest in the future.
Result belady(const Trace& t, const Settings& s) {
  const size_t n = t.page.size();
  constexpr uint64_t kNever = UINT64_MAX;
  std::vector<uint64_t> next_use(n);
  std::vector<uint64_t> seen(t.pages, kNever);
  for (size_t i = n; i-- > 0;) {
    next_use[i] = seen[t.page[i]];
    seen[t.page[i]] = i;
  }
  std::vector<uint8_t> resident(t.pages, 0);
  std::vector<uint64_t> current_next(t.pages, kNever);  // the live heap entry of a resident page
  std::priority_queue<std::pair<uint64_t, uint32_t>> heap;  // (next use, page), furthest on top
  uint32_t used = 0;
  const size_t warm = n / 5;
  uint64_t hits = 0;
  const uint64_t cpu0 = cpu_ns();
  for (size_t i = 0; i < n; i++) {
    const uint32_t page = t.page[i];
    if (resident[page]) {
      hits += i >= warm;
    } else if (used < s.frames) {
      used++;
      resident[page] = 1;
    } else {
      for (;;) {  // drop stale entries (pages hit since, or gone)
        const auto [when, victim] = heap.top();
        heap.pop();
        if (resident[victim] && current_next[victim] == when) {
          resident[victim] = 0;
          break;
        }
      }
      resident[page] = 1;
    }
    current_next[page] = next_use[i];
    heap.push({next_use[i], page});
  }
  Result r;
  r.hit = double(hits) / double(n - warm);
  r.cpu_ns_per_access = double(cpu_ns() - cpu0) / double(n);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const Settings s = parse(argc, argv);
  const EvictionKind kinds[] = {EvictionKind::kLru, EvictionKind::kFifo, EvictionKind::kRandom, EvictionKind::kCflru, EvictionKind::kEpoch};
  using pd3::ycsb::Distribution;
  std::printf("tier simulator: %u frames (%llu-byte pages), data set 4x, %llu accesses per workload, epoch period %u us, sample %u, share %g\n",
              s.frames, (unsigned long long)s.page_size, (unsigned long long)s.accesses, s.epoch_period_us, s.epoch_sample, s.epoch_share);
  std::printf("virtual clock: a hit %llu ns, a miss %llu ns; 'unpaced': no clock, epoch's sampler thread on wall time\n",
              (unsigned long long)s.hit_ns, (unsigned long long)s.miss_ns);
  std::printf("%-11s %-7s %8s %11s %12s %9s %12s %12s %12s\n", "workload", "policy", "hit", "writebacks", "cpu ns/acc", "virtual s",
              "Macc/s", "unpaced hit", "unpaced cpu");
  std::string json = "{\"frames\":" + std::to_string(s.frames) + ",\"accesses\":" + std::to_string(s.accesses) +
                     ",\"cpu_clock\":\"virtual\",\"hit_ns\":" + std::to_string(s.hit_ns) + ",\"miss_ns\":" + std::to_string(s.miss_ns) +
                     ",\"epoch_period_us\":" + std::to_string(s.epoch_period_us) + ",\"epoch_sample\":" + std::to_string(s.epoch_sample);
  char buf[256];
  std::snprintf(buf, sizeof buf, ",\"epoch_share\":%g", s.epoch_share);
  json += buf;
  auto add = [&](const std::string& key, double v) {
    std::snprintf(buf, sizeof buf, ",\"%s\":%.6g", key.c_str(), v);
    json += buf;
  };
  const struct {
    const char* name;
    char workload;
    Distribution dist;
  } workloads[] = {{"zipfian", 'C', Distribution::kZipfian},
                   {"uniform", 'C', Distribution::kUniform},
                   {"scan", 'E', Distribution::kZipfian},
                   {"zipfian-rw", 'A', Distribution::kZipfian}};
  double lru_hit = 0, epoch_hit = 0, belady_hit = 0, lru_cpu = 0, epoch_cpu = 0;
  for (const auto& w : workloads) {
    if (!s.only_workload.empty() && s.only_workload != w.name) continue;
    const Trace t = make_trace(w.name, w.workload, w.dist, s);
    const std::string prefix = std::string(w.name) == "zipfian" ? "" : (std::string(w.name) == "zipfian-rw" ? "zipfian_rw_" : std::string(w.name) + "_");
    for (EvictionKind k : kinds) {
      if (!s.only_policy.empty() && s.only_policy != pd3::tier::eviction_kind_name(k)) continue;
      FILE* reg = nullptr;
      if (!s.trace_out.empty() && k == EvictionKind::kLru && prefix.empty()) {
        reg = std::fopen(s.trace_out.c_str(), "w");
        if (reg == nullptr) usage_error("cannot write --trace-out '%s'", s.trace_out.c_str());
        std::fprintf(reg, "# pd3 registration trace v1\n");
      }
      const uint32_t repeat = prefix.empty() ? s.repeat : 1;
      const Result r = replay_median<true>(t, k, s, reg, repeat);
      if (reg && std::fclose(reg) != 0) usage_error("cannot write --trace-out '%s'", s.trace_out.c_str());
      const Result u = replay_median<false>(t, k, s, nullptr, repeat);
      const char* name = pd3::tier::eviction_kind_name(k);
      std::printf("%-11s %-7s %8.4f %11llu %12.1f %9.1f %12.2f %12.4f %12.1f\n", w.name, name, r.hit, (unsigned long long)r.writebacks,
                  r.cpu_ns_per_access, double(r.virtual_ns) / 1e9, r.accesses_per_s / 1e6, u.hit, u.cpu_ns_per_access);
      add(prefix + name + "_hit", r.hit);
      add(prefix + name + "_cpu_ns_per_access", r.cpu_ns_per_access);
      add(prefix + name + "_maccess_per_s", r.accesses_per_s / 1e6);
      add(prefix + name + "_unpaced_hit", u.hit);
      add(prefix + name + "_unpaced_cpu_ns_per_access", u.cpu_ns_per_access);
      if (k == EvictionKind::kLru) {  // exact integers: the clock and the periods it passed
        json += ",\"" + prefix + "virtual_ns\":" + std::to_string(r.virtual_ns);
        json += ",\"" + prefix + "epoch_periods\":" + std::to_string(r.periods);
      }
      if (w.workload == 'A') add(prefix + name + "_writebacks", double(r.writebacks));
      if (prefix.empty() && k == EvictionKind::kLru) lru_hit = r.hit, lru_cpu = r.cpu_ns_per_access;
      if (prefix.empty() && k == EvictionKind::kEpoch) epoch_hit = r.hit, epoch_cpu = r.cpu_ns_per_access;
    }
    if (s.only_policy.empty() && (w.workload == 'C' || w.workload == 'E') && w.dist == Distribution::kZipfian) {
      for (pd3::tier::PrefetchKind pk : {pd3::tier::PrefetchKind::kNone, pd3::tier::PrefetchKind::kNextN,
                                         pd3::tier::PrefetchKind::kBestOffset, pd3::tier::PrefetchKind::kLeap}) {
        const PrefetchResult pr = replay_prefetch(t, pk, s);
        const std::string pname = pd3::tier::prefetch_kind_name(pk);
        std::printf("%-11s lru+%-11s hit %.4f, %llu prefetched, %llu of them evicted unused\n", w.name, pname.c_str(), pr.hit,
                    (unsigned long long)pr.prefetches, (unsigned long long)pr.useless);
        std::string key = prefix + "lru_" + pname;
        std::replace(key.begin(), key.end(), '-', '_');
        add(key + "_hit", pr.hit);
        add(key + "_prefetches", double(pr.prefetches));
        add(key + "_useless", double(pr.useless));
      }
    }
    const Result b = belady(t, s);
    std::printf("%-11s %-7s %8.4f %11s %12s %12s\n", w.name, "belady", b.hit, "-", "-", "-");
    add(prefix + "belady_hit", b.hit);
    if (prefix.empty()) belady_hit = b.hit;
  }
  if (!s.trace_out.empty()) std::printf("registration trace: %s\n", s.trace_out.c_str());
  const bool t1 = epoch_hit >= 0.95 * lru_hit, t2 = epoch_cpu < lru_cpu, t3 = lru_hit <= belady_hit;
  std::printf("targets (zipfian, virtual clock): epoch_hit >= 0.95 lru_hit: %s; epoch cpu < lru cpu: %s; lru_hit <= belady_hit: %s\n",
              t1 ? "met" : "MISSED", t2 ? "met" : "MISSED", t3 ? "met" : "VIOLATED");
  json += std::string(",\"target_epoch_hit\":") + (t1 ? "true" : "false") + ",\"target_epoch_cpu\":" + (t2 ? "true" : "false") +
          ",\"check_lru_le_belady\":" + (t3 ? "true" : "false") + "}";
  std::printf("%s\n", json.c_str());
  return t3 ? 0 : 1;
}
