// host_core.hpp — the per-process state of one segment (HostCore) and a handle on it (pd3_host),
// shared by the files of libpd3host. Locks are taken in this order: a handle's issue_mu, then
// the core's route_mu, then id_mu; issue_mu, then the direct path's mutex (DirectPath::mu_), then
// id_mu; poll_mu, then id_mu; id_mu, then a handle's queue_mu.
#pragma once

#include <algorithm>
#include <array>
#include <cassert>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "common/lz_view.hpp"
#include "common/biased_lock.hpp"
#include "common/segment.hpp"
#include "host/completion_pacer.hpp"
#include "host/completion_queue.hpp"
#include "host/direct_batch.hpp"
#include "host/direct_path.hpp"
#include "host/direct_registration.hpp"
#include "host/free_ids.hpp"
#include "host/hint_forwarder.hpp"
#include "host/request_batch.hpp"
#include "pd3/host.h"

namespace pd3 {

// One request between issue and completion. Its issuer writes the fields while `busy` is clear
// (no other thread reads them then); the flags change only under HostCore::id_mu, except that a
// direct-mode issuer sets `busy` without it (direct_submit.cpp).
struct Inflight {
  pd3_host* handle = nullptr;  // nullptr: free, or its handle was closed (completion discarded)
  void* dest = nullptr;        // READ destination
  uint32_t dest_cap = 0;
  uint64_t user_data = 0;
  uint16_t op = 0;
  uint16_t ctl = 0;     // CONTROL sub-op (PD3_CTL_*), 0 otherwise
  uint32_t region = 0;  // the region the request names (DEALLOCATE: the one released)
  // The request may be answered. Every reader other than its issuer loads it, under id_mu, before
  // any other field, and reads the rest only when it is set: see busy_now().
  std::atomic<bool> busy{false};
  bool via_ring = false;     // went through the agent (else direct to a memory server)
  bool quarantined = false;  // failed when the agent was declared down; id held until the fence ack
  uint64_t registration = 0; // direct READ: the destination's MRRC handle in handle->registrations, 0 = none

  // acquire: pairs with the direct issuer's release in mark_busy_unlocked, so the fields it wrote
  // before are visible. (Under id_mu the ring's relaxed stores are ordered by the lock.)
  bool busy_now() const { return busy.load(std::memory_order_acquire); }
  // Sets `busy` under id_mu. relaxed: the lock orders it for every reader.
  void mark_busy_locked(bool on) { busy.store(on, std::memory_order_relaxed); }
  // Sets `busy` without id_mu, after the issuer wrote the other fields. release: see busy_now().
  void mark_busy_unlocked() { busy.store(true, std::memory_order_release); }
  // Back to a free entry. Caller holds id_mu.
  void clear() {
    handle = nullptr;
    dest = nullptr;
    dest_cap = 0;
    user_data = 0;
    op = ctl = 0;
    region = 0;
    mark_busy_locked(false);
    via_ring = quarantined = false;
    registration = 0;
  }
};

// Per-process state of one segment, shared by all its handles.
struct HostCore {
  std::unique_ptr<Segment> segment;
  LzView zone;
  bool owner;                    // this process created the segment and may issue requests
  uint32_t agent_timeout_ms;
  uint32_t publish_batch;        // requests a handle stages before it publishes them
  std::mutex id_mu;              // guards free_ids, table, ring_inflight and quarantine_fence
  FreeIds free_ids;
  std::array<Inflight, PD3_MAX_INFLIGHT> table{};
  std::mutex poll_mu;            // one drainer of the response ring at a time
  HintForwarder hints;           // guarded by poll_mu: the agent's prefetch hints (issuer "host")
  CompletionPacer pacer;         // written under poll_mu, read by waiters
  std::atomic<bool> ring_broken{false};
  std::atomic<uint64_t> stray_responses{0};
  // The producers' copy of the agent's req_head (SlotRing::reserve_mp): the agent's line is read
  // only when the ring looks full.
  std::atomic<uint64_t> req_head_cache{0};

