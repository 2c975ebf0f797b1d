// packet_decode.cpp — link header → IPv4 → TCP, bounds-checked at every step.
#include "dpu/packet_decode.hpp"

#include <linux/if_ether.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>

#include <algorithm>
#include <cstddef>

namespace pd3 {
namespace {

// Header layouts come from the system's definitions (shared with bpf_filter.cpp), never from
// numbers copied here.
constexpr size_t kVlanTag = 4;  // TCI + the next EtherType (the userspace headers have no name for it)
constexpr int kMaxVlanTags = 2;
constexpr size_t kIpv4MinHeader = sizeof(iphdr);
constexpr size_t kTcpMinHeader = sizeof(tcphdr);
constexpr size_t kTcpDataOffset = offsetof(tcphdr, ack_seq) + sizeof(uint32_t);  // doff:4, then flags

// Big-endian loads from byte pointers: frames have no alignment guarantee.
uint16_t be16(const uint8_t* p) { return uint16_t(uint16_t(p[0]) << 8 | p[1]); }
uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }

}  // namespace

DecodeStatus decode_ipv4(const uint8_t* packet, size_t captured, size_t wire_len, TcpSegmentView* out) {
  wire_len = std::max(wire_len, captured);
  if (captured < 1) return DecodeStatus::kTruncated;
  if ((packet[0] >> 4) != 4) return DecodeStatus::kNotIpv4;
  if (captured < kIpv4MinHeader) return DecodeStatus::kTruncated;
  const size_t ihl = size_t(packet[0] & 0x0F) * 4;
  if (ihl < kIpv4MinHeader) return DecodeStatus::kMalformed;
  size_t total = be16(packet + offsetof(iphdr, tot_len));
  // A GSO packet over 64 KiB ("BIG TCP") carries total length 0; the kernel then takes the length
  // from the packet itself, and so do we. Anything else with a zero length is malformed.
  if (total == 0 && wire_len > IP_MAXPACKET) total = wire_len;
  if (total > wire_len || total < ihl) return DecodeStatus::kMalformed;
  const uint16_t frag = be16(packet + offsetof(iphdr, frag_off));
  if ((frag & IP_MF) || (frag & IP_OFFMASK)) return DecodeStatus::kFragment;
  if (packet[offsetof(iphdr, protocol)] != IPPROTO_TCP) return DecodeStatus::kNotTcp;
  if (captured < ihl) return DecodeStatus::kTruncated;

  // The TCP segment: bytes [ihl, total) of the packet; `avail` of them were captured (Ethernet
  // padding after `total` is not part of it).
  const uint8_t* tcp = packet + ihl;
  const size_t seg_len = total - ihl;
  const size_t avail = std::min(total, captured) - ihl;
  if (seg_len < kTcpMinHeader) return DecodeStatus::kMalformed;
  if (avail < kTcpMinHeader) return DecodeStatus::kTruncated;
  const size_t doff = size_t(tcp[kTcpDataOffset] >> 4) * 4;
  if (doff < kTcpMinHeader || doff > seg_len) return DecodeStatus::kMalformed;
  if (avail < doff) return DecodeStatus::kTruncated;

  out->src_ip = be32(packet + offsetof(iphdr, saddr));
  out->dst_ip = be32(packet + offsetof(iphdr, daddr));
  out->src_port = be16(tcp + offsetof(tcphdr, source));
  out->dst_port = be16(tcp + offsetof(tcphdr, dest));
  out->seq = be32(tcp + offsetof(tcphdr, seq));
  out->ack = be32(tcp + offsetof(tcphdr, ack_seq));
  out->flags = tcp[kTcpDataOffset + 1];
  out->payload = tcp + doff;
  out->payload_len = uint32_t(avail - doff);
  out->wire_len = uint32_t(seg_len - doff);
  return DecodeStatus::kTcp;
}

namespace {

// Where the IP header starts in an Ethernet frame (after up to two VLAN tags), with its EtherType;
// false when the captured bytes end inside the link header.
bool ethernet_payload(const uint8_t* frame, size_t captured, size_t* at, uint16_t* type) {
  if (captured < ETH_HLEN) return false;
  *at = ETH_HLEN;
  *type = be16(frame + offsetof(ethhdr, h_proto));
  for (int tags = 0; (*type == ETH_P_8021Q || *type == ETH_P_8021AD) && tags < kMaxVlanTags; ++tags) {
    if (captured < *at + kVlanTag) return false;
    *type = be16(frame + *at + 2);  // the tag: TCI (2 bytes), then the next EtherType
    *at += kVlanTag;
  }
  return true;
}

}  // namespace

DecodeStatus decode_frame(LinkType link, const uint8_t* frame, size_t captured, size_t wire_len, TcpSegmentView* out) {
  wire_len = std::max(wire_len, captured);
  if (link == LinkType::kRawIp) return decode_ipv4(frame, captured, wire_len, out);
  size_t at = 0;
  uint16_t type = 0;
  if (!ethernet_payload(frame, captured, &at, &type)) return DecodeStatus::kTruncated;
  if (type != ETH_P_IP) return DecodeStatus::kNotIpv4;
  return decode_ipv4(frame + at, captured - at, wire_len - at, out);
}

size_t claimed_frame_length(LinkType link, const uint8_t* frame, size_t captured) {
  size_t at = 0;
  if (link == LinkType::kEthernet) {
    uint16_t type = 0;
    if (!ethernet_payload(frame, captured, &at, &type) || type != ETH_P_IP) return captured;
  }
  if (captured < at + offsetof(iphdr, tot_len) + sizeof(uint16_t) || (frame[at] >> 4) != 4) return captured;
  const size_t total = be16(frame + at + offsetof(iphdr, tot_len));
  return std::max(captured, at + total);  // total 0 (BIG TCP): nothing is claimed beyond the capture
}

const char* decode_status_name(DecodeStatus status) {
  switch (status) {
    case DecodeStatus::kTcp: return "tcp";
    case DecodeStatus::kNotIpv4: return "not-ipv4";
    case DecodeStatus::kNotTcp: return "not-tcp";
    case DecodeStatus::kFragment: return "fragment";
    case DecodeStatus::kTruncated: return "truncated";
    case DecodeStatus::kMalformed: return "malformed";
  }
  return "unknown";
}

}  // namespace pd3
