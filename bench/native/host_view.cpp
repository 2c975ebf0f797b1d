// host_view.cpp — Host View lookups (paper §5.2, Fig. 4-5) side by side with absl::flat_hash_set
// and std::unordered_set, a batch-size sweep and the Fig. 4 ablation. bench/host-view.ts adds the
// JS Set baseline and prints the merged JSON.
//
// Usage: pd3_bench_host_view [--quick] [--keys N] [--lookups N] [--reps R] [--batch B] [--seed S]
//                            [--ablation | --no-ablation] [--descriptor D] [--window W] [--poll-us P]
//                            [--diag-2t] [--direct-2t] [--no-baselines]
//   Full run: 100M keys, 16M lookups per pass, ablation on.
//   --quick: 20M keys, 4M lookups per pass, ablation off (its four extra tables do not fit the 60 s
//   budget; --ablation forces it). --batch B skips the sweep. --no-baselines skips absl and std
//   (diagnostics only; their JSON fields are then null).
//
// Workload (identical for every structure)
//   * N distinct 64-bit keys: key(i) = mix64(i * odd + seed), a bijection of i, so keys never repeat
//     and the L/2 absent keys (i in [N, N + L/2)) are never among the N present ones.
//   * Each structure holds all N keys. PD3 stores host_view_key_hash(&key, 8) (a Host View holds key
//     hashes); its table is created with capacity N and max_load 0.8: the 80 % load design point.
//   * A lookup stream of L keys, exactly half present (drawn uniformly, with replacement, from the
//     inserted keys) and half absent, shuffled. It is generated before any timing.
//   * PD3 looks up pre-hashed keys: the agent hashes a key once when it parses a request, so the
//     stream holds host_view_key_hash(&key, 8). absl and std look up the raw 8-byte key with their
//     default hash (absl::Hash, std::hash), which is what a user of those tables writes. A separate
//     row ("pd3 1t incl. hashing") hashes inside the timed loop, for a like-for-like comparison.
//   * Every timed loop writes one verdict byte per lookup into an L-byte array; after timing, each
//     structure's verdicts are compared lookup by lookup with PD3's single-thread verdicts, and the
//     hit count must be L/2 (up to a 64-bit hash collision, which would be reported).
//
// What is timed
//   * pd3 1t: one thread calling CuckooSet::contains_batch over the stream, B keys per call.
//   * pd3 2t: a HostView with 2 shards (2 shard threads, each owning the keys whose hash it owns).
//     This machine has 2 cores, so the submitting thread must cost (almost) nothing or it would take
//     a core from a shard. The stream is therefore partitioned by shard_of() before timing (stable,
//     so verdicts map back to stream positions), cut into descriptors of D keys (default 32768), and
//     the submitter keeps W descriptors (default 8) in flight per shard: it pushes pointers, pops
//     completions and sleeps P us (default 2000) between polls while every shard has >= 2 queued
//     (W - 1 descriptors are > 5 ms of work, so a shard never runs dry while it sleeps). Each wake-up
//     preempts a shard thread, hence few, long sleeps: --diag-2t shows small descriptors with 0.1 ms
//     polls costing about 40 % of the throughput. A shard runs contains_batch over a descriptor, B keys
//     per Fig. 5 pass. Figure: L / wall time from the first push to the last completion; the
//     submitter's own CPU time is shown. --direct-2t adds the ceiling without the service: two
//     threads pinned to the two cores, each calling contains_batch on its own half-size table.
//     --diag-2t also times other submitter settings and a 1t pass next to the idle shard threads.
//   * pd3 1t passes run before and after the 2t passes (median over both), so the 2t/1t ratio is not
//     skewed by the machine getting faster or slower in between. They never run while a HostView
//     exists: its idle shard threads wake every 50 us and would slow a pass sharing their core.
//   * absl / std: one thread, verdict[i] = set.contains(key[i]) over the stream.
//   * absl + THP (full run only, an extra row): the same absl set with an allocator that puts its
//     array on transparent huge pages, to show how much of PD3's lead huge pages alone explain.
//   * Every figure is the median of R passes over the whole stream (R = 3; in the full run 5 for pd3
//     1t incl. hashing and 2t; pd3 1t gets R before and R after the 2t passes). A pass during which
//     other processes used more than 0.2 core (/proc/stat) is run again, up to 3R attempts (the VM
//     is shared); if too few passes were quiet, all of them count.
//
// Batch-size sweep: the sweep table is created with batch = 256 (CuckooSet::kMaxBatch) and called
// with B keys per contains_batch call, so one table serves every B (contains_batch processes at most
// `batch` keys per pass; with B <= 256 a call is exactly one Fig. 5 pass of B keys). Passes are
// interleaved across B. The best B (highest median) is used for everything after the sweep.
//
// Ablation (paper Fig. 4 order, one optimisation added per row; rows a-d are tables built with those
// options (two built at a time, on two threads: building is not timed) and measured one after the
// other; e and f are the headline pd3 1t and pd3 2t figures):
//   a plain cuckoo: 4 KiB pages, one key at a time (contains()), scalar bucket compare
//   b + huge pages   c + batching (hash and prefetch both buckets of B keys, then search)
//   d + SIMD compare   e + delayed second hash (second bucket hashed and probed only for misses)
//   f + sharding (2 shard threads through HostView)
//
// Memory at 100M keys: the keys and stream ~1.1 GB throughout; PD3 peaks at ~3 GB (the main table
// plus two ablation tables, or plus the HostView); every PD3 table is freed before absl (~1.2 GB) is
// built, absl before std (~4 GB). "huge" shows how much of a table the kernel really backed with
// 2 MiB pages (AnonHugePages growth in /proc/self/smaps_rollup while the table was built); pages()
// only reports what was asked for. absl/std bytes per key are the growth of malloc's in-use
// bytes (mallinfo2, plus the huge-page mappings of the THP variant) while the set was built.
//
// Output: human-readable tables on stdout, progress on stderr, and one JSON object as the last line.
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#if defined(PD3_BENCH_HAVE_ABSL)
#include "absl/container/flat_hash_set.h"
#endif

