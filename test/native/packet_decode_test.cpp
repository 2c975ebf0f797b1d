// packet_decode_test.cpp — decode_frame on crafted frames: plain, IPv4 and TCP options, VLAN tags,
// raw IP, truncation at every length, bad IHL / data offset / total length, Ethernet padding,
// BIG TCP, fragments, non-TCP and IPv6; then seeded fuzzing of decode + reassembly through the
// libFuzzer target (test/fuzz/packet_target.hpp).
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../fuzz/packet_target.hpp"
#include "dpu/packet_decode.hpp"
#include "harness.hpp"
#include "util.hpp"

namespace {

using pd3::DecodeStatus;
using pd3::LinkType;
using pd3::TcpSegmentView;

// What to put in a crafted frame.
struct FrameSpec {
  bool raw_ip = false;
  std::vector<uint16_t> vlan_tpids;  // one 4-byte tag per entry, outermost first
  uint16_t ethertype = 0x0800;
  uint8_t version = 4;
  uint8_t ihl = 5;                   // 32-bit words; options are filled with NOPs
  int total_len = -1;                // -1: computed
  uint16_t frag = 0x4000;            // DF
  uint8_t proto = 6;
  uint32_t src_ip = 0x7F000002, dst_ip = 0x7F000001;
  uint16_t src_port = 50000, dst_port = 6379;
  uint32_t seq = 0x11223344, ack = 0x55667788;
  uint8_t doff = 5;
  uint8_t flags = pd3::kTcpAck | pd3::kTcpPsh;
  std::vector<uint8_t> payload;
  size_t padding = 0;                // bytes after the IP packet (Ethernet minimum-size padding)
};

void put16(std::vector<uint8_t>* v, uint16_t x) {
  v->push_back(uint8_t(x >> 8));
  v->push_back(uint8_t(x));
}
void put32(std::vector<uint8_t>* v, uint32_t x) {
  put16(v, uint16_t(x >> 16));
  put16(v, uint16_t(x));
}

// The frame; *ip_at and *payload_at receive where the IP header and the payload start.
std::vector<uint8_t> build(const FrameSpec& s, size_t* payload_at = nullptr) {
  std::vector<uint8_t> f;
  if (!s.raw_ip) {
    f.assign(12, 0);  // MACs (zero, as on lo)
    for (uint16_t tpid : s.vlan_tpids) {
      put16(&f, tpid);
      put16(&f, 0x0007);  // TCI
    }
    put16(&f, s.ethertype);
  }
  const size_t ip_hdr = size_t(s.ihl) * 4;
  const size_t tcp_hdr = size_t(s.doff) * 4;
  const size_t total = ip_hdr + tcp_hdr + s.payload.size();
  f.push_back(uint8_t(s.version << 4 | (s.ihl & 0x0F)));
  f.push_back(0);
  put16(&f, uint16_t(s.total_len >= 0 ? s.total_len : int(total)));
  put16(&f, 0x1234);
  put16(&f, s.frag);
  f.push_back(64);
  f.push_back(s.proto);
  put16(&f, 0);  // checksum (not verified)
  put32(&f, s.src_ip);
  put32(&f, s.dst_ip);
  for (size_t i = 20; i < ip_hdr; ++i) f.push_back(1);  // IP options: NOP
  put16(&f, s.src_port);
  put16(&f, s.dst_port);
  put32(&f, s.seq);
  put32(&f, s.ack);
  f.push_back(uint8_t(s.doff << 4));
  f.push_back(s.flags);
  put16(&f, 65535);
  put16(&f, 0);
  put16(&f, 0);
  for (size_t i = 20; i < tcp_hdr; ++i) f.push_back(1);  // TCP options: NOP
  if (payload_at) *payload_at = f.size();
  f.insert(f.end(), s.payload.begin(), s.payload.end());
  f.insert(f.end(), s.padding, 0);
  return f;
}

std::vector<uint8_t> bytes(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(seed + i * 7);
  return v;
}

DecodeStatus decode(const FrameSpec& s, const std::vector<uint8_t>& f, TcpSegmentView* out) {
  return pd3::decode_frame(s.raw_ip ? LinkType::kRawIp : LinkType::kEthernet, f.data(), f.size(), f.size(), out);
}

uint64_t iterations(uint64_t dflt) {
  const char* env = std::getenv("PD3_FUZZ_ITERS");
  return env ? std::strtoull(env, nullptr, 10) : dflt;
}

}  // namespace

