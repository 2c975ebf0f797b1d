// loading_zone.cpp — the PD3 paper's Fig. 8 rebuilt side by side: checkAndReturn throughput of the
// PD3 Loading Zone against a spinlock-protected ring (bench/baselines/spinlock_zone.hpp) and a
// lock-free ring whose consumers CAS a shared Head (bench/baselines/cas_head_zone.hpp).
//
// Usage: pd3_bench_loading_zone [--quick] [--seconds S] [--reps N] [--only LIST]
//
// Workload (identical for the three zones)
//   * 8-byte keys and values. Every key is fresh (never produced before, never 0); the value is a
//     fixed function of the key and is checked on every hit.
//   * "pending" = live items in the zone: 64 (zone capacity 128) or 65,536 (capacity 131,072).
//   * Consumers look up keys that are present: each consumer looks up its own items (threads serve
//     different requests), in the order they were produced (prefetches arrive in request order).
//     The producer interleaves the consumers' items at random (requests of different threads
//     arrive interleaved), so a ring consumer scanning from Head meets the other consumer's items.
//   * A producer refills every consumed item with a fresh one.
//
// Who produces, and what is timed (the 2-core fairness choice)
//   A zone's hits can never outpace its producer, and this machine has 2 cores: a dedicated
//   producer thread next to 2 consumers would oversubscribe them (the scheduler parks one of the
//   three for milliseconds; the zone runs dry or a spinlock holder is descheduled), and a producer
//   folded into the consumer loops makes each zone's measured "contention" depend on how long its
//   own producer takes (PD3's producer costs more than a ring append, so its consumers would
//   overlap less). Instead every run is a sequence of rounds:
//       consume phase | barrier | produce phase | barrier
//   * Consume phase: every consumer (pinned to core 0, and core 1 with 2 consumers) makes its
//     calls back to back: C = R/T calls, R = min(pending, 4096) per round. This is the only timed
//     part, in chunks of 32 calls (a rdtsc pair per chunk). All consumers run it at once.
//   * Produce phase: one thread replaces the R consumed items, alternating between core 0 and
//     core 1 every round (with 1 consumer, a producer-only thread pinned to core 1 takes the odd
//     rounds). So, identically for every zone and thread count, half of the lookups read items the
//     caller's own core wrote and half read items the other core wrote (a DPU's DMA writes would
//     be read from the shared cache). Each zone uses its own producer: PD3 calls
//     LzProducer::clean() and produce() per item through an AgentSession attached to a real
//     segment (as the agent does); the spinlock ring appends a batch under one lock acquisition;
//     the CAS ring appends a batch and publishes Tail once.
//   * After a refill each consumer has pending/T + C/2 items, so the live count falls from
//     pending + R/2 to pending - R/2 during a consume phase: pending on average. Production is in
//     blocks aligned with consumption, so a round always consumes the oldest items and no zone has
//     to drop a live item for lack of room (the "dropped" column shows any that were).
//
// PD3 consumers call the C ABI pd3_host_check_and_return() on their own pd3_host handle
// (pd3_host_attach on the segment created with pd3_host_create), exactly what a user links against.
//
// Figures
//   * Mops/s (headline): consumer-path throughput, calls / time inside the timed chunks, summed over
//     the consumer threads. Only "kept" chunks count: the thread was not preempted around them
//     (the VM is shared with other work: the "other" column is the CPUs other processes used), and
//     with 2 consumers the other consumer was inside its own clean chunks for >= 80% of the chunk,
//     so a 2-thread figure always measures two consumers calling at the same time.
//   * mean: the same over all chunks (preempted ones included); wall: calls per wall-clock second
//     including producing and barriers; call%: share of wall time in timed chunks; kept%: share of
//     chunks kept; hit%: hits / calls; rounds: measured rounds; dropped: live items the zone threw
//     away (PD3: the control block's lz_reclaimed_unconsumed; they follow a missed lookup).
//   * Each configuration is repeated (repetitions interleaved across configurations); the median
//     repetition by Mops/s is shown with the min..max spread. The last line is one JSON object.
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <x86intrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/mix64.hpp"
#include "../baselines/cas_head_zone.hpp"
#include "../baselines/spinlock_zone.hpp"
#include "dpu/agent_session.hpp"
#include "pd3/host.h"