#include "dpu/cuckoo_set.hpp"
#include "dpu/host_view.hpp"
#include "common/mix64.hpp"
#include "pd3/status.h"

namespace {

using Clock = std::chrono::steady_clock;
using pd3::CuckooOptions;
using pd3::CuckooSet;
using pd3::HostView;
using pd3::HostViewBatch;
using pd3::HostViewOp;
using pd3::HostViewOptions;
using pd3::mix64;
using pd3::PageKind;
using pd3::SimdPath;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }


struct Rng {
  uint64_t s;
  uint64_t next() { return mix64(s += 0x9E3779B97F4A7C15ull); }
  uint64_t below(uint64_t n) { return uint64_t((unsigned __int128)next() * n >> 64); }
};

// Distinct for distinct i (odd multiplier, add and mix64 are all bijections).
inline uint64_t key_of(uint64_t i, uint64_t seed) { return mix64(i * 0xD6E8FEB86659FD93ull + seed); }
inline uint64_t hash_key(uint64_t key) { return pd3::host_view_key_hash(&key, sizeof key); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2);
}

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "pd3_bench_host_view: %s\n", what);
  std::exit(1);
}

void progress(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void progress(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fputs("  .. ", stderr);
  std::vfprintf(stderr, fmt, ap);
  std::fputc('\n', stderr);
  va_end(ap);
}

// ---- machine state ------------------------------------------------------------------------------

// Bytes of this process's anonymous memory on transparent huge pages.
uint64_t anon_huge_bytes() {
  FILE* f = std::fopen("/proc/self/smaps_rollup", "r");
  if (f == nullptr) return 0;
  char line[256];
  uint64_t kb = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "AnonHugePages: %" SCNu64 " kB", &kb) == 1) break;
  std::fclose(f);
  return kb * 1024;
}

// Bytes the baselines hold: malloc's in-use bytes plus the huge-page mappings of ThpAllocator.
uint64_t thp_mapped_bytes = 0;
uint64_t heap_in_use() {
  const struct mallinfo2 m = mallinfo2();
  return uint64_t(m.uordblks) + uint64_t(m.hblkhd) + thp_mapped_bytes;
}

double cpu_seconds(int who) {
  rusage ru{};
  getrusage(who, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// CPU seconds the whole machine spent busy (/proc/stat: not idle, not iowait); minus our own CPU
// time over an interval, it is the CPU other processes took.
double machine_busy_seconds() {
  FILE* f = std::fopen("/proc/stat", "r");
  if (f == nullptr) return -1;
  unsigned long long v[8] = {};
  const int n = std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                            &v[6], &v[7]);
  std::fclose(f);
  if (n < 8) return -1;
  return double(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / double(sysconf(_SC_CLK_TCK));
}

// One timed pass: wall seconds and the CPU other processes used meanwhile (in cores).
struct Pass {
  double seconds = 0;
  double other_cores = 0;
};

Pass timed(const std::function<void()>& fn) {
  const double busy0 = machine_busy_seconds(), self0 = cpu_seconds(RUSAGE_SELF);
  const auto t0 = Clock::now();
  fn();
  Pass p;
  p.seconds = seconds_since(t0);
  const double other = (machine_busy_seconds() - busy0) - (cpu_seconds(RUSAGE_SELF) - self0);
  p.other_cores = std::max(0.0, other) / p.seconds;
  return p;
}

// Quiet: other processes used less than 0.2 core on average (/proc/stat ticks are 10 ms, hence the
// 20 ms allowance).
bool quiet(const Pass& p) { return p.other_cores * p.seconds < 0.2 * p.seconds + 0.02; }

// ---- arguments ----------------------------------------------------------------------------------

struct Args {
  bool quick = false;
  uint64_t keys = 0;     // 0: 100M (full) / 20M (quick)
  uint64_t lookups = 0;  // 0: 16M (full) / 4M (quick)
  int reps = 3;
  uint32_t batch = 0;  // 0: sweep and use the best
  uint64_t seed = 0x9d3b0c5e1f2a4b67ull;
  int ablation = -1;             // -1: full run on, --quick off
  uint32_t descriptor = 32768;  // keys per HostViewBatch in the 2-shard run
  uint32_t window = 8;          // batches in flight per shard
  uint32_t poll_us = 2000;      // submitter sleep between polls
  bool diag_2t = false;         // also try other submitter settings
  bool direct_2t = false;       // also measure 2 plain threads without HostView
  bool baselines = true;
  bool explicit_no_ablation = false;
};

Args parse(int argc, char** argv) {
  Args a;
  auto num = [&](int& i) -> uint64_t {
    if (i + 1 >= argc) die("missing value after an option");
    char* end = nullptr;
    const double v = std::strtod(argv[++i], &end);  // accepts 1e8
    if (end == argv[i] || *end != 0 || v < 0) die("bad number");
    return uint64_t(v);
  };
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "--quick") a.quick = true;
    else if (s == "--keys") a.keys = num(i);
    else if (s == "--lookups") a.lookups = num(i);
    else if (s == "--reps") a.reps = int(num(i));
    else if (s == "--batch") a.batch = uint32_t(num(i));
    else if (s == "--seed") a.seed = num(i);
    else if (s == "--ablation") a.ablation = 1;
    else if (s == "--no-ablation") a.ablation = 0, a.explicit_no_ablation = true;
    else if (s == "--descriptor") a.descriptor = uint32_t(num(i));
    else if (s == "--window") a.window = uint32_t(num(i));
    else if (s == "--poll-us") a.poll_us = uint32_t(num(i));
    else if (s == "--diag-2t") a.diag_2t = true;
    else if (s == "--direct-2t") a.direct_2t = true;
    else if (s == "--no-baselines") a.baselines = false;
    else {
      std::fprintf(stderr,
                   "usage: pd3_bench_host_view [--quick] [--keys N] [--lookups N] [--reps R] [--batch B] [--seed S]\n"
                   "                           [--ablation|--no-ablation] [--descriptor D] [--window W] [--poll-us P]\n"
                   "                           [--diag-2t] [--direct-2t] [--no-baselines]\n");
      std::exit(2);
    }
  }
  if (a.keys == 0) a.keys = a.quick ? 20'000'000 : 100'000'000;
  if (a.lookups == 0) a.lookups = a.quick ? 4'000'000 : 16'000'000;
  a.lookups &= ~uint64_t(1);  // exactly half present
  if (a.ablation < 0) a.ablation = a.quick ? 0 : 1;
  if (a.reps <= 0 || a.lookups < 2 || a.batch > CuckooSet::kMaxBatch || a.descriptor == 0 || a.window == 0)
    die("bad arguments");
  return a;
}

