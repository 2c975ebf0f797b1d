// prefetcher.hpp — the DPU-direct prefetcher (paper §5.2, §6.2; docs/architecture.md §7-§8): turns the
// client accesses the parsers saw into prefetches of the keys the host lacks, keeps Host View and
// the Loading Zone right (Table 1 and Table 2), and publishes answers into the Loading Zone. A unit
// the Transfer Engine drives from its own thread; docs/prefetcher.md has the rules and why they hold.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "common/latency_histogram.hpp"
#include "dpu/access_queue.hpp"
#include "dpu/host_view.hpp"
#include "dpu/key_directory.hpp"
#include "dpu/lz_producer.hpp"
#include "dpu/prefetch_table.hpp"
#include "dpu/unflushed_keys.hpp"

namespace pd3 {

// What the prefetcher needs from the engine (the engine implements it; tests use a fake). Servers
// are named by a small index the port chooses, 0..30 (the engine: its link index, not the server's
// configured id, which may reach 65,535); every server_id below is such an index.
class PrefetchPort {
 public:
  virtual ~PrefetchPort() = default;
  // Queues a PREFETCH record (pd3_prefetch_request + key, max_size) for server `server_id`, behind
  // every record already queued for that server. PD3_OK, PD3_E_AGAIN (no room now: the prefetcher
  // tries again at a later pump) or PD3_E_UNAVAILABLE.
  virtual int send_prefetch(int server_id, uint16_t op_id, const uint8_t* key, uint16_t key_len, uint32_t max_size,
                            uint64_t now) = 0;
  // Bit i set: server i is connected.
  virtual uint32_t servers_up() const = 0;
};

// How a Prefetcher is built.
struct PrefetcherOptions {
  uint32_t max_inflight = 4096;          // prefetches between READ and answer, 1..16384 (14-bit ids)
  uint32_t max_item_bytes = 64u << 10;   // max_size of each request: larger items are answered DEST_SMALL
  uint32_t lookup_batch = 128;           // Host View keys per submitted batch, 1..4096
  uint64_t directory_keys = 1u << 20;    // key → server slots (4 bytes each), 1..2^30
  uint64_t unflushed_keys = 1u << 16;    // keys written or deleted and not flushed, held exactly (16 B each)
  uint64_t broadcast_hold_bytes = 8u << 20;  // answers of broadcasts kept until every server answered
  uint64_t host_view_backlog = 1u << 17;     // inserts/erases a shard may have waiting (beyond: dropped)
};

// Every PrefetcherStats counter, in order (for the STATS text, metrics and bindings).
#define PD3_PREFETCHER_STATS_FIELDS(X)                                                                \
  X(reads) X(writes) X(deletes) X(bad_accesses) X(host_flushes) X(host_reads) X(lookups)               \
  X(host_view_hits) X(host_view_full) X(host_view_dropped) X(prefetches) X(requests) X(broadcasts)      \
  X(deduplicated) X(cancelled) X(skipped) X(skipped_unflushed) X(unavailable) X(produced) X(not_found) \
  X(dest_small) X(empty) X(errors) X(conflicts) X(stale_responses) X(inflight) X(directory_keys)        \
  X(unflushed_keys) X(unflushed_overflows) X(lead_count) X(lead_sum_ns) X(lead_max_ns)

// A snapshot of the prefetcher's counters (see docs/prefetcher.md for each).
struct PrefetcherStats {
#define PD3_PREFETCHER_STATS_FIELD(name) uint64_t name = 0;
  PD3_PREFETCHER_STATS_FIELDS(PD3_PREFETCHER_STATS_FIELD)
#undef PD3_PREFETCHER_STATS_FIELD
};

// The prefetcher. Every method but stats() must be called from one thread (the Transfer Engine's):
// that thread orders Host View and Loading Zone changes with the engine's own (§6.1).
class Prefetcher {
 public:
  // host_view may be null (no Host View: every READ of a key not written since its flush is
  // prefetched); zone and port are required, and all three must outlive the Prefetcher. Returns
  // PD3_OK, PD3_E_INVAL (bad options or arguments) or PD3_E_NOMEM; pd3_last_error says why.
  static int create(const PrefetcherOptions& options, HostView* host_view, LzProducer* zone, PrefetchPort* port,
                    std::unique_ptr<Prefetcher>* out);
  ~Prefetcher();  // waits for the Host View batches it submitted (their arrays are its own)
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // A client access (from the AccessQueue): READ looks the key up and prefetches it if the host
  // lacks it; WRITE and DELETE update Host View, withdraw the key's zone items and cancel its
  // prefetch (Table 1).
  void on_access(const AccessRecord& a, uint64_t now);
  // The engine queued a host WRITE (a flush) holding this key for `server_id`, after invalidating
  // the key's zone items: erases the key from Host View (Table 2), cancels the key's prefetch if it
  // was sent (its answer may predate the flush) and learns where the key lives.
  void on_host_flush(const uint8_t* key, uint32_t len, int server_id);
  // A successful host READ response held this key (Table 2): inserts it into Host View.
  void on_host_read(const uint8_t* key, uint32_t len);
  // Once per engine iteration: collects Host View verdicts, submits queued Host View work and
  // sends the prefetches that are due. Never blocks.
  void pump(uint64_t now);
  // The answer of server `server_id` to prefetch `op_id`: status PD3_OK or a negative pd3_status,
  // key and data as the server sent them (valid during the call only).
  void on_response(uint16_t op_id, int server_id, int status, const uint8_t* key, uint16_t key_len,
                   const uint8_t* data, uint32_t size, uint64_t now);
  // The server's connection is gone: its prefetches in flight will never be answered.
  void on_server_lost(int server_id);
  // Cancels every prefetch not yet answered, whatever its key (a client write may have been lost:
  // none of their answers may enter the zone). New READs start new prefetches.
  void cancel_all();

