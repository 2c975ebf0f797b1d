// engine_deliver.cpp — memory-server responses to the host (Engine, engine.hpp): the loop's
// service_sockets reads the links, checks each response frame and delivers its records as
// replies (reply, in engine.hpp), the prefetcher's answers to it, and the read keys to Host View
// (Table 2). Runs per response: keep its helpers in this file.
#include <sys/epoll.h>

#include <algorithm>
#include <cstring>

#include "common/error.hpp"
#include "dpu/engine.hpp"
#include "dpu/lz_producer.hpp"

namespace pd3 {

namespace {

constexpr int kMaxEvents = 64;

}  // namespace

bool Engine::service_sockets(uint64_t now) {
  // The prefetch answers of this pass go into the Loading Zone as one batch (two fences in all,
  // not two per item), published before the pass ends.
  const LzBatch zone_batch(prefetch_ ? &session_->zone() : nullptr);
  epoll_event events[kMaxEvents];
  const int n = epoll_wait(epoll_.get(), events, kMaxEvents, 0);
  for (int e = 0; e < n; ++e) {
    const int li = int(events[e].data.u32);
    ServerLink& link = links_[li];
    const bool was_up = link.up();
    received_.clear();
    const int rc = link.on_events(events[e].events, &received_);
    const std::string why = rc != PD3_OK ? pd3_last_error() : std::string();
    bool failed = false;
    for (ReceivedFrame& f : received_) {
      if (!failed && check_frame(link, f) != PD3_OK) {
        const std::string violation = pd3_last_error();
        fail_records(f.records, PD3_E_UNAVAILABLE);
        buffer_->release(f.space.ticket);
        fail_link(li, PD3_E_PROTOCOL, violation, now);
        failed = true;
      } else if (failed) {  // arrived after a violation on a link now closed: not trusted either
        fail_records(f.records, PD3_E_UNAVAILABLE);
        buffer_->release(f.space.ticket);
      } else {
        deliver(li, f, now);
      }
    }
    if (failed) continue;
    if (rc != PD3_OK) {
      fail_link(li, rc, why, now);
    } else if (!was_up && link.up()) {
      on_link_up(li);
    }
  }
  // Table 2: the read keys enter Host View before their responses reach the host (publish()).
  run_host_view(HostViewOp::kInsert, &insert_hashes_);
  return n > 0;
}

// ---- responses -----------------------------------------------------------------------------

int Engine::check_frame(const ServerLink& link, const ReceivedFrame& f) const {
  uint64_t at = 0;
  for (size_t i = 0; i < f.records.size(); ++i) {
    TransportResponse r;
    decode_response(f.body + at, f.body_len - at, &r);  // cannot fail: the link validated the frame
    at += r.record_len;
    const LinkRecord& q = f.records[i];
    // Named only when something is wrong: building the string per record costs more than the check.
    const auto name = [&] { return link.endpoint().str(); };
    if (r.op_id != q.hdr.op_id)
      return fail(PD3_E_PROTOCOL, "%s: response %zu is for op/id %#x, the request was %#x", name().c_str(), i,
                  unsigned(r.op_id), unsigned(q.hdr.op_id));
    if (r.record_len > q.space)
      return fail(PD3_E_PROTOCOL, "%s: response %zu takes %u bytes, %llu were reserved", name().c_str(), i, r.record_len,
                  (unsigned long long)q.space);
    if (r.status == 0 && pd3_op_of(q.hdr.op_id) == PD3_OP_CONTROL && q.hdr.region == PD3_CTL_ALLOCATE) {
      pd3_alloc_reply a{};
      if (r.data_len != sizeof a) return fail(PD3_E_PROTOCOL, "%s: allocate reply of %u bytes", name().c_str(), r.data_len);
      std::memcpy(&a, r.data, sizeof a);
      if (int(pd3_region_server(a.region)) != link.server_id())
        return fail(PD3_E_PROTOCOL, "%s (server %d) allocated region %#x of another server", name().c_str(), link.server_id(),
                    unsigned(a.region));
    }
  }
  return PD3_OK;
}

void Engine::deliver(int li, ReceivedFrame& f, uint64_t now) {
  uint64_t at = 0;
  bool replied = false;
  for (const LinkRecord& q : f.records) {
    TransportResponse r;
    decode_response(f.body + at, f.body_len - at, &r);  // checked by check_frame
    at += r.record_len;
    const int status = -int(r.status);
    const uint32_t op = pd3_op_of(q.hdr.op_id);
    if (op == PD3_OP_CONTROL && q.hdr.region == PD3_CTL_ALLOCATE) {
      if (after_allocate(li, q, status, r, now)) continue;  // retried on another server
    } else if (op == PD3_OP_CONTROL && q.hdr.region == PD3_CTL_DEALLOCATE && status == PD3_OK) {
      if (auto it = region_bytes_.find(q.hdr.offset); it != region_bytes_.end()) {
        uint64_t& free = links_[li].free_bytes();
        free = std::min(free + it->second, links_[li].capacity());
        region_bytes_.erase(it);
        refresh_server(li);
      }
    } else if (op == PD3_OP_PREFETCH) {
      // The prefetcher's own request: its answer goes to the Loading Zone, not to the host.
      if (prefetch_)
        prefetch_->prefetcher().on_response(q.hdr.op_id, li, status, r.key, r.key_len, r.data, r.data_len, now);
      continue;
    } else if (op == PD3_OP_READ && status == PD3_OK && (prefetch_ || host_view_)) {
      for_each_key(r.data, r.data_len, [&](const uint8_t* key, uint32_t len) {
        if (prefetch_) {
          prefetch_->prefetcher().on_host_read(key, len);
        } else {
          insert_hashes_.push_back(host_view_key_hash(key, len));
        }
      });
    }
    reply(q.pos, q.hdr.op_id, status, r.size, r.data_len ? r.data : nullptr);
    replied = true;
  }
  // The frame's space is freed with its last reply (replies leave the backlog in order).
  if (replied) {
    replies_.back().release = f.space.ticket;
  } else {
    buffer_->release(f.space.ticket);
  }
}

bool Engine::after_allocate(int li, const LinkRecord& req, int status, const TransportResponse& r, uint64_t now) {
  ServerLink& link = links_[li];
  uint64_t& free = link.free_bytes();
  free = std::min(free + req.hdr.size, link.capacity());  // undo the estimate send_allocate took
  if (status == PD3_OK) {
    pd3_alloc_reply a;
    std::memcpy(&a, r.data, sizeof a);
    free -= std::min<uint64_t>(free, a.capacity);
    region_bytes_[a.region] = a.capacity;
    refresh_server(li);
    return false;
  }
  if (status != PD3_E_NOSPACE) {
    refresh_server(li);
    return false;
  }
  // This server cannot hold that much: remember it, rest it for the refraction period, and try
  // the next one that may have room.
  bump(counters_.allocations_refused);
  placement_.refused(size_t(li), now);
  free = std::min<uint64_t>(free, req.hdr.size > 0 ? req.hdr.size - 1 : 0);
  refresh_server(li);
  LinkRecord retry = req;
  retry.tried |= uint64_t{1} << li;
  const int next = pick_allocate_link(req.hdr.size, retry.tried, true);
  if (next < 0) return false;
  send_allocate(next, retry, now);
  return true;
}

size_t Engine::fail_records(const std::vector<LinkRecord>& records, int status) {
  size_t failed = 0;
  for (const LinkRecord& r : records) {
    if (pd3_op_of(r.hdr.op_id) == PD3_OP_PREFETCH) continue;  // the prefetcher's own: no host waits for it
    fail_request(r.pos, r.hdr.op_id, status);
    ++failed;
  }
  return failed;
}

}  // namespace pd3
