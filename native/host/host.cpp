// host.cpp — libpd3host: the C ABI of host.h over a mapped segment.
//
// One HostCore per segment per process holds the mapping and the in-flight table (request id →
// issuing handle, read destination, user data). Handles share it; each handle stages its own ring
// requests (ring_submit.hpp) and has its own completion queue, filled by whichever handle happens
// to drain the response ring (completions.hpp). agent_route.hpp: what happens when the agent dies.
#include "pd3/host.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>

#include "common/error.hpp"
#include "common/net.hpp"
#include "common/tenant_credential.hpp"
#include "host/agent_route.hpp"
#include "host/completion_doorbell.hpp"
#include "host/completions.hpp"
#include "host/direct_submit.hpp"
#include "host/host_core.hpp"
#include "host/lz_consumer.hpp"
#include "host/ring_submit.hpp"

// pd3_completion (pd3/host.h) is read field by field by C callers and the addon: its layout is ABI.
static_assert(sizeof(pd3_completion) == 24 && offsetof(pd3_completion, user_data) == 0 &&
                  offsetof(pd3_completion, status) == 8 && offsetof(pd3_completion, size) == 12 &&
                  offsetof(pd3_completion, id) == 16 && offsetof(pd3_completion, op) == 18 &&
                  offsetof(pd3_completion, region) == 20,
              "pd3_completion layout");

namespace {

using pd3::HostCore;
using pd3::Inflight;
using pd3::Segment;

std::mutex g_registry_mu;
std::map<std::string, std::weak_ptr<HostCore>> g_registry;  // segment path → core in this process

// Makes the core findable by pd3_host_attach from other threads of this process.
void register_core(const std::shared_ptr<HostCore>& core) {
  std::lock_guard lock(g_registry_mu);
  g_registry[core->segment->path()] = core;
}

int check_issuer(const pd3_host* h) {
  if (h == nullptr) return PD3_E_INVAL;
  if (!h->core->owner) return PD3_E_NOT_OWNER;
  return PD3_OK;
}

// Publishes what `h` has staged, for the direct path and for the ring. Returns publish_staged's
// status: PD3_E_AGAIN when the request ring had room for only part (the rest goes next time).
int publish_all(pd3_host* h) {
  pd3::publish_direct(h);  // leaves nothing staged: each is queued or completed
  return pd3::publish_staged(h);
}

// Stages the request for the agent, or sends it directly when the agent is down and that is
// configured. `region` is the request header's field (the sub-op for CONTROL); `names` the region
// to report.
int issue(pd3_host* h, uint16_t op, uint32_t region, uint32_t offset, uint32_t size, const void* payload,
          uint32_t payload_len, void* dest, uint64_t user_data, uint32_t names) {
  HostCore& core = *h->core;
  const uint16_t ctl = op == PD3_OP_CONTROL ? uint16_t(region) : 0;
  const pd3::RingRequest r{op, ctl, region, offset, size, payload, payload_len, dest, user_data, names};
  if (core.direct_only) return pd3::issue_direct(h, r);
  // A new agent attached since the ring's requests were last settled: settle them first, so this
  // request lands beyond the fence and is served by the new agent.
  pd3::settle_after_restart(core);
  const int id = pd3::stage_ring_request(h, r);
  if (id != PD3_E_AGENT_DOWN) return id;
  if (core.fallback == PD3_FALLBACK_DIRECT && core.direct) return pd3::issue_direct(h, r);
  return pd3::fail(PD3_E_AGENT_DOWN, "the agent's heartbeat is older than %u ms (or it never attached)",
                   core.agent_timeout_ms);
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
  core.mr_cache_bytes = cfg.direct_mr_cache_bytes;
  core.register_buffers = (cfg.flags & PD3_HOST_DIRECT_UNREGISTERED) == 0;
  return PD3_OK;
}

// The first pd3_host_config's size, up to its last field: the least config_size a caller can pass.
// Fields are only ever appended, so a caller's size says which ones it knows.
constexpr size_t kFirstConfigSize = offsetof(pd3_host_config, direct_mr_cache_bytes) + sizeof(uint32_t);
// When a field is appended, this becomes "sizeof == the end of the new last field": the struct must
// end on its last field, or an appended field would land on padding an older caller left unset.
static_assert(sizeof(pd3_host_config) == kFirstConfigSize, "no padding after pd3_host_config's last field");

// The caller's config as this library reads it: the fields the caller's header had, and 0 for
// those it did not. PD3_E_INVAL if config_size is below the first version's, or if the caller's
// header had fields past this library's and set any of them.
int read_config(const pd3_host_config* config, size_t config_size, pd3_host_config* cfg) {
  if (config_size < kFirstConfigSize)
    return pd3::fail(PD3_E_INVAL, "config_size %zu is below the %zu bytes of the first pd3_host_config", config_size,
                     kFirstConfigSize);
  *cfg = pd3_host_config{};
  std::memcpy(cfg, config, std::min(config_size, sizeof *cfg));
  const auto* newer = reinterpret_cast<const uint8_t*>(config) + sizeof *cfg;
  for (size_t i = 0; i + sizeof *cfg < config_size; ++i)
    if (newer[i] != 0)
      return pd3::fail(PD3_E_INVAL,
                       "pd3_host_config sets byte %zu, past the %zu bytes this library knows: the program was built "
                       "against a newer pd3/host.h than this libpd3host",
                       sizeof *cfg + i, sizeof *cfg);
  return PD3_OK;
}

}  // namespace

