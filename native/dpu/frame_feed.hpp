// frame_feed.hpp — the step every capture backend takes with a received frame: decode it and hand
// its TCP segment to the flow reassembler, telling the backend what became of it so each backend
// counts in its own statistics.
#pragma once

#include <cstdint>

#include "dpu/packet_decode.hpp"
#include "dpu/tcp_reassembly.hpp"

namespace pd3 {

// What feed_frame did with a frame.
enum class FeedResult : uint8_t {
  kSegment,    // a whole segment went to the reassembler
  kCut,        // a client→app segment whose payload the capture cut: the reassembler got the
               // captured part and treats the rest as lost (a gap)
  kNotTcp,     // not IPv4 TCP
  kFragment,   // an IPv4 fragment (ignored)
  kMalformed,  // truncated inside a header, or lengths that contradict each other
};

// Decodes `captured` bytes of a frame `wire_len` bytes long on a `link` link and feeds its segment
// to `flows` at time `now` (CLOCK_MONOTONIC ns). `app_port`: the app's TCP port (only cuts on the
// client's side matter: the app's answers are not parsed).
FeedResult feed_frame(LinkType link, const uint8_t* frame, uint32_t captured, uint32_t wire_len, uint16_t app_port,
                      TcpReassembler& flows, uint64_t now);

}  // namespace pd3
