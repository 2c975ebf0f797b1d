// lz_test.cpp — Loading Zone semantics: produce, checkAndReturn, misses, invalidate, clean and reclamation.
#include <algorithm>
#include <cstring>
#include <iterator>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/lz_view.hpp"
#include "dpu/agent_session.hpp"
#include "harness.hpp"
#include "host/lz_consumer.hpp"
#include "pd3/host.h"
#include "util.hpp"

namespace {

// A host segment plus an in-process agent producing into its Loading Zone (through its own mapping).
struct Zone {
  pd3test::ScopedHost host;
  std::unique_ptr<pd3::AgentSession> agent;
  // `dma`: the agent's HostDma backend (the default: shared memory, nothing counted).
  Zone(uint64_t data_bytes, uint32_t items, const pd3::DmaSetup& dma = {})
      : host("lz", pd3_segment_sizes{4096, 4096, data_bytes, items, 0}) {
    if (host.rc == PD3_OK && pd3::AgentSession::attach(host.name.c_str(), &agent, dma) != PD3_OK) agent.reset();
  }
  bool ok() const { return host.rc == PD3_OK && agent != nullptr; }
  pd3::LzProducer& producer() { return agent->zone(); }
  const pd3_control* c() const { return pd3_host_control(host.h); }

  int64_t produce(const std::string& key, const std::vector<uint8_t>& value, uint32_t id = 0) {
    return producer().produce(pd3_op_id(PD3_OP_PREFETCH, id), key.data(), uint32_t(key.size()), value.data(),
                              uint32_t(value.size()));
  }
  // checkAndReturn through the C ABI; on a hit `out` holds the returned bytes.
  int64_t take(const std::string& key, std::vector<uint8_t>* out = nullptr, uint32_t cap = 1 << 17) {
    std::vector<uint8_t> buf(cap);
    const int64_t rc = pd3_host_check_and_return(host.h, key.data(), uint32_t(key.size()), buf.data(), cap);
    if (out) out->assign(buf.begin(), buf.begin() + (rc > 0 ? rc : 0));
    return rc;
  }
};

std::vector<uint8_t> value_of(uint64_t id, uint32_t gen, size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(id * 37 + gen * 101 + i * 13 + (i >> 8));
  return v;
}

std::string key_of(uint64_t i) { return "key:" + std::to_string(i); }

std::string bytes_key(uint64_t v) { return std::string(reinterpret_cast<const char*>(&v), 8); }

uint32_t hash_of(const std::string& k) { return pd3_lz_key_hash(k.data(), uint32_t(k.size())); }

// Two different 8-byte keys with the same 32-bit index hash (a birthday search); empty if none.
std::pair<std::string, std::string> same_hash_pair() {
  std::unordered_map<uint32_t, uint64_t> seen;
  seen.reserve(1 << 19);
  for (uint64_t i = 0; i < (1u << 22); ++i) {
    const std::string k = bytes_key(i * 0x9E3779B97F4A7C15ull);
    auto [it, fresh] = seen.emplace(hash_of(k), i);
    if (!fresh) return {bytes_key(it->second * 0x9E3779B97F4A7C15ull), k};
  }
  return {};
}

}  // namespace

TEST(lz_hit_returns_exact_bytes_once) {
  Zone z(1 << 16, 64);
  REQUIRE(z.ok());
  const auto v = value_of(1, 0, 1000);
  CHECK_EQ(z.produce("alpha", v), 1);  // seqs start at 1
  CHECK_EQ(z.c()->lz_produced, 1u);
  CHECK_EQ(z.c()->lz_tail_seq, 2u);
  std::vector<uint8_t> got;
  CHECK_EQ(z.take("alpha", &got), 1000);
  CHECK(got == v);
  CHECK_EQ(z.take("alpha", &got), 0);  // consumed once
  CHECK_EQ(z.take("alpha", &got), 0);
  CHECK_EQ(z.producer().pending(), 1u);  // CONSUMED until the agent cleans
  CHECK_EQ(z.producer().clean(), 1u);
  CHECK_EQ(z.producer().pending(), 0u);
  CHECK_EQ(z.c()->lz_consumed, 1u);
  CHECK_EQ(z.c()->lz_reclaimed_unconsumed, 0u);
  CHECK_EQ(z.c()->lz_head_seq, 2u);
  CHECK_EQ(z.c()->lz_data_head, z.c()->lz_data_tail);

  // The internal C++ entry point behaves the same over the host's own mapping.
  const auto w = value_of(2, 0, 13);
  CHECK_EQ(z.produce("beta", w), 2);
  pd3::LzView view(const_cast<pd3_control*>(z.c()));
  uint8_t buf[64];
  CHECK_EQ(pd3::lz_check_and_return(view, "beta", 4, buf, sizeof buf), 13);
  CHECK(std::memcmp(buf, w.data(), 13) == 0);
  CHECK_EQ(pd3::lz_check_and_return(view, "beta", 4, buf, sizeof buf), 0);
}

