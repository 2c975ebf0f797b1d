// store_data.cpp — the store's READ and WRITE records, and the indexing of the records a write
// holds (Store, store.hpp).
#include <algorithm>
#include <cstring>

#include "memserver/key_hash.hpp"
#include "memserver/store.hpp"
#include "pd3/status.h"

namespace pd3 {

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

uint32_t Store::warm(const TransportRequest& req) {
  constexpr uintptr_t kLine = 64;
  constexpr uintptr_t kMaxLines = 4;  // small records are the point; a large copy streams anyway
  const bool write = req.op() == PD3_OP_WRITE;
  // The tier's bytes may not be in DRAM, and where they are, prepare() has just touched them.
  if (tier_ || (!write && req.op() != PD3_OP_READ) || req.size == 0) return 0;
  const Region* region = regions_.find(req.region);
  if (region == nullptr || uint64_t(req.offset) + req.size > region->capacity) return 0;
  const uintptr_t first = uintptr_t(region->bytes() + req.offset) & ~(kLine - 1);
  const uintptr_t last = uintptr_t(region->bytes() + req.offset + req.size - 1) & ~(kLine - 1);
  const uintptr_t end = std::min(last, first + (kMaxLines - 1) * kLine);
  uint32_t lines = 0;
  for (uintptr_t line = first; line <= end; line += kLine, ++lines) {
    // The second argument must be a constant: 1 fetches the line for writing (exclusive).
    if (write)
      __builtin_prefetch(reinterpret_cast<const void*>(line), 1);
    else
      __builtin_prefetch(reinterpret_cast<const void*>(line), 0);
  }
  stats_.warm_hints += lines;
  return lines;
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

}  // namespace pd3