extern "C" int pd3_host_create_sized(const pd3_host_config* caller_config, size_t config_size, pd3_host** out) {
  pd3::clear_error();
  if (caller_config == nullptr || out == nullptr) return pd3::fail(PD3_E_INVAL, "config and out are required");
  pd3_host_config known;
  if (const int rc = read_config(caller_config, config_size, &known); rc != PD3_OK) return rc;
  const pd3_host_config* config = &known;
  constexpr uint32_t kKnownFlags = PD3_HOST_REPLACE | PD3_HOST_DIRECT_ONLY | PD3_HOST_DIRECT_UNREGISTERED;
  if ((config->flags & ~kKnownFlags) != 0)
    return pd3::fail(PD3_E_INVAL, "flags %#x include bits that are not PD3_HOST_*", config->flags);
  if (config->publish_batch > PD3_MAX_PUBLISH_BATCH)
    return pd3::fail(PD3_E_INVAL, "publish_batch %u is above %u", config->publish_batch, PD3_MAX_PUBLISH_BATCH);
  std::unique_ptr<Segment> seg;
  if (const int rc = Segment::create(config->name, config->sizes, config->flags & PD3_HOST_REPLACE, &seg)) return rc;
  auto* h = new (std::nothrow) pd3_host;
  if (h == nullptr) return pd3::fail(PD3_E_NOMEM, "handle");
  const uint32_t timeout = config->agent_timeout_ms ? config->agent_timeout_ms : PD3_DEFAULT_AGENT_TIMEOUT_MS;
  const uint32_t batch = config->publish_batch ? config->publish_batch : PD3_DEFAULT_PUBLISH_BATCH;
  h->core = std::make_shared<HostCore>(std::move(seg), true, timeout, batch);
  if (const int rc = configure_direct(*h->core, *config); rc != PD3_OK) {
    h->core->segment->unlink_name();
    delete h;
    return rc;
  }
  h->creator = true;
  if (h->core->direct && h->core->register_buffers)
    h->registrations = pd3::DirectRegistrations::make(h->core->mr_cache_bytes, h->core->control());
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
    core = std::make_shared<HostCore>(std::move(seg), false, PD3_DEFAULT_AGENT_TIMEOUT_MS, PD3_DEFAULT_PUBLISH_BATCH);
  }
  auto* h = new (std::nothrow) pd3_host;
  if (h == nullptr) return pd3::fail(PD3_E_NOMEM, "handle");
  h->core = std::move(core);
  if (h->core->owner && h->core->direct && h->core->register_buffers)
    h->registrations = pd3::DirectRegistrations::make(h->core->mr_cache_bytes, h->core->control());
  *out = h;
  return PD3_OK;
}

