// dpdk_mirror.cpp — the DPDK capture backend (DPDK builds only; see dpdk_mirror.hpp).
//
// Start: a probe process (pd3-dpdk-probe) initialises the EAL and sets the port up first, because
// rte_eal_init may exit or abort the process on some errors and can run only once per process:
// a refusal there costs the probe, never the agent, and its output is the reason we report. Only
// then does this process initialise its EAL, on the capture thread (which becomes the main lcore;
// its affinity is restored), and open the port.
//
// The loop: rx bursts; after the last packet, busy-poll for spin_us, then sleep sleep_min_us,
// doubling each idle poll up to sleep_max_us. A packet therefore waits at most about sleep_max_us
// in the port, and an idle thread polls ~1/sleep_max_us times a second instead of taking a core.
#include "dpu/dpdk_mirror.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <future>
#include <system_error>
#include <thread>

#include "common/error.hpp"
#include "common/net.hpp"
#include "common/unique_fd.hpp"
#include "dpu/capture_thread.hpp"
#include "dpu/dpdk_port.hpp"
#include "dpu/port_frame_feed.hpp"
#include "pd3/status.h"

extern char** environ;

namespace pd3 {
namespace {

constexpr uint64_t kNsPerUs = 1000;
constexpr uint64_t kNsPerMs = 1000000;
constexpr uint64_t kDuplicateWindowNs = 10 * kNsPerMs;  // a loopback packet's two copies are µs apart
constexpr uint64_t kTimerSlackNs = 1000;  // the default 50 µs slack would stretch every short sleep
constexpr size_t kProbeOutputMax = 64 << 10;

[[nodiscard]] int validate(const DpdkMirrorOptions& o) {
  if (o.app_port == 0) return fail(PD3_E_INVAL, "dpdk: the app's port is 0");
  if (o.port.empty()) return fail(PD3_E_INVAL, "dpdk: no port to receive on (--dpdk-port)");
  if (o.mbufs < kDpdkMinMbufs || o.mbufs > kDpdkMaxMbufs)
    return fail(PD3_E_INVAL, "dpdk: mbufs %u outside %u..%u", o.mbufs, kDpdkMinMbufs, kDpdkMaxMbufs);
  if (o.mbuf_bytes < kDpdkMinMbufBytes || o.mbuf_bytes > kDpdkMaxMbufBytes)
    return fail(PD3_E_INVAL, "dpdk: mbuf_bytes %u outside %u..%u", o.mbuf_bytes, kDpdkMinMbufBytes, kDpdkMaxMbufBytes);
  if (o.rx_desc < 16 || o.rx_desc > 16384 || (o.rx_desc & (o.rx_desc - 1)) != 0)
    return fail(PD3_E_INVAL, "dpdk: rx_desc %u is not a power of two in 16..16384", o.rx_desc);
  if (o.burst < 1 || o.burst > kDpdkMaxBurst) return fail(PD3_E_INVAL, "dpdk: burst %u outside 1..%u", o.burst, kDpdkMaxBurst);
  if (uint64_t(o.rx_desc) + o.burst + 32 > o.mbufs)
    return fail(PD3_E_INVAL, "dpdk: %u mbufs cannot fill %u rx descriptors plus a burst of %u", o.mbufs, o.rx_desc, o.burst);
  if (o.spin_us > kDpdkMaxSpinUs) return fail(PD3_E_INVAL, "dpdk: spin_us %u outside 0..%u", o.spin_us, kDpdkMaxSpinUs);
  if (o.sleep_min_us < 1 || o.sleep_max_us > kDpdkMaxSleepUs || o.sleep_min_us > o.sleep_max_us)
    return fail(PD3_E_INVAL, "dpdk: sleeps must satisfy 1 <= sleep_min_us (%u) <= sleep_max_us (%u) <= %u", o.sleep_min_us,
                o.sleep_max_us, kDpdkMaxSleepUs);
  if (o.link_check_ms < 1 || o.link_check_ms > 10000)
    return fail(PD3_E_INVAL, "dpdk: link_check_ms %u outside 1..10000", o.link_check_ms);
  if (o.probe_timeout_ms < 100) return fail(PD3_E_INVAL, "dpdk: probe_timeout_ms %u < 100", o.probe_timeout_ms);
  return PD3_OK;
}

// pd3-dpdk-probe next to the library this code is linked into (build/ holds it; the agent's addon
// is in build/Release).
std::string find_probe() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&dpdk_mirror_built_in), &info) == 0 || info.dli_fname == nullptr) return "";
  std::string dir = info.dli_fname;
  dir = dir.substr(0, dir.rfind('/') + 1);
  for (const std::string& candidate : {dir + "pd3-dpdk-probe", dir + "../pd3-dpdk-probe"})
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  return "";
}

