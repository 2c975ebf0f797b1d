// cuckoo_set.cpp — the Host View table: placement, Fig. 5 batched lookup, kick path with stash.
#include "dpu/cuckoo_set.hpp"

#include <cmath>
#include <cstring>

#include "pd3/status.h"

namespace pd3 {

namespace {

// 0 marks an empty slot, so the key hash 0 is stored as 1 (a collision: it only loses a prefetch).
inline uint64_t stored(uint64_t h) { return h | uint64_t(h == 0); }

// Maps 32 random bits onto [0, n) without a division (Lemire's multiply-shift).
inline uint64_t range32(uint64_t bits32, uint64_t n) { return (bits32 * n) >> 32; }

inline uint64_t mix(uint64_t x) {
  x ^= x >> 31;
  x *= 0x7FB5D329728EA185ull;
  x ^= x >> 27;
  x *= 0x81DADEF4BC2DD44Dull;
  return x ^ (x >> 33);
}

}  // namespace

uint64_t host_view_key_hash(const void* key, size_t len) {
  // 8 bytes at a time, each word mixed into the state with a multiply-rotate; the length seeds it.
  const auto* p = static_cast<const uint8_t*>(key);
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t(len) * 0xC2B2AE3D27D4EB4Full);
  size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ mix(w)) * 0x9FB21C651E98DF25ull;
    h = (h << 29) | (h >> 35);
  }
  uint64_t tail = 0;
  if (len > i) std::memcpy(&tail, p + i, len - i);  // an empty key may come with a null pointer
  return mix(h ^ mix(tail ^ (uint64_t(len - i) << 56)));
}

int CuckooSet::create(const CuckooOptions& o, std::unique_ptr<CuckooSet>* out) {
  if (o.capacity == 0 || !(o.max_load > 0 && o.max_load <= 0.98) || o.batch == 0 || o.batch > kMaxBatch)
    return PD3_E_INVAL;
  const SimdPath simd = o.simd == SimdPath::kBest ? best_simd_path() : o.simd;
  if (!simd_supported(simd)) return PD3_E_INVAL;
  const double want = std::ceil(double(o.capacity) / o.max_load / kSlots);
  if (want >= double(1ull << 32)) return PD3_E_INVAL;  // bucket indexes are 32-bit ranges
  const uint64_t buckets = uint64_t(want) < 2 ? 2 : uint64_t(want);
  HugeMemory mem = HugeMemory::map(buckets * kSlots * sizeof(uint64_t), o.huge_pages);
  if (mem.data() == nullptr) return PD3_E_NOMEM;
  out->reset(new CuckooSet(o, std::move(mem), buckets, simd));
  return PD3_OK;
}

CuckooSet::CuckooSet(const CuckooOptions& o, HugeMemory mem, uint64_t buckets, SimdPath simd)
    : options_(o),
      memory_(std::move(mem)),
      slots_(static_cast<uint64_t*>(memory_.data())),
      buckets_(buckets),
      simd_(simd),
      match_(simd_match(simd)),
      rng_(o.seed | 1) {}

uint64_t CuckooSet::first_bucket(uint64_t h) const { return range32(h >> 32, buckets_); }

uint64_t CuckooSet::second_bucket(uint64_t h) const {
  const uint64_t b1 = first_bucket(h);
  const uint64_t b2 = range32(mix(h) >> 32, buckets_);
  return b2 != b1 ? b2 : (b1 + 1 == buckets_ ? 0 : b1 + 1);  // always two distinct candidates
}

uint64_t CuckooSet::other_bucket(uint64_t h, uint64_t b) const {
  const uint64_t b1 = first_bucket(h);
  return b == b1 ? second_bucket(h) : b1;
}

bool CuckooSet::in_stash(uint64_t h) const {
  for (uint32_t i = 0; i < stash_size_; ++i)
    if (stash_[i] == h) return true;
  return false;
}

bool CuckooSet::place(uint64_t b, uint64_t h) {
  const uint32_t empty = match_(bucket(b), 0);
  if (empty == 0) return false;
  bucket(b)[__builtin_ctz(empty)] = h;
  return true;
}

bool CuckooSet::contains(uint64_t key_hash) const {
  const uint64_t h = stored(key_hash);
  return find_in(first_bucket(h), h) || find_in(second_bucket(h), h) || (stash_size_ && in_stash(h));
}