// ---- the workload -------------------------------------------------------------------------------

struct Workload {
  uint64_t n = 0, l = 0;
  std::vector<uint64_t> keys;    // the N inserted keys, in insertion order
  std::vector<uint64_t> stream;  // L lookup keys
  std::vector<uint64_t> hashed;  // host_view_key_hash of each stream key
  std::vector<uint8_t> ref;      // PD3 1t verdicts (the reference)
  std::vector<uint8_t> got;      // verdicts of the structure being measured
};

void make_workload(const Args& a, Workload* w) {
  w->n = a.keys, w->l = a.lookups;
  w->keys.resize(w->n);
  for (uint64_t i = 0; i < w->n; ++i) w->keys[i] = key_of(i, a.seed);
  w->stream.resize(w->l);
  Rng rng{a.seed ^ 0x51ab1e};
  const uint64_t half = w->l / 2;
  for (uint64_t i = 0; i < half; ++i) w->stream[i] = w->keys[rng.below(w->n)];
  for (uint64_t i = half; i < w->l; ++i) w->stream[i] = key_of(w->n + (i - half), a.seed);
  for (uint64_t i = w->l - 1; i > 0; --i) std::swap(w->stream[i], w->stream[rng.below(i + 1)]);
  w->hashed.resize(w->l);
  for (uint64_t i = 0; i < w->l; ++i) w->hashed[i] = hash_key(w->stream[i]);
  w->ref.assign(w->l, 0);
  w->got.assign(w->l, 0);
}

// Compares w.got with the reference lookup by lookup (exits on any difference).
void check(const Workload& w, const char* who) {
  uint64_t differ = 0;
  for (uint64_t i = 0; i < w.l; ++i) differ += w.got[i] != w.ref[i];
  if (differ != 0) {
    std::fprintf(stderr, "pd3_bench_host_view: %s disagrees with pd3 1t on %" PRIu64 " of %" PRIu64 " lookups\n",
                 who, differ, w.l);
    std::exit(1);
  }
}

// ---- repeated, interleaved measurement ---------------------------------------------------------

// One figure: passes of `run` (which times one pass, then fills and checks w.got untimed).
struct Series {
  const char* name;
  std::function<Pass()> run;
  std::vector<double> quiet_mops, every_mops;
  std::vector<double> extra_quiet, extra_every;  // an optional per-pass figure (2t: submitter CPU)
  double extra_now = 0;                          // set by `run`
  int noisy = 0;

  const std::vector<double>& counted(int reps) const { return int(quiet_mops.size()) >= reps ? quiet_mops : every_mops; }
  double mops(int reps) const { return median(counted(reps)); }
  double extra(int reps) const { return median(int(quiet_mops.size()) >= reps ? extra_quiet : extra_every); }
};

// Runs the series' passes round-robin until each has `reps` quiet passes (at most 3 * reps rounds).
void run_interleaved(const Workload& w, const std::vector<Series*>& all, int reps) {
  for (int round = 0; round < 3 * reps; ++round) {
    bool more = false;
    for (Series* s : all) {
      if (int(s->quiet_mops.size()) >= reps) continue;
      const Pass p = s->run();
      const double m = double(w.l) / p.seconds / 1e6;
      s->every_mops.push_back(m);
      s->extra_every.push_back(s->extra_now);
      if (quiet(p)) {
        s->quiet_mops.push_back(m);
        s->extra_quiet.push_back(s->extra_now);
      } else {
        ++s->noisy;
      }
      more |= int(s->quiet_mops.size()) < reps;
    }
    if (!more) break;
  }
  for (const Series* s : all)
    if (s->noisy) progress("%s: %d pass(es) run again because other processes were busy", s->name, s->noisy);
}

// A series whose pass is `fn` writing w.got (timed), then checked.
Series simple_series(Workload& w, const char* name, std::function<void()> fn) {
  Series s{name, {}, {}, {}, {}, {}, 0, 0};
  s.run = [&w, name, fn] {
    std::fill(w.got.begin(), w.got.end(), 0xEE);
    const Pass p = timed(fn);
    check(w, name);
    return p;
  };
  return s;
}

double measure(const Args& a, Workload& w, const char* name, std::function<void()> fn) {
  Series s = simple_series(w, name, std::move(fn));
  run_interleaved(w, {&s}, a.reps);
  return s.mops(a.reps);
}

// ---- PD3 ----------------------------------------------------------------------------------------

struct Pd3Table {
  std::unique_ptr<CuckooSet> set;
  double build_s = 0;
  double huge_fraction = 0;  // share of the table on 2 MiB pages
  std::string pages() const {
    std::string s = pd3::page_kind_name(set->pages());
    if (set->pages() == PageKind::kTransparent) s += " (" + std::to_string(int(huge_fraction * 100 + 0.5)) + " %)";
    return s;
  }
};

