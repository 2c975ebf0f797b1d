// tier.hpp — the SSD tier of a memory server with a DRAM budget: regions live in their backing
// files, and the pages in use are held in a fixed pool of DRAM frames (docs/tier.md). The event
// loop never waits for a read: acquire() starts the reads a request needs and says "wait"; the I/O
// completions (completion_fd) are reaped by on_io(), after which the request asks again.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "memserver/tier/eviction_policy.hpp"
#include "memserver/tier/frame_pool.hpp"
#include "memserver/tier/frame_registrations.hpp"
#include "memserver/tier/prefetch_policy.hpp"
#include "memserver/tier/tier_io.hpp"

namespace pd3::tier {

// How a tier is built.
struct TierOptions {
  uint64_t dram_budget = 0;        // bytes of frames; at least one page
  uint32_t page_size = 64u << 10;  // a power of two in [4 KiB, 2 MiB]
  bool durable = true;             // sync() also fdatasyncs what it wrote (SyncMode::kBatch)
  EvictionKind evict = EvictionKind::kLru;
  EvictionOptions eviction;
  PrefetchKind prefetch = PrefetchKind::kNone;
  PrefetchOptions prefetching;
  uint64_t mr_cache = 0;           // bytes of the frames' registration cache (MRRC); 0: frames are not registered
};

// Counters and gauges of the tier (docs/tier.md, metrics pd3_memserver_tier_*).
struct TierStats {
  uint64_t hits = 0, misses = 0, evictions = 0, writebacks = 0, prefetches = 0, useless_prefetches = 0,
           io_errors = 0;
  uint64_t overwrites = 0;       // page accesses by a write covering the whole page: a frame, no read
  uint64_t writeback_bytes = 0;  // bytes of pages written to their files (dirty ranges only)
  uint64_t fdatasyncs = 0;       // fdatasyncs completed (one per file per group-commit batch)
  bool registering = false;      // frames are registered (TierOptions::mr_cache > 0)
  uint64_t mr_hits = 0, mr_misses = 0, mr_failures = 0, mr_deregistrations = 0, mr_pinned_bytes = 0;
  uint64_t resident_pages = 0, dirty_pages = 0, frames = 0;
};

// What the requests of one frame touched whose durability is still pending, gathered by
// Tier::release across the frame's records: the batch its response waits for (Tier::begin_sync).
struct Touched {
  uint64_t batch = 0;   // the latest group-commit batch holding bytes they read (0: none pending)
  bool listed = false;  // they wrote, or read bytes written since the last frame end: wait for every batch
  // What a frame whose records are not known must assume.
  static Touched everything() { return {0, true}; }
};

// The pages one request holds: pinned frames (never evicted while pinned) and the pages whose
// reads it started (misses, not hits, when it runs).
struct Pins {
  std::vector<std::pair<FrameId, uint64_t>> frames;  // (frame, Frame::seq when pinned)
  std::vector<uint64_t> missed;                      // page keys (region << 32 | page)
  uint64_t owner = 0;  // given by the tier at the first acquire: names the request in kFilling frames
  Touched touched;     // added to by every release(); the frame's owner resets it when a frame starts
};

// acquire()'s answer besides an error status.
inline constexpr int kReady = 1;
inline constexpr int kWait = 0;

// The frame pool, the regions' page tables and the I/O between them. Single-threaded: the memory
// server's event-loop thread owns it.
class Tier final : public FrameView {
 public:
  // Checks the options and builds the pool. Returns PD3_OK, PD3_E_INVAL (a page size that is not a
  // power of two in [4K, 2M], a budget below one page) or PD3_E_NOMEM.
  [[nodiscard]] static int open(const TierOptions& options, std::unique_ptr<TierIo> io, std::unique_ptr<Tier>* out);
  // Writes every dirty page back (nothing is left only in DRAM) after the I/O in flight completes.
  ~Tier() override;

  // Region `id` lives in `fd` (taken over), `bytes` long; every page starts on file.
  void add_region(uint32_t id, UniqueFd fd, uint64_t bytes);
  // Region `id` is freed: its pages leave their frames (dirty ones are discarded), pins on them lapse.
  void drop_region(uint32_t id);

