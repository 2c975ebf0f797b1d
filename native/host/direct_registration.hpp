// direct_registration.hpp — one host handle's registration of the caller's buffers in direct mode:
// a read's destination (and a write's source) is acquired in the handle's MRRC (native/mrrc) before
// the request goes out and released when it completes, as an RDMA NIC needs it registered. Here
// the backend pins with mlock; the transfer itself is TCP and needs no pinning, so a registration
// the cache refuses (too large, RLIMIT_MEMLOCK spent) is counted and the request goes on.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "mrrc/region_cache.hpp"
#include "pd3/segment.h"

namespace pd3 {

// A handle's registration cache and the segment counters it feeds (host_mr_*). Thread-safe (the
// cache is; the counters are atomic adds). A hit, the common case, touches no line another handle
// writes: the cache counts it under its own lock, and the hits are added to the segment's shared
// host_mr_hits every kPublishEvery hits, whenever the handle holds no registration any more (a
// quiet point: the end of a run, or between the requests of a handle that issues one at a time),
// and at close. So the counter lags by less than kPublishEvery hits while requests are in flight
// and is exact once they have completed. Misses and failures are published at once (they pin).
class DirectRegistrations {
 public:
  // The cache for one handle: `capacity_bytes` (0 = kDefaultBytes) capped to RLIMIT_MEMLOCK.
  // Returns nullptr when no cache can be made (the limit is below one page): requests then go
  // unregistered, counted as failures.
  static std::unique_ptr<DirectRegistrations> make(uint64_t capacity_bytes, pd3_control* control);
  ~DirectRegistrations();  // deregisters everything; the pinned-bytes gauge drops by what it held

  static constexpr uint64_t kDefaultBytes = 4u << 20;
  // Hits counted in the handle before they are added to the segment's shared counter.
  static constexpr uint64_t kPublishEvery = 128;

  // Registers [addr, addr + len) until release(); returns the handle, or 0 if it was refused
  // (counted in host_mr_failures).
  uint64_t acquire(const void* addr, size_t len);
  void release(uint64_t handle);

 private:
  DirectRegistrations(std::unique_ptr<mrrc::RegionCache> cache, pd3_control* control)
      : cache_(std::move(cache)), control_(control) {}
  // Moves the segment counters by what the cache did since the last call (under mu_).
  void publish_locked();
  // Brings host_mr_hits up to `hits`, the cache's hit count at some moment (a later count may
  // have been published already: then nothing). Lock-free: callers on several threads.
  void publish_hits(uint64_t hits);

  std::unique_ptr<mrrc::RegionCache> cache_;
  pd3_control* control_;
  std::mutex mu_;          // orders the counter deltas below
  mrrc::Stats published_;  // guarded by mu_: what the segment counters already hold of this cache (hits aside)
  std::atomic<uint64_t> published_hits_{0};  // how many of the cache's hits host_mr_hits holds
};

// Counts a registration refused because there is no cache at all (see make()).
void count_unregistered(pd3_control* control);

}  // namespace pd3
