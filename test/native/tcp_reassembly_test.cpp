// tcp_reassembly_test.cpp — TcpReassembler on crafted segment sequences: in order (zero copy),
// reordering, retransmits and partial overlaps, duplicate SYNs, gaps that cannot be filled,
// sequence wraparound, 50 interleaved flows, FIN/RST/idle cleanup, a full flow table, bad options,
// and a property test of random segmentations, retransmits, reorders and losses.
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "dpu/tcp_reassembly.hpp"
#include "harness.hpp"
#include "pd3/status.h"
#include "util.hpp"

namespace {

using pd3::FlowEnd;
using pd3::FlowKey;
using pd3::TcpReassembler;
using pd3::TcpSegmentView;

constexpr uint32_t kServerIp = 0x0A000001;  // 10.0.0.1
constexpr uint32_t kClientIp = 0x0A000002;
constexpr uint16_t kPort = 6379;
constexpr uint64_t kMs = 1000000;

// One deliver call.
struct Delivery {
  const uint8_t* ptr;
  size_t at;  // where it starts in the flow's delivered bytes
  size_t len;
  bool after_gap;
};

// Everything the reassembler told us about one flow.
struct FlowLog {
  FlowKey key;
  bool synced = false;
  std::vector<uint8_t> bytes;
  std::vector<Delivery> deliveries;
  int closes = 0;
  FlowEnd why = FlowEnd::kShutdown;
};

// Records callbacks by flow id, and the order flows were opened in.
struct Recorder {
  std::map<uint64_t, FlowLog> flows;
  std::vector<uint64_t> opened;
  bool bad_callback = false;  // a callback for an unknown or closed flow

  pd3::FlowCallbacks callbacks() {
    pd3::FlowCallbacks cb;
    cb.open = [this](uint64_t id, const FlowKey& key, bool synced) {
      if (flows.count(id)) bad_callback = true;
      flows[id].key = key;
      flows[id].synced = synced;
      opened.push_back(id);
    };
    cb.deliver = [this](uint64_t id, const uint8_t* p, size_t len, bool gap) {
      auto it = flows.find(id);
      if (it == flows.end() || it->second.closes || len == 0) {
        bad_callback = true;
        return;
      }
      it->second.deliveries.push_back({p, it->second.bytes.size(), len, gap});
      it->second.bytes.insert(it->second.bytes.end(), p, p + len);
    };
    cb.close = [this](uint64_t id, FlowEnd why) {
      auto it = flows.find(id);
      if (it == flows.end()) {
        bad_callback = true;
        return;
      }
      ++it->second.closes;
      it->second.why = why;
    };
    return cb;
  }
  FlowLog& only() { return flows.begin()->second; }
  FlowLog& nth(size_t i) { return flows.at(opened.at(i)); }
};

std::unique_ptr<TcpReassembler> make(Recorder* rec, pd3::ReassemblyLimits limits = {}, uint32_t server_ip = kServerIp) {
  pd3::ReassemblyOptions o;
  o.server_ip = server_ip;
  o.server_port = kPort;
  o.limits = limits;
  std::unique_ptr<TcpReassembler> r;
  const int rc = TcpReassembler::create(o, rec->callbacks(), &r);
  return rc == PD3_OK ? std::move(r) : nullptr;
}

std::vector<uint8_t> random_bytes(pd3test::Rng& rng, size_t n) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = uint8_t(rng.next());
  return v;
}

// A client→server segment.
TcpSegmentView seg(uint16_t client_port, uint32_t seq, uint8_t flags, const uint8_t* p = nullptr, uint32_t len = 0,
                   uint32_t client_ip = kClientIp) {
  TcpSegmentView s;
  s.src_ip = client_ip;
  s.dst_ip = kServerIp;
  s.src_port = client_port;
  s.dst_port = kPort;
  s.seq = seq;
  s.ack = 1;
  s.flags = flags;
  s.payload = p;
  s.payload_len = len;
  s.wire_len = len;
  return s;
}

// A server→client segment.
TcpSegmentView server_seg(uint16_t client_port, uint8_t flags) {
  TcpSegmentView s = seg(client_port, 77, flags);
  std::swap(s.src_ip, s.dst_ip);
  std::swap(s.src_port, s.dst_port);
  return s;
}

// Stream bytes [off, off + len) of a flow with initial sequence number isn.
TcpSegmentView data(uint16_t port, uint32_t isn, const std::vector<uint8_t>& stream, size_t off, size_t len,
                    uint8_t flags = pd3::kTcpAck) {
  return seg(port, isn + 1 + uint32_t(off), flags, stream.data() + off, uint32_t(len));
}

