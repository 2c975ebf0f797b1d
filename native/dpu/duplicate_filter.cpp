// duplicate_filter.cpp — see duplicate_filter.hpp.
#include "dpu/duplicate_filter.hpp"

#include <algorithm>
#include <cstring>

#include "common/mix64.hpp"

namespace pd3 {
namespace {

// 64-bit fingerprint of a frame's length and first bytes; never 0 (0 marks an empty entry).
uint64_t fingerprint(const uint8_t* frame, size_t len) {
  const size_t n = std::min(len, DuplicateFilter::kHashedBytes);
  uint64_t h = mix64(len + 1);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, frame + i, 8);
    h = mix64(h ^ w);
  }
  uint64_t tail = 0;
  std::memcpy(&tail, frame + i, n - i);
  h = mix64(h ^ tail ^ (uint64_t(n - i) << 56));
  return h == 0 ? 1 : h;
}

}  // namespace

bool DuplicateFilter::seen_again(const uint8_t* frame, size_t len, uint64_t now) {
  const uint64_t f = fingerprint(frame, len);
  for (Entry& e : recent_) {
    if (e.fingerprint == f && now - e.at <= window_ns_) {
      e.fingerprint = 0;  // matched once: a further copy is a new frame
      return true;
    }
  }
  recent_[next_] = Entry{f, now};
  next_ = (next_ + 1) % kWindow;
  return false;
}

}  // namespace pd3
