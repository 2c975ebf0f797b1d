// port_frame_feed_test.cpp — the DPDK backend's per-frame path (PortFrameFeed: repeats dropped,
// wire length from the IPv4 header, decode, reassembly) on crafted Ethernet frames: every frame
// twice (DPDK's af_packet on a loopback device), genuine retransmissions, frames cut by the port,
// and a property run with loss, reordering, repeats and cuts; then a fuzz of claimed_frame_length
// and the DuplicateFilter's window.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "dpu/dpdk_mirror.hpp"
#include "dpu/duplicate_filter.hpp"
#include "dpu/packet_decode.hpp"
#include "dpu/port_frame_feed.hpp"
#include "dpu/tcp_reassembly.hpp"
#include "harness.hpp"
#include "pd3/status.h"
#include "util.hpp"

namespace {

using pd3::PortFeedResult;
using pd3::PortFrameFeed;

constexpr uint16_t kAppPort = 6379;
constexpr uint64_t kMs = 1000000;
constexpr uint64_t kWindow = 10 * kMs;

void put16(std::vector<uint8_t>* v, uint16_t x) {
  v->push_back(uint8_t(x >> 8));
  v->push_back(uint8_t(x));
}
void put32(std::vector<uint8_t>* v, uint32_t x) {
  put16(v, uint16_t(x >> 16));
  put16(v, uint16_t(x));
}

// An Ethernet + IPv4 + TCP frame from the client (port 40000) to the app carrying stream bytes
// [off, off + len) (sequence number isn + 1 + off: a SYN of ISN i is frame(i - 1, ..., 0, 0, SYN)), with IPv4 ID `ip_id`, cut to `keep` bytes of frame when keep is smaller.
std::vector<uint8_t> frame(uint32_t isn, const std::vector<uint8_t>& stream, size_t off, size_t len, uint8_t flags,
                           uint16_t ip_id, size_t keep = SIZE_MAX) {
  std::vector<uint8_t> f(12, 0xAB);  // MACs
  put16(&f, 0x0800);
  f.push_back(0x45);
  f.push_back(0);
  put16(&f, uint16_t(20 + 20 + len));
  put16(&f, ip_id);
  put16(&f, 0x4000);
  f.push_back(64);
  f.push_back(6);
  put16(&f, 0);
  put32(&f, 0x0A000002);
  put32(&f, 0x0A000001);
  put16(&f, 40000);
  put16(&f, kAppPort);
  put32(&f, isn + 1 + uint32_t(off));
  put32(&f, 1);
  f.push_back(0x50);
  f.push_back(flags);
  put16(&f, 65535);
  put32(&f, 0);
  f.insert(f.end(), stream.begin() + long(off), stream.begin() + long(off + len));
  if (keep < f.size()) f.resize(keep);
  return f;
}

struct Sink {
  std::vector<uint8_t> bytes;
  int gaps = 0;
  pd3::FlowCallbacks callbacks() {
    pd3::FlowCallbacks cb;
    cb.deliver = [this](uint64_t, const uint8_t* p, size_t len, bool gap) {
      gaps += gap;
      bytes.insert(bytes.end(), p, p + len);
    };
    return cb;
  }
};

std::unique_ptr<pd3::TcpReassembler> reassembler(Sink* sink) {
  pd3::ReassemblyOptions o;
  o.server_port = kAppPort;
  o.limits.hole_timeout_ms = 20;
  std::unique_ptr<pd3::TcpReassembler> r;
  return pd3::TcpReassembler::create(o, sink->callbacks(), &r) == PD3_OK ? std::move(r) : nullptr;
}

std::vector<uint8_t> random_bytes(pd3test::Rng& rng, size_t n) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = uint8_t(rng.next());
  return v;
}

}  // namespace

