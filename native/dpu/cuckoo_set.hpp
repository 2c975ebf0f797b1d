// cuckoo_set.hpp — one Host View shard: a set of 64-bit key hashes in a bucketized cuckoo table
// (paper §5.2, Fig. 4-5). Two candidate buckets per key, 8 slots per 64-byte bucket compared with
// one SIMD pass, batched lookups that prefetch first buckets for the whole batch and hash and
// search second buckets only for keys not yet found, a bounded random kick path with a small
// stash, and huge pages where the OS grants them. Single-threaded: one shard, one owner thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "dpu/huge_alloc.hpp"
#include "dpu/simd_match.hpp"

namespace pd3 {

// How a CuckooSet is built; every optimisation can be switched off for the ablation.
struct CuckooOptions {
  uint64_t capacity = 0;         // keys the table must hold at `max_load`
  double max_load = 0.8;         // capacity / slots
  SimdPath simd = SimdPath::kBest;
  bool huge_pages = true;        // ask for huge pages (falls back silently, see pages())
  bool batched = true;           // Fig. 5: hash and prefetch a whole batch before searching
  bool delayed_second = true;    // Fig. 5: second bucket hashed and searched only for misses
  uint32_t batch = 128;          // keys per batched pass (1..kMaxBatch); 128 measured best (benchmarks.md)
  uint32_t max_kicks = 500;      // random-walk length before the stash is used (at most 1024)
  uint64_t seed = 0x5eed;        // kick-path randomness
};

// A set of 64-bit key hashes (0 is stored as 1: the empty-slot marker).
class CuckooSet {
 public:
  static constexpr uint32_t kSlots = 8;       // u64 slots per bucket: one cache line
  static constexpr uint32_t kStash = 16;      // keys that found no bucket after max_kicks
  static constexpr uint32_t kMaxBatch = 256;

  // Sizes the table for options.capacity keys at options.max_load. Returns PD3_OK, PD3_E_INVAL
  // (capacity 0, load outside (0, 0.98], batch outside 1..256, SIMD path not supported here) or
  // PD3_E_NOMEM.
  static int create(const CuckooOptions& options, std::unique_ptr<CuckooSet>* out);

  bool contains(uint64_t key_hash) const;
  // Fig. 5 over `n` keys (any n; processed `batch` at a time): out[i] = 1 if hashes[i] is present.
  void contains_batch(const uint64_t* hashes, size_t n, uint8_t* out) const;
  // Adds a key. Returns PD3_OK (added, or already present: never duplicated) or PD3_E_NOSPACE when
  // the kick path ran out and the stash is full; the table is then exactly as before the call.
  int insert(uint64_t key_hash);
  // Removes a key; true if it was present.
  bool erase(uint64_t key_hash);

  uint64_t size() const { return size_; }
  uint64_t buckets() const { return buckets_; }
  uint64_t bytes() const { return memory_.bytes(); }
  uint32_t stashed() const { return stash_size_; }
  PageKind pages() const { return memory_.kind(); }
  SimdPath simd() const { return simd_; }
  const CuckooOptions& options() const { return options_; }

  ~CuckooSet() = default;

 private:
  CuckooSet(const CuckooOptions& o, HugeMemory mem, uint64_t buckets, SimdPath simd);

  uint64_t* bucket(uint64_t b) const { return slots_ + b * kSlots; }
  uint64_t first_bucket(uint64_t h) const;
  uint64_t second_bucket(uint64_t h) const;
  uint64_t other_bucket(uint64_t h, uint64_t b) const;
  bool find_in(uint64_t b, uint64_t h) const { return match_(bucket(b), h) != 0; }
  bool in_stash(uint64_t h) const;
  bool place(uint64_t b, uint64_t h);  // into a free slot of b; false if b is full
  void contains_chunk(const uint64_t* hashes, size_t n, uint8_t* out) const;

  CuckooOptions options_;
  HugeMemory memory_;
  uint64_t* slots_;
  uint64_t buckets_;
  SimdPath simd_;
  MatchFn match_;
  uint64_t size_ = 0;
  uint64_t stash_[kStash] = {};
  uint32_t stash_size_ = 0;
  uint64_t rng_;
};

// The 64-bit hash Host View stores for a key of any length (one pass, well mixed; a collision
// only loses a prefetch, docs/architecture.md §5).
uint64_t host_view_key_hash(const void* key, size_t len);

}  // namespace pd3