TEST(lz_misses_for_absent_prefix_and_similar_keys) {
  Zone z(1 << 16, 64);
  REQUIRE(z.ok());
  const auto v = value_of(3, 0, 77);
  REQUIRE(z.produce("session:abcdef", v) > 0);
  const char* misses[] = {"session:abcde", "session:abcdefg", "session:abcdeF", "Session:abcdef", "s", "other"};
  for (const char* k : misses) CHECK_EQ(z.take(k), 0);
  CHECK_EQ(z.take(std::string("session:abcdef\0", 15)), 0);  // same bytes plus a trailing NUL
  // A key in the same index bucket (same low hash bits) but different.
  const uint32_t bucket_mask = z.c()->lz_bucket_count - 1;
  const uint32_t h = hash_of("session:abcdef");
  std::string same_bucket;
  for (uint64_t i = 0;; ++i) {
    same_bucket = key_of(i);
    if ((hash_of(same_bucket) & bucket_mask) == (h & bucket_mask)) break;
  }
  CHECK_EQ(z.take(same_bucket), 0);
  // The misses left the item consumable.
  std::vector<uint8_t> got;
  CHECK_EQ(z.take("session:abcdef", &got), 77);
  CHECK(got == v);
  // Both items in one bucket are found, each with its own value.
  const auto sv = value_of(4, 0, 20);
  REQUIRE(z.produce(same_bucket, sv) > 0);
  REQUIRE(z.produce("session:abcdef", v) > 0);
  CHECK_EQ(z.take(same_bucket, &got), 20);
  CHECK(got == sv);
  CHECK_EQ(z.take("session:abcdef", &got), 77);
  CHECK(got == v);
}

TEST(lz_same_full_hash_different_key_misses) {
  const auto [a, b] = same_hash_pair();
  REQUIRE(!a.empty());
  REQUIRE(a != b);
  REQUIRE(hash_of(a) == hash_of(b));

  Zone z(1 << 16, 64);
  REQUIRE(z.ok());
  const auto va = value_of(10, 0, 40);
  const auto vb = value_of(11, 0, 48);
  REQUIRE(z.produce(a, va) > 0);
  CHECK_EQ(z.take(b), 0);  // the full key is compared, not just the hash
  REQUIRE(z.produce(b, vb) > 0);
  std::vector<uint8_t> got;
  CHECK_EQ(z.take(a, &got), 40);  // b is newer and first in the chain; a is still found
  CHECK(got == va);
  CHECK_EQ(z.take(a), 0);
  CHECK_EQ(z.take(b, &got), 48);
  CHECK(got == vb);
  CHECK_EQ(z.take(b), 0);
}

TEST(lz_dest_too_small_leaves_item_consumable) {
  Zone z(1 << 16, 64);
  REQUIRE(z.ok());
  const auto v = value_of(5, 0, 100);
  REQUIRE(z.produce("k", v) > 0);
  std::vector<uint8_t> buf(128, 0xEE);
  CHECK_EQ(pd3_host_check_and_return(z.host.h, "k", 1, buf.data(), 99), PD3_E_DEST_SMALL);
  CHECK_EQ(pd3_host_check_and_return(z.host.h, "k", 1, nullptr, 0), PD3_E_DEST_SMALL);
  CHECK_EQ(pd3_host_check_and_return(z.host.h, "k", 1, buf.data(), 1), PD3_E_DEST_SMALL);
  CHECK_EQ(z.producer().clean(), 0u);  // still PRODUCED
  CHECK_EQ(pd3_host_check_and_return(z.host.h, "k", 1, buf.data(), 100), 100);
  CHECK(std::equal(v.begin(), v.end(), buf.begin()));
  CHECK_EQ(buf[100], 0xEE);  // nothing written past the item
  CHECK_EQ(pd3_host_check_and_return(z.host.h, "k", 1, buf.data(), 100), 0);
  CHECK_EQ(z.producer().clean(), 1u);
  CHECK_EQ(z.c()->lz_consumed, 1u);
}

