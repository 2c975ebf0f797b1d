// engine_route.cpp — host requests to memory-server links (Engine, engine.hpp): the loop's
// take_requests drains the request ring and route sends each request to the link of the server
// its region names (paper §6.1), with ALLOCATE placed by policy; the written keys leave Host View
// and the Loading Zone on the way (Table 2). Runs per request: keep its helpers in this file.
#include <algorithm>

#include "dpu/engine.hpp"

namespace pd3 {

bool Engine::take_requests(uint64_t now) {
  // Back-pressure: while a server's unsent requests pile up (it is slow, or the response buffer
  // is full), requests stay in the ring, where the host sees PD3_E_AGAIN once it fills.
  for (const auto& e : links_)
    if (e.link->backlogged()) return false;
  // The session's counters are plain fields this thread alone writes (host_layout.hpp).
  const uint64_t fenced_before = session_->counters().fenced;
  const int n = session_->requests().drain(options_.max_batch_records, fence_, [&](const RequestView& v) { route(v, now); });
  bump(counters_.fenced, session_->counters().fenced - fenced_before);  // discarded unexecuted
  if (n == PD3_E_CORRUPT && !ring_broken_logged_) {
    log_.log(LogLevel::kError, "ring.corrupt", "the request ring's framing is broken; the host must recreate the segment");
    ring_broken_logged_ = true;
  }
  // Table 2: the written keys leave Host View before the writes are sent (dispatch()).
  run_host_view(HostViewOp::kErase, &erase_hashes_);
  if (n <= 0) return false;
  bump(counters_.batches);
  bump(counters_.records, uint64_t(n));
  return true;
}

// ---- routing -------------------------------------------------------------------------------

void Engine::route(const RequestView& v, uint64_t now) {
  const uint16_t op_id = v.hdr.op_id;
  if (!v.has_header) return;  // counted in agent_corrupt; no id to answer
  if (v.status != PD3_OK) return reply(v.pos, op_id, v.status);
  if (v.hdr.reserved != 0) {
    // Refused rather than ignored, so that a later meaning of the field is never silently dropped.
    // A returned hint (PREFETCH) expects no reply: it is refused like any hint that does not match.
    if (pd3_op_of(op_id) == PD3_OP_PREFETCH) return bump(counters_.prefetch_hints_refused);
    return reply(v.pos, op_id, PD3_E_PROTOCOL);
  }
  const uint8_t* record = v.payload - sizeof(pd3_request);
  const LinkRecord meta{v.hdr, v.pos, 0, 0};
  int status = PD3_OK;
  switch (pd3_op_of(op_id)) {
    case PD3_OP_WRITE:
    case PD3_OP_READ: {
      const int li = link_for_region(v.hdr.region, &status);
      if (li < 0) return fail_request(v.pos, op_id, status);
      forward(li, record, v.record_len, meta, now);
      if (pd3_op_of(op_id) == PD3_OP_READ) return;
      // Table 2, after the DMA read ①: the written keys leave Host View and their Loading Zone
      // items are withdrawn, before the write is sent (dispatch() comes later in this pass). The
      // prefetcher, when there is one, owns Host View and learns where the keys now live (it
      // names a server by its link index: see servers_up()).
      for_each_key(v.payload, v.hdr.size, [&](const uint8_t* key, uint32_t len) {
        bump(counters_.lz_invalidations, session_->zone().invalidate(key, len));
        if (prefetch_) {
          prefetch_->prefetcher().on_host_flush(key, len, li);
        } else if (host_view_) {
          erase_hashes_.push_back(host_view_key_hash(key, len));
        }
      });
      return;
    }
    case PD3_OP_CONTROL:
      switch (v.hdr.region) {
        case PD3_CTL_ALLOCATE: {
          const int li = pick_allocate_link(v.hdr.size, 0, false);
          if (li < 0) return fail_request(v.pos, op_id, PD3_E_UNAVAILABLE);
          return send_allocate(li, meta, now);
        }
        case PD3_CTL_DEALLOCATE: {
          const int li = link_for_region(v.hdr.offset, &status);
          if (li < 0) return fail_request(v.pos, op_id, status);
          return forward(li, record, v.record_len, meta, now);
        }
        case PD3_CTL_STATS: {
          HostReply r;
          r.pos = v.pos;
          r.op_id = op_id;
          r.text = stats_text();
          r.size = uint32_t(r.text.size());
          replies_.push(std::move(r));
          return;
        }
        default:
          return reply(v.pos, op_id, PD3_E_BAD_OP);
      }
    default:  // PD3_OP_PREFETCH: the host sends back a hint (issuer "host"); it expects no reply
      return hints_.take_hinted_prefetch(v, now);
  }
}

int Engine::link_for_region(uint32_t region, int* status) const {
  const int li = links_.of_server(pd3_region_server(region));
  if (li >= 0) return li;
  // No connected server has that id: if every server is connected the region cannot exist,
  // otherwise it may belong to one that is down.
  *status = links_.all_up() ? PD3_E_BAD_REGION : PD3_E_UNAVAILABLE;
  return -1;
}

int Engine::pick_allocate_link(uint32_t size, uint64_t tried, bool retry) {
  candidates_.resize(links_.size());
  for (size_t li = 0; li < links_.size(); ++li) candidates_[li] = {links_[li].up(), links_[li].free_bytes()};
  // A retry only goes where it may fit; a first try goes anywhere up (the estimate may be stale).
  const int li = placement_.pick(candidates_, tried, retry ? size : 0, now_ns());
  set(counters_.placement_refraction_skips, placement_.refraction_skips());  // placement_ counts them
  return li;
}

void Engine::send_allocate(int li, const LinkRecord& meta, uint64_t now) {
  uint64_t& free = links_[li].free_bytes();
  free -= std::min<uint64_t>(free, meta.hdr.size);  // taken now so concurrent allocations spread
  refresh_server(li);
  forward(li, reinterpret_cast<const uint8_t*>(&meta.hdr), sizeof meta.hdr, meta, now);
}

void Engine::forward(int li, const uint8_t* record, uint32_t record_len, LinkRecord meta, uint64_t now) {
  TransportRequest t;
  t.op_id = meta.hdr.op_id;
  t.region = meta.hdr.region;
  t.offset = meta.hdr.offset;
  t.size = meta.hdr.size;
  t.data_len = pd3_request_payload_len(&meta.hdr);
  meta.space = response_space(t);
  if (!links_[li].fits(record_len, meta.space)) return reply(meta.pos, meta.hdr.op_id, PD3_E_TOO_BIG);
  links_[li].add(record, record_len, meta, now);
}

}  // namespace pd3