  // Makes the pages of [lo, hi) of region `id` resident and pins them in *pins (what *pins held
  // before is released first). With `write`, a page the range covers whole is not read: a frame is
  // claimed for it (kFilling), which the request's copy_in fills; until then every other request
  // waits for it, and release() without that copy_in gives the frame up. Returns kReady (all resident: copy_out / copy_in may run), kWait
  // (reads started or no frame free: ask again after on_io()), PD3_E_TOO_BIG (the range needs more
  // frames than the pool has), PD3_E_SYS (a read of one of its pages failed), PD3_E_NOSPACE (no
  // frame can be freed: every one holds a page whose write-back failed) or PD3_E_NOMEM.
  [[nodiscard]] int acquire(uint32_t id, uint64_t lo, uint64_t hi, bool write, Pins* pins);
  // Unpins what *pins holds and clears it, adding what its pages hold that is not durable yet to
  // pins->touched; frames it claimed and did not fill are emptied.
  void release(Pins* pins);
  // Copies between resident, pinned pages of region `id` and a buffer; copy_in also fills the
  // frames the request claimed (it must cover each of them whole).
  void copy_out(uint32_t id, uint64_t offset, uint64_t len, uint8_t* dst) const;
  void copy_in(uint32_t id, uint64_t offset, const uint8_t* src, uint64_t len);
  // The bytes [offset, offset + len) of region `id` in place, without a copy: they must lie in one
  // page, resident and pinned; valid while the pin holds.
  const uint8_t* page_bytes(uint32_t id, uint64_t offset, uint64_t len) const;
  // The end of the page holding byte `offset`.
  uint64_t page_end(uint64_t offset) const { return (offset / pool_->page_size() + 1) * pool_->page_size(); }

  // Writes every page written since the last call to its file (only the bytes written) and, in
  // durable mode, fdatasyncs the files; waits for it (tests, shutdown). Returns PD3_OK,
  // PD3_E_NOSPACE or PD3_E_SYS; failed pages stay dirty, resident and listed for the next call.
  [[nodiscard]] int sync();
  // The same for the event loop, without waiting for the disk: the dirty range of each listed page
  // is written through the I/O backend (pwrite, into the page cache) and, in durable mode, its file
  // is then fdatasync-ed through the backend too, batched with other frames' (one fdatasync per file
  // serves every frame waiting on it: group commit). Sets *ticket to 0 (nothing to wait for) or to
  // the batch to ask sync_status() about, chosen by what the frame `touched`: with touched.listed,
  // the last batch there is (the one gathering, else the one in flight), since another frame's end
  // may have taken pages this frame wrote into its batch; otherwise touched.batch, the last batch
  // holding bytes it read. Returns PD3_OK or the error of a batch that already failed.
  [[nodiscard]] int begin_sync(const Touched& touched, uint64_t* ticket);
  // Durable mode: the next batch (the one begin_sync gathers) also fdatasyncs `file`, a file outside
  // the tier written through a mapping (the key index); if that batch fails, the one after syncs it
  // again. Does nothing otherwise.
  void sync_also(std::shared_ptr<const UniqueFd> file);
  // kReady once the batch of `ticket` is written (and in durable mode on disk), kWait before, or its
  // error status (its pages are dirty and listed again).
  [[nodiscard]] int sync_status(uint64_t ticket);

  // The I/O completions' eventfd, and what reaps them; on_io returns true if any arrived.
  int completion_fd() const { return io_->completion_fd(); }
  bool on_io();
  // Log lines of I/O errors since the last call.
  std::vector<std::string> take_errors();
  // Log lines of refused frame registrations (the first only).
  std::vector<std::string> take_notices();

  TierStats stats() const;
  uint32_t page_size() const { return pool_->page_size(); }
  uint32_t frames() const { return pool_->frames(); }
  FramePool& pool() { return *pool_; }

  // FrameView
  bool evictable(FrameId frame) const override;
  bool dirty(FrameId frame) const override { return pool_->at(frame).dirty; }

