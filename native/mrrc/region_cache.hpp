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
#include <vector>

#include "common/spin_lock.hpp"
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

// Two of the counters as they stood right after one acquire() or release(), read under the same
// lock as the call: lets a caller mirror them elsewhere (DirectRegistrations publishes them to the
// segment) without a stats() call, and so without a second lock, per request.
struct Tally {
  uint64_t hits = 0;     // Stats::hits
  uint64_t handles = 0;  // Stats::handles
};

// One cache per owner (a host handle, a frame pool). Thread-safe, with two locks (docs/mrrc.md,
// "Thread safety"): a spin lock guards the cache's state and is held only for bounded work in
// memory, never across a backend call; a mutex orders the operations that call the backend
// (registering gaps, evicting, kNoCache's pin and unpin, invalidate, flush), so concurrent misses
// still register one at a time while hits go on beside a miss's mlock.
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
  // With `tally`, *tally is set to the counters after the call (kOk only).
  Result acquire(uintptr_t addr, size_t len, Handle* out, bool* hit = nullptr, Tally* tally = nullptr);
  Result acquire(const void* addr, size_t len, Handle* out, bool* hit = nullptr, Tally* tally = nullptr) {
    return acquire(reinterpret_cast<uintptr_t>(addr), len, out, hit, tally);
  }

  // Ends one acquire. The regions stay cached (except under kNoCache). kOk, kUnknownHandle (never
  // acquired, or released already: a handle's slot may have been reused since, but never by the
  // same handle value), or kUnpinFailed (kNoCache only; the handle is released anyway). With
  // `tally`, *tally is set to the counters after the call (unless kUnknownHandle).
  Result release(Handle handle, Tally* tally = nullptr);

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

  // How many regions a handle holds without a heap allocation (more spill to a vector).
  static constexpr size_t kInlineRegions = 3;

 private:
  // One registered range of the cache.
  struct Region {
    PageRange range;
    uint32_t users = 0;        // held handles using it
    double evictfact = 0;      // MRE: 0 = unset (new, or referenced again since the last resort)
    std::list<Region*>::iterator pos;  // its place in stack_
  };
  using RegionMap = std::map<uintptr_t, Region>;  // by start address
  // What a handle holds: cached regions (the first kInlineRegions inline, the rest in `more`), or
  // (kNoCache) its own private registration.
  struct Held {
    uint32_t count = 0;
    Region* first[kInlineRegions] = {};
    std::vector<Region*> more;  // regions kInlineRegions.. (its capacity is kept for reuse)
    PageRange own{};

    void push(Region* r) {
      if (count < kInlineRegions) first[count] = r;
      else more.push_back(r);
      ++count;
    }
    Region* at(size_t i) const { return i < kInlineRegions ? first[i] : more[i - kInlineRegions]; }
  };
  // One entry of the handle slab: a handle is generation << 32 | index. The generation moves on
  // when the slot is handed out (to odd) and when it is released (to even), so a stale or repeated
  // release finds a different one (kUnknownHandle); odd also says "held" without a flag to store.
  struct Slot {
    uint32_t generation = 0;  // odd while handed out, so no handle is 0
    uint32_t next_free = 0;   // the free list's link while free (even)
    Held held;
    bool live() const { return (generation & 1) != 0; }
  };
  // Regions a policy took out of the cache, to unpin once the state lock is dropped.
  struct Evicted {
    std::vector<PageRange> batch;
    bool one_by_one = false;  // LRU: one unpin call per region (the pin-down cache does not batch)
  };

  RegionCache(const Config& config, Pinner& backend, size_t capacity);

  // The regions covering `want` pushed onto `held` if they cover all of it (a hit); false, with
  // `held` emptied, at the first uncovered page. Caller holds state_.
  bool collect_hit_locked(PageRange want, Held* held);
  // Holds the regions of `held` (users, recency) and counts a hit; returns the hit count.
  uint64_t hold_hit_locked(const Held& held, bool* hit);
  // Whatever is not a hit on the first look: registers the gaps (caller holds neither lock).
  Result acquire_slow(PageRange want, Handle* out, bool* hit, Tally* tally);
  Result acquire_uncached(PageRange range, Handle* out, Tally* tally);
  // Pins `range`; on ENOMEM/EAGAIN gives back every unused region and tries once more. Caller
  // holds slow_mu_ and not state_.
  Result pin(PageRange range);
  // Unpins what a policy took out (caller holds slow_mu_ and not state_).
  Result unpin(const Evicted& evicted);
  // Frees room for `bytes` more pinned bytes by the configured policy, never touching regions in
  // use: takes the victims out of the cache into *evicted. Returns whether there is room now.
  bool make_room_locked(size_t bytes, Evicted* evicted);
  bool make_room_lru_locked(size_t bytes, Evicted* evicted);
  bool make_room_mre_locked(size_t bytes, Evicted* evicted);
  // Resorts the resorting section by eviction factor (MRE); returns how many regions it holds.
  size_t resort_locked();
  // Takes `victims` (unused) out of the cache and its counters; their ranges go to *evicted.
  void detach_locked(const std::vector<Region*>& victims, Evicted* evicted);
  void detach_unused_locked(Evicted* evicted);
  void touch_locked(Region* r);  // to the top of the stack, eviction factor reset
  // The slab (caller holds state_): a free slot's index, its held list empty; a slot back on the
  // free list; a slot handed out as a live handle; a live handle's slot retired (generation on).
  uint32_t take_slot_locked();
  void put_slot_locked(uint32_t index);
  Handle hand_out_locked(uint32_t index);
  uint64_t retire_locked(Slot* slot, uint32_t index);  // returns the handles held now
  // A new handle holding a copy of `held`.
  Handle remember_locked(const Held& held);
  // The live slot of `handle`, or null.
  Slot* find_locked(Handle handle);
  Tally tally_locked() const { return {stats_.hits, stats_.handles}; }

  const Config config_;
  Pinner& backend_;
  const size_t capacity_;
  const size_t page_;
  // Order: slow_mu_ before state_. state_ is a spin lock because everything it guards is bounded
  // work in memory (a hit: a map lookup, a list splice, a slot; a miss adds inserting its new
  // regions and choosing victims), a few tens of ns on the hit path where a pthread mutex pays two
  // locked instructions and a futex path; no backend call (mlock, microseconds, may fault pages in)
  // ever runs under it, so a waiter never spins through a syscall, and SpinLock yields after a few
  // spins if the holder was preempted. Backend calls are ordered by slow_mu_, a mutex, whose
  // waiters sleep.
  std::mutex slow_mu_;
  mutable SpinLock state_;
  RegionMap regions_;             // guarded by state_ (changed only with slow_mu_ held too)
  std::list<Region*> stack_;      // guarded by state_: front = most recently used (top)
  std::vector<Slot> slots_;       // guarded by state_: the handle slab
  uint32_t free_slot_ = kNoSlot;  // guarded by state_: head of the slab's free list
  double recency_ = 0;            // guarded by state_: MRE's system recency value r
  Stats stats_;                   // guarded by state_
  std::vector<PageRange> gaps_;   // guarded by slow_mu_: acquire_slow's scratch list of gaps
  Held scratch_;                  // guarded by slow_mu_: acquire_slow's list of regions

  static constexpr uint32_t kNoSlot = UINT32_MAX;
};

const char* replacement_name(Replacement r);
// Parses "mrrc" (or "mre"), "lru" (or "pindown") and "none"; false otherwise.
bool parse_replacement(const char* name, Replacement* out);

}  // namespace pd3::mrrc