TEST(lz_invalidate_all_withdraws_every_produced_item) {
  Zone z(1 << 16, 64);
  REQUIRE(z.ok());
  for (uint64_t i = 0; i < 10; ++i) REQUIRE(z.produce(key_of(i), value_of(i, 0, 20)) > 0);
  std::vector<uint8_t> got;
  CHECK_EQ(z.take(key_of(3), &got), 20);  // consumed before: not withdrawn, not counted
  CHECK_EQ(z.producer().invalidate_all(), 9u);
  CHECK_EQ(z.c()->lz_invalidated, 9u);
  for (uint64_t i = 0; i < 10; ++i) CHECK_EQ(z.take(key_of(i)), 0);
  CHECK_EQ(z.producer().invalidate_all(), 0u);
  CHECK_EQ(z.producer().clean(), 10u);
  REQUIRE(z.produce(key_of(11), value_of(11, 0, 20)) > 0);  // the zone works on as before
  CHECK_EQ(z.take(key_of(11), &got), 20);
  CHECK(got == value_of(11, 0, 20));
}

TEST(lz_invalidate_withdraws_produced_items) {
  Zone z(1 << 16, 64);
  REQUIRE(z.ok());
  REQUIRE(z.produce("x", value_of(1, 0, 10)) > 0);
  REQUIRE(z.produce("y", value_of(2, 0, 10)) > 0);
  REQUIRE(z.produce("x", value_of(1, 1, 12)) > 0);  // a second copy of x
  REQUIRE(z.produce("xx", value_of(3, 0, 10)) > 0);
  CHECK_EQ(z.producer().invalidate("x", 1), 2u);
  CHECK_EQ(z.c()->lz_invalidated, 2u);
  CHECK_EQ(z.take("x"), 0);
  CHECK_EQ(z.producer().invalidate("x", 1), 0u);  // nothing left to withdraw
  CHECK_EQ(z.producer().invalidate("nope", 4), 0u);
  CHECK_EQ(z.producer().invalidate(nullptr, 4), 0u);
  CHECK_EQ(z.producer().invalidate("x", 0), 0u);
  CHECK_EQ(z.c()->lz_invalidated, 2u);
  std::vector<uint8_t> got;
  CHECK_EQ(z.take("xx", &got), 10);
  CHECK(got == value_of(3, 0, 10));
  // Consumed items are not withdrawn (and not counted).
  CHECK_EQ(z.producer().invalidate("xx", 2), 0u);
  // Invalid items are freed by clean without counting as consumed; y (PRODUCED) stops it at seq 2.
  CHECK_EQ(z.producer().clean(), 1u);
  CHECK_EQ(z.c()->lz_consumed, 0u);
  CHECK_EQ(z.take("y", &got), 10);
  CHECK_EQ(z.producer().clean(), 3u);
  CHECK_EQ(z.producer().pending(), 0u);
  CHECK_EQ(z.c()->lz_consumed, 2u);
  CHECK_EQ(z.c()->lz_invalidated, 2u);
  // A later copy of an invalidated key is consumable again.
  REQUIRE(z.produce("x", value_of(1, 2, 9)) > 0);
  CHECK_EQ(z.take("x", &got), 9);
  CHECK(got == value_of(1, 2, 9));
}