TEST(port_feed_drops_each_loopback_repeat_and_keeps_genuine_retransmissions) {
  pd3test::Rng rng(31);
  Sink sink;
  auto r = reassembler(&sink);
  REQUIRE(r);
  PortFrameFeed feed(kAppPort, kWindow);
  const auto stream = random_bytes(rng, 5000);
  const uint32_t isn = 1000;
  uint16_t id = 1;
  uint64_t now = kMs;
  int dups = 0;
  auto twice = [&](const std::vector<uint8_t>& f) {
    CHECK(feed.feed(f.data(), uint32_t(f.size()), *r, now) != PortFeedResult::kDuplicate);
    dups += feed.feed(f.data(), uint32_t(f.size()), *r, now + 2000) == PortFeedResult::kDuplicate;
    now += 10000;
  };
  twice(frame(isn - 1, stream, 0, 0, pd3::kTcpSyn, id++));  // seq = isn
  for (size_t off = 0; off < 2000; off += 500) twice(frame(isn, stream, off, 500, pd3::kTcpAck, id++));
  // A genuine retransmission of bytes 1000..1500 (new IPv4 ID): not a repeat, the reassembler drops it.
  const auto again = frame(isn, stream, 1000, 500, pd3::kTcpAck, id++);
  CHECK(feed.feed(again.data(), uint32_t(again.size()), *r, now) == PortFeedResult::kSegment);
  for (size_t off = 2000; off < stream.size(); off += 500) twice(frame(isn, stream, off, 500, pd3::kTcpAck, id++));
  CHECK_EQ(dups, 11);
  CHECK(sink.bytes == stream);
  CHECK_EQ(sink.gaps, 0);
  CHECK_EQ(r->stats().retransmitted_bytes, 500u);
  // A repeat outside the window is a new frame (the reassembler then drops its bytes as retransmitted).
  const auto late = frame(isn, stream, 4500, 500, pd3::kTcpAck, 9999);
  CHECK(feed.feed(late.data(), uint32_t(late.size()), *r, now) == PortFeedResult::kSegment);
  CHECK(feed.feed(late.data(), uint32_t(late.size()), *r, now + kWindow + 1) == PortFeedResult::kSegment);
}

TEST(port_feed_turns_a_silently_cut_frame_into_a_counted_cut_and_an_exact_gap) {
  pd3test::Rng rng(32);
  Sink sink;
  auto r = reassembler(&sink);
  REQUIRE(r);
  PortFrameFeed feed(kAppPort, kWindow);
  const auto stream = random_bytes(rng, 9000);
  const auto syn = frame(6, stream, 0, 0, pd3::kTcpSyn, 1);  // seq = isn 7
  CHECK(feed.feed(syn.data(), uint32_t(syn.size()), *r, kMs) == PortFeedResult::kSegment);
  // 3000 payload bytes, cut by the port at a 2048-byte frame: 2048 - 54 bytes of payload kept.
  const auto cut = frame(7, stream, 0, 3000, pd3::kTcpAck, 2, 2048);
  CHECK(feed.feed(cut.data(), uint32_t(cut.size()), *r, 2 * kMs) == PortFeedResult::kCut);
  const auto next = frame(7, stream, 3000, 6000, pd3::kTcpAck, 3);
  CHECK(feed.feed(next.data(), uint32_t(next.size()), *r, 3 * kMs) == PortFeedResult::kSegment);
  const size_t kept = 2048 - 54;
  CHECK_EQ(r->stats().gap_bytes, 3000u - kept);
  CHECK_EQ(sink.gaps, 1);
  REQUIRE(sink.bytes.size() == kept + 6000);
  CHECK(std::equal(sink.bytes.begin(), sink.bytes.begin() + long(kept), stream.begin()));
  CHECK(std::equal(sink.bytes.begin() + long(kept), sink.bytes.end(), stream.begin() + 3000));
  // Without the claimed length the same frame would look malformed (total length > captured).
  pd3::TcpSegmentView seg;
  CHECK(pd3::decode_frame(pd3::LinkType::kEthernet, cut.data(), cut.size(), cut.size(), &seg) ==
        pd3::DecodeStatus::kMalformed);
}

