// record_cache.hpp — the local cache: the few records the host keeps in local memory, sharded by
// key hash, each shard a map plus a CLOCK ring for eviction. Only the cache's own consistency is
// handled here; when a record may be changed, cached or evicted is decided by the table under the
// key's stripe lock (hash_table.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "key_hash.hpp"

namespace pd3::hashmap {

// One cached record.
struct CachedRecord {
  uint64_t key = 0;
  uint64_t value = 0;
  uint64_t slot = 0;    // where the record lives remotely (write-backs go there)
  bool dirty = false;       // newer than the remote copy
  bool referenced = false;  // CLOCK bit
  bool prefetched = false;  // brought in by a prefetch (Leap) and not used since
};

// Sharded record cache. `capacity` 0 means unbounded (the local mode).
class RecordCache {
 public:
  explicit RecordCache(uint64_t capacity);

  uint64_t capacity() const { return capacity_; }
  uint64_t size() const;

  // A copy of `key`'s record, if cached; marks it referenced and used (clears `prefetched` in the
  // cache, the copy keeps the old flag).
  bool get(uint64_t key, KeyHash h, CachedRecord* out);
  // Replaces the value of a cached key and marks it dirty; false if not cached.
  bool update(uint64_t key, KeyHash h, uint64_t value);
  bool contains(uint64_t key, KeyHash h) const;
  // Removes `key`; returns its record in *out if it was cached.
  bool take(uint64_t key, KeyHash h, CachedRecord* out);
  // Adds a record (the caller made room first and knows the key is not cached).
  void insert(const CachedRecord& r, KeyHash h);

  // True if the shard of `h` is at capacity (inserting there needs an eviction first).
  bool full(KeyHash h) const;
  // Picks a victim in the shard of `h` by CLOCK among records for which `can_take(key)` says yes
  // (it takes the victim's stripe lock). Leaves it cached: the caller writes it back, then erases
  // it. False if no record could be taken.
  bool pick_victim(KeyHash h, const std::function<bool(uint64_t key)>& can_take, CachedRecord* out);
  // Removes `key` (a victim picked before).
  void erase(uint64_t key, KeyHash h);

 private:
  // One shard: records in a vector (the CLOCK ring) and key → index.
  struct Shard {
    mutable std::mutex mu;
    std::unordered_map<uint64_t, uint32_t> index;
    std::vector<CachedRecord> records;
    size_t hand = 0;
  };

  Shard& shard(KeyHash h) const { return shards_[h.shard(shard_count_)]; }
  static void remove_at(Shard& s, uint32_t at);

  uint64_t capacity_;
  uint32_t shard_count_;
  uint64_t per_shard_;  // 0 = unbounded
  std::unique_ptr<Shard[]> shards_;
};

}  // namespace pd3::hashmap