TEST(lz_invalidate_reads_back_no_key_this_agent_wrote) {
  // The latency backend at 0 µs counts DMA operations.
  Zone z(1 << 16, 64, pd3::DmaSetup{0});
  REQUIRE(z.ok());
  const auto [a, b] = same_hash_pair();
  REQUIRE(!a.empty());
  REQUIRE(z.produce("x", value_of(1, 0, 10)) > 0);
  REQUIRE(z.produce("y", value_of(2, 0, 10)) > 0);
  REQUIRE(z.produce("x", value_of(1, 1, 12)) > 0);
  REQUIRE(z.produce(a, value_of(3, 0, 16)) > 0);
  const pd3::DmaCounts before = z.agent->dma().counts();
  CHECK_EQ(z.producer().invalidate("x", 1), 2u);
  // b shares a's bucket and 32-bit hash: told apart by the fingerprint, without a read.
  CHECK_EQ(z.producer().invalidate(b.data(), uint32_t(b.size())), 0u);
  const pd3::DmaCounts after = z.agent->dma().counts();
  CHECK_EQ(after.reads, before.reads);
  CHECK_EQ(after.atomics, before.atomics + 2);  // one CAS per withdrawn copy of x
  CHECK_EQ(z.take("x"), 0);
  std::vector<uint8_t> got;
  CHECK_EQ(z.take(a, &got), 16);
  CHECK(got == value_of(3, 0, 16));
  CHECK_EQ(z.take("y", &got), 10);
}

TEST(lz_invalidate_tries_each_item_once) {
  Zone z(1 << 16, 64, pd3::DmaSetup{0});
  REQUIRE(z.ok());
  const auto atomics = [&] { return z.agent->dma().counts().atomics; };
  REQUIRE(z.produce("x", value_of(1, 0, 10)) > 0);
  REQUIRE(z.produce("y", value_of(2, 0, 10)) > 0);
  CHECK_EQ(z.take("y"), 10);  // consumed by the host: the agent does not know yet
  uint64_t before = atomics();
  CHECK_EQ(z.producer().invalidate("x", 1), 1u);
  CHECK_EQ(z.producer().invalidate("y", 1), 0u);  // its CAS finds the item taken
  CHECK_EQ(atomics(), before + 2);
  before = atomics();
  CHECK_EQ(z.producer().invalidate("x", 1), 0u);  // both settled: no second CAS
  CHECK_EQ(z.producer().invalidate("y", 1), 0u);
  CHECK_EQ(atomics(), before);
  // A new copy of each is tried again, once.
  REQUIRE(z.produce("x", value_of(1, 1, 10)) > 0);
  REQUIRE(z.produce("y", value_of(2, 1, 10)) > 0);
  before = atomics();
  CHECK_EQ(z.producer().invalidate("x", 1), 1u);
  CHECK_EQ(z.producer().invalidate("y", 1), 1u);
  CHECK_EQ(atomics(), before + 2);
  CHECK_EQ(z.take("x"), 0);
  CHECK_EQ(z.take("y"), 0);
  CHECK_EQ(z.c()->lz_invalidated, 3u);
}

TEST(lz_restarted_agent_invalidates_earlier_items_by_their_keys) {
  Zone z(1 << 16, 64, pd3::DmaSetup{0});
  REQUIRE(z.ok());
  const auto [a, b] = same_hash_pair();
  REQUIRE(!a.empty());
  REQUIRE(z.produce("x", value_of(1, 0, 10)) > 0);
  REQUIRE(z.produce(a, value_of(3, 0, 16)) > 0);
  z.agent.reset();  // the items stay in the host's memory; their fingerprints went with the agent
  REQUIRE(pd3::AgentSession::attach(z.host.name.c_str(), &z.agent, pd3::DmaSetup{0}) == PD3_OK);
  const pd3::DmaCounts before = z.agent->dma().counts();
  CHECK_EQ(z.producer().invalidate(b.data(), uint32_t(b.size())), 0u);  // a's key, read back, differs
  CHECK_EQ(z.producer().invalidate("x", 1), 1u);
  CHECK(z.agent->dma().counts().reads >= before.reads + 2);  // both candidates' keys were read
  CHECK_EQ(z.take("x"), 0);
  std::vector<uint8_t> got;
  CHECK_EQ(z.take(a, &got), 16);
  CHECK(got == value_of(3, 0, 16));
  // Once the earlier items are freed, an item the new agent produces is withdrawn by fingerprint.
  CHECK_EQ(z.producer().clean(), 2u);
  REQUIRE(z.produce("x", value_of(1, 1, 10)) > 0);
  const uint64_t reads = z.agent->dma().counts().reads;
  CHECK_EQ(z.producer().invalidate("x", 1), 1u);
  CHECK_EQ(z.agent->dma().counts().reads, reads);
}

