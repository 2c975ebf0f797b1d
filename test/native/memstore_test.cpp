// memstore_test.cpp — the memory server's storage (MemStore): region round trips and bounds, bad
// region ids, isolation, capacity and id exhaustion, the key index through WRITE and PREFETCH, a
// model-checked fuzz of malformed WRITE payloads, and persistence: reopen, a SIGKILL-ed writer, and
// refusal of foreign or damaged data directories.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/transport_codec.hpp"
#include "harness.hpp"
#include "memserver/mem_store.hpp"
#include "pd3/record.h"
#include "pd3/status.h"
#include "store_requests.hpp"
#include "util.hpp"

namespace {

using pd3test::TempDir;
using pd3test::kv_record;

using pd3::MemStore;
using pd3::MemStoreOptions;
using pd3::SyncMode;
using pd3::TransportRequest;
using Bytes = std::vector<uint8_t>;

constexpr uint16_t kServer = 2;


MemStoreOptions options(uint64_t capacity = 64u << 20, const std::string& dir = "", SyncMode sync = SyncMode::kBatch) {
  MemStoreOptions o;
  o.server_id = kServer;
  o.capacity = capacity;
  o.data_dir = dir;
  o.sync = sync;
  o.index_initial_keys = 1024;
  return o;
}

using pd3test::open_store;

uint32_t region_id(uint32_t local) { return pd3_region_id(kServer, local); }

using Reply = pd3test::StoreReply;
using pd3test::request;

// Executes one request; checks that exactly one well-formed response record for it was appended,
// within the space response_space() reserves for it.
Reply run(MemStore& s, const TransportRequest& req, const pd3::Tenant& tenant = {}) {
  Bytes buf;
  pd3::FrameBuilder fb(&buf);
  s.execute(req, tenant, &fb);
  pd3::TransportResponse r;
  REQUIRE(fb.records() == 1);
  REQUIRE(pd3::decode_response(buf.data(), buf.size(), &r) == PD3_OK);
  REQUIRE(r.record_len == buf.size());
  REQUIRE(r.op_id == req.op_id);
  REQUIRE(buf.size() <= pd3::response_space(req));
  return pd3test::store_reply(r);
}

Reply allocate(MemStore& s, uint32_t bytes, const pd3::Tenant& t = {}) {
  return run(s, request(PD3_OP_CONTROL, PD3_CTL_ALLOCATE, 0, bytes), t);
}

// Allocates and returns the new region's id (the test stops if that fails).
uint32_t must_allocate(MemStore& s, uint32_t bytes, uint32_t* capacity = nullptr, const pd3::Tenant& t = {}) {
  const Reply r = allocate(s, bytes, t);
  REQUIRE(r.status == PD3_OK && r.data.size() == sizeof(pd3_alloc_reply) && r.size == sizeof(pd3_alloc_reply));
  pd3_alloc_reply a;
  std::memcpy(&a, r.data.data(), sizeof a);
  if (capacity) *capacity = a.capacity;
  return a.region;
}

int deallocate(MemStore& s, uint32_t region, const pd3::Tenant& t = {}) {
  return run(s, request(PD3_OP_CONTROL, PD3_CTL_DEALLOCATE, region, 0), t).status;
}

int write(MemStore& s, uint32_t region, uint32_t offset, const Bytes& bytes, const pd3::Tenant& t = {}) {
  const Reply r =
      run(s, request(PD3_OP_WRITE, region, offset, uint32_t(bytes.size()), bytes.data(), uint32_t(bytes.size())), t);
  CHECK(r.data.empty());
  CHECK_EQ(r.size, r.status == PD3_OK ? uint32_t(bytes.size()) : 0u);
  return r.status;
}

Reply read(MemStore& s, uint32_t region, uint32_t offset, uint32_t size, const pd3::Tenant& t = {}) {
  return run(s, request(PD3_OP_READ, region, offset, size), t);
}

Reply prefetch(MemStore& s, const std::string& key, uint32_t max_size = 1u << 20, const pd3::Tenant& t = {}) {
  return run(s, request(PD3_OP_PREFETCH, 0, 0, max_size, key.data(), uint32_t(key.size())), t);
}

std::string stats_text(MemStore& s) {
  const Reply r = run(s, request(PD3_OP_CONTROL, PD3_CTL_STATS, 0, 0));
  CHECK_EQ(r.status, PD3_OK);
  CHECK_EQ(r.size, uint32_t(r.data.size()));
  return std::string(r.data.begin(), r.data.end());
}

Bytes concat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::string as_string(const Bytes& b) { return std::string(b.begin(), b.end()); }

uint64_t env_iters(const char* name, uint64_t dflt) {
  const char* env = std::getenv(name);
  return env ? std::strtoull(env, nullptr, 10) : dflt;
}

}  // namespace

TEST(memstore_open_validates_options) {
  std::unique_ptr<MemStore> s;
  MemStoreOptions o = options();
  o = options(0);
  o.headroom = 1.0;
  CHECK_EQ(MemStore::open(o, &s), PD3_E_INVAL);
  o = options();
  o.index_initial_keys = 0;
  CHECK_EQ(MemStore::open(o, &s), PD3_E_INVAL);
  CHECK(s == nullptr);
  // Capacity 0: what the machine can spare, minus the headroom.
  o = options(0);
  REQUIRE(MemStore::open(o, &s) == PD3_OK);
  CHECK(s->capacity() > 0);
  CHECK_EQ(s->free_bytes(), s->capacity());
  CHECK_EQ(s->server_id(), kServer);
  // A data_dir that is a regular file is refused.
  TempDir d("store");
  const std::string file = d.file("plain");
  close(::open(file.c_str(), O_CREAT | O_WRONLY, 0600));
  o = options(1 << 20, file);
  s.reset();
  CHECK_EQ(MemStore::open(o, &s), PD3_E_INVAL);
}

TEST(memstore_round_trip) {
  auto s = open_store(options());
  uint32_t capacity = 0;
  const uint32_t a = must_allocate(*s, 10000, &capacity);
  CHECK_EQ(capacity, 12288u);  // rounded up to 4 KiB
  CHECK_EQ(pd3_region_server(a), kServer);
  CHECK_EQ(pd3_region_local(a), 1u);
  CHECK_EQ(s->free_bytes(), s->capacity() - 12288);
  // A fresh region reads as zeros.
  Reply r = read(*s, a, 0, 12288);
  REQUIRE(r.status == PD3_OK);
  CHECK_EQ(r.size, 12288u);
  CHECK(r.data == Bytes(12288, 0));
  pd3test::Rng rng(1);
  Bytes data(5000);
  for (auto& b : data) b = uint8_t(rng.next());
  CHECK_EQ(write(*s, a, 777, data), PD3_OK);
  r = read(*s, a, 777, 5000);
  CHECK(r.status == PD3_OK && r.data == data);
  r = read(*s, a, 776, 2);
  CHECK(r.status == PD3_OK && r.data[0] == 0 && r.data[1] == data[0]);
  // Through the real request codec too: a WRITE record built by FrameBuilder and decoded.
  Bytes frame;
  pd3::FrameBuilder fb(&frame);
  const pd3_request hdr = pd3_make_request(pd3_op_id(PD3_OP_WRITE, 9), a, 12000, 4);
  const uint8_t four[4] = {1, 2, 3, 4};
  fb.request(hdr, four, 4);
  TransportRequest decoded;
  REQUIRE(pd3::decode_request(frame.data(), frame.size(), &decoded) == PD3_OK);
  CHECK_EQ(run(*s, decoded).status, PD3_OK);
  r = read(*s, a, 12000, 4);
  CHECK(r.status == PD3_OK && r.data == Bytes(four, four + 4));
  const pd3::MemStoreStats st = s->stats();
  CHECK_EQ(st.regions, 1u);
  CHECK_EQ(st.allocated_bytes, 12288u);
  CHECK_EQ(st.writes, 2u);
  CHECK_EQ(st.write_bytes, 5004u);
  CHECK_EQ(st.reads, 4u);
  CHECK_EQ(st.read_bytes, 12288u + 5000 + 2 + 4);
  CHECK_EQ(st.controls, 1u);
  CHECK_EQ(st.errors, 0u);
  CHECK_EQ(st.syncs, 0u);  // anonymous memory: sync() has nothing to do
  CHECK_EQ(s->sync(), PD3_OK);
  CHECK_EQ(s->stats().syncs, 0u);
}

