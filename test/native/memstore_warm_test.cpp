// memstore_warm_test.cpp — MemStore::warm, the cache hint the TCP server gives a frame's records
// ahead of running them: which lines a READ or WRITE gets, that no bad record, other op or tiered
// region gets any, that a hint changes no byte, that the count reaches the store's stats, and
// random records of every kind against a model of that rule.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/transport_codec.hpp"
#include "harness.hpp"
#include "memserver/mem_store.hpp"
#include "pd3/status.h"
#include "store_requests.hpp"
#include "util.hpp"

namespace {

using pd3::MemStore;
using pd3::MemStoreOptions;
using pd3test::open_store;
using pd3test::request;
using Bytes = std::vector<uint8_t>;

constexpr uint16_t kServer = 4;

MemStoreOptions memory_options() {
  MemStoreOptions o;
  o.server_id = kServer;
  o.capacity = 16u << 20;
  o.index_initial_keys = 1024;
  return o;
}

// Executes `req`; returns the response's status (negative pd3_status) and its data in *data.
int run(MemStore& s, const pd3::TransportRequest& req, Bytes* data = nullptr) {
  Bytes buf;
  pd3::FrameBuilder fb(&buf);
  s.execute(req, &fb);
  pd3::TransportResponse r;
  REQUIRE(fb.records() == 1 && pd3::decode_response(buf.data(), buf.size(), &r) == PD3_OK);
  if (data) data->assign(r.data, r.data + r.data_len);
  return -int(r.status);
}

// Allocates `bytes` and returns the region's id and, in *capacity, its size.
uint32_t allocate(MemStore& s, uint32_t bytes, uint32_t* capacity) {
  Bytes reply;
  REQUIRE(run(s, request(PD3_OP_CONTROL, PD3_CTL_ALLOCATE, 0, bytes), &reply) == PD3_OK);
  REQUIRE(reply.size() == sizeof(pd3_alloc_reply));
  pd3_alloc_reply a;
  std::memcpy(&a, reply.data(), sizeof a);
  *capacity = a.capacity;
  return a.region;
}

pd3::TransportRequest read_req(uint32_t region, uint32_t offset, uint32_t size) {
  return request(PD3_OP_READ, region, offset, size);
}
pd3::TransportRequest write_req(uint32_t region, uint32_t offset, const Bytes& data) {
  return request(PD3_OP_WRITE, region, offset, uint32_t(data.size()), data.data(), uint32_t(data.size()));
}

}  // namespace

TEST(memstore_warm_hints_the_lines_a_record_touches) {
  auto s = open_store(memory_options());
  uint32_t cap = 0;
  const uint32_t reg = allocate(*s, 1u << 20, &cap);
  REQUIRE(cap >= (1u << 20));
  // Regions start on a page, so offsets give the lines directly.
  CHECK_EQ(s->warm(read_req(reg, 0, 64)), 1u);
  CHECK_EQ(s->warm(read_req(reg, 0, 1)), 1u);
  CHECK_EQ(s->warm(read_req(reg, 60, 8)), 2u);       // straddles a line boundary
  CHECK_EQ(s->warm(read_req(reg, 64, 128)), 2u);
  CHECK_EQ(s->warm(read_req(reg, 1, 128)), 3u);
  CHECK_EQ(s->warm(read_req(reg, 0, 4096)), 4u);     // capped: a large copy streams by itself
  CHECK_EQ(s->warm(read_req(reg, cap - 1, 1)), 1u);  // the region's last byte
  const Bytes data(100, 0xAB);
  CHECK_EQ(s->warm(write_req(reg, 4000, data)), 3u);  // bytes 4000..4099: lines 62, 63, 64
  CHECK_EQ(s->stats().warm_hints, 1u + 1 + 2 + 2 + 3 + 4 + 1 + 3);
}

TEST(memstore_warm_gives_bad_records_and_other_ops_nothing) {
  auto s = open_store(memory_options());
  uint32_t cap = 0;
  const uint32_t reg = allocate(*s, 64u << 10, &cap);
  CHECK_EQ(s->warm(read_req(reg, 0, 0)), 0u);                       // empty
  CHECK_EQ(s->warm(read_req(reg, cap, 1)), 0u);                     // past the end
  CHECK_EQ(s->warm(read_req(reg, cap - 8, 9)), 0u);                 // runs over the end
  CHECK_EQ(s->warm(read_req(reg, 0xFFFFFFFFu, 0xFFFFFFFFu)), 0u);   // offset + size overflows 32 bits
  CHECK_EQ(s->warm(read_req(pd3_region_id(kServer, 999), 0, 64)), 0u);  // no such region
  CHECK_EQ(s->warm(read_req(pd3_region_id(kServer + 1, 1), 0, 64)), 0u);  // another server's id
  CHECK_EQ(s->warm(request(PD3_OP_CONTROL, PD3_CTL_ALLOCATE, 0, 4096)), 0u);
  CHECK_EQ(s->warm(request(PD3_OP_CONTROL, PD3_CTL_DEALLOCATE, reg, 0)), 0u);
  const char key[] = "user:1";
  CHECK_EQ(s->warm(request(PD3_OP_PREFETCH, 0, 0, 64, key, 6)), 0u);
  CHECK_EQ(s->stats().warm_hints, 0u);
  // A freed region's id gets nothing either.
  REQUIRE(run(*s, request(PD3_OP_CONTROL, PD3_CTL_DEALLOCATE, reg, 0)) == PD3_OK);
  CHECK_EQ(s->warm(read_req(reg, 0, 64)), 0u);
}

