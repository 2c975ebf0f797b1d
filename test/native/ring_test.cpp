// ring_test.cpp — request and response rings: round trips, back-pressure, wraparound, size limits, malformed slots.
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/segment.hpp"
#include "common/segment_rings.hpp"
#include "agent_rings.hpp"
#include "harness.hpp"
#include "raw_ring.hpp"
#include "host/request_writer.hpp"
#include "host/response_reader.hpp"
#include "pd3/host.h"
#include "pd3/transport.h"
#include "util.hpp"

namespace {

using pd3::Segment;
using pd3::SlotRing;
using pd3test::GuardedRing;
using pd3test::put_raw_slot;
using pd3test::ring_bytes;

// A fresh segment with the given ring sizes, unlinked at scope exit.
struct TestSegment {
  std::unique_ptr<Segment> seg;
  explicit TestSegment(uint64_t req_bytes, uint64_t resp_bytes = 4096) {
    const std::string name = pd3test::unique_name("ring");
    const pd3_segment_sizes sizes{req_bytes, resp_bytes, 4096, 16, 0};
    if (Segment::create(name.c_str(), sizes, false, &seg) == PD3_OK) seg->unlink_name();
  }
  pd3_control* c() const { return seg->control(); }
};

uint8_t pattern(uint64_t seq, uint32_t i) { return uint8_t((seq * 131u + i * 7u + (i >> 8)) ^ 0x5Cu); }

std::vector<uint8_t> payload_for(uint64_t seq, uint32_t n) {
  std::vector<uint8_t> v(n);
  for (uint32_t i = 0; i < n; ++i) v[i] = pattern(seq, i);
  return v;
}

bool payload_ok(uint64_t seq, const uint8_t* p, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i)
    if (p[i] != pattern(seq, i)) return false;
  return true;
}

// One drained request, copied out of the ring.
struct Got {
  pd3_request hdr;
  std::vector<uint8_t> payload;
  int status;
};

int drain_all(pd3_control* c, std::vector<Got>* out, uint32_t max = PD3_MAX_INFLIGHT) {
  return pd3test::drain_requests(c, max, [&](const pd3::RequestView& v) {
    Got g{v.hdr, {}, v.status};
    if (v.status == PD3_OK) {
      const uint32_t n = pd3_request_payload_len(&v.hdr);
      g.payload.assign(v.payload, v.payload + n);
    }
    out->push_back(std::move(g));
  });
}

// One drained response.
struct GotResp {
  pd3_response hdr;
  std::vector<uint8_t> data;
  bool ok;
};

int drain_resp(pd3_control* c, std::vector<GotResp>* out, uint32_t max = PD3_MAX_INFLIGHT) {
  return pd3::drain_responses(c, max, [&](const pd3_response& r, const uint8_t* data, bool ok) {
    GotResp g{r, {}, ok};
    if (ok) g.data.assign(data, data + pd3_response_data_len(&r));
    out->push_back(std::move(g));
  });
}

int publish_write(pd3_control* c, uint64_t seq, uint32_t n) {
  const auto data = payload_for(seq, n);
  const pd3_request hdr =
      pd3_make_request(pd3_op_id(PD3_OP_WRITE, uint32_t(seq)), uint32_t(seq >> 14), uint32_t(seq), n);
  return pd3::publish_request(c, hdr, data.data(), n);
}

bool write_matches(const Got& g, uint64_t seq, uint32_t n) {
  return g.status == PD3_OK && pd3_op_of(g.hdr.op_id) == PD3_OP_WRITE &&
         pd3_id_of(g.hdr.op_id) == (seq & PD3_ID_MASK) && g.hdr.region == uint32_t(seq >> 14) &&
         g.hdr.offset == uint32_t(seq) && g.hdr.size == n && g.payload.size() == n &&
         payload_ok(seq, g.payload.data(), n);
}

}  // namespace

// ---- request ring ------------------------------------------------------------------------------

