// record_cache.cpp — sharded map + CLOCK. A shard's mutex is held only for map operations, never
// across I/O.
#include "record_cache.hpp"

namespace pd3::hashmap {

namespace {

// Shards: enough that worker threads rarely meet on one, few enough that each holds many records
// (CLOCK needs a ring to choose from).
uint32_t shard_count_for(uint64_t capacity) {
  uint32_t n = 64;
  while (n > 1 && capacity != 0 && capacity / n < 64) n /= 2;
  return n;
}

}  // namespace

RecordCache::RecordCache(uint64_t capacity)
    : capacity_(capacity),
      shard_count_(shard_count_for(capacity)),
      per_shard_(capacity == 0 ? 0 : (capacity + shard_count_ - 1) / shard_count_),
      shards_(new Shard[shard_count_]) {}

uint64_t RecordCache::size() const {
  uint64_t n = 0;
  for (uint32_t i = 0; i < shard_count_; ++i) {
    std::lock_guard<std::mutex> g(shards_[i].mu);
    n += shards_[i].records.size();
  }
  return n;
}

bool RecordCache::get(uint64_t key, KeyHash h, CachedRecord* out) {
  Shard& s = shard(h);
  std::lock_guard<std::mutex> g(s.mu);
  const auto it = s.index.find(key);
  if (it == s.index.end()) return false;
  CachedRecord& r = s.records[it->second];
  *out = r;
  r.referenced = true;
  r.prefetched = false;
  return true;
}

bool RecordCache::update(uint64_t key, KeyHash h, uint64_t value) {
  Shard& s = shard(h);
  std::lock_guard<std::mutex> g(s.mu);
  const auto it = s.index.find(key);
  if (it == s.index.end()) return false;
  CachedRecord& r = s.records[it->second];
  r.value = value;
  r.dirty = true;
  r.referenced = true;
  r.prefetched = false;
  return true;
}

bool RecordCache::contains(uint64_t key, KeyHash h) const {
  Shard& s = shard(h);
  std::lock_guard<std::mutex> g(s.mu);
  return s.index.count(key) != 0;
}

void RecordCache::remove_at(Shard& s, uint32_t at) {
  s.index.erase(s.records[at].key);
  const uint32_t last = uint32_t(s.records.size() - 1);
  if (at != last) {
    s.records[at] = s.records[last];
    s.index[s.records[at].key] = at;
  }
  s.records.pop_back();
  if (s.hand >= s.records.size()) s.hand = 0;
}

bool RecordCache::take(uint64_t key, KeyHash h, CachedRecord* out) {
  Shard& s = shard(h);
  std::lock_guard<std::mutex> g(s.mu);
  const auto it = s.index.find(key);
  if (it == s.index.end()) return false;
  *out = s.records[it->second];
  remove_at(s, it->second);
  return true;
}

void RecordCache::insert(const CachedRecord& r, KeyHash h) {
  Shard& s = shard(h);
  std::lock_guard<std::mutex> g(s.mu);
  s.index.emplace(r.key, uint32_t(s.records.size()));
  s.records.push_back(r);
}

bool RecordCache::full(KeyHash h) const {
  if (per_shard_ == 0) return false;
  Shard& s = shard(h);
  std::lock_guard<std::mutex> g(s.mu);
  return s.records.size() >= per_shard_;
}

bool RecordCache::pick_victim(KeyHash h, const std::function<bool(uint64_t key)>& can_take, CachedRecord* out) {
  Shard& s = shard(h);
  std::lock_guard<std::mutex> g(s.mu);
  // Two sweeps clear every referenced bit once and reach every record at least once more.
  const size_t steps = 2 * s.records.size() + 1;
  for (size_t i = 0; i < steps && !s.records.empty(); ++i) {
    if (s.hand >= s.records.size()) s.hand = 0;
    CachedRecord& r = s.records[s.hand++];
    if (r.referenced) {
      r.referenced = false;
      continue;
    }
    if (!can_take(r.key)) continue;
    *out = r;
    return true;
  }
  return false;
}

void RecordCache::erase(uint64_t key, KeyHash h) {
  Shard& s = shard(h);
  std::lock_guard<std::mutex> g(s.mu);
  const auto it = s.index.find(key);
  if (it != s.index.end()) remove_at(s, it->second);
}

}  // namespace pd3::hashmap
