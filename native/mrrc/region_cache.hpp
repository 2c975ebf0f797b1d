// region_cache.hpp — MRRC, the memory registration region cache (Ou, He, Han: "MRRC: an effective
// cache for fast memory registration in RDMA", MSST'06, and its journal version). Callers acquire an
// address range before handing it to the NIC and release it after; the cache keeps ranges registered
// after release, so a later acquire that a cached region covers needs no registration (a hit).
//
// Regions never overlap. A request that is partly cached is split (the paper's "intersection" case):
// the cached regions are reused and only the uncovered gaps are registered, each as a new region; a
// request spanning several adjacent cached regions is served by all of them at once (no
// re-registration), which is how regions merge here. Unused regions are evicted when the pinned
// bytes would pass the capacity, by one of three policies (Replacement). docs/mrrc.md has the detail.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "mrrc/pinner.hpp"
#include "mrrc/status.hpp"

namespace pd3::mrrc {

// How unused regions leave the cache.
enum class Replacement : uint8_t {
  kMre,      // the paper's Memory Resorting and Eviction: size and recency, batched deregistration
  kLru,      // the pin-down cache (Tezuka et al.): least recently used first, deregistered one by one
  kNoCache,  // no cache: every acquire registers, every release deregisters (the baseline without MRRC)
};

// Fixed at construction.
struct Config {
  size_t capacity_bytes = 4u << 20;  // most bytes pinned at once (capped to the backend's pin_limit)
  Replacement replacement = Replacement::kMre;
  // MRE: the top of the LRU stack holding this share of the capacity is the frequent reference
  // section (never resorted); the rest is the resorting section. The paper leaves the split open.
  double frequent_share = 0.5;
  // MRE: the eviction segment, the bottom of the resorted section, frees at least this share of the
  // capacity (and at least what the request needs) in one batched deregistration.
  double eviction_share = 0.05;
};

// Counters (monotonic unless marked "now").
struct Stats {
  uint64_t hits = 0;            // acquires fully covered by cached regions: no registration
  uint64_t partial_hits = 0;    // acquires partly covered: only the gaps were registered
  uint64_t misses = 0;          // acquires with nothing cached: the whole range was registered
  uint64_t registrations = 0;   // pin operations issued
  uint64_t registered_bytes = 0;
  uint64_t deregistrations = 0; // regions unpinned
  uint64_t dereg_batches = 0;   // unpin operations issued (a batch of regions is one)
  uint64_t deregistered_bytes = 0;
  uint64_t pin_failures = 0;    // pin operations the backend refused
  uint64_t pinned_bytes = 0;    // now
  uint64_t regions = 0;         // now: cached regions, in use or not
  uint64_t handles = 0;         // now: acquired and not released
};

// An acquired range: pass it back to release(). 0 is never a valid handle.
using Handle = uint64_t;

// One cache per owner (a host handle, a frame pool). Thread-safe: one mutex guards all of it and
// is held across the backend's pin/unpin calls, so concurrent misses register one at a time.
class RegionCache {
 public:
  // Validates `config` against the backend: kInvalid for a capacity below one page, a page size
  // that is not a power of two, or shares outside [0, 1]. The capacity is capped to
  // backend.pin_limit() and rounded down to whole pages. `backend` must outlive the cache.
  static Result create(const Config& config, Pinner& backend, std::unique_ptr<RegionCache>* out);
  // Deregisters every cached region (one batch). Handles still held are dropped with them.
  ~RegionCache();
  RegionCache(const RegionCache&) = delete;
  RegionCache& operator=(const RegionCache&) = delete;

  // Makes [addr, addr + len) registered until release(*out) (the pages it touches, whole).
  // kOk; kInvalid (len 0, or the range wraps the address space); kTooLarge (the page-rounded range
  // exceeds the capacity); kNoSpace (regions in use hold the capacity); kPinFailed (the backend
  // refused a gap, errno with it; gaps registered before it stay cached, unused). Nothing is held
  // unless kOk. With `hit`, *hit is set to whether the acquire was a hit (cached regions covered
  // the whole range: nothing was registered), so a caller can count it without reading stats().
  Result acquire(uintptr_t addr, size_t len, Handle* out, bool* hit = nullptr);
  Result acquire(const void* addr, size_t len, Handle* out, bool* hit = nullptr) {
    return acquire(reinterpret_cast<uintptr_t>(addr), len, out, hit);
  }

  // Ends one acquire. The regions stay cached (except under kNoCache). kOk, kUnknownHandle (never
  // acquired or released already), or kUnpinFailed (kNoCache only; the handle is released anyway).
  Result release(Handle handle);

  // Deregisters every cached region overlapping [addr, addr + len), e.g. before that memory is
  // unmapped. kOk, kInvalid, kBusy (a held handle uses one of them: nothing was deregistered) or
  // kUnpinFailed.
  Result invalidate(uintptr_t addr, size_t len);

  // Deregisters every unused region in one batch (memory pressure, tests). kOk or kUnpinFailed.
  Result flush();

  Stats stats() const;
  size_t capacity() const { return capacity_; }
  size_t page_size() const { return page_; }
  Replacement replacement() const { return config_.replacement; }

 private:
  // One registered range of the cache.
  struct Region {
    PageRange range;
    uint32_t users = 0;        // held handles using it
    double evictfact = 0;      // MRE: 0 = unset (new, or referenced again since the last resort)
    std::list<Region*>::iterator pos;  // its place in stack_
  };
  using RegionMap = std::map<uintptr_t, Region>;  // by start address
  // What a handle holds: cached regions, or (kNoCache) its own private registration.
  struct Held {
    std::vector<Region*> regions;
    PageRange own{};
  };

  RegionCache(const Config& config, Pinner& backend, size_t capacity);

  Result acquire_uncached_locked(PageRange range, Handle* out);
  // Registers `gap` as a new cached region at the top of the stack, in use once. kOk or kPinFailed.
  Result register_gap_locked(PageRange gap, std::vector<Region*>* held);
  Result pin_locked(PageRange range);
  // Frees room for `bytes` more pinned bytes by the configured policy, never touching regions in
  // use. Returns whether there is room now.
  bool make_room_locked(size_t bytes);
  bool make_room_lru_locked(size_t bytes);
  bool make_room_mre_locked(size_t bytes);
  // Resorts the resorting section by eviction factor (MRE); returns how many regions it holds.
  size_t resort_locked();
  // Unpins `victims` as one batch and forgets them.
  Result evict_locked(const std::vector<Region*>& victims);
  void touch_locked(Region* r);  // to the top of the stack, eviction factor reset
  Handle remember_locked(Held held);

  const Config config_;
  Pinner& backend_;
  const size_t capacity_;
  const size_t page_;
  mutable std::mutex mu_;
  RegionMap regions_;                      // guarded by mu_
  std::list<Region*> stack_;               // guarded by mu_: front = most recently used (top)
  std::unordered_map<Handle, Held> held_;  // guarded by mu_
  Handle next_handle_ = 1;                 // guarded by mu_
  double recency_ = 0;                     // guarded by mu_: MRE's system recency value r
  Stats stats_;                            // guarded by mu_
  std::vector<PageRange> gaps_;            // guarded by mu_: acquire's scratch list of gaps
};

const char* replacement_name(Replacement r);
// Parses "mrrc" (or "mre"), "lru" (or "pindown") and "none"; false otherwise.
bool parse_replacement(const char* name, Replacement* out);

}  // namespace pd3::mrrc