TEST(ring_request_publish_drain_every_op) {
  TestSegment s(8192);
  REQUIRE(s.seg != nullptr);
  pd3_control* c = s.c();
  const auto wdata = payload_for(42, 333);
  const char key[] = "user:1234";
  // A region id of a server past the old 4-bit limit travels whole.
  const uint32_t far_region = pd3_region_id(40000, 65535);
  REQUIRE(pd3::publish_request(c, pd3_make_request(pd3_op_id(PD3_OP_READ, 1), far_region, 4096, 100), nullptr, 0) ==
          PD3_OK);
  REQUIRE(pd3::publish_request(c, pd3_make_request(pd3_op_id(PD3_OP_WRITE, 2), 8, 12, 333), wdata.data(), 333) ==
          PD3_OK);
  REQUIRE(pd3::publish_request(c, pd3_make_request(pd3_op_id(PD3_OP_CONTROL, 3), PD3_CTL_ALLOCATE, 0, 1 << 20),
                               nullptr, 0) == PD3_OK);
  REQUIRE(pd3::publish_request(c, pd3_make_request(pd3_op_id(PD3_OP_CONTROL, 4), PD3_CTL_DEALLOCATE, far_region, 0),
                               nullptr, 0) == PD3_OK);
  REQUIRE(pd3::publish_request(c, pd3_make_request(pd3_op_id(PD3_OP_PREFETCH, 16383), 0, 0, sizeof key - 1), key,
                               sizeof key - 1) == PD3_OK);
  CHECK_EQ(c->host_requests, 5u);
  // Slots are 16-aligned and tile the ring from 0.
  const uint64_t hdr = sizeof(pd3_request);
  const uint64_t expect_tail =
      SlotRing::slot_len(hdr) * 3 + SlotRing::slot_len(hdr + 333) + SlotRing::slot_len(hdr + 9);
  CHECK_EQ(c->req_tail, expect_tail);

  std::vector<Got> got;
  CHECK_EQ(drain_all(c, &got), 5);
  REQUIRE(got.size() == 5);
  CHECK_EQ(pd3_op_of(got[0].hdr.op_id), PD3_OP_READ);
  CHECK_EQ(pd3_id_of(got[0].hdr.op_id), 1u);
  CHECK_EQ(got[0].hdr.region, far_region);
  CHECK_EQ(got[0].hdr.reserved, 0);
  CHECK_EQ(got[0].hdr.offset, 4096u);
  CHECK_EQ(got[0].hdr.size, 100u);
  CHECK(got[0].payload.empty());
  CHECK_EQ(pd3_op_of(got[1].hdr.op_id), PD3_OP_WRITE);
  CHECK(got[1].payload == wdata);
  CHECK_EQ(got[2].hdr.region, PD3_CTL_ALLOCATE);
  CHECK_EQ(got[2].hdr.size, 1u << 20);
  CHECK_EQ(got[3].hdr.region, PD3_CTL_DEALLOCATE);
  CHECK_EQ(got[3].hdr.offset, far_region);
  CHECK_EQ(pd3_op_of(got[4].hdr.op_id), PD3_OP_PREFETCH);
  CHECK_EQ(pd3_id_of(got[4].hdr.op_id), 16383u);
  CHECK(std::string(got[4].payload.begin(), got[4].payload.end()) == "user:1234");
  for (const Got& g : got) CHECK_EQ(g.status, PD3_OK);
  CHECK_EQ(c->req_head, c->req_tail);
  CHECK_EQ(c->agent_requests, 5u);
  CHECK_EQ(c->agent_batches, 1u);
  CHECK_EQ(c->agent_corrupt, 0u);

  // Nothing more to take; an empty pass is not a batch.
  got.clear();
  CHECK_EQ(drain_all(c, &got), 0);
  CHECK(got.empty());
  CHECK_EQ(c->agent_batches, 1u);

  // `max` bounds one pass; the rest stays for the next.
  for (uint64_t i = 0; i < 10; ++i) REQUIRE(publish_write(c, i, uint32_t(i * 10)) == PD3_OK);
  CHECK_EQ(drain_all(c, &got, 3), 3);
  CHECK_EQ(drain_all(c, &got, 100), 7);
  REQUIRE(got.size() == 10);
  for (uint64_t i = 0; i < 10; ++i) CHECK(write_matches(got[i], i, uint32_t(i * 10)));
}

TEST(ring_request_backpressure_never_overwrites) {
  TestSegment s(4096);
  REQUIRE(s.seg != nullptr);
  pd3_control* c = s.c();
  std::mt19937 rng(3);
  uint64_t seq = 0, drained = 0;
  for (int round = 0; round < 20; ++round) {
    // Fill until the ring refuses.
    std::vector<uint32_t> sizes;
    uint64_t refused_size = 0;
    for (;;) {
      const uint32_t n = rng() % 300;
      const uint64_t tail_before = c->req_tail;
      const uint64_t full_before = c->host_ring_full;
      const int rc = publish_write(c, seq, n);
      if (rc == PD3_E_AGAIN) {
        CHECK_EQ(c->req_tail, tail_before);  // nothing reserved
        CHECK_EQ(c->host_ring_full, full_before + 1);
        refused_size = SlotRing::slot_len(sizeof(pd3_request) + n);
        break;
      }
      REQUIRE(rc == PD3_OK);
      sizes.push_back(n);
      ++seq;
    }
    // It was really full: the refused slot (plus any pad it needed) did not fit.
    const uint64_t used = c->req_tail - c->req_head;
    const uint64_t off = c->req_tail & 4095;
    const uint64_t pad = off + refused_size > 4096 ? 4096 - off : 0;
    CHECK(used + pad + refused_size > 4096);
    CHECK(used <= 4096);
    CHECK(!sizes.empty());
    // A second refusal changes nothing either.
    CHECK_EQ(publish_write(c, seq, uint32_t(refused_size - 16 - sizeof(pd3_request))), PD3_E_AGAIN);

    // Every record accepted before the refusal is intact and in order.
    std::vector<Got> got;
    CHECK_EQ(drain_all(c, &got), int(sizes.size()));
    REQUIRE(got.size() == sizes.size());
    for (size_t i = 0; i < sizes.size(); ++i) CHECK(write_matches(got[i], drained + i, sizes[i]));
    drained += sizes.size();
    CHECK_EQ(c->req_head, c->req_tail);
  }
  // Space freed by the consumer is accepted again.
  CHECK_EQ(publish_write(c, seq, 100), PD3_OK);
  std::vector<Got> got;
  CHECK_EQ(drain_all(c, &got), 1);
  REQUIRE(got.size() == 1);
  CHECK(write_matches(got[0], seq, 100));
  CHECK(c->host_ring_full >= 20u);
}

