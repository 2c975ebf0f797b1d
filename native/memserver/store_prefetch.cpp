// store_prefetch.cpp — the store's PREFETCH by key: the key index's address, the record re-parsed
// there and checked to be this key's, its value answered (Store, store.hpp).
#include <algorithm>
#include <cstring>
#include <utility>

#include "memserver/store.hpp"
#include "pd3/status.h"

namespace pd3 {

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

}  // namespace pd3