TEST(memstore_warm_changes_no_byte) {
  auto s = open_store(memory_options());
  uint32_t cap = 0;
  const uint32_t reg = allocate(*s, 64u << 10, &cap);
  Bytes before(8192);
  for (size_t i = 0; i < before.size(); ++i) before[i] = uint8_t(pd3test::mix64(i));
  REQUIRE(run(*s, write_req(reg, 0, before)) == PD3_OK);
  // Hints for writes that never run: the bytes stay as they were.
  for (uint32_t off = 0; off < 8192; off += 100) CHECK(s->warm(write_req(reg, off, Bytes(64, 0xFF))) > 0);
  Bytes after;
  REQUIRE(run(*s, read_req(reg, 0, 8192), &after) == PD3_OK);
  CHECK(after == before);
  CHECK_EQ(s->stats().writes, 1u);
}

TEST(memstore_warm_skips_the_tier) {
  pd3test::TempDir dir("warm-tier");
  REQUIRE(!dir.path.empty());
  MemStoreOptions o = memory_options();
  o.data_dir = dir.path;
  o.page_size = 4096;
  o.dram_budget = 16 * 4096;
  o.tier_io = pd3::tier::IoKind::kThreads;
  auto s = open_store(o);
  uint32_t cap = 0;
  const uint32_t reg = allocate(*s, 64u << 10, &cap);
  // The tier's bytes need not be in DRAM, and prepare() pins what a record touches: no hint.
  CHECK_EQ(s->warm(read_req(reg, 0, 64)), 0u);
  CHECK_EQ(s->warm(write_req(reg, 0, Bytes(64, 1))), 0u);
  CHECK_EQ(s->stats().warm_hints, 0u);
}

// Random records of every op against two regions, ids that name no region, and offsets and sizes
// around the regions' ends and 2^32: the lines hinted always match a model of the rule, and the
// count in the stats is their sum.
TEST(memstore_warm_random_records_match_a_model) {
  auto s = open_store(memory_options());
  uint32_t cap_a = 0, cap_b = 0;
  const uint32_t a = allocate(*s, 256u << 10, &cap_a);
  const uint32_t b = allocate(*s, 4096, &cap_b);
  const uint32_t ids[] = {a, b, pd3_region_id(kServer, 77), pd3_region_id(kServer + 1, pd3_region_local(a)), 0};
  pd3test::Rng rng(0x3A11);
  const Bytes payload(8192, 0x5C);
  uint64_t total = 0;
  const uint32_t n = 100000 / pd3test::stress_scale();
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t op = rng.below(4);
    const uint32_t region = ids[rng.below(5)];
    const uint32_t cap = region == a ? cap_a : region == b ? cap_b : 0;
    uint32_t offset = 0, size = 0;
    switch (rng.below(4)) {
      case 0: offset = rng.below(cap_a + 128), size = rng.below(600); break;           // anywhere
      case 1: offset = cap - std::min(cap, rng.below(200)), size = rng.below(300); break;  // near the end
      case 2: offset = 0xFFFFFFFFu - rng.below(100), size = rng.below(200); break;       // near 2^32
      default: offset = rng.below(64), size = rng.below(8192) + 1; break;               // large
    }
    const pd3::TransportRequest req = request(op, region, offset, size, payload.data(), op == PD3_OP_WRITE ? size : 0);
    const bool valid = (op == PD3_OP_READ || op == PD3_OP_WRITE) && cap != 0 && size != 0 && uint64_t(offset) + size <= cap;
    const uint32_t want = valid ? std::min<uint32_t>(4, (offset + size - 1) / 64 - offset / 64 + 1) : 0;
    const uint32_t got = s->warm(req);
    if (got != want) {
      std::fprintf(stderr, "  op %u region %#x offset %u size %u: %u lines, want %u\n", op, region, offset, size, got, want);
      CHECK_EQ(got, want);
      break;
    }
    total += got;
  }
  CHECK_EQ(s->stats().warm_hints, total);
  CHECK(total > 0);
}
