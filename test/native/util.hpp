// util.hpp — helpers shared by the native tests: unique segment names, temporary directories and a
// scoped host handle.
#pragma once

#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "common/mix64.hpp"
#include "pd3/host.h"

namespace pd3test {

// Whether mlock and munlock really pin pages here: the sanitizers' runtimes turn them into no-ops.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kMlockPins = false;
#else
inline constexpr bool kMlockPins = true;
#endif

// VmLck of this process (pages mlock-ed), in KiB; -1 if /proc/self/status cannot be read.
inline long vm_locked_kib() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  long kib = -1;
  while (std::fgets(line, sizeof line, f) != nullptr)
    if (std::strncmp(line, "VmLck:", 6) == 0) kib = std::strtol(line + 6, nullptr, 10);
  std::fclose(f);
  return kib;
}

// Iteration counts are divided by PD3_STRESS_SCALE (default 1); sanitizer runs set it to 10.
inline uint32_t stress_scale() {
  static const uint32_t scale = [] {
    const char* env = std::getenv("PD3_STRESS_SCALE");
    const unsigned long v = env ? std::strtoul(env, nullptr, 10) : 1;
    return uint32_t(v >= 1 && v <= 1000 ? v : 1);
  }();
  return scale;
}

// Stands in for an agent's heartbeat, for tests that play the agent by hand: requests only go to
// the ring while the heartbeat is fresh.
inline void fake_agent_beat(const pd3_control* c) {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const uint64_t now = uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
  // release: as the agent's beat (the host reads it with acquire).
  std::atomic_ref<uint64_t>(const_cast<pd3_control*>(c)->agent_heartbeat_ns).store(now, std::memory_order_release);
}

// Milliseconds since t0.
inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Counts mismatches without flooding stderr: prints the first few, the case CHECKs the total.
// Not shared between threads: give each thread its own.
struct Errors {
  const char* label;
  uint64_t n = 0;
  [[gnu::format(printf, 2, 3)]] void fail(const char* fmt, ...) {
    if (n++ >= 8) return;
    std::va_list ap;
    va_start(ap, fmt);
    std::fprintf(stderr, "  [%s] ", label);
    std::vfprintf(stderr, fmt, ap);
    std::fputc('\n', stderr);
    va_end(ap);
  }
};

using pd3::mix64;  // native/common/mix64.hpp

// splitmix64: a fast, seedable generator for keys and choices.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed) {}
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint32_t below(uint32_t n) { return uint32_t((uint64_t(uint32_t(next())) * n) >> 32); }
};

// A switch a test flips while other threads (a fault hook's I/O threads) pass through it: while
// held, pass() waits until it is released.
struct Gate {
  std::atomic<bool> closed{false};
  // Releases the gate when it goes out of scope: a test that stops early (a failed REQUIRE) does
  // not leave the store's destructor waiting at the gate for ever. Declare it after the store.
  struct Held {
    Gate* gate;
    ~Held() { gate->release(); }
  };
  // Relaxed: a test switch; what the waiting thread does after it is ordered by its own completions.
  [[nodiscard]] Held hold() {
    closed.store(true, std::memory_order_relaxed);
    return Held{this};
  }
  void release() { closed.store(false, std::memory_order_relaxed); }
  void pass() const {
    while (closed.load(std::memory_order_relaxed)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
};

// A fresh directory under /tmp named after `tag`, removed with everything in it at scope exit
// (path is empty if it could not be made).
struct TempDir {
  std::string path;
  explicit TempDir(const char* tag) {
    std::string templ = std::string("/tmp/pd3-") + tag + "-XXXXXX";
    if (mkdtemp(templ.data()) != nullptr) path = templ;
  }
  ~TempDir() {
    std::error_code ignored;  // a test that failed half-way may leave anything: remove what is there
    if (!path.empty()) std::filesystem::remove_all(path, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return path + "/" + name; }
  bool has(const std::string& name) const { return access(file(name).c_str(), F_OK) == 0; }
  // The names of the entries in the directory, "." and ".." and hidden ones left out.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    std::error_code ignored;
    for (const auto& e : std::filesystem::directory_iterator(path, ignored)) {
      std::string name = e.path().filename().string();
      if (name[0] != '.') out.push_back(std::move(name));
    }
    return out;
  }
};

// A segment name no other test or process uses.
inline std::string unique_name(const char* tag) {
  static std::atomic<int> n{0};
  return std::string("pd3-test-") + tag + "-" + std::to_string(getpid()) + "-" + std::to_string(n++);
}

// Creates a host segment for the test's lifetime.
struct ScopedHost {
  pd3_host* h = nullptr;
  std::string name;
  int rc;
  explicit ScopedHost(const char* tag, pd3_segment_sizes sizes = {}) : name(unique_name(tag)) {
    pd3_host_config cfg{};
    cfg.name = name.c_str();
    cfg.sizes = sizes;
    rc = pd3_host_create(&cfg, &h);
  }
  ~ScopedHost() { pd3_host_close(h); }
  pd3_control* control() const { return const_cast<pd3_control*>(pd3_host_control(h)); }
};

// The directory holding the test parser plug-ins: that of $PD3_EXAMPLE_PARSER, else the test
// binary's own (CMake builds them next to it).
inline std::string plugin_dir() {
  std::string path;
  if (const char* env = std::getenv("PD3_EXAMPLE_PARSER")) {
    path = env;
  } else {
    char exe[4096];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    path.assign(exe, n > 0 ? size_t(n) : 0);
  }
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace pd3test