TEST(lz_batch_publishes_its_items_together) {
  Zone z(1 << 16, 64, pd3::DmaSetup{0});
  REQUIRE(z.ok());
  const auto counts = [&] { return z.agent->dma().counts(); };
  pd3::DmaCounts before = counts();
  z.producer().begin_batch();
  REQUIRE(z.produce("x", value_of(1, 0, 10)) == 1);
  REQUIRE(z.produce("y", value_of(2, 0, 11)) == 2);
  REQUIRE(z.produce("x", value_of(1, 1, 12)) == 3);  // same bucket as the first
  CHECK_EQ(counts().fences, before.fences);          // nothing published yet
  CHECK_EQ(z.take("x"), 0);
  CHECK_EQ(z.take("y"), 0);
  CHECK_EQ(z.c()->lz_tail_seq, 1u);
  CHECK_EQ(z.c()->lz_produced, 0u);
  z.producer().end_batch();
  const pd3::DmaCounts after = counts();
  CHECK_EQ(after.fences, before.fences + 2);  // two for the batch, not two per item
  CHECK_EQ(z.c()->lz_tail_seq, 4u);
  CHECK_EQ(z.c()->lz_produced, 3u);
  std::vector<uint8_t> got;
  CHECK_EQ(z.take("x", &got), 12);  // newest first, then the older copy through the chain
  CHECK(got == value_of(1, 1, 12));
  CHECK_EQ(z.take("x", &got), 10);
  CHECK(got == value_of(1, 0, 10));
  CHECK_EQ(z.take("y", &got), 11);
  z.producer().begin_batch();
  z.producer().end_batch();  // an empty batch publishes nothing
  CHECK_EQ(counts().fences, after.fences);
}

TEST(lz_batch_items_are_published_before_any_other_operation) {
  Zone z(1 << 16, 64);
  REQUIRE(z.ok());
  z.producer().begin_batch();
  REQUIRE(z.produce("x", value_of(1, 0, 10)) > 0);
  // Invalidating a key of the open batch withdraws its item: published first, then the CAS.
  CHECK_EQ(z.producer().invalidate("x", 1), 1u);
  REQUIRE(z.produce("y", value_of(2, 0, 10)) > 0);
  CHECK_EQ(z.producer().clean(), 1u);  // publishes y, then frees the withdrawn x
  std::vector<uint8_t> got;
  CHECK_EQ(z.take("y", &got), 10);  // visible before end_batch
  REQUIRE(z.produce("w", value_of(3, 0, 10)) > 0);
  CHECK_EQ(z.producer().invalidate_all(), 1u);
  z.producer().end_batch();
  CHECK_EQ(z.take("x"), 0);
  CHECK_EQ(z.take("w"), 0);
  CHECK_EQ(z.c()->lz_invalidated, 2u);
  CHECK_EQ(z.c()->lz_produced, 3u);
}

TEST(lz_batch_larger_than_the_zone_publishes_before_reclaiming) {
  Zone z(1 << 16, 16);  // sixteen descriptors
  REQUIRE(z.ok());
  z.producer().begin_batch();
  for (uint64_t i = 0; i < 40; ++i) REQUIRE(z.produce(key_of(i), value_of(i, 0, 20)) == int64_t(i + 1));
  z.producer().end_batch();
  // The 24 oldest were published, then reclaimed untaken (counted as such); the 16 newest are there.
  CHECK_EQ(z.c()->lz_produced, 40u);
  CHECK_EQ(z.c()->lz_reclaimed_unconsumed, 24u);
  std::vector<uint8_t> got;
  for (uint64_t i = 0; i < 24; ++i) CHECK_EQ(z.take(key_of(i)), 0);
  for (uint64_t i = 24; i < 40; ++i) {
    CHECK_EQ(z.take(key_of(i), &got), 20);
    CHECK(got == value_of(i, 0, 20));
  }
  CHECK_EQ(z.producer().clean(), 16u);
  CHECK_EQ(z.producer().pending(), 0u);
}

