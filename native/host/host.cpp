// host.cpp — libpd3host: the C ABI of host.h over a mapped segment.
//
// One HostCore per segment per process holds the mapping and the in-flight table (request id →
// issuing handle, read destination, user data). Handles share it; each handle has its own
// completion queue, filled by whichever handle happens to drain the response ring.
#include "pd3/host.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <string>
#include <vector>

#include "common/tenant_credential.hpp"
#include "common/atomics.hpp"
#include "common/error.hpp"
#include "common/lz_view.hpp"
#include "common/segment.hpp"
#include "host/direct_path.hpp"
#include "host/hint_forwarder.hpp"
#include "host/lz_consumer.hpp"
#include "host/request_writer.hpp"
#include "host/response_reader.hpp"

// pd3_completion (pd3/host.h) is read field by field by C callers and the addon: its layout is ABI.
static_assert(sizeof(pd3_completion) == 24 && offsetof(pd3_completion, user_data) == 0 &&
                  offsetof(pd3_completion, status) == 8 && offsetof(pd3_completion, size) == 12 &&
                  offsetof(pd3_completion, id) == 16 && offsetof(pd3_completion, op) == 18 &&
                  offsetof(pd3_completion, region) == 20,
              "pd3_completion layout");

namespace {

using pd3::Segment;

// One request between issue and completion.
struct Inflight {
  pd3_host* handle = nullptr;  // nullptr: free, or its handle was closed (completion discarded)
  void* dest = nullptr;        // READ destination
  uint32_t dest_cap = 0;
  uint64_t user_data = 0;
  uint16_t op = 0;
  uint16_t ctl = 0;     // CONTROL sub-op (PD3_CTL_*), 0 otherwise
  uint32_t region = 0;  // the region the request names (DEALLOCATE: the one released)
  bool busy = false;
  bool via_ring = false;     // went through the agent (else direct to a memory server)
  bool quarantined = false;  // failed when the agent was declared down; id held until the fence ack
};

// Per-process state of one segment, shared by all its handles.
struct HostCore {
  std::unique_ptr<Segment> segment;
  pd3::LzView zone;
  bool owner;                    // this process created the segment and may issue requests
  uint32_t agent_timeout_ms;
  std::mutex id_mu;              // guards free_ids, table and handle queues' producers
  std::vector<uint16_t> free_ids;
  std::array<Inflight, PD3_MAX_INFLIGHT> table{};
  std::mutex poll_mu;            // one drainer of the response ring at a time
  pd3::HintForwarder hints;      // guarded by poll_mu: the agent's prefetch hints (issuer "host")
  std::atomic<bool> ring_broken{false};
  std::atomic<uint64_t> stray_responses{0};

  // Routing (docs/host-library.md, "When the agent dies"). Issuers of ring requests hold route_mu
  // shared from their liveness check to their publish; declaring the agent down holds it
  // exclusively, so no ring request slips in beyond the fence it sets.
  std::shared_mutex route_mu;
  uint32_t fallback = PD3_FALLBACK_FAIL;
  bool direct_only = false;
  std::unique_ptr<pd3::DirectPath> direct;  // null when no direct servers are configured
  uint32_t ring_inflight = 0;               // guarded by id_mu
  uint64_t quarantine_fence = 0;            // guarded by id_mu; 0 = nothing quarantined
  std::atomic<uint32_t> seen_attaches{0};   // agent_attaches when the ring requests were last settled

  HostCore(std::unique_ptr<Segment> seg, bool is_owner, uint32_t timeout_ms)
      : segment(std::move(seg)), zone(segment->control()), owner(is_owner), agent_timeout_ms(timeout_ms) {
    free_ids.reserve(PD3_MAX_INFLIGHT);
    for (uint32_t id = PD3_MAX_INFLIGHT; id-- > 0;) free_ids.push_back(uint16_t(id));
  }
  pd3_control* control() const { return segment->control(); }
};

std::mutex g_registry_mu;
std::map<std::string, std::weak_ptr<HostCore>> g_registry;  // segment path → core in this process

}  // namespace

// A handle: a core plus this handle's completions.
struct pd3_host {
  std::shared_ptr<HostCore> core;
  bool creator = false;
  std::mutex queue_mu;
  std::deque<pd3_completion> queue;
  std::atomic<uint32_t> inflight{0};
};