// [offset, length) pieces covering n bytes, sizes in [lo, hi].
std::vector<std::pair<size_t, size_t>> cut(pd3test::Rng& rng, size_t n, uint32_t lo, uint32_t hi) {
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t at = 0; at < n;) {
    const size_t len = std::min<size_t>(n - at, lo + rng.below(hi - lo + 1));
    out.push_back({at, len});
    at += len;
  }
  return out;
}

template <class T>
void shuffle(pd3test::Rng& rng, std::vector<T>* v, size_t from = 0) {
  for (size_t i = v->size(); i > from + 1; --i) std::swap((*v)[i - 1], (*v)[from + rng.below(uint32_t(i - from))]);
}

// The flow's deliveries are pieces of `stream`, in stream order, never overlapping, contiguous
// unless marked after_gap, and nothing else (no invented bytes). Each run (a delivery after a gap
// and the contiguous ones after it) is looked up as a whole, so that a short run rarely matches
// early by chance. Returns the bytes skipped between runs, or -1 (and reports) on a violation.
long long check_subsequence(const FlowLog& log, const std::vector<uint8_t>& stream, pd3test::Errors* errors) {
  size_t pos = 0;
  long long skipped = 0;
  for (size_t i = 0; i < log.deliveries.size();) {
    const Delivery& first = log.deliveries[i];
    size_t len = first.len;
    size_t j = i + 1;
    for (; j < log.deliveries.size() && !log.deliveries[j].after_gap; ++j) len += log.deliveries[j].len;
    const uint8_t* run = log.bytes.data() + first.at;
    if (!first.after_gap) {
      if (pos + len > stream.size() || std::memcmp(stream.data() + pos, run, len) != 0) {
        errors->fail("contiguous run of %zu bytes at %zu does not match the stream", len, pos);
        return -1;
      }
    } else {
      const size_t from = log.synced || pos > 0 ? pos + 1 : 0;
      const auto it = from > stream.size() ? stream.end()
                                           : std::search(stream.begin() + long(from), stream.end(), run, run + len);
      if (it == stream.end()) {
        errors->fail("run of %zu bytes after a gap is not in the rest of the stream", len);
        return -1;
      }
      skipped += (long long)(size_t(it - stream.begin()) - pos);
      pos = size_t(it - stream.begin());
    }
    pos += len;
    i = j;
  }
  return skipped;
}

}  // namespace

TEST(reassembly_in_order_is_delivered_zero_copy) {
  Recorder rec;
  auto r = make(&rec);
  REQUIRE(r);
  pd3test::Rng rng(1);
  const auto stream = random_bytes(rng, 64 << 10);
  const uint32_t isn = 1000;
  r->on_segment(seg(40000, isn, pd3::kTcpSyn), 1);
  const auto pieces = cut(rng, stream.size(), 1, 1500);
  for (size_t i = 0; i < pieces.size(); ++i) {
    const uint8_t flags = pd3::kTcpAck | (i + 1 == pieces.size() ? pd3::kTcpFin : 0);
    r->on_segment(data(40000, isn, stream, pieces[i].first, pieces[i].second, flags), 2 + i);
  }
  REQUIRE(rec.flows.size() == 1);
  FlowLog& f = rec.only();
  CHECK(f.synced);
  CHECK(f.bytes == stream);
  CHECK_EQ(f.deliveries.size(), pieces.size());
  bool zero_copy = true, gap = false;
  for (size_t i = 0; i < f.deliveries.size(); ++i) {
    zero_copy &= f.deliveries[i].ptr == stream.data() + pieces[i].first;  // points into the "packet"
    gap |= f.deliveries[i].after_gap;
  }
  CHECK(zero_copy);
  CHECK(!gap);
  CHECK_EQ(f.closes, 1);
  CHECK(f.why == FlowEnd::kFin);
  const auto& s = r->stats();
  CHECK_EQ(s.delivered_bytes, stream.size());
  CHECK_EQ(s.client_bytes, stream.size());
  CHECK_EQ(s.retransmitted_bytes, 0u);
  CHECK_EQ(s.ooo_segments_buffered, 0u);
  CHECK_EQ(s.flows_total, 1u);
  CHECK_EQ(s.flows_open, 0u);
  CHECK_EQ(s.flows_fin, 1u);
  CHECK(f.key == (FlowKey{kClientIp, kServerIp, 40000, kPort}));
  CHECK(!rec.bad_callback);
}

