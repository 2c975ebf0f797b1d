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
  std::lock_guard lock(mu_);
  std::vector<PageRange> all;
  for (auto& [start, r] : regions_) all.push_back(r.range);
  for (auto& [h, held] : held_)
    if (held.own.len != 0) all.push_back(held.own);
  if (!all.empty()) (void)backend_.unpin(all);  // nothing to report to in a destructor
}

Result RegionCache::pin_locked(PageRange range) {
  Result r = backend_.pin(range);
  if (r.status == Status::kPinFailed && (r.sys_errno == ENOMEM || r.sys_errno == EAGAIN)) {
    // The process-wide pin limit may be spent by others (other caches of this process): give back
    // our unused regions and try once more.
    ++stats_.pin_failures;
    std::vector<Region*> unused;
    for (Region* reg : stack_)
      if (reg->users == 0) unused.push_back(reg);
    if (!unused.empty()) {
      (void)evict_locked(unused);  // an unpin error only means those pages are gone either way
      r = backend_.pin(range);
    }
  }
  if (!r.ok()) {
    ++stats_.pin_failures;
    return r;
  }
  ++stats_.registrations;
  stats_.registered_bytes += range.len;
  stats_.pinned_bytes += range.len;
  return {};
}

Handle RegionCache::remember_locked(Held held) {
  const Handle h = next_handle_++;
  held_.emplace(h, std::move(held));
  stats_.handles = held_.size();
  return h;
}

Result RegionCache::acquire(uintptr_t addr, size_t len, Handle* out, bool* hit) {
  assert(out != nullptr);
  if (hit != nullptr) *hit = false;
  PageRange want;
  if (!page_range(addr, len, page_, &want)) return {Status::kInvalid};
  if (want.len > capacity_) return {Status::kTooLarge};
  std::lock_guard lock(mu_);
  if (config_.replacement == Replacement::kNoCache) return acquire_uncached_locked(want, out);

  // The cached regions overlapping the request, in address order (they start the handle's list,
  // so a hit allocates no vector of its own), and the gaps between them (gaps_, reused).
  Held held;
  std::vector<Region*>& regions = held.regions;
  gaps_.clear();
  auto it = regions_.upper_bound(want.addr);
  if (it != regions_.begin() && std::prev(it)->second.range.end() > want.addr) --it;
  uintptr_t cursor = want.addr;
  for (; it != regions_.end() && it->first < want.end(); ++it) {
    Region& r = it->second;
    if (r.range.addr > cursor) gaps_.push_back({cursor, r.range.addr - cursor});
    regions.push_back(&r);
    cursor = r.range.end();
  }
  if (cursor < want.end()) gaps_.push_back({cursor, want.end() - cursor});
  const size_t covering = regions.size();
  size_t gap_bytes = 0;
  for (const PageRange& g : gaps_) gap_bytes += g.len;

  // Hold the covering regions first, so making room cannot evict them.
  for (Region* r : regions) ++r->users;
  if (gap_bytes > 0 && stats_.pinned_bytes + gap_bytes > capacity_ && !make_room_locked(gap_bytes)) {
    for (Region* r : regions) --r->users;
    return {Status::kNoSpace};
  }
  for (const PageRange& g : gaps_) {
    if (Result r = register_gap_locked(g, &regions); !r.ok()) {
      for (Region* reg : regions) --reg->users;  // what this call registered stays cached, unused
      return r;
    }
  }
  for (size_t i = 0; i < covering; ++i) touch_locked(regions[i]);
  if (gaps_.empty()) {
    ++stats_.hits;
    if (hit != nullptr) *hit = true;
  } else if (covering == 0) {
    ++stats_.misses;
  } else {
    ++stats_.partial_hits;
  }
  *out = remember_locked(std::move(held));
  return {};
}

Result RegionCache::acquire_uncached_locked(PageRange range, Handle* out) {
  if (stats_.pinned_bytes + range.len > capacity_) return {Status::kNoSpace};
  if (Result r = pin_locked(range); !r.ok()) return r;
  ++stats_.misses;
  Held held;
  held.own = range;
  *out = remember_locked(std::move(held));
  return {};
}

Result RegionCache::register_gap_locked(PageRange gap, std::vector<Region*>* held) {
  if (Result r = pin_locked(gap); !r.ok()) return r;
  auto [it, inserted] = regions_.emplace(gap.addr, Region{gap, 0, 0, {}});
  assert(inserted);
  Region* reg = &it->second;
  reg->users = 1;
  stack_.push_front(reg);
  reg->pos = stack_.begin();
  stats_.regions = regions_.size();
  held->push_back(reg);
  return {};
}

void RegionCache::touch_locked(Region* r) {
  stack_.splice(stack_.begin(), stack_, r->pos);  // iterators stay valid across splice
  r->evictfact = 0;
}

Result RegionCache::release(Handle handle) {
  std::lock_guard lock(mu_);
  auto it = held_.find(handle);
  if (it == held_.end()) return {Status::kUnknownHandle};
  Held held = std::move(it->second);
  held_.erase(it);
  stats_.handles = held_.size();
  for (Region* r : held.regions) {
    assert(r->users > 0);
    --r->users;
  }
  if (held.own.len == 0) return {};
  Result r = backend_.unpin({&held.own, 1});
  ++stats_.deregistrations;
  ++stats_.dereg_batches;
  stats_.deregistered_bytes += held.own.len;
  stats_.pinned_bytes -= held.own.len;
  return r;
}

Result RegionCache::evict_locked(const std::vector<Region*>& victims) {
  if (victims.empty()) return {};
  std::vector<PageRange> batch;
  batch.reserve(victims.size());
  for (Region* r : victims) {
    assert(r->users == 0);
    batch.push_back(r->range);
  }
  Result res = backend_.unpin(batch);
  ++stats_.dereg_batches;
  for (Region* r : victims) {
    stats_.deregistrations++;
    stats_.deregistered_bytes += r->range.len;
    stats_.pinned_bytes -= r->range.len;
    stack_.erase(r->pos);
    regions_.erase(r->range.addr);
  }
  stats_.regions = regions_.size();
  return res;
}

Result RegionCache::invalidate(uintptr_t addr, size_t len) {
  PageRange range;
  if (!page_range(addr, len, page_, &range)) return {Status::kInvalid};
  std::lock_guard lock(mu_);
  std::vector<Region*> victims;
  auto it = regions_.upper_bound(range.addr);
  if (it != regions_.begin() && std::prev(it)->second.range.end() > range.addr) --it;
  for (; it != regions_.end() && it->first < range.end(); ++it) {
    if (it->second.users > 0) return {Status::kBusy};
    victims.push_back(&it->second);
  }
  return evict_locked(victims);
}

Result RegionCache::flush() {
  std::lock_guard lock(mu_);
  std::vector<Region*> unused;
  for (Region* r : stack_)
    if (r->users == 0) unused.push_back(r);
  return evict_locked(unused);
}

Stats RegionCache::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace pd3::mrrc
