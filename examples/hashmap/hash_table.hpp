// hash_table.hpp — the paper's hash map (§8): open addressing with linear probing over 8-byte keys
// and values. The slots live in remote memory as pd3/record.h records (slot_layout.hpp); local
// memory holds one control byte per slot (control_bytes.hpp) and a small cache of records
// (record_cache.hpp). GET / PUT / DEL run under the key's stripe lock; a key that is neither cached
// nor ruled out by its control bytes is a miss, resolved by the worker's MissPath (the mode).
// Evicted records are written back (flushed) even when clean: the flush tells the agent that the
// host no longer holds the key (docs/architecture.md §8).
#pragma once

#include <cstdint>
#include <vector>

#include "control_bytes.hpp"
#include "host_channel.hpp"
#include "miss_path.hpp"
#include "protocol.hpp"
#include "record_cache.hpp"
#include "slot_layout.hpp"
#include "stats.hpp"
#include "stripes.hpp"

namespace pd3::hashmap {

// What one worker thread brings to an operation. In the local mode channel and miss are null.
struct WorkerContext {
  HostChannel* channel = nullptr;
  MissPath* miss = nullptr;
  Stats* stats = nullptr;
  std::vector<uint64_t> candidates;  // scratch
};

// The table shared by every worker.
class HashTable {
 public:
  // Remote table over `layout` with a cache of `cache_records` (≥ 1).
  HashTable(const SlotLayout& layout, uint64_t cache_records);
  // Local mode: every record in the (unbounded) cache, nothing remote.
  HashTable();

  bool remote() const { return layout_ != nullptr; }

  EntryStatus get(WorkerContext& w, uint64_t key, uint64_t* value);
  EntryStatus put(WorkerContext& w, uint64_t key, uint64_t value);
  EntryStatus del(WorkerContext& w, uint64_t key);

  // A record read ahead of need (Leap) from `slot`, whose write count was `writes_at_issue` when
  // the read was issued: cached (clean) if it is still the key's current record and not cached
  // yet. Called holding no lock. Returns true if cached.
  bool admit(WorkerContext& w, uint64_t slot, uint64_t key, uint64_t value, uint64_t writes_at_issue);

  // Bulk load, before any worker runs: the slot a new key goes to (false if the table is full).
  bool place(uint64_t key, uint64_t* slot);
  // Bulk load: caches a record without evicting (false if its shard is full).
  bool preload(const CachedRecord& r);

  const SlotLayout* layout() const { return layout_; }
  Stripes& stripes() { return stripes_; }
  const ControlBytes& control() const { return control_; }
  RecordCache& cache() { return cache_; }

 private:
  // Caches `r`, evicting (and writing back) records of its shard first while the shard is full.
  // The caller holds r.key's stripe lock.
  void cache_insert(WorkerContext& w, const CachedRecord& r, KeyHash h);
  // Writes a picked victim back to its slot and drops it from the cache. The caller holds its
  // stripe lock.
  void evict(WorkerContext& w, const CachedRecord& victim);
  // Finds an uncached key remotely. kOk with *found, or kRemoteError.
  EntryStatus lookup(WorkerContext& w, uint64_t key, KeyHash h, Found* found);
  // An uncached key that must exist: kOk with *found present, kNotFound when no slot's control
  // byte matches it (counted as absent_local, no remote access) or the slots read do not hold
  // it, or kRemoteError.
  EntryStatus find_existing(WorkerContext& w, uint64_t key, KeyHash h, Found* found);

  const SlotLayout* layout_;
  ControlBytes control_;
  RecordCache cache_;
  Stripes stripes_;
};

}  // namespace pd3::hashmap
