// host_dma_test.cpp — the DMA interface's backends: the latency backend counts every operation and
// byte by kind, exactly, for a known sequence (raw, and through the agent's ring and zone code);
// reads wait for the modelled latency, posted writes do not until a fence; bad latencies are refused.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "dpu/agent_session.hpp"
#include "dpu/latency_dma.hpp"
#include "dpu/transfer_engine.hpp"
#include "harness.hpp"
#include "host/request_writer.hpp"
#include "pd3/host.h"
#include "util.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// A LatencyDma over 4 KiB of agent-owned memory standing for a segment.
struct Mem {
  std::vector<uint64_t> words = std::vector<uint64_t>(512, 0);
  std::unique_ptr<pd3::LatencyDma> dma;
  explicit Mem(uint64_t latency_ns) {
    dma = std::make_unique<pd3::LatencyDma>(
        std::make_unique<pd3::ShmDma>(reinterpret_cast<uint8_t*>(words.data()), words.size() * 8), latency_ns);
  }
};

bool same(const pd3::DmaCounts& a, const pd3::DmaCounts& b) {
  const bool equal = a.reads == b.reads && a.read_bytes == b.read_bytes && a.writes == b.writes &&
                     a.write_bytes == b.write_bytes && a.atomics == b.atomics && a.fences == b.fences && a.wakes == b.wakes;
  if (!equal)
    std::printf("    counts r %llu/%llu w %llu/%llu a %llu f %llu k %llu\n", (unsigned long long)a.reads,
              (unsigned long long)a.read_bytes, (unsigned long long)a.writes, (unsigned long long)a.write_bytes,
              (unsigned long long)a.atomics, (unsigned long long)a.fences, (unsigned long long)a.wakes);
  return equal;
}

pd3::DmaCounts minus(pd3::DmaCounts a, const pd3::DmaCounts& b) {
  a.reads -= b.reads, a.read_bytes -= b.read_bytes, a.writes -= b.writes, a.write_bytes -= b.write_bytes;
  a.atomics -= b.atomics, a.fences -= b.fences, a.wakes -= b.wakes, a.wait_ns -= b.wait_ns;
  return a;
}

}  // namespace

TEST(host_dma_counts_each_operation_and_byte) {
  Mem m(0);
  pd3::HostDma& d = *m.dma;
  const char text[] = "thirteen byte";  // 13 bytes + NUL
  d.write(64, text, 13);
  uint8_t back[16] = {};
  d.read(64, back, 16);
  CHECK(std::memcmp(back, text, 13) == 0);
  CHECK_EQ(back[13], 0);  // the last word is zero-padded
  d.write64(8, 41);
  CHECK_EQ(d.read64(8), 41u);
  d.fence();
  d.fence(pd3::DmaFence::kAll);
  CHECK_EQ(d.swap64(8, 7), 41u);
  uint64_t found = 0;
  CHECK(!d.cas64(8, 6, 9, &found));
  CHECK_EQ(found, 7u);
  CHECK(d.cas64(8, 7, 9, &found));
  CHECK_EQ(d.read64(8), 9u);
  d.write32(16, 5);
  CHECK_EQ(d.read32(16), 5u);
  d.wake32(20);
  CHECK_EQ(d.read32(20), 1u);
  const pd3::DmaCounts c = d.counts();
  pd3::DmaCounts want;
  want.reads = 5, want.read_bytes = 16 + 8 + 8 + 4 + 4;
  want.writes = 3, want.write_bytes = 13 + 8 + 4;
  want.atomics = 3, want.fences = 2, want.wakes = 1;
  CHECK(same(c, want));
  CHECK_EQ(c.wait_ns, 0u);  // no latency: nothing waited
  CHECK(same(pd3::ShmDma(reinterpret_cast<uint8_t*>(m.words.data()), 4096).counts(), pd3::DmaCounts{}));
}

TEST(host_dma_latency_reads_wait_writes_are_posted_until_a_fence) {
  const uint64_t kLatency = 200000;  // 200 µs: far above timer noise
  Mem m(kLatency);
  pd3::HostDma& d = *m.dma;
  auto t0 = Clock::now();
  (void)d.read64(0);
  CHECK(Clock::now() - t0 >= std::chrono::nanoseconds(kLatency));  // a read waits for its completion
  const uint64_t waited_read = d.counts().wait_ns;
  CHECK(waited_read >= kLatency);
  t0 = Clock::now();
  d.write64(0, 1);
  d.fence();  // waits until the write landed: L after it was posted
  CHECK(Clock::now() - t0 >= std::chrono::nanoseconds(kLatency));
  const uint64_t waited = d.counts().wait_ns;
  d.fence();  // nothing posted since: no wait
  CHECK_EQ(d.counts().wait_ns, waited);
  uint64_t found;
  t0 = Clock::now();
  (void)d.cas64(0, 1, 2, &found);
  CHECK(Clock::now() - t0 >= std::chrono::nanoseconds(kLatency));  // an atomic waits for its result
}

