// batch_slot_test.cpp — PD3_SLOT_RECORDS, a batch of records under one slot header and seal: both
// readers (the agent's of requests, the host's of responses) and both writers (the host's
// RequestBatch, the agent's ResponseWriter), hand-built slots with broken inner framing, and the
// soft `max` of a drain.
#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "agent_rings.hpp"
#include "common/slot_records.hpp"
#include "harness.hpp"
#include "host/request_batch.hpp"
#include "host/response_reader.hpp"
#include "raw_ring.hpp"

namespace {

using pd3test::GuardedRing;
using pd3test::put_raw_slot;

// The body of a batch slot, built record by record as a producer would (each on an 8-byte boundary).
struct Body {
  std::array<uint8_t, 512> bytes{};  // zeroed: the alignment padding stays 0
  size_t size = 0;
  uint16_t count = 0;
  void add(const void* hdr, size_t hdr_len, const void* data = nullptr, size_t data_len = 0) {
    REQUIRE(size + pd3::record_span(hdr_len + data_len) <= bytes.size());
    std::memcpy(bytes.data() + size, hdr, hdr_len);
    if (data_len) std::memcpy(bytes.data() + size + hdr_len, data, data_len);
    size += pd3::record_span(hdr_len + data_len);
    ++count;
  }
  uint32_t slot_len() const { return uint32_t(pd3::slot_len(size)); }
};

// Puts `body` as one batch slot at `pos` (length and count overridable to break it).
void put_batch(pd3_control* c, bool request, uint64_t pos, const Body& body, uint32_t length = 0, int count = -1) {
  put_raw_slot(c, request, pos, length ? length : body.slot_len(), PD3_SLOT_RECORDS, body.bytes.data(), body.size, 0,
               count < 0 ? body.count : uint16_t(count));
}

struct Req {
  pd3_request hdr;
  std::string payload;
  uint64_t pos;
};

// Drains requests through the agent's reader: shared memory (`latency_ns` < 0), or the latency
// backend, whose reads give no order inside them (the reader's second-copy path).
int take_requests(pd3_control* c, std::vector<Req>* out, uint32_t max = PD3_MAX_INFLIGHT, int64_t latency_ns = -1) {
  return pd3test::drain_requests(
      c, max,
      [&](const pd3::RequestView& v) {
        CHECK_EQ(v.status, PD3_OK);
        out->push_back({v.hdr, std::string(reinterpret_cast<const char*>(v.payload), pd3_request_payload_len(&v.hdr)),
                        v.pos});
      },
      latency_ns);
}

struct Resp {
  pd3_response hdr;
  std::string data;
  bool ok;
};

int take_responses(pd3_control* c, std::vector<Resp>* out, uint32_t max = PD3_MAX_INFLIGHT) {
  return pd3::drain_responses(c, max, [&](const pd3_response& r, const uint8_t* data, bool ok) {
    out->push_back({r, ok ? std::string(reinterpret_cast<const char*>(data), pd3_response_data_len(&r)) : "", ok});
  });
}

// READ 1, WRITE 2 (13 bytes), PREFETCH 3 (key "abc"), READ 4: 16 + 32 + 24 + 16 = 88 body bytes.
Body four_requests() {
  Body b;
  const pd3_request r1 = pd3_make_request(pd3_op_id(PD3_OP_READ, 1), 7, 64, 100);
  const pd3_request w2 = pd3_make_request(pd3_op_id(PD3_OP_WRITE, 2), 7, 0, 13);
  const pd3_request p3 = pd3_make_request(pd3_op_id(PD3_OP_PREFETCH, 3), 0, 512, 3);
  const pd3_request r4 = pd3_make_request(pd3_op_id(PD3_OP_READ, 4), 8, 0, 1);
  b.add(&r1, sizeof r1);
  b.add(&w2, sizeof w2, "thirteen byte", 13);
  b.add(&p3, sizeof p3, "abc", 3);
  b.add(&r4, sizeof r4);
  return b;
}

// READ 1 (5 data bytes), WRITE 2 (no data), READ 3 failed with PD3_E_RANGE: 16 + 8 + 8 = 32 bytes.
Body three_responses() {
  Body b;
  const pd3_response r1{pd3_op_id(PD3_OP_READ, 1), 0, 5};
  const pd3_response w2{pd3_op_id(PD3_OP_WRITE, 2), 0, 4096};
  const pd3_response e3{pd3_op_id(PD3_OP_READ, 3), uint16_t(-PD3_E_RANGE), 64};
  b.add(&r1, sizeof r1, "hello", 5);
  b.add(&w2, sizeof w2);
  b.add(&e3, sizeof e3);
  return b;
}

}  // namespace

