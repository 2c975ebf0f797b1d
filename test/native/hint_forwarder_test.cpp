// hint_forwarder_test.cpp — the host's half of agent-hinted prefetching: hints become PREFETCH
// requests in order, wait for room when the request ring is full, and malformed ones are dropped.
#include <cstring>
#include <string>
#include <vector>

#include "agent_rings.hpp"
#include "harness.hpp"
#include "host/hint_forwarder.hpp"
#include "util.hpp"

namespace {

// One hint as the agent publishes it: the response header, then pd3_prefetch_hint + key.
struct Hint {
  pd3_response r;
  std::vector<uint8_t> body;
};

Hint hint(uint16_t id, uint16_t server, const std::string& key, uint32_t max_size = 4096) {
  Hint h;
  const pd3_prefetch_hint body{server, uint16_t(key.size()), max_size};
  h.body.resize(sizeof body + key.size());
  std::memcpy(h.body.data(), &body, sizeof body);
  std::memcpy(h.body.data() + sizeof body, key.data(), key.size());
  h.r = pd3_response{pd3_op_id(PD3_OP_PREFETCH, id), 0, uint32_t(h.body.size())};
  return h;
}

// The PREFETCH requests in the request ring, as (id, server, max_size, key).
struct Taken {
  uint32_t id;
  uint32_t server;
  uint32_t max_size;
  std::string key;
};
std::vector<Taken> take(pd3_control* c) {
  std::vector<Taken> out;
  pd3test::drain_requests(c, 1u << 20, [&](const pd3::RequestView& v) {
    REQUIRE(v.status == PD3_OK);
    CHECK_EQ(pd3_op_of(v.hdr.op_id), PD3_OP_PREFETCH);
    out.push_back({pd3_id_of(v.hdr.op_id), v.hdr.region, v.hdr.offset,
                   std::string(reinterpret_cast<const char*>(v.payload), v.hdr.size)});
  });
  return out;
}

}  // namespace

TEST(hint_forwarder_turns_hints_into_prefetch_requests) {
  pd3test::ScopedHost host("hints-fwd");
  REQUIRE(host.rc == PD3_OK);
  pd3::HintForwarder f;
  const Hint a = hint(7, 3, "user:7", 512), b = hint(8, 0, std::string(300, 'k'));
  f.on_hint(host.control(), a.r, a.body.data(), true);
  f.on_hint(host.control(), b.r, b.body.data(), true);
  const auto got = take(host.control());
  REQUIRE(got.size() == 2);
  CHECK_EQ(got[0].id, 7u);
  CHECK_EQ(got[0].server, 3u);
  CHECK_EQ(got[0].max_size, 512u);
  CHECK(got[0].key == "user:7");
  CHECK(got[1].key == std::string(300, 'k'));
  const pd3::HintStats s = f.stats();
  CHECK_EQ(s.received, 2u);
  CHECK_EQ(s.forwarded, 2u);
  CHECK_EQ(s.malformed + s.dropped + s.pending, 0u);
}

TEST(hint_forwarder_drops_malformed_hints) {
  pd3test::ScopedHost host("hints-bad");
  REQUIRE(host.rc == PD3_OK);
  pd3::HintForwarder f;
  Hint h = hint(1, 0, "abc");
  f.on_hint(host.control(), h.r, h.body.data(), false);  // the ring framing said no
  Hint short_size = h;
  short_size.r.size = 4;  // shorter than pd3_prefetch_hint
  f.on_hint(host.control(), short_size.r, short_size.body.data(), true);
  Hint empty = hint(2, 0, "");  // no key
  f.on_hint(host.control(), empty.r, empty.body.data(), true);
  Hint lying = hint(3, 0, "abc");
  lying.r.size += 5;  // key_len disagrees with the record's size
  lying.body.resize(lying.r.size);
  f.on_hint(host.control(), lying.r, lying.body.data(), true);
  Hint failed = hint(4, 0, "abc");
  failed.r.status = uint16_t(-PD3_E_UNAVAILABLE);
  f.on_hint(host.control(), failed.r, failed.body.data(), true);
  CHECK(take(host.control()).empty());
  CHECK_EQ(f.stats().malformed, 5u);
  CHECK_EQ(f.stats().forwarded, 0u);
}

TEST(hint_forwarder_keeps_order_while_the_request_ring_is_full) {
  pd3_segment_sizes sizes{};
  sizes.request_ring_bytes = 4096;  // a few dozen hints fill it
  pd3test::ScopedHost host("hints-full", sizes);
  REQUIRE(host.rc == PD3_OK);
  pd3::HintForwarder f;
  const uint32_t n = 500;
  for (uint32_t i = 0; i < n; ++i) {
    const Hint h = hint(uint16_t(i), 1, "key-" + std::to_string(i));
    f.on_hint(host.control(), h.r, h.body.data(), true);
  }
  CHECK(f.stats().pending > 0);  // the ring filled up
  std::vector<Taken> all;
  for (int round = 0; round < 1000 && all.size() < n; ++round) {
    for (auto& t : take(host.control())) all.push_back(std::move(t));
    f.retry(host.control());
  }
  for (auto& t : take(host.control())) all.push_back(std::move(t));
  REQUIRE(all.size() == n);
  for (uint32_t i = 0; i < n; ++i) CHECK(all[i].key == "key-" + std::to_string(i));  // in order
  CHECK_EQ(f.stats().forwarded, uint64_t(n));
  CHECK_EQ(f.stats().pending, 0u);
  // A hint arriving while others wait goes behind them; drop_pending forgets the waiting ones.
  for (uint32_t i = 0; i < n; ++i) {
    const Hint h = hint(uint16_t(i), 1, "again-" + std::to_string(i));
    f.on_hint(host.control(), h.r, h.body.data(), true);
  }
  const uint64_t waiting = f.stats().pending;
  CHECK(waiting > 0);
  f.drop_pending();
  CHECK_EQ(f.stats().pending, 0u);
  CHECK_EQ(f.stats().dropped, waiting);
}