  // Relaxed snapshot, readable from any thread.
  PrefetcherStats stats() const;
  // The lead times (client READ capture → item produced) of every item so far, for quantiles
  // (±3.2%). Any thread; scans the whole histogram, so not for a hot loop.
  LatencyHistogram::Snapshot lead_histogram() const;
  // Prefetches between READ and answer (lookups included).
  uint32_t inflight() const { return table_.in_use(); }
  // True when no Host View work is queued or submitted (tests wait for this).
  bool host_view_idle() const;
  // True when a Host View batch came back and waits for pump() to collect it.
  bool host_view_ready() const { return host_view_ != nullptr && host_view_->has_completions(); }

 private:
  struct Counters;
  struct Work;
  struct ShardWork;

  Prefetcher(const PrefetcherOptions& o, HostView* hv, LzProducer* zone, PrefetchPort* port);

  // Host View work (all asynchronous, in per-shard order; see docs/prefetcher.md).
  void queue_lookup(uint32_t id);
  void queue_update(HostViewOp op, uint64_t hash, bool client_write);
  uint32_t new_work(HostViewOp op);
  bool submit_all(uint32_t shard, std::deque<uint32_t>* sealed);
  void flush_shard(uint32_t shard);
  void collect();
  void finish_work(uint32_t work);

  // Prefetches.
  void cancel(uint64_t hash, const uint8_t* key, uint32_t len, bool sent_only);
  void make_ready(uint32_t id);
  void route(PrefetchEntry& e);
  void send_ready(uint64_t now);
  void finish(uint32_t id, uint64_t now, const uint8_t* data, uint32_t size);
  void produce(uint32_t id, const uint8_t* data, uint32_t size, uint64_t now);
  void update_gauges();

  const PrefetcherOptions options_;
  HostView* const host_view_;
  LzProducer* const zone_;
  PrefetchPort* const port_;
  PrefetchTable table_;
  std::unique_ptr<KeyDirectory> directory_;
  std::unique_ptr<UnflushedKeys> unflushed_;
  std::vector<Work> works_;
  std::vector<uint32_t> free_works_;
  std::vector<ShardWork> shards_;
  std::deque<std::pair<uint16_t, uint32_t>> ready_;  // (id, gen) due to be sent, oldest first
  uint64_t held_bytes_ = 0;                           // broadcast answers kept (budget)
  std::unique_ptr<Counters> counters_;
};

}  // namespace pd3