TEST(memstore_bounds) {
  auto s = open_store(options(uint64_t(8) << 30));
  const uint32_t a = must_allocate(*s, 8192);
  CHECK_EQ(read(*s, a, 0, 0).status, PD3_E_INVAL);
  CHECK_EQ(run(*s, request(PD3_OP_WRITE, a, 0, 0, "", 0)).status, PD3_E_INVAL);
  CHECK_EQ(write(*s, a, 8192 - 16, Bytes(16, 7)), PD3_OK);  // exactly up to the end
  CHECK_EQ(read(*s, a, 8192 - 16, 16).status, PD3_OK);
  CHECK_EQ(read(*s, a, 8192 - 16, 17).status, PD3_E_RANGE);
  CHECK_EQ(write(*s, a, 8192 - 15, Bytes(16, 7)), PD3_E_RANGE);
  CHECK_EQ(read(*s, a, 8192, 1).status, PD3_E_RANGE);
  CHECK_EQ(read(*s, a, 0, 8193).status, PD3_E_RANGE);
  // offset + size overflows 32 bits: must still be refused.
  CHECK_EQ(read(*s, a, 0xFFFFFFFFu, 2).status, PD3_E_RANGE);
  CHECK_EQ(read(*s, a, 1, 0xFFFFFFFFu).status, PD3_E_RANGE);
  CHECK_EQ(write(*s, a, 0xFFFFFFF0u, Bytes(0x20, 1)), PD3_E_RANGE);
  // The largest region: 0xFFFFF000 bytes (anonymous memory, taken only where touched).
  uint32_t capacity = 0;
  const uint32_t big = must_allocate(*s, 0xFFFFF000u, &capacity);
  CHECK_EQ(capacity, 0xFFFFF000u);
  CHECK_EQ(write(*s, big, 0xFFFFF000u - 16, Bytes(16, 9)), PD3_OK);
  Reply r = read(*s, big, 0xFFFFF000u - 16, 16);
  CHECK(r.status == PD3_OK && r.data == Bytes(16, 9));
  CHECK_EQ(write(*s, big, 0xFFFFF000u - 15, Bytes(16, 9)), PD3_E_RANGE);
  CHECK_EQ(read(*s, big, 0xFFFFFFF0u, 0x20).status, PD3_E_RANGE);   // wraps to 0x10 in 32 bits
  CHECK_EQ(read(*s, big, 0xFFFFF000u, 0x1000).status, PD3_E_RANGE);
  // Sizes that cannot be a region: 0, and more than 0xFFFFF000 after rounding to 4 KiB.
  CHECK_EQ(allocate(*s, 0).status, PD3_E_INVAL);
  CHECK_EQ(allocate(*s, 0xFFFFF001u).status, PD3_E_INVAL);
  CHECK_EQ(allocate(*s, 0xFFFFFFFFu).status, PD3_E_INVAL);
  // A WRITE whose data does not match its size (not producible by decode_request) is refused.
  const uint8_t two[2] = {1, 2};
  CHECK_EQ(run(*s, request(PD3_OP_WRITE, a, 0, 4, two, 2)).status, PD3_E_INVAL);
  CHECK_EQ(s->stats().errors, 16u);
}

TEST(memstore_bad_regions) {
  auto s = open_store(options());
  const uint32_t a = must_allocate(*s, 4096);
  const uint32_t b = must_allocate(*s, 4096);
  CHECK_EQ(deallocate(*s, b), PD3_OK);
  const uint32_t bad[] = {0,                                  // region 0: never valid
                          pd3_region_id(kServer, 0),          // local 0
                          pd3_region_id(kServer + 1, 1),      // another server's region 1
                          pd3_region_id(0, pd3_region_local(a)),
                          region_id(7),                       // never allocated
                          region_id(PD3_REGION_LOCAL_MAX),
                          b};                                 // deallocated
  for (uint32_t id : bad) {
    CHECK_EQ(read(*s, id, 0, 8).status, PD3_E_BAD_REGION);
    CHECK_EQ(write(*s, id, 0, Bytes(8, 1)), PD3_E_BAD_REGION);
    CHECK_EQ(deallocate(*s, id), PD3_E_BAD_REGION);
  }
  // Another server's region with a local id that is in use here: the server bits decide.
  CHECK_EQ(deallocate(*s, pd3_region_id(kServer + 40000, pd3_region_local(a))), PD3_E_BAD_REGION);
  // With 4 server bits this id would have named this server's region a.
  CHECK_EQ(deallocate(*s, pd3_region_id(kServer + 0x10, pd3_region_local(a))), PD3_E_BAD_REGION);
  CHECK_EQ(deallocate(*s, b), PD3_E_BAD_REGION);            // twice
  CHECK_EQ(read(*s, a, 0, 8).status, PD3_OK);
  // Unknown CONTROL sub-operations.
  for (uint32_t sub : {0u, PD3_CTL_THAW + 1, 0xFFFFu}) CHECK_EQ(run(*s, request(PD3_OP_CONTROL, sub, 0, 0)).status, PD3_E_BAD_OP);
  CHECK_EQ(s->stats().regions, 1u);
}

TEST(memstore_region_isolation) {
  auto s = open_store(options());
  const uint32_t a = must_allocate(*s, 8192);
  const uint32_t b = must_allocate(*s, 8192);
  Bytes pattern(8192);
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = uint8_t(i * 31 + 5);
  REQUIRE(write(*s, b, 0, pattern) == PD3_OK);
  pd3test::Rng rng(3);
  for (int i = 0; i < 2000; ++i) {
    const uint32_t off = rng.below(8192);
    const uint32_t len = 1 + rng.below(8192 - off);
    Bytes data(len);
    for (auto& x : data) x = uint8_t(rng.next());
    CHECK_EQ(write(*s, a, off, data), PD3_OK);
  }
  CHECK_EQ(write(*s, a, 8000, Bytes(300, 0xEE)), PD3_E_RANGE);  // would run into whatever follows A
  CHECK_EQ(read(*s, a, 8000, 300).status, PD3_E_RANGE);
  const Reply r = read(*s, b, 0, 8192);
  CHECK(r.status == PD3_OK && r.data == pattern);
}

TEST(memstore_nospace_by_capacity) {
  auto s = open_store(options(64 << 10));
  const uint32_t a = must_allocate(*s, 32 << 10);
  must_allocate(*s, 30000);  // 32 KiB after rounding
  CHECK_EQ(s->free_bytes(), 0u);
  CHECK_EQ(allocate(*s, 1).status, PD3_E_NOSPACE);
  CHECK_EQ(deallocate(*s, a), PD3_OK);
  CHECK_EQ(s->free_bytes(), uint64_t(32 << 10));
  CHECK_EQ(allocate(*s, (32 << 10) + 1).status, PD3_E_NOSPACE);
  const uint32_t again = must_allocate(*s, 32 << 10);  // the space and the id come back
  CHECK_EQ(again, a);
  CHECK(read(*s, again, 0, 32 << 10).data == Bytes(32 << 10, 0));  // fresh memory, not the old bytes
  CHECK(stats_text(*s).find("errors=2") != std::string::npos);
}

TEST(memstore_nospace_by_ids) {
  auto s = open_store(options(uint64_t(1) << 30));
  for (uint32_t local = 1; local <= PD3_REGION_LOCAL_MAX; ++local) {
    const uint32_t id = must_allocate(*s, 4096);
    if (id != region_id(local)) {
      CHECK_EQ(id, region_id(local));
      break;
    }
  }
  CHECK_EQ(s->stats().regions, uint64_t(PD3_REGION_LOCAL_MAX));
  CHECK_EQ(allocate(*s, 4096).status, PD3_E_NOSPACE);
  CHECK_EQ(deallocate(*s, region_id(100)), PD3_OK);
  CHECK_EQ(must_allocate(*s, 4096), region_id(100));
  CHECK_EQ(allocate(*s, 4096).status, PD3_E_NOSPACE);
}