TEST(ring_request_partial_drain_frees_exactly_what_was_taken) {
  TestSegment s(4096);
  REQUIRE(s.seg != nullptr);
  pd3_control* c = s.c();
  // 32 slots of 128 bytes (16 + 16 + 96) fill the 4 KiB ring exactly.
  uint64_t seq = 0;
  for (; seq < 32; ++seq) REQUIRE(publish_write(c, seq, 96) == PD3_OK);
  CHECK_EQ(publish_write(c, seq, 96), PD3_E_AGAIN);
  CHECK_EQ(publish_write(c, seq, 0), PD3_E_AGAIN);  // even the smallest slot
  std::vector<Got> got;
  CHECK_EQ(drain_all(c, &got, 1), 1);  // frees one 128-byte slot
  CHECK_EQ(publish_write(c, seq, 200), PD3_E_AGAIN);  // a 240-byte slot does not fit in 128
  CHECK_EQ(publish_write(c, seq, 96), PD3_OK);
  ++seq;
  CHECK_EQ(publish_write(c, seq, 0), PD3_E_AGAIN);
  CHECK_EQ(drain_all(c, &got), 32);
  REQUIRE(got.size() == 33);
  for (uint64_t i = 0; i < 33; ++i) CHECK(write_matches(got[i], i, 96));
}

TEST(ring_request_wraparound_with_pads) {
  TestSegment s(4096);
  REQUIRE(s.seg != nullptr);
  pd3_control* c = s.c();
  std::mt19937 rng(11);
  uint64_t next_pub = 0, next_take = 0, slot_bytes = 0;
  std::vector<uint32_t> sizes;  // by seq
  const uint64_t laps = 400;
  while (c->req_head < laps * 4096) {
    // Publish a random burst (stopping at back-pressure), then drain a random amount.
    const int burst = 1 + int(rng() % 12);
    for (int i = 0; i < burst; ++i) {
      const uint32_t n = rng() % 4 == 0 ? rng() % 2000 : rng() % 200;
      const int rc = publish_write(c, next_pub, n);
      if (rc == PD3_E_AGAIN) break;
      REQUIRE(rc == PD3_OK);
      sizes.push_back(n);
      slot_bytes += SlotRing::slot_len(sizeof(pd3_request) + n);
      ++next_pub;
    }
    std::vector<Got> got;
    const int rc = drain_all(c, &got, 1 + rng() % 16);
    REQUIRE(rc >= 0);
    for (const Got& g : got) {
      REQUIRE(next_take < next_pub);
      if (!write_matches(g, next_take, sizes[next_take])) {
        std::fprintf(stderr, "  record %llu damaged\n", (unsigned long long)next_take);
        CHECK(false);
      }
      ++next_take;
    }
  }
  std::vector<Got> got;
  drain_all(c, &got);
  for (const Got& g : got) {
    CHECK(write_matches(g, next_take, sizes[next_take]));
    ++next_take;
  }
  CHECK_EQ(next_take, next_pub);
  CHECK_EQ(c->req_head, c->req_tail);
  // The cursors advanced by the slots plus PAD fillers; with these sizes pads must have occurred,
  // and each pad is smaller than the largest slot.
  const uint64_t pad_bytes = c->req_tail - slot_bytes;
  CHECK(c->req_tail > slot_bytes);
  CHECK(pad_bytes > 0);
  CHECK_EQ(c->req_tail % 16, 0u);
  CHECK_EQ(c->agent_corrupt, 0u);
  CHECK_EQ(c->agent_requests, next_pub);
}

