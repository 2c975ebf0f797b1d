// store_tier.cpp — the store's side of the SSD tier: the pages a record needs (prepare), bytes read
// in place or copied out of the frames, and the syncs that make a frame's writes durable (Store,
// store.hpp).
#include <algorithm>
#include <memory>
#include <utility>

#include "memserver/store.hpp"
#include "pd3/status.h"

namespace pd3 {

int Store::prepare(const TransportRequest& req, const Tenant& tenant, tier::Pins* pins) {
  first_page_record_.valid = false;  // set again below for a PREFETCH whose record is in its first page
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

const uint8_t* Store::bytes_of(const Region& region, uint64_t offset, uint64_t len) {
  if (!tier_) return region.bytes() + offset;
  if (len > 0 && offset + len <= tier_->page_end(offset)) return tier_->page_bytes(region.id, offset, len);
  scratch_.resize(len);
  tier_->copy_out(region.id, offset, len, scratch_.data());
  return scratch_.data();
}

int Store::sync() {
  // Both are no-ops unless the data directory is durable (SyncMode::kBatch).
  if (int rc = regions_.sync(&stats_.syncs); rc != PD3_OK) return rc;
  if (!tier_) return index_->sync(&stats_.syncs);
  hand_index_to_tier();
  return tier_->sync();
}

bool Store::hand_index_to_tier() {
  std::shared_ptr<const UniqueFd> file;
  if (!index_->hand_off_changes(&file)) return false;
  tier_->sync_also(std::move(file));
  return true;
}

int Store::begin_sync(const tier::Touched& touched, uint64_t* ticket) {
  *ticket = 0;
  if (int rc = regions_.sync(&stats_.syncs); rc != PD3_OK) return rc;
  if (!tier_) return index_->sync(&stats_.syncs);
  // The index's changes join the tier's group commit: the loop thread never waits for an msync.
  // A frame that changed the index (a write, a deallocation) waits for the batch that syncs it.
  tier::Touched t = touched;
  if (hand_index_to_tier()) t.listed = true;
  return tier_->begin_sync(t, ticket);
}

void Store::forget_region(uint32_t region) {
  if (tier_) tier_->drop_region(region);
}

}  // namespace pd3
