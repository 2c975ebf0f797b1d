// packet_decode.hpp — one captured frame → the IPv4 TCP segment it carries (link header, IPv4,
// TCP). Total: any bytes give a segment or the reason they are not one, and nothing outside the
// captured bytes is read. The payload is a view into the frame, never a copy.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pd3 {

// What precedes the IPv4 header in a captured frame.
enum class LinkType : uint8_t {
  kEthernet,  // 14-byte Ethernet header and up to two 802.1Q/802.1ad tags; Linux loopback ("lo",
              // ARPHRD_LOOPBACK) uses the same header with zero MAC addresses
  kRawIp,     // no link header: the frame starts with the IP header (tun devices, ARPHRD_NONE)
};

// TCP header flag bits (byte 13 of the header).
inline constexpr uint8_t kTcpFin = 0x01;
inline constexpr uint8_t kTcpSyn = 0x02;
inline constexpr uint8_t kTcpRst = 0x04;
inline constexpr uint8_t kTcpPsh = 0x08;
inline constexpr uint8_t kTcpAck = 0x10;

// The fields of one IPv4 TCP segment that flow tracking and reassembly use. Addresses and ports in
// host byte order. `payload` points into the frame handed to the decoder.
struct TcpSegmentView {
  uint32_t src_ip = 0;
  uint32_t dst_ip = 0;
  uint16_t src_port = 0;
  uint16_t dst_port = 0;
  uint32_t seq = 0;
  uint32_t ack = 0;
  uint8_t flags = 0;               // kTcp* bits
  const uint8_t* payload = nullptr;
  uint32_t payload_len = 0;        // payload bytes captured at `payload`
  uint32_t wire_len = 0;           // payload bytes the segment carried; > payload_len when the
                                   // capture cut the frame short (the rest is known to be lost)
};

// Why a frame is, or is not, a TCP segment.
enum class DecodeStatus : uint8_t {
  kTcp,        // *out is filled
  kNotIpv4,    // another EtherType (IPv6, ARP, ...) or another IP version
  kNotTcp,     // IPv4 carrying another protocol
  kFragment,   // an IPv4 fragment: ignored (TCP stacks avoid fragmenting; see docs/mirror.md)
  kTruncated,  // the captured bytes end inside a header
  kMalformed,  // a length field contradicts itself or the frame (IHL < 5, data offset < 5, ...)
};

// Decodes a frame captured on a link of type `link`: `captured` bytes at `frame`, of a frame that
// was `wire_len` bytes long on the wire (wire_len < captured is treated as captured).
DecodeStatus decode_frame(LinkType link, const uint8_t* frame, size_t captured, size_t wire_len, TcpSegmentView* out);

// Decodes an IPv4 packet: `captured` bytes at `packet` of a packet `wire_len` bytes long.
DecodeStatus decode_ipv4(const uint8_t* packet, size_t captured, size_t wire_len, TcpSegmentView* out);

// The length the frame had before capture, as its IPv4 header claims it: the link header plus
// the IPv4 total length, when at least that field was captured and is not 0; otherwise
// `captured`; never less than `captured`. For captures that report no wire length (DPDK's
// af_packet driver silently cuts packets past its frame size): decode_frame(..., captured,
// claimed_frame_length(...)) then sees a cut packet as cut, not as malformed.
size_t claimed_frame_length(LinkType link, const uint8_t* frame, size_t captured);

// "tcp", "not-ipv4", ... for logs and tests.
const char* decode_status_name(DecodeStatus status);

}  // namespace pd3