TEST(ring_request_too_big) {
  TestSegment s(4096);
  REQUIRE(s.seg != nullptr);
  pd3_control* c = s.c();
  // max slot = ring/2 = 2048 = 16 (slot) + 16 (header) + 2016 payload.
  const auto big = payload_for(1, 2017);
  CHECK_EQ(pd3::publish_request(c, pd3_make_request(pd3_op_id(PD3_OP_WRITE, 1), 1, 0, 2017), big.data(), 2017),
           PD3_E_TOO_BIG);
  CHECK_EQ(c->req_tail, 0u);
  CHECK_EQ(c->host_ring_full, 0u);  // not back-pressure
  // A huge length is refused before any byte is read (the buffer is far smaller).
  volatile uint32_t huge = 0xFFFFFFFFu;  // opaque to the optimiser, so it does not warn about the memcpy
  CHECK_EQ(pd3::publish_request(c, pd3_make_request(pd3_op_id(PD3_OP_WRITE, 1), 1, 0, huge), big.data(), huge),
           PD3_E_TOO_BIG);
  CHECK_EQ(pd3::publish_request(c, pd3_make_request(pd3_op_id(PD3_OP_WRITE, 1), 1, 0, 2016), big.data(), 2016),
           PD3_OK);
  CHECK_EQ(c->req_tail, 2048u);
  // The largest slot also fits after a wrap (the pad plus the slot never exceed the ring).
  CHECK_EQ(pd3::publish_request(c, pd3_make_request(pd3_op_id(PD3_OP_READ, 2), 1, 0, 5), nullptr, 0), PD3_OK);
  std::vector<Got> got;
  CHECK_EQ(drain_all(c, &got), 2);
  CHECK_EQ(pd3::publish_request(c, pd3_make_request(pd3_op_id(PD3_OP_WRITE, 3), 1, 0, 2016), big.data(), 2016),
           PD3_OK);
  CHECK_EQ(drain_all(c, &got), 1);
  REQUIRE(got.size() == 3);
  CHECK_EQ(got[0].hdr.size, 2016u);
  CHECK(payload_ok(1, got[0].payload.data(), 2016));
  CHECK(payload_ok(1, got[2].payload.data(), 2016));
  CHECK_EQ(c->req_head, 4096u + 2048u);  // 2048 + 32 + pad 2016, then 2048
}

TEST(ring_request_malformed_records_are_reported_per_record) {
  GuardedRing g(4096);
  REQUIRE(g.base != nullptr);
  pd3_control* c = g.c();
  uint64_t pos = 0;
  // 1. WRITE that claims 100 payload bytes in a slot with room for none.
  const pd3_request w100 = pd3_make_request(pd3_op_id(PD3_OP_WRITE, 1), 1, 0, 100);
  put_raw_slot(c, true, pos, 32, PD3_SLOT_RECORD, &w100, sizeof w100);
  pos += 32;
  // 2. A record slot too short to hold a request header.
  put_raw_slot(c, true, pos, 16, PD3_SLOT_RECORD, nullptr, 0);
  pos += 16;
  // 3. A READ (no payload) in a slot with 16 extra bytes.
  const pd3_request r4 = pd3_make_request(pd3_op_id(PD3_OP_READ, 3), 1, 0, 4);
  put_raw_slot(c, true, pos, 48, PD3_SLOT_RECORD, &r4, sizeof r4);
  pos += 48;
  // 4. A WRITE claiming 4 GiB of payload.
  const pd3_request wbig = pd3_make_request(pd3_op_id(PD3_OP_WRITE, 4), 1, 0, 0xFFFFFFFFu);
  put_raw_slot(c, true, pos, 32, PD3_SLOT_RECORD, &wbig, sizeof wbig);
  pos += 32;
  // 5. A well-formed record after them is still delivered.
  REQUIRE(pos == c->req_tail);
  REQUIRE(publish_write(c, 5, 10) == PD3_OK);
  // 6. A PAD in the middle of the ring is just skipped.
  pos = c->req_tail;
  put_raw_slot(c, true, pos, 64, PD3_SLOT_PAD, nullptr, 0);
  REQUIRE(publish_write(c, 6, 20) == PD3_OK);

  std::vector<Got> got;
  CHECK_EQ(drain_all(c, &got), 6);
  REQUIRE(got.size() == 6);
  for (int i = 0; i < 4; ++i) CHECK_EQ(got[i].status, PD3_E_CORRUPT);
  CHECK(write_matches(got[4], 5, 10));
  CHECK(write_matches(got[5], 6, 20));
  CHECK_EQ(c->agent_corrupt, 4u);
  CHECK_EQ(c->req_head, c->req_tail);
  // Ids of malformed records with a header are still readable, so the agent can answer them.
  CHECK_EQ(pd3_id_of(got[0].hdr.op_id), 1u);
  CHECK_EQ(pd3_id_of(got[3].hdr.op_id), 4u);
}

