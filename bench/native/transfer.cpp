// transfer.cpp — the host side of `npm run bench -- transfer` (paper Appendix A): 64-byte writes
// and reads from this process to the memory server, either through the agent (offload: requests go
// into the shared request ring) or issued by the host itself (direct: the host library's direct
// mode over TCP). Measures throughput, this process's CPU time per op (getrusage) and the part of
// it spent in the kernel, and in offload mode the latency of single reads. Prints one JSON line.
// bench/transfer.ts drives it.
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "pd3/host.h"

#include "segment_cleanup.hpp"

namespace {

// Command line of one run.
struct Args {
  std::string mode = "offload";  // offload | direct
  std::string segment;           // offload: the segment to create
  std::string servers;           // direct: host:port list
  std::string token;
  uint32_t threads = 1;
  uint32_t window = 512;         // requests in flight per thread
  uint32_t size = 64;
  double seconds = 3;
  uint32_t latency_reads = 0;    // offload: single reads timed one by one after the run
  uint32_t region_bytes = 64u << 20;  // each thread's region; requests go to random offsets in it
  uint32_t publish_batch = 0;    // pd3_host_config.publish_batch, both modes (0: the library's default)
  uint64_t request_ring_bytes = 4u << 20;
  uint64_t response_ring_bytes = 8u << 20;
  bool register_buffers = true;  // direct: 0 sets PD3_HOST_DIRECT_UNREGISTERED
  // A diagnostic, not used by bench/transfer.ts: the host sleeps `sleep_us` each time another
  // `sleep_every` requests have completed (0: never), as it does between a real agent's bursts.
  // Against the instant agent it shows what a sleep alone costs the host (docs/benchmarks.md,
  // "What a sleep costs the host").
  uint32_t sleep_every = 0;
  uint32_t sleep_us = 0;
};

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// This process's CPU time so far: in user mode and in the kernel.
struct CpuTime {
  uint64_t user_ns = 0;
  uint64_t sys_ns = 0;
};

CpuTime cpu_time() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto ns = [](const timeval& t) { return uint64_t(t.tv_sec) * 1000000000ull + uint64_t(t.tv_usec) * 1000ull; };
  return {ns(ru.ru_utime), ns(ru.ru_stime)};
}

[[noreturn]] void die(const char* what, int rc) {
  std::fprintf(stderr, "transfer: %s: %s (%s)\n", what, pd3_status_name(rc), pd3_last_error());
  std::exit(1);
}

// Waits for one completion of a request on `h` and returns its status (and region for allocate).
int await_one(pd3_host* h, pd3_completion* c) {
  const uint64_t deadline = now_ns() + 10'000'000'000ull;
  while (now_ns() < deadline) {
    if (pd3_host_poll(h, c, 1) == 1) return c->status;
    pd3_host_wait(h, 1000);
  }
  return PD3_E_TIMEOUT;
}

// Allocates a region; retries while the agent is still connecting to the server (UNAVAILABLE).
uint32_t allocate_region(pd3_host* h, uint32_t bytes) {
  const uint64_t deadline = now_ns() + 10'000'000'000ull;
  for (;;) {
    pd3_completion c{};
    int rc = pd3_host_allocate(h, bytes, 0);
    if (rc < 0) die("allocate", rc);
    rc = await_one(h, &c);
    if (rc == PD3_OK) return c.region;
    if (rc != PD3_E_UNAVAILABLE || now_ns() > deadline) die("allocate completion", rc);
    usleep(20000);
  }
}

// Gives a region back, so that runs against a long-lived server do not pile regions up on it.
void free_region(pd3_host* h, uint32_t region) {
  pd3_completion c{};
  if (const int rc = pd3_host_deallocate(h, region, 0); rc < 0) die("deallocate", rc);
  if (const int rc = await_one(h, &c); rc != PD3_OK) die("deallocate completion", rc);
}

