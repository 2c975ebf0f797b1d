// mem_store.cpp — MemStore::open and the store itself: executes READ / WRITE / PREFETCH / CONTROL
// records against the region table and the key→address index (docs/architecture.md §9).
#include "memserver/mem_store.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <utility>

#include "common/error.hpp"
#include "memserver/capacity.hpp"
#include "memserver/data_dir.hpp"
#include "memserver/key_hash.hpp"
#include "memserver/key_index.hpp"
#include "memserver/region_table.hpp"
#include "pd3/status.h"

namespace pd3 {

static_assert(PD3_MAX_SERVERS == 1u << 16, "MemStoreOptions::server_id: every uint16_t is a valid server id");

namespace {

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
  int begin_sync(uint64_t* ticket) override;
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
  // With the tier: the index's changes since the last sync go into the tier's next batch.
  void hand_index_to_tier();

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

int Store::open_parts() {
  // The index file first decides whether a data_dir is ours, but it must not be created next to
  // region files that lost theirs (a later open would then accept the directory).
  const bool had_index = dir_ != nullptr && dir_->exists(KeyIndex::kFileName);
  if (int rc = regions_.load(); rc != PD3_OK) return rc;
  if (tier_)
    for (Region* region : regions_.coldest_first()) tier_->add_region(region->id, std::move(region->file), region->capacity);
  if (dir_ != nullptr && !had_index && regions_.count() > 0)
    return fail(PD3_E_CORRUPT, "data_dir %s holds %llu region files but no %s: refusing to guess whose they are",
                dir_->path().c_str(), (unsigned long long)regions_.count(), KeyIndex::kFileName);
  KeyIndexOptions index_options;
  index_options.initial_keys = options_.index_initial_keys;
  index_options.dir = dir_.get();
  index_options.server_id = options_.server_id;
  index_options.keep = [this](uint64_t address) { return regions_.find(address_region(address)) != nullptr; };
  return KeyIndex::open(index_options, &index_);
}

void Store::error(const TransportRequest& req, int status, FrameBuilder* out) {
  ++stats_.errors;
  out->response(req.op_id, status, 0, nullptr, 0);
}

void Store::execute(const TransportRequest& req, const Tenant& tenant, FrameBuilder* out) {
  // Refused rather than ignored: a later protocol may give the field a meaning this server would
  // otherwise silently drop.
  if (req.reserved != 0) return error(req, PD3_E_PROTOCOL, out);
  switch (req.op()) {
    case PD3_OP_READ: return read(req, tenant, out);
    case PD3_OP_WRITE: return write(req, tenant, out);
    case PD3_OP_PREFETCH: return prefetch(req, tenant, out);
    default: return control(req, tenant, out);  // op is 2 bits: PD3_OP_CONTROL
  }
}

int Store::relieve_pressure(PressureResult* result) {
  *result = {};
  // The tier bounds its DRAM itself: its regions have no mapping to give back.
  if (dir_ == nullptr || !options_.give_back || tier_) return PD3_OK;
  if (!read_meminfo(options_.meminfo_path.c_str(), &result->total_bytes, &result->available_bytes)) return PD3_OK;
  const uint64_t floor = uint64_t(double(result->total_bytes) * options_.headroom);
  if (result->available_bytes >= floor) return PD3_OK;
  ++stats_.pressure_events;
  result->wanted_bytes = floor - result->available_bytes;
  for (Region* region : regions_.coldest_first()) {
    if (result->released_bytes >= result->wanted_bytes) break;
    uint64_t released = 0;
    if (int rc = regions_.give_back(region, &released); rc != PD3_OK) return rc;
    if (released == 0) continue;  // nothing of it was in memory
    result->released_bytes += released;
    ++result->regions;
    ++stats_.given_back_regions;
    stats_.given_back_bytes += released;
  }
  return PD3_OK;
}

Region* Store::owned_region(const TransportRequest& req, uint32_t id, const Tenant& tenant, FrameBuilder* out) {
  Region* region = regions_.find(id);
  if (region == nullptr) {
    error(req, PD3_E_BAD_REGION, out);
    return nullptr;
  }
  if (region->tenant != tenant.name) {
    ++stats_.tenant_refusals;
    error(req, PD3_E_FORBIDDEN, out);
    return nullptr;
  }
  region->last_use = ++uses_;
  return region;
}

Region* Store::checked_range(const TransportRequest& req, const Tenant& tenant, FrameBuilder* out) {
  Region* region = owned_region(req, req.region, tenant, out);
  if (region == nullptr) return nullptr;
  if (req.size == 0) {
    error(req, PD3_E_INVAL, out);
    return nullptr;
  }
  if (uint64_t(req.offset) + req.size > region->capacity) {
    error(req, PD3_E_RANGE, out);
    return nullptr;
  }
  return region;
}

void Store::read(const TransportRequest& req, const Tenant& tenant, FrameBuilder* out) {
  ++stats_.reads;
  Region* region = checked_range(req, tenant, out);
  if (region == nullptr) return;
  // Sealed: its name is being switched to the copy, whose bytes may change from then on.
  if (region->move == MoveState::kSealed) return moved(req, out);
  ++region->accesses;
  if (region->given_back) {  // what of the range is not in memory comes from the file (page faults)
    const uint64_t resident = region->memory.resident_bytes(req.offset, uint64_t(req.offset) + req.size);
    if (resident < req.size) {
      ++stats_.file_reads;
      stats_.file_read_bytes += req.size - resident;
    }
  }
  out->response(req.op_id, PD3_OK, req.size, bytes_of(*region, req.offset, req.size), req.size);
  stats_.read_bytes += req.size;
}

void Store::write(const TransportRequest& req, const Tenant& tenant, FrameBuilder* out) {
  ++stats_.writes;
  Region* region = checked_range(req, tenant, out);
  if (region == nullptr) return;
  if (req.data_len != req.size || req.data == nullptr) return error(req, PD3_E_INVAL, out);  // not from decode_request
  // Frozen or sealed: the copy on the target is being made from these bytes; a write now would be lost.
  if (region->move != MoveState::kNone) return moved(req, out);
  ++region->accesses;
  if (tier_) {
    tier_->copy_in(region->id, req.offset, req.data, req.size);
  } else {
    std::memcpy(region->bytes() + req.offset, req.data, req.size);
    regions_.mark_written(region, req.offset, uint64_t(req.offset) + req.size);
  }
  index_records(tenant, region->id, req.offset, req.data, req.size);
  stats_.write_bytes += req.size;
  out->response(req.op_id, PD3_OK, req.size, nullptr, 0);
}

void Store::index_records(const Tenant& tenant, uint32_t region, uint32_t offset, const uint8_t* bytes, uint32_t len) {
  // Only records wholly inside the written bytes, parsed from the first written byte: the parser
  // never sees a byte outside them (docs/memserver.md: records straddling a write's ends).
  records_.for_each_record(bytes, len, [&](const pd3_record_key& k) {
    const uint64_t hash = tenant.key_hash(bytes + k.key_off, k.key_len);
    // A failed put (index growth out of memory or disk) leaves the key out of the index: its
    // prefetches miss, and no older address of the key can answer for it.
    index_->put(hash, pack_address(region, uint32_t(offset + k.record_off)));
  });
}

void Store::prefetch_miss(const TransportRequest& req, FrameBuilder* out) {
  ++stats_.errors;
  ++stats_.prefetch_not_found;
  out->prefetch_response(req.op_id, PD3_E_NOT_FOUND, req.data, uint16_t(req.data_len), 0, nullptr, 0);
}

void Store::prefetch(const TransportRequest& req, const Tenant& tenant, FrameBuilder* out) {
  ++stats_.prefetches;
  const uint8_t* key = req.data;
  const uint32_t key_len = req.data_len;
  if (key == nullptr || key_len == 0 || key_len > PD3_MAX_KEY_LEN) {
    ++stats_.errors;
    out->prefetch_response(req.op_id, PD3_E_INVAL, nullptr, 0, 0, nullptr, 0);
    return;
  }
  const uint64_t hash = tenant.key_hash(key, key_len);
  uint64_t address = 0;
  if (!index_->find(hash, &address)) return prefetch_miss(req, out);
  // The index only says where the key's record was last written: the bytes there must still parse
  // as a record of exactly this key (they may have been overwritten, or the region freed or reused
  // since), in a region of this tenant (a salted hash may collide with another tenant's: never
  // answer with its bytes). The record is re-parsed alone, from its first byte to the region's end.
  Region* region = indexed_region(address, tenant);
  // A sealed region's record may be stale (its copy on the target is the live one): a miss, but the
  // entry stays, since a thaw makes it good again.
  if (region != nullptr && region->move == MoveState::kSealed) return prefetch_miss(req, out);
  const uint32_t at = address_offset(address);
  const FirstPageRecord first = std::exchange(first_page_record_, {});
  const bool in_first_page = region != nullptr && first.valid && first.region == region->id && first.at == at;
  const uint64_t span = region == nullptr ? 0
                        : in_first_page   ? first.bytes
                        : tier_           ? record_span(*region, at, req)
                                          : region->capacity - at;
  const uint8_t* record = region == nullptr ? nullptr : bytes_of(*region, at, span);
  pd3_record_key k = first.key;
  const bool parsed = in_first_page || (record != nullptr && records_.record_at_start(record, span, &k));
  if (!parsed && record != nullptr && span < region->capacity - at) {
    // The tier brought in only what a value of req.size needs: a record that does not parse in
    // that much may simply be larger (the index entry stays).
    ++stats_.errors;
    out->prefetch_response(req.op_id, PD3_E_DEST_SMALL, key, uint16_t(key_len), 0, nullptr, 0);
    return;
  }
  if (!parsed || k.key_len != key_len || std::memcmp(record + k.key_off, key, key_len) != 0) {
    index_->erase(hash);
    return prefetch_miss(req, out);
  }
  region->last_use = ++uses_;
  ++region->accesses;
  // value_len fits 32 bits: the value lies inside the region (checked for a plug-in's answer).
  const uint32_t value_len = uint32_t(k.value_len);
  if (value_len > req.size) {
    ++stats_.errors;
    out->prefetch_response(req.op_id, PD3_E_DEST_SMALL, key, uint16_t(key_len), value_len, nullptr, 0);
    return;
  }
  out->prefetch_response(req.op_id, PD3_OK, key, uint16_t(key_len), value_len, record + k.value_off, value_len);
}

void Store::control(const TransportRequest& req, const Tenant& tenant, FrameBuilder* out) {
  ++stats_.controls;
  switch (req.region) {
    case PD3_CTL_ALLOCATE: {
      Region* region = nullptr;
      if (int rc = regions_.allocate(req.size, tenant.name, &region); rc != PD3_OK) return error(req, rc, out);
      if (tier_) tier_->add_region(region->id, std::move(region->file), region->capacity);
      const pd3_alloc_reply reply{region->id, region->capacity};
      out->response(req.op_id, PD3_OK, sizeof reply, &reply, sizeof reply);
      return;
    }
    case PD3_CTL_DEALLOCATE: {
      if (owned_region(req, req.offset, tenant, out) == nullptr) return;
      if (int rc = regions_.deallocate(req.offset); rc != PD3_OK) return error(req, rc, out);
      forget_region(req.offset);
      out->response(req.op_id, PD3_OK, 0, nullptr, 0);
      return;
    }
    case PD3_CTL_STATS: return stats_text(req, out);
    case PD3_CTL_FREEZE:
    case PD3_CTL_SEAL:
    case PD3_CTL_THAW: return move_control(req, tenant, out);
    default: return error(req, PD3_E_BAD_OP, out);
  }
}

void Store::move_control(const TransportRequest& req, const Tenant& tenant, FrameBuilder* out) {
  Region* region = owned_region(req, req.offset, tenant, out);
  if (region == nullptr) return;
  MoveState next = region->move;
  switch (req.region) {
    case PD3_CTL_FREEZE:
      // A sealed region may already be named elsewhere: freezing it again must not reopen it.
      if (region->move == MoveState::kSealed) return moved(req, out);
      next = MoveState::kFrozen;
      break;
    case PD3_CTL_SEAL:
      // Only a frozen region: sealing one that took writes since would drop them from the copy.
      if (region->move == MoveState::kNone) return error(req, PD3_E_INVAL, out);
      next = MoveState::kSealed;
      break;
    default:  // PD3_CTL_THAW
      if (region->move == MoveState::kNone) return error(req, PD3_E_INVAL, out);
      if (req.size == PD3_THAW_IF_FROZEN && region->move == MoveState::kSealed) return moved(req, out);
      next = MoveState::kNone;
      break;
  }
  if (int rc = regions_.set_move(region, next); rc != PD3_OK) return error(req, rc, out);
  out->response(req.op_id, PD3_OK, 0, nullptr, 0);
}

void Store::stats_text(const TransportRequest& req, FrameBuilder* out) {
  const MemStoreStats s = stats();
  char text[PD3_STATS_REPLY_MAX];
  const int n = std::snprintf(
      text, sizeof text,
      "server_id=%u regions=%" PRIu64 " allocated_bytes=%" PRIu64 " capacity=%" PRIu64 " free_bytes=%" PRIu64
      " index_keys=%" PRIu64 " index_bytes=%" PRIu64 " reads=%" PRIu64 " writes=%" PRIu64 " prefetches=%" PRIu64
      " controls=%" PRIu64 " read_bytes=%" PRIu64 " write_bytes=%" PRIu64 " errors=%" PRIu64
      " prefetch_not_found=%" PRIu64 " syncs=%" PRIu64 " record_parser_rejects=%" PRIu64
      " tenant_refusals=%" PRIu64 " reclaimed_regions=%" PRIu64 " reclaimed_bytes=%" PRIu64,
      unsigned(options_.server_id), s.regions, s.allocated_bytes, s.capacity, free_bytes(), s.index_keys, s.index_bytes,
      s.reads, s.writes, s.prefetches, s.controls, s.read_bytes, s.write_bytes, s.errors, s.prefetch_not_found, s.syncs,
      s.record_parser_rejects, s.tenant_refusals, s.reclaimed_regions, s.reclaimed_bytes);
  const uint32_t len = n < 0 ? 0 : uint32_t(n) < sizeof text ? uint32_t(n) : uint32_t(sizeof text - 1);
  out->response(req.op_id, PD3_OK, len, text, len);
}

int Store::reclaim_tenant(const std::string& tenant, ReclaimResult* freed) {
  const std::vector<uint32_t> ids = regions_.regions_of(tenant);
  if (ids.empty()) return PD3_OK;
  int rc = PD3_OK;
  std::vector<uint32_t> gone;
  for (const uint32_t id : ids) {
    const uint32_t bytes = regions_.find(id)->capacity;
    if (rc = regions_.deallocate(id); rc != PD3_OK) break;
    forget_region(id);
    gone.push_back(id);
    ++freed->regions;
    freed->bytes += bytes;
    ++stats_.reclaimed_regions;
    stats_.reclaimed_bytes += bytes;
  }
  // Entries into freed regions would only miss at a prefetch, but they hold index slots until the
  // next rebuild, and a dead tenant's may be many: drop them now.
  if (!gone.empty()) {
    ++stats_.tenants_reclaimed;
    freed->index_entries += index_->erase_if([&](uint64_t address) {
      const uint32_t region = address_region(address);
      return std::binary_search(gone.begin(), gone.end(), region);  // regions_of lists them in id order
    });
  }
  return rc;
}

int Store::sync() {
  // Both are no-ops unless the data directory is durable (SyncMode::kBatch).
  if (int rc = regions_.sync(&stats_.syncs); rc != PD3_OK) return rc;
  if (!tier_) return index_->sync(&stats_.syncs);
  hand_index_to_tier();
  return tier_->sync();
}

void Store::hand_index_to_tier() {
  std::shared_ptr<const UniqueFd> file;
  if (index_->hand_off_changes(&file)) tier_->sync_also(std::move(file));
}

MemStoreStats Store::stats() const {
  MemStoreStats s = stats_;
  s.regions = regions_.count();
  s.allocated_bytes = regions_.allocated_bytes();
  s.capacity = regions_.capacity();
  s.index_keys = index_->keys();
  s.index_bytes = index_->bytes();
  s.record_parser_rejects = records_.rejected();
  if (tier_) {
    s.tiered = true;
    s.tier = tier_->stats();
  }
  return s;
}

int Store::begin_sync(uint64_t* ticket) {
  *ticket = 0;
  if (int rc = regions_.sync(&stats_.syncs); rc != PD3_OK) return rc;
  if (!tier_) return index_->sync(&stats_.syncs);
  // The index's changes join the tier's group commit: the loop thread never waits for an msync.
  hand_index_to_tier();
  return tier_->begin_sync(ticket);
}

void Store::forget_region(uint32_t region) {
  if (tier_) tier_->drop_region(region);
}

const uint8_t* Store::bytes_of(const Region& region, uint64_t offset, uint64_t len) {
  if (!tier_) return region.bytes() + offset;
  if (len > 0 && offset + len <= tier_->page_end(offset)) return tier_->page_bytes(region.id, offset, len);
  scratch_.resize(len);
  tier_->copy_out(region.id, offset, len, scratch_.data());
  return scratch_.data();
}

uint64_t Store::record_span(const Region& region, uint32_t at, const TransportRequest& req) const {
  // A record's framing (the built-in header, or a plug-in format's) is assumed to fit in 256 bytes
  // beyond the key (as long as the one asked for) and a value of the size asked for; never more than the frames can hold at once.
  constexpr uint64_t kFramingSlack = 256;
  const uint64_t pool = uint64_t(tier_->frames()) * tier_->page_size() - at % tier_->page_size();
  return std::min({uint64_t(region.capacity - at), kFramingSlack + req.data_len + uint64_t(req.size), pool});
}

Region* Store::indexed_region(uint64_t address, const Tenant& tenant) const {
  Region* region = regions_.find(address_region(address));
  if (region == nullptr || region->tenant != tenant.name || address_offset(address) >= region->capacity) return nullptr;
  return region;
}

void Store::fail_request(const TransportRequest& req, int status, FrameBuilder* out) {
  ++stats_.errors;
  MemStore::fail_request(req, status, out);
}

int Store::prepare(const TransportRequest& req, const Tenant& tenant, tier::Pins* pins) {
  first_page_record_ = {};
  if (!tier_ || req.reserved != 0) return tier::kReady;  // execute() answers what needs no pages
  uint32_t id = req.region;
  uint64_t lo = req.offset, hi = uint64_t(req.offset) + req.size;
  if (req.op() == PD3_OP_PREFETCH) {
    if (req.data == nullptr || req.data_len == 0 || req.data_len > PD3_MAX_KEY_LEN) return tier::kReady;
    uint64_t address = 0;
    if (!index_->find(tenant.key_hash(req.data, req.data_len), &address)) return tier::kReady;
    const Region* region = indexed_region(address, tenant);
    if (region == nullptr) return tier::kReady;
    id = region->id;
    lo = address_offset(address);
    hi = lo + record_span(*region, uint32_t(lo), req);
    // The span asked for is sized for the largest value a prefetch takes (64 KiB by default), so
    // it nearly always reaches into the next page, while the record itself (a small value) nearly
    // always ends in the first: look there first, and bring in the rest only when it does not.
    const uint64_t first_end = std::min(hi, tier_->page_end(lo));
    if (first_end < hi) {
      const int ready = tier_->acquire(id, lo, first_end, false, pins);
      if (ready != tier::kReady) return ready;
      FirstPageRecord& f = first_page_record_;
      f.bytes = uint32_t(first_end - lo);
      if (records_.probe_record_at_start(tier_->page_bytes(id, lo, f.bytes), f.bytes, &f.key)) {
        f.valid = true;
        f.region = id;
        f.at = uint32_t(lo);
        return tier::kReady;
      }
    }
  } else if (req.op() == PD3_OP_READ || req.op() == PD3_OP_WRITE) {
    const Region* region = regions_.find(id);
    if (region == nullptr || region->tenant != tenant.name || req.size == 0 || hi > region->capacity) return tier::kReady;
  } else {
    return tier::kReady;
  }
  return tier_->acquire(id, lo, hi, req.op() == PD3_OP_WRITE, pins);
}

}  // namespace

void MemStore::fail_request(const TransportRequest& req, int status, FrameBuilder* out) {
  if (req.op() == PD3_OP_PREFETCH)
    out->prefetch_response(req.op_id, status, req.data, uint16_t(req.data_len), 0, nullptr, 0);
  else
    out->response(req.op_id, status, 0, nullptr, 0);
}

namespace {

// The tier of `options`, with its I/O backend.
int open_tier(const MemStoreOptions& options, std::unique_ptr<tier::Tier>* out) {
  std::unique_ptr<tier::TierIo> io;
  int rc = PD3_OK;
  if (options.tier_io_factory) {
    rc = options.tier_io_factory(&io);
  } else {
    rc = tier::make_tier_io(options.tier_io, &io);
    if (rc == PD3_E_UNAVAILABLE && options.tier_io_fallback) rc = tier::make_tier_io(tier::IoKind::kThreads, &io);
  }
  if (rc != PD3_OK) return rc;
  tier::TierOptions t;
  t.dram_budget = options.dram_budget;
  t.page_size = options.page_size;
  t.durable = options.sync == SyncMode::kBatch;
  t.evict = options.evict;
  t.prefetch = options.tier_prefetch;
  t.mr_cache = options.mr_cache == MemStoreOptions::kMrCacheBudget ? options.dram_budget : options.mr_cache;
  return tier::Tier::open(t, std::move(io), out);
}

}  // namespace

const RecordParser& MemStore::record_parser() const {
  static const RecordParser builtin;
  return builtin;
}

int MemStore::open(const MemStoreOptions& options, std::unique_ptr<MemStore>* out) {
  clear_error();
  if (options.sync != SyncMode::kNone && options.sync != SyncMode::kBatch) return fail(PD3_E_INVAL, "unknown sync mode");
  uint64_t capacity = options.capacity;
  if (capacity == 0) {
    if (!(options.headroom >= 0.0 && options.headroom < 1.0))
      return fail(PD3_E_INVAL, "headroom %g outside [0, 1)", options.headroom);
    capacity = default_capacity(options.headroom);
    if (capacity == 0) return fail(PD3_E_INVAL, "cannot read MemAvailable from /proc/meminfo: set a capacity");
  }
  std::unique_ptr<DataDir> dir;
  if (!options.data_dir.empty()) {
    if (int rc = DataDir::open(options.data_dir, options.sync == SyncMode::kBatch, &dir); rc != PD3_OK) return rc;
  }
  std::unique_ptr<tier::Tier> tier;
  if (options.dram_budget != 0) {
    if (!dir) return fail(PD3_E_INVAL, "a DRAM budget needs a data_dir (the tier keeps regions in files)");
    if (int rc = open_tier(options, &tier); rc != PD3_OK) return rc;
  }
  auto store = std::make_unique<Store>(options, capacity, std::move(dir), std::move(tier));
  if (int rc = store->open_parts(); rc != PD3_OK) return rc;
  *out = std::move(store);
  return PD3_OK;
}

}  // namespace pd3