TEST(ring_request_broken_framing_stops_the_pass) {
  struct Bad {
    uint32_t length;
    uint16_t kind;
    bool near_end;  // put the bad slot at ring offset 4000 (second lap) instead of after two records
  };
  const Bad bads[] = {
      {0, PD3_SLOT_RECORD, false},            // zero length would never advance
      {24, PD3_SLOT_RECORD, false},           // not a multiple of 16
      {8, PD3_SLOT_PAD, false},               // shorter than a slot header
      {64, 7, false},                         // unknown kind
      {64, 0, false},                         // kind 0
      {0xFFFFFFF0u, PD3_SLOT_RECORD, false},  // far past the ring
      {128, PD3_SLOT_RECORD, true},           // crosses the ring's end
      {112, PD3_SLOT_PAD, true},              // a PAD that overshoots the end
      {0, PD3_SLOT_PAD, true},
  };
  for (const Bad& b : bads) {
    GuardedRing g(4096);
    REQUIRE(g.base != nullptr);
    pd3_control* c = g.c();
    // Good records up to the bad slot.
    uint64_t seq = 0;
    if (b.near_end) {
      c->req_tail = c->req_head = 4096;  // second lap, so seals use lap positions
      while (c->req_tail < 4096 + 4000) REQUIRE(publish_write(c, seq++, 0) == PD3_OK);  // 32-byte slots
    } else {
      REQUIRE(publish_write(c, seq++, 16) == PD3_OK);  // 48 bytes
      REQUIRE(publish_write(c, seq++, 0) == PD3_OK);   // 32 bytes
    }
    const uint64_t bad_pos = c->req_tail;
    REQUIRE(bad_pos == (b.near_end ? 4096u + 4000u : 80u));
    const pd3_request r = pd3_make_request(pd3_op_id(PD3_OP_READ, 9), 1, 0, 4);
    put_raw_slot(c, true, bad_pos, b.length, b.kind, &r, sizeof r);

    std::vector<Got> got;
    const uint64_t corrupt_before = c->agent_corrupt;
    CHECK_EQ(drain_all(c, &got), PD3_E_CORRUPT);
    CHECK_EQ(got.size(), size_t(seq));  // the records before the bad slot were delivered
    for (const Got& x : got) CHECK_EQ(x.status, PD3_OK);
    CHECK_EQ(c->req_head, bad_pos);  // freed up to the bad slot, not past it
    CHECK_EQ(c->agent_corrupt, corrupt_before + 1);
    // The ring stays stuck at the broken slot: a second pass reports it again and takes nothing.
    got.clear();
    CHECK_EQ(drain_all(c, &got), PD3_E_CORRUPT);
    CHECK(got.empty());
    CHECK_EQ(c->req_head, bad_pos);
  }
}

TEST(ring_request_unsealed_or_stale_slots_are_not_taken) {
  GuardedRing g(4096, 0xDEADBEEFCAFEull);
  REQUIRE(g.base != nullptr);
  pd3_control* c = g.c();
  const pd3_request r = pd3_make_request(pd3_op_id(PD3_OP_READ, 1), 1, 0, 4);
  // A seal from the previous lap at this position, one without the salt, one for another position,
  // and one with the low bit clear: none is a publication.
  const uint64_t pos = 4096 * 3;
  c->req_head = c->req_tail = pos;
  const uint64_t wrong[] = {((pos - 4096) ^ c->seal_salt) | 1, pos | 1, ((pos + 16) ^ c->seal_salt) | 1,
                            (pos ^ c->seal_salt) & ~1ull, 0};
  for (uint64_t seal : wrong) {
    if (seal == ((pos ^ c->seal_salt) | 1)) continue;
    put_raw_slot(c, true, pos, 32, PD3_SLOT_RECORD, &r, sizeof r, seal == 0 ? 2 : seal);
    std::vector<Got> got;
    CHECK_EQ(drain_all(c, &got), 0);
    CHECK(got.empty());
    CHECK_EQ(c->req_head, pos);
  }
  put_raw_slot(c, true, pos, 32, PD3_SLOT_RECORD, &r, sizeof r);
  std::vector<Got> got;
  CHECK_EQ(drain_all(c, &got), 1);
  CHECK_EQ(c->req_head, pos + 32);
}