// Builds one table per options entry, concurrently (one thread each: building is not timed). The
// AnonHugePages growth over the whole build is shared among the tables that asked for huge pages
// (with THP in "madvise" mode the others cannot get any).
std::vector<Pd3Table> build_pd3(const Workload& w, const std::vector<CuckooOptions>& opts,
                                const std::vector<const char*>& labels) {
  std::vector<Pd3Table> ts(opts.size());
  const uint64_t huge0 = anon_huge_bytes();
  for (size_t k = 0; k < opts.size(); ++k)
    if (const int rc = CuckooSet::create(opts[k], &ts[k].set)) {
      std::fprintf(stderr, "pd3_bench_host_view: CuckooSet::create failed (%d) for %s\n", rc, labels[k]);
      std::exit(1);
    }
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (size_t k = 0; k < opts.size(); ++k)
    threads.emplace_back([&, k] {
      for (uint64_t i = 0; i < w.n; ++i)
        if (ts[k].set->insert(hash_key(w.keys[i])) != PD3_OK) {
          std::fprintf(stderr, "pd3_bench_host_view: %s: insert %" PRIu64 " of %" PRIu64 " found no room\n", labels[k],
                       i, w.n);
          std::exit(1);
        }
      ts[k].build_s = seconds_since(t0);
    });
  for (auto& t : threads) t.join();
  const double huge = double(anon_huge_bytes() - huge0);
  double asked = 0;
  for (const Pd3Table& t : ts)
    if (t.set->pages() == PageKind::kTransparent) asked += double(t.set->bytes());
  for (size_t k = 0; k < ts.size(); ++k) {
    Pd3Table& t = ts[k];
    if (t.set->size() != w.n) die("table size differs from the number of keys");
    if (t.set->pages() == PageKind::kTransparent) t.huge_fraction = asked > 0 ? std::min(1.0, huge / asked) : 0;
    else if (t.set->pages() == PageKind::kHugeTlb) t.huge_fraction = 1;
    progress("%s: %" PRIu64 " keys inserted in %.1f s (%.2f M/s%s), %s pages (%.0f %% on 2 MiB pages), %u stashed",
             labels[k], w.n, t.build_s, double(w.n) / t.build_s / 1e6, ts.size() > 1 ? ", built alongside another" : "",
             pd3::page_kind_name(t.set->pages()), t.huge_fraction * 100, t.set->stashed());
  }
  return ts;
}

void pd3_pass(const CuckooSet& t, Workload& w, uint32_t b) {
  const uint64_t* h = w.hashed.data();
  uint8_t* out = w.got.data();
  for (uint64_t at = 0; at < w.l; at += b) t.contains_batch(h + at, std::min<uint64_t>(b, w.l - at), out + at);
}

// The same with hashing in the loop (raw keys in, as absl and std get them).
void pd3_pass_hashing(const CuckooSet& t, Workload& w, uint32_t b) {
  uint64_t buf[CuckooSet::kMaxBatch];
  const uint64_t* k = w.stream.data();
  uint8_t* out = w.got.data();
  for (uint64_t at = 0; at < w.l; at += b) {
    const uint64_t m = std::min<uint64_t>(b, w.l - at);
    for (uint64_t j = 0; j < m; ++j) buf[j] = hash_key(k[at + j]);
    t.contains_batch(buf, m, out + at);
  }
}

// ---- PD3 through HostView (shard threads) -------------------------------------------------------

struct Sharded {
  std::unique_ptr<HostView> hv;
  uint32_t shards = 0;
  double build_s = 0;
  std::vector<std::vector<uint64_t>> part;   // the stream's hashes, by shard, in stream order
  std::vector<std::vector<uint8_t>> verdict;  // their verdicts

  struct Config {
    uint32_t descriptor, window, poll_us;
  };

  void build(const Args& a, Workload& w, uint32_t nshards, uint32_t b) {
    shards = nshards;
    HostViewOptions o;
    o.capacity = w.n;
    o.shards = shards;
    o.queue_depth = std::max<uint32_t>(64, 2 * a.window);
    o.table.max_load = 0.8;
    o.table.batch = b;
    if (const int rc = HostView::create(o, &hv)) {
      std::fprintf(stderr, "pd3_bench_host_view: HostView::create failed (%d)\n", rc);
      std::exit(1);
    }
    // HostView::run routes each chunk to the shards, which insert in parallel.
    const auto t0 = Clock::now();
    constexpr uint64_t kChunk = uint64_t(1) << 22;
    std::vector<uint64_t> h(kChunk);
    std::vector<uint8_t> v(kChunk);
    for (uint64_t at = 0; at < w.n; at += kChunk) {
      const uint64_t m = std::min(kChunk, w.n - at);
      for (uint64_t j = 0; j < m; ++j) h[j] = hash_key(w.keys[at + j]);
      hv->run(HostViewOp::kInsert, h.data(), m, v.data());
      for (uint64_t j = 0; j < m; ++j)
        if (v[j] != 1) die("HostView insert found no room");
    }
    build_s = seconds_since(t0);
    if (hv->size() != w.n) die("HostView size differs from the number of keys");
    progress("HostView %u shards: %" PRIu64 " keys inserted in %.1f s (%.2f M/s), %s pages", shards, w.n, build_s,
             double(w.n) / build_s / 1e6, pd3::page_kind_name(hv->pages()));
    // Partition the stream by shard before any timing.
    part.assign(shards, {});
    verdict.assign(shards, {});
    for (uint64_t i = 0; i < w.l; ++i) part[hv->shard_of(w.hashed[i])].push_back(w.hashed[i]);
    for (uint32_t s = 0; s < shards; ++s) verdict[s].assign(part[s].size(), 0);
  }

  // One pass over the stream; *cpu_share = the submitter's CPU time / wall time. Checks verdicts.
  Pass pass(Workload& w, const Config& c, double* cpu_share, uint64_t* polls_out) {
    for (auto& v : verdict) std::fill(v.begin(), v.end(), 0xEE);
    std::vector<uint64_t> next(shards, 0);
    std::vector<uint32_t> inflight(shards, 0);
    uint64_t polls = 0;
    const double cpu0 = cpu_seconds(RUSAGE_THREAD);
    const Pass p = timed([&] {
      for (;;) {
        ++polls;
        bool busy = false, starving = false;
        for (uint32_t s = 0; s < shards; ++s) {
          HostViewBatch done;
          while (hv->complete(s, &done)) --inflight[s];
          while (inflight[s] < c.window && next[s] < part[s].size()) {
            const uint32_t m = uint32_t(std::min<uint64_t>(c.descriptor, part[s].size() - next[s]));
            if (!hv->submit(s, {HostViewOp::kLookup, m, part[s].data() + next[s], verdict[s].data() + next[s], next[s]}))
              break;  // queue full: try again after the pause
            next[s] += m;
            ++inflight[s];
          }
          busy |= inflight[s] > 0;
          // Fewer than 2 batches queued although work is left (the queue was full): poll again soon.
          starving |= inflight[s] < 2 && next[s] < part[s].size();
        }
        if (!busy) break;
        if (starving) std::this_thread::yield();
        else std::this_thread::sleep_for(std::chrono::microseconds(c.poll_us));
      }
    });
    if (cpu_share) *cpu_share = (cpu_seconds(RUSAGE_THREAD) - cpu0) / p.seconds;
    if (polls_out) *polls_out = polls;
    // Verdicts back to stream order (the partition is stable), then checked.
    std::vector<uint64_t> cursor(shards, 0);
    for (uint64_t i = 0; i < w.l; ++i) {
      const uint32_t sh = hv->shard_of(w.hashed[i]);
      w.got[i] = verdict[sh][cursor[sh]++];
    }
    check(w, "pd3 HostView");
    return p;
  }
};

