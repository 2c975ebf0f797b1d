// mem_store.cpp — MemStore::open and the store's core (Store, store.hpp): opening its parts, the
// dispatch of READ / WRITE / PREFETCH / CONTROL records against the region table and the
// key→address index (docs/architecture.md §9), and its counters.
#include "memserver/store.hpp"

#include <utility>

#include "common/error.hpp"
#include "memserver/capacity.hpp"
#include "pd3/status.h"

namespace pd3 {

static_assert(PD3_MAX_SERVERS == 1u << 16, "MemStoreOptions::server_id: every uint16_t is a valid server id");

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

void Store::fail_request(const TransportRequest& req, int status, FrameBuilder* out) {
  ++stats_.errors;
  MemStore::fail_request(req, status, out);
}

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