  // Routing (docs/host-library.md, "When the agent dies"). Publishers to the ring hold route_mu
  // shared from their liveness check to their publish; declaring the agent down holds it
  // exclusively, so no ring request slips in beyond the fence it sets.
  std::shared_mutex route_mu;
  uint32_t fallback = PD3_FALLBACK_FAIL;
  bool direct_only = false;
  std::unique_ptr<DirectPath> direct;  // null when no direct servers are configured
  uint32_t mr_cache_bytes = 0;         // each handle's registration cache (pd3_host_config.direct_mr_cache_bytes)
  bool register_buffers = true;        // false: PD3_HOST_DIRECT_UNREGISTERED (no MRRC, nothing counted)
  // Written under id_mu (add_under_lock); read without it only as hints, re-checked under id_mu.
  std::atomic<uint32_t> ring_inflight{0};   // requests in the ring, not yet answered or failed
  std::atomic<uint64_t> quarantine_fence{0};  // 0 = nothing quarantined
  std::atomic<uint32_t> seen_attaches{0};   // agent_attaches when the ring requests were last settled

  HostCore(std::unique_ptr<Segment> seg, bool is_owner, uint32_t timeout_ms, uint32_t batch)
      : segment(std::move(seg)), zone(segment->control()), owner(is_owner), agent_timeout_ms(timeout_ms),
        publish_batch(batch) {}
  pd3_control* control() const { return segment->control(); }
};

// `v += delta` for a counter whose writers all hold one lock: a relaxed load and store, no locked
// instruction (readers without the lock only take it as a hint).
template <class T, class D>
void add_under_lock(std::atomic<T>& v, D delta) {
  v.store(T(v.load(std::memory_order_relaxed) + T(delta)), std::memory_order_relaxed);
}

// Requests a handle issued and not yet polled, as two counters each changed under one lock
// (issued under the handle's issue_mu, retired under its queue_mu): a plain load and store per
// change instead of a locked instruction per request.
class InflightCount {
 public:
  void issued(uint32_t n = 1) { add_under_lock(issued_, n); }  // caller holds issue_mu
  void retired(uint32_t n = 1) {                                // caller holds queue_mu
    // release: a reader that sees this retirement also sees the issue it retires (get()).
    retired_.store(retired_.load(std::memory_order_relaxed) + n, std::memory_order_release);
  }
  uint32_t get() const {
    // acquire, then issued: every request counted retired was issued before (the ring orders
    // them), so issued read after it is never smaller.
    const uint64_t retired = retired_.load(std::memory_order_acquire);
    const uint64_t issued = issued_.load(std::memory_order_relaxed);  // relaxed: see above
    return issued > retired ? uint32_t(issued - retired) : 0;
  }

 private:
  std::atomic<uint64_t> issued_{0};
  std::atomic<uint64_t> retired_{0};
};

// Ids a handle took from the core in one go, so issuing a ring request does not lock id_mu. It
// hands them out in the core's order (FreeIds says why). Guarded by the handle's issue_mu.
class IdCache {
 public:
  static constexpr uint32_t kRefill = 64;

  // An id, refilling from the core when empty; -1 when the core has none left either.
  int take(HostCore& core) {
    if (next_ == end_) {
      std::lock_guard lock(core.id_mu);
      next_ = 0;
      end_ = std::min(kRefill, core.free_ids.size());
      for (uint32_t i = 0; i < end_; ++i) ids_[i] = core.free_ids.pop();
    }
    if (next_ == end_) return -1;
    return ids_[next_++];
  }
  // Returns the id take() just gave, unused.
  void put_back(uint16_t id) {
    assert(next_ > 0);
    ids_[--next_] = id;
  }
  // Hands every cached id back to the core (handle closing). Caller holds id_mu.
  void release_all_locked(HostCore& core) {
    for (; next_ < end_; ++next_) core.free_ids.push(ids_[next_]);
  }

 private:
  std::array<uint16_t, kRefill> ids_{};
  uint32_t next_ = 0;  // ids_[next_, end_) are this handle's to give
  uint32_t end_ = 0;
};

}  // namespace pd3

// A handle: a core plus this handle's staged requests and completions.
struct pd3_host {
  std::shared_ptr<pd3::HostCore> core;
  bool creator = false;
  // Guards ids, staged and direct_staged. A handle may be used from any thread, but nearly always one issues on it:
  // the lock is biased to that thread, which then takes it without a locked instruction.
  pd3::BiasedLock issue_mu;
  pd3::IdCache ids;
  pd3::RequestBatch staged;          // ring requests not yet published
  pd3::DirectBatch direct_staged;    // direct requests not yet queued on the direct path
  std::mutex queue_mu;
  pd3::CompletionQueue queue;
  pd3::InflightCount inflight;
  // Direct mode: the caller's buffers registered through this handle's MRRC (null without direct
  // servers, or when RLIMIT_MEMLOCK allows no cache at all).
  std::unique_ptr<pd3::DirectRegistrations> registrations;
};