// Diagnostic: the 2-thread ceiling without the service. Two threads pinned to cores 0 and 1, each
// owning a CuckooSet with the keys shard_of() gives it (as in HostView), each looking up its part of
// the stream with contains_batch; the main thread waits in join(). Figure: L / time until both end.
double measure_direct_2t(const Args& a, Workload& w, uint32_t b) {
  std::unique_ptr<CuckooSet> t[2];
  std::vector<uint64_t> part[2];
  std::vector<uint8_t> verdict[2];
  auto shard_of = [](uint64_t h) { return uint32_t((uint64_t(uint32_t(h)) * 2) >> 32); };  // as HostView's
  for (uint64_t i = 0; i < w.l; ++i) part[shard_of(w.hashed[i])].push_back(w.hashed[i]);
  for (int s = 0; s < 2; ++s) verdict[s].assign(part[s].size(), 0);
  auto pin = [](int core) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  };
  auto on_both = [&](const std::function<void(int)>& fn) {
    std::thread th0([&] { pin(0), fn(0); }), th1([&] { pin(1), fn(1); });
    th0.join();
    th1.join();
  };
  const auto b0 = Clock::now();
  on_both([&](int s) {
    CuckooOptions o;
    o.capacity = (w.n + 1) / 2;
    o.batch = b;
    o.seed = 0x5eed + s;
    if (CuckooSet::create(o, &t[s]) != PD3_OK) die("direct 2t: create failed");
    for (uint64_t i = 0; i < w.n; ++i) {
      const uint64_t h = hash_key(w.keys[i]);
      if (shard_of(h) == uint32_t(s) && t[s]->insert(h) != PD3_OK) die("direct 2t: insert failed");
    }
  });
  progress("direct 2t: two half tables built in %.1f s", seconds_since(b0));
  Series s{"direct 2t", {}, {}, {}, {}, {}, 0, 0};
  s.run = [&] {
    for (auto& v : verdict) std::fill(v.begin(), v.end(), 0xEE);
    const Pass p = timed([&] {
      on_both([&](int sh) {
        const uint64_t* h = part[sh].data();
        uint8_t* out = verdict[sh].data();
        const uint64_t n = part[sh].size();
        for (uint64_t at = 0; at < n; at += b) t[sh]->contains_batch(h + at, std::min<uint64_t>(b, n - at), out + at);
      });
    });
    std::vector<uint64_t> cursor(2, 0);
    for (uint64_t i = 0; i < w.l; ++i) {
      const uint32_t sh = shard_of(w.hashed[i]);
      w.got[i] = verdict[sh][cursor[sh]++];
    }
    check(w, "direct 2t");
    return p;
  };
  run_interleaved(w, {&s}, std::max(a.reps, 5));
  return s.mops(std::max(a.reps, 5));
}

// ---- baselines ----------------------------------------------------------------------------------

struct Baseline {
  bool ran = false;
  double mops = 0;
  double build_s = 0;
  double bytes_per_key = 0;
};

template <class Set>
Baseline measure_set(const Args& a, Workload& w, const char* name, bool last) {
  Baseline r;
  const uint64_t mem0 = heap_in_use(), huge0 = anon_huge_bytes();
  auto set = std::make_unique<Set>();
  const auto t0 = Clock::now();
  set->reserve(w.n);
  for (uint64_t i = 0; i < w.n; ++i) set->insert(w.keys[i]);
  r.build_s = seconds_since(t0);
  if (set->size() != w.n) die("baseline set size differs from the number of keys");
  const double bytes = double(heap_in_use() - mem0);
  r.bytes_per_key = bytes / double(w.n);
  progress("%s: %" PRIu64 " keys inserted in %.1f s (%.2f M/s), %.1f bytes/key, %.0f %% of them on 2 MiB pages", name,
           w.n, r.build_s, double(w.n) / r.build_s / 1e6, r.bytes_per_key,
           100.0 * double(anon_huge_bytes() - huge0) / std::max(1.0, bytes));
  const Set& s = *set;
  r.mops = measure(a, w, name, [&] {
    const uint64_t* k = w.stream.data();
    uint8_t* out = w.got.data();
    for (uint64_t i = 0; i < w.l; ++i) out[i] = s.contains(k[i]);
  });
  if (last) {
    // Freeing tens of millions of nodes takes seconds and nothing is built after this set: the
    // process exit returns the memory.
    (void)set.release();
    progress("%s: %.2f Mops/s", name, r.mops);
  } else {
    const auto t1 = Clock::now();
    set.reset();
    progress("%s: %.2f Mops/s, freed in %.1f s", name, r.mops, seconds_since(t1));
  }
  r.ran = true;
  return r;
}