// One host thread: keeps `window` 64-byte requests in flight (alternating writes and reads at
// random offsets of its own region) until `stop`; counts completed ops.
void drive(pd3_host* h, uint32_t region, const Args& a, const std::atomic<bool>& stop, uint64_t* ops_out,
           uint64_t* errors_out) {
  std::vector<uint8_t> src(a.size, 0x5A);
  std::vector<uint8_t> dst(size_t(a.window) * a.size);
  std::vector<uint32_t> free_slots(a.window);
  for (uint32_t i = 0; i < a.window; ++i) free_slots[i] = i;
  pd3_completion done[256];
  uint64_t ops = 0, errors = 0, x = 0x9E3779B97F4A7C15ull ^ uint64_t(region);
  uint32_t inflight = 0;
  const uint32_t slots = a.region_bytes / a.size;
  while (!stop.load(std::memory_order_relaxed) || inflight > 0) {  // relaxed: a flag polled in a loop
    bool progress = false;
    while (!stop.load(std::memory_order_relaxed) && !free_slots.empty()) {  // relaxed: as above
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      const uint32_t off = uint32_t(x % slots) * a.size;
      const uint32_t slot = free_slots.back();
      const int rc = (x & 1) ? pd3_host_write(h, region, off, src.data(), a.size, slot)
                             : pd3_host_read(h, region, off, a.size, dst.data() + size_t(slot) * a.size, slot);
      if (rc == PD3_E_AGAIN) break;  // ring full: collect completions first
      if (rc < 0) die("issue", rc);
      free_slots.pop_back();
      ++inflight;
      progress = true;
    }
    const int n = pd3_host_poll(h, done, 256);
    if (n < 0) die("poll", n);
    for (int i = 0; i < n; ++i) {
      free_slots.push_back(uint32_t(done[i].user_data));
      errors += done[i].status != PD3_OK;
    }
    inflight -= uint32_t(n);
    if (a.sleep_every > 0 && ops / a.sleep_every != (ops + uint64_t(n)) / a.sleep_every) usleep(a.sleep_us);
    ops += uint64_t(n);
    if (n > 0) progress = true;
    // Nothing to do: block instead of spinning, so CPU time counts work, not waiting.
    if (!progress) pd3_host_wait(h, 1000);
  }
  *ops_out = ops;
  *errors_out = errors;
}