TEST(lz_clean_stops_at_first_produced) {
  Zone z(1 << 16, 64);
  REQUIRE(z.ok());
  for (int i = 0; i < 4; ++i) REQUIRE(z.produce(key_of(i), value_of(i, 0, 30)) == i + 1);
  CHECK_EQ(z.producer().clean(), 0u);  // A is PRODUCED
  CHECK_EQ(z.take(key_of(0)), 30);
  CHECK_EQ(z.take(key_of(2)), 30);
  CHECK_EQ(z.producer().clean(), 1u);  // A only; B blocks
  CHECK_EQ(z.producer().pending(), 3u);
  CHECK_EQ(z.c()->lz_head_seq, 2u);
  CHECK_EQ(z.c()->lz_consumed, 1u);
  CHECK_EQ(z.take(key_of(1)), 30);
  CHECK_EQ(z.producer().clean(), 2u);  // B and C; D blocks
  CHECK_EQ(z.producer().pending(), 1u);
  CHECK_EQ(z.producer().clean(), 0u);
  std::vector<uint8_t> got;
  CHECK_EQ(z.take(key_of(3), &got), 30);
  CHECK(got == value_of(3, 0, 30));
  CHECK_EQ(z.producer().clean(), 1u);
  CHECK_EQ(z.producer().pending(), 0u);
  CHECK_EQ(z.c()->lz_consumed, 4u);
  CHECK_EQ(z.c()->lz_reclaimed_unconsumed, 0u);
  CHECK_EQ(z.c()->lz_data_head, z.c()->lz_data_tail);
  CHECK_EQ(z.producer().clean(), 0u);  // empty zone
}

TEST(lz_reclaims_oldest_when_descriptors_run_out) {
  Zone z(1 << 16, 16);
  REQUIRE(z.ok());
  for (int i = 0; i < 40; ++i) REQUIRE(z.produce(key_of(i), value_of(i, 0, 50)) == i + 1);
  CHECK_EQ(z.producer().pending(), 16u);
  CHECK_EQ(z.c()->lz_reclaimed_unconsumed, 24u);
  CHECK_EQ(z.c()->lz_produced, 40u);
  for (int i = 0; i < 24; ++i) CHECK_EQ(z.take(key_of(i)), 0);
  // Consume the five oldest live items, then push 16 more: all 16 old ones go, 5 of them consumed.
  std::vector<uint8_t> got;
  for (int i = 24; i < 29; ++i) {
    CHECK_EQ(z.take(key_of(i), &got), 50);
    CHECK(got == value_of(i, 0, 50));
  }
  for (int i = 40; i < 56; ++i) REQUIRE(z.produce(key_of(i), value_of(i, 0, 50)) > 0);
  CHECK_EQ(z.c()->lz_consumed, 5u);
  CHECK_EQ(z.c()->lz_reclaimed_unconsumed, 24u + 11u);
  for (int i = 24; i < 40; ++i) CHECK_EQ(z.take(key_of(i)), 0);
  for (int i = 40; i < 56; ++i) {
    CHECK_EQ(z.take(key_of(i), &got), 50);
    CHECK(got == value_of(i, 0, 50));
  }
}

TEST(lz_reclaims_oldest_when_data_runs_out) {
  Zone z(4096, 64);
  REQUIRE(z.ok());
  // 16 + 8 + 1000 = 1024-byte records: four fill the 4 KiB data ring.
  for (int i = 0; i < 10; ++i) REQUIRE(z.produce(bytes_key(i), value_of(i, 0, 1000)) > 0);
  CHECK_EQ(z.producer().pending(), 4u);
  CHECK_EQ(z.c()->lz_reclaimed_unconsumed, 6u);
  for (int i = 0; i < 6; ++i) CHECK_EQ(z.take(bytes_key(i)), 0);
  std::vector<uint8_t> got;
  for (int i = 6; i < 10; ++i) {
    CHECK_EQ(z.take(bytes_key(i), &got), 1000);
    CHECK(got == value_of(i, 0, 1000));
  }

  // Random sizes: the zone keeps exactly the newest items whose records fit, oldest reclaimed first.
  std::mt19937 rng(17);
  uint64_t produced = z.c()->lz_produced, before_unconsumed = z.c()->lz_reclaimed_unconsumed;
  const uint64_t before_consumed_total = 4;  // the four just taken, reclaimed below
  std::vector<std::pair<uint64_t, uint32_t>> items;  // (key, size) by seq order
  for (uint64_t i = 100; i < 400; ++i) {
    const uint32_t n = 1 + rng() % (rng() % 4 == 0 ? 4000 : 600);
    REQUIRE(z.produce(bytes_key(i), value_of(i, 0, n)) > 0);
    items.push_back({i, n});
    ++produced;
    const pd3_control* c = z.c();
    CHECK(c->lz_data_tail - c->lz_data_head <= 4096);
    CHECK(z.producer().pending() >= 1);
    CHECK(z.producer().pending() <= 64);
  }
  const uint64_t live = z.producer().pending();
  CHECK_EQ(z.c()->lz_reclaimed_unconsumed + z.c()->lz_consumed, produced - live);
  CHECK_EQ(z.c()->lz_consumed, before_consumed_total);
  CHECK(z.c()->lz_reclaimed_unconsumed > before_unconsumed);
  // The newest `live` items hit, every older one misses.
  uint64_t bytes = 0;
  for (size_t j = 0; j < items.size(); ++j) {
    const bool should_hit = j >= items.size() - live;
    const int64_t rc = z.take(bytes_key(items[j].first), &got);
    if (should_hit) {
      CHECK_EQ(rc, int64_t(items[j].second));
      CHECK(got == value_of(items[j].first, 0, items[j].second));
      bytes += pd3_lz_record_len(8, items[j].second);
    } else {
      CHECK_EQ(rc, 0);
    }
  }
  CHECK(bytes <= 4096);

  // A record of exactly the ring's size displaces everything.
  const uint32_t whole = 4096 - 16 - 8;
  REQUIRE(z.produce(bytes_key(7777), value_of(7777, 0, whole)) > 0);
  CHECK_EQ(z.producer().pending(), 1u);
  CHECK_EQ(z.take(bytes_key(7777), &got), whole);
  CHECK(got == value_of(7777, 0, whole));
}

