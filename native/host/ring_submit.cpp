// ring_submit.cpp — see ring_submit.hpp.
#include "host/ring_submit.hpp"

#include <cstring>

#include "common/doorbell.hpp"
#include "common/net.hpp"
#include "common/segment_rings.hpp"
#include "host/agent_route.hpp"

namespace pd3 {

// Staging writes a request's in-flight entry at once, except its flags (busy, via_ring,
// quarantined): every reader without the issuing handle's lock (the drainer, declare_agent_down,
// pd3_host_close) looks at `busy` first, under id_mu, and reads the other fields only of busy
// entries. An id taken from the free list has all flags clear.
void write_entry(HostCore& core, uint16_t id, pd3_host* h, const RingRequest& r) {
  Inflight& e = core.table[id];
  e.handle = h;
  e.dest = r.dest;
  e.dest_cap = r.size;
  e.user_data = r.user_data;
  e.op = r.op;
  e.ctl = r.ctl;
  e.region = r.names;
}

void complete_unsent(pd3_host* h, uint16_t id, int status) {
  HostCore& core = *h->core;
  const Inflight& e = core.table[id];  // written by this handle's thread when it was staged
  const pd3_completion c{e.user_data, status, 0, id, e.op, e.region};
  {
    std::lock_guard qlock(h->queue_mu);
    h->queue.push(c);
    h->inflight.retired();
  }
  std::lock_guard ids(core.id_mu);
  // A direct READ's destination was registered at issue; nothing else will release it.
  if (core.table[id].registration != 0) h->registrations->release(core.table[id].registration);
  core.table[id].clear();
  core.free_ids.push(id);
}

namespace {


// Sets the flags of staged requests [from, to): in flight on the ring (`on`), or staged again.
void mark_range(pd3_host* h, uint32_t from, uint32_t to, bool on) {
  HostCore& core = *h->core;
  std::lock_guard ids(core.id_mu);
  for (uint32_t i = from; i < to; ++i) {
    Inflight& e = core.table[h->staged.at(i).id];
    e.mark_busy_locked(on);
    e.via_ring = on;
  }
  // relaxed: id_mu is held.
  if (on && core.ring_inflight.load(std::memory_order_relaxed) == 0) core.pacer.on_busy(now_ns());
  add_under_lock(core.ring_inflight, on ? int64_t(to - from) : -int64_t(to - from));
}

// The agent went down between staging and publishing: each staged request goes to the memory
// servers directly if that is configured, else completes with PD3_E_AGENT_DOWN.
void reroute_staged(pd3_host* h) {
  HostCore& core = *h->core;
  const bool direct = core.fallback == PD3_FALLBACK_DIRECT && core.direct != nullptr;
  for (uint32_t i = 0; i < h->staged.size(); ++i) {
    const StagedRequest& s = h->staged.at(i);
    if (!direct) {
      complete_unsent(h, s.id, PD3_E_AGENT_DOWN);
      continue;
    }
    pd3_request hdr;
    std::memcpy(&hdr, h->staged.record(i), sizeof hdr);
    {
      std::lock_guard ids(core.id_mu);
      core.table[s.id].mark_busy_locked(true);  // via_ring stays false: the direct path answers it
    }
    const int rc = core.direct->submit({s.id, hdr, h->staged.record(i) + sizeof hdr, s.record_len - uint32_t(sizeof hdr)});
    if (rc != PD3_OK) complete_unsent(h, s.id, rc);
  }
  h->staged.drop_front(h->staged.size());
}

// publish_staged with h->issue_mu held.
int publish_locked(pd3_host* h) {
  if (h->staged.empty()) return PD3_OK;
  HostCore& core = *h->core;
  settle_after_restart(core);
  std::shared_lock route(core.route_mu);
  if (!agent_alive(core)) {
    route.unlock();
    reroute_staged(h);
    return PD3_OK;
  }
  const uint32_t all = h->staged.size();
  // Busy in the table before they are in the ring: the drainer may see an answer at once.
  mark_range(h, 0, all, true);
  pd3_control* c = core.control();
  const SlotRing ring = request_ring(c);
  uint32_t n = all;
  while (n > 0 && !h->staged.publish_prefix(ring, n, &core.req_head_cache)) n /= 2;
  if (n < all) mark_range(h, n, all, false);
  if (n == 0) return PD3_E_AGAIN;
  count(c->host_requests, n);
  ring_agent(c);
  h->staged.drop_front(n);
  return n == all ? PD3_OK : PD3_E_AGAIN;
}

}  // namespace

int stage_ring_request(pd3_host* h, const RingRequest& r) {
  HostCore& core = *h->core;
  const uint64_t len = SlotRing::slot_len(sizeof(pd3_request) + uint64_t(r.payload_len));
  if (len > core.control()->req_size / 2) return PD3_E_TOO_BIG;
  std::lock_guard lock(h->issue_mu);
  // The first request of a batch checks that the agent is there; the rest ride on that check
  // (publish_locked checks again, under the route lock, before anything reaches the ring).
  if (h->staged.empty() && !agent_alive(core)) return PD3_E_AGENT_DOWN;
  const int id = h->ids.take(core);
  if (id < 0) return PD3_E_INFLIGHT;
  const pd3_request hdr = pd3_make_request(pd3_op_id(r.op, uint32_t(id)), r.region_field, r.offset, r.size);
  write_entry(core, uint16_t(id), h, r);
  h->staged.add(uint16_t(id), hdr, r.payload, r.payload_len);
  // A request that fills the batch is taken only if the whole batch goes out (a part the ring had
  // room for stays published): a handle never holds a full batch it could not publish, and with
  // publish_batch 1 a request is published at once or refused, nothing staged.
  if (h->staged.full(core.publish_batch) && publish_locked(h) != PD3_OK) {
    h->staged.drop_back();
    h->ids.put_back(uint16_t(id));
    count(core.control()->host_ring_full);
    return PD3_E_AGAIN;
  }
  h->inflight.issued();
  return id;
}

int publish_staged(pd3_host* h) {
  std::lock_guard lock(h->issue_mu);
  return publish_locked(h);
}

void drop_staged(pd3_host* h) {
  std::lock_guard lock(h->issue_mu);
  HostCore& core = *h->core;
  std::lock_guard ids(core.id_mu);
  for (uint32_t i = 0; i < h->staged.size(); ++i) {
    const uint16_t id = h->staged.at(i).id;
    core.table[id].clear();
    core.free_ids.push(id);
  }
  {
    std::lock_guard queue(h->queue_mu);
    h->inflight.retired(h->staged.size());
  }
  h->staged.drop_front(h->staged.size());
  h->ids.release_all_locked(core);
}

}  // namespace pd3