TEST(memstore_more_than_4095_regions_on_a_high_server_id) {
  // Region ids are server:16 | local:16: a server id far past 15 and local ids past 4095 both
  // come back whole, and each id names its own memory.
  MemStoreOptions o = options(uint64_t(1) << 30);
  o.server_id = 40000;
  auto s = open_store(o);
  constexpr uint32_t kRegions = 5000;
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < kRegions; ++i) ids.push_back(must_allocate(*s, 4096));
  uint64_t wrong = 0;
  for (uint32_t i = 0; i < kRegions; ++i) {
    wrong += pd3_region_server(ids[i]) != 40000u || pd3_region_local(ids[i]) != i + 1;
    Bytes tag(8);
    std::memcpy(tag.data(), &ids[i], sizeof ids[i]);
    wrong += write(*s, ids[i], 4088, tag) != PD3_OK;
  }
  for (uint32_t i = 0; i < kRegions; ++i) {
    Bytes tag(8);
    std::memcpy(tag.data(), &ids[i], sizeof ids[i]);
    wrong += read(*s, ids[i], 4088, 8).data != tag;
  }
  CHECK_EQ(wrong, 0u);
  CHECK_EQ(s->stats().regions, uint64_t(kRegions));
  // The same local id under another server id is not ours.
  CHECK_EQ(read(*s, pd3_region_id(40001, 4500), 0, 8).status, PD3_E_BAD_REGION);
  // A freed id past 4095 is the lowest free one, so it is handed out again.
  CHECK_EQ(deallocate(*s, ids[4499]), PD3_OK);
  CHECK_EQ(read(*s, ids[4499], 0, 8).status, PD3_E_BAD_REGION);
  CHECK_EQ(must_allocate(*s, 4096), ids[4499]);
  CHECK_EQ(must_allocate(*s, 4096), pd3_region_id(40000, kRegions + 1));
  // The largest server id is a valid one too.
  o.server_id = 65535;
  auto top = open_store(o);
  const uint32_t t = must_allocate(*top, 4096);
  CHECK_EQ(pd3_region_server(t), 65535u);
  CHECK_EQ(read(*top, t, 0, 8).status, PD3_OK);
}

TEST(memstore_refuses_a_nonzero_reserved_field) {
  // pd3_request.reserved must be 0: a record carrying anything else is answered PD3_E_PROTOCOL
  // and not executed (the connection stays up; only that record fails).
  auto s = open_store(options());
  const uint32_t a = must_allocate(*s, 4096);
  TransportRequest w = request(PD3_OP_WRITE, a, 0, 4, "abcd", 4);
  w.reserved = 1;
  CHECK_EQ(run(*s, w).status, PD3_E_PROTOCOL);
  CHECK(read(*s, a, 0, 4).data == Bytes(4, 0));  // not written
  TransportRequest d = request(PD3_OP_CONTROL, PD3_CTL_DEALLOCATE, a, 0);
  d.reserved = 0x8000;
  CHECK_EQ(run(*s, d).status, PD3_E_PROTOCOL);
  CHECK_EQ(read(*s, a, 0, 4).status, PD3_OK);  // not freed
  // Decoded from the wire, the field reaches the store as sent.
  Bytes frame;
  pd3::FrameBuilder fb(&frame);
  pd3_request hdr = pd3_make_request(pd3_op_id(PD3_OP_READ, 1), a, 0, 4);
  hdr.reserved = 7;
  fb.request(hdr, nullptr, 0);
  TransportRequest decoded;
  REQUIRE(pd3::decode_request(frame.data(), frame.size(), &decoded) == PD3_OK);
  CHECK_EQ(decoded.reserved, 7);
  CHECK_EQ(run(*s, decoded).status, PD3_E_PROTOCOL);
}

TEST(memstore_stats_reply) {
  auto s = open_store(options());
  const uint32_t a = must_allocate(*s, 4096);
  CHECK_EQ(write(*s, a, 0, kv_record("k", "v")), PD3_OK);
  CHECK_EQ(read(*s, a, 0, 4).status, PD3_OK);
  CHECK_EQ(prefetch(*s, "k").status, PD3_OK);
  CHECK_EQ(prefetch(*s, "missing").status, PD3_E_NOT_FOUND);
  const std::string text = stats_text(*s);
  CHECK(text.size() <= pd3::PD3_STATS_REPLY_MAX);
  for (const char* field : {"regions=1 ", "allocated_bytes=4096 ", "writes=1 ", "reads=1 ", "prefetches=2 ",
                            "controls=2 ", "index_keys=1 ", "errors=1 ", "prefetch_not_found=1 "})
    if (text.find(field) == std::string::npos) {
      std::fprintf(stderr, "  '%s' not in '%s'\n", field, text.c_str());
      CHECK(false);
    }
}

TEST(memstore_index_prefetch) {
  auto s = open_store(options());
  const uint32_t a = must_allocate(*s, 1 << 16);
  const uint32_t b = must_allocate(*s, 1 << 17);
  // Several records in one write, then the end marker and junk that must not be parsed.
  const Bytes batch = concat({kv_record("alpha", "one"), kv_record("beta", std::string(100, 'b')), kv_record("gamma", ""),
                              Bytes(8, 0), kv_record("hidden", "after the end marker")});
  REQUIRE(write(*s, a, 1000, batch) == PD3_OK);
  Reply r = prefetch(*s, "alpha");
  CHECK(r.status == PD3_OK && r.key == "alpha" && as_string(r.data) == "one" && r.size == 3);
  r = prefetch(*s, "beta");
  CHECK(r.status == PD3_OK && as_string(r.data) == std::string(100, 'b'));
  r = prefetch(*s, "gamma");  // an empty value
  CHECK(r.status == PD3_OK && r.size == 0 && r.data.empty());
  CHECK_EQ(prefetch(*s, "hidden").status, PD3_E_NOT_FOUND);
  CHECK_EQ(s->stats().index_keys, 3u);
  // DEST_SMALL: the item's size, no data; exactly fitting is fine.
  r = prefetch(*s, "beta", 99);
  CHECK(r.status == PD3_E_DEST_SMALL && r.size == 100 && r.data.empty() && r.key == "beta");
  CHECK_EQ(prefetch(*s, "beta", 100).status, PD3_OK);
  CHECK_EQ(prefetch(*s, "alpha", 0).status, PD3_E_DEST_SMALL);
  // Unknown key: NOT_FOUND with the key echoed.
  r = prefetch(*s, "delta");
  CHECK(r.status == PD3_E_NOT_FOUND && r.key == "delta" && r.size == 0);
  // A newer record of a key, elsewhere (another region), moves the key.
  REQUIRE(write(*s, b, 40, kv_record("alpha", "two!")) == PD3_OK);
  r = prefetch(*s, "alpha");
  CHECK(r.status == PD3_OK && as_string(r.data) == "two!");
  // Overwriting its bytes with unrelated data: the key is gone (and its entry removed), never the
  // older record still sitting in region a.
  REQUIRE(write(*s, b, 40, Bytes(64, 0x5A)) == PD3_OK);
  CHECK_EQ(prefetch(*s, "alpha").status, PD3_E_NOT_FOUND);
  CHECK_EQ(s->stats().index_keys, 2u);
  CHECK_EQ(prefetch(*s, "alpha").status, PD3_E_NOT_FOUND);
  // Rewriting a record in place with a new value of another length keeps the key right.
  REQUIRE(write(*s, a, 1000, kv_record("alpha", "three")) == PD3_OK);
  r = prefetch(*s, "alpha");
  CHECK(r.status == PD3_OK && as_string(r.data) == "three");
  // A partial write inside a value changes what the prefetch returns (it reads current bytes).
  const uint32_t value_off = 1000 + sizeof(pd3_kv_header) + 5;
  REQUIRE(write(*s, a, value_off, Bytes{'T', 'H'}) == PD3_OK);
  CHECK(as_string(prefetch(*s, "alpha").data) == "THree");
  // Keys of length 1 and 65535.
  const std::string longest(PD3_MAX_KEY_LEN, 'L');
  REQUIRE(write(*s, b, 0, concat({kv_record("x", "1"), kv_record(longest, "long key")})) == PD3_OK);
  CHECK(as_string(prefetch(*s, "x").data) == "1");
  r = prefetch(*s, longest);
  CHECK(r.status == PD3_OK && r.key == longest && as_string(r.data) == "long key");
  CHECK_EQ(prefetch(*s, longest.substr(1)).status, PD3_E_NOT_FOUND);
  // An empty key is not a key.
  CHECK_EQ(run(*s, request(PD3_OP_PREFETCH, 0, 0, 16, "", 0)).status, PD3_E_INVAL);
  // Deallocating the region: its keys stop answering; a new region with the same id does not
  // resurrect them.
  REQUIRE(deallocate(*s, b) == PD3_OK);
  CHECK_EQ(prefetch(*s, "x").status, PD3_E_NOT_FOUND);
  REQUIRE(write(*s, a, 0, kv_record("y", "why")) == PD3_OK);
  REQUIRE(must_allocate(*s, 1 << 17) == b);
  CHECK_EQ(prefetch(*s, longest).status, PD3_E_NOT_FOUND);
  CHECK(as_string(prefetch(*s, "y").data) == "why");
}