TEST(decode_plain_ethernet_tcp_frame) {
  FrameSpec s;
  s.payload = bytes(100, 3);
  size_t payload_at = 0;
  const auto f = build(s, &payload_at);
  TcpSegmentView v;
  REQUIRE(decode(s, f, &v) == DecodeStatus::kTcp);
  CHECK_EQ(v.src_ip, s.src_ip);
  CHECK_EQ(v.dst_ip, s.dst_ip);
  CHECK_EQ(v.src_port, s.src_port);
  CHECK_EQ(v.dst_port, s.dst_port);
  CHECK_EQ(v.seq, s.seq);
  CHECK_EQ(v.ack, s.ack);
  CHECK_EQ(v.flags, s.flags);
  CHECK(v.payload == f.data() + payload_at);  // a view into the frame
  CHECK_EQ(payload_at, 54u);
  CHECK_EQ(v.payload_len, 100u);
  CHECK_EQ(v.wire_len, 100u);
  CHECK(std::memcmp(v.payload, s.payload.data(), 100) == 0);
  // No payload: a pure ACK.
  FrameSpec e;
  const auto g = build(e);
  REQUIRE(decode(e, g, &v) == DecodeStatus::kTcp);
  CHECK_EQ(v.payload_len, 0u);
  CHECK_EQ(v.wire_len, 0u);
}

TEST(decode_ip_and_tcp_options) {
  for (uint8_t ihl : {5, 6, 10, 15}) {
    for (uint8_t doff : {5, 8, 15}) {
      FrameSpec s;
      s.ihl = ihl;
      s.doff = doff;
      s.payload = bytes(33, ihl);
      size_t payload_at = 0;
      const auto f = build(s, &payload_at);
      TcpSegmentView v;
      REQUIRE(decode(s, f, &v) == DecodeStatus::kTcp);
      CHECK(v.payload == f.data() + payload_at);
      CHECK_EQ(payload_at, 14u + ihl * 4u + doff * 4u);
      CHECK_EQ(v.payload_len, 33u);
      CHECK_EQ(v.dst_port, 6379);
    }
  }
}

TEST(decode_vlan_tags_and_raw_ip) {
  TcpSegmentView v;
  FrameSpec one;
  one.vlan_tpids = {0x8100};
  one.payload = bytes(10, 1);
  size_t at = 0;
  auto f = build(one, &at);
  REQUIRE(decode(one, f, &v) == DecodeStatus::kTcp);
  CHECK(v.payload == f.data() + at);
  CHECK_EQ(at, 58u);
  FrameSpec two = one;
  two.vlan_tpids = {0x88A8, 0x8100};
  f = build(two, &at);
  REQUIRE(decode(two, f, &v) == DecodeStatus::kTcp);
  CHECK_EQ(at, 62u);
  FrameSpec three = one;  // more tags than we look through
  three.vlan_tpids = {0x88A8, 0x8100, 0x8100};
  f = build(three, &at);
  CHECK(decode(three, f, &v) == DecodeStatus::kNotIpv4);
  FrameSpec raw;
  raw.raw_ip = true;
  raw.payload = bytes(10, 2);
  f = build(raw, &at);
  REQUIRE(decode(raw, f, &v) == DecodeStatus::kTcp);
  CHECK_EQ(at, 40u);
  CHECK(v.payload == f.data() + 40);
  // The same bytes read as Ethernet are not IPv4 (the "EtherType" lands in the IP header).
  CHECK(pd3::decode_frame(LinkType::kEthernet, f.data(), f.size(), f.size(), &v) != DecodeStatus::kTcp);
}

TEST(decode_truncation_at_every_length) {
  for (bool raw : {false, true}) {
    FrameSpec s;
    s.raw_ip = raw;
    s.ihl = 7;
    s.doff = 9;
    s.vlan_tpids = raw ? std::vector<uint16_t>{} : std::vector<uint16_t>{0x8100};
    s.payload = bytes(200, 9);
    size_t payload_at = 0;
    const auto f = build(s, &payload_at);
    const LinkType link = raw ? LinkType::kRawIp : LinkType::kEthernet;
    int bad = 0;
    for (size_t cut = 0; cut <= f.size(); ++cut) {
      // A copy of exactly `cut` bytes, so reading past it is caught by the sanitizers.
      std::vector<uint8_t> head(f.begin(), f.begin() + long(cut));
      TcpSegmentView v;
      const DecodeStatus st = pd3::decode_frame(link, head.data(), cut, f.size(), &v);
      if (cut < payload_at) {
        bad += st != DecodeStatus::kTruncated;
      } else {
        // Headers complete: a segment whose captured payload is what is left, the rest known lost.
        bad += st != DecodeStatus::kTcp || v.payload_len != cut - payload_at || v.wire_len != 200 ||
               v.payload != head.data() + payload_at;
      }
    }
    CHECK_EQ(bad, 0);
  }
}

