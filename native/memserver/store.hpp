// store.hpp — the memory server's MemStore implementation, internal to native/memserver: the class
// whose members live in files by concept (mem_store.cpp: opening, dispatch, counters; store_data.cpp:
// READ / WRITE and indexing; store_prefetch.cpp: PREFETCH by key; store_control.cpp: CONTROL
// records; store_reclaim.cpp: giving memory back and reclaiming tenants; store_tier.cpp: the SSD
// tier's pins and syncs).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "memserver/data_dir.hpp"
#include "memserver/key_index.hpp"
#include "memserver/mem_store.hpp"
#include "memserver/record_parser.hpp"
#include "memserver/region_table.hpp"
#include "pd3/record.h"
#include "pd3/status.h"

namespace pd3 {

// The MemStore: regions, index and counters, owned by the server's event-loop thread.
class Store final : public MemStore {
 public:
  Store(const MemStoreOptions& options, uint64_t capacity, std::unique_ptr<DataDir> dir, std::unique_ptr<tier::Tier> tier)
      : options_(options),
        dir_(std::move(dir)),
        tier_(std::move(tier)),
        regions_(options.server_id, capacity, dir_.get(), tier_ != nullptr),
        records_(options.record_parser) {}

  int open_parts();
  int prepare(const TransportRequest& req, const Tenant& tenant, tier::Pins* pins) override;
  void release(tier::Pins* pins) override {
    if (tier_) tier_->release(pins);
  }
  void fail_request(const TransportRequest& req, int status, FrameBuilder* out) override;
  uint32_t warm(const TransportRequest& req) override;
  int io_fd() const override { return tier_ ? tier_->completion_fd() : -1; }
  bool on_io() override { return tier_ && tier_->on_io(); }
  std::vector<std::string> take_io_errors() override { return tier_ ? tier_->take_errors() : std::vector<std::string>{}; }
  std::vector<std::string> take_tier_notices() override {
    return tier_ ? tier_->take_notices() : std::vector<std::string>{};
  }

  using MemStore::execute;
  void execute(const TransportRequest& req, const Tenant& tenant, FrameBuilder* out) override;
  int reclaim_tenant(const std::string& tenant, ReclaimResult* freed) override;
  std::vector<TenantUsage> tenant_usage() const override { return regions_.usage(); }
  std::vector<RegionHeat> region_heat() const override { return regions_.heat(); }
  int relieve_pressure(PressureResult* result) override;
  int sync() override;
  int begin_sync(const tier::Touched& touched, uint64_t* ticket) override;
  int sync_status(uint64_t ticket) override { return tier_ ? tier_->sync_status(ticket) : tier::kReady; }
  MemStoreStats stats() const override;
  const RecordParser& record_parser() const override { return records_; }
  uint16_t server_id() const override { return options_.server_id; }
  uint64_t capacity() const override { return regions_.capacity(); }
  uint64_t free_bytes() const override {
    // Region files found at open may exceed a capacity that was lowered since.
    return regions_.capacity() > regions_.allocated_bytes() ? regions_.capacity() - regions_.allocated_bytes() : 0;
  }

 private:
  void read(const TransportRequest& req, const Tenant& tenant, FrameBuilder* out);
  void write(const TransportRequest& req, const Tenant& tenant, FrameBuilder* out);
  void prefetch(const TransportRequest& req, const Tenant& tenant, FrameBuilder* out);
  void control(const TransportRequest& req, const Tenant& tenant, FrameBuilder* out);
  void stats_text(const TransportRequest& req, FrameBuilder* out);
  void move_control(const TransportRequest& req, const Tenant& tenant, FrameBuilder* out);
  // The region `id` if `tenant` owns it, or nullptr after answering PD3_E_BAD_REGION or
  // PD3_E_FORBIDDEN.
  Region* owned_region(const TransportRequest& req, uint32_t id, const Tenant& tenant, FrameBuilder* out);
  // The region [offset, offset + size) of a READ / WRITE lies in, or nullptr after answering with
  // the error.
  Region* checked_range(const TransportRequest& req, const Tenant& tenant, FrameBuilder* out);
  void index_records(const Tenant& tenant, uint32_t region, uint32_t offset, const uint8_t* bytes, uint32_t len);
  void error(const TransportRequest& req, int status, FrameBuilder* out);
  void moved(const TransportRequest& req, FrameBuilder* out) {
    ++stats_.moved_refusals;
    error(req, PD3_E_MOVED, out);
  }
  void prefetch_miss(const TransportRequest& req, FrameBuilder* out);
  // The bytes [offset, offset + len) of `region`: in its mapping, in place in the tier's frame when
  // they lie in one page, or else copied out of the tier's frames into scratch_ (pinned by prepare()).
  const uint8_t* bytes_of(const Region& region, uint64_t offset, uint64_t len);
  // With the tier: how many bytes from a PREFETCH's record start are brought in to parse it.
  uint64_t record_span(const Region& region, uint32_t at, const TransportRequest& req) const;
  // The region a record of the index at `address` lies in, if `tenant` owns it.
  Region* indexed_region(uint64_t address, const Tenant& tenant) const;
  // Region `region` was freed: the tier forgets it.
  void forget_region(uint32_t region);
  // With the tier: the index's changes since the last sync go into the tier's next batch; false if
  // there were none.
  bool hand_index_to_tier();

  MemStoreOptions options_;
  std::unique_ptr<DataDir> dir_;  // before regions_ and index_, which use it
  std::unique_ptr<tier::Tier> tier_;  // null without a DRAM budget; outlives no region file it reads
  RegionTable regions_;
  std::unique_ptr<KeyIndex> index_;
  RecordParser records_;
  std::vector<uint8_t> scratch_;  // bytes copied out of the tier's frames for one record
  // With the tier, the PREFETCH prepare() made ready last whose record lies wholly in the first page
  // of its span, parsed there (prepare and execute of a record run back to back on the loop
  // thread, so execute answers from it without parsing or pinning more).
  struct FirstPageRecord {
    bool valid = false;
    uint32_t region = 0;
    uint32_t at = 0;    // the record's offset in the region
    uint32_t bytes = 0;  // from `at` to the page's end
    pd3_record_key key{};
  } first_page_record_;
  MemStoreStats stats_;
  uint64_t uses_ = 0;  // requests that touched a region: the clock of Region::last_use
};

}  // namespace pd3