namespace {

uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// Makes the core findable by pd3_host_attach from other threads of this process.
void register_core(const std::shared_ptr<HostCore>& core) {
  std::lock_guard lock(g_registry_mu);
  g_registry[core->segment->path()] = core;
}

// Takes a free id and records the request; returns the id or PD3_E_INFLIGHT.
int begin_request(pd3_host* h, uint16_t op, uint16_t ctl, uint32_t region, void* dest, uint32_t dest_cap,
                  uint64_t user_data, bool via_ring) {
  HostCore& core = *h->core;
  std::lock_guard lock(core.id_mu);
  if (core.free_ids.empty()) return PD3_E_INFLIGHT;
  const uint16_t id = core.free_ids.back();
  core.free_ids.pop_back();
  core.table[id] = Inflight{h, dest, dest_cap, user_data, op, ctl, region, true, via_ring, false};
  if (via_ring) ++core.ring_inflight;
  h->inflight.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic for this handle
  return id;
}

void abort_request(pd3_host* h, int id) {
  HostCore& core = *h->core;
  std::lock_guard lock(core.id_mu);
  if (core.table[id].via_ring) --core.ring_inflight;
  core.table[id] = Inflight{};
  core.free_ids.push_back(uint16_t(id));
  h->inflight.fetch_sub(1, std::memory_order_relaxed);  // relaxed: a statistic for this handle
}

int check_issuer(const pd3_host* h) {
  if (h == nullptr) return PD3_E_INVAL;
  if (!h->core->owner) return PD3_E_NOT_OWNER;
  return PD3_OK;
}

// CLOCK_MONOTONIC_COARSE: a few ns instead of ~20, at a resolution of a few ms, which is plenty
// against a timeout of (by default) a second. Checked on every request issued.
uint64_t coarse_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

bool agent_alive(const HostCore& core) {
  // acquire: pairs with the agent's release store of its beat (nothing depends on it but freshness).
  const uint64_t beat = pd3::aref(core.control()->agent_heartbeat_ns).load(std::memory_order_acquire);
  if (beat == 0) return false;
  const uint64_t now = coarse_ns();
  // The coarse clock lags the agent's precise one by up to a tick: a beat "from the future" is fresh.
  return now < beat || now - beat < uint64_t(core.agent_timeout_ms) * 1000000ull;
}

// Sends one request to a memory server directly (agent down with PD3_FALLBACK_DIRECT, or
// PD3_HOST_DIRECT_ONLY).
int issue_direct(pd3_host* h, const pd3_request& hdr, const void* payload, uint32_t payload_len, void* dest,
                 uint64_t user_data, uint32_t names) {
  HostCore& core = *h->core;
  const uint16_t op = uint16_t(pd3_op_of(hdr.op_id));
  const uint16_t ctl = op == PD3_OP_CONTROL ? uint16_t(hdr.region) : 0;
  const int id = begin_request(h, op, ctl, names, dest, hdr.size, user_data, /*via_ring=*/false);
  if (id < 0) return id;
  if (const int rc = core.direct->submit(uint16_t(id), hdr, payload, payload_len); rc != PD3_OK) {
    abort_request(h, id);
    return rc;
  }
  return id;
}

uint32_t agent_attaches(const HostCore& core);
void declare_agent_down(HostCore& core, bool restart);

// Reserves an id and sends the request through the agent, or directly when the agent is down
// and that is configured. `region` is the request header's field (the sub-op for CONTROL);
// `names` the region to report.
int issue(pd3_host* h, uint16_t op, uint32_t region, uint32_t offset, uint32_t size, const void* payload,
          uint32_t payload_len, void* dest, uint64_t user_data, uint32_t names) {
  HostCore& core = *h->core;
  const pd3_request proto = pd3_make_request(pd3_op_id(op, 0), region, offset, size);
  if (core.direct_only) return issue_direct(h, proto, payload, payload_len, dest, user_data, names);
  // A new agent attached since the ring's requests were last settled: settle them first, so this
  // request lands beyond the fence and is served by the new agent. relaxed: a hint, re-checked there.
  if (agent_attaches(core) != core.seen_attaches.load(std::memory_order_relaxed)) declare_agent_down(core, true);
  {
    std::shared_lock route(core.route_mu);
    if (agent_alive(core)) {
      const uint16_t ctl = op == PD3_OP_CONTROL ? uint16_t(region) : 0;
      const int id = begin_request(h, op, ctl, names, dest, size, user_data, /*via_ring=*/true);
      if (id < 0) return id;
      const pd3_request hdr = pd3_make_request(pd3_op_id(op, uint32_t(id)), region, offset, size);
      if (const int rc = pd3::publish_request(core.control(), hdr, payload, payload_len); rc != PD3_OK) {
        abort_request(h, id);
        return rc;
      }
      return id;
    }
  }
  if (core.fallback == PD3_FALLBACK_DIRECT && core.direct)
    return issue_direct(h, proto, payload, payload_len, dest, user_data, names);
  return pd3::fail(PD3_E_AGENT_DOWN, "the agent's heartbeat is older than %u ms (or it never attached)",
                   core.agent_timeout_ms);
}

// Completions on their way to handle queues: consecutive ones for the same handle are queued
// under one lock (a poll usually completes a whole batch of one handle's requests).
class CompletionSink {
 public:
  ~CompletionSink() { flush(); }
  void push(pd3_host* h, const pd3_completion& c) {
    if (h != handle_) flush();
    handle_ = h;
    batch_.push_back(c);
  }
  void flush() {
    if (handle_ == nullptr || batch_.empty()) return;
    std::lock_guard qlock(handle_->queue_mu);
    handle_->queue.insert(handle_->queue.end(), batch_.begin(), batch_.end());
    handle_->inflight.fetch_sub(uint32_t(batch_.size()), std::memory_order_relaxed);  // relaxed: a statistic
    batch_.clear();
  }

