// completions.cpp — see completions.hpp.
#include "host/completions.hpp"

#include <cstring>

#include "common/atomics.hpp"
#include "common/net.hpp"
#include "host/agent_route.hpp"
#include "host/response_reader.hpp"

namespace pd3 {

namespace {

// The per-thread buffer of CompletionSink, and whether a sink of this thread holds it.
thread_local std::vector<pd3_completion> t_sink_buffer;
thread_local bool t_sink_buffer_taken = false;

}  // namespace

CompletionSink::CompletionSink(const std::lock_guard<std::mutex>&) : batch_(&own_) {
  if (!t_sink_buffer_taken) {
    t_sink_buffer_taken = true;
    borrowed_ = true;
    batch_ = &t_sink_buffer;
  }
}

CompletionSink::~CompletionSink() {
  flush();
  if (borrowed_) t_sink_buffer_taken = false;
}

void CompletionSink::flush() {
  if (handle_ == nullptr || batch_->empty()) return;
  std::lock_guard qlock(handle_->queue_mu);
  handle_->queue.push(batch_->data(), batch_->size());
  handle_->inflight.retired(uint32_t(batch_->size()));
  batch_->clear();
}

void finish(HostCore& core, uint32_t id, const pd3_completion& c, bool quarantine, CompletionSink& sink) {
  sink.push(core.table[id].handle, c);
  retire(core, id, quarantine);
}

void retire(HostCore& core, uint32_t id, bool quarantine) {
  Inflight& e = core.table[id];
  // The destination is written (complete() copied it): its registration ends here. (A closed
  // handle's entries have none: its cache went with it.)
  if (e.registration != 0 && e.handle != nullptr) e.handle->registrations->release(e.registration);
  e.registration = 0;
  if (e.via_ring) add_under_lock(core.ring_inflight, -1);
  if (quarantine) {
    e.handle = nullptr;
    e.dest = nullptr;
    e.via_ring = false;
    e.quarantined = true;
    return;
  }
  e.clear();
  core.free_ids.push(uint16_t(id));
}

namespace {

// Routes one response to its handle's queue; drops it if the handle was closed. Caller holds id_mu.
void complete(HostCore& core, const pd3_response& r, const uint8_t* data, bool well_formed, CompletionSink& sink) {
  const uint32_t id = pd3_id_of(r.op_id);
  Inflight& e = core.table[id];
  if (!e.busy_now() || e.quarantined || e.op != pd3_op_of(r.op_id)) {
    core.stray_responses.fetch_add(1, std::memory_order_relaxed);  // relaxed: statistic
    return;
  }
  pd3_completion& c = sink.next(e.handle);  // field by field, in place (CompletionSink::next)
  c.user_data = e.user_data;
  c.status = well_formed ? -int32_t(r.status) : PD3_E_CORRUPT;
  c.size = r.size;
  c.id = uint16_t(id);
  c.op = e.op;
  c.region = e.region;
  if (well_formed && r.status == 0) {
    if (e.op == PD3_OP_READ) {
      if (r.size > e.dest_cap) {
        c.status = PD3_E_CORRUPT;  // the answer holds more than was asked for
      } else if (e.handle != nullptr) {
        std::memcpy(e.dest, data, r.size);
      }
    } else if (e.ctl == PD3_CTL_ALLOCATE && r.size >= sizeof(pd3_alloc_reply)) {
      pd3_alloc_reply reply;
      std::memcpy(&reply, data, sizeof reply);
      c.region = reply.region;
      c.size = reply.capacity;
    }
  }
  retire(core, id, /*quarantine=*/false);
}

// Is there anything for drain_ring to do? A hint read without locks (a poll that finds nothing
// costs two loads, not three locks): a published slot at head, a kept hint, a quarantine.
bool worth_draining(HostCore& core) {
  pd3_control* c = core.control();
  return response_ring(c).published_at(response_ring(c).head()) != nullptr || core.hints.has_pending() ||
         core.quarantine_fence.load(std::memory_order_relaxed) != 0;  // relaxed: a hint
}

// Drains the response ring, if no other thread is draining it.
void drain_ring(HostCore& core) {
  if (!worth_draining(core)) return;
  std::unique_lock lock(core.poll_mu, std::try_to_lock);
  if (!lock.owns_lock()) return;
  // acquire: pairs with the agent's release in ack_fence; responses published before the ack are
  // then visible to the drain below.
  const uint64_t ack = aref(core.control()->agent_fence_ack).load(std::memory_order_acquire);
  // Hints kept from the last poll go first (a stale one, from an agent that has since been
  // replaced, is refused by the new agent: it never handed out that prefetch id).
  core.hints.retry(core.control());
  int rc;
  uint32_t completed = 0;
  {
    // One id_mu hold for the whole batch; issuers wait at most one drain (bounded by the ring).
    std::lock_guard ids(core.id_mu);
    CompletionSink sink(ids);
    rc = drain_responses(core.control(), PD3_MAX_INFLIGHT, [&](const pd3_response& r, const uint8_t* data, bool ok) {
      if (pd3_op_of(r.op_id) == PD3_OP_PREFETCH) {
        core.hints.on_hint(core.control(), r, data, ok);
      } else {
        complete(core, r, data, ok, sink);
        ++completed;
      }
    });
  }
  if (completed > 0) core.pacer.on_drain(now_ns(), completed);
  // relaxed: the flag guards nothing but further drains; a late observer drains once more.
  if (rc == PD3_E_CORRUPT) core.ring_broken.store(true, std::memory_order_relaxed);
  release_quarantine(core, ack);
}

}  // namespace

void collect(HostCore& core) {
  if (!core.owner) return;
  if (!core.ring_broken.load(std::memory_order_relaxed)) drain_ring(core);  // relaxed: a sticky flag
  if (core.direct) {
    // Lock order: the direct path's mutex, then id_mu (issue_direct never holds both).
    // id_mu is taken once per response frame, not across the pump's socket calls, so issuers
    // never wait on I/O.
    core.direct->pump([&](std::span<const TransportResponse> responses) {
      std::lock_guard ids(core.id_mu);
      CompletionSink sink(ids);  // flushed before id_mu is released (CompletionSink says why)
      for (const TransportResponse& t : responses) complete(core, pd3_response{t.op_id, t.status, t.size}, t.data, true, sink);
    });
  }
  // relaxed: a hint; declare_agent_down re-checks under its locks.
  const bool ring_waiting = core.ring_inflight.load(std::memory_order_relaxed) > 0;
  // relaxed: a hint; declare_agent_down re-checks under the exclusive route lock.
  if (agent_attaches(core) != core.seen_attaches.load(std::memory_order_relaxed)) {
    declare_agent_down(core, /*restart=*/true);
  } else if (ring_waiting && !agent_alive(core)) {
    declare_agent_down(core, /*restart=*/false);
  }
}

}  // namespace pd3
