// prefetcher_test.cpp — the prefetcher against a real Loading Zone and Host View and a fake engine
// port: every §8 rule, cancellation, routing and broadcasts, ids and bounds, a randomized model of
// clients, host and servers that checks no stale item is ever taken, and a stress run with the
// Host View threads and a consumer thread (run under TSan too).
#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "dpu/agent_session.hpp"
#include "dpu/key_directory.hpp"
#include "dpu/prefetch_table.hpp"
#include "dpu/prefetcher.hpp"
#include "dpu/unflushed_keys.hpp"
#include "harness.hpp"
#include "pd3/host.h"
#include "pd3/wire.h"
#include "util.hpp"

namespace {

using pd3::HostView;
using pd3::HostViewOptions;
using pd3::KeyDirectory;
using pd3::PrefetchEntry;
using pd3::Prefetcher;
using pd3::PrefetcherOptions;
using pd3::PrefetcherStats;
using pd3::PrefetchTable;
using pd3::UnflushedKeys;

// The engine's side as the prefetcher sees it: records what it sends, and lets the test decide
// which servers are up and what a send returns.
struct FakePort final : pd3::PrefetchPort {
  // One PREFETCH record handed to the engine.
  struct Sent {
    int server;
    uint16_t op_id;
    std::string key;
    uint32_t max_size;
  };
  std::vector<Sent> sent;
  uint32_t up = 1;
  int result[32] = {};                                  // what send_prefetch returns per server
  std::function<void(const Sent&)> on_send;             // the model test snapshots answers here

  int send_prefetch(int server, uint16_t op_id, const uint8_t* key, uint16_t key_len, uint32_t max_size,
                    uint64_t) override {
    if (result[server] != PD3_OK) return result[server];
    sent.push_back({server, op_id, std::string(reinterpret_cast<const char*>(key), key_len), max_size});
    if (on_send) on_send(sent.back());
    return PD3_OK;
  }
  uint32_t servers_up() const override { return up; }
};

// How a Rig is built.
struct RigOptions {
  bool host_view = true;
  uint32_t shards = 2;
  uint64_t host_view_keys = 1 << 16;
  uint32_t host_view_queue = 64;  // batches per shard queue
  PrefetcherOptions prefetcher = small_options();

  static PrefetcherOptions small_options() {
    PrefetcherOptions o;
    o.directory_keys = 1 << 12;
    o.unflushed_keys = 1 << 10;
    o.max_item_bytes = 4096;
    return o;
  }
};

// A host segment (its Loading Zone), an agent session producing into it, a Host View, a fake port
// and the prefetcher under test.
struct Rig {
  pd3test::ScopedHost host;
  std::unique_ptr<pd3::AgentSession> agent;
  std::unique_ptr<HostView> hv;
  FakePort port;
  std::unique_ptr<Prefetcher> p;
  uint64_t clock = 1'000'000;

  explicit Rig(const RigOptions& o = {}) : host("pf", pd3_segment_sizes{4096, 4096, 1 << 20, 1024, 0}) {
    if (host.rc != PD3_OK || pd3::AgentSession::attach(host.name.c_str(), &agent) != PD3_OK) return;
    if (o.host_view) {
      HostViewOptions hvo;
      hvo.capacity = o.host_view_keys;
      hvo.shards = o.shards;
      hvo.queue_depth = o.host_view_queue;
      hvo.table.huge_pages = false;
      if (HostView::create(hvo, &hv) != PD3_OK) return;
    }
    if (Prefetcher::create(o.prefetcher, hv.get(), &agent->zone(), &port, &p) != PD3_OK) p.reset();
  }
  // Destroys the prefetcher before the Host View it submitted batches to.
  ~Rig() { p.reset(); }
  bool ok() const { return p != nullptr; }

