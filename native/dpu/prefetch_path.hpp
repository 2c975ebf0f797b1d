// prefetch_path.hpp — DPU-direct prefetching end to end on the agent (paper §6.2): a mirror backend
// (AF_PACKET capture or the tee proxy) → per-flow parsing (RequestTap) → the access queue → the
// Prefetcher, which the Transfer Engine drives from its own thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "dpu/agent_doorbell.hpp"
#include "common/latency_histogram.hpp"
#include "common/log_queue.hpp"
#include "common/net.hpp"
#include "dpu/access_queue.hpp"
#include "dpu/dpdk_mirror.hpp"
#include "dpu/prefetcher.hpp"
#include "parsers/plugin_loader.hpp"

namespace pd3 {

// How the agent sees client requests (EngineOptions::prefetch). Prefetching is off while `parser`
// is empty.
struct PrefetchSetup {
  std::string parser;              // "resp", "binary", or the path of a parser plug-in library;
                                   // with external_parser, only a name for logs
  // The parser runs on another thread of this process (a TS parser on the JS thread): the
  // backend starts at attach_external(), and its flows are queued for the caller to parse.
  bool external_parser = false;
  uint64_t flow_queue_bytes = 8u << 20;  // external_parser: the capture → parser thread queue
  std::string backend = "afpacket";  // "afpacket": capture the app's traffic; "tee": proxy it;
                                     // "dpdk": receive a mirror of it on a DPDK port
  Endpoint app;                    // the app's address (afpacket: watched; tee: forwarded to)
  Endpoint listen;                 // tee only: the public address clients connect to
  std::string interface = "lo";    // afpacket only
  std::string mirror_ring = "v2";  // afpacket only: the receive ring, "v2" (a wake-up per packet)
                                   // or "v3" (blocks handed over on a 1 ms timer; packet_mirror.hpp)
  uint32_t mirror_spin_us = 0;     // afpacket only: spin this long on an empty ring before sleeping
  uint32_t mirror_slice_us = 100;  // afpacket only: the capture thread's scheduler slice (0: default)
  // dpdk only: EAL arguments, port, pool and back-off (dpdk_mirror.hpp); the path fills in the
  // app's address and port and the log.
  DpdkMirrorOptions dpdk;
  uint64_t queue_bytes = 4u << 20; // the access queue between the capture and engine threads
  // Who sends each prefetch to the memory server: "agent" (DPU-direct, paper §6.2) or "host" (the
  // agent hands the host a hint and the host sends the PREFETCH back through the request ring —
  // the design PD3 improves on, kept to measure the difference; pd3/wire.h pd3_prefetch_hint).
  std::string issuer = "agent";
  uint32_t hint_timeout_ms = 2000;  // issuer "host": a hint not returned by then is given up
  PrefetcherOptions prefetcher;
};

// What the capture side saw (relaxed snapshots of the backend's and the tap's counters).
struct CaptureStats {
  uint64_t packets = 0;       // afpacket: frames read from the ring; tee: 0
  uint64_t bytes = 0;         // client → app bytes handed to the parsers
  uint64_t flows = 0;         // client connections seen
  uint64_t gaps = 0;          // holes in a flow's stream (afpacket) — the parser resynced after each
  uint64_t parse_errors = 0;  // requests the parser refused (the flow resynced)
  uint64_t kernel_drops = 0;  // packets the kernel could not put in a full capture ring (dpdk: the
                              // port's imissed)
  // afpacket: how the capture thread waited (MirrorStats): poll() calls, those a packet ended,
  // spins on an empty ring, those a packet ended, and the thread's CPU time. dpdk: back-off
  // sleeps (polls), empty rx bursts (spins) and the CPU time.
  uint64_t polls = 0, wakeups = 0, spins = 0, spin_hits = 0, cpu_ns = 0;
  // dpdk: frames dropped as the second copy of a frame, client frames the port cut short, times
  // the port's link went down, and whether it is up now.
  uint64_t duplicates = 0, truncated = 0, link_downs = 0, link_up = 0;
  uint64_t queue_dropped_bytes = 0;  // external parser: bytes the capture → parser queue had no
                                     // room for (their flows resynced)
  uint64_t resets = 0;        // times a client write may have been missed (a WRITE/DELETE lost to a
                              // full queue, or a flow out of sync): every zone item was withdrawn
                              // and every prefetch cancelled, so nothing stale can be taken
};

// The capture side (its own thread) and the Prefetcher (driven by the engine thread).
class PrefetchPath {
 public:
  // Loads the parser, creates the Prefetcher over `host_view` (may be null), `zone` and `port`,
  // and starts the backend (external_parser: at attach_external). Returns PD3_OK, PD3_E_INVAL
  // (bad setup), the parser loader's error, or PD3_E_SYS (the backend could not start: no
  // CAP_NET_RAW for afpacket, a port in use for tee).
  // `doorbell` (may be null) is rung whenever accesses were queued for poll(): the engine sleeps
  // on it when idle.
  static int start(const PrefetchSetup& setup, HostView* host_view, LzProducer* zone, PrefetchPort* port,
                   LogQueue* log, AgentDoorbell* doorbell, std::unique_ptr<PrefetchPath>* out);
  virtual ~PrefetchPath() = default;  // implementations stop the backend first

  // Engine thread: hands queued accesses to the Prefetcher and pumps it; first, if a client write
  // may have been missed since the last call, withdraws every zone item and cancels every
  // prefetch (CaptureStats::resets). True if it did anything.
  virtual bool poll(uint64_t now) = 0;
  // Engine thread: true if accesses or Host View verdicts wait for poll() (checked after arming
  // the doorbell, before sleeping; both ring it).
  virtual bool has_work() const = 0;
  virtual Prefetcher& prefetcher() = 0;
  // Accesses lost to a full queue, WRITE/DELETE ones among them.
  virtual uint64_t dropped_accesses() const = 0;
  virtual uint64_t lost_writes() const = 0;
  // Engine thread only (`resets` is the engine thread's own count).
  virtual CaptureStats capture_stats() const = 0;
  // Any thread: the packet mirror's capture lag (kernel timestamp → frame handed to the parser
  // side; PacketMirror::capture_lag; dpdk: previous rx burst → frame handed on,
  // DpdkMirror::capture_lag). Empty with the tee proxy or before the backend started.
  virtual LatencyHistogram::Snapshot capture_lag() const = 0;
  // The tee proxy's port (0 for afpacket, or before an external parser is attached).
  virtual uint16_t tee_port() const = 0;

  // external_parser only, once, from the thread that will parse: starts the backend with its flow
  // events queued, to be parsed with `parser` by pump_external() on this same thread. `wake` is
  // called on the capture thread when events arrive and the parsing thread is not already due to
  // pump; it must not block. Returns PD3_OK, PD3_E_INVAL (not external, attached already, no
  // parser) or the backend's error (as start()).
  virtual int attach_external(ParserHandle parser, std::function<void()> wake) = 0;
  // The attaching thread: parses up to `max` queued flow events (their accesses go to the
  // Prefetcher). Returns how many; 0 before attach_external.
  virtual size_t pump_external(size_t max) = 0;
  // Stops the capture thread; idempotent. The Prefetcher stays usable by the engine thread.
  virtual void stop() = 0;
};

}  // namespace pd3