TEST(port_feed_property_loss_reordering_repeats_and_cuts) {
  pd3test::Rng rng(33);
  const int trials = int(300 / pd3test::stress_scale());
  int exact = 0, damaged = 0;
  for (int trial = 0; trial < trials; ++trial) {
    const bool lossy = trial % 2 == 0;
    Sink sink;
    auto r = reassembler(&sink);
    REQUIRE(r);
    PortFrameFeed feed(kAppPort, kWindow);
    const auto stream = random_bytes(rng, 1 + rng.below(40000));
    const uint32_t isn = uint32_t(rng.next());
    std::vector<std::vector<uint8_t>> frames;
    uint16_t id = uint16_t(rng.next());
    int pushed = 0;  // repeats sent: each must be recognised exactly once, in whichever order
    for (size_t at = 0; at < stream.size();) {
      const size_t len = std::min<size_t>(stream.size() - at, 1 + rng.below(3000));
      const bool drop = lossy && rng.below(10) == 0;
      const size_t keep = lossy && rng.below(10) == 0 ? 54 + rng.below(uint32_t(len)) : SIZE_MAX;
      if (!drop) frames.push_back(frame(isn, stream, at, len, pd3::kTcpAck, id++, keep));
      if (!drop && rng.below(2) == 0) {  // the loopback repeat
        frames.push_back(frames.back());
        ++pushed;
      }
      at += len;
    }
    for (size_t i = 0; i + 1 < frames.size(); ++i) std::swap(frames[i], frames[std::min(frames.size() - 1, i + rng.below(6))]);
    uint64_t now = kMs;
    const auto syn = frame(isn - 1, stream, 0, 0, pd3::kTcpSyn, id++);  // seq = isn
    (void)feed.feed(syn.data(), uint32_t(syn.size()), *r, now);
    int repeats = 0;
    for (const auto& f : frames) {
      now += 1000;
      repeats += feed.feed(f.data(), uint32_t(f.size()), *r, now) == PortFeedResult::kDuplicate;
    }
    const auto fin = frame(isn, stream, stream.size(), 0, pd3::kTcpAck | pd3::kTcpFin, id++);
    (void)feed.feed(fin.data(), uint32_t(fin.size()), *r, now + 1000);
    r->expire(now + 1000 * kMs);  // any hole left is skipped, then the FIN ends the flow
    const auto& s = r->stats();
    CHECK_EQ(s.delivered_bytes + s.gap_bytes, stream.size());
    CHECK_EQ(repeats, pushed);
    if (!lossy) {
      CHECK(sink.bytes == stream);
      CHECK_EQ(s.gaps, 0u);
    }
    exact += sink.bytes == stream;
    damaged += s.gaps > 0;
  }
  std::printf("    [port feed property] %d trials, %d exact, %d with gaps\n", trials, exact, damaged);
  CHECK(damaged > 0);
}

TEST(fuzz_claimed_frame_length_never_claims_less_than_captured_and_reads_only_the_header) {
  pd3test::Rng rng(34);
  const auto stream = random_bytes(rng, 4000);
  const uint64_t n = 200000 / pd3test::stress_scale();
  uint64_t claims_more = 0;
  for (uint64_t i = 0; i < n; ++i) {
    std::vector<uint8_t> f = frame(5, stream, 0, rng.below(3000), pd3::kTcpAck, uint16_t(i));
    const int mutations = int(rng.below(4));
    for (int m = 0; m < mutations && !f.empty(); ++m) f[rng.below(uint32_t(f.size()))] = uint8_t(rng.next());
    f.resize(rng.below(uint32_t(f.size()) + 1));
    // A copy of exactly the captured bytes: reading past them would be outside the allocation.
    std::unique_ptr<uint8_t[]> exact(new uint8_t[f.size() + 1]);
    std::memcpy(exact.get(), f.data(), f.size());
    const size_t claimed = pd3::claimed_frame_length(pd3::LinkType::kEthernet, exact.get(), f.size());
    CHECK(claimed >= f.size());
    CHECK(claimed <= f.size() + 14 + 8 + 65535);
    if (claimed > f.size()) {
      ++claims_more;
      CHECK(f.size() >= 14 + 4);  // the total-length field was captured
    }
    pd3::TcpSegmentView seg;
    if (pd3::decode_frame(pd3::LinkType::kEthernet, exact.get(), f.size(), claimed, &seg) == pd3::DecodeStatus::kTcp) {
      CHECK(seg.payload_len <= seg.wire_len);
      CHECK(seg.payload + seg.payload_len <= exact.get() + f.size());
    }
  }
  std::printf("    [claimed length fuzz] %llu frames, %llu claimed longer than captured\n", (unsigned long long)n,
              (unsigned long long)claims_more);
  CHECK(claims_more > 0);
}