 private:
  Tier(const TierOptions& options, std::unique_ptr<TierIo> io, std::unique_ptr<FramePool> pool,
       std::unique_ptr<EvictionPolicy> eviction, std::unique_ptr<PrefetchPolicy> prefetch);
  RegionFile* region(uint32_t id) const;
  void pin(FrameId f, Pins* pins);
  // Unpins what *pins holds, keeping its claimed frames (acquire asking again).
  void unpin(Pins* pins);
  // Whether [lo, hi) covers page `page` of `file` whole.
  bool covers(const RegionFile& file, uint64_t page, uint64_t lo, uint64_t hi) const;
  bool any_pinned() const;
  // A frame to load into: a free one, else the eviction policy's clean victim (dirty victims get a
  // write-back started and are passed over). kNoFrame if none now. `for_prefetch`: only a free
  // frame or a clean victim that is not itself an unused prefetch, and no write-back is started.
  FrameId take_frame(bool for_prefetch);
  void evict(FrameId f);
  int start_read(const std::shared_ptr<RegionFile>& file, uint64_t page, FrameId f, bool prefetch);
  void start_writeback(FrameId f);
  // Counts hits, tells the eviction and prefetch policies; pins.missed must be sorted.
  void on_accessed(uint32_t id, const Pins& pins, bool write);
  void prefetch_pages(const std::shared_ptr<RegionFile>& file, const std::vector<uint64_t>& pages);
  uint32_t page_len(const RegionFile& file, uint64_t page) const;
  void error(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  // Starts the write of the dirty range of resident frame `f` (kWriting until it completes).
  [[nodiscard]] int submit_write(FrameId f);
  // Group commit: pages whose writes joined a batch (for relist), their files, writes outstanding.
  struct SyncBatch {
    std::vector<std::shared_ptr<RegionFile>> files;
    std::vector<std::shared_ptr<const UniqueFd>> other_files;  // sync_also's
    std::vector<std::pair<FrameId, uint64_t>> written;
    uint32_t writes = 0;
    int failure = 0;  // first error of its writes or fdatasyncs
    bool empty() const {
      return files.empty() && other_files.empty() && written.empty() && writes == 0 && failure == 0;
    }
  };
  // Starts the writes of the listed pages as part of the gathering batch.
  void write_listed();
  // A page leaving DRAM before the batch holding its bytes completed (durable mode): remembered, so
  // that read back it keeps that batch (recall_pending, when frame `f` is assigned it again).
  void remember_pending(const Frame& fr);
  void recall_pending(FrameId f);
  // The gathering batch took the listed files: kListedBatch becomes its ticket.
  void resolve_listed_pending();
  // Marks pages of a failed batch dirty and listed again.
  void relist(const std::vector<std::pair<FrameId, uint64_t>>& written);
  void promote_batch();     // the gathering batch starts running
  void start_fdatasyncs();  // the running batch's writes are done: its files' fdatasyncs
  void submit_fdatasync(int fd);  // one of them, counted in sync_outstanding_ (or the batch fails)
  void finish_batch();
  void on_flushed(uint64_t ticket, int64_t result);  // a write of batch `ticket` completed
  void on_sync_done(int64_t result);

  static constexpr uint64_t kSyncTag = 1ull << 63;  // tags fdatasync ops (frame ids tag reads and write-backs)

  TierOptions options_;
  std::unique_ptr<TierIo> io_;
  std::unique_ptr<FramePool> pool_;
  std::unique_ptr<FrameRegistrations> registrations_;  // after pool_: deregisters before it is unmapped
  std::unique_ptr<EvictionPolicy> eviction_;
  std::unique_ptr<PrefetchPolicy> prefetch_;
  std::unordered_map<uint32_t, std::shared_ptr<RegionFile>> regions_;
  std::unordered_map<uint64_t, int> failed_reads_;  // page key -> status, told to the next acquire
  std::vector<std::pair<FrameId, uint64_t>> to_sync_;  // written since the last sync (frame, seq)
  std::vector<std::shared_ptr<RegionFile>> sync_files_;  // their files (fdatasync at sync, durable only)
  std::vector<std::shared_ptr<const UniqueFd>> sync_other_files_;  // sync_also's, for the next batch
  std::vector<std::string> errors_;
  std::vector<uint64_t> candidates_;  // scratch of prefetch_pages
  uint64_t in_flight_ = 0;  // reads and writes (not fdatasyncs)
  uint64_t next_owner_ = 0;  // the last Pins::owner given
  // The batch gathering (ticket sync_next_) and the one running (ticket sync_next_ - 1); one runs
  // at a time, so batches complete in ticket order.
  SyncBatch sync_waiting_, sync_running_;
  bool sync_active_ = false;      // sync_running_ is running
  uint64_t sync_next_ = 1;        // the ticket of the batch now gathering
  uint64_t sync_done_ = 0;        // every batch up to this one completed
  uint32_t sync_outstanding_ = 0;  // fdatasyncs of the running batch not completed
  std::vector<std::pair<uint64_t, int>> sync_failed_;  // (ticket, status) of recent failed batches
  // Page key -> the batch (or kListedBatch) holding the bytes of a page evicted before it was durable.
  std::unordered_map<uint64_t, uint64_t> evicted_pending_;
  std::vector<uint64_t> listed_evicted_;                      // its kListedBatch keys
  std::vector<std::pair<FrameId, uint64_t>> listed_read_back_;  // frames read back with kListedBatch
  TierStats stats_;
};

// Page key of the failed-read table and Pins::missed.
inline uint64_t page_key(uint32_t region, uint64_t page) { return uint64_t(region) << 32 | page; }

}  // namespace pd3::tier