TEST(reassembly_random_permutations_within_the_cap_give_the_exact_stream) {
  pd3test::Rng rng(2);
  uint64_t buffered = 0;
  for (int trial = 0; trial < 300; ++trial) {
    Recorder rec;
    auto r = make(&rec);
    REQUIRE(r);
    const auto stream = random_bytes(rng, 1000 + rng.below(30000));
    const uint32_t isn = uint32_t(rng.next());
    r->on_segment(seg(40001, isn, pd3::kTcpSyn), 1);
    auto pieces = cut(rng, stream.size(), 1, 2000);
    const size_t last = pieces.size() - 1;
    std::vector<size_t> order(pieces.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    shuffle(rng, &order);
    for (size_t i : order) {
      const uint8_t flags = pd3::kTcpAck | (i == last ? pd3::kTcpFin : 0);  // the FIN may come early
      r->on_segment(data(40001, isn, stream, pieces[i].first, pieces[i].second, flags), 2 + i);
    }
    FlowLog& f = rec.only();
    CHECK(f.bytes == stream);
    CHECK_EQ(f.closes, 1);
    CHECK(f.why == FlowEnd::kFin);
    bool gap = false;
    for (const auto& d : f.deliveries) gap |= d.after_gap;
    CHECK(!gap);
    CHECK_EQ(r->stats().gaps, 0u);
    CHECK_EQ(r->stats().ooo_bytes, 0u);
    buffered += r->stats().ooo_segments_buffered;
    CHECK(!rec.bad_callback);
  }
  CHECK(buffered > 1000);  // the permutations really went through the out-of-order buffer
}

TEST(reassembly_drops_retransmits_and_keeps_only_the_new_tail_of_overlaps) {
  Recorder rec;
  auto r = make(&rec);
  REQUIRE(r);
  pd3test::Rng rng(3);
  const auto stream = random_bytes(rng, 1000);
  const uint32_t isn = 5;
  const uint16_t p = 40002;
  r->on_segment(seg(p, isn, pd3::kTcpSyn), 1);
  r->on_segment(data(p, isn, stream, 0, 100), 2);
  r->on_segment(data(p, isn, stream, 0, 100), 3);   // whole retransmit: 100 dropped
  r->on_segment(data(p, isn, stream, 50, 100), 4);  // overlap: only [100, 150) is new
  r->on_segment(data(p, isn, stream, 120, 10), 5);  // inside what was delivered: dropped
  FlowLog& f = rec.only();
  REQUIRE(f.deliveries.size() == 2);
  CHECK(f.deliveries[1].ptr == stream.data() + 100);  // the new tail, still zero copy
  CHECK_EQ(f.deliveries[1].len, 50u);
  CHECK_EQ(r->stats().retransmitted_bytes, 100u + 50u + 10u);

  // Overlapping out-of-order pieces: only the bytes not yet buffered are kept.
  r->on_segment(data(p, isn, stream, 300, 100), 6);  // buffers [300, 400)
  r->on_segment(data(p, isn, stream, 250, 100), 7);  // keeps [250, 300), drops 50
  r->on_segment(data(p, isn, stream, 350, 150), 8);  // keeps [400, 500), drops 50
  r->on_segment(data(p, isn, stream, 260, 20), 9);   // all buffered already: drops 20
  CHECK_EQ(f.bytes.size(), 150u);
  CHECK_EQ(r->stats().ooo_bytes, 250u);
  r->on_segment(data(p, isn, stream, 140, 120), 10);  // [150, 260) new: fills the hole, drains to 500
  CHECK_EQ(f.bytes.size(), 500u);
  CHECK(std::equal(f.bytes.begin(), f.bytes.end(), stream.begin()));
  CHECK_EQ(r->stats().ooo_bytes, 0u);
  // 160 before; 50 + 50 + 20 while buffering; 10 of the filling segment; 10 of the buffered [250, 300).
  CHECK_EQ(r->stats().retransmitted_bytes, 160u + 120u + 10u + 10u);
  CHECK_EQ(r->stats().gaps, 0u);
  CHECK(!rec.bad_callback);
}

TEST(reassembly_duplicate_syn_is_ignored_and_a_new_isn_replaces_the_flow) {
  Recorder rec;
  auto r = make(&rec);
  REQUIRE(r);
  const uint8_t a[] = {'a', 'b', 'c'};
  const uint8_t b[] = {'x', 'y'};
  r->on_segment(seg(40003, 100, pd3::kTcpSyn), 1);
  r->on_segment(seg(40003, 101, pd3::kTcpAck, a, 3), 2);
  r->on_segment(seg(40003, 100, pd3::kTcpSyn), 3);  // retransmitted SYN
  r->on_segment(seg(40003, 104, pd3::kTcpAck, a, 3), 4);
  CHECK_EQ(r->stats().duplicate_syns, 1u);
  CHECK_EQ(rec.flows.size(), 1u);
  CHECK_EQ(rec.only().bytes.size(), 6u);
  r->on_segment(seg(40003, 900000, pd3::kTcpSyn), 5);  // the 4-tuple is reused by a new connection
  r->on_segment(seg(40003, 900001, pd3::kTcpAck, b, 2), 6);
  REQUIRE(rec.flows.size() == 2);
  CHECK(rec.nth(0).why == FlowEnd::kReplaced);
  CHECK_EQ(rec.nth(0).closes, 1);
  CHECK(rec.nth(1).synced);
  CHECK(rec.nth(1).bytes == std::vector<uint8_t>(b, b + 2));
  CHECK(!rec.nth(1).deliveries[0].after_gap);
  CHECK_EQ(r->stats().flows_replaced, 1u);
  CHECK_EQ(r->stats().flows_open, 1u);
  CHECK(!rec.bad_callback);
}

TEST(reassembly_gap_when_the_buffer_overflows_skips_exactly_the_missing_bytes) {
  Recorder rec;
  pd3::ReassemblyLimits lim;
  lim.ooo_flow_bytes = 8 << 10;
  auto r = make(&rec, lim);
  REQUIRE(r);
  pd3test::Rng rng(4);
  const auto stream = random_bytes(rng, 64000);
  const uint32_t isn = 77;
  const uint16_t p = 40004;
  r->on_segment(seg(p, isn, pd3::kTcpSyn), 1);
  for (size_t off = 0; off < stream.size(); off += 1000) {
    if (off == 5000) continue;  // lost, never retransmitted
    const uint8_t fin = off + 1000 == stream.size() ? pd3::kTcpFin : 0;
    r->on_segment(data(p, isn, stream, off, 1000, pd3::kTcpAck | fin), 2 + off);
  }
  FlowLog& f = rec.only();
  std::vector<uint8_t> expect(stream.begin(), stream.begin() + 5000);
  expect.insert(expect.end(), stream.begin() + 6000, stream.end());
  CHECK(f.bytes == expect);  // the stream with exactly the lost segment's bytes absent
  int gaps = 0;
  for (const auto& d : f.deliveries) {
    if (!d.after_gap) continue;
    ++gaps;
    CHECK_EQ(d.at, 5000u);  // flagged right where the bytes are missing
  }
  CHECK_EQ(gaps, 1);
  CHECK_EQ(r->stats().gaps, 1u);
  CHECK_EQ(r->stats().gap_bytes, 1000u);
  CHECK(f.why == FlowEnd::kFin);
  CHECK_EQ(r->stats().ooo_bytes, 0u);

  // Data far past the window with nothing buffered: skip straight to it and deliver it in place.
  Recorder rec2;
  auto r2 = make(&rec2, lim);
  REQUIRE(r2);
  r2->on_segment(seg(p, isn, pd3::kTcpSyn), 1);
  r2->on_segment(data(p, isn, stream, 0, 1000), 2);
  r2->on_segment(data(p, isn, stream, 30000, 1000), 3);
  FlowLog& g = rec2.only();
  REQUIRE(g.deliveries.size() == 2);
  CHECK(g.deliveries[1].after_gap);
  CHECK(g.deliveries[1].ptr == stream.data() + 30000);
  CHECK_EQ(r2->stats().gap_bytes, 29000u);
  CHECK(!rec.bad_callback);
  CHECK(!rec2.bad_callback);
}

TEST(reassembly_global_cap_makes_a_flow_skip_instead_of_buffering) {
  Recorder rec;
  pd3::ReassemblyLimits lim;
  lim.ooo_flow_bytes = 64 << 10;
  lim.ooo_total_bytes = 6000;
  auto r = make(&rec, lim);
  REQUIRE(r);
  pd3test::Rng rng(5);
  const auto stream = random_bytes(rng, 20000);
  for (uint16_t p = 41000; p < 41003; ++p) {
    r->on_segment(seg(p, 0, pd3::kTcpSyn), 1);
    r->on_segment(data(p, 0, stream, 1000, 1000), 2);  // each flow buffers 1000 after a hole
    r->on_segment(data(p, 0, stream, 3000, 1000), 3);  // and 1000 after another hole
  }
  // 3 flows x 2 pieces x (1000 + overhead) > 6000: the third flow could not buffer its second piece.
  CHECK(r->stats().ooo_bytes <= 6000u);
  CHECK(r->stats().gaps >= 1u);
  pd3test::Errors errors{"global"};
  for (auto& [id, f] : rec.flows) CHECK(check_subsequence(f, stream, &errors) >= 0);
  CHECK(!rec.bad_callback);
}

TEST(reassembly_hole_timeout_skips_a_hole_that_is_never_filled) {
  Recorder rec;
  pd3::ReassemblyLimits lim;
  lim.hole_timeout_ms = 50;
  auto r = make(&rec, lim);
  REQUIRE(r);
  pd3test::Rng rng(6);
  const auto stream = random_bytes(rng, 3000);
  const uint16_t p = 40005;
  r->on_segment(seg(p, 0, pd3::kTcpSyn), 1 * kMs);
  r->on_segment(data(p, 0, stream, 0, 1000), 2 * kMs);
  r->on_segment(data(p, 0, stream, 2000, 1000), 3 * kMs);  // [1000, 2000) missing
  r->expire(52 * kMs);                                      // 49 ms after the hole appeared
  CHECK_EQ(rec.only().bytes.size(), 1000u);
  r->expire(53 * kMs);
  FlowLog& f = rec.only();
  REQUIRE(f.deliveries.size() == 2);
  CHECK(f.deliveries[1].after_gap);
  CHECK(std::equal(f.bytes.begin() + 1000, f.bytes.end(), stream.begin() + 2000));
  CHECK_EQ(r->stats().gap_bytes, 1000u);
  CHECK_EQ(f.closes, 0);

  // A FIN whose preceding bytes never come: the flow still ends (by the hole timer) with a gap.
  r->on_segment(seg(p, 1 + 3000 + 500, pd3::kTcpAck | pd3::kTcpFin), 60 * kMs);
  CHECK_EQ(f.closes, 0);
  r->expire(110 * kMs);
  CHECK_EQ(f.closes, 1);
  CHECK(f.why == FlowEnd::kFin);
  CHECK_EQ(r->stats().gap_bytes, 1500u);
  CHECK(!rec.bad_callback);
}

TEST(reassembly_handles_sequence_wraparound) {
  pd3test::Rng rng(7);
  const auto stream = random_bytes(rng, 20000);
  for (int variant = 0; variant < 3; ++variant) {
    Recorder rec;
    auto r = make(&rec);
    REQUIRE(r);
    const uint32_t isn = 0xFFFFFFFFu - 5000;  // the stream crosses 2^32 a quarter of the way in
    r->on_segment(seg(40006, isn, pd3::kTcpSyn), 1);
    auto pieces = cut(rng, stream.size(), 100, 1500);
    if (variant == 1) shuffle(rng, &pieces);
    for (size_t i = 0; i < pieces.size(); ++i) {
      r->on_segment(data(40006, isn, stream, pieces[i].first, pieces[i].second), 2 + i);
      if (variant == 2 && i > 3) {  // retransmits straddling the wrap point
        const auto& back = pieces[i - 3];
        r->on_segment(data(40006, isn, stream, back.first, back.second + pieces[i - 2].second), 2 + i);
      }
    }
    CHECK(rec.only().bytes == stream);
    CHECK_EQ(r->stats().gaps, 0u);
  }
  // A flow first seen mid-stream just before the wrap.
  Recorder rec;
  auto r = make(&rec);
  REQUIRE(r);
  const uint32_t first = 0xFFFFFF00u;
  for (size_t off = 0; off < 2000; off += 500)
    r->on_segment(seg(40007, first + uint32_t(off), pd3::kTcpAck, stream.data() + off, 500), 1);
  CHECK(std::equal(rec.only().bytes.begin(), rec.only().bytes.end(), stream.begin()));
  CHECK_EQ(rec.only().bytes.size(), 2000u);
}

TEST(reassembly_50_interleaved_flows_are_each_reassembled_exactly) {
  Recorder rec;
  auto r = make(&rec);
  REQUIRE(r);
  pd3test::Rng rng(8);
  constexpr int kFlows = 50;
  std::vector<std::vector<uint8_t>> streams;
  std::vector<uint32_t> isns;
  std::vector<TcpSegmentView> later;
  for (int i = 0; i < kFlows; ++i) {
    streams.push_back(random_bytes(rng, 4000 + rng.below(12000)));
    isns.push_back(uint32_t(rng.next()));
  }
  for (int i = 0; i < kFlows; ++i) {
    const uint16_t port = uint16_t(42000 + i);
    const uint32_t ip = kClientIp + uint32_t(i % 7);  // several client addresses, some sharing ports' low bits
    r->on_segment(seg(port, isns[size_t(i)], pd3::kTcpSyn, nullptr, 0, ip), 1);  // handshakes come first
    auto pieces = cut(rng, streams[size_t(i)].size(), 1, 1460);
    for (size_t k = 0; k < pieces.size(); ++k) {
      const auto& [off, len] = pieces[k];
      const uint8_t fin = k + 1 == pieces.size() ? pd3::kTcpFin : 0;
      TcpSegmentView s = seg(port, isns[size_t(i)] + 1 + uint32_t(off), uint8_t(pd3::kTcpAck | fin),
                             streams[size_t(i)].data() + off, uint32_t(len), ip);
      later.push_back(s);
      if (rng.below(10) == 0) later.push_back(s);  // some retransmits
    }
  }
  shuffle(rng, &later);
  for (size_t i = 0; i < later.size(); ++i) r->on_segment(later[i], 2 + i);
  REQUIRE(rec.flows.size() == size_t(kFlows));
  int exact = 0;
  for (int i = 0; i < kFlows; ++i) {
    const FlowLog& f = rec.nth(size_t(i));
    CHECK_EQ(f.key.client_port, 42000 + i);
    exact += f.bytes == streams[size_t(i)] && f.closes == 1 && f.why == FlowEnd::kFin;
  }
  CHECK_EQ(exact, kFlows);
  CHECK_EQ(r->stats().gaps, 0u);
  CHECK_EQ(r->stats().flows_open, 0u);
  CHECK_EQ(r->stats().ooo_bytes, 0u);
  CHECK(!rec.bad_callback);
}

TEST(reassembly_cleans_up_on_fin_rst_and_idle) {
  Recorder rec;
  pd3::ReassemblyLimits lim;
  lim.idle_timeout_ms = 1000;
  lim.hole_timeout_ms = 500;
  lim.linger_ms = 100;
  auto r = make(&rec, lim);
  REQUIRE(r);
  pd3test::Rng rng(9);
  const auto stream = random_bytes(rng, 3000);

  // FIN before the bytes ahead of it: the flow ends only after they are delivered.
  r->on_segment(seg(43000, 0, pd3::kTcpSyn), 1 * kMs);
  r->on_segment(data(43000, 0, stream, 1000, 2000, pd3::kTcpAck | pd3::kTcpFin), 2 * kMs);
  CHECK_EQ(rec.nth(0).closes, 0);
  r->on_segment(data(43000, 0, stream, 0, 1000), 3 * kMs);
  CHECK_EQ(rec.nth(0).closes, 1);
  CHECK(rec.nth(0).why == FlowEnd::kFin);
  CHECK(rec.nth(0).bytes == stream);
  // A copy of data that arrives after the FIN end (TCP resent it before its ACK got through) is a
  // retransmit: client bytes less retransmitted bytes stay the bytes delivered.
  const uint64_t resent = r->stats().retransmitted_bytes;
  r->on_segment(data(43000, 0, stream, 0, 1000), 3 * kMs + 1);
  CHECK_EQ(r->stats().retransmitted_bytes, resent + 1000);
  CHECK_EQ(r->stats().client_bytes - r->stats().retransmitted_bytes, r->stats().delivered_bytes);
  CHECK_EQ(rec.nth(0).closes, 1);

  // A client RST drops what was buffered.
  r->on_segment(seg(43001, 0, pd3::kTcpSyn), 4 * kMs);
  r->on_segment(data(43001, 0, stream, 1000, 500), 5 * kMs);
  CHECK_EQ(r->stats().ooo_bytes, 500u);
  r->on_segment(seg(43001, 2000, pd3::kTcpRst), 6 * kMs);
  CHECK(rec.nth(1).why == FlowEnd::kReset);
  CHECK_EQ(r->stats().ooo_bytes, 0u);
  CHECK_EQ(r->stats().ooo_segments_dropped, 1u);

  // A server RST ends the flow too.
  r->on_segment(seg(43002, 0, pd3::kTcpSyn), 7 * kMs);
  r->on_segment(server_seg(43002, pd3::kTcpRst | pd3::kTcpAck), 8 * kMs);
  CHECK(rec.nth(2).why == FlowEnd::kReset);
  CHECK_EQ(r->stats().flows_reset, 2u);

  // Idle.
  r->on_segment(seg(43003, 0, pd3::kTcpSyn), 10 * kMs);
  r->on_segment(data(43003, 0, stream, 0, 10), 20 * kMs);
  r->expire(1019 * kMs);
  CHECK_EQ(rec.nth(3).closes, 0);
  r->expire(1020 * kMs);
  CHECK(rec.nth(3).why == FlowEnd::kIdle);
  CHECK_EQ(r->stats().flows_open, 0u);

  // Closed flows linger: their late segments open nothing; then they are forgotten.
  CHECK_EQ(r->tracked_flows(), 1u);  // only the idle one closed less than 100 ms ago
  r->on_segment(data(43003, 0, stream, 0, 10), 1030 * kMs);              // a late retransmit
  r->on_segment(seg(43003, 11, pd3::kTcpAck), 1031 * kMs);               // the last ACK
  CHECK_EQ(rec.flows.size(), 4u);
  r->on_segment(seg(43100, 5, pd3::kTcpAck), 1032 * kMs);                // pure ACK, no flow: ignored
  r->on_segment(seg(43100, 5, pd3::kTcpFin | pd3::kTcpAck), 1033 * kMs);  // bare FIN: ignored
  CHECK_EQ(rec.flows.size(), 4u);
  r->expire(1120 * kMs);
  CHECK_EQ(r->tracked_flows(), 0u);
  r->on_segment(data(43003, 0, stream, 10, 10), 1121 * kMs);  // now it is a new, mid-stream flow
  CHECK_EQ(rec.flows.size(), 5u);
  CHECK(!rec.nth(4).synced);
  CHECK_EQ(r->stats().flows_unsynced, 1u);
  CHECK(r->stats().ignored_segments >= 4u);

  // Segments that are neither to nor from the app are ignored.
  TcpSegmentView other = seg(43200, 0, pd3::kTcpSyn);
  other.dst_port = kPort + 1;
  r->on_segment(other, 1122 * kMs);
  CHECK_EQ(rec.flows.size(), 5u);
  CHECK_EQ(r->stats().foreign_segments, 1u);
  r->close_all();
  CHECK(rec.nth(4).why == FlowEnd::kShutdown);
  CHECK_EQ(r->tracked_flows(), 0u);
  CHECK(!rec.bad_callback);
}

TEST(reassembly_full_table_evicts_the_least_recently_active_flow) {
  Recorder rec;
  pd3::ReassemblyLimits lim;
  lim.max_flows = 4;
  auto r = make(&rec, lim);
  REQUIRE(r);
  const uint8_t b[] = {1, 2, 3};
  for (uint16_t i = 0; i < 4; ++i) r->on_segment(seg(uint16_t(44000 + i), 0, pd3::kTcpSyn), 1 + i);
  r->on_segment(seg(44000, 1, pd3::kTcpAck, b, 3), 10);  // 44000 is now the most recent
  r->on_segment(seg(44004, 0, pd3::kTcpSyn), 11);         // full: 44001 goes
  CHECK_EQ(r->stats().flows_evicted, 1u);
  CHECK(rec.nth(1).why == FlowEnd::kEvicted);
  CHECK_EQ(rec.nth(0).closes, 0);
  CHECK_EQ(r->tracked_flows(), 4u);
  // A closed flow is forgotten before any open one is evicted.
  r->on_segment(seg(44002, 1, pd3::kTcpAck | pd3::kTcpFin), 12);
  r->on_segment(seg(44005, 0, pd3::kTcpSyn), 13);
  CHECK_EQ(r->stats().flows_evicted, 1u);
  CHECK_EQ(r->tracked_flows(), 4u);
  // The evicted flow comes back as a new flow (mid-stream) when it sends again.
  r->on_segment(seg(44001, 1, pd3::kTcpAck, b, 3), 14);
  CHECK_EQ(r->stats().flows_evicted, 2u);
  CHECK_EQ(rec.flows.size(), 7u);
  CHECK(rec.nth(6).deliveries.at(0).after_gap);
  CHECK(!rec.bad_callback);
}

TEST(reassembly_mid_stream_flow_is_marked_for_resync) {
  Recorder rec;
  auto r = make(&rec);
  REQUIRE(r);
  const uint8_t a[] = "SET k v\r\n";
  r->on_segment(seg(45000, 123456, pd3::kTcpAck, a, 9), 1);
  r->on_segment(seg(45000, 123465, pd3::kTcpAck, a, 9), 2);
  FlowLog& f = rec.only();
  CHECK(!f.synced);
  REQUIRE(f.deliveries.size() == 2);
  CHECK(f.deliveries[0].after_gap);
  CHECK(!f.deliveries[1].after_gap);
  CHECK_EQ(r->stats().flows_unsynced, 1u);
}

TEST(reassembly_treats_a_cut_capture_as_a_gap) {
  Recorder rec;
  auto r = make(&rec);
  REQUIRE(r);
  pd3test::Rng rng(10);
  const auto stream = random_bytes(rng, 3000);
  r->on_segment(seg(45001, 0, pd3::kTcpSyn), 1);
  TcpSegmentView s = data(45001, 0, stream, 0, 1000);
  s.payload_len = 600;  // the capture kept 600 of 1000 payload bytes
  r->on_segment(s, 2);
  r->on_segment(data(45001, 0, stream, 1000, 1000), 3);
  FlowLog& f = rec.only();
  REQUIRE(f.deliveries.size() == 2);
  CHECK_EQ(f.deliveries[0].len, 600u);
  CHECK(f.deliveries[1].after_gap);
  CHECK_EQ(r->stats().gap_bytes, 400u);
  // Buffered bytes covering part of a cut tail are still delivered.
  r->on_segment(data(45001, 0, stream, 2500, 500), 4);
  TcpSegmentView t = data(45001, 0, stream, 2000, 800);
  t.payload_len = 100;
  r->on_segment(t, 5);
  CHECK_EQ(f.bytes.size(), 600u + 1000u + 100u + 500u);
  CHECK_EQ(r->stats().gap_bytes, 400u + 400u);
  pd3test::Errors errors{"cut"};
  CHECK_EQ(check_subsequence(f, stream, &errors), 800);
}

TEST(reassembly_rejects_bad_options) {
  Recorder rec;
  std::unique_ptr<TcpReassembler> r;
  pd3::ReassemblyOptions o;
  o.server_port = 0;
  CHECK_EQ(TcpReassembler::create(o, rec.callbacks(), &r), PD3_E_INVAL);
  o.server_port = kPort;
  CHECK_EQ(TcpReassembler::create(o, pd3::FlowCallbacks{}, &r), PD3_E_INVAL);  // no deliver
  o.limits.max_flows = 0;
  CHECK_EQ(TcpReassembler::create(o, rec.callbacks(), &r), PD3_E_INVAL);
  o.limits = {};
  o.limits.hole_timeout_ms = o.limits.idle_timeout_ms + 1;
  CHECK_EQ(TcpReassembler::create(o, rec.callbacks(), &r), PD3_E_INVAL);
  o.limits = {};
  o.limits.ooo_total_bytes = 0;
  CHECK_EQ(TcpReassembler::create(o, rec.callbacks(), &r), PD3_E_INVAL);
  o.limits = {};
  o.limits.max_flows = (1u << 24) + 1;
  CHECK_EQ(TcpReassembler::create(o, rec.callbacks(), &r), PD3_E_INVAL);
  CHECK(!r);
  o.limits = {};
  CHECK_EQ(TcpReassembler::create(o, rec.callbacks(), &r), PD3_OK);
}

// Random streams sent as a TCP sender might: random segment sizes, retransmits of whole earlier
// segments and of re-cut ranges, local reordering, and (in lossy trials, with small buffers and
// timers firing at random) segments lost for good. Checked against the original stream.
TEST(reassembly_property_random_segmentation_retransmits_reorders_and_losses) {
  pd3test::Rng rng(11);
  const int trials = int(600 / pd3test::stress_scale());
  int exact = 0, lossy_trials = 0, lossy_gapped = 0;
  for (int trial = 0; trial < trials; ++trial) {
    const bool lossy = trial % 3 == 0;
    lossy_trials += lossy;
    Recorder rec;
    pd3::ReassemblyLimits lim;
    lim.hole_timeout_ms = 20;
    lim.ooo_flow_bytes = lossy ? 2000 + rng.below(30000) : 1 << 20;
    auto r = make(&rec, lim);
    REQUIRE(r);
    const auto stream = random_bytes(rng, 1 + rng.below(50000));
    const uint32_t isn = trial % 4 == 0 ? 0xFFFFFFFFu - rng.below(60000) : uint32_t(rng.next());
    const auto pieces = cut(rng, stream.size(), 1, 1 + rng.below(3000));
    // The sender's transmissions, in sending order.
    std::vector<std::pair<size_t, size_t>> sent;
    for (size_t i = 0; i < pieces.size(); ++i) {
      if (!(lossy && rng.below(12) == 0)) sent.push_back(pieces[i]);
      if (rng.below(6) == 0) sent.push_back(pieces[rng.below(uint32_t(i + 1))]);  // retransmit
      if (rng.below(6) == 0) {                                                    // re-cut range
        const size_t end = pieces[i].first + pieces[i].second;
        const size_t a = rng.below(uint32_t(end));
        sent.push_back({a, 1 + rng.below(uint32_t(end - a))});
      }
    }
    // Local reordering: each transmission may move up to 8 places.
    for (size_t i = 0; i + 1 < sent.size(); ++i) std::swap(sent[i], sent[std::min(sent.size() - 1, i + rng.below(9))]);
    uint64_t now = 1 * kMs;
    r->on_segment(seg(46000, isn, pd3::kTcpSyn), now);
    for (const auto& [off, len] : sent) {
      now += rng.below(3) * kMs;
      r->on_segment(data(46000, isn, stream, off, len), now);
      if (lossy && rng.below(20) == 0) r->expire(now);
    }
    r->on_segment(seg(46000, isn + 1 + uint32_t(stream.size()), pd3::kTcpAck | pd3::kTcpFin), now);
    r->expire(now + 1000 * kMs);  // any hole left is skipped, then the FIN ends the flow

    FlowLog& f = rec.only();
    pd3test::Errors errors{"property"};
    const long long skipped = check_subsequence(f, stream, &errors);
    CHECK(skipped >= 0);
    const auto& s = r->stats();
    CHECK_EQ(s.delivered_bytes + s.gap_bytes, stream.size());  // every byte delivered or counted missing
    CHECK_EQ(f.closes, 1);
    CHECK(f.why == FlowEnd::kFin);
    CHECK_EQ(s.ooo_bytes, 0u);
    CHECK(!rec.bad_callback);
    if (!lossy) {
      CHECK(f.bytes == stream);
      CHECK_EQ(s.gaps, 0u);
    } else {
      lossy_gapped += s.gaps > 0;
    }
    exact += f.bytes == stream;
    CHECK_EQ(errors.n, 0u);
  }
  std::printf("    [reassembly property] %d trials, %d exact, %d of %d lossy trials had gaps\n", trials, exact,
              lossy_gapped, lossy_trials);
  CHECK(lossy_gapped > 0);
}