TEST(memstore_index_only_written_range) {
  // A record whose header and key are written but whose value runs past the written bytes must not
  // be indexed, even when the region bytes after the write happen to complete it.
  auto s = open_store(options());
  const uint32_t a = must_allocate(*s, 4096);
  const Bytes old_rec = kv_record("old-key", std::string(40, 'o'));
  REQUIRE(write(*s, a, 100, old_rec) == PD3_OK);
  const Bytes new_rec = kv_record("new-key", std::string(40, 'n'));
  REQUIRE(new_rec.size() == old_rec.size());
  REQUIRE(write(*s, a, 100, Bytes(new_rec.begin(), new_rec.begin() + 30)) == PD3_OK);
  // The region now holds a complete "new-key" record at 100 (header and key new, value old).
  const Reply r = read(*s, a, 100, uint32_t(new_rec.size()));
  uint64_t pos = 0;
  pd3_kv_entry e;
  REQUIRE(pd3_kv_next(r.data.data(), r.data.size(), &pos, &e) == 1);
  CHECK_EQ(prefetch(*s, "new-key").status, PD3_E_NOT_FOUND);
  CHECK_EQ(prefetch(*s, "old-key").status, PD3_E_NOT_FOUND);  // its bytes were overwritten
  // A record that ends exactly at the end of the region is complete and indexed.
  const Bytes tail = kv_record("tail", std::string(4096 - 300 - 12, 't'));
  REQUIRE(write(*s, a, 300, tail) == PD3_OK);
  CHECK_EQ(prefetch(*s, "tail").status, PD3_OK);
}

TEST(memstore_fuzz_write_payloads) {
  // Random and half-valid WRITE payloads against a model of the region bytes and of the index
  // (records parsed from the written bytes only; a stale entry is removed at its next prefetch).
  constexpr uint32_t kCap = 1 << 16;
  auto s = open_store(options());
  const uint32_t a = must_allocate(*s, kCap);
  Bytes shadow(kCap, 0);
  std::unordered_map<std::string, uint32_t> model;
  std::vector<std::string> known;
  std::vector<std::string> pool;
  pd3test::Rng rng(2024);
  for (int i = 0; i < 400; ++i) {
    std::string k(1 + rng.below(i % 50 == 0 ? 300 : 20), '\0');
    for (char& c : k) c = char('a' + rng.below(4));  // a small alphabet: keys that share prefixes
    pool.push_back(k);
  }
  pd3test::Errors errs{"memstore-fuzz"};
  const auto expect_prefetch = [&](const std::string& key, uint32_t max) {
    int status = PD3_E_NOT_FOUND;
    uint32_t size = 0;
    Bytes value;
    if (auto it = model.find(key); it != model.end()) {
      uint64_t pos = it->second;
      pd3_kv_entry e;
      if (pd3_kv_next(shadow.data(), kCap, &pos, &e) && e.key_len == key.size() &&
          std::memcmp(shadow.data() + e.key_off, key.data(), key.size()) == 0) {
        size = e.value_len;
        status = e.value_len > max ? PD3_E_DEST_SMALL : PD3_OK;
        if (status == PD3_OK) value.assign(shadow.begin() + long(e.value_off), shadow.begin() + long(e.value_off + e.value_len));
      } else {
        model.erase(it);
      }
    }
    const Reply r = prefetch(*s, key, max);
    if (r.status != status || r.size != size || r.data != value || r.key != key)
      errs.fail("prefetch of a %zu-byte key: status %d size %u, expected %d size %u", key.size(), r.status, r.size,
                status, size);
  };
  const uint64_t iters = env_iters("PD3_FUZZ_ITERS", 100000);
  for (uint64_t it = 0; it < iters; ++it) {
    const uint32_t dice = rng.below(100);
    if (dice < 15) {
      const bool from_known = !known.empty() && rng.below(5) != 0;
      std::string key = from_known ? known[rng.below(uint32_t(known.size()))] : pool[rng.below(uint32_t(pool.size()))] + "#";
      expect_prefetch(key, rng.below(4) == 0 ? rng.below(48) : 1024);
      continue;
    }
    Bytes payload;
    if (dice < 45) {  // random bytes
      payload.resize(1 + rng.below(256));
      for (auto& b : payload) b = uint8_t(rng.next());
    } else {  // records, some malformed, cut at a random length, sometimes entered mid-record
      const uint32_t want = 1 + rng.below(600);
      while (payload.size() < want) {
        const uint32_t kind = rng.below(100);
        if (kind < 85) {
          const std::string& key = pool[rng.below(uint32_t(pool.size()))];
          std::string value(rng.below(48), '\0');
          for (char& c : value) c = char(rng.next());
          const Bytes rec = kv_record(key, value);
          payload.insert(payload.end(), rec.begin(), rec.end());
        } else {
          const pd3_kv_header h{kind < 90 ? 0u : kind < 95 ? PD3_MAX_KEY_LEN + 1 + rng.below(1000) : 5u,
                                kind < 95 ? rng.below(10) : 0x7FFFFFFFu};
          const uint8_t* p = reinterpret_cast<const uint8_t*>(&h);
          payload.insert(payload.end(), p, p + sizeof h);
          for (int i = 0; i < 5; ++i) payload.push_back(uint8_t('a' + rng.below(4)));
        }
      }
      const uint32_t skip = rng.below(4) == 0 ? rng.below(uint32_t(payload.size())) : 0;
      payload.erase(payload.begin(), payload.begin() + skip);
      payload.resize(1 + rng.below(uint32_t(payload.size())));
    }
    if (payload.size() > kCap) payload.resize(kCap);
    const uint32_t off = rng.below(kCap - uint32_t(payload.size()) + 1);
    if (rng.below(100) == 0) {  // out of range, or a bad region: nothing changes
      const bool bad_region = rng.below(2) == 0;
      const int st = write(*s, bad_region ? region_id(9) : a, bad_region ? off : kCap - uint32_t(payload.size()) + 1, payload);
      if (st != (bad_region ? PD3_E_BAD_REGION : PD3_E_RANGE)) errs.fail("bad write answered %d", st);
      continue;
    }
    if (write(*s, a, off, payload) != PD3_OK) errs.fail("write of %zu bytes at %u refused", payload.size(), off);
    std::memcpy(shadow.data() + off, payload.data(), payload.size());
    uint64_t pos = 0;
    pd3_kv_entry e;
    while (pd3_kv_next(payload.data(), payload.size(), &pos, &e)) {
      std::string key(reinterpret_cast<const char*>(payload.data() + e.key_off), e.key_len);
      model[key] = uint32_t(off + e.record_off);
      known.push_back(std::move(key));
    }
    if (known.size() > 100000) known.erase(known.begin(), known.begin() + 50000);
  }
  CHECK_EQ(errs.n, 0u);
  CHECK(model.size() > 100);
  const Reply r = read(*s, a, 0, kCap);
  CHECK(r.status == PD3_OK && r.data == shadow);
  CHECK_EQ(s->stats().index_keys, uint64_t(model.size()));
}

TEST(memstore_persists_across_reopen) {
  TempDir d("store");
  REQUIRE(!d.path.empty());
  MemStoreOptions o = options(64u << 20, d.path);
  o.index_initial_keys = 64;  // several index growths, each a new file renamed over the old one
  std::vector<std::string> keys;
  uint32_t a = 0, b = 0, gone = 0;
  {
    auto s = open_store(o);
    a = must_allocate(*s, 1 << 20);
    gone = must_allocate(*s, 8192);
    b = must_allocate(*s, 1 << 19);
    for (uint32_t i = 0; i < 5000; ++i) {
      keys.push_back("key-" + std::to_string(i));
      REQUIRE(write(*s, i % 3 ? a : b, i * 64, kv_record(keys.back(), "value-" + std::to_string(i * 7))) == PD3_OK);
    }
    REQUIRE(write(*s, gone, 0, kv_record("in-gone", "x")) == PD3_OK);
    CHECK(d.has("region-2.pd3"));
    REQUIRE(deallocate(*s, gone) == PD3_OK);
    CHECK(!d.has("region-2.pd3"));
    CHECK_EQ(s->sync(), PD3_OK);
    CHECK(s->stats().syncs >= 3);
    CHECK(s->stats().index_bytes > 64 * 16);
    // A second server may not open the same directory meanwhile.
    std::unique_ptr<MemStore> other;
    CHECK_EQ(MemStore::open(o, &other), PD3_E_INVAL);
    CHECK(std::strstr(pd3_last_error(), "in use") != nullptr);
  }
  for (const std::string& name : d.names()) CHECK(name.find(".tmp") == std::string::npos);
  auto s = open_store(o);
  const pd3::MemStoreStats st = s->stats();
  CHECK_EQ(st.regions, 2u);
  CHECK_EQ(st.allocated_bytes, uint64_t((1 << 20) + (1 << 19)));
  CHECK_EQ(st.index_keys, 5000u + 1);  // "in-gone" stays until a rebuild or its next prefetch
  CHECK_EQ(read(*s, gone, 0, 8).status, PD3_E_BAD_REGION);
  CHECK_EQ(prefetch(*s, "in-gone").status, PD3_E_NOT_FOUND);
  uint64_t wrong = 0;
  for (uint32_t i = 0; i < 5000; ++i) {
    const Reply r = prefetch(*s, keys[i]);
    wrong += r.status != PD3_OK || as_string(r.data) != "value-" + std::to_string(i * 7);
    const Bytes rec = kv_record(keys[i], "value-" + std::to_string(i * 7));
    wrong += read(*s, i % 3 ? a : b, i * 64, uint32_t(rec.size())).data != rec;
  }
  CHECK_EQ(wrong, 0u);
  // The freed id is handed out again, as a fresh file.
  CHECK_EQ(must_allocate(*s, 4096), gone);
  CHECK(read(*s, gone, 0, 16).data == Bytes(16, 0));
}

