// port_frame_feed.hpp — the per-frame path of a capture port that may hand over a frame twice and
// cut frames without saying so (the DPDK backend; dpdk_mirror.cpp): repeats are dropped
// (DuplicateFilter), the wire length is taken from the IPv4 header (claimed_frame_length), then
// the frame is decoded and reassembled (feed_frame). Needs no DPDK, so the tests drive it directly.
// Single-threaded (the capture thread's).
#pragma once

#include <cstdint>

#include "dpu/duplicate_filter.hpp"
#include "dpu/frame_feed.hpp"

namespace pd3 {

// What PortFrameFeed::feed did with a frame.
enum class PortFeedResult : uint8_t {
  kDuplicate,  // the same frame again within the window: dropped
  kSegment,    // as FeedResult
  kCut,
  kNotTcp,
  kFragment,
  kMalformed,
};

// Drops repeats, then decodes and reassembles Ethernet frames whose wire length is not reported.
class PortFrameFeed {
 public:
  PortFrameFeed(uint16_t app_port, uint64_t duplicate_window_ns) : app_port_(app_port), dups_(duplicate_window_ns) {}

  // `captured` bytes of a frame received at `now` (CLOCK_MONOTONIC ns), fed to `flows`.
  [[nodiscard]] PortFeedResult feed(const uint8_t* frame, uint32_t captured, TcpReassembler& flows, uint64_t now);

 private:
  uint16_t app_port_;
  DuplicateFilter dups_;
};

}  // namespace pd3