TEST(batch_slot_requests_reach_the_agent_in_order) {
  for (const int64_t latency : {int64_t(-1), int64_t(0)}) {
    GuardedRing g(4096);
    REQUIRE(g.base != nullptr);
    pd3_control* c = g.c();
    const Body b = four_requests();
    REQUIRE(b.slot_len() == 112u);  // 16 + 88, padded to 16
    put_batch(c, true, 0, b);
    std::vector<Req> got;
    CHECK_EQ(take_requests(c, &got, PD3_MAX_INFLIGHT, latency), 4);
    REQUIRE(got.size() == 4);
    for (uint32_t i = 0; i < 4; ++i) CHECK_EQ(pd3_id_of(got[i].hdr.op_id), i + 1);
    CHECK_EQ(got[0].hdr.offset, 64u);
    CHECK(got[1].payload == std::string("thirteen byte"));
    CHECK(got[2].payload == std::string("abc"));
    CHECK_EQ(got[3].hdr.region, 8u);
    for (const Req& r : got) CHECK_EQ(r.pos, 0u);  // a batch's records share their slot's position
    CHECK_EQ(c->req_head, 112u);
    CHECK_EQ(c->agent_requests, 4u);
  }
}

TEST(batch_slot_responses_reach_the_host_in_order) {
  GuardedRing g(4096);
  REQUIRE(g.base != nullptr);
  pd3_control* c = g.c();
  const Body b = three_responses();
  put_batch(c, false, 0, b);
  std::vector<Resp> got;
  CHECK_EQ(take_responses(c, &got), 3);
  REQUIRE(got.size() == 3);
  for (const Resp& r : got) CHECK(r.ok);
  CHECK(got[0].data == std::string("hello"));
  CHECK_EQ(got[1].hdr.size, 4096u);  // a WRITE's size is not data
  CHECK_EQ(got[2].hdr.status, uint16_t(-PD3_E_RANGE));
  CHECK_EQ(c->resp_head, 48u);
  CHECK_EQ(c->host_responses, 3u);
}

TEST(batch_slot_broken_inner_framing_stops_the_pass) {
  // Each case is one batch slot after a good one-record slot: the good record is delivered,
  // nothing of the broken slot is, the pass reports PD3_E_CORRUPT, and the head stays at the
  // broken slot (a second pass reports it again). Near the ring's end, before a guard page, so
  // no reader may stray past the slot.
  struct Case {
    const char* what;
    int count;         // -1: the body's own
    uint32_t length;   // 0: the body's own
    bool oversize_write;
  };
  const Case cases[] = {
      {"count 0", 0, 0, false},
      {"count one more than the records", 5, 0, false},
      {"count one less: the records do not fill the slot", 3, 0, false},
      {"16 bytes of slot past the records", -1, 128, false},
      {"a WRITE claiming more payload than the slot holds", -1, 0, true},
      {"count at its largest", 65535, 0, false},
  };
  for (const Case& k : cases) {
    for (const int64_t latency : {int64_t(-1), int64_t(0)}) {
      GuardedRing g(4096);
      REQUIRE(g.base != nullptr);
      pd3_control* c = g.c();
      const uint64_t start = 4096 - 128 - 32;  // the good slot, then the bad one, near the ring's end
      c->req_head = c->req_tail = start;
      const pd3_request good = pd3_make_request(pd3_op_id(PD3_OP_READ, 9), 1, 0, 4);
      put_raw_slot(c, true, start, 32, PD3_SLOT_RECORD, &good, sizeof good);
      Body b = four_requests();
      if (k.oversize_write) {
        pd3_request w;
        std::memcpy(&w, b.bytes.data() + 16, sizeof w);
        w.size = 0xFFFFFF00u;
        std::memcpy(b.bytes.data() + 16, &w, sizeof w);
      }
      const uint32_t len = k.length ? k.length : b.slot_len();
      put_batch(c, true, start + 32, b, len, k.count);
      std::vector<Req> got;
      const int rc = take_requests(c, &got, PD3_MAX_INFLIGHT, latency);
      if (rc != PD3_E_CORRUPT || got.size() != 1) std::fprintf(stderr, "  case: %s, latency %lld\n", k.what, (long long)latency);
      CHECK_EQ(rc, PD3_E_CORRUPT);
      CHECK_EQ(got.size(), 1u);
      CHECK_EQ(c->req_head, start + 32);
      got.clear();
      CHECK_EQ(take_requests(c, &got, PD3_MAX_INFLIGHT, latency), PD3_E_CORRUPT);
      CHECK(got.empty());
    }
  }
}

