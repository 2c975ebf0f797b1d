// store_control.cpp — the store's CONTROL records: ALLOCATE, DEALLOCATE, STATS, and the FREEZE /
// SEAL / THAW steps of a region's move (Store, store.hpp).
#include <cinttypes>
#include <cstdio>
#include <utility>

#include "memserver/store.hpp"
#include "pd3/status.h"

namespace pd3 {

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

}  // namespace pd3