TEST(memstore_sync_modes) {
  // kBatch: one msync per written region and one for the index, only for what changed.
  TempDir d("store");
  auto s = open_store(options(64u << 20, d.path, SyncMode::kBatch));
  const uint32_t a = must_allocate(*s, 1 << 20), b = must_allocate(*s, 1 << 20);
  CHECK_EQ(s->sync(), PD3_OK);
  CHECK_EQ(s->stats().syncs, 0u);
  REQUIRE(write(*s, a, 0, Bytes(100, 1)) == PD3_OK);
  REQUIRE(write(*s, a, 900000, Bytes(100, 1)) == PD3_OK);
  REQUIRE(write(*s, b, 4096, kv_record("k", "v")) == PD3_OK);
  CHECK_EQ(s->sync(), PD3_OK);
  CHECK_EQ(s->stats().syncs, 3u);
  CHECK_EQ(s->sync(), PD3_OK);
  CHECK_EQ(s->stats().syncs, 3u);
  REQUIRE(write(*s, a, 0, Bytes(10, 2)) == PD3_OK);  // no records: only the region
  CHECK_EQ(s->sync(), PD3_OK);
  CHECK_EQ(s->stats().syncs, 4u);
  // A region written and then freed before the sync is skipped.
  REQUIRE(write(*s, b, 0, Bytes(10, 2)) == PD3_OK);
  REQUIRE(deallocate(*s, b) == PD3_OK);
  CHECK_EQ(s->sync(), PD3_OK);
  CHECK_EQ(s->stats().syncs, 4u);
  s.reset();
  // kNone: sync() does nothing, yet a clean close and reopen keeps everything (page cache).
  TempDir d2("store");
  {
    auto n = open_store(options(64u << 20, d2.path, SyncMode::kNone));
    const uint32_t c = must_allocate(*n, 4096);
    REQUIRE(write(*n, c, 8, kv_record("kept", "yes")) == PD3_OK);
    CHECK_EQ(n->sync(), PD3_OK);
    CHECK_EQ(n->stats().syncs, 0u);
  }
  auto n = open_store(options(64u << 20, d2.path, SyncMode::kNone));
  CHECK(as_string(prefetch(*n, "kept").data) == "yes");
}

namespace {

// Key and value of the i-th record of memstore_survives_sigkill.
std::string writer_key(uint32_t i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "k%u", i);
  return buf;
}
std::string writer_value(uint32_t i) { return std::string(8 + i % 40, char('A' + i % 26)); }

// The forked writer of memstore_survives_sigkill: frames of 4 record writes, each acknowledged on
// `ack_fd` (the frame number) only after sync() returned; at frame `kill_frame` it writes one more
// frame without syncing and SIGKILLs itself. Exit codes 2.. report a failure before that.
[[noreturn]] void sigkill_writer(const MemStoreOptions& o, int ack_fd, uint32_t kill_frame) {
  std::unique_ptr<MemStore> s;
  if (MemStore::open(o, &s) != PD3_OK) _exit(2);
  Bytes buf;
  const auto exec = [&](const TransportRequest& req) {
    buf.clear();
    pd3::FrameBuilder fb(&buf);
    s->execute(req, &fb);
    pd3::TransportResponse r;
    if (pd3::decode_response(buf.data(), buf.size(), &r) != PD3_OK || r.status != 0) _exit(3);
  };
  exec(request(PD3_OP_CONTROL, PD3_CTL_ALLOCATE, 0, 1 << 20));
  exec(request(PD3_OP_CONTROL, PD3_CTL_ALLOCATE, 0, 1 << 20));
  for (uint32_t frame = 0;; ++frame) {
    for (uint32_t i = frame * 4; i < frame * 4 + 4; ++i) {
      const Bytes rec = kv_record(writer_key(i), writer_value(i));
      exec(request(PD3_OP_WRITE, region_id(1 + i % 2), (i / 2) * 64, uint32_t(rec.size()), rec.data(), uint32_t(rec.size())));
    }
    if (frame == kill_frame + 1) kill(getpid(), SIGKILL);
    if (frame > kill_frame) continue;
    if (s->sync() != PD3_OK) _exit(4);
    if (::write(ack_fd, &frame, sizeof frame) != sizeof frame) _exit(5);
  }
}

}  // namespace

TEST(memstore_survives_sigkill) {
  TempDir d("store");
  REQUIRE(!d.path.empty());
  MemStoreOptions o = options(64u << 20, d.path, SyncMode::kBatch);
  o.index_initial_keys = 64;  // the index file is replaced (grown) several times during the run
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  pd3test::Rng rng{uint64_t(getpid())};
  const uint32_t kill_frame = 60 + rng.below(60);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    sigkill_writer(o, fds[1], kill_frame);
  }
  close(fds[1]);
  uint32_t frame = 0, acked = 0;
  bool any = false;
  while (read(fds[0], &frame, sizeof frame) == ssize_t(sizeof frame)) {
    CHECK_EQ(frame, any ? acked : 0u);
    acked = frame + 1;
    any = true;
  }
  close(fds[0]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  if (!WIFSIGNALED(status)) std::fprintf(stderr, "  writer exited with %d\n", WEXITSTATUS(status));
  REQUIRE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  CHECK_EQ(acked, kill_frame + 1);
  auto s = open_store(o);
  uint64_t lost = 0;
  for (uint32_t i = 0; i < acked * 4; ++i) {
    const std::string key = writer_key(i), value = writer_value(i);
    const Bytes rec = kv_record(key, value);
    const Reply r = read(*s, region_id(1 + i % 2), (i / 2) * 64, uint32_t(rec.size()));
    const Reply p = prefetch(*s, key);
    if (r.data != rec || p.status != PD3_OK || as_string(p.data) != value) ++lost;
  }
  CHECK_EQ(lost, 0u);
  CHECK(s->stats().index_keys >= acked * 4);
}

