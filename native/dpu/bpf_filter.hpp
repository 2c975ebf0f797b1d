// bpf_filter.hpp — the classic BPF program the packet mirror attaches to its AF_PACKET socket, so
// the kernel copies into the ring only the app's TCP traffic: IPv4 TCP with (ip, port) as
// destination (whole packets) or as source (headers only: the mirror uses just their flags).
#pragma once

#include <linux/filter.h>

#include <cstdint>
#include <vector>

namespace pd3 {

// Bytes kept of a server→client packet: any link header, IPv4 header and TCP header (≤ 60 + 60).
inline constexpr uint32_t kFilterHeaderSnap = 256;
// Returned for client→server packets: keep the whole packet.
inline constexpr uint32_t kFilterWholePacket = UINT32_MAX;

// Builds the program for `ip` (host byte order; 0 = any address) and `port` (≠ 0). Loads are
// relative to the network header (SKF_NET_OFF) and the EtherType is read from the skb
// (SKF_AD_PROTOCOL), so one program fits every link type, with or without VLAN tags. Non-first
// IPv4 fragments are rejected (they carry no TCP header).
std::vector<sock_filter> tcp_port_filter(uint32_t ip, uint16_t port);

// SO_ATTACH_FILTER. Returns PD3_OK, PD3_E_INVAL (empty or over 4096 instructions) or PD3_E_SYS.
int attach_filter(int fd, const std::vector<sock_filter>& program);

}  // namespace pd3
