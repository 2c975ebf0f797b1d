// duplicate_filter.hpp — recognises a frame captured twice in a row: DPDK's af_packet driver sees
// every packet on a loopback device once leaving and once arriving, byte for byte the same, and
// (unlike an AF_PACKET socket of our own) reports no direction to skip one of them by. A real
// retransmission is not byte-identical (its IPv4 ID and TCP timestamp differ), so it is not taken
// for a duplicate. Single-threaded (the capture thread's).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace pd3 {

// The fingerprints of the last kWindow frames, each remembered for at most window_ns.
class DuplicateFilter {
 public:
  static constexpr size_t kWindow = 64;        // frames remembered
  static constexpr size_t kHashedBytes = 128;  // of each frame: its headers and first payload bytes

  explicit DuplicateFilter(uint64_t window_ns) : window_ns_(window_ns) {}

  // True when a frame with the same length and the same first kHashedBytes bytes was seen within
  // the last kWindow frames and window_ns before `now` (then it is not remembered again: a third
  // copy counts as new). Otherwise remembers this one and returns false.
  [[nodiscard]] bool seen_again(const uint8_t* frame, size_t len, uint64_t now);

 private:
  // One remembered frame: its fingerprint and when it was seen.
  struct Entry {
    uint64_t fingerprint = 0;  // 0: empty
    uint64_t at = 0;
  };
  std::array<Entry, kWindow> recent_{};
  size_t next_ = 0;
  uint64_t window_ns_;
};

}  // namespace pd3