void latency(pd3_host* h, uint32_t region, uint32_t reads, double* p50, double* p99) {
  std::vector<double> us;
  uint8_t buf[64];
  pd3_completion c{};
  for (uint32_t i = 0; i < reads; ++i) {
    const uint64_t t0 = now_ns();
    const int rc = pd3_host_read(h, region, (i * 64u) % (1u << 20), 64, buf, i);
    if (rc < 0) die("latency read", rc);
    while (pd3_host_poll(h, &c, 1) == 0) {
    }  // spin: this measures the request's latency, not CPU
    us.push_back(double(now_ns() - t0) / 1000.0);
  }
  std::sort(us.begin(), us.end());
  *p50 = us[us.size() / 2];
  *p99 = us[std::min(us.size() - 1, us.size() * 99 / 100)];
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--mode") a.mode = v;
    else if (k == "--segment") a.segment = v;
    else if (k == "--servers") a.servers = v;
    else if (k == "--token") a.token = v;
    else if (k == "--threads") a.threads = uint32_t(std::stoul(v));
    else if (k == "--window") a.window = uint32_t(std::stoul(v));
    else if (k == "--size") a.size = uint32_t(std::stoul(v));
    else if (k == "--seconds") a.seconds = std::stod(v);
    else if (k == "--latency-reads") a.latency_reads = uint32_t(std::stoul(v));
    else if (k == "--publish-batch") a.publish_batch = uint32_t(std::stoul(v));
    else if (k == "--request-ring-bytes") a.request_ring_bytes = std::stoull(v);
    else if (k == "--response-ring-bytes") a.response_ring_bytes = std::stoull(v);
    else if (k == "--region-bytes") a.region_bytes = uint32_t(std::stoul(v));
    else if (k == "--register" && (v == "0" || v == "1")) a.register_buffers = v == "1";
    else if (k == "--sleep-every") a.sleep_every = uint32_t(std::stoul(v));
    else if (k == "--sleep-us") a.sleep_us = uint32_t(std::stoul(v));
    else {
      std::fprintf(stderr, "transfer: unknown option %s\n", k.c_str());
      std::exit(2);
    }
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  if (a.size == 0 || a.region_bytes < a.size) {
    std::fprintf(stderr, "transfer: --region-bytes (%u) must be at least --size (%u), which must not be 0\n", a.region_bytes, a.size);
    return 2;
  }
  // Each handle holds its window's ids plus up to 64 it took from the core and has not used yet
  // (host_core.hpp, IdCache): past the core's ids, a request would fail with PD3_E_INFLIGHT.
  if (a.threads == 0 || uint64_t(a.threads) * (uint64_t(a.window) + 64) > PD3_MAX_INFLIGHT || a.window == 0) {
    std::fprintf(stderr, "transfer: --threads (%u) x (--window (%u) + 64 ids a handle may hold unused) must be at most %u, with neither 0\n",
                 a.threads, a.window, PD3_MAX_INFLIGHT);
    return 2;
  }
  const bool direct = a.mode == "direct";
  pd3_host_config cfg{};
  const std::string name = a.segment.empty() ? "pd3-bench-transfer-" + std::to_string(getpid()) : a.segment;
  cfg.name = name.c_str();
  cfg.flags = PD3_HOST_REPLACE | (direct ? PD3_HOST_DIRECT_ONLY : 0) | (a.register_buffers ? 0 : PD3_HOST_DIRECT_UNREGISTERED);
  cfg.direct_servers = a.servers.c_str();
  cfg.direct_token = a.token.c_str();
  cfg.sizes.request_ring_bytes = a.request_ring_bytes;
  cfg.sizes.response_ring_bytes = a.response_ring_bytes;
  cfg.publish_batch = a.publish_batch;
  pd3_host* owner = nullptr;
  if (const int rc = pd3_host_create(&cfg, &owner)) die("create", rc);
  pd3::bench::unlink_segment_at_exit(pd3_host_name(owner));  // also when a failure exits early
  if (!direct) {
    std::printf("{\"segment\":\"%s\"}\n", name.c_str());  // the driver starts the agent now
    std::fflush(stdout);
    const uint64_t deadline = now_ns() + 20'000'000'000ull;
    while (!pd3_host_agent_alive(owner) && now_ns() < deadline) usleep(1000);
    if (!pd3_host_agent_alive(owner)) die("agent never attached", PD3_E_AGENT_DOWN);
  }
  std::vector<pd3_host*> handles(a.threads);
  std::vector<uint32_t> regions(a.threads);
  for (uint32_t t = 0; t < a.threads; ++t) {
    if (const int rc = pd3_host_attach(name.c_str(), &handles[t])) die("attach", rc);
    regions[t] = allocate_region(handles[t], a.region_bytes);
  }
  std::atomic<bool> stop{false};
  std::vector<uint64_t> ops(a.threads), errors(a.threads);
  std::vector<std::thread> threads;
  const CpuTime cpu0 = cpu_time();
  const uint64_t t0 = now_ns();
  for (uint32_t t = 0; t < a.threads; ++t)
    threads.emplace_back(drive, handles[t], regions[t], std::cref(a), std::cref(stop), &ops[t], &errors[t]);
  usleep(useconds_t(a.seconds * 1e6));
  stop.store(true, std::memory_order_relaxed);  // relaxed: the threads only poll it
  for (auto& th : threads) th.join();
  const uint64_t wall = now_ns() - t0;
  const CpuTime cpu1 = cpu_time();
  const uint64_t user = cpu1.user_ns - cpu0.user_ns, sys = cpu1.sys_ns - cpu0.sys_ns, cpu = user + sys;
  uint64_t total = 0, errs = 0;
  for (uint32_t t = 0; t < a.threads; ++t) total += ops[t], errs += errors[t];
  double p50 = 0, p99 = 0;
  if (a.latency_reads > 0) latency(handles[0], regions[0], a.latency_reads, &p50, &p99);
  std::printf("{\"mode\":\"%s\",\"threads\":%u,\"window\":%u,\"ops\":%llu,\"errors\":%llu,\"seconds\":%.3f,"
              "\"mops\":%.4f,\"host_cpu_ns_per_op\":%.1f,\"host_sys_ns_per_op\":%.1f,"
              "\"host_cpu_cores\":%.3f,\"p50_us\":%.2f,\"p99_us\":%.2f}\n",
              a.mode.c_str(), a.threads, a.window, (unsigned long long)total, (unsigned long long)errs,
              double(wall) / 1e9, double(total) / (double(wall) / 1e3), total ? double(cpu) / double(total) : 0.0,
              total ? double(sys) / double(total) : 0.0,
              double(cpu) / double(wall), p50, p99);
  for (uint32_t t = 0; t < a.threads; ++t) free_region(handles[t], regions[t]);
  for (pd3_host* h : handles) pd3_host_close(h);
  pd3_host_close(owner);
  return errs == 0 ? 0 : 1;
}
