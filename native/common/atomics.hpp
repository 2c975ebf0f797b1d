// atomics.hpp — atomic access to plain fields of shared-memory structs, and race-free word copies.
//
// The segment's layout is a C struct (so C and TS can read it), hence fields are plain integers and
// C++ reaches them through std::atomic_ref. Loading Zone records can be overwritten by the agent
// while a consumer copies them (the copy is then discarded by the CAS check), so those copies go
// through relaxed 8-byte atomic loads and stores instead of memcpy: defined behaviour under the C++
// memory model, and the same plain moves on x86-64 and AArch64.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace pd3 {

static_assert(std::atomic_ref<uint64_t>::is_always_lock_free, "cross-process atomics need lock-free u64");
static_assert(std::atomic_ref<uint32_t>::is_always_lock_free, "cross-process atomics need lock-free u32");

template <class T>
inline std::atomic_ref<T> aref(T& field) {
  return std::atomic_ref<T>(field);
}

// Relaxed read of a field that another process may write.
template <class T>
inline T load_relaxed(const T& field) {
  return std::atomic_ref<T>(const_cast<T&>(field)).load(std::memory_order_relaxed);
}

// Copies `n` bytes from 8-aligned shared memory `src` into `dst` with relaxed word loads.
inline void load_words(void* dst, const uint64_t* src, size_t n) {
  auto* out = static_cast<unsigned char*>(dst);
  size_t i = 0;
  for (; n - i >= 8; i += 8) {
    const uint64_t w = aref(const_cast<uint64_t&>(src[i / 8])).load(std::memory_order_relaxed);
    std::memcpy(out + i, &w, 8);
  }
  if (i < n) {
    const uint64_t w = aref(const_cast<uint64_t&>(src[i / 8])).load(std::memory_order_relaxed);
    std::memcpy(out + i, &w, n - i);
  }
}

// True when the `n` bytes at 8-aligned shared memory `shared` equal `key`, read with relaxed loads.
inline bool equal_words(const uint64_t* shared, const void* key, size_t n) {
  const auto* k = static_cast<const unsigned char*>(key);
  size_t i = 0;
  for (; n - i >= 8; i += 8) {
    uint64_t mine;
    std::memcpy(&mine, k + i, 8);
    if (aref(const_cast<uint64_t&>(shared[i / 8])).load(std::memory_order_relaxed) != mine) return false;
  }
  if (i < n) {
    uint64_t mine = 0;
    std::memcpy(&mine, k + i, n - i);
    const uint64_t theirs = aref(const_cast<uint64_t&>(shared[i / 8])).load(std::memory_order_relaxed);
    const uint64_t mask = ~uint64_t{0} >> (8 * (8 - (n - i)));  // little-endian: low bytes first
    if ((theirs & mask) != mine) return false;
  }
  return true;
}

// Writes `n` bytes of `src` to 8-aligned shared memory `dst` with relaxed word stores; the last
// word is zero-padded.
inline void store_words(uint64_t* dst, const void* src, size_t n) {
  const auto* in = static_cast<const unsigned char*>(src);
  size_t i = 0;
  for (; n - i >= 8; i += 8) {
    uint64_t w;
    std::memcpy(&w, in + i, 8);
    aref(dst[i / 8]).store(w, std::memory_order_relaxed);
  }
  if (i < n) {
    uint64_t w = 0;
    std::memcpy(&w, in + i, n - i);
    aref(dst[i / 8]).store(w, std::memory_order_relaxed);
  }
}

}  // namespace pd3