#if defined(PD3_BENCH_HAVE_ABSL)
// An allocator that puts allocations of 2 MiB and more on transparent huge pages (mmap +
// MADV_HUGEPAGE), for the extra "absl + THP" row: how much of PD3's lead is huge pages alone.
template <class T>
struct ThpAllocator {
  using value_type = T;
  static constexpr size_t kHuge = size_t(2) << 20;
  ThpAllocator() = default;
  template <class U>
  ThpAllocator(const ThpAllocator<U>&) {}
  static size_t mapped(size_t n) { return (n * sizeof(T) + kHuge - 1) & ~(kHuge - 1); }
  T* allocate(size_t n) {
    if (n * sizeof(T) < kHuge) {
      void* p = std::malloc(n * sizeof(T));
      if (p == nullptr) throw std::bad_alloc();
      return static_cast<T*>(p);
    }
    void* p = mmap(nullptr, mapped(n), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    madvise(p, mapped(n), MADV_HUGEPAGE);
    thp_mapped_bytes += mapped(n);
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) {
    if (n * sizeof(T) < kHuge) {
      std::free(p);
    } else {
      munmap(p, mapped(n));
      thp_mapped_bytes -= mapped(n);
    }
  }
  template <class U>
  bool operator==(const ThpAllocator<U>&) const { return true; }
};
using AbslThpSet = absl::flat_hash_set<uint64_t, absl::Hash<uint64_t>, std::equal_to<uint64_t>, ThpAllocator<uint64_t>>;
#endif

// ---- output -------------------------------------------------------------------------------------

std::string num3(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.3f", v);
  return b;
}

std::string spread(const std::vector<double>& v) {
  if (v.empty()) return "";
  char b[64];
  std::snprintf(b, sizeof b, "%.2f..%.2f", *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end()));
  return b;
}

struct AblationRow {
  const char* step;
  const char* config;
  std::string pages;
  double mops;
};

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  const auto wall0 = Clock::now();
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const int head_reps = a.quick ? a.reps : std::max(a.reps, 5);

  std::printf("Host View lookups: %" PRIu64 " keys (8-byte, random), max_load 0.8, %" PRIu64
              " lookups per pass (half present, half absent)%s\n",
              a.keys, a.lookups, a.quick ? " [--quick]" : "");
  Workload w;
  {
    const auto t0 = Clock::now();
    make_workload(a, &w);
    progress("workload generated in %.1f s", seconds_since(t0));
  }

  // ---- PD3, one thread: the table, reference verdicts, batch-size sweep ---------------------------
  CuckooOptions main_opts;
  main_opts.capacity = w.n;
  main_opts.max_load = 0.8;
  main_opts.batch = CuckooSet::kMaxBatch;  // calls of B <= 256 keys are single Fig. 5 passes
  Pd3Table main_t = std::move(build_pd3(w, {main_opts}, {"pd3 table"})[0]);
  const CuckooSet& table = *main_t.set;
  const double bytes_per_key = double(table.bytes()) / double(w.n);
  const bool hugepages =
      table.pages() == PageKind::kHugeTlb || (table.pages() == PageKind::kTransparent && main_t.huge_fraction >= 0.5);
  const std::string simd = pd3::simd_path_name(table.simd());
  const std::string pages_name = pd3::page_kind_name(table.pages());

  pd3_pass(table, w, 32);
  w.ref = w.got;
  uint64_t ref_hits = 0;
  for (uint8_t v : w.ref) ref_hits += v;
  if (ref_hits != w.l / 2)
    std::printf("note: pd3 found %" PRIu64 " hits, expected %" PRIu64 " (a 64-bit hash collision)\n", ref_hits,
                w.l / 2);

  const uint32_t sweep[] = {1, 4, 8, 16, 32, 64, 128, 256};
  std::vector<Series> sweep_series;
  uint32_t best_b = a.batch;
  if (a.batch == 0) {
    static const char* const names[] = {"B=1", "B=4", "B=8", "B=16", "B=32", "B=64", "B=128", "B=256"};
    sweep_series.reserve(std::size(sweep));
    for (size_t j = 0; j < std::size(sweep); ++j)
      sweep_series.push_back(simple_series(w, names[j], [&, b = sweep[j]] { pd3_pass(table, w, b); }));
    std::vector<Series*> ptrs;
    for (Series& s : sweep_series) ptrs.push_back(&s);
    run_interleaved(w, ptrs, a.reps);
    double best = 0;
    for (size_t j = 0; j < std::size(sweep); ++j)
      if (sweep_series[j].mops(a.reps) > best) best = sweep_series[j].mops(a.reps), best_b = sweep[j];
  }
  progress("batch size %u", best_b);

  // ---- ablation rows a-d ------------------------------------------------------------------------
  std::vector<AblationRow> ablation;
  if (a.ablation) {
    struct Step {
      const char* step;
      const char* config;
      bool huge, batched;
      SimdPath simd;
    };
    const Step steps[] = {
        {"a", "plain cuckoo (4 KiB pages, one key at a time, scalar compare)", false, false, SimdPath::kScalar},
        {"b", "+ huge pages", true, false, SimdPath::kScalar},
        {"c", "+ batching (hash, prefetch both buckets of B keys, then search)", true, true, SimdPath::kScalar},
        {"d", "+ SIMD bucket compare", true, true, SimdPath::kBest},
    };
    for (size_t k = 0; k < std::size(steps); k += 2) {  // two tables built at a time, measured one by one
      std::vector<CuckooOptions> opts;
      std::vector<const char*> labels;
      for (size_t j = k; j < std::min(k + 2, std::size(steps)); ++j) {
        CuckooOptions o = main_opts;
        o.huge_pages = steps[j].huge;
        o.batched = steps[j].batched;
        o.simd = steps[j].simd;
        o.delayed_second = false;
        o.batch = best_b;
        opts.push_back(o);
        labels.push_back(steps[j].step);
      }
      std::vector<Pd3Table> ts = build_pd3(w, opts, labels);
      for (size_t j = 0; j < ts.size(); ++j) {
        const CuckooSet& t = *ts[j].set;
        const double m = measure(a, w, labels[j], [&] { pd3_pass(t, w, best_b); });
        progress("ablation %s: %.2f Mops/s", labels[j], m);
        ablation.push_back({steps[k + j].step, steps[k + j].config, ts[j].pages(), m});
      }
    }
  }

  // ---- headline: pd3 1t and 1t with hashing (interleaved), then 2t, then 1t again -----------------
  // HostView's idle shard threads wake every 50 us, which would slow a single-thread pass running
  // next to them, so 1t passes only run while no HostView exists: half before the 2t passes, half
  // after (the median over both halves evens out drift in the machine's speed).
  Series s1 = simple_series(w, "pd3 1t", [&] { pd3_pass(table, w, best_b); });
  Series s1h = simple_series(w, "pd3 1t hashing", [&] { pd3_pass_hashing(table, w, best_b); });
  run_interleaved(w, {&s1, &s1h}, head_reps);
  Sharded two;
  two.build(a, w, 2, best_b);
  const Sharded::Config cfg{a.descriptor, a.window, a.poll_us};
  Series s2{"pd3 2t", {}, {}, {}, {}, {}, 0, 0};
  uint64_t polls = 0;
  s2.run = [&] { return two.pass(w, cfg, &s2.extra_now, &polls); };
  run_interleaved(w, {&s2}, head_reps);
  const double pd3_2t = s2.mops(head_reps), submitter_share = s2.extra(head_reps);

  std::vector<std::string> diag_lines;
  if (a.diag_2t) {
    const Sharded::Config grid[] = {{512, 8, 100},     {2048, 8, 100},   {8192, 8, 100},   {8192, 8, 500},
                                    {8192, 32, 2000},  {32768, 4, 2000}, {32768, 8, 2000}, {65536, 4, 5000}};
    for (const Sharded::Config& c : grid) {
      Series d{"pd3 2t diag", {}, {}, {}, {}, {}, 0, 0};
      d.run = [&] { return two.pass(w, c, &d.extra_now, nullptr); };
      run_interleaved(w, {&d}, a.reps);
      char line[160];
      std::snprintf(line, sizeof line, "  batch %6u keys  window %3u  poll %5u us: %7.2f  (%s)  submitter %.1f %%",
                    c.descriptor, c.window, c.poll_us, d.mops(a.reps), spread(d.counted(a.reps)).c_str(),
                    d.extra(a.reps) * 100);
      diag_lines.push_back(line);
    }
  }
  if (a.diag_2t) {
    // Diagnostic: a single-thread pass while the 2 shard threads sit idle (they wake every 50 us).
    Series idle = simple_series(w, "pd3 1t next to idle shards", [&] { pd3_pass(table, w, best_b); });
    run_interleaved(w, {&idle}, a.reps);
    char line[160];
    std::snprintf(line, sizeof line, "  pd3 1t while the HostView's 2 shard threads are idle: %.2f  (%s)",
                  idle.mops(a.reps), spread(idle.counted(a.reps)).c_str());
    diag_lines.push_back(line);
  }
  const uint64_t sharded_bytes = two.hv->bytes();
  const double sharded_build_s = two.build_s;
  two.hv.reset();  // stops the shard threads
  {
    Series again = simple_series(w, "pd3 1t", [&] { pd3_pass(table, w, best_b); });
    run_interleaved(w, {&again}, head_reps);
    for (double m : again.counted(head_reps)) s1.quiet_mops.push_back(m), s1.every_mops.push_back(m);
  }
  const int r1 = 2 * head_reps;  // pd3 1t passes counted
  const double pd3_1t = s1.mops(r1), pd3_1t_hashing = s1h.mops(head_reps);
  progress("pd3 1t %.2f (with hashing %.2f), 2t %.2f Mops/s (submitter CPU %.1f %%, %" PRIu64 " polls per pass)",
           pd3_1t, pd3_1t_hashing, pd3_2t, submitter_share * 100, polls);
  if (a.ablation) {
    ablation.push_back({"e", "+ delayed second hash (= pd3 1t)", main_t.pages(), pd3_1t});
    ablation.push_back({"f", "+ sharding (2 shard threads through HostView, = pd3 2t)", main_t.pages(), pd3_2t});
  }

  const double direct_2t = a.direct_2t ? measure_direct_2t(a, w, best_b) : 0;
  if (a.direct_2t) progress("direct 2t: %.2f Mops/s", direct_2t);
  const double pd3_build_s = main_t.build_s, huge_fraction = main_t.huge_fraction;
  main_t.set.reset();

  // ---- baselines ----------------------------------------------------------------------------------
  Baseline absl_r, absl_thp, std_r;