TEST(host_dma_agent_operations_cost_what_their_contract_says) {
  pd3test::ScopedHost host("dma-count", pd3_segment_sizes{4096, 4096, 1 << 16, 64, 0});
  REQUIRE(host.rc == PD3_OK);
  std::unique_ptr<pd3::AgentSession> agent;
  REQUIRE(pd3::AgentSession::attach(host.name.c_str(), &agent, pd3::DmaSetup{0}) == PD3_OK);
  pd3_control* c = host.control();
  // Three 16-byte READ requests: 32-byte slots.
  for (uint32_t i = 0; i < 3; ++i)
    REQUIRE(pd3::publish_request(c, pd3_make_request(pd3_op_id(PD3_OP_READ, i), 1, i, 8), nullptr, 0) == PD3_OK);
  pd3::DmaCounts before = agent->dma().counts();
  uint32_t seen = 0;
  CHECK_EQ(agent->requests().drain(64, 0, [&](const pd3::RequestView& v) { seen += v.status == PD3_OK; }), 3);
  CHECK_EQ(seen, 3u);
  pd3::DmaCounts want;
  // The seal at head, then one window from head (the first pass reads the smallest window; the
  // three slots are in it, the unpublished bytes after them are ignored), then, as a DMA engine's
  // read gives no order inside it, the three sealed slots again (and the next slot's header).
  want.reads = 3, want.read_bytes = 8 + pd3::RequestReader::kMinWindowBytes + 3 * 32 + 16;
  want.writes = 2, want.write_bytes = 8 + 64;    // req_head, the counters' line
  CHECK(same(minus(agent->dma().counts(), before), want));
  CHECK_EQ(c->req_head, c->req_tail);
  CHECK_EQ(c->agent_requests, 3u);

  // An empty ring costs one read.
  before = agent->dma().counts();
  CHECK_EQ(agent->requests().drain(64, 0, [](const pd3::RequestView&) {}), 0);
  want = {};
  want.reads = 1, want.read_bytes = 8;
  CHECK(same(minus(agent->dma().counts(), before), want));

  // Three responses, one batch: resp_tail, the slots (one write), a fence, the first seal, counters;
  // then the completion doorbell: a fence(kAll) and a look at host_sleeping (nobody sleeps).
  before = agent->dma().counts();
  const uint8_t data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  for (uint32_t i = 0; i < 3; ++i) REQUIRE(agent->responses().add(pd3_op_id(PD3_OP_READ, i), PD3_OK, data, 8) == PD3_OK);
  CHECK_EQ(agent->responses().flush(), 3u);
  want = {};
  // One batch slot: its 16-byte header, then three records of 8 + 8 data bytes.
  want.writes = 4, want.write_bytes = 8 + 16 + 3 * 16 + 8 + 64;
  want.fences = 2;
  want.reads = 1, want.read_bytes = 4;
  CHECK(same(minus(agent->dma().counts(), before), want));
  // Published: the seal is there, and the slot holds the three.
  const uint8_t* ring = reinterpret_cast<const uint8_t*>(c) + c->resp_offset;
  const auto* slot = reinterpret_cast<const pd3_slot*>(ring);
  CHECK_EQ(slot->seal, (0 ^ c->seal_salt) | 1u);
  CHECK_EQ(slot->kind, PD3_SLOT_RECORDS);
  CHECK_EQ(slot->count, 3u);
  CHECK_EQ(slot->length, 64u);
  CHECK_EQ(c->resp_tail, 64u);
  CHECK_EQ(c->agent_responses, 3u);

  // A host thread sleeps until the fourth response: that batch also reads the target, resets it
  // (a CAS) and wakes the sleepers.
  c->host_sleeping = 1;
  c->host_wake_at = 4;
  before = agent->dma().counts();
  REQUIRE(agent->responses().add(pd3_op_id(PD3_OP_READ, 3), PD3_OK, data, 8) == PD3_OK);
  CHECK_EQ(agent->responses().flush(), 1u);
  want = {};
  want.writes = 4, want.write_bytes = 8 + 32 + 8 + 64;
  want.fences = 2;
  want.reads = 2, want.read_bytes = 4 + 8;
  want.atomics = 1, want.wakes = 1;
  CHECK(same(minus(agent->dma().counts(), before), want));
  CHECK_EQ(c->host_wake_at, PD3_WAKE_NEVER);
  CHECK_EQ(c->host_doorbell, 1u);
  c->host_sleeping = 0;

  // One Loading Zone item: record, descriptor fields, fence, state, fence, bucket head, cursors, counters.
  before = agent->dma().counts();
  CHECK_EQ(agent->zone().produce(pd3_op_id(PD3_OP_PREFETCH, 0), "key", 3, data, 8), 1);
  want = {};
  const uint64_t record = pd3_lz_record_len(3, 8);
  want.writes = 6, want.write_bytes = record + 24 + 8 + 8 + 32 + 64;
  want.fences = 2;
  CHECK(same(minus(agent->dma().counts(), before), want));
  // Invalidating it: a CAS (the key is matched by the fingerprint the agent kept, not read back);
  // the counters' line.
  before = agent->dma().counts();
  CHECK_EQ(agent->zone().invalidate("key", 3), 1u);
  want = {};
  want.atomics = 1, want.writes = 1, want.write_bytes = 64;
  CHECK(same(minus(agent->dma().counts(), before), want));
}