TEST(ring_request_fuzzed_slots_never_read_out_of_bounds) {
  // Random bytes behind valid seals, right before a guard page: the reader must reject or deliver
  // them without touching memory past the ring (a stray read faults and kills the test).
  GuardedRing g(4096);
  REQUIRE(g.base != nullptr);
  pd3_control* c = g.c();
  std::mt19937_64 rng(99);
  uint8_t* ring = ring_bytes(c, true);
  uint64_t delivered = 0, corrupt_passes = 0, bad_records = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    const uint64_t pos = (rng() % 4096) & ~15ull;
    c->req_head = c->req_tail = pos;
    for (uint64_t off = pos; off < 4096; off += 8) {
      const uint64_t w = rng();
      std::memcpy(ring + off, &w, 8);
    }
    // A plausible length (mostly small, sometimes anything) and kind, sealed for `pos`.
    uint32_t len;
    switch (rng() % 4) {
      case 0: len = uint32_t(rng()); break;
      case 1: len = uint32_t(rng() % 4200); break;
      default: len = uint32_t((rng() % 80) * 16); break;
    }
    const uint16_t kind = rng() % 8 == 0 ? uint16_t(rng()) : uint16_t(1 + rng() % 2);
    pd3_slot s{(pos ^ c->seal_salt) | 1, len, kind, 0};
    std::memcpy(ring + pos, &s, sizeof s);
    c->req_tail = 4096;
    uint64_t sum = 0;
    const int rc = pd3test::drain_requests(c, 64, [&](const pd3::RequestView& v) {
      if (v.status != PD3_OK) {
        ++bad_records;
        return;
      }
      const uint32_t n = pd3_request_payload_len(&v.hdr);
      for (uint32_t i = 0; i < n; ++i) sum += v.payload[i];  // faults if outside the ring
      ++delivered;
    });
    CHECK(rc == PD3_E_CORRUPT || rc >= 0);
    if (rc == PD3_E_CORRUPT) ++corrupt_passes;
    CHECK(c->req_head <= 4096);
    (void)sum;
  }
  // The fuzzer reached all three outcomes.
  CHECK(delivered > 0);
  CHECK(corrupt_passes > 0);
  CHECK(bad_records > 0);
}

// ---- response ring -----------------------------------------------------------------------------

TEST(ring_response_publish_drain_every_kind) {
  TestSegment s(4096, 8192);
  REQUIRE(s.seg != nullptr);
  pd3_control* c = s.c();
  const auto rdata = payload_for(9, 777);
  const pd3_alloc_reply reply{pd3_region_id(40000, 12), 1 << 20};
  REQUIRE(pd3test::publish_response(c, pd3_op_id(PD3_OP_READ, 1), PD3_OK, rdata.data(), 777) == PD3_OK);
  REQUIRE(pd3test::publish_response(c, pd3_op_id(PD3_OP_WRITE, 2), PD3_OK, nullptr, 4096) == PD3_OK);
  REQUIRE(pd3test::publish_response(c, pd3_op_id(PD3_OP_CONTROL, 3), PD3_OK, &reply, sizeof reply) == PD3_OK);
  // Errors carry no data even when a size and data are passed.
  REQUIRE(pd3test::publish_response(c, pd3_op_id(PD3_OP_READ, 4), PD3_E_RANGE, rdata.data(), 100000) == PD3_OK);
  REQUIRE(pd3test::publish_response(c, pd3_op_id(PD3_OP_CONTROL, 5), PD3_E_NOSPACE, nullptr, 8) == PD3_OK);
  CHECK_EQ(c->agent_responses, 5u);
  CHECK_EQ(c->resp_tail, SlotRing::slot_len(8 + 777) + SlotRing::slot_len(8) * 3 + SlotRing::slot_len(8 + 8));

  std::vector<GotResp> got;
  CHECK_EQ(drain_resp(c, &got), 5);
  REQUIRE(got.size() == 5);
  for (const auto& g : got) CHECK(g.ok);
  CHECK_EQ(pd3_id_of(got[0].hdr.op_id), 1u);
  CHECK_EQ(got[0].hdr.status, 0);
  CHECK(got[0].data == rdata);
  CHECK_EQ(got[1].hdr.size, 4096u);
  CHECK(got[1].data.empty());
  REQUIRE(got[2].data.size() == sizeof reply);
  pd3_alloc_reply back;
  std::memcpy(&back, got[2].data.data(), sizeof back);
  CHECK_EQ(back.region, pd3_region_id(40000, 12));
  CHECK_EQ(back.capacity, 1u << 20);
  CHECK_EQ(got[3].hdr.status, uint16_t(-PD3_E_RANGE));
  CHECK_EQ(got[3].hdr.size, 100000u);
  CHECK(got[3].data.empty());
  CHECK_EQ(got[4].hdr.status, uint16_t(-PD3_E_NOSPACE));
  CHECK_EQ(c->host_responses, 5u);
  CHECK_EQ(c->resp_head, c->resp_tail);
  got.clear();
  CHECK_EQ(drain_resp(c, &got), 0);
}