 private:
  pd3_host* handle_ = nullptr;
  std::vector<pd3_completion> batch_;
};

// Hands a completion to the issuing handle (under id_mu) and frees or quarantines the id.
void finish(HostCore& core, uint32_t id, const pd3_completion& c, bool quarantine, CompletionSink& sink) {
  Inflight& e = core.table[id];
  if (e.handle != nullptr) sink.push(e.handle, c);
  if (e.via_ring) --core.ring_inflight;
  if (quarantine) {
    e.handle = nullptr;
    e.dest = nullptr;
    e.via_ring = false;
    e.quarantined = true;
    return;
  }
  e = Inflight{};
  core.free_ids.push_back(uint16_t(id));
}

uint32_t agent_attaches(const HostCore& core) {
  // acquire: pairs with the attach's release increment (the repaired response ring is visible).
  return pd3::aref(core.control()->agent_attaches).load(std::memory_order_acquire);
}

// The agent that took the ring's requests is gone — its heartbeat stopped, or a new agent attached
// in its place — so some may never be answered: fail every request waiting on the ring, fence the
// ring so no agent executes them later, and hold their ids until an agent acknowledges the fence.
// `restart`: called because agent_attaches changed (declared even though the beat is fresh).
void declare_agent_down(HostCore& core, bool restart) {
  std::unique_lock route(core.route_mu);  // no ring request is between its liveness check and publish
  const uint32_t attaches = agent_attaches(core);
  if (restart ? attaches == core.seen_attaches.load(std::memory_order_relaxed) : agent_alive(core)) return;
  std::lock_guard lock(core.id_mu);
  // relaxed: written under route_mu held exclusively, read as a hint by issuers (see issue()).
  core.seen_attaches.store(attaches, std::memory_order_relaxed);
  if (core.ring_inflight == 0) return;
  pd3_control* c = core.control();
  // acquire: tail covers every reservation; with route_mu held exclusively all were published.
  const uint64_t fence = pd3::aref(c->req_tail).load(std::memory_order_acquire);
  // release: an agent that sees the fence also sees everything before it (pairs with request_fence).
  pd3::aref(c->req_fence).store(fence, std::memory_order_release);
  core.quarantine_fence = fence;
  CompletionSink sink;
  for (uint32_t id = 0; id < PD3_MAX_INFLIGHT; ++id) {
    Inflight& e = core.table[id];
    if (!e.busy || !e.via_ring) continue;
    const pd3_completion done{e.user_data, PD3_E_AGENT_DOWN, 0, uint16_t(id), e.op, e.region};
    finish(core, id, done, /*quarantine=*/true, sink);
  }
}

// Frees quarantined ids once an agent has acknowledged the fence and every response it published
// before the acknowledgement was drained (the caller loaded `ack` before draining).
void release_quarantine(HostCore& core, uint64_t ack) {
  std::lock_guard lock(core.id_mu);
  if (core.quarantine_fence == 0 || ack < core.quarantine_fence) return;
  for (uint32_t id = 0; id < PD3_MAX_INFLIGHT; ++id) {
    Inflight& e = core.table[id];
    if (!e.quarantined) continue;
    e = Inflight{};
    core.free_ids.push_back(uint16_t(id));
  }
  core.quarantine_fence = 0;
}

// Routes one response to its handle's queue; drops it if the handle was closed. Caller holds id_mu.
void complete(HostCore& core, const pd3_response& r, const uint8_t* data, bool well_formed, CompletionSink& sink) {
  const uint32_t id = pd3_id_of(r.op_id);
  Inflight& e = core.table[id];
  if (!e.busy || e.quarantined || e.op != pd3_op_of(r.op_id)) {
    core.stray_responses.fetch_add(1, std::memory_order_relaxed);  // relaxed: statistic
    return;
  }
  pd3_completion c{e.user_data, well_formed ? -int32_t(r.status) : PD3_E_CORRUPT, r.size, uint16_t(id), e.op,
                    e.region};
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
  finish(core, id, c, /*quarantine=*/false, sink);
}

// Everything poll and wait do before handing out completions: drain the response ring, pump the
// direct path, notice a dead agent, release quarantined ids.
void collect(HostCore& core) {
  if (!core.owner) return;
  if (!core.ring_broken.load(std::memory_order_relaxed)) {  // relaxed: a sticky flag; see below
    std::unique_lock lock(core.poll_mu, std::try_to_lock);
    if (lock.owns_lock()) {
      // acquire: pairs with the agent's release in ack_fence; responses published before the ack
      // are then visible to the drain below.
      const uint64_t ack = pd3::aref(core.control()->agent_fence_ack).load(std::memory_order_acquire);
      // Hints kept from the last poll go first (a stale one, from an agent that has since been
      // replaced, is refused by the new agent: it never handed out that prefetch id).
      core.hints.retry(core.control());
      int rc;
      {
        // One id_mu hold for the whole batch; issuers wait at most one drain (bounded by the ring).
        std::lock_guard ids(core.id_mu);
        CompletionSink sink;
        rc = pd3::drain_responses(core.control(), PD3_MAX_INFLIGHT,
                                  [&](const pd3_response& r, const uint8_t* data, bool ok) {
                                    if (pd3_op_of(r.op_id) == PD3_OP_PREFETCH) {
                                      core.hints.on_hint(core.control(), r, data, ok);
                                    } else {
                                      complete(core, r, data, ok, sink);
                                    }
                                  });
      }
      // relaxed: the flag guards nothing but further drains; a late observer drains once more.
      if (rc == PD3_E_CORRUPT) core.ring_broken.store(true, std::memory_order_relaxed);
      release_quarantine(core, ack);
    }
  }
  if (core.direct) {
    // Lock order: the direct path's mutex, then id_mu (issue_direct takes them one at a time).
    // id_mu is taken per response, not across the pump's socket calls, so issuers never wait on I/O.
    CompletionSink sink;
    core.direct->pump([&](uint16_t, const pd3::TransportResponse& t) {
      const pd3_response r{t.op_id, t.status, t.size};
      std::lock_guard ids(core.id_mu);
      complete(core, r, t.data, true, sink);
    });
  }
  bool ring_waiting;
  {
    std::lock_guard lock(core.id_mu);
    ring_waiting = core.ring_inflight > 0;
  }
  // relaxed: a hint; declare_agent_down re-checks under the exclusive route lock.
  if (agent_attaches(core) != core.seen_attaches.load(std::memory_order_relaxed)) {
    declare_agent_down(core, /*restart=*/true);
  } else if (ring_waiting && !agent_alive(core)) {
    declare_agent_down(core, /*restart=*/false);
  }
}

// Parses the direct-mode settings of a create call into the core.
int configure_direct(HostCore& core, const pd3_host_config& cfg) {
  if (cfg.fallback > PD3_FALLBACK_DIRECT) return pd3::fail(PD3_E_INVAL, "fallback %u is not a PD3_FALLBACK_*", cfg.fallback);
  core.fallback = cfg.fallback;
  core.direct_only = (cfg.flags & PD3_HOST_DIRECT_ONLY) != 0;
  const bool have_servers = cfg.direct_servers != nullptr && cfg.direct_servers[0] != '\0';
  if ((core.direct_only || core.fallback == PD3_FALLBACK_DIRECT) && !have_servers)
    return pd3::fail(PD3_E_INVAL, "direct mode needs direct_servers (\"host:port,...\")");
  if (!have_servers) return PD3_OK;
  pd3::DirectOptions o;
  if (!pd3::parse_endpoints(cfg.direct_servers, &o.servers))
    return pd3::fail(PD3_E_INVAL, "direct_servers '%s' is not a list of host:port", cfg.direct_servers);
  if (o.servers.size() > pd3::kMaxPlacementServers)
    return pd3::fail(PD3_E_INVAL, "%zu direct servers; at most %zu are supported", o.servers.size(),
                     pd3::kMaxPlacementServers);
  o.token = cfg.direct_token ? cfg.direct_token : "";
  if (o.token.size() > PD3_TOKEN_MAX) return pd3::fail(PD3_E_INVAL, "direct_token longer than %u bytes", PD3_TOKEN_MAX);
  o.tenant = cfg.direct_tenant ? cfg.direct_tenant : "";
  if (int rc = pd3::check_tenant_name("direct_tenant", o.tenant); rc != PD3_OK) return rc;
  if (cfg.direct_timeout_ms) o.timeout_ms = cfg.direct_timeout_ms;
  if (cfg.direct_placement > pd3::kMaxPlacementPolicy)
    return pd3::fail(PD3_E_INVAL, "direct_placement %u is not a PD3_PLACEMENT_*", cfg.direct_placement);
  o.placement = pd3::PlacementPolicy(cfg.direct_placement);
  if (cfg.direct_refraction_ms) o.refraction_ms = cfg.direct_refraction_ms;
  core.direct = std::make_unique<pd3::DirectPath>(std::move(o));
  return PD3_OK;
}

}  // namespace