namespace {

using Clock = std::chrono::steady_clock;
using pd3::mix64;

constexpr uint32_t kChunkCalls = 32;             // calls timed together
constexpr size_t kMaxChunks = size_t(1) << 21;  // chunks recorded per thread and run (48 MiB)
// With two consumers a chunk counts as concurrent when the other consumer was inside its own clean
// chunks for at least this fraction of it.
constexpr double kMinOverlap = 0.8;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

inline uint64_t ticks() {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  return uint64_t(Clock::now().time_since_epoch().count());
#endif
}

inline uint64_t value_of(uint64_t key) { return key * 0x9E3779B97F4A7C15ull + 1; }

// CPU seconds the whole machine spent busy (from /proc/stat), and this process's CPU seconds; their
// difference over an interval is the CPU taken by other processes (the VM may be shared).
double machine_busy_seconds() {
  FILE* f = std::fopen("/proc/stat", "r");
  if (f == nullptr) return -1;
  unsigned long long v[10] = {};
  const int n = std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                            &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
  std::fclose(f);
  if (n < 8) return -1;
  const double hz = double(sysconf(_SC_CLK_TCK));
  return double(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / hz;  // user nice system irq softirq steal
}
double self_cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

bool pin_to_core(int core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

// ---- the three zones behind one interface -------------------------------------------------------

enum class ZoneKind { Pd3, Spinlock, CasHead };

const char* zone_name(ZoneKind k) {
  switch (k) {
    case ZoneKind::Pd3: return "pd3";
    case ZoneKind::Spinlock: return "spinlock";
    case ZoneKind::CasHead: return "cas-head";
  }
  return "?";
}

// The PD3 Loading Zone in a real segment: host handles for the consumers, an agent session producing.
class Pd3Zone {
 public:
  static std::unique_ptr<Pd3Zone> create(uint32_t capacity, int consumers, std::string* err) {
    static std::atomic<int> serial{0};
    std::unique_ptr<Pd3Zone> z(new Pd3Zone);
    z->name_ = "pd3-bench-lz-" + std::to_string(getpid()) + "-" + std::to_string(serial++);
    pd3_host_config cfg{};
    cfg.name = z->name_.c_str();
    cfg.sizes.request_ring_bytes = 64 * 1024;
    cfg.sizes.response_ring_bytes = 64 * 1024;
    // 32 bytes per 8+8-byte item (16-byte header, key, value); 2x so a record never waits for room.
    uint64_t data = 4096;
    while (data < uint64_t(capacity) * 64) data <<= 1;
    cfg.sizes.lz_data_bytes = data;
    cfg.sizes.lz_items = capacity;
    cfg.flags = PD3_HOST_REPLACE;
    if (pd3_host_create(&cfg, &z->owner_) != PD3_OK) {
      *err = std::string("pd3_host_create: ") + pd3_last_error();
      return nullptr;
    }
    if (pd3::AgentSession::attach(z->name_.c_str(), &z->agent_) != PD3_OK) {
      *err = std::string("AgentSession::attach: ") + pd3_last_error();
      return nullptr;
    }
    for (int t = 0; t < consumers; ++t) {
      pd3_host* h = nullptr;
      if (pd3_host_attach(z->name_.c_str(), &h) != PD3_OK) {
        *err = std::string("pd3_host_attach: ") + pd3_last_error();
        return nullptr;
      }
      z->handles_.push_back(h);
    }
    return z;
  }
  ~Pd3Zone() {
    for (pd3_host* h : handles_) pd3_host_close(h);
    agent_.reset();
    if (owner_ != nullptr) pd3_host_close(owner_);
  }

  int64_t check_and_return(int consumer, uint64_t key, uint64_t* value) {
    return pd3_host_check_and_return(handles_[consumer], &key, sizeof key, value, sizeof *value);
  }
  uint32_t produce(const uint64_t* keys, const uint64_t* values, uint32_t n) {
    pd3::LzProducer& zone = agent_->zone();
    zone.clean();  // free consumed items at Head, as the agent does after publishing
    for (uint32_t k = 0; k < n; ++k) {
      const int64_t seq = zone.produce(pd3_op_id(PD3_OP_PREFETCH, op_serial_++), &keys[k], sizeof keys[k],
                                       &values[k], sizeof values[k]);
      if (seq <= 0) std::abort();  // cannot happen with valid 8-byte items
    }
    return 0;  // drops are read from the control block's counter instead
  }
  uint64_t dropped() const {
    return __atomic_load_n(&pd3_host_control(owner_)->lz_reclaimed_unconsumed, __ATOMIC_RELAXED);
  }

 private:
  Pd3Zone() = default;
  std::string name_;
  pd3_host* owner_ = nullptr;
  std::unique_ptr<pd3::AgentSession> agent_;
  std::vector<pd3_host*> handles_;
  uint32_t op_serial_ = 0;
};

// A baseline ring with the same interface.
template <class Ring>
class BaselineZone {
 public:
  explicit BaselineZone(uint32_t capacity) : ring_(capacity) {}
  int64_t check_and_return(int, uint64_t key, uint64_t* value) { return ring_.check_and_return(key, value); }
  uint32_t produce(const uint64_t* keys, const uint64_t* values, uint32_t n) {
    const uint32_t d = ring_.produce(keys, values, n);
    dropped_.fetch_add(d, std::memory_order_relaxed);
    return d;
  }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  Ring ring_;
  std::atomic<uint64_t> dropped_{0};
};

// ---- harness -----------------------------------------------------------------------------------

enum Phase : int { kWait = 0, kWarm = 1, kMeasure = 2, kStop = 3 };

// Sense-free spin barrier (generation counter). The last thread to arrive snapshots the run phase
// and publishes it with the new generation, so every participant acts on the same phase per round.
class Barrier {
 public:
  Barrier(int n, const std::atomic<int>* phase) : n_(uint32_t(n)), phase_(phase) {}
  int wait() {
    const uint32_t g = gen_.load(std::memory_order_acquire);
    if (count_.fetch_add(1, std::memory_order_acq_rel) == n_ - 1) {
      count_.store(0, std::memory_order_relaxed);
      snapshot_.store(phase_->load(std::memory_order_acquire), std::memory_order_relaxed);
      gen_.store(g + 1, std::memory_order_release);  // release: our writes and the snapshot
    } else {
      // Spin, then yield: on a shared machine the thread we wait for may be descheduled.
      for (uint32_t spins = 0; gen_.load(std::memory_order_acquire) == g; ++spins) {
        if (spins < 20000) {
          cpu_relax();
        } else {
          sched_yield();
        }
      }
    }
    return snapshot_.load(std::memory_order_relaxed);
  }

 private:
  const uint32_t n_;
  const std::atomic<int>* phase_;
  alignas(64) std::atomic<uint32_t> count_{0};
  alignas(64) std::atomic<uint32_t> gen_{0};
  std::atomic<int> snapshot_{kWait};
};

// One timed burst of back-to-back checkAndReturn calls.
struct Chunk {
  uint64_t start, end;  // ticks
  uint32_t calls;
  bool clean;  // no involuntary context switch of this thread around its consume phase
};

// Involuntary context switches of the calling thread so far (the scheduler took its CPU away).
long involuntary_switches() {
  rusage ru{};
  if (getrusage(RUSAGE_THREAD, &ru) != 0) return -1;
  return ru.ru_nivcsw;
}

// What one participant thread measured (written by itself, read after join).
struct alignas(64) Worker {
  uint64_t calls = 0, hits = 0, errors = 0;
  uint64_t call_ticks = 0;  // ticks inside consume phases (the timed checkAndReturn bursts)
  uint64_t ticks = 0;       // ticks of the whole measured interval
  double seconds = 0;       // the same interval on the steady clock
  std::vector<Chunk> chunks;  // every timed chunk of the measured interval
  bool pinned = false;
};

struct RunConfig {
  ZoneKind kind;
  int consumers;
  uint32_t pending;
  uint32_t capacity;
  bool extra;  // informative row, not part of the JSON headline
};

struct RunResult {
  double mops = 0;                 // consumer path: calls per second over the kept chunks
  double mean_mops = 0;            // consumer path: all calls / all time in timed chunks
  std::vector<double> per_thread;  // the same, per consumer thread
  double wall_mops = 0;            // calls per wall-clock second (includes producing and barriers)
  double hit_rate = 0;
  double call_share = 0;  // fraction of the consumers' wall time spent in consume phases
  uint64_t rounds = 0;
  double other_cpus = 0;  // CPUs' worth of time other processes used during the measurement
  double kept_share = 1;  // fraction of timed chunks kept (clean, and for T = 2 concurrent)
  uint64_t dropped = 0;
  uint64_t errors = 0;
  bool pinned = true;
  bool valid = true;  // every consumer has kept chunks
};

struct Options {
  double seconds = 3.0;
  int reps = 5;
  bool quick = false;
  std::vector<bool> only;  // empty: every configuration
};

// One run of one configuration over zone type Z. Rounds of: [consume phase | barrier | produce
// phase | barrier]. See the comment at the top of the file.
template <class Z>
class Run {
 public:
  Run(Z& zone, const RunConfig& cfg, const Options& opt)
      : zone_(zone), cfg_(cfg), opt_(opt), barrier_(2, &phase_) {
    const uint32_t T = uint32_t(cfg.consumers);
    // R = min(pending, 4096) items are consumed per round, C = R/T by each consumer. After a refill
    // each consumer has S = pending/T + C/2 items in the zone, so live items fall from
    // pending + R/2 to pending - R/2 during a consume phase (mean: pending). Items are produced in
    // blocks of h = C/2 per consumer; a round consumes exactly the two oldest blocks.
    per_round_ = std::min<uint32_t>(cfg.pending, 4096) / T;
    slots_ = cfg.pending / T + per_round_ / 2;
    salt_ = mix64(uint64_t(Clock::now().time_since_epoch().count()));
    rng_ = salt_;
    workers_ = std::vector<Worker>(2);
  }

  RunResult execute() {
    const int T = cfg_.consumers;
    // Fill: items 0..S-1 of every consumer, in blocks, in the order they will be consumed.
    for (uint64_t b = 0; b < slots_ / (per_round_ / 2); ++b) produce_block(b);
    const uint64_t dropped0 = zone_.dropped();

    std::thread other([this, T] { participant(1, T == 2); });
    std::thread first([this] { participant(0, true); });
    while (ready_.load(std::memory_order_acquire) != 2) std::this_thread::yield();

    const double warm = std::max(0.2, opt_.seconds * 0.2);
    phase_.store(kWarm, std::memory_order_release);
    std::this_thread::sleep_for(std::chrono::duration<double>(warm));
    const double busy0 = machine_busy_seconds(), self0 = self_cpu_seconds();
    const auto m0 = Clock::now();
    phase_.store(kMeasure, std::memory_order_release);
    std::this_thread::sleep_for(std::chrono::duration<double>(opt_.seconds));
    phase_.store(kStop, std::memory_order_release);
    const double busy1 = machine_busy_seconds(), self1 = self_cpu_seconds();
    const double span = std::chrono::duration<double>(Clock::now() - m0).count();
    first.join();
    other.join();

    RunResult r;
    if (busy0 >= 0 && busy1 >= 0 && span > 0) r.other_cpus = std::max(0.0, ((busy1 - busy0) - (self1 - self0)) / span);
    uint64_t calls = 0, hits = 0, call_ticks = 0, all_ticks = 0;
    const std::vector<std::pair<uint64_t, uint64_t>> usable = usable_chunks(&r.kept_share);
    for (int t = 0; t < T; ++t) {
      const Worker& w = workers_[size_t(t)];
      // Tick rate from the thread's own measured interval (steady clock vs tick counter).
      const double tick_hz = w.seconds > 0 ? double(w.ticks) / w.seconds : 0;
      const double in_calls = tick_hz > 0 ? double(w.call_ticks) / tick_hz : 0;
      r.mean_mops += in_calls > 0 ? double(w.calls) / in_calls / 1e6 : 0;
      // The headline rate: calls per second over the kept chunks (see usable_chunks).
      const auto [kcalls, kticks] = usable[size_t(t)];
      if (kcalls == 0) r.valid = false;  // no clean chunk: this repetition measured nothing
      const double m = kticks > 0 && tick_hz > 0 ? double(kcalls) / (double(kticks) / tick_hz) / 1e6 : 0;
      r.per_thread.push_back(m);
      r.mops += m;
      r.wall_mops += w.seconds > 0 ? double(w.calls) / w.seconds / 1e6 : 0;
      calls += w.calls;
      hits += w.hits;
      r.errors += w.errors;
      call_ticks += w.call_ticks;
      all_ticks += w.ticks;
    }
    r.pinned = workers_[0].pinned && workers_[1].pinned;
    r.hit_rate = calls ? double(hits) / double(calls) : 0;
    r.call_share = all_ticks ? double(call_ticks) / double(all_ticks) : 0;
    r.rounds = measured_rounds_.load(std::memory_order_relaxed);
    r.dropped = zone_.dropped() - dropped0;
    return r;
  }

 private:
  // The chunks each consumer's rate is computed from: clean chunks (the thread was not preempted
  // around them; the VM is shared with other work), and with two consumers only those during which
  // the other consumer was inside its own clean chunks for at least kMinOverlap of the chunk. So a
  // 2-thread figure always measures two consumers calling at once, even when the scheduler parks
  // one of them for a while (the other would then run alone, uncontended). Returns per consumer
  // {calls, ticks} summed over the kept chunks; *share receives the fraction of chunks kept.
  std::vector<std::pair<uint64_t, uint64_t>> usable_chunks(double* share) const {
    const int T = cfg_.consumers;
    std::vector<std::pair<uint64_t, uint64_t>> out(static_cast<size_t>(T), {0, 0});
    size_t kept = 0, total = 0;
    for (int t = 0; t < T; ++t) {
      const auto& mine = workers_[size_t(t)].chunks;
      const std::vector<Chunk>* peer = T == 2 ? &workers_[size_t(1 - t)].chunks : nullptr;
      size_t j = 0;
      for (const Chunk& c : mine) {
        ++total;
        if (!c.clean) continue;
        if (peer != nullptr) {
          while (j < peer->size() && (*peer)[j].end <= c.start) ++j;
          uint64_t covered = 0;
          for (size_t k = j; k < peer->size() && (*peer)[k].start < c.end; ++k) {
            const Chunk& p = (*peer)[k];
            const uint64_t lo = std::max(c.start, p.start), hi = std::min(c.end, p.end);
            if (hi > lo && p.clean) covered += hi - lo;
          }
          if (double(covered) < kMinOverlap * double(c.end - c.start)) continue;
        }
        out[size_t(t)].first += c.calls;
        out[size_t(t)].second += c.end - c.start;
        ++kept;
      }
    }
    *share = total ? double(kept) / double(total) : 0;
    return out;
  }

  // Key of consumer t's n-th item: distinct for distinct (n, t), never 0, different every run.
  uint64_t key_of(uint32_t t, uint64_t n) const {
    const uint64_t k = mix64(((n << 8) | t) ^ salt_);
    return k != 0 ? k : 1;
  }

  // Produces block `b` of every consumer: items n in [b*h, (b+1)*h) of each, with the consumers'
  // items randomly interleaved (a shuffle), as requests of different threads arrive interleaved.
  // Each consumer's own items keep their order. Called by one thread at a time (barrier-ordered).
  void produce_block(uint64_t b) {
    const int T = cfg_.consumers;
    const uint32_t h = per_round_ / 2;
    order_.assign(size_t(h) * size_t(T), 0);
    for (size_t i = 0; i < order_.size(); ++i) order_[i] = uint8_t(i % size_t(T));
    for (size_t i = order_.size(); i > 1; --i) {  // Fisher-Yates
      rng_ += 0x9E3779B97F4A7C15ull;
      const size_t j = size_t(mix64(rng_) % i);
      std::swap(order_[i - 1], order_[j]);
    }
    constexpr uint32_t kChunk = 256;
    uint64_t keys[kChunk], vals[kChunk];
    uint64_t next[2] = {b * h, b * h};
    uint32_t n = 0;
    for (const uint8_t t : order_) {
      keys[n] = key_of(t, next[t]++);
      vals[n] = value_of(keys[n]);
      if (++n == kChunk) zone_.produce(keys, vals, n), n = 0;
    }
    if (n) zone_.produce(keys, vals, n);
  }

  // Thread `id` (0 or 1) pinned to core `id`. Consumer `id` if `consumes`; both threads take turns
  // as the producer of a round.
  void participant(int id, bool consumes) {
    Worker& w = workers_[size_t(id)];
    w.pinned = pin_to_core(id);
    ready_.fetch_add(1, std::memory_order_acq_rel);
    while (phase_.load(std::memory_order_acquire) == kWait) cpu_relax();
    std::vector<uint64_t> keys(per_round_);
    long switches = involuntary_switches();
    uint64_t round = 0;
    uint64_t tk0 = 0;
    Clock::time_point t0;
    bool measuring = false;
    for (;; ++round) {
      const int ph = barrier_.wait();  // start of the consume phase
      if (ph == kStop) break;
      if (ph == kMeasure && !measuring) {
        measuring = true;
        tk0 = ticks();
        t0 = Clock::now();
      }
      const uint64_t round_start = ticks();
      if (consumes) {
        const uint64_t first_item = round * per_round_;
        for (uint32_t i = 0; i < per_round_; ++i) keys[i] = key_of(uint32_t(id), first_item + i);
        uint64_t hits = 0, errors = 0;
        // Timed in chunks of up to kChunkCalls back-to-back calls (a rdtsc pair per chunk).
        for (uint32_t c0 = 0; c0 < per_round_; c0 += kChunkCalls) {
          const uint32_t c1 = std::min(per_round_, c0 + kChunkCalls);
          const uint64_t s0 = ticks();
          for (uint32_t i = c0; i < c1; ++i) {
            uint64_t v = 0;
            const int64_t r = zone_.check_and_return(id, keys[i], &v);
            if (r > 0) {
              ++hits;
              errors += (r != 8) | (v != value_of(keys[i]));
            }
          }
          const uint64_t s1 = ticks();
          if (measuring) {
            w.call_ticks += s1 - s0;
            if (w.chunks.size() < kMaxChunks) w.chunks.push_back(Chunk{s0, s1, c1 - c0, true});
          }
        }
        if (measuring) {
          w.calls += per_round_;
          w.hits += hits;
          w.errors += errors;
          // If the scheduler preempted this thread since the last check (which covers this consume
          // phase), its chunks of this round are not clean. Checked outside the timed chunks.
          const long now = involuntary_switches();
          if (now != switches || now < 0)
            for (size_t k = w.chunks.size(); k-- > 0 && w.chunks[k].end >= round_start;) w.chunks[k].clean = false;
          switches = now;
        }
      }
      barrier_.wait();  // every consumer is done: produce phase
      if (int(round % 2) == id) {
        // Replace the items consumed this round: the next two blocks of every consumer.
        const uint64_t first_block = slots_ / (per_round_ / 2) + 2 * round;
        produce_block(first_block);
        produce_block(first_block + 1);
        if (measuring) measured_rounds_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    if (measuring) {
      w.ticks = ticks() - tk0;
      w.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    }
  }

  Z& zone_;
  const RunConfig cfg_;
  const Options opt_;
  uint32_t per_round_ = 0;
  uint64_t slots_ = 0;
  uint64_t salt_ = 0;
  uint64_t rng_ = 0;            // producer's shuffle state (used by one thread at a time)
  std::vector<uint8_t> order_;  // producer's interleaving scratch
  std::vector<Worker> workers_;
  alignas(64) std::atomic<int> phase_{kWait};
  alignas(64) std::atomic<int> ready_{0};
  Barrier barrier_;
  std::atomic<uint64_t> measured_rounds_{0};
};

bool run_once(const RunConfig& cfg, const Options& opt, RunResult* out, std::string* err) {
  switch (cfg.kind) {
    case ZoneKind::Pd3: {
      auto z = Pd3Zone::create(cfg.capacity, cfg.consumers, err);
      if (!z) return false;
      *out = Run<Pd3Zone>(*z, cfg, opt).execute();
      return true;
    }
    case ZoneKind::Spinlock: {
      auto z = std::make_unique<BaselineZone<pd3bench::SpinlockZone>>(cfg.capacity);
      *out = Run<BaselineZone<pd3bench::SpinlockZone>>(*z, cfg, opt).execute();
      return true;
    }
    case ZoneKind::CasHead: {
      auto z = std::make_unique<BaselineZone<pd3bench::CasHeadZone>>(cfg.capacity);
      *out = Run<BaselineZone<pd3bench::CasHeadZone>>(*z, cfg, opt).execute();
      return true;
    }
  }
  return false;
}

void usage(FILE* f) {
  std::fprintf(f,
               "usage: pd3_bench_loading_zone [--quick] [--seconds S] [--reps N]\n"
               "  Fig. 8 of the PD3 paper side by side: checkAndReturn throughput of the PD3 Loading Zone,\n"
               "  a spinlock ring and a CAS-Head ring (8-byte keys and values, keys present).\n"
               "  --quick        1 s per measurement, median of 3 (default: 3 s, median of 5)\n"
               "  --seconds S    measured seconds per repetition\n"
               "  --reps N       repetitions per configuration (median reported)\n"
               "  --only LIST    run only these table rows (1-based, comma-separated); no JSON line\n");
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  bool seconds_set = false, reps_set = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      opt.quick = true;
    } else if (a == "--seconds" && i + 1 < argc) {
      opt.seconds = std::atof(argv[++i]);
      seconds_set = true;
      if (!(opt.seconds > 0) || opt.seconds > 3600) {
        std::fprintf(stderr, "--seconds must be in (0, 3600]\n");
        return 2;
      }
    } else if (a == "--reps" && i + 1 < argc) {
      opt.reps = std::atoi(argv[++i]);
      reps_set = true;
      if (opt.reps < 1 || opt.reps > 100) {
        std::fprintf(stderr, "--reps must be in [1, 100]\n");
        return 2;
      }
    } else if (a == "--only" && i + 1 < argc) {
      // Comma-separated row numbers (1-based, in table order), for investigating one row.
      opt.only.assign(8, false);
      for (const char* p = argv[++i]; *p;) {
        char* end = nullptr;
        const long row = std::strtol(p, &end, 10);
        if (end == p || row < 1 || row > 8) {
          std::fprintf(stderr, "--only takes row numbers 1..8, e.g. --only 2,4\n");
          return 2;
        }
        opt.only[size_t(row - 1)] = true;
        p = *end == ',' ? end + 1 : end;
      }
    } else if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    } else {
      usage(stderr);
      return 2;
    }
  }
  if (opt.quick) {
    if (!seconds_set) opt.seconds = 1.0;
    if (!reps_set) opt.reps = 3;
  }
  const unsigned cores = std::thread::hardware_concurrency();
  if (cores < 2) {
    std::fprintf(stderr, "this benchmark needs at least 2 CPUs (found %u)\n", cores);
    return 1;
  }

  const std::vector<RunConfig> configs = {
      {ZoneKind::Pd3, 1, 64, 128, false},          {ZoneKind::Pd3, 2, 64, 128, false},
      {ZoneKind::Spinlock, 1, 64, 128, true},      {ZoneKind::Spinlock, 2, 64, 128, false},
      {ZoneKind::CasHead, 1, 64, 128, true},       {ZoneKind::CasHead, 2, 64, 128, false},
      {ZoneKind::Pd3, 1, 65536, 131072, false},    {ZoneKind::Pd3, 2, 65536, 131072, true},
  };
  std::printf("PD3 Loading Zone vs baselines (paper Fig. 8): 8-byte keys and values, keys present\n");
  std::printf("cpus=%u  measured %.2f s x %d reps (median shown)  PD3 consumers call pd3_host_check_and_return (C ABI)\n",
              cores, opt.seconds, opt.reps);
  std::printf("rounds: consume phase (timed, all consumers at once) | barrier | produce phase (one core,\n"
              "alternating) | barrier; live items average `pending`; Mops/s = calls per second inside the timed\n"
              "chunks that were neither preempted nor (2 threads) without the other consumer calling\n");
  std::fflush(stdout);

  const auto wall0 = Clock::now();
  std::vector<std::vector<RunResult>> results(configs.size());
  for (int rep = 0; rep < opt.reps; ++rep) {
    for (size_t c = 0; c < configs.size(); ++c) {
      RunResult r;
      if (!opt.only.empty() && !opt.only[c]) {
        results[c].push_back(r);
        continue;
      }
      std::string err;
      if (!run_once(configs[c], opt, &r, &err)) {
        std::fprintf(stderr, "%s: %s\n", zone_name(configs[c].kind), err.c_str());
        return 1;
      }
      results[c].push_back(r);
    }
  }
  const double wall = std::chrono::duration<double>(Clock::now() - wall0).count();

  // Median repetition (by Mops/s) per configuration.
  std::vector<RunResult> med(configs.size());
  std::vector<double> lo(configs.size()), hi(configs.size());
  std::vector<int> invalid(configs.size(), 0);  // repetitions without a single clean chunk
  bool all_pinned = true;
  uint64_t total_errors = 0;
  for (size_t c = 0; c < configs.size(); ++c) {
    std::vector<RunResult> v;
    for (const RunResult& r : results[c]) {
      all_pinned = all_pinned && r.pinned;
      total_errors += r.errors;
      if (r.valid) v.push_back(r);
      else ++invalid[c];
    }
    if (v.empty()) continue;  // nothing measured (the machine was too busy): row shows zeros
    std::sort(v.begin(), v.end(), [](const RunResult& a, const RunResult& b) { return a.mops < b.mops; });
    med[c] = v[v.size() / 2];
    lo[c] = v.front().mops;
    hi[c] = v.back().mops;
  }

  std::printf("\n%-9s %3s %7s %9s %15s %-13s %8s %8s %8s %6s %6s %9s %7s %6s\n", "zone", "thr", "pending", "Mops/s",
              "(min..max)", "per-thread", "mean", "hit%", "wall", "call%", "kept%", "rounds", "dropped", "other");
  for (size_t c = 0; c < configs.size(); ++c) {
    if (!opt.only.empty() && !opt.only[c]) continue;
    const RunConfig& cfg = configs[c];
    const RunResult& r = med[c];
    std::string pt;
    for (size_t i = 0; i < r.per_thread.size(); ++i) {
      char b[32];
      std::snprintf(b, sizeof b, "%s%.2f", i ? " " : "", r.per_thread[i]);
      pt += b;
    }
    char range[48];
    std::snprintf(range, sizeof range, "(%.2f..%.2f)", lo[c], hi[c]);
    std::printf("%-9s %3d %7u %9.3f %15s %-13s %8.3f %7.3f%% %8.3f %5.1f%% %5.1f%% %9llu %7llu %6.2f%s\n",
                zone_name(cfg.kind), cfg.consumers, cfg.pending, r.mops, range, pt.c_str(), r.mean_mops, 100 * r.hit_rate,
                r.wall_mops, 100 * r.call_share, 100 * r.kept_share, (unsigned long long)r.rounds, (unsigned long long)r.dropped, r.other_cpus,
                cfg.extra ? "  (extra)" : "");
    if (invalid[c])
      std::printf("  ^ %d of %d repetitions measured nothing (every chunk preempted) and were left out\n", invalid[c],
                  opt.reps);
  }
  if (!all_pinned) std::printf("note: pinning threads to cores failed for some runs (sched_setaffinity refused)\n");
  if (total_errors) std::printf("ERROR: %llu hits returned a wrong value\n", (unsigned long long)total_errors);

  if (!opt.only.empty()) {  // partial run: no targets, no headline JSON
    std::printf("wall time: %.1f s\n", wall);
    return total_errors ? 1 : 0;
  }
  const double c1 = med[0].mops, c2 = med[1].mops, sl2 = med[3].mops, cas2 = med[5].mops, c64k = med[6].mops;
  const auto target = [](const char* what, double lhs, double rhs, double factor) {
    const bool ok = lhs >= factor * rhs;
    std::printf("target %-38s %s  (%.3f vs %.2f x %.3f = %.3f; ratio %.2f)\n", what, ok ? "MET   " : "MISSED", lhs,
                factor, rhs, factor * rhs, rhs > 0 ? lhs / rhs : 0.0);
    return ok;
  };
  std::printf("\n");
  target("c_mops_2t >= 3 x spinlock_mops_2t", c2, sl2, 3.0);
  target("c_mops_2t >= 1.5 x cas_head_mops_2t", c2, cas2, 1.5);
  target("c_mops_1t_64k >= 0.5 x c_mops_1t", c64k, c1, 0.5);
  std::printf("paper reference: ~9 M calls/s per thread; here pd3 2 threads: %.2f per thread\n", c2 / 2);
  std::printf("wall time: %.1f s\n", wall);
  std::printf(
      "{\"c_mops_1t\":%.3f,\"c_mops_2t\":%.3f,\"spinlock_mops_2t\":%.3f,\"cas_head_mops_2t\":%.3f,"
      "\"c_mops_1t_64k\":%.3f,\"c_per_thread_mops_2t\":%.3f,\"hit_rate_2t\":%.3f}\n",
      c1, c2, sl2, cas2, c64k, c2 / 2, med[1].hit_rate);
  return total_errors ? 1 : 0;
}
