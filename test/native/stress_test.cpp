// stress_test.cpp — concurrency stress: MPSC request ring, and the Loading Zone under constant reclamation.
#include <atomic>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/lz_view.hpp"
#include "common/segment.hpp"
#include "dpu/agent_session.hpp"
#include "agent_rings.hpp"
#include "harness.hpp"
#include "host/lz_consumer.hpp"
#include "host/request_batch.hpp"
#include "host/request_writer.hpp"
#include "pd3/host.h"
#include "util.hpp"

namespace {

using Clock = std::chrono::steady_clock;

const uint32_t kScale = pd3test::stress_scale();

using pd3test::mix64;

uint64_t fnv1a(const uint8_t* p, size_t n) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
  return h;
}

// ---- (a) request ring, many producers ----------------------------------------------------------

// Self-describing payload of one stress record: this header, `len` body bytes, then a checksum of both.
struct StressHeader {
  uint32_t tid;
  uint32_t seq;
  uint32_t len;
  uint32_t magic;
};
constexpr uint32_t kStressMagic = 0x57E55AA5u;

uint32_t body_len(uint32_t tid, uint32_t seq) { return uint32_t(mix64((uint64_t(tid) << 32) | seq) % 400); }
uint8_t body_byte(uint32_t tid, uint32_t seq, uint32_t i) { return uint8_t(mix64((uint64_t(tid) << 40) ^ (uint64_t(seq) << 12) ^ i)); }

std::vector<uint8_t> make_record(uint32_t tid, uint32_t seq) {
  const uint32_t len = body_len(tid, seq);
  std::vector<uint8_t> p(sizeof(StressHeader) + len + 8);
  const StressHeader h{tid, seq, len, kStressMagic};
  std::memcpy(p.data(), &h, sizeof h);
  for (uint32_t i = 0; i < len; ++i) p[sizeof h + i] = body_byte(tid, seq, i);
  const uint64_t sum = fnv1a(p.data(), sizeof h + len);
  std::memcpy(p.data() + sizeof h + len, &sum, 8);
  return p;
}

// Checks one drained record; returns an empty string if it is intact.
std::string check_record(const pd3::RequestView& v, uint32_t producers, const std::vector<uint32_t>& next) {
  if (v.status != PD3_OK) return "status " + std::to_string(v.status);
  if (pd3_op_of(v.hdr.op_id) != PD3_OP_WRITE) return "op";
  const uint32_t tid = v.hdr.region;
  if (tid >= producers) return "tid " + std::to_string(tid);
  if (v.hdr.offset != next[tid])
    return "order: producer " + std::to_string(tid) + " seq " + std::to_string(v.hdr.offset) + " expected " +
           std::to_string(next[tid]);
  if (pd3_id_of(v.hdr.op_id) != (v.hdr.offset & PD3_ID_MASK)) return "id";
  if (v.hdr.size < sizeof(StressHeader) + 8) return "size";
  StressHeader h;
  std::memcpy(&h, v.payload, sizeof h);
  if (h.magic != kStressMagic || h.tid != tid || h.seq != v.hdr.offset || h.len != body_len(tid, h.seq) ||
      v.hdr.size != sizeof h + h.len + 8)
    return "header";
  uint64_t sum;
  std::memcpy(&sum, v.payload + sizeof h + h.len, 8);
  if (sum != fnv1a(v.payload, sizeof h + h.len)) return "checksum";
  for (uint32_t i = 0; i < h.len; ++i)
    if (v.payload[sizeof h + i] != body_byte(tid, h.seq, i)) return "body";
  return {};
}

// ---- (b) Loading Zone ---------------------------------------------------------------------------

// Item k has key (k % keyspace) as 8 bytes and generation k / keyspace; its value is 8..256 bytes:
// k itself, then bytes derived from k, so a value stitched from two items is detectable.
uint32_t item_size(uint64_t k) { return 8 + uint32_t(mix64(k ^ 0xABCDEFull) % 249); }
uint8_t item_byte(uint64_t k, uint32_t i) { return uint8_t(mix64(k * 0x9E3779B97F4A7C15ull + i) >> 17); }

