// direct_registration.hpp — one host handle's registration of the caller's buffers in direct mode:
// a read's destination (and a write's source) is acquired in the handle's MRRC (native/mrrc) before
// the request goes out and released when it completes, as an RDMA NIC needs it registered. Here
// the backend pins with mlock; the transfer itself is TCP and needs no pinning, so a registration
// the cache refuses (too large, RLIMIT_MEMLOCK spent) is counted and the request goes on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "mrrc/region_cache.hpp"
#include "pd3/segment.h"

namespace pd3 {

// A handle's registration cache and the segment counters it feeds (host_mr_*). Thread-safe (the
// cache is; the counters are atomic adds).
class DirectRegistrations {
 public:
  // The cache for one handle: `capacity_bytes` (0 = kDefaultBytes) capped to RLIMIT_MEMLOCK.
  // Returns nullptr when no cache can be made (the limit is below one page): requests then go
  // unregistered, counted as failures.
  static std::unique_ptr<DirectRegistrations> make(uint64_t capacity_bytes, pd3_control* control);
  ~DirectRegistrations();  // deregisters everything; the pinned-bytes gauge drops by what it held

  static constexpr uint64_t kDefaultBytes = 4u << 20;

  // Registers [addr, addr + len) until release(); returns the handle, or 0 if it was refused
  // (counted in host_mr_failures).
  uint64_t acquire(const void* addr, size_t len);
  void release(uint64_t handle);

 private:
  DirectRegistrations(std::unique_ptr<mrrc::RegionCache> cache, pd3_control* control)
      : cache_(std::move(cache)), control_(control) {}
  // Moves the segment counters by what the cache did since the last call (under mu_).
  void publish_locked();

  std::unique_ptr<mrrc::RegionCache> cache_;
  pd3_control* control_;
  std::mutex mu_;          // orders the counter deltas below
  mrrc::Stats published_;  // guarded by mu_: what the segment counters already hold of this cache (hits aside: acquire adds those)
};

// Counts a registration refused because there is no cache at all (see make()).
void count_unregistered(pd3_control* control);

}  // namespace pd3
