// mem_store.hpp — one memory server's storage: regions of bytes, the key→address index, and
// optional per-region backing files. Executes transport request records in order. Single-threaded
// by contract: the server's event-loop thread owns it (docs/architecture.md §9: batches run in order).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/transport_codec.hpp"
#include "memserver/record_parser.hpp"
#include "memserver/region_table.hpp"
#include "memserver/tenant.hpp"
#include "memserver/tier/tier.hpp"
#include "parsers/plugin_loader.hpp"

namespace pd3 {

// How durable an acknowledged write is when regions have backing files.
enum class SyncMode : uint8_t {
  kNone,   // page cache only: survives a SIGKILL of the server, not a machine crash
  kBatch,  // before a frame's response: msync(MS_SYNC) of every range it wrote (with a tier: fdatasync
           // of the files it wrote, the key index's too, in the tier's group commit)
};

// How a MemStore is built.
struct MemStoreOptions {
  uint16_t server_id = 0;         // any value (PD3_MAX_SERVERS is 2^16): top bits of every region id handed out
  uint64_t capacity = 0;          // bytes regions may take in total; 0 = what the machine can spare
  double headroom = 0.15;         // with capacity 0: keep this fraction of available memory free (Dodo);
                                  // with a data_dir: give memory back while MemAvailable is below this
                                  // fraction of MemTotal (relieve_pressure)
  bool give_back = true;          // with a data_dir: relieve_pressure may give cold regions' memory back
  std::string meminfo_path = "/proc/meminfo";  // where MemTotal and MemAvailable are read
  std::string data_dir;           // "": regions live in anonymous memory; else one file per region
  SyncMode sync = SyncMode::kBatch;
  uint64_t index_initial_keys = 1u << 20;  // initial index capacity; it grows by doubling
  // Whose parse_record finds the keys of written bytes (record_parser.hpp). Empty (the default),
  // "resp" and "binary": the built-in format of pd3/record.h. The store keeps a plug-in loaded.
  ParserHandle record_parser;
  // The SSD tier (docs/tier.md): with a data_dir and a dram_budget > 0, regions stay in their files
  // and at most dram_budget bytes of their pages are in DRAM, in page_size frames.
  uint64_t dram_budget = 0;
  uint32_t page_size = 64u << 10;
  tier::EvictionKind evict = tier::EvictionKind::kLru;
  tier::PrefetchKind tier_prefetch = tier::PrefetchKind::kNone;
  tier::IoKind tier_io = tier::IoKind::kUring;
  // Bytes of the registration cache of the tier's frames (MRRC, capped to RLIMIT_MEMLOCK);
  // kMrCacheBudget: the DRAM budget; 0: frames are not registered.
  static constexpr uint64_t kMrCacheBudget = UINT64_MAX;
  uint64_t mr_cache = kMrCacheBudget;
  bool tier_io_fallback = true;  // kUring refused by the kernel: use kThreads (else open fails)
  // Builds the tier's I/O backend instead of tier_io (tests inject faults through it).
  std::function<int(std::unique_ptr<tier::TierIo>*)> tier_io_factory;
};

// Counters, read by the server's metrics (each updated by the owning thread only).
struct MemStoreStats {
  uint64_t regions = 0;
  uint64_t allocated_bytes = 0;
  uint64_t capacity = 0;
  uint64_t index_keys = 0;
  uint64_t index_bytes = 0;
  uint64_t reads = 0, writes = 0, prefetches = 0, controls = 0;
  uint64_t read_bytes = 0, write_bytes = 0;
  uint64_t errors = 0;            // requests answered with a non-ok status
  uint64_t prefetch_not_found = 0;
  uint64_t syncs = 0;             // msync calls made
  uint64_t record_parser_rejects = 0;  // parse_record answers of a plug-in refused (RecordParser)
  uint64_t tenant_refusals = 0;   // requests refused PD3_E_FORBIDDEN: a region of another tenant
  uint64_t tenants_reclaimed = 0; // reclaim_tenant calls that freed anything
  uint64_t reclaimed_regions = 0, reclaimed_bytes = 0;
  uint64_t given_back_bytes = 0;   // resident bytes handed back to the machine under memory pressure
  uint64_t given_back_regions = 0; // regions whose memory was given back (counted each time)
  uint64_t file_reads = 0;         // reads that found part of their range only in the backing file
  uint64_t file_read_bytes = 0;    // bytes of those reads that came from the file
  uint64_t pressure_events = 0;    // relieve_pressure calls that found MemAvailable under the headroom
  uint64_t moved_refusals = 0;     // requests answered PD3_E_MOVED: their region was frozen or sealed for a move
  uint64_t warm_hints = 0;         // cache lines hinted ahead of their READ or WRITE (warm)
  bool tiered = false;             // the SSD tier is on: `tier` holds its counters
  tier::TierStats tier;
};

// What relieve_pressure found and did.
struct PressureResult {
  uint64_t total_bytes = 0, available_bytes = 0;  // the meminfo read (0 if it could not be read)
  uint64_t wanted_bytes = 0;                      // how far MemAvailable was under the headroom
  uint64_t released_bytes = 0;
  uint64_t regions = 0;                           // regions given back
};

// What reclaim_tenant freed.
struct ReclaimResult {
  uint64_t regions = 0;
  uint64_t bytes = 0;
  uint64_t index_entries = 0;  // key index entries dropped with them
};

// Storage of one memory server.
class MemStore {
 public:
  // Opens the store; with a data_dir, maps back every region file and the index found there
  // (restart without loss). Returns PD3_OK, PD3_E_INVAL (bad options, or the data_dir is in use by
  // another server), PD3_E_CORRUPT (a foreign or damaged data_dir), PD3_E_NOSPACE (disk full),
  // PD3_E_NOMEM or PD3_E_SYS (pd3_last_error says why).
  static int open(const MemStoreOptions& options, std::unique_ptr<MemStore>* out);
  virtual ~MemStore() = default;