TEST(host_dma_unordered_reads_still_judge_broken_framing) {
  // Through the latency backend (reads modelled as unordered, so every sealed run is read twice):
  // the records before a slot with broken framing are delivered, the pass reports PD3_E_CORRUPT,
  // and head stops at the broken slot.
  pd3test::ScopedHost host("dma-corrupt", pd3_segment_sizes{4096, 4096, 4096, 16, 0});
  REQUIRE(host.rc == PD3_OK);
  std::unique_ptr<pd3::AgentSession> agent;
  REQUIRE(pd3::AgentSession::attach(host.name.c_str(), &agent, pd3::DmaSetup{0}) == PD3_OK);
  pd3_control* c = host.control();
  for (uint32_t i = 0; i < 2; ++i)
    REQUIRE(pd3::publish_request(c, pd3_make_request(pd3_op_id(PD3_OP_READ, i), 1, i, 8), nullptr, 0) == PD3_OK);
  const uint64_t bad = c->req_tail;  // a sealed slot whose length is not a multiple of 16
  const pd3_slot s{(bad ^ c->seal_salt) | 1u, 24, PD3_SLOT_RECORD, 0};
  std::memcpy(reinterpret_cast<uint8_t*>(c) + c->req_offset + bad, &s, sizeof s);
  c->req_tail = bad + 32;
  uint32_t seen = 0;
  CHECK_EQ(agent->requests().drain(64, 0, [&](const pd3::RequestView& v) { seen += v.status == PD3_OK; }), PD3_E_CORRUPT);
  CHECK_EQ(seen, 2u);
  CHECK_EQ(c->req_head, bad);
  CHECK_EQ(agent->requests().drain(64, 0, [&](const pd3::RequestView&) { ++seen; }), PD3_E_CORRUPT);  // stuck there
  CHECK_EQ(seen, 2u);
}

TEST(host_dma_bad_latency_is_refused) {
  pd3test::ScopedHost host("dma-bad", pd3_segment_sizes{4096, 4096, 4096, 16, 0});
  REQUIRE(host.rc == PD3_OK);
  std::unique_ptr<pd3::AgentSession> agent;
  CHECK_EQ(pd3::AgentSession::attach(host.name.c_str(), &agent, pd3::DmaSetup{1000001}), PD3_E_INVAL);
  CHECK(agent == nullptr);
  CHECK_EQ(pd3::AgentSession::attach(host.name.c_str(), &agent, pd3::DmaSetup{1000000}), PD3_OK);
  pd3::EngineOptions o;
  o.segment = host.name;
  o.servers.push_back(pd3::Endpoint{"127.0.0.1", 1});
  o.dma_latency_ns = 1000001;
  CHECK_EQ(pd3::validate_engine_options(o), PD3_E_INVAL);
  CHECK(std::strstr(pd3_last_error(), "dma_latency_ns") != nullptr);
  o.dma_latency_ns = 1000000;
  CHECK_EQ(pd3::validate_engine_options(o), PD3_OK);
  o.dma_latency_ns = -1;
  CHECK_EQ(pd3::validate_engine_options(o), PD3_OK);
}
