// replacement.cpp — how unused regions leave a full cache: MRE (the paper's Memory Resorting and
// Eviction) and LRU (the pin-down cache). Both run with the cache's state lock (and slow_mu_) held,
// never evict a region a held handle uses, and only take their victims out of the cache: the
// caller unpins them once the state lock is dropped.
#include <algorithm>
#include <cassert>

#include "mrrc/region_cache.hpp"

namespace pd3::mrrc {

bool RegionCache::make_room_locked(size_t bytes, Evicted* evicted) {
  if (stats_.pinned_bytes + bytes <= capacity_) return true;
  return config_.replacement == Replacement::kMre ? make_room_mre_locked(bytes, evicted)
                                                  : make_room_lru_locked(bytes, evicted);
}

// Pin-down cache: the least recently used unused regions, one deregistration each, until the
// request fits.
bool RegionCache::make_room_lru_locked(size_t bytes, Evicted* evicted) {
  const size_t need = stats_.pinned_bytes + bytes - capacity_;
  std::vector<Region*> victims;
  size_t freed = 0;
  for (auto it = stack_.rbegin(); it != stack_.rend() && freed < need; ++it) {
    if ((*it)->users > 0) continue;
    victims.push_back(*it);
    freed += (*it)->range.len;
  }
  evicted->one_by_one = true;
  detach_locked(victims, evicted);
  return stats_.pinned_bytes + bytes <= capacity_;
}

// MRE: resort the resorting section by eviction factor, then deregister its bottom (the eviction
// segment) in one batch: at least what the request needs and at least eviction_share of the
// capacity. Regions of the frequent section are taken only if the resorting section cannot free
// what the request needs.
bool RegionCache::make_room_mre_locked(size_t bytes, Evicted* evicted) {
  const size_t resorting = resort_locked();
  const size_t need = stats_.pinned_bytes + bytes - capacity_;
  const size_t batch = std::max(need, size_t(config_.eviction_share * double(capacity_)));
  std::vector<Region*> victims;
  size_t freed = 0;
  size_t position = 0;  // from the bottom
  for (auto it = stack_.rbegin(); it != stack_.rend(); ++it, ++position) {
    const size_t target = position < resorting ? batch : need;
    if (freed >= target) break;
    if ((*it)->users > 0) continue;
    victims.push_back(*it);
    freed += (*it)->range.len;
  }
  detach_locked(victims, evicted);
  return stats_.pinned_bytes + bytes <= capacity_;
}

// The regions below the frequent section get an eviction factor r + 1/s if they have none (s: the
// region's size in pages; r: the system recency value, the factor of the bottom region when the
// cache filled), then are sorted so that the smallest factor is at the bottom. Equal factors keep
// their LRU order. Returns how many regions the resorting section holds.
size_t RegionCache::resort_locked() {
  // r: the factor of the bottom-most region that can be evicted, if it has one (an unset factor is
  // not a recency yet, so r never moves backwards).
  for (auto it = stack_.rbegin(); it != stack_.rend(); ++it) {
    if ((*it)->users > 0) continue;
    if ((*it)->evictfact != 0) recency_ = (*it)->evictfact;
    break;
  }
  const size_t frequent_bytes = size_t(config_.frequent_share * double(capacity_));
  size_t top_bytes = 0;
  auto first = stack_.begin();
  while (first != stack_.end() && top_bytes < frequent_bytes) top_bytes += (*first++)->range.len;
  std::vector<Region*> section(first, stack_.end());
  for (Region* r : section)
    if (r->evictfact == 0) r->evictfact = recency_ + double(page_) / double(r->range.len);
  std::stable_sort(section.begin(), section.end(),
                   [](const Region* a, const Region* b) { return a->evictfact > b->evictfact; });
  for (Region* r : section) stack_.splice(stack_.end(), stack_, r->pos);  // relinked top to bottom
  return section.size();
}

}  // namespace pd3::mrrc