TEST(lz_variable_key_and_value_sizes) {
  Zone z(2 << 20, 64);
  REQUIRE(z.ok());
  std::mt19937 rng(23);
  const uint32_t key_lens[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 255, 256, 299, 300};
  const uint32_t val_lens[] = {1, 2, 7, 8, 9, 63, 64, 65, 4095, 4096, 65535, 65536};
  uint64_t total = 0;
  for (int batch = 0; batch < 16; ++batch) {
    struct Item {
      std::string key;
      std::vector<uint8_t> value;
    };
    std::vector<Item> items;
    std::set<std::string> keys;
    while (items.size() < 20) {
      const uint32_t kl = rng() % 3 == 0 ? key_lens[rng() % std::size(key_lens)] : 1 + rng() % 300;
      const uint32_t vl = rng() % 3 == 0 ? val_lens[rng() % std::size(val_lens)] : 1 + rng() % 65536;
      std::string k(kl, '\0');
      for (auto& ch : k) ch = char(rng());
      if (!keys.insert(k).second) continue;  // one live item per key in this test
      items.push_back({k, value_of(total + items.size(), batch, vl)});
    }
    for (const Item& it : items) REQUIRE(z.produce(it.key, it.value) > 0);
    CHECK_EQ(z.c()->lz_reclaimed_unconsumed, 0u);
    std::shuffle(items.begin(), items.end(), rng);
    for (const Item& it : items) {
      // Destination with a canary after the item's size.
      std::vector<uint8_t> buf(it.value.size() + 16, 0xC5);
      const int64_t rc = pd3_host_check_and_return(z.host.h, it.key.data(), uint32_t(it.key.size()), buf.data(),
                                                   uint32_t(buf.size()));
      CHECK_EQ(rc, int64_t(it.value.size()));
      CHECK(std::equal(it.value.begin(), it.value.end(), buf.begin()));
      for (size_t i = it.value.size(); i < buf.size(); ++i) CHECK_EQ(buf[i], 0xC5);
    }
    CHECK_EQ(z.producer().clean(), 20u);
    CHECK_EQ(z.producer().pending(), 0u);
    total += items.size();
  }
  CHECK_EQ(z.c()->lz_consumed, total);
  CHECK_EQ(z.c()->lz_produced, total);
}