void CuckooSet::contains_chunk(const uint64_t* hashes, size_t n, uint8_t* out) const {
  uint64_t b1[kMaxBatch], b2[kMaxBatch];
  // Fig. 5 lines 2-4: first buckets of the whole batch, prefetched before any search.
  for (size_t i = 0; i < n; ++i) {
    b1[i] = first_bucket(stored(hashes[i]));
    __builtin_prefetch(bucket(b1[i]));
    if (!options_.delayed_second) {
      b2[i] = second_bucket(stored(hashes[i]));
      __builtin_prefetch(bucket(b2[i]));
    }
  }
  // Lines 5-6: search them.
  for (size_t i = 0; i < n; ++i) out[i] = find_in(b1[i], stored(hashes[i]));
  if (options_.delayed_second) {
    // Lines 7-13: hash, prefetch and search second buckets only for keys not found.
    for (size_t i = 0; i < n; ++i)
      if (!out[i]) {
        b2[i] = second_bucket(stored(hashes[i]));
        __builtin_prefetch(bucket(b2[i]));
      }
  }
  for (size_t i = 0; i < n; ++i)
    if (!out[i]) out[i] = find_in(b2[i], stored(hashes[i])) || (stash_size_ && in_stash(stored(hashes[i])));
}

void CuckooSet::contains_batch(const uint64_t* hashes, size_t n, uint8_t* out) const {
  if (!options_.batched) {
    for (size_t i = 0; i < n; ++i) out[i] = contains(hashes[i]);
    return;
  }
  for (size_t at = 0; at < n; at += options_.batch) {
    const size_t m = n - at < options_.batch ? n - at : options_.batch;
    contains_chunk(hashes + at, m, out + at);
  }
}

int CuckooSet::insert(uint64_t key_hash) {
  const uint64_t h = stored(key_hash);
  if (contains(h)) return PD3_OK;
  const uint64_t b1 = first_bucket(h), b2 = second_bucket(h);
  if (place(b1, h) || place(b2, h)) {
    ++size_;
    return PD3_OK;
  }
  // Random walk: put the homeless key into a random slot, evict its occupant, move that one to its
  // other bucket, until some key finds a free slot. The path is kept so it can be undone.
  struct Step {
    uint64_t b;
    uint32_t slot;
  };
  Step path[1024];
  const uint32_t kicks = options_.max_kicks < 1024 ? options_.max_kicks : 1024;
  uint64_t homeless = h;
  uint64_t b = (rng_ & 1) ? b1 : b2;
  for (uint32_t k = 0; k < kicks; ++k) {
    rng_ ^= rng_ << 13, rng_ ^= rng_ >> 7, rng_ ^= rng_ << 17;  // xorshift64
    const uint32_t slot = uint32_t(rng_ % kSlots);
    path[k] = {b, slot};
    const uint64_t victim = bucket(b)[slot];
    bucket(b)[slot] = homeless;
    homeless = victim;
    b = other_bucket(homeless, b);
    if (place(b, homeless)) {
      ++size_;
      return PD3_OK;
    }
    if (k + 1 == kicks) {
      if (stash_size_ < kStash) {
        stash_[stash_size_++] = homeless;
        ++size_;
        return PD3_OK;
      }
      // Out of room: undo the walk in reverse so every key is back where it was.
      for (uint32_t j = k + 1; j-- > 0;) {
        uint64_t& cell = bucket(path[j].b)[path[j].slot];
        const uint64_t moved = cell;
        cell = homeless;
        homeless = moved;
      }
      return PD3_E_NOSPACE;  // homeless == h again
    }
  }
  // max_kicks == 0: no walk allowed, but the stash still takes the key.
  if (stash_size_ < kStash) {
    stash_[stash_size_++] = h;
    ++size_;
    return PD3_OK;
  }
  return PD3_E_NOSPACE;
}

bool CuckooSet::erase(uint64_t key_hash) {
  const uint64_t h = stored(key_hash);
  for (const uint64_t b : {first_bucket(h), second_bucket(h)}) {
    if (const uint32_t m = match_(bucket(b), h)) {
      bucket(b)[__builtin_ctz(m)] = 0;
      --size_;
      return true;
    }
  }
  for (uint32_t i = 0; i < stash_size_; ++i)
    if (stash_[i] == h) {
      stash_[i] = stash_[--stash_size_];
      --size_;
      return true;
    }
  return false;
}

}  // namespace pd3
