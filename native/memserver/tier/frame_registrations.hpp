// frame_registrations.hpp — the registration of the SSD tier's frames for a NIC through MRRC
// (native/mrrc, docs/mrrc.md): a frame's memory is acquired in a region cache when a page fills it
// and released when it empties, so a frame is registered while a NIC may read or write it, and the
// cache keeps it registered afterwards (refilling the same frame is a hit). Here the backend pins
// with mlock; the transfers are TCP and need no registration, so a refused one is counted and
// logged once, never fatal.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "memserver/tier/eviction_policy.hpp"
#include "mrrc/mlock_pinner.hpp"
#include "mrrc/region_cache.hpp"

namespace pd3::tier {

class FramePool;

// What the registrations did (metrics pd3_memserver_tier_mr_*).
struct FrameRegistrationStats {
  uint64_t hits = 0;             // fills whose frame was still registered
  uint64_t misses = 0;           // fills that registered (part of) their frame
  uint64_t failures = 0;         // fills left unregistered (cache full of frames in use, RLIMIT_MEMLOCK, no cache)
  uint64_t deregistrations = 0;  // cached frame registrations evicted
  uint64_t pinned_bytes = 0;     // now
};

// One frame pool's region cache over an mlock backend. Single-threaded (the tier's owner).
class FrameRegistrations {
 public:
  // A cache of `capacity_bytes`, capped to RLIMIT_MEMLOCK. When the limit leaves less than one page,
  // there is no cache and every fill counts as a failure (the reason is logged once).
  explicit FrameRegistrations(uint64_t capacity_bytes);
  ~FrameRegistrations();  // deregisters everything (before the pool's memory is unmapped)
  FrameRegistrations(const FrameRegistrations&) = delete;
  FrameRegistrations& operator=(const FrameRegistrations&) = delete;

  // Sets the pool's observer to this object's filled / emptied; `this` must outlive the pool's use of it.
  void attach(FramePool& pool);
  void filled(FrameId f, uint8_t* addr, uint32_t len);
  void emptied(FrameId f);

  FrameRegistrationStats stats() const;
  // The log line of the first refused registration (once), or nothing.
  std::vector<std::string> take_notices() { return std::exchange(notices_, {}); }
  // The cache's capacity after the cap (0: no cache).
  uint64_t capacity() const { return cache_ ? cache_->capacity() : 0; }

 private:
  void refused(const char* why);

  mrrc::MlockPinner pinner_;
  std::unique_ptr<mrrc::RegionCache> cache_;  // declared after pinner_: destroyed (deregistering) first
  std::vector<mrrc::Handle> handles_;         // by frame; 0 = not registered
  uint64_t failures_ = 0;
  bool told_ = false;
  std::string no_cache_;  // why there is no cache
  std::vector<std::string> notices_;
};

}  // namespace pd3::tier