#if defined(PD3_BENCH_HAVE_ABSL)
  if (a.baselines) absl_r = measure_set<absl::flat_hash_set<uint64_t>>(a, w, "absl::flat_hash_set", false);
  if (a.baselines && !a.quick) absl_thp = measure_set<AbslThpSet>(a, w, "absl::flat_hash_set + THP", false);
#endif
  if (a.baselines) std_r = measure_set<std::unordered_set<uint64_t>>(a, w, "std::unordered_set", true);

  // ---- report -------------------------------------------------------------------------------------
  std::printf("\n%-30s %9s  %-13s %10s %9s\n", "structure", "Mops/s", "passes", "bytes/key", "build s");
  std::printf("%-30s %9.2f  %-13s %10.2f %9.1f\n", "pd3 1t (pre-hashed)", pd3_1t, spread(s1.counted(r1)).c_str(),
              bytes_per_key, pd3_build_s);
  std::printf("%-30s %9.2f  %-13s\n", "pd3 1t incl. hashing", pd3_1t_hashing, spread(s1h.counted(head_reps)).c_str());
  std::printf("%-30s %9.2f  %-13s %10.2f %9.1f\n", "pd3 2t (HostView, 2 shards)", pd3_2t,
              spread(s2.counted(head_reps)).c_str(), double(sharded_bytes) / double(w.n), sharded_build_s);
  if (a.direct_2t)
    std::printf("%-30s %9.2f  %-13s   (diagnostic: 2 pinned threads, no HostView)\n", "pd3 2t direct", direct_2t, "");
  if (absl_r.ran)
    std::printf("%-30s %9.2f  %-13s %10.2f %9.1f\n", "absl::flat_hash_set 1t", absl_r.mops, "", absl_r.bytes_per_key,
                absl_r.build_s);
  else
    std::printf("%-30s %9s  (%s)\n", "absl::flat_hash_set 1t", "n/a",
#if defined(PD3_BENCH_HAVE_ABSL)
                "skipped: --no-baselines"
#else
                "Abseil not found at build time: baseline unavailable"
#endif
    );
  if (absl_thp.ran)
    std::printf("%-30s %9.2f  %-13s %10.2f %9.1f   (extra: absl's array on THP)\n", "absl::flat_hash_set + THP 1t",
                absl_thp.mops, "", absl_thp.bytes_per_key, absl_thp.build_s);
  if (std_r.ran)
    std::printf("%-30s %9.2f  %-13s %10.2f %9.1f\n", "std::unordered_set 1t", std_r.mops, "", std_r.bytes_per_key,
                std_r.build_s);
  else
    std::printf("%-30s %9s  (skipped: --no-baselines)\n", "std::unordered_set 1t", "n/a");
  std::printf("medians of %d passes (pd3 1t: %d before and %d after the 2t passes), %d (pd3 1t incl. hashing, 2t), "
              "%d (the rest)\n",
              r1, head_reps, head_reps, head_reps, a.reps);
  std::printf("simd path %s; PD3 table pages: %s (%.0f %% of it on 2 MiB pages); batch %u keys per contains_batch call\n",
              simd.c_str(), pages_name.c_str(), huge_fraction * 100, best_b);
  std::printf("pd3 2t: batches of %u keys, %u in flight per shard, polled every %u us; the submitter used %.1f %% of a "
              "core\n",
              a.descriptor, a.window, a.poll_us, submitter_share * 100);
  std::printf("verdicts: every structure agreed with pd3 1t on all %" PRIu64 " lookups of every pass; hits %" PRIu64
              " (%.2f %%)\n",
              w.l, ref_hits, 100.0 * double(ref_hits) / double(w.l));
  if (!diag_lines.empty()) {
    std::printf("\n--diag-2t: 2-shard submitter settings (Mops/s, median of %d, min..max)\n", a.reps);
    for (const std::string& l : diag_lines) std::printf("%s\n", l.c_str());
  }

  if (a.batch == 0) {
    std::printf("\nbatch-size sweep (pd3 1t, Mops/s, median of %d; min..max)\n", a.reps);
    for (size_t j = 0; j < std::size(sweep); ++j)
      std::printf("  B = %3u  %8.2f  (%s)%s\n", sweep[j], sweep_series[j].mops(a.reps),
                  spread(sweep_series[j].counted(a.reps)).c_str(), sweep[j] == best_b ? "  <- best" : "");
  }
  if (!ablation.empty()) {
    std::printf("\nablation (paper Fig. 4 order, each row adds one optimisation; B = %u)\n", best_b);
    std::printf("  %-4s %-66s %-12s %8s %7s %7s\n", "step", "configuration", "pages", "Mops/s", "gain", "vs a");
    for (size_t j = 0; j < ablation.size(); ++j) {
      const AblationRow& r = ablation[j];
      char gain[32] = "", total[32] = "";
      if (j > 0) std::snprintf(gain, sizeof gain, "%.2fx", r.mops / ablation[j - 1].mops);
      std::snprintf(total, sizeof total, "%.2fx", r.mops / ablation[0].mops);
      std::printf("  %-4s %-66s %-12s %8.2f %7s %7s\n", r.step, r.config, r.pages.c_str(), r.mops, gain, total);
    }
  } else if (a.quick && !a.explicit_no_ablation) {
    std::printf("\nablation: skipped in --quick (four more %" PRIu64 "-key tables add ~12 s, which with the JS "
                "baseline exceeds the 60 s budget); run the full benchmark or pass --ablation\n", w.n);
  } else {
    std::printf("\nablation: skipped (--no-ablation)\n");
  }

  std::printf("\ntargets:\n");
  if (absl_r.ran)
    std::printf("  pd3_mops_1t >= 2 x absl_mops_1t  : %s (%.2fx)\n", pd3_1t >= 2 * absl_r.mops ? "met" : "MISSED",
                pd3_1t / absl_r.mops);
  else
    std::printf("  pd3_mops_1t >= 2 x absl_mops_1t  : not measured (no absl figure)\n");
  std::printf("  pd3_mops_2t >= 1.6 x pd3_mops_1t : %s (%.2fx)\n", pd3_2t >= 1.6 * pd3_1t ? "met" : "MISSED",
              pd3_2t / pd3_1t);
  std::printf("  bytes_per_key <= 12              : %s (%.2f)\n", bytes_per_key <= 12 ? "met" : "MISSED", bytes_per_key);
  std::printf("native wall time %.1f s\n", seconds_since(wall0));

  std::string j = "{\"keys\":" + std::to_string(w.n);
  j += ",\"pd3_mops_1t\":" + num3(pd3_1t);
  j += ",\"pd3_mops_2t\":" + num3(pd3_2t);
  j += ",\"absl_mops_1t\":" + (absl_r.ran ? num3(absl_r.mops) : std::string("null"));
  j += ",\"std_mops_1t\":" + (std_r.ran ? num3(std_r.mops) : std::string("null"));
  j += ",\"simd\":\"" + simd + "\"";
  j += std::string(",\"hugepages\":") + (hugepages ? "true" : "false");
  j += ",\"bytes_per_key\":" + num3(bytes_per_key);
  j += ",\"best_batch\":" + std::to_string(best_b);
  j += ",\"lookups\":" + std::to_string(w.l);
  j += ",\"pd3_mops_1t_hashing\":" + num3(pd3_1t_hashing);
  j += ",\"pages\":\"" + pages_name + "\"";
  j += ",\"huge_page_fraction\":" + num3(huge_fraction);
  if (absl_thp.ran) j += ",\"absl_thp_mops_1t\":" + num3(absl_thp.mops);
  j += ",\"absl_bytes_per_key\":" + (absl_r.ran ? num3(absl_r.bytes_per_key) : std::string("null"));
  j += ",\"std_bytes_per_key\":" + (std_r.ran ? num3(std_r.bytes_per_key) : std::string("null"));
  if (a.direct_2t) j += ",\"pd3_direct_mops_2t\":" + num3(direct_2t);
  for (const AblationRow& r : ablation) j += std::string(",\"ablation_") + r.step + "_mops\":" + num3(r.mops);
  j += "}";
  std::printf("%s\n", j.c_str());
  return 0;
}