TEST(memstore_refuses_foreign_or_damaged_dirs) {
  TempDir d("store");
  REQUIRE(!d.path.empty());
  MemStoreOptions o = options(64u << 20, d.path);
  o.index_initial_keys = 16;  // a 64-slot index file: 4096 + 1024 bytes
  {
    auto s = open_store(o);
    const uint32_t a = must_allocate(*s, 8192);
    REQUIRE(write(*s, a, 0, concat({kv_record("k1", "v1"), kv_record("k2", "v2")})) == PD3_OK);
  }
  const std::string index = d.file("index.pd3");
  struct stat st;
  REQUIRE(stat(index.c_str(), &st) == 0);
  CHECK_EQ(uint64_t(st.st_size), 4096u + 64 * 16);
  Bytes good(size_t(st.st_size));
  {
    const int fd = ::open(index.c_str(), O_RDONLY);
    REQUIRE(fd >= 0 && ::read(fd, good.data(), good.size()) == ssize_t(good.size()));
    close(fd);
  }
  const auto put_index = [&](const Bytes& bytes) {
    const int fd = ::open(index.c_str(), O_WRONLY | O_TRUNC);
    REQUIRE(fd >= 0 && ::write(fd, bytes.data(), bytes.size()) == ssize_t(bytes.size()));
    close(fd);
  };
  const auto refused = [&](const MemStoreOptions& opts, int want, const char* why) {
    std::unique_ptr<MemStore> s;
    const int rc = MemStore::open(opts, &s);
    if (rc != want || s != nullptr || std::strstr(pd3_last_error(), why) == nullptr) {
      std::fprintf(stderr, "  open gave %d (%s), expected %d mentioning '%s'\n", rc, pd3_last_error(), want, why);
      CHECK(false);
    }
  };
  // Another server's directory.
  MemStoreOptions other = o;
  other.server_id = kServer + 1;
  refused(other, PD3_E_INVAL, "belongs to memory server 2");
  // Damaged index headers and sizes.
  Bytes bad = good;
  bad[0] ^= 0xFF;
  put_index(bad);
  refused(o, PD3_E_CORRUPT, "bad magic");
  bad = good;
  bad[8] = 99;  // version
  put_index(bad);
  refused(o, PD3_E_CORRUPT, "version");
  bad = good;
  bad[8] = 1;  // an index written with 16-bit region ids: refused, never misread
  put_index(bad);
  refused(o, PD3_E_CORRUPT, "written before region ids were 32-bit");
  bad = good;
  const uint64_t slots = 100;
  std::memcpy(bad.data() + 16, &slots, 8);
  put_index(bad);
  refused(o, PD3_E_CORRUPT, "slots");
  put_index(Bytes(good.begin(), good.end() - 16));
  refused(o, PD3_E_CORRUPT, "truncated");
  put_index(Bytes(good.begin(), good.begin() + 10));
  refused(o, PD3_E_CORRUPT, "not a PD3 index");
  put_index(Bytes{});
  refused(o, PD3_E_CORRUPT, "not a PD3 index");
  bad = good;
  for (uint64_t i = 0; i < 64; ++i) {  // every slot in use: probes would never end
    const uint64_t h = 1000 + i;
    std::memcpy(bad.data() + 4096 + i * 16, &h, 8);
  }
  put_index(bad);
  refused(o, PD3_E_CORRUPT, "more than 3/4");
  // Wrong counts in the header are repaired from the slots.
  bad = good;
  const uint64_t keys = 12345;
  std::memcpy(bad.data() + 24, &keys, 8);
  put_index(bad);
  {
    auto s = open_store(o);
    CHECK_EQ(s->stats().index_keys, 2u);
    CHECK(as_string(prefetch(*s, "k2").data) == "v2");
  }
  // Garbage addresses in the slots: prefetches miss, never crash or answer with other bytes.
  bad = good;
  pd3test::Rng rng(5);
  for (uint64_t i = 0; i < 64; ++i) {
    const uint64_t addr = rng.next();
    std::memcpy(bad.data() + 4096 + i * 16 + 8, &addr, 8);
  }
  put_index(bad);
  {
    auto s = open_store(o);
    CHECK_EQ(prefetch(*s, "k1").status, PD3_E_NOT_FOUND);
    CHECK_EQ(prefetch(*s, "k2").status, PD3_E_NOT_FOUND);
  }
  put_index(good);
  // Region files that cannot be regions.
  const auto put_file = [&](const std::string& name, size_t bytes) {
    const int fd = ::open(d.file(name).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    REQUIRE(fd >= 0 && ftruncate(fd, off_t(bytes)) == 0);
    close(fd);
  };
  put_file("region-9.pd3", 100);
  refused(o, PD3_E_CORRUPT, "region-9.pd3");
  put_file("region-9.pd3", 0);
  refused(o, PD3_E_CORRUPT, "region-9.pd3");
  unlink(d.file("region-9.pd3").c_str());
  // Leftovers of an interrupted creation are removed, and files that are not canonical region
  // names are ignored.
  put_file("region-5.pd3.tmp", 4096);
  put_file("index.pd3.tmp", 4096);
  put_file("region-07.pd3", 4096);
  put_file("region-0.pd3", 4096);
  put_file("region-65536.pd3", 4096);  // past the largest local id
  put_file("region-65535.pd3", 4096);  // the largest local id: a region
  {
    auto s = open_store(o);
    CHECK_EQ(s->stats().regions, 2u);
    CHECK_EQ(read(*s, region_id(5), 0, 8).status, PD3_E_BAD_REGION);
    CHECK_EQ(read(*s, region_id(7), 0, 8).status, PD3_E_BAD_REGION);
    CHECK_EQ(read(*s, region_id(65535), 0, 8).status, PD3_OK);
    CHECK(as_string(prefetch(*s, "k1").data) == "v1");
    // The ids between the loaded files are free, lowest first.
    CHECK_EQ(pd3_region_local(must_allocate(*s, 4096)), 2u);
  }
  CHECK(!d.has("region-5.pd3.tmp") && !d.has("index.pd3.tmp"));
  unlink(d.file("region-65535.pd3").c_str());
  unlink(d.file("region-2.pd3").c_str());
  // Region files without their index: refused, and no index is made up for them.
  unlink(index.c_str());
  refused(o, PD3_E_CORRUPT, "no index.pd3");
  CHECK(!d.has("index.pd3"));
}

// ---- tenants (docs/pool.md "Tenants and credentials") --------------------------------------------

TEST(memstore_tenants_reach_only_their_own_regions) {
  auto s = open_store(options());
  const pd3::Tenant a = pd3::Tenant::named("alpha"), b = pd3::Tenant::named("beta");
  const uint32_t ra = must_allocate(*s, 4096, nullptr, a);
  const uint32_t rb = must_allocate(*s, 4096, nullptr, b);
  const uint32_t rd = must_allocate(*s, 4096);  // the default tenant's
  // Both tenants write the same key, with different values, into their own regions.
  CHECK_EQ(write(*s, ra, 0, kv_record("user:1", "value-of-alpha"), a), PD3_OK);
  CHECK_EQ(write(*s, rb, 0, kv_record("user:1", "value-of-beta"), b), PD3_OK);
  CHECK(as_string(prefetch(*s, "user:1", 1u << 20, a).data) == "value-of-alpha");
  CHECK(as_string(prefetch(*s, "user:1", 1u << 20, b).data) == "value-of-beta");
  // The default tenant wrote nothing under that key, so it finds nothing.
  CHECK_EQ(prefetch(*s, "user:1").status, PD3_E_NOT_FOUND);
  // A region of another tenant: a status, never bytes, and nothing changes.
  const Reply foreign = read(*s, ra, 0, 64, b);
  CHECK_EQ(foreign.status, PD3_E_FORBIDDEN);
  CHECK(foreign.data.empty());
  CHECK_EQ(read(*s, rb, 0, 64).status, PD3_E_FORBIDDEN);
  CHECK_EQ(read(*s, rd, 0, 64, a).status, PD3_E_FORBIDDEN);
  CHECK_EQ(write(*s, ra, 0, kv_record("user:1", "overwritten-by-b"), b), PD3_E_FORBIDDEN);
  CHECK_EQ(deallocate(*s, ra, b), PD3_E_FORBIDDEN);
  CHECK(as_string(prefetch(*s, "user:1", 1u << 20, a).data) == "value-of-alpha");
  CHECK(stats_text(*s).find("tenant_refusals=5") != std::string::npos);
  // The owner may free its region; then it is simply gone for everyone.
  CHECK_EQ(deallocate(*s, ra, a), PD3_OK);
  CHECK_EQ(read(*s, ra, 0, 64, b).status, PD3_E_BAD_REGION);
  CHECK_EQ(prefetch(*s, "user:1", 1u << 20, a).status, PD3_E_NOT_FOUND);
  CHECK(as_string(prefetch(*s, "user:1", 1u << 20, b).data) == "value-of-beta");
}

TEST(memstore_tenant_usage_and_reclaim) {
  TempDir dir("store");
  auto s = open_store(options(64u << 20, dir.path));
  const pd3::Tenant dead = pd3::Tenant::named("dead-client"), live = pd3::Tenant::named("live-client");
  std::vector<uint32_t> dead_regions;
  for (int i = 0; i < 3; ++i) dead_regions.push_back(must_allocate(*s, 8192, nullptr, dead));
  const uint32_t kept = must_allocate(*s, 4096, nullptr, live);
  for (int i = 0; i < 50; ++i) {
    const std::string key = std::string("k").append(std::to_string(i));  // not "k" + ...: a false -Wrestrict in g++ 12
    CHECK_EQ(write(*s, dead_regions[size_t(i) % 3], uint32_t(i / 3) * 64, kv_record(key, "v"), dead), PD3_OK);
  }
  CHECK_EQ(write(*s, kept, 0, kv_record("k0", "live"), live), PD3_OK);
  REQUIRE(s->sync() == PD3_OK);
  const std::vector<pd3::TenantUsage> usage = s->tenant_usage();
  REQUIRE(usage.size() == 2);
  CHECK(usage[0].tenant == std::string("dead-client"));
  CHECK_EQ(usage[0].regions, 3u);
  CHECK_EQ(usage[0].bytes, 3u * 8192);
  CHECK(usage[1].tenant == std::string("live-client"));
  CHECK(dir.has("region-1@dead-client.pd3"));
  const uint64_t keys_before = s->stats().index_keys;

  pd3::ReclaimResult freed;
  REQUIRE(s->reclaim_tenant("dead-client", &freed) == PD3_OK);
  CHECK_EQ(freed.regions, 3u);
  CHECK_EQ(freed.bytes, 3u * 8192);
  CHECK_EQ(freed.index_entries, 50u);
  CHECK_EQ(s->stats().index_keys, keys_before - 50);
  CHECK_EQ(s->stats().allocated_bytes, 4096u);
  CHECK(!dir.has("region-1@dead-client.pd3"));
  for (uint32_t r : dead_regions) CHECK_EQ(read(*s, r, 0, 8, dead).status, PD3_E_BAD_REGION);
  CHECK_EQ(prefetch(*s, "k1", 1u << 20, dead).status, PD3_E_NOT_FOUND);
  CHECK(as_string(prefetch(*s, "k0", 1u << 20, live).data) == "live");
  // Reclaiming a tenant with nothing left frees nothing.
  pd3::ReclaimResult again;
  CHECK_EQ(s->reclaim_tenant("dead-client", &again), PD3_OK);
  CHECK_EQ(again.regions, 0u);
}

TEST(memstore_tenant_ownership_survives_reopen) {
  TempDir dir("store");
  const pd3::Tenant a = pd3::Tenant::named("alpha"), b = pd3::Tenant::named("beta");
  uint32_t ra = 0;
  {
    auto s = open_store(options(64u << 20, dir.path));
    ra = must_allocate(*s, 4096, nullptr, a);
    CHECK_EQ(write(*s, ra, 0, kv_record("key", "alpha's"), a), PD3_OK);
    REQUIRE(s->sync() == PD3_OK);
  }
  auto s = open_store(options(64u << 20, dir.path));
  CHECK_EQ(read(*s, ra, 0, 8, b).status, PD3_E_FORBIDDEN);
  CHECK_EQ(read(*s, ra, 0, 8).status, PD3_E_FORBIDDEN);
  CHECK_EQ(prefetch(*s, "key", 1u << 20, b).status, PD3_E_NOT_FOUND);
  CHECK(as_string(prefetch(*s, "key", 1u << 20, a).data) == "alpha's");
}

TEST(memstore_region_file_names_with_tenants) {
  using pd3::RegionTable;
  std::string tenant = "unchanged";
  CHECK(RegionTable::file_name(7, "") == std::string("region-7.pd3"));
  CHECK(RegionTable::file_name(7, "t-1") == std::string("region-7@t-1.pd3"));
  CHECK_EQ(RegionTable::parse_file_name("region-7@t-1.pd3", &tenant), 7u);
  CHECK(tenant == std::string("t-1"));
  CHECK_EQ(RegionTable::parse_file_name("region-7.pd3", &tenant), 7u);
  CHECK(tenant == std::string(""));
  // Not region files: an empty or invalid owner, a second '@', a non-canonical number.
  for (const char* bad : {"region-7@.pd3", "region-7@a/b.pd3", "region-7@a@b.pd3", "region-07@a.pd3", "region-@a.pd3",
                          "region-7@a b.pd3"})
    CHECK_EQ(RegionTable::parse_file_name(bad, &tenant), 0u);
}

// ---- giving memory back under pressure (docs/pool.md "Giving memory back") -------------------------

namespace {
void write_meminfo(const std::string& path, uint64_t total_kib, uint64_t available_kib) {
  FILE* f = std::fopen(path.c_str(), "w");
  REQUIRE(f != nullptr);
  std::fprintf(f, "MemTotal: %llu kB\nMemFree: 1 kB\nMemAvailable: %llu kB\n", (unsigned long long)total_kib,
               (unsigned long long)available_kib);
  std::fclose(f);
}
}  // namespace

TEST(memstore_gives_cold_regions_back_under_pressure) {
  TempDir dir("store"), side("store");
  const std::string meminfo = side.file("meminfo");
  write_meminfo(meminfo, 1u << 20, 1u << 19);  // 1 GiB total, half available: no pressure at 15 %
  MemStoreOptions o = options(64u << 20, dir.path);
  o.meminfo_path = meminfo;
  auto s = open_store(o);
  constexpr uint32_t kBytes = 1u << 20;
  const uint32_t cold = must_allocate(*s, kBytes), hot = must_allocate(*s, kBytes);
  Bytes pattern(kBytes);
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = uint8_t(i * 7 + 3);
  CHECK_EQ(write(*s, cold, 0, pattern), PD3_OK);
  CHECK_EQ(write(*s, hot, 0, pattern), PD3_OK);
  REQUIRE(s->sync() == PD3_OK);
  CHECK_EQ(read(*s, hot, 0, 16).status, PD3_OK);  // hot is the more recently used

  pd3::PressureResult r;
  REQUIRE(s->relieve_pressure(&r) == PD3_OK);
  CHECK_EQ(r.regions, 0u);
  CHECK_EQ(r.total_bytes, uint64_t(1u << 30));

  // 512 KiB short of the 15 % headroom: the coldest region alone covers it.
  const uint64_t floor_kib = uint64_t(double(1u << 20) * 0.15);
  write_meminfo(meminfo, 1u << 20, floor_kib - 512);
  REQUIRE(s->relieve_pressure(&r) == PD3_OK);
  CHECK(r.wanted_bytes >= 512u * 1024 && r.wanted_bytes < 513u * 1024);  // 15 % of MemTotal, in bytes
  CHECK_EQ(r.regions, 1u);
  CHECK(r.released_bytes >= 512u * 1024);
  const pd3::MemStoreStats st = s->stats();
  CHECK_EQ(st.given_back_regions, 1u);
  CHECK_EQ(st.given_back_bytes, r.released_bytes);
  CHECK_EQ(st.pressure_events, 1u);
  // Served from the file now: the same bytes, and counted.
  const Reply back = read(*s, cold, 0, kBytes);
  CHECK_EQ(back.status, PD3_OK);
  CHECK(back.data == pattern);
  CHECK_EQ(s->stats().file_reads, 1u);
  CHECK(s->stats().file_read_bytes >= 512u * 1024);
  // The hot region was left alone: reading it touches no file.
  CHECK_EQ(read(*s, hot, 0, kBytes).status, PD3_OK);
  CHECK_EQ(s->stats().file_reads, 1u);
  // Writes to a given-back region land, and survive a reopen.
  CHECK_EQ(write(*s, cold, 4096, kv_record("k", "after")), PD3_OK);
  REQUIRE(s->sync() == PD3_OK);
  s.reset();
  auto again = open_store(o);
  CHECK(as_string(prefetch(*again, "k").data) == "after");
  CHECK(read(*again, cold, 0, 4096).data == Bytes(pattern.begin(), pattern.begin() + 4096));
}

TEST(memstore_give_back_needs_a_data_dir_and_a_meminfo) {
  TempDir side("store");
  const std::string meminfo = side.file("meminfo");
  write_meminfo(meminfo, 1u << 20, 1);  // far under any headroom
  MemStoreOptions o = options();
  o.meminfo_path = meminfo;
  auto anon = open_store(o);
  must_allocate(*anon, 1u << 16);
  pd3::PressureResult r;
  REQUIRE(anon->relieve_pressure(&r) == PD3_OK);
  CHECK_EQ(r.regions, 0u);  // anonymous memory has no file to fall back on
  TempDir dir("store");
  MemStoreOptions off = options(64u << 20, dir.path);
  off.meminfo_path = meminfo;
  off.give_back = false;
  auto s = open_store(off);
  REQUIRE(s->relieve_pressure(&r) == PD3_OK);
  CHECK_EQ(r.total_bytes, 0u);  // not even read
  // A meminfo that cannot be read, or lacks a line, changes nothing.
  for (const char* text : {"", "MemTotal: 100 kB\n", "garbage\n"}) {
    FILE* f = std::fopen(meminfo.c_str(), "w");
    std::fputs(text, f);
    std::fclose(f);
    TempDir d2("store");
    MemStoreOptions on = options(64u << 20, d2.path);
    on.meminfo_path = meminfo;
    auto t = open_store(on);
    must_allocate(*t, 1u << 16);
    REQUIRE(t->relieve_pressure(&r) == PD3_OK);
    CHECK_EQ(r.regions, 0u);
  }
  o.meminfo_path = side.file("missing");
  auto missing = open_store(o);
  REQUIRE(missing->relieve_pressure(&r) == PD3_OK);
  CHECK_EQ(r.regions, 0u);
}

namespace {
int move_control(MemStore& s, uint32_t op, uint32_t region, const pd3::Tenant& t = {}) {
  return run(s, request(PD3_OP_CONTROL, op, region, 0), t).status;
}

uint64_t accesses_of(const MemStore& s, uint32_t region) {
  for (const pd3::RegionHeat& h : s.region_heat())
    if (h.id == region) return h.accesses;
  return ~0ull;
}
}  // namespace

// A region's move states (pd3/wire.h PD3_CTL_FREEZE/SEAL/THAW): frozen refuses writes only, sealed
// refuses every access and hides its keys from prefetches, thaw restores both; bad transitions,
// other tenants and unknown regions are refused, and nothing written is lost across them.
TEST(memstore_move_states) {
  auto s = open_store(options());
  const pd3::Tenant a = pd3::Tenant::named("alpha"), b = pd3::Tenant::named("beta");
  const uint32_t r = must_allocate(*s, 4096, nullptr, a);
  CHECK_EQ(write(*s, r, 0, kv_record("k", "before"), a), PD3_OK);
  CHECK_EQ(accesses_of(*s, r), 1u);
  // Bad transitions and bad callers change nothing.
  CHECK_EQ(move_control(*s, PD3_CTL_SEAL, r, a), PD3_E_INVAL);  // never sealed unfrozen
  CHECK_EQ(move_control(*s, PD3_CTL_THAW, r, a), PD3_E_INVAL);
  CHECK_EQ(move_control(*s, PD3_CTL_FREEZE, r, b), PD3_E_FORBIDDEN);
  CHECK_EQ(move_control(*s, PD3_CTL_FREEZE, r + 1, a), PD3_E_BAD_REGION);
  CHECK_EQ(move_control(*s, PD3_CTL_FREEZE, 0, a), PD3_E_BAD_REGION);
  CHECK_EQ(run(*s, request(PD3_OP_CONTROL, PD3_CTL_THAW + 1, r, 0), a).status, PD3_E_BAD_OP);
  CHECK_EQ(write(*s, r, 0, kv_record("k", "second"), a), PD3_OK);
  // Frozen: writes refused (and not applied), reads and prefetches served; freezing again is fine.
  CHECK_EQ(move_control(*s, PD3_CTL_FREEZE, r, a), PD3_OK);
  CHECK_EQ(move_control(*s, PD3_CTL_FREEZE, r, a), PD3_OK);
  CHECK_EQ(write(*s, r, 0, kv_record("k", "frozen"), a), PD3_E_MOVED);
  CHECK(as_string(prefetch(*s, "k", 1u << 20, a).data) == "second");
  CHECK_EQ(read(*s, r, 0, 16, a).status, PD3_OK);
  // Sealed: every access refused, keys missed; a freeze cannot reopen it.
  CHECK_EQ(move_control(*s, PD3_CTL_SEAL, r, a), PD3_OK);
  const Reply sealed = read(*s, r, 0, 16, a);
  CHECK_EQ(sealed.status, PD3_E_MOVED);
  CHECK(sealed.data.empty());
  CHECK_EQ(write(*s, r, 0, kv_record("k", "sealed"), a), PD3_E_MOVED);
  CHECK_EQ(prefetch(*s, "k", 1u << 20, a).status, PD3_E_NOT_FOUND);
  CHECK_EQ(move_control(*s, PD3_CTL_FREEZE, r, a), PD3_E_MOVED);
  CHECK_EQ(read(*s, r, 0, 16, b).status, PD3_E_FORBIDDEN);  // ownership still comes first
  // A thaw "if frozen" leaves a sealed region sealed.
  CHECK_EQ(run(*s, request(PD3_OP_CONTROL, PD3_CTL_THAW, r, PD3_THAW_IF_FROZEN), a).status, PD3_E_MOVED);
  CHECK_EQ(read(*s, r, 0, 16, a).status, PD3_E_MOVED);
  // Thawed (a move given up): serves as before, with the last acknowledged bytes.
  CHECK_EQ(move_control(*s, PD3_CTL_THAW, r, a), PD3_OK);
  CHECK(as_string(prefetch(*s, "k", 1u << 20, a).data) == "second");
  CHECK_EQ(write(*s, r, 0, kv_record("k", "after"), a), PD3_OK);
  CHECK(as_string(prefetch(*s, "k", 1u << 20, a).data) == "after");
  CHECK(stats_text(*s).find("errors=") != std::string::npos);
  CHECK_EQ(s->stats().moved_refusals, 6u);  // the frozen write, the sealed read, write and refreeze, the thaw if frozen, the read
  // A sealed region can still be freed by its owner (after a move's grace).
  // A thaw "if frozen" of a frozen region thaws it.
  CHECK_EQ(move_control(*s, PD3_CTL_FREEZE, r, a), PD3_OK);
  CHECK_EQ(run(*s, request(PD3_OP_CONTROL, PD3_CTL_THAW, r, PD3_THAW_IF_FROZEN), a).status, PD3_OK);
  CHECK_EQ(write(*s, r, 0, kv_record("k", "after"), a), PD3_OK);
  CHECK_EQ(move_control(*s, PD3_CTL_FREEZE, r, a), PD3_OK);
  CHECK_EQ(move_control(*s, PD3_CTL_SEAL, r, a), PD3_OK);
  CHECK_EQ(deallocate(*s, r, a), PD3_OK);
  CHECK_EQ(read(*s, r, 0, 16, a).status, PD3_E_BAD_REGION);
}

// Heat: every READ, WRITE and PREFETCH hit served counts once on its region; refusals do not.
TEST(memstore_region_heat_counts_served_accesses) {
  auto s = open_store(options());
  const uint32_t r1 = must_allocate(*s, 4096), r2 = must_allocate(*s, 4096);
  CHECK_EQ(write(*s, r1, 0, kv_record("hot", "v")), PD3_OK);
  for (int i = 0; i < 10; ++i) CHECK_EQ(read(*s, r1, 0, 8).status, PD3_OK);
  CHECK_EQ(prefetch(*s, "hot").status, PD3_OK);
  CHECK_EQ(prefetch(*s, "missing").status, PD3_E_NOT_FOUND);
  CHECK_EQ(read(*s, r2, 4096, 8).status, PD3_E_RANGE);
  CHECK_EQ(accesses_of(*s, r1), 12u);
  CHECK_EQ(accesses_of(*s, r2), 0u);
  CHECK_EQ(s->region_heat().size(), 2u);
}

// A sealed region stays sealed across a restart (its name may name the copy elsewhere by then); a
// frozen one is served again (the move was given up); freeing a sealed region removes its marker.
TEST(memstore_seal_survives_reopen) {
  TempDir d("store");
  REQUIRE(!d.path.empty());
  const MemStoreOptions o = options(64u << 20, d.path);
  const pd3::Tenant a = pd3::Tenant::named("alpha");
  uint32_t sealed = 0, frozen = 0, thawed = 0;
  {
    auto s = open_store(o);
    sealed = must_allocate(*s, 4096, nullptr, a);
    frozen = must_allocate(*s, 4096, nullptr, a);
    thawed = must_allocate(*s, 4096, nullptr, a);
    for (uint32_t r : {sealed, frozen, thawed}) REQUIRE(write(*s, r, 0, kv_record("k" + std::to_string(r), "v"), a) == PD3_OK);
    for (uint32_t r : {sealed, frozen, thawed}) REQUIRE(move_control(*s, PD3_CTL_FREEZE, r, a) == PD3_OK);
    REQUIRE(move_control(*s, PD3_CTL_SEAL, sealed, a) == PD3_OK);
    REQUIRE(move_control(*s, PD3_CTL_SEAL, thawed, a) == PD3_OK);
    REQUIRE(move_control(*s, PD3_CTL_THAW, thawed, a) == PD3_OK);
    CHECK(d.has("region-1@alpha.pd3.sealed"));
    CHECK(!d.has("region-3@alpha.pd3.sealed"));
  }
  {
    auto s = open_store(o);
    CHECK_EQ(s->stats().regions, 3u);
    CHECK_EQ(read(*s, sealed, 0, 8, a).status, PD3_E_MOVED);
    CHECK_EQ(write(*s, sealed, 0, kv_record("k", "lost?"), a), PD3_E_MOVED);
    CHECK_EQ(read(*s, frozen, 0, 8, a).status, PD3_OK);
    CHECK_EQ(write(*s, frozen, 0, kv_record("k", "again"), a), PD3_OK);
    CHECK_EQ(move_control(*s, PD3_CTL_SEAL, frozen, a), PD3_E_INVAL);  // a mover that went on would be refused
    CHECK_EQ(write(*s, thawed, 0, kv_record("k", "again"), a), PD3_OK);
    CHECK_EQ(deallocate(*s, sealed, a), PD3_OK);
    CHECK(!d.has("region-1@alpha.pd3.sealed"));
    CHECK(!d.has("region-1@alpha.pd3"));
  }
  auto s = open_store(o);
  CHECK_EQ(s->stats().regions, 2u);
}