// The probe's own reason (its "pd3-dpdk-probe: " line) with the three log lines before it (the
// EAL's own words), or the last three lines of its output when it gave none (the EAL exited).
std::string probe_reason(const std::string& output) {
  static constexpr std::string_view kPrefix = "pd3-dpdk-probe: ";
  std::vector<std::string> lines;
  for (size_t at = 0; at < output.size();) {
    size_t end = output.find('\n', at);
    if (end == std::string::npos) end = output.size();
    if (end > at) lines.push_back(output.substr(at, end - at));
    at = end + 1;
  }
  std::string own;
  size_t last = lines.size();
  for (size_t i = lines.size(); i-- > 0;) {
    if (lines[i].starts_with(kPrefix)) {
      own = lines[i].substr(kPrefix.size());
      last = i;
      break;
    }
  }
  std::string log;
  for (size_t i = last >= 3 ? last - 3 : 0; i < last; ++i)
    log += (log.empty() ? "" : "; ") + lines[i];
  if (own.empty()) return log.empty() ? "no output" : log;
  return log.empty() ? own : own + " [" + log + "]";
}

// Runs the probe with the options; PD3_OK when the EAL and the port came up in it.
[[nodiscard]] int run_probe(const DpdkMirrorOptions& o, const std::vector<std::string>& eal_args, uint32_t data_room) {
  const std::string path = o.probe_path.empty() ? find_probe() : o.probe_path;
  if (path.empty() || access(path.c_str(), X_OK) != 0)
    return fail(PD3_E_SYS, "dpdk: the probe program pd3-dpdk-probe is missing (%s); rebuild", path.empty() ? "not found next to the agent's library" : path.c_str());
  std::vector<std::string> args = {path, o.port, std::to_string(o.mbufs), std::to_string(data_room), std::to_string(o.rx_desc), "--"};
  args.insert(args.end(), eal_args.begin(), eal_args.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return fail(PD3_E_SYS, "dpdk: pipe: %s", std::strerror(errno));
  UniqueFd read_end(fds[0]), write_end(fds[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, path.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return fail(PD3_E_SYS, "dpdk: cannot run %s: %s", path.c_str(), std::strerror(rc));
  write_end.reset();
  std::string output;
  const uint64_t deadline = now_ns() + uint64_t(o.probe_timeout_ms) * kNsPerMs;
  bool timed_out = false;
  for (;;) {
    const uint64_t now = now_ns();
    if (now >= deadline) {
      timed_out = true;
      break;
    }
    pollfd p{read_end.get(), POLLIN, 0};
    const int n = poll(&p, 1, int((deadline - now) / kNsPerMs) + 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    char buf[4096];
    const ssize_t got = read(read_end.get(), buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // the probe (and anything it started) closed its output
    if (output.size() < kProbeOutputMax) output.append(buf, size_t(got));
  }
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out)
    return fail(PD3_E_INVAL, "dpdk: the EAL did not come up within %u ms (killed): %s", o.probe_timeout_ms,
                probe_reason(output).c_str());
  if (WIFSIGNALED(status))
    return fail(PD3_E_INVAL, "dpdk: the EAL died of signal %d (%s): %s", WTERMSIG(status), strsignal(WTERMSIG(status)),
                probe_reason(output).c_str());
  if (WEXITSTATUS(status) != 0) return fail(PD3_E_INVAL, "dpdk: %s", probe_reason(output).c_str());
  return PD3_OK;
}

// One writer (the capture thread): a relaxed store instead of a locked read-modify-write.
void set(std::atomic<uint64_t>& counter, uint64_t v) { counter.store(v, std::memory_order_relaxed); }

// The implementation: options, port, reassembler, counters and the thread.
class Mirror final : public DpdkMirror {
 public:
  Mirror(const DpdkMirrorOptions& o, uint32_t data_room, std::vector<std::string> eal_args)
      : options_(o), data_room_(data_room), eal_args_(std::move(eal_args)), feed_(o.app_port, kDuplicateWindowNs) {}
  ~Mirror() override { stop(); }

  // Builds the reassembler and starts the thread; returns once the EAL and the port are up (PD3_OK)
  // or refused (PD3_E_INVAL with the reason; the thread has ended).
  [[nodiscard]] int init(FlowCallbacks callbacks) {
    ReassemblyOptions ro;
    ro.server_ip = options_.ip;
    ro.server_port = options_.app_port;
    ro.limits = options_.limits;
    if (const int rc = TcpReassembler::create(ro, std::move(callbacks), &flows_)) return rc;
    std::promise<std::string> opened;
    std::future<std::string> result = opened.get_future();
    try {
      thread_ = std::thread([this, p = std::move(opened)]() mutable { run(std::move(p)); });
    } catch (const std::system_error& e) {
      return fail(PD3_E_SYS, "dpdk: cannot start its thread: %s", e.what());
    }
    pthread_setname_np(thread_.native_handle(), "pd3-dpdk");
    const std::string error = result.get();
    if (!error.empty()) {
      thread_.join();
      return fail(PD3_E_INVAL, "dpdk: %s", error.c_str());
    }
    return PD3_OK;
  }

  void stop() override {
    if (!thread_.joinable()) return;
    // relaxed: the flag only ends the loop; join() orders everything the thread did before us.
    stop_.store(true, std::memory_order_relaxed);
    thread_.join();
  }

  DpdkMirrorStats stats() const override {
    DpdkMirrorStats s;
    // relaxed: see Counters.
#define PD3_LOAD(name) s.name = counters_.name.load(std::memory_order_relaxed);
    PD3_DPDK_STATS_FIELDS(PD3_LOAD)
#undef PD3_LOAD
#define PD3_LOAD_FLOWS(name) s.flows.name = counters_.flows.name.load(std::memory_order_relaxed);
    PD3_REASSEMBLY_STATS_FIELDS(PD3_LOAD_FLOWS)
#undef PD3_LOAD_FLOWS
    return s;
  }

  LatencyHistogram::Snapshot capture_lag() const override { return counters_.lag.snapshot(); }

 private:
  // The published counters: one writer (the capture thread), readers anywhere. Relaxed: each is
  // an independent statistic that publishes no other memory.
  struct Counters {
#define PD3_DPDK_COUNTER(name) std::atomic<uint64_t> name{0};
    PD3_DPDK_STATS_FIELDS(PD3_DPDK_COUNTER)
    struct Flows {
      PD3_REASSEMBLY_STATS_FIELDS(PD3_DPDK_COUNTER)
    } flows;
#undef PD3_DPDK_COUNTER
    LatencyHistogram lag;  // previous rx burst call → frame handed to the decoder
  };

  void log(LogLevel level, const char* event, const std::string& message) {
    if (options_.log) options_.log->log(level, event, "%s", message.c_str());
  }

  // The thread: EAL and port first (their result goes back to init()), then the loop, then the
  // port is closed on this same thread.
  void run(std::promise<std::string> opened) {
    std::string error;
    keep_eal_log(false);
    if (!eal_init_once(eal_args_, &error)) {
      opened.set_value(error);
      return;
    }
    RxPortSetup ps;
    ps.spec = options_.port;
    ps.mbufs = options_.mbufs;
    ps.data_room = data_room_;
    ps.rx_desc = uint16_t(options_.rx_desc);
    ps.promiscuous = options_.promiscuous;
    if (!port_.open(ps, &error)) {
      port_.close();
      opened.set_value(error);
      return;
    }
    for (const std::string& line : take_eal_log()) log(LogLevel::kInfo, "dpdk.eal", line);
    local_.link_up = port_.link_up();
    log(LogLevel::kInfo, "dpdk.port",
        "receiving on DPDK port " + port_.name() + " (" + std::to_string(port_.id()) + "), link " +
            (local_.link_up ? "up" : "down") + ", " + std::to_string(options_.mbufs) + " mbufs of " +
            std::to_string(data_room_) + " bytes");
    publish();
    opened.set_value("");
    (void)prctl(PR_SET_TIMERSLACK, kTimerSlackNs, 0, 0, 0);
    cpu_base_ = thread_cpu_ns();  // the EAL's start-up (it touches all its memory) is not capture work
    loop();
    flows_->close_all();
    local_.cpu_ns = thread_cpu_ns() - cpu_base_;
    publish();
    port_.close();
  }

  void loop() {
    std::vector<rte_mbuf*> bufs(options_.burst);
    const uint64_t spin_ns = uint64_t(options_.spin_us) * kNsPerUs;
    const uint64_t tick_ns = uint64_t(options_.link_check_ms) * kNsPerMs;
    uint64_t sleep_us = options_.sleep_min_us;
    uint64_t last_work = 0;
    uint64_t prev_poll = 0;  // when the previous burst was asked for (0: none yet)
    uint64_t next_tick = 0;
    // relaxed: see stop().
    while (!stop_.load(std::memory_order_relaxed)) {
      const uint64_t now = now_ns();
      const uint16_t n = rte_eth_rx_burst(port_.id(), 0, bufs.data(), uint16_t(options_.burst));
      ++local_.polls;
      if (n > 0) {
        for (uint16_t i = 0; i < n; ++i) handle(bufs[i], prev_poll, now);
        last_work = now;
        sleep_us = options_.sleep_min_us;
      } else {
        ++local_.empty_polls;
        if (now - last_work >= spin_ns) {
          const timespec ts{time_t(sleep_us / 1000000), long(sleep_us % 1000000 * kNsPerUs)};
          nanosleep(&ts, nullptr);
          ++local_.sleeps;
          sleep_us = std::min<uint64_t>(sleep_us * 2, options_.sleep_max_us);
        } else {
          cpu_relax();
        }
      }
      prev_poll = now;
      const bool ticked = now >= next_tick;
      if (ticked) {
        tick(now);
        next_tick = now + tick_ns;
      }
      if (n > 0 || ticked) publish();
    }
  }

  // One frame: PortFrameFeed (repeats dropped, decode, reassembly) and, unless it was a repeat,
  // its capture lag up to the moment it was handed on; the mbuf is freed.
  void handle(rte_mbuf* m, uint64_t prev_poll, uint64_t now) {
    ++local_.frames;
    const uint8_t* frame = rte_pktmbuf_mtod(m, const uint8_t*);
    const uint32_t len = rte_pktmbuf_pkt_len(m);
    if (m->nb_segs > 1) {  // chained mbufs: one contiguous copy
      ++local_.frames_multiseg;
      scratch_.resize(len);
      frame = static_cast<const uint8_t*>(rte_pktmbuf_read(m, 0, len, scratch_.data()));
    }
    if (frame == nullptr) {  // cannot happen for len = pkt_len; counted as malformed if it did
      ++local_.frames_malformed;
      rte_pktmbuf_free(m);
      return;
    }
    const uint64_t handed = now_ns();
    const PortFeedResult result = feed_.feed(frame, len, *flows_, now);
    if (result != PortFeedResult::kDuplicate) {
      if (prev_poll == 0) {
        ++local_.lag_unmeasured;
      } else {
        counters_.lag.record(handed - prev_poll);
      }
    }
    switch (result) {
      case PortFeedResult::kDuplicate:
        ++local_.frames_duplicate;
        break;
      case PortFeedResult::kSegment:
        break;
      case PortFeedResult::kCut:
        ++local_.frames_truncated;
        break;
      case PortFeedResult::kNotTcp:
        ++local_.frames_not_tcp;
        break;
      case PortFeedResult::kFragment:
        ++local_.frames_fragment;
        break;
      case PortFeedResult::kMalformed:
        ++local_.frames_malformed;
        break;
    }
    rte_pktmbuf_free(m);
  }

  // Timers, the port's counters and its link state.
  void tick(uint64_t now) {
    flows_->expire(now);
    rte_eth_stats st{};
    if (rte_eth_stats_get(port_.id(), &st) == 0) {
      local_.rx_missed = st.imissed;
      local_.rx_nombuf = st.rx_nombuf;
    }
    const bool up = port_.link_up();
    if (up != (local_.link_up != 0)) {
      if (!up) ++local_.link_downs;
      log(up ? LogLevel::kInfo : LogLevel::kWarn, up ? "dpdk.link_up" : "dpdk.link_down",
          "DPDK port " + port_.name() + (up ? ": link up again, capturing" : ": link down or port gone; capture paused, the agent keeps serving the host"));
    }
    local_.link_up = up;
    local_.cpu_ns = thread_cpu_ns() - cpu_base_;
  }

  void publish() {
#define PD3_PUBLISH(name) set(counters_.name, local_.name);
    PD3_DPDK_STATS_FIELDS(PD3_PUBLISH)
#undef PD3_PUBLISH
    const ReassemblyStats& f = flows_->stats();
#define PD3_PUBLISH_FLOWS(name) set(counters_.flows.name, f.name);
    PD3_REASSEMBLY_STATS_FIELDS(PD3_PUBLISH_FLOWS)
#undef PD3_PUBLISH_FLOWS
  }

  DpdkMirrorOptions options_;
  uint32_t data_room_;
  std::vector<std::string> eal_args_;
  RxPort port_;
  std::unique_ptr<TcpReassembler> flows_;
  PortFrameFeed feed_;
  std::vector<uint8_t> scratch_;  // chained mbufs are copied here
  DpdkMirrorStats local_;         // the thread's own counters, published by publish()
  uint64_t cpu_base_ = 0;         // the thread's CPU time when its loop began
  Counters counters_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Serialises starts: the probe and the first EAL initialisation happen once at a time.
std::mutex& start_mutex() {
  static std::mutex mu;
  return mu;
}

}  // namespace

bool dpdk_mirror_built_in() { return true; }

int DpdkMirror::start(const DpdkMirrorOptions& options, FlowCallbacks callbacks, std::unique_ptr<DpdkMirror>* out) {
  clear_error();
  if (const int rc = validate(options)) return rc;
  std::vector<std::string> eal_args;
  std::string error;
  if (!split_eal_args(options.eal_args, &eal_args, &error)) return fail(PD3_E_INVAL, "dpdk: %s", error.c_str());
  const uint32_t data_room = std::max(options.mbuf_bytes, largest_framesz(options.eal_args + " " + options.port));
  if (data_room > kDpdkMaxMbufBytes)
    return fail(PD3_E_INVAL, "dpdk: framesz %u needs mbufs larger than %u bytes", data_room, kDpdkMaxMbufBytes);
  std::lock_guard lock(start_mutex());
  if (!eal_ready()) {
    if (const int rc = run_probe(options, eal_args, data_room)) return rc;
  }
  auto m = std::make_unique<Mirror>(options, data_room, std::move(eal_args));
  if (const int rc = m->init(std::move(callbacks))) return rc;
  *out = std::move(m);
  return PD3_OK;
}

}  // namespace pd3