TEST(decode_rejects_inconsistent_lengths) {
  TcpSegmentView v;
  FrameSpec s;
  s.payload = bytes(40, 1);
  auto f = build(s);
  // IHL below 5.
  f[14] = 0x44;
  CHECK(decode(s, f, &v) == DecodeStatus::kMalformed);
  // Total length shorter than the IP header, or than IP + minimal TCP header.
  FrameSpec t = s;
  t.total_len = 19;
  CHECK(decode(t, build(t), &v) == DecodeStatus::kMalformed);
  t.total_len = 30;
  CHECK(decode(t, build(t), &v) == DecodeStatus::kMalformed);
  // Total length longer than the frame.
  t.total_len = 20 + 20 + 41;
  CHECK(decode(t, build(t), &v) == DecodeStatus::kMalformed);
  // Zero total length on an ordinary-size packet.
  t.total_len = 0;
  CHECK(decode(t, build(t), &v) == DecodeStatus::kMalformed);
  // TCP data offset below 5, or past the segment.
  FrameSpec d = s;
  d.doff = 4;
  d.payload = bytes(10, 2);
  auto g = build(d);
  CHECK(decode(d, g, &v) == DecodeStatus::kMalformed);
  d.doff = 15;
  d.total_len = 20 + 40;  // the segment is 40 bytes, the header claims 60
  g = build(d);
  g.resize(14 + 60);
  CHECK(decode(d, g, &v) == DecodeStatus::kMalformed);
  // Ethernet padding after the IP packet is not payload.
  FrameSpec p;
  p.payload = bytes(2, 5);
  p.padding = 16;
  g = build(p);
  REQUIRE(decode(p, g, &v) == DecodeStatus::kTcp);
  CHECK_EQ(v.payload_len, 2u);
  CHECK_EQ(v.wire_len, 2u);
  // A wire length shorter than what was captured is taken as the captured length.
  REQUIRE(pd3::decode_frame(LinkType::kEthernet, g.data(), g.size(), 3, &v) == DecodeStatus::kTcp);
  // Nothing at all.
  CHECK(pd3::decode_frame(LinkType::kEthernet, g.data(), 0, 0, &v) == DecodeStatus::kTruncated);
  CHECK(pd3::decode_frame(LinkType::kRawIp, g.data(), 0, 0, &v) == DecodeStatus::kTruncated);
  CHECK(pd3::decode_ipv4(g.data() + 14, 19, 19, &v) == DecodeStatus::kTruncated);
}

TEST(decode_big_tcp_zero_total_length_takes_the_packet_length) {
  FrameSpec s;
  s.payload = bytes(70000, 4);
  s.total_len = 0;
  size_t at = 0;
  const auto f = build(s, &at);
  TcpSegmentView v;
  REQUIRE(decode(s, f, &v) == DecodeStatus::kTcp);
  CHECK_EQ(v.payload_len, 70000u);
  CHECK(v.payload == f.data() + at);
}

TEST(decode_ignores_fragments_other_protocols_and_ipv6) {
  TcpSegmentView v;
  FrameSpec s;
  s.payload = bytes(8, 1);
  FrameSpec mf = s;
  mf.frag = 0x2000;  // more fragments
  CHECK(decode(mf, build(mf), &v) == DecodeStatus::kFragment);
  FrameSpec later = s;
  later.frag = 0x0010;  // a later fragment
  CHECK(decode(later, build(later), &v) == DecodeStatus::kFragment);
  FrameSpec df = s;
  df.frag = 0x4000;  // don't-fragment alone is fine
  CHECK(decode(df, build(df), &v) == DecodeStatus::kTcp);
  FrameSpec udp = s;
  udp.proto = 17;
  CHECK(decode(udp, build(udp), &v) == DecodeStatus::kNotTcp);
  FrameSpec v6 = s;
  v6.ethertype = 0x86DD;
  CHECK(decode(v6, build(v6), &v) == DecodeStatus::kNotIpv4);
  FrameSpec arp = s;
  arp.ethertype = 0x0806;
  CHECK(decode(arp, build(arp), &v) == DecodeStatus::kNotIpv4);
  FrameSpec wrong_version = s;
  wrong_version.version = 6;
  CHECK(decode(wrong_version, build(wrong_version), &v) == DecodeStatus::kNotIpv4);
  wrong_version.raw_ip = true;
  CHECK(decode(wrong_version, build(wrong_version), &v) == DecodeStatus::kNotIpv4);
  CHECK(std::strcmp(pd3::decode_status_name(DecodeStatus::kFragment), "fragment") == 0);
  CHECK(std::strcmp(pd3::decode_status_name(DecodeStatus::kTcp), "tcp") == 0);
}

