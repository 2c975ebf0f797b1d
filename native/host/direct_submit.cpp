// direct_submit.cpp — see direct_submit.hpp.
#include "host/direct_submit.hpp"

#include <cstring>
#include <mutex>

#include "pd3/status.h"

namespace pd3 {

namespace {

// Registers the caller's buffer of a direct READ (its destination) or WRITE (its source) in the
// handle's MRRC. Returns the registration handle, or 0 (none needed, or refused: counted, and the
// request goes on over TCP, which needs none).
uint64_t register_buffer(pd3_host* h, const RingRequest& r) {
  const void* buffer = r.op == PD3_OP_READ ? r.dest : r.op == PD3_OP_WRITE ? r.payload : nullptr;
  const size_t len = r.op == PD3_OP_READ ? r.size : r.payload_len;
  if (buffer == nullptr || len == 0 || !h->core->register_buffers) return 0;
  if (h->registrations == nullptr) {
    count_unregistered(h->core->control());
    return 0;
  }
  return h->registrations->acquire(buffer, len);
}

// Queues the staged requests; each one refused completes with the reason, except request `own`
// (the one being issued, or -1), whose reason is returned instead. Caller holds h->issue_mu.
int publish_direct_locked(pd3_host* h, int own) {
  DirectBatch& b = h->direct_staged;
  const uint32_t n = b.staged.size();
  if (n == 0) return PD3_OK;
  b.requests.resize(n);
  b.statuses.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    const StagedRequest& s = b.staged.at(i);
    DirectPath::Request& q = b.requests[i];
    q.id = s.id;
    std::memcpy(&q.hdr, b.staged.record(i), sizeof q.hdr);
    q.payload = b.staged.record(i) + sizeof q.hdr;
    q.payload_len = s.record_len - uint32_t(sizeof q.hdr);
  }
  h->core->direct->submit_all(b.requests, b.statuses);
  int own_status = PD3_OK;
  for (uint32_t i = 0; i < n; ++i) {
    if (b.statuses[i] == PD3_OK) continue;
    if (int(b.requests[i].id) == own) own_status = b.statuses[i];
    else complete_unsent(h, b.requests[i].id, b.statuses[i]);
  }
  b.staged.drop_front(n);
  return own_status;
}

}  // namespace

int issue_direct(pd3_host* h, const RingRequest& r) {
  HostCore& core = *h->core;
  const uint64_t registration = register_buffer(h, r);
  const bool held_to_completion = r.op == PD3_OP_READ;  // released by retire() in completions.cpp
  std::lock_guard issuing(h->issue_mu);
  const int id = h->ids.take(core);
  if (id < 0) {
    if (registration != 0) h->registrations->release(registration);
    return PD3_E_INFLIGHT;
  }
  Inflight& e = core.table[id];
  write_entry(core, uint16_t(id), h, r);
  e.registration = held_to_completion ? registration : 0;
  // Busy before it is queued: whichever thread pumps the direct path may complete it at once.
  e.mark_busy_unlocked();
  h->inflight.issued();
  const pd3_request hdr = pd3_make_request(pd3_op_id(r.op, uint32_t(id)), r.region_field, r.offset, r.size);
  int rc;
  if (core.publish_batch <= 1) {
    rc = core.direct->submit({uint16_t(id), hdr, r.payload, r.payload_len});
  } else {
    h->direct_staged.staged.add(uint16_t(id), hdr, r.payload, r.payload_len);  // copies the payload
    rc = h->direct_staged.staged.full(core.publish_batch) ? publish_direct_locked(h, id) : PD3_OK;
  }
  if (registration != 0 && !held_to_completion) h->registrations->release(registration);
  if (rc == PD3_OK) return id;
  {
    std::lock_guard lock(core.id_mu);
    // Never sent, so no completion released the registration.
    if (e.registration != 0) h->registrations->release(e.registration);
    e.clear();
  }
  h->ids.put_back(uint16_t(id));  // still the id take() gave last: issue_mu is held
  std::lock_guard queue(h->queue_mu);
  h->inflight.retired();
  return rc;
}

void publish_direct(pd3_host* h) {
  if (h->core->direct == nullptr || h->core->publish_batch <= 1) return;  // never stages
  std::lock_guard issuing(h->issue_mu);
  (void)publish_direct_locked(h, -1);  // -1: every refusal completes
}

}  // namespace pd3