std::vector<uint8_t> item_value(uint64_t k) {
  std::vector<uint8_t> v(item_size(k));
  std::memcpy(v.data(), &k, 8);
  for (uint32_t i = 8; i < v.size(); ++i) v[i] = item_byte(k, i);
  return v;
}

// Validates a value returned for `key`; on success stores the item number in *k.
bool item_ok(const uint8_t* p, int64_t n, uint64_t key, uint64_t keyspace, uint64_t produced, uint64_t* k) {
  if (n < 8 || n > 256) return false;
  std::memcpy(k, p, 8);
  if (*k % keyspace != key || *k >= produced || int64_t(item_size(*k)) != n) return false;
  for (uint32_t i = 8; i < uint32_t(n); ++i)
    if (p[i] != item_byte(*k, i)) return false;
  return true;
}

// States of the items still pending in a zone (read after every thread has been joined).
struct PendingStates {
  uint64_t produced = 0, consumed = 0, invalid = 0, other = 0;
};
PendingStates scan_pending(const pd3_control* c) {
  pd3::LzView zone(const_cast<pd3_control*>(c));
  PendingStates s;
  for (uint64_t seq = c->lz_head_seq; seq < c->lz_tail_seq; ++seq) {
    const uint64_t w = zone.desc_of(seq).state;
    if (pd3::lz_seq_of(w) != seq) {
      ++s.other;
      continue;
    }
    switch (pd3::lz_state_of(w)) {
      case PD3_LZ_PRODUCED: ++s.produced; break;
      case PD3_LZ_CONSUMED: ++s.consumed; break;
      case PD3_LZ_INVALID: ++s.invalid; break;
      default: ++s.other; break;
    }
  }
  return s;
}

// A host segment with an agent session on the same Loading Zone.
struct LzRig {
  pd3test::ScopedHost host;
  std::unique_ptr<pd3::AgentSession> agent;
  // latency_ns < 0: the agent reaches the zone through shared memory; else through the latency backend.
  LzRig(uint64_t data_bytes, uint32_t items, int64_t latency_ns)
      : host("stress-lz", pd3_segment_sizes{4096, 4096, data_bytes, items, 0}) {
    if (host.rc == PD3_OK && pd3::AgentSession::attach(host.name.c_str(), &agent, pd3::DmaSetup{latency_ns}) != PD3_OK)
      agent.reset();
  }
  bool ok() const { return host.rc == PD3_OK && agent != nullptr; }
  const pd3_control* c() const { return pd3_host_control(host.h); }
};

}  // namespace

