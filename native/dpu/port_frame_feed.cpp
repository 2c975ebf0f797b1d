// port_frame_feed.cpp — see port_frame_feed.hpp.
#include "dpu/port_frame_feed.hpp"

#include <algorithm>

namespace pd3 {

PortFeedResult PortFrameFeed::feed(const uint8_t* frame, uint32_t captured, TcpReassembler& flows, uint64_t now) {
  if (dups_.seen_again(frame, captured, now)) return PortFeedResult::kDuplicate;
  const size_t claimed = std::min<size_t>(claimed_frame_length(LinkType::kEthernet, frame, captured), UINT32_MAX);
  switch (feed_frame(LinkType::kEthernet, frame, captured, uint32_t(claimed), app_port_, flows, now)) {
    case FeedResult::kSegment:
      return PortFeedResult::kSegment;
    case FeedResult::kCut:
      return PortFeedResult::kCut;
    case FeedResult::kNotTcp:
      return PortFeedResult::kNotTcp;
    case FeedResult::kFragment:
      return PortFeedResult::kFragment;
    case FeedResult::kMalformed:
      return PortFeedResult::kMalformed;
  }
  return PortFeedResult::kMalformed;
}

}  // namespace pd3
