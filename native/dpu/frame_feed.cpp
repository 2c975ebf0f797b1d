// frame_feed.cpp — see frame_feed.hpp.
#include "dpu/frame_feed.hpp"

namespace pd3 {

FeedResult feed_frame(LinkType link, const uint8_t* frame, uint32_t captured, uint32_t wire_len, uint16_t app_port,
                      TcpReassembler& flows, uint64_t now) {
  TcpSegmentView seg;
  switch (decode_frame(link, frame, captured, wire_len, &seg)) {
    case DecodeStatus::kTcp:
      flows.on_segment(seg, now);
      return seg.payload_len < seg.wire_len && seg.dst_port == app_port ? FeedResult::kCut : FeedResult::kSegment;
    case DecodeStatus::kNotIpv4:
    case DecodeStatus::kNotTcp:
      return FeedResult::kNotTcp;
    case DecodeStatus::kFragment:
      return FeedResult::kFragment;
    case DecodeStatus::kTruncated:
    case DecodeStatus::kMalformed:
      return FeedResult::kMalformed;
  }
  return FeedResult::kMalformed;
}

}  // namespace pd3