extern "C" int pd3_host_create(const pd3_host_config* config, pd3_host** out) {
  pd3::clear_error();
  if (config == nullptr || out == nullptr) return pd3::fail(PD3_E_INVAL, "config and out are required");
  std::unique_ptr<Segment> seg;
  if (const int rc = Segment::create(config->name, config->sizes, config->flags & PD3_HOST_REPLACE, &seg)) return rc;
  auto* h = new (std::nothrow) pd3_host;
  if (h == nullptr) return pd3::fail(PD3_E_NOMEM, "handle");
  const uint32_t timeout = config->agent_timeout_ms ? config->agent_timeout_ms : PD3_DEFAULT_AGENT_TIMEOUT_MS;
  h->core = std::make_shared<HostCore>(std::move(seg), true, timeout);
  if (const int rc = configure_direct(*h->core, *config); rc != PD3_OK) {
    h->core->segment->unlink_name();
    delete h;
    return rc;
  }
  h->creator = true;
  register_core(h->core);
  *out = h;
  return PD3_OK;
}

extern "C" int pd3_host_attach(const char* name, pd3_host** out) {
  pd3::clear_error();
  if (out == nullptr) return pd3::fail(PD3_E_INVAL, "out is required");
  std::string path;
  if (!pd3::segment_path(name, &path))
    return pd3::fail(PD3_E_INVAL, "segment name '%s' is not valid", name ? name : "");
  std::shared_ptr<HostCore> core;
  {
    std::lock_guard lock(g_registry_mu);
    if (auto it = g_registry.find(path); it != g_registry.end()) core = it->second.lock();
    if (core && core->control()->creator_pid != uint32_t(getpid())) core.reset();  // inherited through fork()
  }
  if (core == nullptr) {
    std::unique_ptr<Segment> seg;
    if (const int rc = Segment::attach(name, &seg)) return rc;
    core = std::make_shared<HostCore>(std::move(seg), false, PD3_DEFAULT_AGENT_TIMEOUT_MS);
  }
  auto* h = new (std::nothrow) pd3_host;
  if (h == nullptr) return pd3::fail(PD3_E_NOMEM, "handle");
  h->core = std::move(core);
  *out = h;
  return PD3_OK;
}

