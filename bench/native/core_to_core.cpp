// core_to_core.cpp — build/pd3_bench_core_to_core: how long one cache line takes to go from one CPU
// to another and back. Two threads, each pinned to one of the two CPUs, hand a counter back and
// forth through one line for about --ms milliseconds; the result is the mean time of a round trip.
//
// Why a benchmark needs it: the offloaded host and the agent talk through shared rings, so every
// request moves lines between their two CPUs. In a VM the guest cannot see where its vCPUs sit on
// the physical machine, and the hypervisor may move them: the same two vCPUs can share a cache
// (tens of ns per round trip) or sit on different dies (hundreds), and the ring-based rows of
// `bench transfer` move with it. bench/transfer.ts runs this before and after each run and prints it.
//
// Usage: pd3_bench_core_to_core CPU_A CPU_B [--ms N]   (N from 1 to 10000, default 200)
// Prints one JSON line: {"cpus":[A,B],"round_trips":R,"ns_per_round_trip":X}.
// Exit 2: a bad command line; exit 1: a CPU this process may not run on.
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// Pins the calling thread to `cpu`; returns 0 or the errno of the refusal.
int pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

// Parses a whole decimal number in [lo, hi]; false on anything else.
bool parse(const char* s, long lo, long hi, long* out) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

// The line the two threads hand back and forth: odd values are the initiator's, even the echoer's.
// Alone on its line, so that nothing else the threads touch moves with it.
struct alignas(64) Baton {
  std::atomic<uint64_t> value{0};
};
static_assert(sizeof(Baton) == 64, "the baton fills exactly one cache line");

}  // namespace

int main(int argc, char** argv) {
  long cpu_a = -1, cpu_b = -1, ms = 200;
  const long max_cpu = CPU_SETSIZE - 1;
  const bool ok = (argc == 3 || (argc == 5 && std::strcmp(argv[3], "--ms") == 0 && parse(argv[4], 1, 10000, &ms))) &&
                  parse(argv[1], 0, max_cpu, &cpu_a) && parse(argv[2], 0, max_cpu, &cpu_b) && cpu_a != cpu_b;
  if (!ok) {
    std::fprintf(stderr, "usage: pd3_bench_core_to_core CPU_A CPU_B [--ms N]  (two different CPUs; N from 1 to 10000)\n");
    return 2;
  }
  Baton baton;
  std::atomic<bool> echo_ready{false};
  int echo_pin = 0;
  std::atomic<bool> stop{false};
  std::thread echoer([&] {
    echo_pin = pin(int(cpu_b));
    // release: the initiator reads echo_pin after it sees the flag.
    echo_ready.store(true, std::memory_order_release);
    if (echo_pin != 0) return;
    uint64_t seen = 0;
    for (;;) {
      // acquire/release on the baton are what a ring's cursors use; relaxed would measure the same
      // transfer on x86, but this is the pattern the rows of the benchmark pay for.
      const uint64_t v = baton.value.load(std::memory_order_acquire);
      if (v != seen && (v & 1) == 1) {
        seen = v + 1;
        baton.value.store(seen, std::memory_order_release);
      } else if (stop.load(std::memory_order_relaxed)) {  // relaxed: a flag polled in a loop
        return;
      }
    }
  });
  const int own_pin = pin(int(cpu_a));
  // acquire: pairs with the echoer's release, so echo_pin is its final value.
  while (!echo_ready.load(std::memory_order_acquire)) {
  }
  if (own_pin != 0 || echo_pin != 0) {
    stop.store(true, std::memory_order_relaxed);  // relaxed: the join orders what matters
    echoer.join();
    const long bad = own_pin != 0 ? cpu_a : cpu_b;
    std::fprintf(stderr, "pd3_bench_core_to_core: cannot run on CPU %ld: %s\n", bad, std::strerror(own_pin != 0 ? own_pin : echo_pin));
    return 1;
  }
  const uint64_t start = now_ns();
  const uint64_t deadline = start + uint64_t(ms) * 1000000ull;
  uint64_t trips = 0, end = start;
  for (;;) {
    const uint64_t sent = 2 * trips + 1;
    baton.value.store(sent, std::memory_order_release);  // release: see the echoer's loop
    while (baton.value.load(std::memory_order_acquire) != sent + 1) {
    }
    ++trips;
    if ((trips & 255) == 0 && (end = now_ns()) >= deadline) break;
  }
  stop.store(true, std::memory_order_relaxed);  // relaxed: the join orders what matters
  echoer.join();
  std::printf("{\"cpus\":[%ld,%ld],\"round_trips\":%llu,\"ns_per_round_trip\":%.1f}\n", cpu_a, cpu_b,
              (unsigned long long)trips, double(end - start) / double(trips));
  return 0;
}