TEST(batch_slot_broken_response_framing_stops_the_host) {
  // As for requests, but the host reads a batch in one pass: the records before the break are
  // delivered, and the pass ends there with PD3_E_CORRUPT (after which the host reads the ring no
  // more: HostCore::ring_broken).
  const struct {
    int count;
    uint32_t length;
    size_t delivered;  // of the batch, before the break: the host reads it once, in one pass
  } cases[] = {{0, 0, 0}, {4, 0, 3}, {1, 0, 1}, {-1, 64, 3}, {300, 0, 3}};
  // (Count 2 of these three would pass: the third record's 8 bytes look like the slot's padding. A
  // producer that miscounts that way loses a response; no reader is misled about bounds.)
  for (const auto& k : cases) {
    GuardedRing g(4096);
    REQUIRE(g.base != nullptr);
    pd3_control* c = g.c();
    const uint64_t start = 4096 - 64 - 32;
    c->resp_head = c->resp_tail = start;
    REQUIRE(pd3test::publish_response(c, pd3_op_id(PD3_OP_WRITE, 9), PD3_OK, nullptr, 8) == PD3_OK);  // 32 bytes
    const Body b = three_responses();
    put_batch(c, false, start + 32, b, k.length ? k.length : b.slot_len(), k.count);
    std::vector<Resp> got;
    CHECK_EQ(take_responses(c, &got), PD3_E_CORRUPT);
    CHECK_EQ(got.size(), 1 + k.delivered);
    for (const Resp& r : got) CHECK(r.ok);  // each delivered record whole and in bounds
    CHECK_EQ(c->resp_head, start + 32);
  }
  // A READ whose data would run past the slot (and the ring): refused, never read.
  GuardedRing g(4096);
  REQUIRE(g.base != nullptr);
  pd3_control* c = g.c();
  c->resp_head = c->resp_tail = 4096 - 48;
  Body b = three_responses();
  const pd3_response big{pd3_op_id(PD3_OP_READ, 1), 0, 0x7FFFFFFFu};
  std::memcpy(b.bytes.data(), &big, sizeof big);
  put_batch(c, false, 4096 - 48, b);
  std::vector<Resp> got;
  CHECK_EQ(take_responses(c, &got), PD3_E_CORRUPT);
  CHECK(got.empty());
}

TEST(batch_slot_a_drain_takes_a_batch_whole_and_stops_before_one_past_max) {
  GuardedRing g(4096);
  REQUIRE(g.base != nullptr);
  pd3_control* c = g.c();
  const Body b = four_requests();
  put_batch(c, true, 0, b);
  put_batch(c, true, 112, b);
  std::vector<Req> got;
  CHECK_EQ(take_requests(c, &got, 2), 4);  // the first slot is taken whole, past max
  CHECK_EQ(c->req_head, 112u);
  CHECK_EQ(take_requests(c, &got, 5), 4);
  CHECK_EQ(c->req_head, 224u);
  put_batch(c, true, 224, b);
  put_batch(c, true, 336, b);
  CHECK_EQ(take_requests(c, &got, 7), 4);  // 4 + 4 > 7: stops before the second
  CHECK_EQ(c->req_head, 336u);
  CHECK_EQ(take_requests(c, &got, 0), 0);  // max 0 takes nothing
  CHECK_EQ(take_requests(c, &got, 8), 4);
  CHECK_EQ(got.size(), 16u);

  GuardedRing h(4096);
  REQUIRE(h.base != nullptr);
  pd3_control* hc = h.c();
  const Body r = three_responses();
  put_batch(hc, false, 0, r);
  put_batch(hc, false, 48, r);
  std::vector<Resp> resps;
  CHECK_EQ(take_responses(hc, &resps, 4), 3);
  CHECK_EQ(hc->resp_head, 48u);
  CHECK_EQ(take_responses(hc, &resps, 1), 3);
  CHECK_EQ(hc->resp_head, 96u);
}

TEST(batch_slot_fence_covers_every_record_of_a_slot) {
  GuardedRing g(4096);
  REQUIRE(g.base != nullptr);
  pd3_control* c = g.c();
  const Body b = four_requests();
  put_batch(c, true, 0, b);
  put_batch(c, true, 112, b);
  auto dma = pd3test::dma_over(c);
  pd3::AgentCounters counters(*dma);
  pd3::RequestReader reader(*dma, pd3::HostLayout::read(*dma), counters);
  std::vector<uint64_t> seen;
  CHECK_EQ(reader.drain(PD3_MAX_INFLIGHT, /*fence=*/112, [&](const pd3::RequestView& v) { seen.push_back(v.pos); }), 8);
  CHECK_EQ(seen.size(), 4u);  // the first slot's four were below the fence
  for (uint64_t p : seen) CHECK_EQ(p, 112u);
  CHECK_EQ(c->agent_fenced, 4u);
}