  void access(uint32_t op, const std::string& key) {
    p->on_access({clock, op, uint32_t(key.size()), reinterpret_cast<const uint8_t*>(key.data())}, clock);
  }
  void read(const std::string& k) { access(PD3_ACCESS_READ, k); }
  void write(const std::string& k) { access(PD3_ACCESS_WRITE, k); }
  void del(const std::string& k) { access(PD3_ACCESS_DELETE, k); }
  // What the engine does for a host WRITE holding `k` to `server`: withdraw the zone items, then tell us.
  void flush(const std::string& k, int server = 0) {
    agent->zone().invalidate(k.data(), uint32_t(k.size()));
    p->on_host_flush(reinterpret_cast<const uint8_t*>(k.data()), uint32_t(k.size()), server);
  }
  void host_read(const std::string& k) {
    p->on_host_read(reinterpret_cast<const uint8_t*>(k.data()), uint32_t(k.size()));
  }
  // Pumps until every Host View batch is back and acted on (sends included). False on timeout.
  bool settle() {
    const auto t0 = std::chrono::steady_clock::now();
    for (;;) {
      clock += 1000;
      p->pump(clock);
      if (p->host_view_idle()) {
        p->pump(clock);  // whatever the last verdicts queued (inserts of produced keys)
        if (p->host_view_idle()) return true;
      }
      if (pd3test::ms_since(t0) > 2000) return false;
      std::this_thread::yield();
    }
  }
  void answer(const FakePort::Sent& s, int status, const std::string& value = "", uint32_t size_override = 0) {
    clock += 5000;
    const uint32_t size = size_override ? size_override : uint32_t(value.size());
    p->on_response(s.op_id, s.server, status, reinterpret_cast<const uint8_t*>(s.key.data()), uint16_t(s.key.size()),
                   value.empty() ? nullptr : reinterpret_cast<const uint8_t*>(value.data()), size, clock);
  }
  // checkAndReturn through the C ABI: the value, or "" on a miss.
  std::string take(const std::string& k) {
    char buf[8192];
    const int64_t rc = pd3_host_check_and_return(host.h, k.data(), uint32_t(k.size()), buf, sizeof buf);
    return rc > 0 ? std::string(buf, size_t(rc)) : std::string();
  }
  PrefetcherStats stats() const { return p->stats(); }
};

// "prefix<n>" (built by appending: GCC 12 warns falsely about `"literal" + std::string&&`).
std::string numbered(const char* prefix, uint64_t n) {
  std::string s(prefix);
  s += std::to_string(n);
  return s;
}

// ---- the pieces ---------------------------------------------------------------------------------

TEST(prefetcher_unflushed_keys_match_a_set_and_overflow_conservatively) {
  std::unique_ptr<UnflushedKeys> u;
  CHECK_EQ(UnflushedKeys::create(0, &u), PD3_E_INVAL);
  CHECK_EQ(UnflushedKeys::create(UnflushedKeys::kMaxCapacity + 1, &u), PD3_E_INVAL);
  REQUIRE(UnflushedKeys::create(256, &u) == PD3_OK);
  std::set<uint64_t> model;
  pd3test::Rng rng(7);
  // Few distinct hashes so that adds and removes collide in probe runs; hash 0 is legal too.
  auto pick = [&] { return rng.below(4) == 0 ? 0 : pd3test::mix64(rng.below(200)); };
  for (int i = 0; i < 20000; ++i) {
    const uint64_t h = pick();
    if (rng.below(2)) {
      u->add(h);
      model.insert(h);
    } else {
      u->remove(h);
      model.erase(h);
    }
    if (i % 64 == 0)
      for (uint32_t k = 0; k < 200; ++k) CHECK_EQ(u->contains(pd3test::mix64(k)), model.count(pd3test::mix64(k)) == 1);
  }
  CHECK_EQ(u->size(), model.size());
  CHECK_EQ(u->overflows(), 0u);
  // Full: further keys go to the bitmap and are never reported flushed.
  std::unique_ptr<UnflushedKeys> small;
  REQUIRE(UnflushedKeys::create(4, &small) == PD3_OK);
  for (uint64_t k = 1; k <= 10; ++k) small->add(pd3test::mix64(k));
  CHECK_EQ(small->size(), 4u);
  CHECK_EQ(small->overflows(), 6u);
  for (uint64_t k = 1; k <= 10; ++k) small->remove(pd3test::mix64(k));
  for (uint64_t k = 1; k <= 4; ++k) CHECK(!small->contains(pd3test::mix64(k)));  // exact ones forgotten
  for (uint64_t k = 5; k <= 10; ++k) CHECK(small->contains(pd3test::mix64(k)));   // overflowed: stay
  CHECK_EQ(small->size(), 0u);
}

TEST(prefetcher_key_directory_routes_and_collides_to_unknown) {
  std::unique_ptr<KeyDirectory> d;
  CHECK_EQ(KeyDirectory::create(0, &d), PD3_E_INVAL);
  CHECK_EQ(KeyDirectory::create(KeyDirectory::kMaxSlots + 1, &d), PD3_E_INVAL);
  REQUIRE(KeyDirectory::create(1000, &d) == PD3_OK);
  CHECK_EQ(d->bytes(), 1024u * 4);
  const uint64_t a = pd3test::mix64(1);
  CHECK_EQ(d->server_of(a), KeyDirectory::kUnknown);
  d->learn(a, 3);
  CHECK_EQ(d->server_of(a), 3);
  d->learn(a, 0);
  CHECK_EQ(d->server_of(a), 0);
  CHECK_EQ(d->size(), 1u);
  d->learn(pd3test::mix64(2), -1);  // bad ids are ignored
  d->learn(pd3test::mix64(2), int(KeyDirectory::kMaxServers));
  CHECK_EQ(d->server_of(pd3test::mix64(2)), KeyDirectory::kUnknown);
  // Another key in a's slot takes it; a becomes unknown, never routed to b's server.
  const uint64_t b = (a & 1023) | (pd3test::mix64(99) & ~uint64_t(1023));
  d->learn(b, 5);
  CHECK_EQ(d->server_of(b), 5);
  CHECK_EQ(d->server_of(a), KeyDirectory::kUnknown);
  CHECK_EQ(d->size(), 1u);
}

TEST(prefetcher_table_ids_index_and_fifo_reuse) {
  PrefetchTable t(4);
  const uint64_t h = 42;  // every key in one probe run: the index must compare whole keys
  CHECK_EQ(t.acquire("a", h, 1), 0);
  CHECK_EQ(t.acquire("b", h, 1), 1);
  CHECK_EQ(t.acquire("c", h, 1), 2);
  CHECK_EQ(t.find("b", h), 1);
  CHECK_EQ(t.find("d", h), -1);
  t.unindex(0);
  CHECK_EQ(t.find("a", h), -1);
  CHECK_EQ(t.find("b", h), 1);
  CHECK_EQ(t.find("c", h), 2);
  CHECK_EQ(t.acquire("a", h, 1), 3);  // the unindexed entry 0 still holds its id
  CHECK_EQ(t.acquire("e", h, 1), -1);
  const uint32_t gen = t.at(1).gen;
  t.release(1);
  CHECK(t.at(1).gen != gen);
  CHECK_EQ(t.find("b", h), -1);
  CHECK_EQ(t.find("c", h), 2);
  t.release(0);
  CHECK_EQ(t.acquire("x", h, 1), 1);  // freed longest ago first
  CHECK_EQ(t.acquire("y", h, 1), 0);
  CHECK_EQ(t.in_use(), 4u);
  CHECK_EQ(t.find("x", h), 1);
  CHECK_EQ(t.find("a", h), 3);
}

// ---- creation and bad input -------------------------------------------------------------------

TEST(prefetcher_create_rejects_bad_options) {
  Rig rig;
  REQUIRE(rig.ok());
  auto rc = [&](void (*tweak)(PrefetcherOptions&)) {
    PrefetcherOptions o = RigOptions::small_options();
    tweak(o);
    std::unique_ptr<Prefetcher> p;
    const int r = Prefetcher::create(o, rig.hv.get(), &rig.agent->zone(), &rig.port, &p);
    CHECK_EQ(r == PD3_OK, p != nullptr);
    return r;
  };
  CHECK_EQ(rc([](PrefetcherOptions&) {}), PD3_OK);
  CHECK_EQ(rc([](PrefetcherOptions& o) { o.max_inflight = 0; }), PD3_E_INVAL);
  CHECK_EQ(rc([](PrefetcherOptions& o) { o.max_inflight = 16385; }), PD3_E_INVAL);
  CHECK_EQ(rc([](PrefetcherOptions& o) { o.max_inflight = 16384; }), PD3_OK);
  CHECK_EQ(rc([](PrefetcherOptions& o) { o.max_item_bytes = 0; }), PD3_E_INVAL);
  CHECK_EQ(rc([](PrefetcherOptions& o) { o.max_item_bytes = 0x80000000u; }), PD3_E_INVAL);
  CHECK_EQ(rc([](PrefetcherOptions& o) { o.lookup_batch = 0; }), PD3_E_INVAL);
  CHECK_EQ(rc([](PrefetcherOptions& o) { o.lookup_batch = 4097; }), PD3_E_INVAL);
  CHECK_EQ(rc([](PrefetcherOptions& o) { o.directory_keys = 0; }), PD3_E_INVAL);
  CHECK_EQ(rc([](PrefetcherOptions& o) { o.unflushed_keys = 0; }), PD3_E_INVAL);
  CHECK_EQ(rc([](PrefetcherOptions& o) { o.host_view_backlog = 0; }), PD3_E_INVAL);
  std::unique_ptr<Prefetcher> p;
  CHECK_EQ(Prefetcher::create({}, nullptr, nullptr, &rig.port, &p), PD3_E_INVAL);
  CHECK_EQ(Prefetcher::create({}, nullptr, &rig.agent->zone(), nullptr, &p), PD3_E_INVAL);
  CHECK_EQ(Prefetcher::create({}, nullptr, &rig.agent->zone(), &rig.port, nullptr), PD3_E_INVAL);
  CHECK(p == nullptr);
}

TEST(prefetcher_bad_accesses_and_stray_responses_are_counted_not_trusted) {
  Rig rig;
  REQUIRE(rig.ok());
  const std::string big(70000, 'k');
  rig.p->on_access({1, PD3_ACCESS_READ, 0, reinterpret_cast<const uint8_t*>("k")}, 1);
  rig.p->on_access({1, PD3_ACCESS_READ, 3, nullptr}, 1);
  rig.p->on_access({1, PD3_ACCESS_READ, uint32_t(big.size()), reinterpret_cast<const uint8_t*>(big.data())}, 1);
  rig.p->on_access({1, 9, 1, reinterpret_cast<const uint8_t*>("k")}, 1);
  rig.p->on_host_flush(nullptr, 4, 0);
  rig.p->on_host_read(reinterpret_cast<const uint8_t*>("k"), 0);
  CHECK_EQ(rig.stats().bad_accesses, 6u);
  CHECK_EQ(rig.stats().reads, 0u);

  rig.read("key");
  REQUIRE(rig.settle());
  REQUIRE(rig.port.sent.size() == 1);
  const FakePort::Sent s = rig.port.sent[0];
  const uint8_t* k = reinterpret_cast<const uint8_t*>(s.key.data());
  rig.p->on_response(pd3_op_id(PD3_OP_READ, pd3_id_of(s.op_id)), 0, PD3_OK, k, 3, k, 3, 1);  // wrong op
  rig.p->on_response(pd3_op_id(PD3_OP_PREFETCH, 4095), 0, PD3_OK, k, 3, k, 3, 1);  // id never used
  rig.p->on_response(pd3_op_id(PD3_OP_PREFETCH, 16383), 0, PD3_OK, k, 3, k, 3, 1);  // id beyond the table
  rig.p->on_response(s.op_id, 1, PD3_OK, k, 3, k, 3, 1);                            // not sent to server 1
  rig.p->on_response(s.op_id, -1, PD3_OK, k, 3, k, 3, 1);
  rig.p->on_response(s.op_id, 40, PD3_OK, k, 3, k, 3, 1);
  CHECK_EQ(rig.stats().stale_responses, 6u);
  CHECK_EQ(rig.p->inflight(), 1u);
  // An OK carrying another key, or more than max_size, is an error, never an item.
  rig.p->on_response(s.op_id, 0, PD3_OK, reinterpret_cast<const uint8_t*>("kez"), 3, k, 3, 1);
  CHECK_EQ(rig.stats().errors, 1u);
  CHECK_EQ(rig.p->inflight(), 0u);
  rig.p->on_response(s.op_id, 0, PD3_OK, k, 3, k, 3, 1);  // answered already
  CHECK_EQ(rig.stats().stale_responses, 7u);
  CHECK(rig.take("key") == "");
}

// ---- Table 1 and Table 2, one row at a time ------------------------------------------------------

TEST(prefetcher_read_miss_prefetches_produces_and_enters_host_view) {
  Rig rig;
  REQUIRE(rig.ok());
  const uint64_t captured = rig.clock;
  rig.read("user:1");
  CHECK(rig.port.sent.empty());  // the Host View lookup comes first
  REQUIRE(rig.settle());
  REQUIRE(rig.port.sent.size() == 1);
  const FakePort::Sent s = rig.port.sent[0];
  CHECK_EQ(s.server, 0);
  CHECK_EQ(pd3_op_of(s.op_id), PD3_OP_PREFETCH);
  CHECK(s.key == "user:1");
  CHECK_EQ(s.max_size, 4096u);
  CHECK_EQ(rig.p->inflight(), 1u);
  rig.answer(s, PD3_OK, "alice");
  const uint64_t lead = rig.clock - captured;  // capture → produce, on the clock the rig hands in
  CHECK_EQ(rig.p->inflight(), 0u);
  CHECK(rig.take("user:1") == "alice");
  CHECK(rig.take("user:1") == "");  // taken once
  REQUIRE(rig.settle());
  const PrefetcherStats st = rig.stats();
  CHECK_EQ(st.reads, 1u);
  CHECK_EQ(st.lookups, 1u);
  CHECK_EQ(st.prefetches, 1u);
  CHECK_EQ(st.requests, 1u);
  CHECK_EQ(st.produced, 1u);
  CHECK_EQ(st.lead_count, 1u);
  CHECK_EQ(st.lead_sum_ns, lead);
  CHECK_EQ(st.lead_max_ns, lead);
  CHECK_EQ(rig.p->lead_histogram().total, 1u);
  CHECK_EQ(rig.p->lead_histogram().counts[pd3::LatencyHistogram::bucket_of(lead)], 1u);
  const uint64_t p50 = rig.p->lead_histogram().quantile(0.5);
  CHECK(p50 * 100 >= lead * 96 && p50 * 100 <= lead * 104);  // the bucket's midpoint
  // Table 2: the response's key is in Host View now: the next READ is a hit, not a prefetch.
  rig.read("user:1");
  REQUIRE(rig.settle());
  CHECK_EQ(rig.port.sent.size(), 1u);
  CHECK_EQ(rig.stats().host_view_hits, 1u);
  CHECK_EQ(rig.stats().inflight, 0u);
}

TEST(prefetcher_host_view_hits_suppress_prefetches) {
  Rig rig;
  REQUIRE(rig.ok());
  rig.host_read("a");  // Table 2: a host READ response held a
  rig.write("b");      // Table 1: the host holds what a client wrote
  REQUIRE(rig.settle());
  rig.read("a");
  rig.read("b");
  rig.read("c");
  REQUIRE(rig.settle());
  REQUIRE(rig.port.sent.size() == 1);
  CHECK(rig.port.sent[0].key == "c");
  CHECK_EQ(rig.stats().host_view_hits, 2u);
  CHECK_EQ(rig.stats().host_reads, 1u);
  CHECK_EQ(rig.stats().writes, 1u);
  // A flush evicts b from Host View (Table 2): it is prefetched again.
  rig.flush("b");
  rig.read("b");
  REQUIRE(rig.settle());
  REQUIRE(rig.port.sent.size() == 2);
  CHECK(rig.port.sent[1].key == "b");
}

TEST(prefetcher_deduplicates_reads_of_a_key_in_flight) {
  Rig rig;
  REQUIRE(rig.ok());
  rig.read("k");
  rig.read("k");  // lookup pending
  REQUIRE(rig.settle());
  rig.read("k");  // in flight
  REQUIRE(rig.settle());
  REQUIRE(rig.port.sent.size() == 1);
  CHECK_EQ(rig.stats().deduplicated, 2u);
  rig.answer(rig.port.sent[0], PD3_E_NOT_FOUND);
  rig.read("k");  // answered: a new prefetch
  REQUIRE(rig.settle());
  CHECK_EQ(rig.port.sent.size(), 2u);
}

TEST(prefetcher_write_or_delete_cancels_a_pending_lookup) {
  for (const uint32_t op : {PD3_ACCESS_WRITE, PD3_ACCESS_DELETE}) {
    Rig rig;
    REQUIRE(rig.ok());
    rig.read("k");
    rig.access(op, "k");  // before its lookup came back
    REQUIRE(rig.settle());
    CHECK(rig.port.sent.empty());
    CHECK_EQ(rig.stats().cancelled, 1u);
    CHECK_EQ(rig.p->inflight(), 0u);
  }
}

TEST(prefetcher_write_delete_or_flush_drops_the_answer_in_flight) {
  for (int event = 0; event < 3; ++event) {
    Rig rig;
    REQUIRE(rig.ok());
    rig.read("k");
    REQUIRE(rig.settle());
    REQUIRE(rig.port.sent.size() == 1);
    if (event == 0) rig.write("k");
    if (event == 1) rig.del("k");
    if (event == 2) rig.flush("k");
    CHECK_EQ(rig.stats().cancelled, 1u);
    CHECK_EQ(rig.p->inflight(), 1u);  // the id stays taken until the answer
    rig.answer(rig.port.sent[0], PD3_OK, "old");
    CHECK(rig.take("k") == "");  // the value from before the event never reaches the zone
    CHECK_EQ(rig.stats().produced, 0u);
    CHECK_EQ(rig.p->inflight(), 0u);
    CHECK_EQ(rig.agent->zone().pending() + rig.stats().produced, 0u);  // nothing was produced at all
  }
}

TEST(prefetcher_cancel_all_drops_every_answer_still_to_come) {
  Rig rig;
  REQUIRE(rig.ok());
  rig.read("a");
  rig.read("b");
  REQUIRE(rig.settle());
  REQUIRE(rig.port.sent.size() == 2);
  rig.p->cancel_all();  // a client write of some unknown key may have been missed
  CHECK_EQ(rig.stats().cancelled, 2u);
  rig.answer(rig.port.sent[0], PD3_OK, "old-a");
  rig.answer(rig.port.sent[1], PD3_OK, "old-b");
  CHECK(rig.take("a") == "");
  CHECK(rig.take("b") == "");
  CHECK_EQ(rig.stats().produced, 0u);
  CHECK_EQ(rig.p->inflight(), 0u);
  rig.read("a");  // a new READ starts a new prefetch, whose answer is trusted
  REQUIRE(rig.settle());
  REQUIRE(rig.port.sent.size() == 3);
  rig.answer(rig.port.sent[2], PD3_OK, "new-a");
  CHECK(rig.take("a") == "new-a");
}

TEST(prefetcher_write_withdraws_produced_items) {
  Rig rig;
  REQUIRE(rig.ok());
  rig.read("k");
  REQUIRE(rig.settle());
  rig.answer(rig.port.sent[0], PD3_OK, "v1");
  rig.write("k");
  CHECK(rig.take("k") == "");
  rig.flush("k");
  rig.read("k");
  REQUIRE(rig.settle());
  REQUIRE(rig.port.sent.size() == 2);
  rig.answer(rig.port.sent[1], PD3_OK, "v2");
  rig.del("k");
  CHECK(rig.take("k") == "");
}

TEST(prefetcher_flush_keeps_an_unsent_prefetch_which_goes_after_it) {
  Rig rig;
  REQUIRE(rig.ok());
  rig.read("k");
  rig.flush("k");  // lookup pending: not sent yet, so it will reach the server behind the flush
  REQUIRE(rig.settle());
  REQUIRE(rig.port.sent.size() == 1);
  CHECK_EQ(rig.stats().cancelled, 0u);
  rig.answer(rig.port.sent[0], PD3_OK, "flushed");
  CHECK(rig.take("k") == "flushed");
}

TEST(prefetcher_delete_suppresses_prefetches_until_flushed) {
  for (const bool with_hv : {true, false}) {
    RigOptions o;
    o.host_view = with_hv;
    Rig rig(o);
    REQUIRE(rig.ok());
    rig.del("k");  // the server still holds the deleted value
    rig.read("k");
    REQUIRE(rig.settle());
    CHECK(rig.port.sent.empty());
    CHECK_EQ(rig.stats().skipped_unflushed, 1u);
    CHECK_EQ(rig.stats().unflushed_keys, 1u);
    rig.flush("k");
    rig.read("k");
    REQUIRE(rig.settle());
    REQUIRE(rig.port.sent.size() == 1);
    rig.answer(rig.port.sent[0], PD3_E_NOT_FOUND);
    CHECK_EQ(rig.stats().not_found, 1u);
    CHECK_EQ(rig.stats().unflushed_keys, 0u);
    CHECK(rig.take("k") == "");
  }
}

TEST(prefetcher_client_writes_that_do_not_fit_host_view_are_not_prefetched) {
  RigOptions o;
  o.shards = 1;
  o.host_view_keys = 8;  // a few dozen slots, stash included
  Rig rig(o);
  REQUIRE(rig.ok());
  for (uint64_t i = 0; i < 100; ++i) rig.write(numbered("fill", i));
  REQUIRE(rig.settle());
  const uint64_t full = rig.stats().host_view_full;
  CHECK(full > 0);
  CHECK_EQ(rig.stats().unflushed_keys, full);  // remembered as unflushed instead
  // The READ comes before the failed insert is seen: caught when its lookup comes back.
  rig.write("probe");
  rig.read("probe");
  REQUIRE(rig.settle());
  CHECK(rig.port.sent.empty());
  CHECK_EQ(rig.stats().host_view_full, full + 1);
  CHECK_EQ(rig.stats().skipped_unflushed, 1u);
  // Flushed: prefetched again.
  rig.flush("probe");
  rig.read("probe");
  REQUIRE(rig.settle());
  CHECK_EQ(rig.port.sent.size(), 1u);
}

TEST(prefetcher_host_view_backlog_drops_updates_without_losing_writes) {
  RigOptions o;
  o.shards = 1;
  o.host_view_queue = 2;
  o.prefetcher.lookup_batch = 1;
  o.prefetcher.host_view_backlog = 1;
  Rig rig(o);
  REQUIRE(rig.ok());
  // No pump: the shard stops once its completion queue is full (a handful of batches), and the
  // rest of the inserts have nowhere to wait.
  for (uint64_t i = 0; i < 50; ++i) rig.write(numbered("w", i));
  const uint64_t dropped = rig.stats().host_view_dropped;
  CHECK(dropped >= 40);
  // Every written key is remembered, in Host View or (dropped) as unflushed: none is prefetched.
  for (uint64_t i = 0; i < 50; ++i) rig.read(numbered("w", i));
  REQUIRE(rig.settle());
  CHECK(rig.port.sent.empty());
  CHECK_EQ(rig.stats().skipped_unflushed, dropped);
  CHECK_EQ(rig.stats().host_view_hits, 50 - dropped);
}

TEST(prefetcher_without_host_view_every_clean_read_is_a_miss) {
  RigOptions o;
  o.host_view = false;
  Rig rig(o);
  REQUIRE(rig.ok());
  rig.read("a");
  rig.p->pump(rig.clock);  // no lookup: sent at the first pump
  REQUIRE(rig.port.sent.size() == 1);
  rig.answer(rig.port.sent[0], PD3_OK, "va");
  CHECK(rig.take("a") == "va");
  rig.read("a");  // no Host View to remember the response: prefetched again
  rig.p->pump(rig.clock);
  CHECK_EQ(rig.port.sent.size(), 2u);
  // A client write makes the remote copy stale: no prefetch until the host flushes it.
  rig.write("b");
  rig.read("b");
  rig.p->pump(rig.clock);
  CHECK_EQ(rig.port.sent.size(), 2u);
  CHECK_EQ(rig.stats().skipped_unflushed, 1u);
  rig.flush("b");
  rig.read("b");
  rig.p->pump(rig.clock);
  CHECK_EQ(rig.port.sent.size(), 3u);
  CHECK_EQ(rig.stats().lookups, 0u);
  CHECK_EQ(rig.stats().host_view_hits, 0u);
}

TEST(prefetcher_not_found_dest_small_errors_and_empty_items) {
  Rig rig;
  REQUIRE(rig.ok());
  for (const char* k : {"nf", "big", "err", "empty"}) rig.read(k);
  REQUIRE(rig.settle());
  REQUIRE(rig.port.sent.size() == 4);
  std::map<std::string, FakePort::Sent> by_key;
  for (const auto& s : rig.port.sent) by_key.emplace(s.key, s);
  rig.answer(by_key.at("nf"), PD3_E_NOT_FOUND);
  rig.answer(by_key.at("big"), PD3_E_DEST_SMALL, "", 100000);  // the item's size, no data
  rig.answer(by_key.at("err"), PD3_E_PROTOCOL);
  rig.answer(by_key.at("empty"), PD3_OK);  // an empty value cannot be told from a miss
  const PrefetcherStats st = rig.stats();
  CHECK_EQ(st.not_found, 1u);
  CHECK_EQ(st.dest_small, 1u);
  CHECK_EQ(st.errors, 1u);
  CHECK_EQ(st.empty, 1u);
  CHECK_EQ(st.produced, 0u);
  CHECK_EQ(rig.p->inflight(), 0u);
  CHECK_EQ(rig.agent->zone().pending() + rig.stats().produced, 0u);
}

// ---- routing ------------------------------------------------------------------------------------

TEST(prefetcher_broadcast_takes_the_only_holder) {
  Rig rig;
  REQUIRE(rig.ok());
  rig.port.up = 0b11;
  rig.read("k");
  REQUIRE(rig.settle());
  REQUIRE(rig.port.sent.size() == 2);
  CHECK_EQ(rig.port.sent[0].server, 0);
  CHECK_EQ(rig.port.sent[1].server, 1);
  CHECK_EQ(rig.port.sent[0].op_id, rig.port.sent[1].op_id);  // one entry, one id
  CHECK_EQ(rig.stats().broadcasts, 1u);
  CHECK_EQ(rig.stats().prefetches, 1u);
  CHECK_EQ(rig.stats().requests, 2u);
  rig.answer(rig.port.sent[1], PD3_OK, "value");
  CHECK(rig.take("k") == "");  // kept until server 0 answered too
  CHECK_EQ(rig.p->inflight(), 1u);
  rig.answer(rig.port.sent[0], PD3_E_NOT_FOUND);
  CHECK(rig.take("k") == "value");
  CHECK_EQ(rig.p->inflight(), 0u);

  // Every server says not found: not found.
  rig.read("none");
  REQUIRE(rig.settle());
  REQUIRE(rig.port.sent.size() == 4);
  rig.answer(rig.port.sent[2], PD3_E_NOT_FOUND);
  rig.answer(rig.port.sent[3], PD3_E_NOT_FOUND);
  CHECK_EQ(rig.stats().not_found, 1u);

  // Two holders (one copy is older, nothing says which): nothing enters the zone.
  for (const int second : {PD3_OK, PD3_E_DEST_SMALL}) {
    const std::string key = second == PD3_OK ? "dup" : "dup-big";
    rig.read(key);
    REQUIRE(rig.settle());
    const size_t n = rig.port.sent.size();
    REQUIRE(n >= 2);
    rig.answer(rig.port.sent[n - 2], PD3_OK, "one");
    if (second == PD3_OK) {
      rig.answer(rig.port.sent[n - 1], PD3_OK, "two");
    } else {
      rig.answer(rig.port.sent[n - 1], PD3_E_DEST_SMALL, "", 9000);  // holds a larger copy
    }
    CHECK(rig.take(key) == "");
  }
  CHECK_EQ(rig.stats().conflicts, 2u);
  CHECK_EQ(rig.p->inflight(), 0u);
}

TEST(prefetcher_broadcast_answers_beyond_the_hold_budget_are_dropped) {
  RigOptions o;
  o.prefetcher.broadcast_hold_bytes = 10;
  Rig rig(o);
  REQUIRE(rig.ok());
  rig.port.up = 0b11;
  rig.read("k");
  REQUIRE(rig.settle());
  REQUIRE(rig.port.sent.size() == 2);
  rig.answer(rig.port.sent[0], PD3_OK, "more than ten bytes");
  rig.answer(rig.port.sent[1], PD3_E_NOT_FOUND);
  CHECK(rig.take("k") == "");
  CHECK_EQ(rig.stats().errors, 1u);
}

TEST(prefetcher_routes_by_the_directory_learnt_from_flushes) {
  Rig rig;
  REQUIRE(rig.ok());
  rig.port.up = 0b111;
  rig.flush("on1", 1);
  rig.flush("on2", 2);
  CHECK_EQ(rig.stats().host_flushes, 2u);
  REQUIRE(rig.settle());
  CHECK_EQ(rig.stats().directory_keys, 2u);
  rig.read("on1");
  rig.read("on2");
  REQUIRE(rig.settle());
  REQUIRE(rig.port.sent.size() == 2);
  std::map<std::string, int> server;
  for (const auto& s : rig.port.sent) server[s.key] = s.server;
  CHECK_EQ(server["on1"], 1);
  CHECK_EQ(server["on2"], 2);
  CHECK_EQ(rig.stats().broadcasts, 0u);
  for (const auto& s : rig.port.sent) rig.answer(s, PD3_OK, s.key + "-value");
  CHECK(rig.take("on2") == "on2-value");
  // The key moves: the latest flush wins.
  rig.flush("on1", 0);
  rig.read("on1");
  REQUIRE(rig.settle());
  REQUIRE(rig.port.sent.size() == 3);
  CHECK_EQ(rig.port.sent[2].server, 0);
  rig.answer(rig.port.sent[2], PD3_E_NOT_FOUND);
  // Its server down: nowhere else holds the key.
  rig.port.up = 0b011;
  rig.flush("on2", 2);
  rig.read("on2");
  REQUIRE(rig.settle());
  CHECK_EQ(rig.port.sent.size(), 3u);
  CHECK_EQ(rig.stats().unavailable, 1u);
  // One server up and an unknown key: that server, no broadcast.
  rig.port.up = 0b100;
  rig.read("fresh");
  REQUIRE(rig.settle());
  REQUIRE(rig.port.sent.size() == 4);
  CHECK_EQ(rig.port.sent[3].server, 2);
  CHECK_EQ(rig.stats().broadcasts, 0u);
  // No server up.
  rig.port.up = 0;
  rig.read("nowhere");
  REQUIRE(rig.settle());
  CHECK_EQ(rig.stats().unavailable, 2u);
}

// ---- ids, bounds and failures -----------------------------------------------------------------

TEST(prefetcher_max_inflight_skips_and_server_loss_frees_ids) {
  RigOptions o;
  o.prefetcher.max_inflight = 4;
  Rig rig(o);
  REQUIRE(rig.ok());
  for (int i = 0; i < 6; ++i) rig.read(numbered("k", uint64_t(i)));
  CHECK_EQ(rig.stats().skipped, 2u);
  REQUIRE(rig.settle());
  REQUIRE(rig.port.sent.size() == 4);
  std::set<uint32_t> ids;
  for (const auto& s : rig.port.sent) ids.insert(pd3_id_of(s.op_id));
  CHECK_EQ(ids.size(), 4u);
  CHECK(*ids.rbegin() < 4u);
  rig.read("k9");
  CHECK_EQ(rig.stats().skipped, 3u);
  rig.p->on_server_lost(0);
  CHECK_EQ(rig.p->inflight(), 0u);
  CHECK_EQ(rig.stats().unavailable, 4u);
  rig.answer(rig.port.sent[0], PD3_OK, "late");  // a lost connection's answer: stale
  CHECK_EQ(rig.stats().stale_responses, 1u);
  CHECK(rig.take("k0") == "");
  for (int i = 0; i < 4; ++i) rig.read(numbered("n", uint64_t(i)));
  REQUIRE(rig.settle());
  CHECK_EQ(rig.port.sent.size(), 8u);
  CHECK_EQ(rig.stats().skipped, 3u);
  rig.p->on_server_lost(-1);  // ignored
  rig.p->on_server_lost(99);
  CHECK_EQ(rig.p->inflight(), 4u);
}

TEST(prefetcher_server_lost_mid_broadcast_produces_nothing) {
  Rig rig;
  REQUIRE(rig.ok());
  rig.port.up = 0b11;
  rig.read("k");
  REQUIRE(rig.settle());
  REQUIRE(rig.port.sent.size() == 2);
  rig.answer(rig.port.sent[0], PD3_OK, "maybe-old");
  rig.p->on_server_lost(1);  // it may have held a newer copy
  CHECK(rig.take("k") == "");
  CHECK_EQ(rig.stats().unavailable, 1u);
  CHECK_EQ(rig.p->inflight(), 0u);
}

TEST(prefetcher_port_back_pressure_and_unavailable) {
  RigOptions o;
  o.host_view = false;
  Rig rig(o);
  REQUIRE(rig.ok());
  rig.port.result[0] = PD3_E_AGAIN;
  rig.read("a");
  rig.read("b");
  rig.p->pump(rig.clock);
  rig.p->pump(rig.clock);
  CHECK(rig.port.sent.empty());
  CHECK_EQ(rig.p->inflight(), 2u);  // waiting, in order, not dropped
  rig.port.result[0] = PD3_OK;
  rig.p->pump(rig.clock);
  REQUIRE(rig.port.sent.size() == 2);
  CHECK(rig.port.sent[0].key == "a");
  CHECK(rig.port.sent[1].key == "b");
  rig.port.result[0] = PD3_E_UNAVAILABLE;
  rig.read("c");
  rig.p->pump(rig.clock);
  CHECK_EQ(rig.stats().unavailable, 1u);
  CHECK_EQ(rig.p->inflight(), 2u);
  // A write while the port pushes back cancels the waiting prefetch before it is sent.
  rig.port.result[0] = PD3_E_AGAIN;
  rig.read("d");
  rig.p->pump(rig.clock);
  rig.write("d");
  rig.port.result[0] = PD3_OK;
  rig.p->pump(rig.clock);
  CHECK_EQ(rig.port.sent.size(), 2u);
  CHECK_EQ(rig.stats().cancelled, 1u);
  // A broadcast half sent when the port pushes back goes on at the next pump.
  rig.port.up = 0b11;
  rig.port.result[1] = PD3_E_AGAIN;
  rig.read("e");
  rig.p->pump(rig.clock);
  REQUIRE(rig.port.sent.size() == 3);
  rig.flush("e", 0);  // sent to server 0 already: cancelled
  rig.port.result[1] = PD3_OK;
  rig.p->pump(rig.clock);
  CHECK_EQ(rig.port.sent.size(), 3u);  // nothing more goes to server 1
  rig.answer(rig.port.sent[2], PD3_OK, "old");
  CHECK(rig.take("e") == "");
  CHECK_EQ(rig.p->inflight(), 2u);
}

TEST(prefetcher_churn_while_the_port_pushes_back_stays_bounded_and_ordered) {
  RigOptions o;
  o.host_view = false;
  o.prefetcher.max_inflight = 4;
  Rig rig(o);
  REQUIRE(rig.ok());
  rig.port.result[0] = PD3_E_AGAIN;
  rig.read("first");
  rig.p->pump(rig.clock);
  // Each round leaves a cancelled entry's reference in the send queue; they are swept, not kept.
  for (int i = 0; i < 5000; ++i) {
    rig.read("churn");
    rig.write("churn");
    rig.flush("churn");
    if (i % 100 == 0) rig.p->pump(rig.clock);
  }
  rig.read("churn");
  CHECK_EQ(rig.p->inflight(), 2u);
  CHECK_EQ(rig.stats().cancelled, 5000u);
  rig.port.result[0] = PD3_OK;
  rig.p->pump(rig.clock);
  REQUIRE(rig.port.sent.size() == 2);
  CHECK(rig.port.sent[0].key == "first");
  CHECK(rig.port.sent[1].key == "churn");
}

// ---- the model test -------------------------------------------------------------------------------

// A random world of clients, one host and memory servers, with the rule of docs/architecture.md §8
// checked at every consumer take: the value is the newest a client wrote or the host flushed.
void model_run(bool with_hv, uint32_t servers, uint32_t max_inflight, uint64_t seed, uint32_t steps) {
  RigOptions o;
  o.host_view = with_hv;
  o.prefetcher.max_inflight = max_inflight;
  o.prefetcher.lookup_batch = 4;
  o.prefetcher.directory_keys = 4;  // keys collide in the directory: some become unknown, broadcast
  Rig rig(o);
  REQUIRE(rig.ok());
  rig.port.up = (1u << servers) - 1;
  constexpr uint32_t kKeys = 6;
  // A version of a key: what a client last wrote (the host holds it) or what a server holds.
  struct Version {
    uint64_t n = 0;
    bool deleted = false;
  };
  Version latest[kKeys];  // the newest client write or delete of each key
  Version remote[kKeys];  // what the key's home server holds (its last flush)
  auto key = [](uint32_t k) { return numbered("key-", k); };
  auto home = [&](uint32_t k) { return int(k % servers); };
  auto value = [&](uint32_t k, uint64_t n) { return key(k) + "@" + std::to_string(n); };
  uint64_t next_version = 1;
  // An answer decided when the request was sent (the server executes requests in order, so a
  // flush the engine queued before the prefetch is seen by it), delivered later in any order.
  struct Pending {
    FakePort::Sent sent;
    int status;
    std::string value;
  };
  std::vector<Pending> pending;
  rig.port.on_send = [&](const FakePort::Sent& s) {
    uint32_t k = 0;
    while (key(k) != s.key) ++k;
    if (s.server != home(k) || remote[k].deleted) {
      pending.push_back({s, PD3_E_NOT_FOUND, ""});
    } else {
      pending.push_back({s, PD3_OK, value(k, remote[k].n)});
    }
  };
  pd3test::Rng rng(seed);
  pd3test::Errors errors{"model"};
  uint64_t hits = 0;
  auto take_and_check = [&](uint32_t k) {
    const std::string got = rig.take(key(k));
    if (got.empty()) return;
    ++hits;
    if (latest[k].deleted || got != value(k, latest[k].n))
      errors.fail("took %s, newest is %s", got.c_str(),
                  latest[k].deleted ? "a delete" : value(k, latest[k].n).c_str());
  };
  for (uint32_t step = 0; step < steps; ++step) {
    const uint32_t k = rng.below(kKeys);
    const uint32_t dice = rng.below(100);
    if (dice < 28) {
      rig.read(key(k));
    } else if (dice < 38) {
      latest[k] = {next_version++, false};
      rig.write(key(k));
    } else if (dice < 42) {
      latest[k] = {next_version++, true};
      rig.del(key(k));
    } else if (dice < 52) {
      remote[k] = latest[k];  // the host writes back what it holds
      rig.flush(key(k), home(k));
    } else if (dice < 53) {
      if (!remote[k].deleted) rig.host_read(key(k));
    } else if (dice < 54) {
      // A write no client access announced (the host's own update, or an access the capture
      // queue lost), seen only as its flush: the flush alone must stop older answers.
      latest[k] = {next_version++, false};
      remote[k] = latest[k];
      rig.flush(key(k), home(k));
    } else if (dice < 64) {
      rig.clock += 100;
      rig.p->pump(rig.clock);
    } else if (dice < 70) {
      // Also wait for Host View now and then: the shard threads may be descheduled for the whole
      // run on a busy machine, and the run must still make progress.
      REQUIRE(rig.settle());
    } else if (dice < 88) {
      if (!pending.empty()) {
        const size_t i = rng.below(uint32_t(std::min<size_t>(pending.size(), 4)));  // reordered
        const Pending a = pending[i];
        pending.erase(pending.begin() + long(i));
        rig.answer(a.sent, a.status, a.value);
      }
    } else if (dice < 89 && servers > 1) {
      const int lost = int(rng.below(servers));
      std::erase_if(pending, [&](const Pending& a) { return a.sent.server == lost; });
      rig.p->on_server_lost(lost);
    } else {
      take_and_check(k);
    }
  }
  // Drain: every lookup and answer (answers may free ids for prefetches still waiting), then every key.
  for (;;) {
    REQUIRE(rig.settle());
    if (pending.empty()) break;
    while (!pending.empty()) {
      const Pending a = pending.back();
      pending.pop_back();
      rig.answer(a.sent, a.status, a.value);
    }
  }
  for (uint32_t k = 0; k < kKeys; ++k) take_and_check(k);
  CHECK_EQ(errors.n, 0u);
  CHECK_EQ(rig.p->inflight(), 0u);
  const PrefetcherStats st = rig.stats();
  CHECK(st.produced > 0);
  CHECK(st.cancelled > 0);
  CHECK(hits > 0);
  if (with_hv) CHECK(st.host_view_hits > 0);
  if (servers > 1) CHECK(st.broadcasts > 0);
  std::printf("    model hv=%d servers=%u inflight=%u: %llu produced, %llu taken, %llu cancelled, %llu dedup, %llu hv hits, "
              "%llu skipped, %llu unflushed skips, %llu broadcasts\n",
              with_hv, servers, max_inflight, (unsigned long long)st.produced, (unsigned long long)hits,
              (unsigned long long)st.cancelled, (unsigned long long)st.deduplicated,
              (unsigned long long)st.host_view_hits, (unsigned long long)st.skipped,
              (unsigned long long)st.skipped_unflushed, (unsigned long long)st.broadcasts);
}

TEST(prefetcher_model_never_serves_an_older_value) {
  const uint32_t steps = std::max<uint32_t>(4000, 40000 / pd3test::stress_scale());
  model_run(true, 1, 4096, 11, steps);
  model_run(true, 2, 4096, 12, steps);
  model_run(false, 1, 4096, 13, steps);
  model_run(false, 2, 4096, 14, steps);
  model_run(true, 2, 3, 15, steps);  // ids scarce: skips and reuse
}

// ---- stress --------------------------------------------------------------------------------------

// The engine thread's loop (this thread) against live Host View shard threads, while another
// thread takes items from the zone: every item taken must be whole and belong to its key.
TEST(prefetcher_stress_with_host_view_threads_and_a_consumer) {
  RigOptions o;
  o.shards = 2;
  o.prefetcher.lookup_batch = 32;
  o.prefetcher.max_inflight = 512;
  Rig rig(o);
  REQUIRE(rig.ok());
  rig.port.up = 0b11;
  constexpr uint32_t kKeys = 2000;
  auto key = [](uint32_t k) { return numbered("stress:", k); };
  auto value = [&](uint32_t k, uint32_t len) {
    std::string v = key(k) + "#";
    while (v.size() < len) v += char('a' + (v.size() + k) % 26);
    return v;
  };
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> taken{0}, torn{0};
  std::thread consumer([&] {
    pd3test::Rng rng(99);
    // relaxed: a stop flag; the join below orders the counters.
    while (!stop.load(std::memory_order_relaxed)) {
      const uint32_t k = rng.below(kKeys);
      const std::string got = rig.take(key(k));
      if (got.empty()) continue;
      taken.fetch_add(1, std::memory_order_relaxed);  // relaxed: read after join
      if (got != value(k, uint32_t(got.size()))) torn.fetch_add(1, std::memory_order_relaxed);
    }
  });
  pd3test::Rng rng(5);
  std::vector<FakePort::Sent> pending;
  const auto t0 = std::chrono::steady_clock::now();
  const double budget_ms = 600.0 / std::max<uint32_t>(1, pd3test::stress_scale() / 5);
  uint64_t rounds = 0;
  while (pd3test::ms_since(t0) < budget_ms) {
    ++rounds;
    for (int i = 0; i < 64; ++i) {
      const uint32_t k = rng.below(kKeys);
      const uint32_t dice = rng.below(100);
      if (dice < 70) rig.read(key(k));
      else if (dice < 85) rig.write(key(k));
      else if (dice < 88) rig.del(key(k));
      else rig.flush(key(k), int(k % 2));
    }
    rig.clock += 1000;
    rig.p->pump(rig.clock);
    for (auto& s : rig.port.sent) pending.push_back(s);
    rig.port.sent.clear();
    // Answer most of what is pending, in a shuffled order.
    for (size_t n = pending.size() * 3 / 4; n > 0; --n) {
      const size_t i = rng.below(uint32_t(pending.size()));
      const FakePort::Sent s = pending[i];
      pending[i] = pending.back();
      pending.pop_back();
      uint32_t k = uint32_t(std::stoul(s.key.substr(7)));
      if (s.server != int(k % 2)) rig.answer(s, PD3_E_NOT_FOUND);
      else rig.answer(s, PD3_OK, value(k, 8 + k % 200));
    }
    // Let the shard threads catch up now and then: on a loaded machine they may get no CPU for a
    // while, every Host View update is then dropped (correct, and counted) and the run would
    // never exercise a Host View hit.
    if (rounds % 16 == 0) REQUIRE(rig.settle());
    if (rounds % 50 == 0) rig.p->on_server_lost(int(rounds / 50 % 2));
    if (rounds % 50 == 0) std::erase_if(pending, [&](const FakePort::Sent& s) { return s.server == int(rounds / 50 % 2); });
  }
  // Drain: answer everything; lookups that come back meanwhile send more, answered in turn.
  for (;;) {
    for (const auto& s : pending) rig.answer(s, PD3_E_NOT_FOUND);
    pending.clear();
    REQUIRE(rig.settle());
    pending.swap(rig.port.sent);
    if (pending.empty()) break;
  }
  stop.store(true, std::memory_order_relaxed);
  consumer.join();
  const PrefetcherStats st = rig.stats();
  CHECK_EQ(torn.load(), 0u);
  CHECK_EQ(rig.p->inflight(), 0u);
  CHECK(st.produced > 0);
  CHECK(st.lookups > 0);
  CHECK(st.host_view_hits > 0);
  // Every READ was deduplicated, skipped or looked up; unflushed skips are counted at the READ or
  // when its lookup comes back (a client write that did not fit Host View).
  CHECK(st.reads >= st.deduplicated + st.skipped + st.lookups);
  CHECK(st.reads <= st.deduplicated + st.skipped + st.lookups + st.skipped_unflushed);
  std::printf("    stress: %llu rounds, %llu reads, %llu lookups, %llu hv hits, %llu prefetches, %llu produced, %llu taken, "
              "%llu Host View updates dropped (shards behind)\n",
              (unsigned long long)rounds, (unsigned long long)st.reads, (unsigned long long)st.lookups,
              (unsigned long long)st.host_view_hits, (unsigned long long)st.prefetches,
              (unsigned long long)st.produced, (unsigned long long)taken.load(), (unsigned long long)st.host_view_dropped);
}

}  // namespace