TEST(ring_response_backpressure_and_wraparound) {
  TestSegment s(4096, 4096);
  REQUIRE(s.seg != nullptr);
  pd3_control* c = s.c();
  std::mt19937 rng(5);
  std::vector<uint32_t> sizes;
  uint64_t next_pub = 0, next_take = 0, slot_bytes = 0, refusals = 0;
  while (c->resp_head < 300 * 4096) {
    const int burst = 1 + int(rng() % 40);
    for (int i = 0; i < burst; ++i) {
      const uint32_t n = 1 + (rng() % 3 == 0 ? rng() % 2000 : rng() % 100);
      const auto data = payload_for(next_pub, n);
      const uint64_t tail_before = c->resp_tail;
      const int rc = pd3test::publish_response(c, pd3_op_id(PD3_OP_READ, uint32_t(next_pub)), PD3_OK, data.data(), n);
      if (rc == PD3_E_AGAIN) {
        CHECK_EQ(c->resp_tail, tail_before);
        const uint64_t len = SlotRing::slot_len(8 + n);
        const uint64_t off = c->resp_tail & 4095;
        const uint64_t pad = off + len > 4096 ? 4096 - off : 0;
        CHECK(c->resp_tail - c->resp_head + pad + len > 4096);  // genuinely full
        ++refusals;
        break;
      }
      REQUIRE(rc == PD3_OK);
      sizes.push_back(n);
      slot_bytes += SlotRing::slot_len(8 + n);
      ++next_pub;
    }
    std::vector<GotResp> got;
    REQUIRE(drain_resp(c, &got, 1 + rng() % 20) >= 0);
    for (const auto& g : got) {
      REQUIRE(next_take < next_pub);
      const bool ok = g.ok && pd3_id_of(g.hdr.op_id) == (next_take & PD3_ID_MASK) && g.hdr.size == sizes[next_take] &&
                      g.data.size() == sizes[next_take] && payload_ok(next_take, g.data.data(), sizes[next_take]);
      CHECK(ok);
      ++next_take;
    }
  }
  std::vector<GotResp> got;
  drain_resp(c, &got);
  next_take += got.size();
  CHECK_EQ(next_take, next_pub);
  CHECK(refusals > 10);
  CHECK(c->resp_tail > slot_bytes);  // pads were needed
  CHECK_EQ(c->resp_head, c->resp_tail);
}

TEST(ring_response_too_big) {
  TestSegment s(4096, 4096);
  REQUIRE(s.seg != nullptr);
  pd3_control* c = s.c();
  const auto data = payload_for(1, 2025);
  // max slot 2048 = 16 + 8 + 2024.
  CHECK_EQ(pd3test::publish_response(c, pd3_op_id(PD3_OP_READ, 1), PD3_OK, data.data(), 2025), PD3_E_TOO_BIG);
  CHECK_EQ(c->resp_tail, 0u);
  CHECK_EQ(pd3test::publish_response(c, pd3_op_id(PD3_OP_READ, 1), PD3_OK, data.data(), 2024), PD3_OK);
  CHECK_EQ(c->resp_tail, 2048u);
  // A WRITE's size is not data: any size fits.
  CHECK_EQ(pd3test::publish_response(c, pd3_op_id(PD3_OP_WRITE, 2), PD3_OK, nullptr, 0xFFFFFFFFu), PD3_OK);
  std::vector<GotResp> got;
  CHECK_EQ(drain_resp(c, &got), 2);
  REQUIRE(got.size() == 2);
  CHECK(payload_ok(1, got[0].data.data(), 2024));
  CHECK_EQ(got[1].hdr.size, 0xFFFFFFFFu);
}

TEST(ring_response_malformed_records) {
  GuardedRing g(4096);
  REQUIRE(g.base != nullptr);
  pd3_control* c = g.c();
  uint64_t pos = 0;
  // A READ response claiming 100 data bytes in a slot with room for 8.
  const pd3_response r100{pd3_op_id(PD3_OP_READ, 1), 0, 100};
  put_raw_slot(c, false, pos, 32, PD3_SLOT_RECORD, &r100, sizeof r100);
  pos += 32;
  // A slot with no room for a response header.
  put_raw_slot(c, false, pos, 16, PD3_SLOT_RECORD, nullptr, 0);
  pos += 16;
  // An error response with trailing bytes it should not have.
  const pd3_response err{pd3_op_id(PD3_OP_READ, 3), uint16_t(-PD3_E_RANGE), 64};
  put_raw_slot(c, false, pos, 96, PD3_SLOT_RECORD, &err, sizeof err);
  pos += 96;
  REQUIRE(pos == c->resp_tail);
  const auto data = payload_for(4, 40);
  REQUIRE(pd3test::publish_response(c, pd3_op_id(PD3_OP_READ, 4), PD3_OK, data.data(), 40) == PD3_OK);
  std::vector<GotResp> got;
  CHECK_EQ(drain_resp(c, &got), 4);
  REQUIRE(got.size() == 4);
  CHECK(!got[0].ok);
  CHECK(!got[1].ok);
  CHECK(!got[2].ok);
  CHECK(got[3].ok);
  CHECK(got[3].data == data);
  CHECK_EQ(pd3_id_of(got[0].hdr.op_id), 1u);  // the id is still known, so the request can fail

  // Broken framing: the pass stops there and the ring stays stuck.
  pos = c->resp_tail;
  put_raw_slot(c, false, pos, 40, PD3_SLOT_RECORD, &r100, sizeof r100);
  got.clear();
  CHECK_EQ(drain_resp(c, &got), PD3_E_CORRUPT);
  CHECK(got.empty());
  CHECK_EQ(c->resp_head, pos);
  put_raw_slot(c, false, pos, 4096, PD3_SLOT_RECORD, &r100, sizeof r100);  // past the end
  CHECK_EQ(drain_resp(c, &got), PD3_E_CORRUPT);
  put_raw_slot(c, false, pos, 64, 3, &r100, sizeof r100);  // unknown kind
  CHECK_EQ(drain_resp(c, &got), PD3_E_CORRUPT);
  CHECK(got.empty());
}