  // Executes one request record for `tenant` and appends exactly one response record to `out` (its
  // encoding per pd3/transport.h). Never fails as a call: errors become the response's status
  // (PD3_E_BAD_REGION, PD3_E_RANGE, PD3_E_BAD_OP, PD3_E_NOSPACE, PD3_E_NOT_FOUND, ...). A READ,
  // WRITE or DEALLOCATE of another tenant's region is answered PD3_E_FORBIDDEN, and a PREFETCH
  // finds only keys written into the tenant's own regions.
  virtual void execute(const TransportRequest& req, const Tenant& tenant, FrameBuilder* out) = 0;
  // The same for the default tenant.
  void execute(const TransportRequest& req, FrameBuilder* out) { execute(req, Tenant{}, out); }

  // With the SSD tier: called before execute() for each record, gets what `req` will touch into
  // DRAM and pins it in *pins (released by release() once the record ran). Returns tier::kReady
  // (execute may run), tier::kWait (reads started: call again after on_io()), or an error status
  // to answer the record with (fail_request). Without a tier: always kReady.
  [[nodiscard]] virtual int prepare(const TransportRequest& req, const Tenant& tenant, tier::Pins* pins) {
    (void)req, (void)tenant, (void)pins;
    return tier::kReady;
  }
  virtual void release(tier::Pins* pins) { (void)pins; }
  // A hint ahead of execute(): starts loading into the CPU's caches the first bytes a READ or WRITE
  // will touch (prefetch instructions, which never fault). Never fails and changes no data. A
  // record outside the regions the store holds or past a region's end, any other op, and the
  // tier's regions get no hint; the tenant is not checked (a hint shows nobody any byte). Returns
  // the cache lines hinted (counted in MemStoreStats::warm_hints).
  virtual uint32_t warm(const TransportRequest& req) {
    (void)req;
    return 0;
  }
  // Answers `req` with error `status` (counted like the store's own errors).
  virtual void fail_request(const TransportRequest& req, int status, FrameBuilder* out);
  // The tier's I/O completion eventfd (-1 without a tier), and what reaps it: true if anything
  // completed (parked requests may retry).
  virtual int io_fd() const { return -1; }
  virtual bool on_io() { return false; }
  // Log lines of the tier's I/O errors since the last call.
  virtual std::vector<std::string> take_io_errors() { return {}; }
  // Log lines of refused frame registrations of the SSD tier (logged as warnings).
  virtual std::vector<std::string> take_tier_notices() { return {}; }

  // Frees every region of `tenant` (memory, backing file) and drops their key index entries: the
  // pool's reclamation of a client that died (docs/pool.md). Returns PD3_OK or PD3_E_SYS (a file
  // could not be removed; the regions freed before it stay freed). Adds what was freed to *freed.
  [[nodiscard]] virtual int reclaim_tenant(const std::string& tenant, ReclaimResult* freed) = 0;
  // Regions and bytes per tenant.
  virtual std::vector<TenantUsage> tenant_usage() const = 0;
  // Every region's access count and move state (the pool's heat; empty for stores without regions).
  virtual std::vector<RegionHeat> region_heat() const { return {}; }

  // Dodo's reclamation: when MemAvailable is below `headroom` of MemTotal, gives the memory of the
  // coldest regions back to the machine (written to their files, then dropped from DRAM) until the
  // shortfall is covered or none is left; they are then served from their files, slower but the
  // same bytes. Only with a data_dir and give_back. Returns PD3_OK, or PD3_E_SYS from a region's
  // msync/madvise (the regions done before it stay given back).
  [[nodiscard]] virtual int relieve_pressure(PressureResult* result) { *result = {}; return 0; }

  // Makes every write executed since the last call durable per SyncMode (called once per frame,
  // before its response is sent). Returns PD3_OK or PD3_E_SYS.
  virtual int sync() = 0;
  // The same without waiting for the disk where the store can (the SSD tier's fdatasync): sets
  // *ticket to 0 when what the frame `touched` (its requests' Pins::touched) is durable already,
  // else to what sync_status() is asked about until it answers tier::kReady (durable) or an error
  // status. Returns PD3_OK or the error of sync().
  [[nodiscard]] virtual int begin_sync(const tier::Touched& touched, uint64_t* ticket) {
    (void)touched;
    *ticket = 0;
    return sync();
  }
  [[nodiscard]] virtual int sync_status(uint64_t ticket) {
    (void)ticket;
    return tier::kReady;
  }

  virtual MemStoreStats stats() const = 0;
  // The parser indexing writes: its name, and why its last refused answer was refused. The
  // default is the built-in format (for stores that index nothing themselves, e.g. test doubles).
  virtual const RecordParser& record_parser() const;
  virtual uint16_t server_id() const = 0;
  virtual uint64_t capacity() const = 0;
  virtual uint64_t free_bytes() const = 0;
};

}  // namespace pd3