TEST(lz_produce_and_lookup_reject_bad_arguments) {
  Zone z(1 << 17, 16);
  REQUIRE(z.ok());
  pd3::LzProducer& p = z.producer();
  const uint8_t data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const uint16_t op = pd3_op_id(PD3_OP_PREFETCH, 0);
  CHECK_EQ(p.produce(op, "k", 1, data, 0), PD3_E_INVAL);   // size 0 would read as a miss
  CHECK_EQ(p.produce(op, "k", 0, data, 8), PD3_E_INVAL);   // empty key
  CHECK_EQ(p.produce(op, nullptr, 1, data, 8), PD3_E_INVAL);
  CHECK_EQ(p.produce(op, "k", 1, nullptr, 8), PD3_E_INVAL);
  std::string huge_key(65536, 'k');
  CHECK_EQ(p.produce(op, huge_key.data(), 65536, data, 8), PD3_E_INVAL);
  CHECK_EQ(p.produce(op, "k", 1, data, 0x80000000u), PD3_E_INVAL);  // beyond size:31, never read
  // Larger than the data ring: 16 + 8 + 131056 = 131080 > 131072.
  std::vector<uint8_t> big(131072, 1);
  CHECK_EQ(p.produce(op, "k", 1, big.data(), 131056 - 7), PD3_E_TOO_BIG);
  CHECK_EQ(p.produce(op, "k", 1, big.data(), 131072), PD3_E_TOO_BIG);
  CHECK_EQ(z.c()->lz_produced, 0u);
  CHECK_EQ(z.c()->lz_tail_seq, 1u);
  CHECK_EQ(z.c()->lz_data_tail, 0u);
  CHECK_EQ(z.take("k"), 0);
  // The largest key works.
  huge_key.resize(65535);
  huge_key[100] = 'x';
  CHECK(p.produce(op, huge_key.data(), 65535, data, 8) > 0);
  uint8_t out[8];
  CHECK_EQ(pd3_host_check_and_return(z.host.h, huge_key.data(), 65535, out, 8), 8);
  CHECK(std::memcmp(out, data, 8) == 0);
  // Lookup argument checks.
  CHECK_EQ(pd3_host_check_and_return(z.host.h, nullptr, 1, out, 8), PD3_E_INVAL);
  CHECK_EQ(pd3_host_check_and_return(z.host.h, "k", 0, out, 8), PD3_E_INVAL);
  CHECK_EQ(pd3_host_check_and_return(z.host.h, "k", 1, nullptr, 8), PD3_E_INVAL);
  CHECK_EQ(pd3_host_check_and_return(z.host.h, huge_key.data(), 65536, out, 8), PD3_E_INVAL);
  CHECK_EQ(pd3_host_check_and_return(nullptr, "k", 1, out, 8), PD3_E_INVAL);
  CHECK_EQ(pd3_host_check_and_return(z.host.h, "k", 1, nullptr, 0), 0);  // a legal miss
}

TEST(lz_duplicate_keys_newest_first) {
  Zone z(1 << 16, 64);
  REQUIRE(z.ok());
  REQUIRE(z.produce("dup", value_of(1, 1, 10)) > 0);
  REQUIRE(z.produce("dup", value_of(1, 2, 11)) > 0);
  std::vector<uint8_t> got;
  CHECK_EQ(z.take("dup", &got), 11);
  CHECK(got == value_of(1, 2, 11));
  CHECK_EQ(z.take("dup", &got), 10);
  CHECK(got == value_of(1, 1, 10));
  CHECK_EQ(z.take("dup"), 0);
}

TEST(lz_restarted_agent_resumes_from_the_segment) {
  Zone z(1 << 16, 16);
  REQUIRE(z.ok());
  for (int i = 0; i < 5; ++i) REQUIRE(z.produce(key_of(i), value_of(i, 0, 20)) == i + 1);
  CHECK_EQ(z.take(key_of(0)), 20);
  z.agent.reset();  // the agent goes away; its items stay in the host's memory
  CHECK_EQ(z.take(key_of(1)), 20);
  std::unique_ptr<pd3::AgentSession> again;
  REQUIRE(pd3::AgentSession::attach(z.host.name.c_str(), &again) == PD3_OK);
  CHECK_EQ(z.c()->agent_attaches, 2u);
  CHECK_EQ(again->zone().pending(), 5u);
  CHECK_EQ(again->zone().clean(), 2u);
  CHECK_EQ(again->zone().produce(pd3_op_id(PD3_OP_PREFETCH, 0), "new", 3, value_of(9, 0, 5).data(), 5), 6);
  std::vector<uint8_t> got;
  CHECK_EQ(z.take("new", &got), 5);
  for (int i = 2; i < 5; ++i) CHECK_EQ(z.take(key_of(i)), 20);
}