namespace {

// The agent side goes through HostDma: shared memory (latency_ns < 0) or the latency backend.
// The consumer of the request-ring stress tests: drains (through the agent's reader, over the
// DMA backend of `latency_ns`) until `total` records arrived, each checked by check_record, or
// until `failed` is set (here or by a producer) or 120 s pass. Returns the records received;
// `next` holds each producer's next expected sequence number, *passes the drains that took any.
uint64_t consume_records(pd3_control* c, uint32_t producers, uint64_t total, int64_t latency_ns,
                         std::atomic<bool>& failed, std::vector<uint32_t>& next, uint64_t* passes) {
  uint64_t received = 0;
  std::string first_error;
  const auto deadline = Clock::now() + std::chrono::seconds(120);
  while (received < total && !failed.load()) {
    const int n = pd3test::drain_requests(c, 256, [&](const pd3::RequestView& v) {
      const std::string err = check_record(v, producers, next);
      if (!err.empty()) {
        if (first_error.empty()) first_error = err;
        failed.store(true);
        return;
      }
      ++next[v.hdr.region];
      ++received;
    }, latency_ns);
    if (n < 0) {
      first_error = "drain returned " + std::to_string(n);
      failed.store(true);
    }
    if (n > 0) ++*passes;
    if (n == 0) {
      if (Clock::now() > deadline) {
        first_error = "timed out";
        failed.store(true);
      }
      std::this_thread::yield();
    }
  }
  if (!first_error.empty()) std::fprintf(stderr, "  first error: %s\n", first_error.c_str());
  return received;
}

void ring_many_producers(int64_t latency_ns, uint32_t per_producer) {
  const uint32_t kProducers = 4;
  const uint32_t kPerProducer = per_producer;
  const std::string name = pd3test::unique_name("stress-ring");
  std::unique_ptr<pd3::Segment> seg;
  REQUIRE(pd3::Segment::create(name.c_str(), pd3_segment_sizes{16384, 4096, 4096, 16, 0}, false, &seg) == PD3_OK);
  seg->unlink_name();
  pd3_control* c = seg->control();

  std::atomic<uint64_t> again{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> producers;
  for (uint32_t t = 0; t < kProducers; ++t) {
    producers.emplace_back([&, t] {
      uint64_t retries = 0;
      for (uint32_t seq = 0; seq < kPerProducer && !failed.load(std::memory_order_relaxed); ++seq) {
        const std::vector<uint8_t> p = make_record(t, seq);
        const pd3_request hdr = pd3_make_request(pd3_op_id(PD3_OP_WRITE, seq), t, seq, uint32_t(p.size()));
        for (;;) {
          const int rc = pd3::publish_request(c, hdr, p.data(), uint32_t(p.size()));
          if (rc == PD3_OK) break;
          if (rc != PD3_E_AGAIN) {
            failed.store(true);
            return;
          }
          ++retries;
          std::this_thread::yield();
        }
      }
      again.fetch_add(retries);
    });
  }

  // The consumer: every record exactly once, per producer in order, untorn.
  std::vector<uint32_t> next(kProducers, 0);
  const uint64_t total = uint64_t(kProducers) * kPerProducer;
  uint64_t passes = 0;
  const uint64_t received = consume_records(c, kProducers, total, latency_ns, failed, next, &passes);
  for (auto& th : producers) th.join();
  CHECK(!failed.load());
  CHECK_EQ(received, total);
  for (uint32_t t = 0; t < kProducers; ++t) CHECK_EQ(next[t], kPerProducer);
  std::vector<uint8_t> dummy;
  CHECK_EQ(pd3test::drain_requests(c, 256, [&](const pd3::RequestView&) { dummy.push_back(1); }, latency_ns), 0);  // nothing extra
  CHECK(dummy.empty());
  CHECK_EQ(c->host_requests, total);
  CHECK_EQ(c->agent_requests, total);
  CHECK_EQ(c->agent_corrupt, 0u);
  CHECK_EQ(c->req_head, c->req_tail);
  CHECK(c->req_tail > 20 * c->req_size);  // many laps
  CHECK_EQ(c->host_ring_full, again.load());
  const std::string how = latency_ns < 0 ? "shared memory" : std::to_string(latency_ns) + " ns per DMA";
  std::printf("    [ring, %s] %llu records, %llu passes, %llu back-pressure retries\n", how.c_str(), (unsigned long long)total,
              (unsigned long long)passes, (unsigned long long)again.load());
}

}  // namespace

TEST(stress_request_ring_many_producers_one_consumer) { ring_many_producers(-1, 200000 / kScale); }
TEST(stress_request_ring_many_producers_latency_dma) { ring_many_producers(200, 40000 / kScale); }

TEST(stress_request_ring_that_cannot_fill_never_refuses) {
  // 8 producers publish 1,024,000 bytes in total into a 1 MiB ring: it can never be full (and never
  // wraps), so any PD3_E_AGAIN is spurious. A producer whose relaxed tail read is older than the
  // head it reads next must retry its CAS rather than report "full" (a narrow race: this catches a
  // regression in a fraction of runs, never fails a correct ring).
  const uint32_t kProducers = 8, kPerProducer = 4000, kReps = 400 / kScale;
  uint64_t refused = 0, total = 0;
  for (uint32_t rep = 0; rep < kReps; ++rep) {
    const std::string name = pd3test::unique_name("stress-nofull");
    std::unique_ptr<pd3::Segment> seg;
    REQUIRE(pd3::Segment::create(name.c_str(), pd3_segment_sizes{1 << 20, 4096, 4096, 16, 0}, false, &seg) == PD3_OK);
    seg->unlink_name();
    pd3_control* c = seg->control();
    std::atomic<bool> failed{false};
    std::vector<std::thread> producers;
    for (uint32_t t = 0; t < kProducers; ++t) {
      producers.emplace_back([&, t] {
        for (uint32_t i = 0; i < kPerProducer; ++i) {
          // 32-byte slots
          const pd3_request h = pd3_make_request(pd3_op_id(PD3_OP_READ, i), t, i, 4);
          int rc;
          while ((rc = pd3::publish_request(c, h, nullptr, 0)) == PD3_E_AGAIN) std::this_thread::yield();
          if (rc != PD3_OK) failed.store(true);
        }
      });
    }
    std::vector<uint32_t> next(kProducers, 0);
    uint64_t got = 0;
    bool in_order = true;
    while (got < uint64_t(kProducers) * kPerProducer && !failed.load()) {
      const int n = pd3test::drain_requests(c, 1024, [&](const pd3::RequestView& v) {
        if (v.status != PD3_OK || v.hdr.region >= kProducers || v.hdr.offset != next[v.hdr.region]) in_order = false;
        else ++next[v.hdr.region];
      });
      if (n < 0) failed.store(true);
      if (n > 0) got += uint64_t(n);
      if (n == 0) std::this_thread::yield();
    }
    for (auto& th : producers) th.join();
    CHECK(!failed.load());
    CHECK(in_order);
    CHECK(c->req_tail <= c->req_size);
    refused += c->host_ring_full;
    total += got;
  }
  CHECK_EQ(refused, 0u);
  CHECK_EQ(total, uint64_t(kReps) * kProducers * kPerProducer);
}

namespace {

// `batch` > 1: the producer puts items in `batch` at a time (begin_batch … end_batch, as the
// engine does per pass), with the invalidations landing inside batches.
void lz_small_zone(int64_t latency_ns, uint64_t items, uint32_t batch = 1) {
  const uint64_t kItems = items;
  const uint64_t kKeyspace = 512;
  const uint64_t kWindow = 96;  // consumers ask for keys of the last 96 items; only <= 64 are live
  LzRig rig(8192, 64, latency_ns);
  REQUIRE(rig.ok());
  pd3::LzProducer& producer = rig.agent->zone();
  std::vector<std::atomic<uint8_t>> taken(kItems);
  std::atomic<uint64_t> published{0};  // items 0..published-1 have been produced
  std::atomic<bool> done{false}, failed{false};
  std::atomic<uint64_t> hits{0}, misses{0}, invalidations{0};

  std::thread prod([&] {
    uint64_t withdrawn = 0;
    for (uint64_t k = 0; k < kItems; ++k) {
      const uint64_t key = k % kKeyspace;
      const std::vector<uint8_t> v = item_value(k);
      if (batch > 1 && k % batch == 0) producer.begin_batch();
      if (producer.produce(pd3_op_id(PD3_OP_PREFETCH, uint32_t(k)), &key, 8, v.data(), uint32_t(v.size())) <= 0) {
        failed.store(true);
        break;
      }
      if (k % 101 == 100) {  // a write of a recent key withdraws its live copies
        const uint64_t victim = (k - 5) % kKeyspace;
        withdrawn += producer.invalidate(&victim, 8);
      }
      if (batch > 1 && (k + 1) % batch != 0 && k + 1 != kItems) continue;
      if (batch > 1) producer.end_batch();
      // release: consumers that see `published` may ask for the items (they are in the zone).
      published.store(k + 1, std::memory_order_release);
      producer.clean();
    }
    invalidations.store(withdrawn);
    done.store(true, std::memory_order_release);
  });

  pd3_host* handles[3] = {nullptr, nullptr, nullptr};
  for (auto& h : handles) REQUIRE(pd3_host_attach(rig.host.name.c_str(), &h) == PD3_OK);
  const pd3::LzView view(const_cast<pd3_control*>(rig.c()));
  std::vector<std::thread> consumers;
  for (int t = 0; t < 3; ++t) {
    consumers.emplace_back([&, t] {
      std::mt19937_64 rng(1000 + t);
      uint8_t buf[512];
      uint64_t my_hits = 0, my_misses = 0;
      while (!done.load(std::memory_order_acquire) && !failed.load(std::memory_order_relaxed)) {
        const uint64_t pub = published.load(std::memory_order_acquire);
        if (pub == 0) {
          std::this_thread::yield();
          continue;
        }
        const uint64_t back = rng() % std::min(pub, kWindow);
        const uint64_t key = (pub - 1 - back) % kKeyspace;
        // Keys that are multiples of 8 are never asked for: their items stay unconsumed, so the
        // small zone has to reclaim them whichever side is faster (with a slow, DMA-latency
        // producer the consumers would otherwise take nearly every item first).
        if (key % 8 == 0) continue;
        const int64_t n = t == 0 ? pd3::lz_check_and_return(view, &key, 8, buf, sizeof buf)
                                 : pd3_host_check_and_return(handles[t], &key, 8, buf, sizeof buf);
        if (n == 0) {
          ++my_misses;
          continue;
        }
        uint64_t k = 0;
        // The item was produced before we returned: at most the batch being published right now
        // (an invalidation publishes it early) is not yet counted in `published`.
        if (n < 0 || !item_ok(buf, n, key, kKeyspace, published.load(std::memory_order_acquire) + batch, &k)) {
          std::fprintf(stderr, "  consumer %d: bad value for key %llu (n=%lld)\n", t, (unsigned long long)key,
                       (long long)n);
          failed.store(true);
          break;
        }
        if (taken[k].exchange(1, std::memory_order_relaxed) != 0) {
          std::fprintf(stderr, "  item %llu returned twice\n", (unsigned long long)k);
          failed.store(true);
          break;
        }
        ++my_hits;
      }
      hits.fetch_add(my_hits);
      misses.fetch_add(my_misses);
    });
  }
  prod.join();
  for (auto& th : consumers) th.join();
  for (auto& h : handles) pd3_host_close(h);
  CHECK(!failed.load());

  const pd3_control* c = rig.c();
  uint64_t flagged = 0;
  for (auto& f : taken) flagged += f.load();
  CHECK_EQ(flagged, hits.load());
  CHECK_EQ(c->lz_produced, kItems);
  CHECK_EQ(c->lz_invalidated, invalidations.load());
  CHECK(hits.load() > 0);
  CHECK(c->lz_reclaimed_unconsumed > 0);  // the zone was too small: unconsumed items were reclaimed
  CHECK(c->lz_invalidated > 0);
  // Every item is accounted for exactly once: taken by a consumer, reclaimed unconsumed, withdrawn,
  // or still pending.
  PendingStates s = scan_pending(c);
  CHECK_EQ(s.other, 0u);
  CHECK_EQ(c->lz_consumed + s.consumed, hits.load());
  CHECK_EQ(c->lz_produced, hits.load() + c->lz_reclaimed_unconsumed + c->lz_invalidated + s.produced);
  // Final clean, then take whatever is left: afterwards the zone is empty and the counters add up.
  producer.clean();
  uint64_t final_hits = 0;
  uint8_t buf[512];
  for (uint64_t key = 0; key < kKeyspace; ++key) {
    int64_t n;
    while ((n = pd3_host_check_and_return(rig.host.h, &key, 8, buf, sizeof buf)) > 0) {
      uint64_t k = 0;
      CHECK(item_ok(buf, n, key, kKeyspace, kItems, &k));
      CHECK_EQ(taken[k].exchange(1), 0);
      ++final_hits;
    }
    CHECK_EQ(n, 0);
  }
  CHECK_EQ(final_hits, s.produced);
  producer.clean();
  CHECK_EQ(producer.pending(), 0u);
  CHECK_EQ(c->lz_consumed, hits.load() + final_hits);
  CHECK_EQ(c->lz_produced, c->lz_consumed + c->lz_reclaimed_unconsumed + c->lz_invalidated);
  std::printf("    [lz small] %llu items: %llu hits, %llu misses, %llu reclaimed unconsumed, %llu invalidated\n",
              (unsigned long long)kItems, (unsigned long long)hits.load(), (unsigned long long)misses.load(),
              (unsigned long long)c->lz_reclaimed_unconsumed, (unsigned long long)c->lz_invalidated);
}

}  // namespace

TEST(stress_loading_zone_small_zone_constant_reclamation) { lz_small_zone(-1, 300000 / kScale); }
TEST(stress_loading_zone_small_zone_latency_dma) { lz_small_zone(200, 60000 / kScale); }
TEST(stress_loading_zone_small_zone_batches) { lz_small_zone(-1, 300000 / kScale, 8); }
TEST(stress_loading_zone_small_zone_batches_latency_dma) { lz_small_zone(200, 60000 / kScale, 8); }

namespace {

void lz_large_zone(int64_t latency_ns, uint64_t items) {
  const uint64_t kItems = items;
  LzRig rig(32ull << 20, 65536, latency_ns);
  REQUIRE(rig.ok());
  pd3::LzProducer& producer = rig.agent->zone();
  std::vector<std::atomic<uint8_t>> taken(kItems);
  std::atomic<uint64_t> published{0};
  std::atomic<bool> failed{false};
  std::atomic<uint64_t> hits{0};

  std::thread prod([&] {
    for (uint64_t k = 0; k < kItems; ++k) {
      const std::vector<uint8_t> v = item_value(k);
      if (producer.produce(pd3_op_id(PD3_OP_PREFETCH, uint32_t(k)), &k, 8, v.data(), uint32_t(v.size())) <= 0) {
        failed.store(true);
        return;
      }
      published.store(k + 1, std::memory_order_release);
    }
  });
  pd3_host* handles[3] = {nullptr, nullptr, nullptr};
  for (auto& h : handles) REQUIRE(pd3_host_attach(rig.host.name.c_str(), &h) == PD3_OK);
  const pd3::LzView view(const_cast<pd3_control*>(rig.c()));
  std::vector<std::thread> consumers;
  for (int t = 0; t < 3; ++t) {
    consumers.emplace_back([&, t] {
      uint8_t buf[512];
      uint64_t my_hits = 0;
      // Each consumer asks for every key once, in production order, a few items apart from the
      // others, so all three race for most items.
      for (uint64_t i = 0; i < kItems && !failed.load(std::memory_order_relaxed); ++i) {
        const uint64_t k = t == 0 ? i : (i + uint64_t(t) * 7) % kItems;  // small offsets: real races
        while (published.load(std::memory_order_acquire) <= k) {
          if (failed.load(std::memory_order_relaxed)) return;
          std::this_thread::yield();
        }
        const int64_t n = t == 0 ? pd3::lz_check_and_return(view, &k, 8, buf, sizeof buf)
                                 : pd3_host_check_and_return(handles[t], &k, 8, buf, sizeof buf);
        if (n == 0) continue;
        uint64_t got = 0;
        if (n < 0 || !item_ok(buf, n, k, ~0ull, kItems, &got) || got != k || taken[k].exchange(1) != 0) {
          std::fprintf(stderr, "  consumer %d: bad or repeated item %llu (n=%lld)\n", t, (unsigned long long)k,
                       (long long)n);
          failed.store(true);
          return;
        }
        ++my_hits;
      }
      hits.fetch_add(my_hits);
    });
  }
  prod.join();
  for (auto& th : consumers) th.join();
  for (auto& h : handles) pd3_host_close(h);
  CHECK(!failed.load());
  const pd3_control* c = rig.c();
  CHECK_EQ(c->lz_produced, kItems);
  CHECK_EQ(c->lz_reclaimed_unconsumed, 0u);
  CHECK_EQ(producer.pending(), kItems);
  // An item every consumer missed must still be there (nothing was reclaimed): take it now.
  uint64_t late = 0;
  uint8_t buf[512];
  for (uint64_t k = 0; k < kItems; ++k) {
    if (taken[k].load()) continue;
    const int64_t n = pd3_host_check_and_return(rig.host.h, &k, 8, buf, sizeof buf);
    uint64_t got = 0;
    CHECK(n > 0 && item_ok(buf, n, k, ~0ull, kItems, &got) && got == k);
    taken[k].store(1);
    ++late;
  }
  uint64_t flagged = 0;
  for (auto& f : taken) flagged += f.load();
  CHECK_EQ(flagged, kItems);
  CHECK_EQ(hits.load() + late, kItems);
  CHECK_EQ(producer.clean(), uint32_t(kItems));
  CHECK_EQ(c->lz_consumed, kItems);
  CHECK_EQ(producer.pending(), 0u);
  std::printf("    [lz large] %llu items: %llu taken by racing consumers, %llu missed by all three\n",
              (unsigned long long)kItems, (unsigned long long)hits.load(), (unsigned long long)late);
}

}  // namespace

TEST(stress_loading_zone_large_zone_every_item_once) { lz_large_zone(-1, 65536 / (kScale > 1 ? 4 : 1)); }
TEST(stress_loading_zone_large_zone_latency_dma) { lz_large_zone(200, 16384 / (kScale > 1 ? 4 : 1)); }

// ---- (c) request ring, batched runs with a cached head -------------------------------------------

namespace {

void batched_runs(int64_t latency_ns, uint32_t per_producer) {
  // The host library's publication path: each producer stages 1..40 records and publishes them as
  // one run (RequestBatch::publish_prefix, halving the run while the ring lacks room), with the
  // producers sharing one cached copy of head. The consumer must still see every record exactly
  // once, each producer's in order, untorn, across many laps of a small ring.
  const uint32_t kProducers = 4;
  const uint32_t kPerProducer = per_producer;
  const std::string name = pd3test::unique_name("stress-batch");
  std::unique_ptr<pd3::Segment> seg;
  REQUIRE(pd3::Segment::create(name.c_str(), pd3_segment_sizes{16384, 4096, 4096, 16, 0}, false, &seg) == PD3_OK);
  seg->unlink_name();
  pd3_control* c = seg->control();
  std::atomic<uint64_t> head_cache{0};
  std::atomic<bool> failed{false};
  std::atomic<uint64_t> runs{0}, split_runs{0};
  std::vector<std::thread> producers;
  for (uint32_t t = 0; t < kProducers; ++t) {
    producers.emplace_back([&, t] {
      std::mt19937 rng(t * 7919 + 1);
      const pd3::SlotRing ring = pd3::request_ring(c);
      pd3::RequestBatch batch;
      uint32_t seq = 0;
      while ((seq < kPerProducer || !batch.empty()) && !failed.load(std::memory_order_relaxed)) {
        const uint32_t want = 1 + rng() % 40;
        while (seq < kPerProducer && batch.size() < want) {
          const std::vector<uint8_t> p = make_record(t, seq);
          const pd3_request hdr = pd3_make_request(pd3_op_id(PD3_OP_WRITE, seq), t, seq, uint32_t(p.size()));
          batch.add(uint16_t(seq), hdr, p.data(), uint32_t(p.size()));
          ++seq;
        }
        uint32_t n = batch.size();
        while (n > 0 && !batch.publish_prefix(ring, n, &head_cache)) n /= 2;
        if (n == 0) {
          std::this_thread::yield();
          continue;
        }
        runs.fetch_add(1, std::memory_order_relaxed);
        if (n < batch.size()) split_runs.fetch_add(1, std::memory_order_relaxed);
        batch.drop_front(n);
      }
    });
  }
  std::vector<uint32_t> next(kProducers, 0);
  const uint64_t total = uint64_t(kProducers) * kPerProducer;
  uint64_t passes = 0;
  const uint64_t received = consume_records(c, kProducers, total, latency_ns, failed, next, &passes);
  for (auto& th : producers) th.join();
  CHECK(!failed.load());
  CHECK_EQ(received, total);
  for (uint32_t t = 0; t < kProducers; ++t) CHECK_EQ(next[t], kPerProducer);
  CHECK_EQ(c->req_head, c->req_tail);
  CHECK(c->req_tail > 50 * c->req_size);  // many laps
  CHECK(head_cache.load() <= c->req_head);  // the cache never runs ahead of the consumer
  CHECK(split_runs.load() > 0);            // the ring was full often enough to split runs
  std::printf("    [batched ring] %llu records in %llu runs (%llu split)\n", (unsigned long long)total,
              (unsigned long long)runs.load(), (unsigned long long)split_runs.load());
}

}  // namespace

TEST(stress_request_ring_batched_runs_many_producers) { batched_runs(-1, 100000 / kScale); }
TEST(stress_request_ring_batched_runs_latency_dma) { batched_runs(200, 20000 / kScale); }