namespace {

// A fuzz input (packet_target.hpp's format) of mostly valid frames of a few flows to the fuzz
// server port, some mutated, plus some random frames.
std::vector<uint8_t> valid_input(pd3test::Rng& rng) {
  std::vector<uint8_t> in;
  in.push_back(uint8_t(rng.next() & ~1u));  // Ethernet
  const uint32_t base[3] = {uint32_t(rng.next()), uint32_t(rng.next()), 0xFFFFFF00u};
  const int frames = 1 + int(rng.below(24));
  for (int i = 0; i < frames; ++i) {
    std::vector<uint8_t> f;
    if (rng.below(10) == 0) {
      f.resize(rng.below(200));
      for (auto& b : f) b = uint8_t(rng.next());
    } else {
      FrameSpec s;
      const uint32_t flow = rng.below(3);
      s.src_port = uint16_t(40000 + flow);
      s.dst_port = pd3fuzz::kFuzzServerPort;
      s.dst_ip = pd3fuzz::kFuzzServerIp;
      if (rng.below(8) == 0) std::swap(s.src_port, s.dst_port);
      const uint32_t r = rng.below(16);
      s.flags = uint8_t(pd3::kTcpAck | (r == 0 ? pd3::kTcpSyn : 0) | (r == 1 ? pd3::kTcpFin : 0) |
                        (r == 2 ? pd3::kTcpRst : 0));
      s.seq = base[flow] + rng.below(3000);
      s.payload.resize(rng.below(600));
      for (auto& b : s.payload) b = uint8_t(rng.next());
      s.ihl = uint8_t(5 + (rng.below(4) == 0 ? rng.below(11) : 0));
      s.doff = uint8_t(5 + (rng.below(4) == 0 ? rng.below(11) : 0));
      f = build(s);
      const int edits = rng.below(3) == 0 ? 1 + int(rng.below(3)) : 0;
      for (int e = 0; e < edits && !f.empty(); ++e) f[rng.below(uint32_t(f.size()))] = uint8_t(rng.next());
      if (rng.below(10) == 0) f.resize(rng.below(uint32_t(f.size() + 1)));
    }
    in.push_back(uint8_t(f.size()));
    in.push_back(uint8_t(f.size() >> 8));
    in.push_back(uint8_t(rng.next()));
    in.insert(in.end(), f.begin(), f.end());
  }
  return in;
}

}  // namespace

TEST(fuzz_packet_decode_and_reassembly_through_the_libfuzzer_target) {
  pd3test::Rng rng(21);
  const uint64_t n = iterations(200000) / pd3test::stress_scale();
  pd3fuzz::PacketRunResult total;
  std::vector<uint8_t> in;
  const auto t0 = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < n; ++i) {
    if (i % 4 == 0) {
      in.resize(rng.below(512));
      for (auto& b : in) b = uint8_t(rng.next());
    } else {
      in = valid_input(rng);
    }
    const auto r = pd3fuzz::run_packet_input(in.data(), in.size());  // aborts on a violated property
    total.frames += r.frames;
    total.segments += r.segments;
    total.delivered += r.delivered;
    total.gaps += r.gaps;
  }
  std::printf("    [packet fuzz] %llu inputs, %llu frames, %llu TCP segments, %llu bytes delivered, %llu gaps, "
              "%.0f ms\n",
              (unsigned long long)n, (unsigned long long)total.frames, (unsigned long long)total.segments,
              (unsigned long long)total.delivered, (unsigned long long)total.gaps, pd3test::ms_since(t0));
  CHECK(total.segments > n);
  CHECK(total.delivered > 0);
  CHECK(total.gaps > 0);
}
