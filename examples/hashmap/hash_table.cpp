// hash_table.cpp — the operations. Ordering rules (why reads never see stale data):
//  - every change to a key's cache entry, control byte or remote slot happens under its stripe
//    lock, and evicting a key takes its stripe too (try-lock, so no thread ever waits for a second
//    stripe while holding one);
//  - a write-back is issued before its record leaves the cache, so any later read of the key is
//    issued after it and (rings and direct connections keep issue order) sees it.
#include "hash_table.hpp"

namespace pd3::hashmap {

namespace {

constexpr uint32_t kNoStripe = UINT32_MAX;

}  // namespace

HashTable::HashTable(const SlotLayout& layout, uint64_t cache_records)
    : layout_(&layout), control_(layout.slots()), cache_(cache_records) {}

HashTable::HashTable() : layout_(nullptr), control_(0), cache_(0) {}

EntryStatus HashTable::find_existing(WorkerContext& w, uint64_t key, KeyHash h, Found* found) {
  control_.candidates(h, &w.candidates);
  if (w.candidates.empty()) {
    w.stats->add(&Stats::absent_local);
    return EntryStatus::kNotFound;
  }
  if (const EntryStatus s = lookup(w, key, h, found); s != EntryStatus::kOk) return s;
  return found->present ? EntryStatus::kOk : EntryStatus::kNotFound;
}

EntryStatus HashTable::lookup(WorkerContext& w, uint64_t key, KeyHash h, Found* found) {
  w.stats->add(&Stats::misses);
  if (w.miss->fetch(key, h, w.candidates, found) != PD3_OK) return EntryStatus::kRemoteError;
  return EntryStatus::kOk;
}

EntryStatus HashTable::get(WorkerContext& w, uint64_t key, uint64_t* value) {
  const KeyHash h = KeyHash::of(key);
  StripeGuard guard(stripes_, h.stripe(Stripes::kKeyStripes));
  CachedRecord cached;
  if (cache_.get(key, h, &cached)) {
    w.stats->add(&Stats::local_hits);
    if (cached.prefetched) w.miss->prefetch_used(cached.slot);
    *value = cached.value;
    return EntryStatus::kOk;
  }
  if (!remote()) return EntryStatus::kNotFound;
  Found f;
  if (const EntryStatus s = find_existing(w, key, h, &f); s != EntryStatus::kOk) return s;
  cache_insert(w, {key, f.value, f.slot, false, true, false}, h);
  *value = f.value;
  return EntryStatus::kOk;
}

EntryStatus HashTable::put(WorkerContext& w, uint64_t key, uint64_t value) {
  const KeyHash h = KeyHash::of(key);
  StripeGuard guard(stripes_, h.stripe(Stripes::kKeyStripes));
  if (cache_.update(key, h, value)) {
    w.stats->add(&Stats::local_hits);
    return EntryStatus::kOk;
  }
  if (!remote()) {
    cache_.insert({key, value, 0, true, true, false}, h);
    w.stats->add(&Stats::inserts);
    return EntryStatus::kOk;
  }
  control_.candidates(h, &w.candidates);
  if (!w.candidates.empty()) {
    // The key may be stored already: its slot is needed (an insert elsewhere would duplicate it).
    Found f;
    if (const EntryStatus s = lookup(w, key, h, &f); s != EntryStatus::kOk) return s;
    if (f.present) {
      cache_insert(w, {key, value, f.slot, true, true, false}, h);
      return EntryStatus::kOk;
    }
  } else {
    w.stats->add(&Stats::absent_local);
  }
  // A new key: claim a slot. Nothing is written remotely until the record is evicted.
  uint64_t slot;
  if (!control_.claim(h, &slot)) {
    w.stats->add(&Stats::table_full);
    return EntryStatus::kFull;
  }
  w.stats->add(&Stats::inserts);
  cache_insert(w, {key, value, slot, true, true, false}, h);
  return EntryStatus::kOk;
}

EntryStatus HashTable::del(WorkerContext& w, uint64_t key) {
  const KeyHash h = KeyHash::of(key);
  const uint32_t stripe = h.stripe(Stripes::kKeyStripes);
  StripeGuard guard(stripes_, stripe);
  CachedRecord r;
  const bool cached = cache_.take(key, h, &r);
  if (cached) w.stats->add(&Stats::local_hits);
  if (!remote()) return cached ? EntryStatus::kOk : EntryStatus::kNotFound;
  uint64_t slot = r.slot;
  if (!cached) {
    Found f;
    if (const EntryStatus s = find_existing(w, key, h, &f); s != EntryStatus::kOk) return s;
    slot = f.slot;
  }
  // The tombstone carries the key: the agent withdraws the key's Loading Zone items when it takes
  // this flush, and the memory server no longer answers prefetches of it with a value.
  // The slot becomes reusable only after the tombstone is issued, so a later record written to it
  // is issued after the tombstone and lands on top of it.
  uint8_t bytes[kSlotBytes];
  encode_tombstone(bytes, key);
  const int rc = w.channel->write_slot(slot, bytes, stripe);
  control_.bury(slot);
  return rc == PD3_OK ? EntryStatus::kOk : EntryStatus::kRemoteError;
}

void HashTable::evict(WorkerContext& w, const CachedRecord& victim) {
  const KeyHash vh = KeyHash::of(victim.key);
  uint8_t bytes[kSlotBytes];
  encode_live(bytes, victim.key, victim.value);
  // Clean records are written too: the flush is how the agent learns the host dropped the key.
  // A failed write-back is counted (write_errors); the record is dropped anyway.
  w.channel->write_slot(victim.slot, bytes, vh.stripe(Stripes::kKeyStripes));
  w.stats->add(&Stats::evictions);
  cache_.erase(victim.key, vh);
}

void HashTable::cache_insert(WorkerContext& w, const CachedRecord& r, KeyHash h) {
  const uint32_t held = h.stripe(Stripes::kKeyStripes);
  while (cache_.full(h)) {
    uint32_t locked = kNoStripe;
    const auto can_take = [&](uint64_t key) {
      const uint32_t s = KeyHash::of(key).stripe(Stripes::kKeyStripes);
      if (s == held) return true;
      if (!stripes_.try_lock(s)) return false;
      locked = s;
      return true;
    };
    CachedRecord victim;
    // Every record of the shard busy in another thread: go over capacity rather than wait.
    if (!cache_.pick_victim(h, can_take, &victim)) break;
    evict(w, victim);
    if (locked != kNoStripe) stripes_.unlock(locked);
  }
  cache_.insert(r, h);
}

bool HashTable::admit(WorkerContext& w, uint64_t slot, uint64_t key, uint64_t value, uint64_t writes_at_issue) {
  const KeyHash h = KeyHash::of(key);
  const uint32_t stripe = h.stripe(Stripes::kKeyStripes);
  if (!stripes_.try_lock(stripe)) return false;
  // Still the key's record: no write to its slot since the read was issued, the slot still holds
  // this key's fingerprint, and the cache has no (possibly newer) copy.
  const bool current = stripes_.writes(slot) == writes_at_issue && control_.matches(slot, h) && !cache_.contains(key, h);
  if (current) cache_insert(w, {key, value, slot, false, false, true}, h);
  stripes_.unlock(stripe);
  return current;
}

bool HashTable::place(uint64_t key, uint64_t* slot) { return control_.claim(KeyHash::of(key), slot); }

bool HashTable::preload(const CachedRecord& r) {
  const KeyHash h = KeyHash::of(r.key);
  if (cache_.full(h)) return false;
  cache_.insert(r, h);
  return true;
}

}  // namespace pd3::hashmap
