// region_cache.cpp — lookups, splitting, handles and statistics of the region cache; the two
// eviction policies are in replacement.cpp.
#include "mrrc/region_cache.hpp"

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <utility>

namespace pd3::mrrc {

const char* status_name(Status s) {
  switch (s) {
    case Status::kOk: return "ok";
    case Status::kInvalid: return "invalid";
    case Status::kTooLarge: return "too-large";
    case Status::kNoSpace: return "no-space";
    case Status::kPinFailed: return "pin-failed";
    case Status::kUnpinFailed: return "unpin-failed";
    case Status::kUnknownHandle: return "unknown-handle";
    case Status::kBusy: return "busy";
  }
  return "unknown";
}

const char* replacement_name(Replacement r) {
  switch (r) {
    case Replacement::kMre: return "mrrc";
    case Replacement::kLru: return "pindown";
    case Replacement::kNoCache: return "none";
  }
  return "unknown";
}

bool parse_replacement(const char* name, Replacement* out) {
  if (std::strcmp(name, "mrrc") == 0 || std::strcmp(name, "mre") == 0) *out = Replacement::kMre;
  else if (std::strcmp(name, "lru") == 0 || std::strcmp(name, "pindown") == 0) *out = Replacement::kLru;
  else if (std::strcmp(name, "none") == 0) *out = Replacement::kNoCache;
  else return false;
  return true;
}

namespace {

// [addr, addr + len) widened to whole pages; false if it is empty or wraps the address space.
bool page_range(uintptr_t addr, size_t len, size_t page, PageRange* out) {
  if (len == 0 || addr > UINTPTR_MAX - len) return false;
  const uintptr_t last = addr + len - 1;  // inclusive: addr + len itself may be UINTPTR_MAX + 1
  const uintptr_t lo = addr & ~uintptr_t(page - 1);
  const uintptr_t last_page = last & ~uintptr_t(page - 1);
  if (last_page > UINTPTR_MAX - page) return false;  // the end would wrap
  *out = {lo, size_t(last_page + page - lo)};
  return true;
}

}  // namespace

Result RegionCache::create(const Config& config, Pinner& backend, std::unique_ptr<RegionCache>* out) {
  assert(out != nullptr);
  const size_t page = backend.page_size();
  if (page == 0 || (page & (page - 1)) != 0) return {Status::kInvalid};
  if (!(config.frequent_share >= 0 && config.frequent_share <= 1) ||
      !(config.eviction_share >= 0 && config.eviction_share <= 1))
    return {Status::kInvalid};
  size_t capacity = std::min(config.capacity_bytes, backend.pin_limit());
  capacity -= capacity % page;
  if (capacity < page) return {Status::kInvalid};
  out->reset(new RegionCache(config, backend, capacity));
  return {};
}

RegionCache::RegionCache(const Config& config, Pinner& backend, size_t capacity)
    : config_(config), backend_(backend), capacity_(capacity), page_(backend.page_size()) {}

RegionCache::~RegionCache() {
  std::lock_guard slow(slow_mu_);
  std::vector<PageRange> all;
  {
    std::lock_guard lock(state_);
    for (auto& [start, r] : regions_) all.push_back(r.range);
    for (const Slot& s : slots_)
      if (s.live() && s.held.own.len != 0) all.push_back(s.held.own);
  }
  if (!all.empty()) (void)backend_.unpin(all);  // nothing to report to in a destructor
}

// ---- handles ------------------------------------------------------------------------------------

uint32_t RegionCache::take_slot_locked() {
  if (free_slot_ != kNoSlot) {
    const uint32_t index = free_slot_;
    free_slot_ = slots_[index].next_free;
    return index;
  }
  slots_.emplace_back();  // amortised: the slab only grows to the most handles ever held at once
  return uint32_t(slots_.size() - 1);
}

void RegionCache::put_slot_locked(uint32_t index) {
  // `more` is only cleared when it was used; `own` is only ever set under kNoCache, whose release
  // clears it.
  Slot& slot = slots_[index];
  if (slot.held.count > kInlineRegions) slot.held.more.clear();  // capacity kept for reuse
  slot.held.count = 0;
  slot.next_free = free_slot_;
  free_slot_ = index;
}

Handle RegionCache::hand_out_locked(uint32_t index) {
  Slot& slot = slots_[index];
  ++slot.generation;  // odd: handed out
  ++stats_.handles;
  return (Handle(slot.generation) << 32) | index;
}

Handle RegionCache::remember_locked(const Held& held) {
  const uint32_t index = take_slot_locked();
  Held& mine = slots_[index].held;
  mine.count = held.count;
  std::copy(std::begin(held.first), std::end(held.first), std::begin(mine.first));
  mine.more.assign(held.more.begin(), held.more.end());
  mine.own = held.own;
  return hand_out_locked(index);
}

RegionCache::Slot* RegionCache::find_locked(Handle handle) {
  const uint64_t index = handle & 0xffffffffu;
  if (index >= slots_.size()) return nullptr;
  Slot& slot = slots_[index];
  if (!slot.live() || slot.generation != uint32_t(handle >> 32)) return nullptr;
  return &slot;
}

uint64_t RegionCache::retire_locked(Slot* slot, uint32_t index) {
  ++slot->generation;  // even: free (wrapping after 2^31 reuses of one slot is still even, never 0 live)
  put_slot_locked(index);
  return --stats_.handles;
}

Result RegionCache::release(Handle handle, Tally* tally) {
  const uint32_t index = uint32_t(handle & 0xffffffffu);
  if (config_.replacement == Replacement::kNoCache) {
    // The baseline without a cache unpins here: under slow_mu_, like every backend call.
    std::lock_guard slow(slow_mu_);
    PageRange own;
    {
      std::lock_guard lock(state_);
      Slot* slot = find_locked(handle);
      if (slot == nullptr) return {Status::kUnknownHandle};
      own = slot->held.own;
      slot->held.own = {};
      (void)retire_locked(slot, index);
      ++stats_.deregistrations;
      ++stats_.dereg_batches;
      stats_.deregistered_bytes += own.len;
      stats_.pinned_bytes -= own.len;
      if (tally != nullptr) *tally = tally_locked();
    }
    return backend_.unpin({&own, 1});
  }
  std::lock_guard lock(state_);
  Slot* slot = find_locked(handle);
  if (slot == nullptr) return {Status::kUnknownHandle};
  const Held& held = slot->held;
  for (size_t i = 0; i < held.count; ++i) {
    Region* r = held.at(i);
    assert(r->users > 0);
    --r->users;
  }
  const uint64_t handles = retire_locked(slot, index);
  // From the register, not read back: a 16-byte load the compiler may merge the two fields into
  // would straddle the store just made to stats_.handles and stall its forwarding.
  if (tally != nullptr) *tally = {stats_.hits, handles};
  return {};
}

// ---- acquire --------------------------------------------------------------------------------------

bool RegionCache::collect_hit_locked(PageRange want, Held* held) {
  auto it = regions_.upper_bound(want.addr);
  if (it != regions_.begin()) {
    --it;  // the last region starting at or before want.addr
    uintptr_t cursor = want.addr;
    // Adjacent regions from there on, while each starts where the previous one ended.
    for (; it != regions_.end() && it->first <= cursor && it->second.range.end() > cursor; ++it) {
      held->push(&it->second);
      cursor = it->second.range.end();
      if (cursor >= want.end()) return true;
    }
  }
  held->count = 0;
  held->more.clear();
  return false;
}

uint64_t RegionCache::hold_hit_locked(const Held& held, bool* hit) {
  for (size_t i = 0; i < held.count; ++i) {
    Region* r = held.at(i);
    ++r->users;
    touch_locked(r);
  }
  if (hit != nullptr) *hit = true;
  return ++stats_.hits;
}

void RegionCache::touch_locked(Region* r) {
  // A region already on top stays there: no relinking (the common case of a hot buffer).
  if (r->pos != stack_.begin()) stack_.splice(stack_.begin(), stack_, r->pos);  // iterators stay valid
  r->evictfact = 0;
}

Result RegionCache::acquire(uintptr_t addr, size_t len, Handle* out, bool* hit, Tally* tally) {
  assert(out != nullptr);
  if (hit != nullptr) *hit = false;
  PageRange want;
  if (!page_range(addr, len, page_, &want)) return {Status::kInvalid};
  if (want.len > capacity_) return {Status::kTooLarge};
  if (config_.replacement == Replacement::kNoCache) return acquire_uncached(want, out, tally);
  {
    // The hit path: one spin-lock section; the covering regions go straight into a free slot of
    // the slab, inline up to kInlineRegions (beyond, into the slot's vector, whose capacity stays).
    std::lock_guard lock(state_);
    const uint32_t index = take_slot_locked();
    if (collect_hit_locked(want, &slots_[index].held)) {
      const uint64_t hits = hold_hit_locked(slots_[index].held, hit);
      *out = hand_out_locked(index);
      if (tally != nullptr) *tally = {hits, stats_.handles};  // `hits` from the register, as in release()
      return {};
    }
    put_slot_locked(index);  // never handed out: its generation stays
  }
  return acquire_slow(want, out, hit, tally);
}

Result RegionCache::acquire_slow(PageRange want, Handle* out, bool* hit, Tally* tally) {
  std::lock_guard slow(slow_mu_);  // nobody else registers or evicts until this acquire is done
  Held& held = scratch_;
  held.count = 0;
  held.more.clear();
  gaps_.clear();
  Evicted evicted;
  bool room = true;
  {
    std::lock_guard lock(state_);
    // Looked up again: another thread's miss may have registered the range since the hit path.
    if (collect_hit_locked(want, &held)) {
      (void)hold_hit_locked(held, hit);
      *out = remember_locked(held);
      if (tally != nullptr) *tally = tally_locked();
      return {};
    }
    // The cached regions overlapping the request, in address order, and the gaps between them.
    auto it = regions_.upper_bound(want.addr);
    if (it != regions_.begin() && std::prev(it)->second.range.end() > want.addr) --it;
    uintptr_t cursor = want.addr;
    for (; it != regions_.end() && it->first < want.end(); ++it) {
      Region& r = it->second;
      if (r.range.addr > cursor) gaps_.push_back({cursor, r.range.addr - cursor});
      held.push(&r);
      cursor = r.range.end();
    }
    if (cursor < want.end()) gaps_.push_back({cursor, want.end() - cursor});
    size_t gap_bytes = 0;
    for (const PageRange& g : gaps_) gap_bytes += g.len;
    // Hold the covering regions first, so making room cannot evict them (nor can another thread:
    // evicting needs slow_mu_, which this acquire holds until it is done).
    for (size_t i = 0; i < held.count; ++i) ++held.at(i)->users;
    if (stats_.pinned_bytes + gap_bytes > capacity_) room = make_room_locked(gap_bytes, &evicted);
    if (!room)
      for (size_t i = 0; i < held.count; ++i) --held.at(i)->users;
  }
  // The victims are out of the cache (room or not): their pages go before any gap is pinned.
  (void)unpin(evicted);  // an unpin error only means those pages are gone either way
  if (!room) return {Status::kNoSpace};
  const size_t covering = held.count;
  for (const PageRange& g : gaps_) {
    const Result r = pin(g);
    std::lock_guard lock(state_);
    if (!r.ok()) {
      for (size_t i = 0; i < held.count; ++i) --held.at(i)->users;  // new regions stay cached, unused
      return r;
    }
    // A new cached region at the top of the stack, in use once.
    auto [pos, inserted] = regions_.emplace(g.addr, Region{g, 1, 0, {}});
    assert(inserted);
    Region* reg = &pos->second;
    stack_.push_front(reg);
    reg->pos = stack_.begin();
    stats_.regions = regions_.size();
    held.push(reg);
  }
  std::lock_guard lock(state_);
  for (size_t i = 0; i < covering; ++i) touch_locked(held.at(i));
  if (covering == 0) ++stats_.misses;
  else ++stats_.partial_hits;
  *out = remember_locked(held);
  if (tally != nullptr) *tally = tally_locked();
  return {};
}

Result RegionCache::acquire_uncached(PageRange range, Handle* out, Tally* tally) {
  std::lock_guard slow(slow_mu_);
  {
    std::lock_guard lock(state_);
    if (stats_.pinned_bytes + range.len > capacity_) return {Status::kNoSpace};
  }
  if (Result r = pin(range); !r.ok()) return r;
  std::lock_guard lock(state_);
  ++stats_.misses;
  Held held;
  held.own = range;
  *out = remember_locked(held);
  if (tally != nullptr) *tally = tally_locked();
  return {};
}

// ---- the backend ----------------------------------------------------------------------------------

Result RegionCache::pin(PageRange range) {
  Result r = backend_.pin(range);
  if (r.status == Status::kPinFailed && (r.sys_errno == ENOMEM || r.sys_errno == EAGAIN)) {
    // The process-wide pin limit may be spent by others (other caches of this process): give back
    // our unused regions and try once more.
    Evicted unused;
    {
      std::lock_guard lock(state_);
      ++stats_.pin_failures;
      detach_unused_locked(&unused);
    }
    if (!unused.batch.empty()) {
      (void)unpin(unused);  // an unpin error only means those pages are gone either way
      r = backend_.pin(range);
    }
  }
  std::lock_guard lock(state_);
  if (!r.ok()) {
    ++stats_.pin_failures;
    return r;
  }
  ++stats_.registrations;
  stats_.registered_bytes += range.len;
  stats_.pinned_bytes += range.len;
  return {};
}

Result RegionCache::unpin(const Evicted& evicted) {
  if (evicted.batch.empty()) return {};
  if (!evicted.one_by_one) return backend_.unpin(evicted.batch);
  Result first{};
  for (const PageRange& r : evicted.batch)
    if (Result res = backend_.unpin({&r, 1}); !res.ok() && first.ok()) first = res;
  return first;
}

void RegionCache::detach_locked(const std::vector<Region*>& victims, Evicted* evicted) {
  if (victims.empty()) return;
  stats_.dereg_batches += evicted->one_by_one ? victims.size() : 1;
  for (Region* r : victims) {
    assert(r->users == 0);
    evicted->batch.push_back(r->range);
    ++stats_.deregistrations;
    stats_.deregistered_bytes += r->range.len;
    stats_.pinned_bytes -= r->range.len;
    stack_.erase(r->pos);
    regions_.erase(r->range.addr);
  }
  stats_.regions = regions_.size();
}

void RegionCache::detach_unused_locked(Evicted* evicted) {
  std::vector<Region*> unused;
  for (Region* r : stack_)
    if (r->users == 0) unused.push_back(r);
  detach_locked(unused, evicted);
}

Result RegionCache::invalidate(uintptr_t addr, size_t len) {
  PageRange range;
  if (!page_range(addr, len, page_, &range)) return {Status::kInvalid};
  std::lock_guard slow(slow_mu_);
  Evicted evicted;
  {
    std::lock_guard lock(state_);
    std::vector<Region*> victims;
    auto it = regions_.upper_bound(range.addr);
    if (it != regions_.begin() && std::prev(it)->second.range.end() > range.addr) --it;
    for (; it != regions_.end() && it->first < range.end(); ++it) {
      if (it->second.users > 0) return {Status::kBusy};
      victims.push_back(&it->second);
    }
    detach_locked(victims, &evicted);
  }
  return unpin(evicted);
}

Result RegionCache::flush() {
  std::lock_guard slow(slow_mu_);
  Evicted evicted;
  {
    std::lock_guard lock(state_);
    detach_unused_locked(&evicted);
  }
  return unpin(evicted);
}

Stats RegionCache::stats() const {
  std::lock_guard lock(state_);
  return stats_;
}

}  // namespace pd3::mrrc