extern "C" void pd3_host_close(pd3_host* h) {
  if (h == nullptr) return;
  {
    // Detach this handle's requests: their responses will be counted and discarded.
    std::lock_guard lock(h->core->id_mu);
    for (Inflight& e : h->core->table)
      if (e.handle == h) e.handle = nullptr, e.dest = nullptr;
  }
  if (h->creator) h->core->segment->unlink_name();
  {
    std::lock_guard lock(g_registry_mu);
    auto it = g_registry.find(h->core->segment->path());
    // Only our own entry (after a `replace` the path may belong to another core). The creator's
    // close retires the name, so a later segment of the same name gets a new core.
    const bool ours = it != g_registry.end() && it->second.lock() == h->core;
    if (ours && (h->creator || h->core.use_count() == 1)) g_registry.erase(it);
  }
  delete h;
}

extern "C" int pd3_host_allocate(pd3_host* h, uint32_t bytes, uint64_t user_data) {
  if (const int rc = check_issuer(h)) return rc;
  if (bytes == 0) return PD3_E_INVAL;
  return issue(h, PD3_OP_CONTROL, PD3_CTL_ALLOCATE, 0, bytes, nullptr, 0, nullptr, user_data, 0);
}

extern "C" int pd3_host_deallocate(pd3_host* h, uint32_t region, uint64_t user_data) {
  if (const int rc = check_issuer(h)) return rc;
  return issue(h, PD3_OP_CONTROL, PD3_CTL_DEALLOCATE, region, 0, nullptr, 0, nullptr, user_data, region);
}

