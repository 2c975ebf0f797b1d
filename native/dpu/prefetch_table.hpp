// prefetch_table.hpp — the prefetcher's prefetches between a client READ and their answer: one entry
// per 14-bit prefetch id, and an index from key to the entry that is still live for it (dedup and
// cancellation). Single-threaded (the Transfer Engine's thread).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace pd3 {

// Where an entry is in its life.
enum class PrefetchState : uint8_t {
  kFree,
  kLookup,    // waiting for its Host View lookup
  kReady,     // waiting to be routed and sent (or to finish sending: the port said "not now")
  kInflight,  // sent to every server it goes to; waiting for their answers
};

// One prefetch. The id is its index in the table.
struct PrefetchEntry {
  std::string key;
  uint64_t hash = 0;        // host_view_key_hash(key)
  uint64_t capture_ns = 0;  // of the client READ that asked for it (lead time)
  uint32_t gen = 0;         // bumped on every release: tells stale batch and queue references apart
  PrefetchState state = PrefetchState::kFree;
  bool indexed = false;     // the key index points here (live: not cancelled)
  bool routed = false;      // `unsent` holds the servers it goes to
  bool broadcast = false;   // sent to every server up: the key's server is unknown
  bool sent_any = false;    // at least one server has the request: its answer may predate a flush
  bool incomplete = false;  // a server it was meant for failed before answering
  bool held_dropped = false;  // an OK answer could not be kept (broadcast hold budget)
  uint32_t unsent = 0;      // servers (bit = id) still to send to
  uint32_t waiting = 0;     // servers sent to that have not answered
  uint32_t oks = 0;         // answers with the item
  uint32_t dest_small = 0;  // answers PD3_E_DEST_SMALL: that server holds the key too
  uint32_t failed = 0;      // answers with any other error, or malformed
  std::vector<uint8_t> held;  // broadcast: the data of the one OK answer so far
};

// Entries by id, a FIFO of free ids, and the key index.
class PrefetchTable {
 public:
  // `entries`: 1..16384 (ids are 14-bit).
  explicit PrefetchTable(uint32_t entries);

  // The live entry of a key, or -1.
  int find(std::string_view key, uint64_t hash) const;
  // Takes the free id freed longest ago, gives it the key and indexes it; -1 if none is free.
  // The key must not have a live entry.
  int acquire(std::string_view key, uint64_t hash, uint64_t capture_ns);
  // Removes the entry from the key index (it was cancelled: a new READ may start another one).
  void unindex(uint32_t id);
  // Frees the entry and its id (unindexes it if needed).
  void release(uint32_t id);

  PrefetchEntry& at(uint32_t id) { return entries_[id]; }
  uint32_t size() const { return uint32_t(entries_.size()); }
  uint32_t in_use() const { return in_use_; }

 private:
  uint64_t home(uint64_t hash) const { return (hash * 0x9E3779B97F4A7C15ull) >> shift_; }

  std::vector<PrefetchEntry> entries_;
  std::vector<uint16_t> free_;  // ring of free ids, oldest first
  uint32_t free_head_ = 0;
  uint32_t free_count_ = 0;
  uint32_t in_use_ = 0;
  std::vector<uint16_t> index_;  // open addressing: id + 1 of a live entry, 0 = empty
  uint64_t index_mask_;
  uint32_t shift_;
};

}  // namespace pd3
