// dpdk_mirror.hpp — the DPDK capture backend (`--mirror dpdk`): a port that receives a copy of the
// app's traffic (on a BlueField: the Arm-side representor a mirror rule copies host-bound packets
// to; here: DPDK's af_packet driver on a mirror port, scripts/mirror-port.sh), read in rx bursts
// by its own thread with a back-off when idle, each frame fed to the same per-flow TCP reassembly
// and request tap as the AF_PACKET backend. Built only when pkg-config finds libdpdk: without it
// dpdk_mirror_built_in() is false and DpdkMirror::start refuses. Design, options, pitfalls and
// counters: docs/mirror.md, "DPDK".
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/latency_histogram.hpp"
#include "common/log_queue.hpp"
#include "dpu/flow_callbacks.hpp"
#include "dpu/tcp_reassembly.hpp"

namespace pd3 {

// Bounds of the options (checked by DpdkMirror::start).
inline constexpr uint32_t kDpdkMaxEalArgs = 64;
inline constexpr uint32_t kDpdkMinMbufs = 63;
inline constexpr uint32_t kDpdkMaxMbufs = 1u << 20;
inline constexpr uint32_t kDpdkMinMbufBytes = 1024;
inline constexpr uint32_t kDpdkMaxMbufBytes = 65535 - 128;  // data room is a uint16_t with the headroom
inline constexpr uint32_t kDpdkMaxBurst = 512;
inline constexpr uint32_t kDpdkMaxSpinUs = 1000000;
inline constexpr uint32_t kDpdkMaxSleepUs = 100000;

// The message every refusal of a build without DPDK carries.
inline constexpr const char* kDpdkNotBuiltIn = "pd3-agent was built without DPDK (install libdpdk-dev and rebuild)";

// How a DPDK mirror is started.
struct DpdkMirrorOptions {
  std::string eal_args;          // EAL arguments separated by spaces (no quoting: none may contain a
                                 // space), e.g. "--no-huge --no-pci --no-shconf -m 256
                                 // --vdev=net_af_packet0,iface=m1,framesz=32768"
  std::string port;              // the port to receive on: a port id ("0"), a port name DPDK
                                 // knows ("net_af_packet0", a PCI address), or a vdev to plug in
                                 // at start and remove at stop ("net_af_packet0,iface=m1")
  uint32_t ip = 0;               // the app's IPv4 address, host order; 0 = any
  uint16_t app_port = 0;         // the app's TCP port (required)
  uint32_t mbufs = 1023;         // mbufs in the pool (≥ rx_desc + burst + 32)
  uint32_t mbuf_bytes = 2048;    // data room per mbuf; raised to the largest framesz= in the
                                 // arguments (the af_packet driver refuses smaller mbufs)
  uint32_t rx_desc = 512;        // rx ring descriptors (a power of two)
  uint32_t burst = 32;           // packets per rx burst, 1..kDpdkMaxBurst
  uint32_t spin_us = 20;         // after the last packet, busy-poll this long before sleeping
  uint32_t sleep_min_us = 1;     // then sleep this long between polls, doubling while idle ...
  uint32_t sleep_max_us = 200;   // ... up to this (the lag a lone packet may wait, at most)
  bool promiscuous = true;       // enable promiscuous mode (a mirror port receives other hosts'
                                 // MACs); the port's previous state is restored at stop
  std::string probe_path;        // the pd3-dpdk-probe program; empty: found next to this library
  uint32_t probe_timeout_ms = 20000;  // the probe is killed (and start fails) after this long
  uint32_t link_check_ms = 100;  // how often the port's link state is read (1..10000)
  LogQueue* log = nullptr;       // link changes and the EAL's messages go here (may be null)
  ReassemblyLimits limits;
};

// Counters (cumulative unless marked "now"), written by the capture thread.
struct DpdkMirrorStats {
  uint64_t polls = 0;             // rx bursts called
  uint64_t empty_polls = 0;       // of those, bursts that returned nothing
  uint64_t sleeps = 0;            // back-off sleeps
  uint64_t frames = 0;            // frames received
  uint64_t frames_duplicate = 0;  // dropped: the same frame seen again (af_packet on a loopback
                                  // device sees each packet leave and arrive)
  uint64_t frames_truncated = 0;  // client→app frames cut by the port (shorter than their IPv4
                                  // length: af_packet's framesz); the rest became a gap
  uint64_t frames_not_tcp = 0;    // not IPv4 TCP
  uint64_t frames_fragment = 0;   // IPv4 fragments (ignored)
  uint64_t frames_malformed = 0;  // truncated inside a header or inconsistent lengths
  uint64_t frames_multiseg = 0;   // frames in chained mbufs (copied to one buffer first)
  uint64_t rx_missed = 0;         // the port's count of packets it had no room for (imissed)
  uint64_t rx_nombuf = 0;         // the port's count of failed mbuf allocations
  uint64_t link_downs = 0;        // times the port's link went down (or the port went away)
  uint64_t link_up = 0;           // now: 1 while the link is up
  uint64_t lag_unmeasured = 0;    // frames of the first burst (no earlier poll to measure from)
  uint64_t cpu_ns = 0;            // CPU time of the capture loop (read every link check; the EAL's
                                  // start-up on the same thread is left out)
  ReassemblyStats flows;          // the reassembler's counters
};

// Every DpdkMirrorStats field outside `flows`, in order.
#define PD3_DPDK_STATS_FIELDS(X)                                                                  \
  X(polls) X(empty_polls) X(sleeps) X(frames) X(frames_duplicate) X(frames_truncated)             \
  X(frames_not_tcp) X(frames_fragment) X(frames_malformed) X(frames_multiseg) X(rx_missed)        \
  X(rx_nombuf) X(link_downs) X(link_up) X(lag_unmeasured) X(cpu_ns)

// True when this build has the DPDK backend.
bool dpdk_mirror_built_in();

// Splits EAL arguments at runs of spaces and tabs. Returns false (and *error says why) for more
// than kDpdkMaxEalArgs arguments.
[[nodiscard]] bool split_eal_args(const std::string& text, std::vector<std::string>* out, std::string* error);

// The largest `framesz=N` in `text` (the af_packet driver's frame size), 0 if none.
uint32_t largest_framesz(const std::string& text);

// The capture thread, its port and everything it owns.
class DpdkMirror {
 public:
  // Checks the options, runs the probe program (EAL init and port setup in a process of its own,
  // so an EAL that exits or aborts cannot take the agent down, and its reason is reported), then
  // initialises the EAL in this process (once per process: a later start must give the same
  // eal_args), sets the port up and starts the thread. Callbacks run on the capture thread.
  // Returns PD3_OK, PD3_E_INVAL (options; the EAL or the port refused: pd3_last_error has the
  // EAL's reason), PD3_E_NOMEM, PD3_E_SYS or, without DPDK in this build, PD3_E_INVAL with
  // kDpdkNotBuiltIn.
  [[nodiscard]] static int start(const DpdkMirrorOptions& options, FlowCallbacks callbacks,
                                 std::unique_ptr<DpdkMirror>* out);
  virtual ~DpdkMirror() = default;  // implementations stop()

  // Stops the thread after it ends every open flow, stops and closes the port (removing a vdev it
  // plugged in) and restores its promiscuous state. Idempotent; not from a callback.
  virtual void stop() = 0;
  // A snapshot; each counter is some recent value.
  virtual DpdkMirrorStats stats() const = 0;
  // Capture lag of every frame handed on: from the previous rx burst call (the packet had not
  // been returned by then, so this bounds how long it waited in the port, back-off sleep
  // included) to the moment it is handed to the decoder. From any thread.
  virtual LatencyHistogram::Snapshot capture_lag() const = 0;
};

}  // namespace pd3