TEST(ring_response_fuzzed_slots_never_read_out_of_bounds) {
  GuardedRing g(4096);
  REQUIRE(g.base != nullptr);
  pd3_control* c = g.c();
  std::mt19937_64 rng(1234);
  uint8_t* ring = ring_bytes(c, false);
  uint64_t good = 0, bad = 0, corrupt = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    const uint64_t pos = (rng() % 4096) & ~15ull;
    c->resp_head = c->resp_tail = pos;
    for (uint64_t off = pos; off < 4096; off += 8) {
      uint64_t w = rng();
      if (rng() % 2) w &= 0x0000FFFF0000FFFFull;  // status 0 and a small size, so some records look valid
      std::memcpy(ring + off, &w, 8);
    }
    uint32_t len = rng() % 3 == 0 ? uint32_t(rng()) : uint32_t((rng() % 70) * 16);
    const uint16_t kind = rng() % 8 == 0 ? uint16_t(rng()) : uint16_t(1 + rng() % 2);
    pd3_slot s{(pos ^ c->seal_salt) | 1, len, kind, 0};
    std::memcpy(ring + pos, &s, sizeof s);
    c->resp_tail = 4096;
    uint64_t sum = 0;
    const int rc = pd3::drain_responses(c, 64, [&](const pd3_response& r, const uint8_t* data, bool ok) {
      if (!ok) {
        ++bad;
        return;
      }
      for (uint32_t i = 0; i < pd3_response_data_len(&r); ++i) sum += data[i];
      ++good;
    });
    CHECK(rc == PD3_E_CORRUPT || rc >= 0);
    if (rc == PD3_E_CORRUPT) ++corrupt;
    (void)sum;
  }
  CHECK(good > 0);
  CHECK(bad > 0);
  CHECK(corrupt > 0);
}

TEST(ring_response_malformed_reaches_host_poll_as_corrupt) {
  pd3test::ScopedHost host("ring-poll", {4096, 4096, 4096, 16, 0});
  REQUIRE(host.rc == PD3_OK);
  pd3_control* c = host.control();
  uint8_t dest[64];
  std::memset(dest, 0xAA, sizeof dest);
  pd3test::fake_agent_beat(c);
  const int id = pd3_host_read(host.h, 1, 0, 16, dest, 77);
  REQUIRE(id >= 0);
  const int id2 = pd3_host_read(host.h, 1, 0, 8, dest + 32, 78);
  REQUIRE(id2 >= 0);
  std::vector<Got> reqs;
  REQUIRE(drain_all(c, &reqs) == 2);
  // The agent answers the first read with a record whose length disagrees with its size.
  const pd3_response bad{pd3_op_id(PD3_OP_READ, uint32_t(id)), 0, 16};
  put_raw_slot(c, false, 0, 64, PD3_SLOT_RECORD, &bad, sizeof bad);  // 16 data bytes need a 48-byte slot
  // ...and the second with more data than was asked for (16 > 8).
  const auto data = payload_for(2, 16);
  REQUIRE(pd3test::publish_response(c, pd3_op_id(PD3_OP_READ, uint32_t(id2)), PD3_OK, data.data(), 16) == PD3_OK);
  pd3_completion out[4];
  CHECK_EQ(pd3_host_poll(host.h, out, 4), 2);
  CHECK_EQ(out[0].user_data, 77u);
  CHECK_EQ(out[0].status, PD3_E_CORRUPT);
  CHECK_EQ(out[1].user_data, 78u);
  CHECK_EQ(out[1].status, PD3_E_CORRUPT);
  for (uint8_t b : dest) CHECK_EQ(b, 0xAA);  // neither destination was written
  CHECK_EQ(pd3_host_inflight(host.h), 0u);

  // Broken framing: poll reports PD3_E_CORRUPT, and keeps doing so (the ring cannot resync).
  const int id3 = pd3_host_read(host.h, 1, 0, 8, dest, 79);
  REQUIRE(id3 >= 0);
  put_raw_slot(c, false, c->resp_tail, 24, PD3_SLOT_RECORD, &bad, sizeof bad);
  CHECK_EQ(pd3_host_poll(host.h, out, 4), PD3_E_CORRUPT);
  CHECK(std::strstr(pd3_last_error(), "PD3_E_CORRUPT") != nullptr);
  CHECK_EQ(pd3_host_poll(host.h, out, 4), PD3_E_CORRUPT);
  CHECK_EQ(pd3_host_inflight(host.h), 1u);
}
