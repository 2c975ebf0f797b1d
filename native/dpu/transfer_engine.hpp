// transfer_engine.hpp — the Transfer Engine (paper §6.1): one native thread that moves host
// requests from the request ring to the memory servers and their responses back to the response
// ring, batching naturally, and keeps Host View right (Table 2).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/log_queue.hpp"
#include "common/net.hpp"
#include "dpu/host_view.hpp"
#include "common/placement.hpp"
#include "dpu/prefetch_path.hpp"

namespace pd3 {

// How a TransferEngine is built (pd3-agent's config maps onto this one to one).
struct EngineOptions {
  std::string segment;                 // host segment name (/dev/shm/<name>)
  std::vector<Endpoint> servers;       // memory servers; each announces its server id in the hello
  std::string token;                   // auth token sent in every hello: cluster token or tenant credential
  std::string tenant;                  // the tenant the host segment's app is; "" = the default tenant
  uint32_t max_batch_records = 4096;   // records per request frame at most
  uint32_t max_batch_bytes = 1u << 20; // request frame bytes at most
  uint32_t batch_delay_us = 0;         // hold a small batch at most this long for company (0: never)
  uint32_t max_outstanding = 8;        // request frames in flight per server (pipelining)
  uint64_t response_buffer_bytes = 16u << 20;  // the unified response buffer
  uint32_t request_timeout_ms = 2000;  // a server that answers nothing for this long is dropped
  uint32_t connect_timeout_ms = 500;
  uint32_t reconnect_ms = 200;         // delay between reconnect attempts to a lost server
  uint32_t idle_spin_us = 50;          // busy-poll this long after the last work before sleeping
  uint32_t idle_sleep_us = 20;         // then sleep this long between ring checks, doubling while
  uint32_t idle_sleep_max_us = 1000;   //   nothing arrives, up to this (≤ 1000: the heartbeat)
  PlacementPolicy placement = PlacementPolicy::kPowerOfTwo;  // where ALLOCATE goes (placement.hpp)
  uint32_t refraction_ms = 1000;       // a server that answered NOSPACE is skipped this long
  bool host_view = true;               // keep a Host View (Table 2) on this engine
  HostViewOptions host_view_options;   // used when host_view is true (capacity 0: 1M keys)
  PrefetchSetup prefetch;              // DPU-direct prefetching; off while prefetch.parser is empty
  int64_t dma_latency_ns = -1;         // < 0: host memory through shared memory (ShmDma); 0..1e6: the
                                       // latency-and-accounting backend (LatencyDma), this much per DMA
};

// PD3_OK, or PD3_E_INVAL with pd3_last_error naming the option and its bounds.
[[nodiscard]] int validate_engine_options(const EngineOptions& o);

// Counters, updated by the engine thread with relaxed stores and read by anyone.
struct EngineStats {
  uint64_t batches = 0;          // passes over the request ring that took something
  uint64_t records = 0;          // request records taken
  uint64_t frames_sent = 0;      // request frames sent to servers
  uint64_t bytes_sent = 0;       // request bytes to servers
  uint64_t bytes_received = 0;   // response bytes from servers
  uint64_t responses = 0;        // response records published to the host
  uint64_t errors = 0;           // responses with a non-ok status (from servers or the engine)
  uint64_t unavailable = 0;      // requests failed because their server was down or timed out
  uint64_t fenced = 0;           // requests the host had already failed: discarded when taken, or
                                 // their responses dropped if they were taken before the fence
  uint64_t reconnects = 0;       // successful connections after the first
  uint64_t servers_up = 0;       // connected servers right now
  uint64_t request_ring_bytes = 0;   // bytes published by the host and not yet taken
  uint64_t response_backlog = 0;     // response records waiting for room in the response ring
  uint64_t inflight_records = 0;     // records sent to servers and not yet answered
  uint64_t host_view_keys = 0;
  uint64_t host_view_inserts = 0;
  uint64_t host_view_erases = 0;
  uint64_t lz_invalidations = 0;
  // Prefetching (0 while it is off; docs/prefetcher.md says what each counts).
  uint64_t prefetch_reads = 0, prefetch_writes = 0, prefetch_deletes = 0;  // client accesses parsed
  uint64_t prefetch_host_view_hits = 0;    // READs the host already held
  uint64_t prefetch_issued = 0;            // prefetches sent
  uint64_t prefetch_deduplicated = 0;      // READs of a key whose prefetch was in flight
  uint64_t prefetch_cancelled = 0;         // prefetches cancelled by a write, delete or flush
  uint64_t prefetch_produced = 0;          // items put in the Loading Zone
  uint64_t prefetch_not_found = 0;         // keys the memory server does not hold
  uint64_t prefetch_lead_count = 0, prefetch_lead_sum_ns = 0;  // capture → item in zone
  uint64_t prefetch_dropped_accesses = 0;  // accesses lost to a full capture → engine queue
  uint64_t prefetch_lost_writes = 0;       // of those, WRITE/DELETE
  // The mirror (prefetch_path.hpp, CaptureStats).
  uint64_t mirror_packets = 0, mirror_bytes = 0, mirror_flows = 0, mirror_gaps = 0, mirror_parse_errors = 0;
  uint64_t mirror_kernel_drops = 0;
  // How the capture thread waited (MirrorStats): poll() calls and those a packet ended, spins on
  // an empty ring and those a packet ended, and its CPU time.
  uint64_t mirror_polls = 0, mirror_wakeups = 0, mirror_spins = 0, mirror_spin_hits = 0, mirror_cpu_ns = 0;
  // dpdk (CaptureStats): duplicate frames dropped, client frames cut by the port, link downs, link up now.
  uint64_t mirror_duplicates = 0, mirror_truncated = 0, mirror_link_downs = 0, mirror_link_up = 0;
  // Capture lag, kernel timestamp of a packet → the capture thread hands it on: frames measured
  // and quantiles (±3.2%); derived in stats() from the mirror's histogram.
  uint64_t mirror_capture_lag_count = 0, mirror_capture_lag_p50_ns = 0, mirror_capture_lag_p99_ns = 0;
  uint64_t prefetch_resets = 0;            // zone withdrawn after a possibly missed client write
  uint64_t prefetch_lead_p50_ns = 0, prefetch_lead_p99_ns = 0;  // capture → item in zone (±3.2%)
  // The Loading Zone (the segment's counters): items the host took, and items reclaimed while
  // still untaken because the zone was full (a sign it is too small for the prefetch lead).
  uint64_t zone_consumed = 0, zone_reclaimed_unconsumed = 0;
  // Issuer "host" (PrefetchSetup::issuer): hints handed to the host, PREFETCH requests it sent back
  // for them, hints it never returned in time, and PREFETCH requests from the host refused (not
  // an outstanding hint, or a bad key).
  uint64_t prefetch_hints = 0, prefetch_hints_returned = 0, prefetch_hints_expired = 0, prefetch_hints_refused = 0;
  // Placement: ALLOCATE answers NOSPACE (each retried elsewhere when a server may have room), and
  // picks that passed over a server in its refraction period.
  uint64_t allocations_refused = 0, placement_refraction_skips = 0;
  // Host memory through HostDma (host_dma.hpp), counted by the latency backend only (0 otherwise):
  // reads, posted writes, atomics and fences with their bytes, doorbell wakes, and the time the
  // engine waited for modelled completions.
  uint64_t dma_reads = 0, dma_read_bytes = 0, dma_writes = 0, dma_write_bytes = 0, dma_atomics = 0;
  uint64_t dma_fences = 0, dma_wakes = 0, dma_wait_ns = 0;
};

// Every EngineStats field, in order: the STATS reply and the TS binding are generated from it.
#define PD3_ENGINE_COUNTER_FIELDS(X)                                                                \
  X(batches) X(records) X(frames_sent) X(bytes_sent) X(bytes_received) X(responses) X(errors)        \
  X(unavailable) X(fenced) X(reconnects) X(servers_up) X(request_ring_bytes) X(response_backlog)     \
  X(prefetch_reads) X(prefetch_writes) X(prefetch_deletes) X(prefetch_host_view_hits) X(prefetch_issued)  \
  X(prefetch_deduplicated) X(prefetch_cancelled) X(prefetch_produced) X(prefetch_not_found)               \
  X(prefetch_lead_count) X(prefetch_lead_sum_ns) X(prefetch_dropped_accesses) X(prefetch_lost_writes)     \
  X(mirror_packets) X(mirror_bytes) X(mirror_flows) X(mirror_gaps) X(mirror_parse_errors)                  \
  X(mirror_kernel_drops) X(mirror_polls) X(mirror_wakeups) X(mirror_spins) X(mirror_spin_hits)            \
  X(mirror_cpu_ns) X(mirror_duplicates) X(mirror_truncated) X(mirror_link_downs) X(mirror_link_up)        \
  X(prefetch_resets)                                                                                      \
  X(prefetch_hints) X(prefetch_hints_returned) X(prefetch_hints_expired) X(prefetch_hints_refused)         \
  X(zone_consumed) X(zone_reclaimed_unconsumed) X(allocations_refused) X(placement_refraction_skips)        \
  X(inflight_records) X(host_view_keys) X(host_view_inserts) X(host_view_erases) X(lz_invalidations)
// Fields stats() derives when asked (the lead-time and capture-lag quantiles scan a histogram:
// never on the engine thread's loop).
#define PD3_ENGINE_DERIVED_FIELDS(X)                                                              \
  X(prefetch_lead_p50_ns) X(prefetch_lead_p99_ns) X(mirror_capture_lag_count) X(mirror_capture_lag_p50_ns) \
  X(mirror_capture_lag_p99_ns) X(dma_reads) X(dma_read_bytes) X(dma_writes) X(dma_write_bytes) X(dma_atomics)      \
  X(dma_fences) X(dma_wakes) X(dma_wait_ns)
#define PD3_ENGINE_STATS_FIELDS(X) PD3_ENGINE_COUNTER_FIELDS(X) PD3_ENGINE_DERIVED_FIELDS(X)

// State of one memory server as the engine sees it.
struct ServerState {
  Endpoint endpoint;
  bool connected = false;
  int server_id = -1;            // -1 until the first hello
  uint64_t capacity = 0;
  uint64_t free_bytes = 0;       // as of the hello, minus allocations since
  bool placeable = true;         // new regions may go there: false while it is out of the pool
  std::string last_error;        // why the last connect or the connection failed
};

// The engine: attach, connect, run the loop on its own thread.
class TransferEngine {
 public:
  // Attaches the segment (AgentSession::attach), creates Host View, tries each server once (a
  // server that is down is retried by the loop), and starts the thread. Returns PD3_OK,
  // PD3_E_INVAL (bad options) or the attach error; pd3_last_error says why.
  [[nodiscard]] static int start(const EngineOptions& options, std::unique_ptr<TransferEngine>* out);
  virtual ~TransferEngine() = default;  // implementations stop and join

  // Stops the thread; requests still in flight are answered PD3_E_UNAVAILABLE if the response
  // ring has room. Idempotent.
  virtual void stop() = 0;
  virtual EngineStats stats() const = 0;
  // Thread-safe snapshot.
  virtual std::vector<ServerState> servers() const = 0;
  // The pool's membership changed (thread-safe; applied by the engine thread within a
  // millisecond). member false: the server at `endpoint` left the pool, so no new region goes
  // there; its existing regions are still served while it answers. member true: it is in the pool,
  // so it is placeable again, or, if the engine has no link to it, a link is opened and new regions
  // may go there once its hello succeeds (log event pool.member_joined). Returns PD3_OK (queued)
  // or PD3_E_INVAL (no host or port).
  [[nodiscard]] virtual int set_member(const Endpoint& endpoint, bool member) = 0;
  // The tee proxy's port when prefetching runs on the tee backend, else 0.
  virtual uint16_t tee_port() const = 0;
  // The prefetch path (null while prefetching is off), for attaching an external parser.
  virtual PrefetchPath* prefetch_path() = 0;
  // The engine's structured log events (connections lost and regained, refused tokens, ...).
  virtual LogQueue& log() = 0;
};

}  // namespace pd3