extern "C" int pd3_host_read(pd3_host* h, uint32_t region, uint32_t offset, uint32_t size, void* dest,
                             uint64_t user_data) {
  if (const int rc = check_issuer(h)) return rc;
  if (size == 0 || dest == nullptr) return PD3_E_INVAL;
  if (pd3::SlotRing::slot_len(sizeof(pd3_response) + uint64_t(size)) > h->core->control()->resp_size / 2)
    return PD3_E_TOO_BIG;
  return issue(h, PD3_OP_READ, region, offset, size, nullptr, 0, dest, user_data, region);
}

extern "C" int pd3_host_write(pd3_host* h, uint32_t region, uint32_t offset, const void* src, uint32_t size,
                              uint64_t user_data) {
  if (const int rc = check_issuer(h)) return rc;
  if (size == 0 || src == nullptr) return PD3_E_INVAL;
  return issue(h, PD3_OP_WRITE, region, offset, size, src, size, nullptr, user_data, region);
}

extern "C" int pd3_host_poll(pd3_host* h, pd3_completion* out, uint32_t max) {
  if (h == nullptr || (out == nullptr && max != 0)) return PD3_E_INVAL;
  HostCore& core = *h->core;
  collect(core);
  std::lock_guard qlock(h->queue_mu);
  uint32_t n = 0;
  for (; n < max && !h->queue.empty(); ++n) {
    out[n] = h->queue.front();
    h->queue.pop_front();
  }
  if (n == 0 && core.ring_broken.load(std::memory_order_relaxed))  // relaxed: a sticky flag
    return pd3::fail(PD3_E_CORRUPT, "response ring framing is broken; recreate the segment");
  return int(n);
}

extern "C" int pd3_host_wait(pd3_host* h, uint32_t timeout_us) {
  if (h == nullptr) return PD3_E_INVAL;
  HostCore& core = *h->core;
  const uint64_t deadline = monotonic_ns() + uint64_t(timeout_us) * 1000;
  for (;;) {
    collect(core);
    {
      std::lock_guard qlock(h->queue_mu);
      if (!h->queue.empty()) return 1;
    }
    const uint64_t now = monotonic_ns();
    if (now >= deadline) return 0;
    const uint32_t slice = uint32_t(std::min<uint64_t>((deadline - now) / 1000 + 1, 50));
    // Direct sockets wake the wait at once; the response ring has no doorbell, so re-check it
    // after a short sleep.
    if (core.direct == nullptr || core.direct->wait(slice) == 0) {
      if (core.direct == nullptr || core.direct->outstanding() == 0) {
        const timespec ts{0, long(slice) * 1000};
        nanosleep(&ts, nullptr);
      }
    }
  }
}

extern "C" int64_t pd3_host_check_and_return(pd3_host* h, const void* key, uint32_t key_len, void* dest,
                                             uint32_t dest_cap) {
  if (h == nullptr) return PD3_E_INVAL;
  return pd3::lz_check_and_return(h->core->zone, key, key_len, dest, dest_cap);
}

extern "C" int pd3_host_agent_alive(const pd3_host* h) { return h != nullptr && agent_alive(*h->core); }

extern "C" uint32_t pd3_host_inflight(const pd3_host* h) {
  return h ? h->inflight.load(std::memory_order_relaxed) : 0;  // relaxed: a statistic
}

extern "C" const pd3_control* pd3_host_control(const pd3_host* h) { return h ? h->core->control() : nullptr; }

extern "C" const char* pd3_host_name(const pd3_host* h) { return h ? h->core->segment->path().c_str() : ""; }