TEST(duplicate_filter_remembers_64_frames_and_matches_each_once) {
  pd3::DuplicateFilter filter(kWindow);
  std::vector<std::vector<uint8_t>> frames;
  for (int i = 0; i < 65; ++i) frames.push_back(std::vector<uint8_t>(60 + i % 3, uint8_t(i)));
  for (size_t i = 0; i < frames.size(); ++i) CHECK(!filter.seen_again(frames[i].data(), frames[i].size(), 1));
  CHECK(!filter.seen_again(frames[0].data(), frames[0].size(), 2));   // pushed out by the 65th
  CHECK(filter.seen_again(frames[64].data(), frames[64].size(), 2));  // the latest is remembered
  CHECK(!filter.seen_again(frames[64].data(), frames[64].size(), 3)); // matched once: a third copy is new
  // Same first 128 bytes, other length: not a repeat.
  std::vector<uint8_t> longer(200, 7), shorter(199, 7);
  CHECK(!filter.seen_again(longer.data(), longer.size(), 4));
  CHECK(!filter.seen_again(shorter.data(), shorter.size(), 4));
}

// Both builds: DpdkMirror::start refuses bad options before touching DPDK; a build without DPDK
// refuses everything with the message the agent prints (CMake's one choice: dpdk_absent.cpp).
TEST(dpdk_mirror_start_refuses_bad_options_and_a_build_without_dpdk_says_so) {
  std::unique_ptr<pd3::DpdkMirror> m;
  pd3::DpdkMirrorOptions o;
  o.port = "net_af_packet0";
  o.app_port = 0;  // invalid in every build
  CHECK_EQ(pd3::DpdkMirror::start(o, pd3::FlowCallbacks{}, &m), PD3_E_INVAL);
  CHECK(m == nullptr);
  if (!pd3::dpdk_mirror_built_in()) {
    CHECK(std::strstr(pd3_last_error(), pd3::kDpdkNotBuiltIn) != nullptr);
    return;
  }
  CHECK(std::strstr(pd3_last_error(), "app's port is 0") != nullptr);
  o.app_port = 6379;
  o.sleep_min_us = 300;
  o.sleep_max_us = 200;
  CHECK_EQ(pd3::DpdkMirror::start(o, pd3::FlowCallbacks{}, &m), PD3_E_INVAL);
  o.sleep_min_us = 1;
  o.mbufs = 100;  // fewer than 512 descriptors + a burst
  CHECK_EQ(pd3::DpdkMirror::start(o, pd3::FlowCallbacks{}, &m), PD3_E_INVAL);
  CHECK(std::strstr(pd3_last_error(), "cannot fill") != nullptr);
  std::vector<std::string> args;
  std::string error;
  CHECK(pd3::split_eal_args("  --no-huge\t-m 256  ", &args, &error));
  CHECK(args == (std::vector<std::string>{"--no-huge", "-m", "256"}));
  std::string many;
  for (uint32_t i = 0; i <= pd3::kDpdkMaxEalArgs; ++i) many += "a ";
  CHECK(!pd3::split_eal_args(many, &args, &error));
  CHECK(error.find("more than 64 EAL arguments") != std::string::npos);
  CHECK_EQ(pd3::largest_framesz("--vdev=net_af_packet0,iface=lo,framesz=2048 net_af_packet1,framesz=32768,blocksz=32768"), 32768u);
  CHECK_EQ(pd3::largest_framesz("--vdev=x,notframesz=99999"), 0u);
}