TEST(batch_slot_request_batch_publishes_one_slot_per_prefix) {
  pd3test::GuardedRing g(4096);
  REQUIRE(g.base != nullptr);
  pd3_control* c = g.c();
  const pd3::SlotRing ring(pd3test::ring_bytes(c, true), c->req_size, &c->req_tail, &c->req_head, c->seal_salt);
  pd3::RequestBatch batch;
  const std::string data[5] = {"", "w", "seven b", "", "a payload of 21 bytes"};
  for (uint16_t i = 0; i < 5; ++i) {
    const uint32_t op = data[i].empty() ? PD3_OP_READ : PD3_OP_WRITE;
    const pd3_request hdr = pd3_make_request(pd3_op_id(op, i), 1, i * 100u, data[i].empty() ? 8u : uint32_t(data[i].size()));
    batch.add(i, hdr, data[i].data(), uint32_t(data[i].size()));
  }
  // 16 + 24 + 24 + 16 + 40 = 120 record bytes: 136, padded to 144.
  CHECK_EQ(batch.slot_bytes(), 144u);
  CHECK_EQ(batch.prefix_bytes(2), 64u);  // 16 + 40
  std::atomic<uint64_t> head_cache{0};
  REQUIRE(batch.publish_prefix(ring, 2, &head_cache));
  CHECK_EQ(c->req_tail, 64u);  // one slot: 16 + 40 padded to 16
  batch.drop_front(2);
  REQUIRE(batch.publish_prefix(ring, 3, &head_cache));
  std::vector<Req> got;
  CHECK_EQ(take_requests(c, &got), 5);
  REQUIRE(got.size() == 5);
  for (uint16_t i = 0; i < 5; ++i) {
    CHECK_EQ(pd3_id_of(got[i].hdr.op_id), uint32_t(i));
    CHECK(got[i].payload == data[i]);
    CHECK_EQ(got[i].hdr.offset, i * 100u);
  }
  CHECK_EQ(got[1].pos, 0u);
  CHECK_EQ(got[2].pos, 64u);
  CHECK_EQ(c->req_head, c->req_tail);
  // A batch larger than half the ring is refused whole, nothing written.
  pd3::RequestBatch big;
  const std::string payload(700, 'x');
  for (uint16_t i = 0; i < 3; ++i)
    big.add(i, pd3_make_request(pd3_op_id(PD3_OP_WRITE, i), 1, 0, 700), payload.data(), 700);
  const uint64_t tail = c->req_tail;
  CHECK(!big.publish_prefix(ring, 3, &head_cache));
  CHECK_EQ(c->req_tail, tail);
  CHECK(big.publish_prefix(ring, 2, &head_cache));
}

TEST(batch_slot_response_writer_packs_across_the_ring_end) {
  // Many responses in one flush, several laps of a small ring: the writer packs them into batch
  // slots, pads at the ring's end, and the host reads every one back in order, intact.
  GuardedRing g(4096);
  REQUIRE(g.base != nullptr);
  pd3_control* c = g.c();
  auto dma = pd3test::dma_over(c);
  pd3::AgentCounters counters(*dma);
  pd3::ResponseWriter writer(*dma, pd3::HostLayout::read(*dma), counters);
  uint32_t sent = 0, taken = 0, slots = 0;
  for (int round = 0; round < 40; ++round) {
    const uint64_t tail_before = c->resp_tail;
    for (;;) {
      const uint32_t n = (sent * 37) % 300;
      std::string data(n, char('a' + sent % 26));
      const int rc = writer.add(pd3_op_id(PD3_OP_READ, sent & PD3_ID_MASK), PD3_OK, data.data(), n);
      if (rc == PD3_E_AGAIN) break;
      REQUIRE(rc == PD3_OK);
      ++sent;
    }
    writer.flush();
    // Count the slots this round published (the ring holds them until the host drains).
    for (uint64_t pos = tail_before; pos < c->resp_tail;) {
      const auto* s = reinterpret_cast<const pd3_slot*>(pd3test::ring_bytes(c, false) + (pos & 4095));
      slots += s->kind == PD3_SLOT_RECORDS;
      pos += s->length;
    }
    std::vector<Resp> got;
    REQUIRE(take_responses(c, &got) >= 0);
    for (const Resp& r : got) {
      const uint32_t n = (taken * 37) % 300;
      CHECK(r.ok && pd3_id_of(r.hdr.op_id) == (taken & PD3_ID_MASK) && r.data == std::string(n, char('a' + taken % 26)));
      ++taken;
    }
  }
  CHECK_EQ(taken, sent);
  CHECK(sent > 40 * 10);
  CHECK(slots < sent / 4);  // packed: far fewer slots than responses
  CHECK(c->resp_tail > 4096 * 4);
}