extern "C" void pd3_host_close(pd3_host* h) {
  if (h == nullptr) return;
  // Nothing issued is lost: staged requests go to the ring (their answers will be discarded).
  (void)publish_all(h);  // PD3_E_AGAIN: the ring is full; drop_staged frees what is left
  pd3::drop_staged(h);
  {
    // Detach this handle's requests: their responses will be counted and discarded. `busy` first:
    // another handle may be writing the other fields of an entry it is staging (ring_submit.cpp).
    std::lock_guard lock(h->core->id_mu);
    for (Inflight& e : h->core->table)
      if (e.busy_now() && e.handle == h) e.handle = nullptr, e.dest = nullptr, e.registration = 0;  // the cache goes with h
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
  (void)publish_all(h);  // PD3_E_AGAIN: the ring is full; what stays staged goes next time
  pd3::collect(core);
  std::lock_guard qlock(h->queue_mu);
  const uint32_t n = uint32_t(h->queue.pop(out, max));
  if (n == 0 && core.ring_broken.load(std::memory_order_relaxed))  // relaxed: a sticky flag
    return pd3::fail(PD3_E_CORRUPT, "response ring framing is broken; recreate the segment");
  return int(n);
}

extern "C" int pd3_host_wait(pd3_host* h, uint32_t timeout_us) {
  if (h == nullptr) return PD3_E_INVAL;
  HostCore& core = *h->core;
  const uint64_t deadline = pd3::now_ns() + uint64_t(timeout_us) * 1000;
  uint64_t first_sleep_ns = 0;  // when this call first slept on the completion doorbell
  for (;;) {
    (void)publish_all(h);  // PD3_E_AGAIN: retried at the next look
    pd3::collect(core);
    {
      std::lock_guard qlock(h->queue_mu);
      if (!h->queue.empty()) return 1;
    }
    const uint64_t now = pd3::now_ns();
    if (now >= deadline) return 0;
    // Direct sockets wake the wait at once. Ring requests: the agent's completion doorbell wakes
    // the owner once about half of this handle's requests (at most 1,024) were answered; other
    // processes, which take no responses, sleep as long as CompletionPacer guesses.
    const uint32_t inflight = h->inflight.get();
    const uint64_t sleep_ns = core.pacer.sleep_ns(inflight, deadline - now);
    const uint32_t slice_us = uint32_t(std::min<uint64_t>(sleep_ns / 1000 + 1, 50));
    if (core.direct == nullptr || core.direct->wait(slice_us) == 0) {
      if (core.direct == nullptr || core.direct->outstanding() == 0) {
        if (core.owner && inflight > 0) {
          // Capped (CompletionPacer::wait_cap_ns, at most 1 ms): a wait for answers that will not
          // come (some went to other handles), or an agent whose wake cannot reach us (a DPU), costs
          // a little more than the guessed sleep did, never a hang.
          if (first_sleep_ns == 0) first_sleep_ns = now;
          const uint64_t cap = core.pacer.wait_cap_ns(sleep_ns, deadline - now);
          if (pd3::wait_for_responses(core.control(), pd3::CompletionPacer::batch(inflight), cap) ==
              pd3::ResponseWait::kWoken)
            core.pacer.on_woken(pd3::now_ns() - first_sleep_ns);
        } else {
          const timespec ts{time_t(sleep_ns / 1000000000ull), long(sleep_ns % 1000000000ull)};
          nanosleep(&ts, nullptr);
        }
      }
    }
  }
}

extern "C" int pd3_host_flush(pd3_host* h) {
  if (const int rc = check_issuer(h)) return rc;
  return publish_all(h);
}

extern "C" int pd3_host_set_direct_member(pd3_host* h, const char* address, int member) {
  pd3::clear_error();
  if (const int rc = check_issuer(h)) return rc;
  pd3::Endpoint ep;
  if (address == nullptr || !pd3::parse_endpoint(address, &ep))
    return pd3::fail(PD3_E_INVAL, "pool member '%s' is not host:port", address ? address : "");
  if (h->core->direct == nullptr)
    return pd3::fail(PD3_E_INVAL, "the segment has no direct mode (no direct_servers were configured)");
  return h->core->direct->set_member(ep, member != 0);
}

extern "C" int64_t pd3_host_check_and_return(pd3_host* h, const void* key, uint32_t key_len, void* dest,
                                             uint32_t dest_cap) {
  if (h == nullptr) return PD3_E_INVAL;
  return pd3::lz_check_and_return(h->core->zone, key, key_len, dest, dest_cap);
}

extern "C" int pd3_host_agent_alive(const pd3_host* h) { return h != nullptr && agent_alive(*h->core); }

extern "C" uint32_t pd3_host_inflight(const pd3_host* h) {
  return h ? h->inflight.get() : 0;
}

extern "C" const pd3_control* pd3_host_control(const pd3_host* h) { return h ? h->core->control() : nullptr; }

extern "C" const char* pd3_host_name(const pd3_host* h) { return h ? h->core->segment->path().c_str() : ""; }
