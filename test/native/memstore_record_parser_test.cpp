// memstore_record_parser_test.cpp — the memory server's index built with a parser plug-in's
// parse_record (MemStoreOptions::record_parser): a non-built-in record format indexed on WRITE and
// verified on PREFETCH, overwrite and deallocation, records straddling a write's end, the built-in
// parsers keeping the built-in format, a lying plug-in refused and counted for every kind of lie
// (on WRITE and on PREFETCH, randomized too), the refusals logged by the TCP server at a bounded
// rate, the checks on a pd3_record_key, and a restart from a data directory. Needs
// libpd3_example_record_parser.so and libpd3_lying_parser.so next to the test binary or in the
// directory of $PD3_EXAMPLE_PARSER.
#include <dirent.h>
#include <dlfcn.h>
#include <poll.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../plugins/lying_parser.hpp"
#include "common/net.hpp"
#include "common/transport_codec.hpp"
#include "common/unique_fd.hpp"
#include "harness.hpp"
#include "memserver/mem_store.hpp"
#include "memserver/record_parser.hpp"
#include "memserver/tcp_server.hpp"
#include "parsers/plugin_loader.hpp"
#include "parsers/record_keys.hpp"
#include "pd3/record.h"
#include "pd3/status.h"
#include "store_requests.hpp"
#include "util.hpp"

namespace {

using pd3test::TempDir;
using pd3test::kv_record;

using pd3::MemStore;
using pd3::MemStoreOptions;
using pd3::TransportRequest;
using pd3test::Lie;
using Bytes = std::vector<uint8_t>;

constexpr uint16_t kServer = 3;

using pd3test::plugin_dir;

// Loads the test plug-in lib<name>.so, failing the case with how to build it when it is missing.
pd3::ParserHandle load_plugin(const char* name) {
  const std::string path = plugin_dir() + "/lib" + name + ".so";
  pd3::ParserHandle h;
  const int rc = pd3::load_parser(path.c_str(), &h);
  if (rc != PD3_OK)
    std::fprintf(stderr, "  %s: %s (build the %s target, or set PD3_EXAMPLE_PARSER to a library in its directory)\n",
                 path.c_str(), pd3_last_error(), name);
  REQUIRE(rc == PD3_OK && h.is_plugin());
  return h;
}

// The lying plug-in's lie switch (the library is already loaded by load_plugin).
pd3test::SetLieFn lie_switch() {
  const std::string path = plugin_dir() + "/libpd3_lying_parser.so";
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(lib != nullptr);
  auto fn = reinterpret_cast<pd3test::SetLieFn>(dlsym(lib, pd3test::kSetLieSymbol));
  dlclose(lib);  // only drops the reference NOLOAD took: the store's handle keeps it loaded
  REQUIRE(fn != nullptr);
  return fn;
}


std::unique_ptr<MemStore> open_store(const pd3::ParserHandle& parser, const std::string& dir = "") {
  MemStoreOptions o;
  o.server_id = kServer;
  o.capacity = 64u << 20;
  o.data_dir = dir;
  o.index_initial_keys = 256;
  o.record_parser = parser;
  std::unique_ptr<MemStore> s;
  const int rc = MemStore::open(o, &s);
  if (rc != PD3_OK) std::fprintf(stderr, "  open: %s\n", pd3_last_error());
  REQUIRE(rc == PD3_OK);
  return s;
}

// One response record, its bytes copied out.
struct Reply {
  int status = 0;
  uint32_t size = 0;
  Bytes data;
};

Reply run(MemStore& s, uint32_t op, uint32_t region, uint32_t offset, uint32_t size, const void* data = nullptr,
          uint32_t data_len = 0) {
  const TransportRequest req = pd3test::request(op, region, offset, size, data, data_len);
  Bytes buf;
  pd3::FrameBuilder fb(&buf);
  s.execute(req, &fb);
  pd3::TransportResponse r;
  REQUIRE(fb.records() == 1 && pd3::decode_response(buf.data(), buf.size(), &r) == PD3_OK);
  return Reply{-int(r.status), r.size, Bytes(r.data, r.data + r.data_len)};
}

uint32_t allocate(MemStore& s, uint32_t bytes) {
  const Reply r = run(s, PD3_OP_CONTROL, PD3_CTL_ALLOCATE, 0, bytes);
  REQUIRE(r.status == PD3_OK && r.data.size() == sizeof(pd3_alloc_reply));
  pd3_alloc_reply a;
  std::memcpy(&a, r.data.data(), sizeof a);
  return a.region;
}

// Writes `bytes` from a heap copy of exactly their size, so ASan sees any read past them.
int write(MemStore& s, uint32_t region, uint32_t offset, const Bytes& bytes) {
  const std::unique_ptr<uint8_t[]> exact(new uint8_t[bytes.size()]);
  std::memcpy(exact.get(), bytes.data(), bytes.size());
  return run(s, PD3_OP_WRITE, region, offset, uint32_t(bytes.size()), exact.get(), uint32_t(bytes.size())).status;
}

Reply prefetch(MemStore& s, const std::string& key, uint32_t max_size = 1u << 20) {
  return run(s, PD3_OP_PREFETCH, 0, 0, max_size, key.data(), uint32_t(key.size()));
}

// "status:value" of a prefetch, for compact checks.
std::string fetched(MemStore& s, const std::string& key) {
  const Reply r = prefetch(s, key);
  return std::string(pd3_status_name(r.status)) + ":" + std::string(r.data.begin(), r.data.end());
}

// Copies `s` into out at `at` (the caller sized out).
void put(Bytes& out, size_t at, const std::string& s) {
  if (!s.empty()) std::memcpy(out.data() + at, s.data(), s.size());
}

// One record of the example plug-in's format (test/plugins/example_parser.cpp).
Bytes example_record(const std::string& key, const std::string& value) {
  Bytes out(7 + key.size() + value.size());
  out[0] = 0xE5;
  out[1] = uint8_t(key.size());
  out[2] = uint8_t(key.size() >> 8);
  put(out, 3, key);
  for (size_t i = 0; i < 4; ++i) out[3 + key.size() + i] = uint8_t(value.size() >> (8 * i));
  put(out, 7 + key.size(), value);
  return out;
}

// One record of the lying plug-in's honest format (test/plugins/lying_parser.cpp).
Bytes tiny_record(const std::string& key, const std::string& value) {
  Bytes out(2 + key.size() + value.size());
  out[0] = uint8_t(key.size());
  put(out, 1, key);
  out[1 + key.size()] = uint8_t(value.size());
  put(out, 2 + key.size(), value);
  return out;
}

Bytes concat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

const char* lie_name(Lie lie) {
  static const char* const names[] = {"honest", "key past record", "record past buffer", "value after record",
                                      "key after record", "empty key", "overlong key", "key offset wraps",
                                      "record offset wraps", "too many keys", "negative status", "positive status",
                                      "overlap"};
  return names[int(lie)];
}

}  // namespace

TEST(memstore_record_parser_indexes_a_plugin_format) {
  auto s = open_store(load_plugin("pd3_example_record_parser"));
  CHECK(!s->record_parser().builtin());
  CHECK(s->record_parser().name() == "example-lines");
  const uint32_t a = allocate(*s, 1 << 16);
  const uint32_t b = allocate(*s, 1 << 16);
  // Several records in one write; a zero byte ends them, so the record after it is not indexed.
  const Bytes batch = concat({example_record("alpha", "one"), example_record("beta", std::string(300, 'b')),
                              example_record("gamma", ""), Bytes{0}, example_record("hidden", "after the end")});
  REQUIRE(write(*s, a, 100, batch) == PD3_OK);
  CHECK(fetched(*s, "alpha") == "PD3_OK:one");
  CHECK(fetched(*s, "beta") == "PD3_OK:" + std::string(300, 'b'));
  CHECK(fetched(*s, "gamma") == "PD3_OK:");
  CHECK(fetched(*s, "hidden") == "PD3_E_NOT_FOUND:");
  CHECK_EQ(s->stats().index_keys, 3u);
  // The value's extent answers, cut to the requester's room: DEST_SMALL with the size.
  Reply r = prefetch(*s, "beta", 299);
  CHECK(r.status == PD3_E_DEST_SMALL && r.size == 300 && r.data.empty());
  // The built-in format means nothing to this parser.
  REQUIRE(write(*s, b, 0, kv_record("builtin-key", "v")) == PD3_OK);
  CHECK(fetched(*s, "builtin-key") == "PD3_E_NOT_FOUND:");
  // A newer record of a key elsewhere moves the key; overwriting it with other bytes loses it (the
  // entry goes too), never falling back to the older record.
  REQUIRE(write(*s, b, 4000, example_record("alpha", "two")) == PD3_OK);
  CHECK(fetched(*s, "alpha") == "PD3_OK:two");
  REQUIRE(write(*s, b, 4000, Bytes(16, 0x5A)) == PD3_OK);
  CHECK(fetched(*s, "alpha") == "PD3_E_NOT_FOUND:");
  CHECK_EQ(s->stats().index_keys, 2u);
  // A partial write inside a value is what the next prefetch answers (current bytes, re-parsed).
  const Bytes beta = example_record("beta", std::string(300, 'b'));
  const uint32_t beta_at = 100 + uint32_t(example_record("alpha", "one").size());
  REQUIRE(write(*s, a, beta_at + uint32_t(beta.size()) - 2, Bytes{'X', 'Y'}) == PD3_OK);
  CHECK(fetched(*s, "beta") == "PD3_OK:" + std::string(298, 'b') + "XY");
  // A record cut by the write's end is not indexed, even when the region's bytes complete it.
  const Bytes delta = example_record("delta", "four");
  REQUIRE(write(*s, b, 8000, delta) == PD3_OK);
  CHECK(fetched(*s, "delta") == "PD3_OK:four");
  const Bytes epsilon = example_record("delta", "FOUR");  // same length: the tail completes it
  REQUIRE(write(*s, b, 9000, Bytes(epsilon.begin(), epsilon.end() - 1)) == PD3_OK);
  REQUIRE(write(*s, b, 9000 + uint32_t(epsilon.size()) - 1, Bytes{epsilon.back()}) == PD3_OK);
  CHECK(fetched(*s, "delta") == "PD3_OK:four");  // still the record at 8000
  // A write that starts inside a record indexes nothing for it: its key stays where it was.
  REQUIRE(write(*s, b, 8000 + 3, Bytes{'d'}) == PD3_OK);
  CHECK(fetched(*s, "delta") == "PD3_OK:four");
  // Many records in one write: more than one batch of parse_record calls.
  Bytes many;
  for (int i = 0; i < 1000; ++i) {
    const Bytes rec = example_record("k" + std::to_string(i), "v" + std::to_string(i));
    many.insert(many.end(), rec.begin(), rec.end());
  }
  REQUIRE(write(*s, b, 20000, many) == PD3_OK);
  int found = 0;
  for (int i = 0; i < 1000; ++i) found += fetched(*s, "k" + std::to_string(i)) == "PD3_OK:v" + std::to_string(i);
  CHECK_EQ(found, 1000);
  // Deallocating a region: its keys stop answering, also once the id is handed out again.
  REQUIRE(run(*s, PD3_OP_CONTROL, PD3_CTL_DEALLOCATE, b, 0).status == PD3_OK);
  CHECK(fetched(*s, "k7") == "PD3_E_NOT_FOUND:");
  REQUIRE(allocate(*s, 1 << 16) == b);
  CHECK(fetched(*s, "delta") == "PD3_E_NOT_FOUND:");
  CHECK(fetched(*s, "gamma") == "PD3_OK:");
  CHECK_EQ(s->stats().record_parser_rejects, 0u);
}

TEST(memstore_record_parser_builtins_keep_the_builtin_format) {
  pd3::ParserHandle none;
  for (const char* name : {"", "resp", "binary"}) {
    pd3::ParserHandle h;
    if (*name) REQUIRE(pd3::load_parser(name, &h) == PD3_OK);
    auto s = open_store(*name ? h : none);
    CHECK(s->record_parser().builtin() && s->record_parser().name() == "builtin");
    const uint32_t a = allocate(*s, 4096);
    REQUIRE(write(*s, a, 0, concat({kv_record("x", "1"), kv_record("y", "22")})) == PD3_OK);
    CHECK(fetched(*s, "y") == "PD3_OK:22");
    CHECK(fetched(*s, "x") == "PD3_OK:1");
  }
  // The example plug-in built without parse_record also means the built-in format.
  auto s = open_store(load_plugin("pd3_example_parser"));
  CHECK(s->record_parser().builtin());
}

TEST(memstore_record_parser_refuses_every_lie_on_write) {
  auto s = open_store(load_plugin("pd3_lying_parser"));
  const pd3test::SetLieFn set_lie = lie_switch();
  const uint32_t a = allocate(*s, 1 << 20);
  uint64_t rejects = 0;
  for (int i = 1; i < int(Lie::kCount); ++i) {
    const Lie lie = Lie(i);
    const std::string k1 = std::string("one-") + char('a' + i), k2 = std::string("two-") + char('a' + i);
    // Two records ending at the write's (and the heap copy's) last byte; a long tail for the
    // overlong key, so that only its length is wrong.
    Bytes data = concat({tiny_record(k1, "v1"), tiny_record(k2, "v2")});
    if (lie == Lie::kOverlongKey) data = concat({data, Bytes(PD3_MAX_KEY_LEN + 100, 0)});
    set_lie(i);
    REQUIRE(write(*s, a, uint32_t(i) * 80000, data) == PD3_OK);  // the write itself always succeeds
    set_lie(int(Lie::kHonest));
    const bool refused = fetched(*s, k1) == "PD3_E_NOT_FOUND:" && fetched(*s, k2) == "PD3_E_NOT_FOUND:";
    const uint64_t now = s->stats().record_parser_rejects;
    if (!refused || now != rejects + 1 || s->stats().index_keys != 0 || s->record_parser().last_defect() == nullptr)
      std::fprintf(stderr, "  lie '%s' not refused (rejects %llu → %llu)\n", lie_name(lie),
                   (unsigned long long)rejects, (unsigned long long)now);
    CHECK(refused && now == rejects + 1);
    rejects = now;
  }
  CHECK(std::strstr(s->record_parser().last_defect(), "overlapping") != nullptr);  // the last lie told
  // Honest again: indexed and served.
  REQUIRE(write(*s, a, 0, concat({tiny_record("k", "v"), tiny_record("l", "w")})) == PD3_OK);
  CHECK(fetched(*s, "k") == "PD3_OK:v");
  CHECK(fetched(*s, "l") == "PD3_OK:w");
  CHECK_EQ(s->stats().record_parser_rejects, rejects);
}

TEST(memstore_record_parser_refuses_every_lie_on_prefetch) {
  // The record sits at the region's very end, so a lie pointing past it points past the mapping.
  auto s = open_store(load_plugin("pd3_lying_parser"));
  const pd3test::SetLieFn set_lie = lie_switch();
  constexpr uint32_t kCap = 8192;
  const uint32_t a = allocate(*s, kCap);
  const Bytes rec = tiny_record("key", "value");
  const uint32_t at = kCap - uint32_t(rec.size());
  uint64_t rejects = 0;
  for (int i = 1; i < int(Lie::kCount); ++i) {
    const Lie lie = Lie(i);
    set_lie(int(Lie::kHonest));
    REQUIRE(write(*s, a, at, rec) == PD3_OK);
    REQUIRE(s->stats().index_keys == 1);
    set_lie(i);
    const std::string got = fetched(*s, "key");
    set_lie(int(Lie::kHonest));
    const uint64_t now = s->stats().record_parser_rejects;
    // One record is asked for (max 1): the overlap lie has no second key to tell it with.
    if (lie == Lie::kOverlap) {
      CHECK(got == "PD3_OK:value" && now == rejects);
    } else {
      if (got != "PD3_E_NOT_FOUND:" || now != rejects + 1)
        std::fprintf(stderr, "  lie '%s' on prefetch: %s, rejects %llu → %llu\n", lie_name(lie), got.c_str(),
                     (unsigned long long)rejects, (unsigned long long)now);
      CHECK(got == "PD3_E_NOT_FOUND:" && now == rejects + 1);
      CHECK_EQ(s->stats().index_keys, 0u);  // the entry is dropped with the refusal
    }
    rejects = now;
  }
  CHECK(fetched(*s, "key") == "PD3_OK:value");
}

TEST(record_parser_probe_does_not_count_refusals) {
  // With the SSD tier, a PREFETCH first probes the record in its first page; when that fails the
  // full parse follows and counts a refused answer, so the probe must not count it too.
  const pd3::ParserHandle plugin = load_plugin("pd3_lying_parser");
  const pd3test::SetLieFn set_lie = lie_switch();
  pd3::RecordParser parser(plugin);
  const Bytes rec = tiny_record("key", "value");
  pd3_record_key k;
  set_lie(int(Lie::kHonest));
  CHECK(parser.probe_record_at_start(rec.data(), rec.size(), &k));
  CHECK_EQ(k.key_len, 3u);
  uint64_t rejected = 0;
  for (int i = 1; i < int(Lie::kCount); ++i) {
    if (Lie(i) == Lie::kOverlap) continue;  // needs a second key, which max 1 never asks for
    set_lie(i);
    const char* defect = parser.last_defect();
    CHECK(!parser.probe_record_at_start(rec.data(), rec.size(), &k));
    CHECK_EQ(parser.rejected(), rejected);
    CHECK(parser.last_defect() == defect);
    CHECK(!parser.record_at_start(rec.data(), rec.size(), &k));  // the full parse counts it
    CHECK_EQ(parser.rejected(), ++rejected);
    CHECK(parser.last_defect() != nullptr);
  }
  set_lie(int(Lie::kHonest));
}

TEST(memstore_record_parser_random_lies_never_misanswer) {
  // Random writes of honest records, junk and cut records, each parsed under a random lie (or
  // none); every PREFETCH answer must be NOT_FOUND or the value of a record of that key that the
  // region's bytes hold now (ASan checks that no lie led to a read outside a buffer).
  auto s = open_store(load_plugin("pd3_lying_parser"));
  const pd3test::SetLieFn set_lie = lie_switch();
  constexpr uint32_t kCap = 1 << 14;
  const uint32_t a = allocate(*s, kCap);
  Bytes shadow(kCap, 0);
  pd3test::Rng rng(77);
  pd3test::Errors errs{"random-lies"};
  const auto holds = [&](const std::string& key, const Bytes& value) {
    for (uint32_t at = 0; at + 2 + key.size() <= kCap; ++at) {
      if (shadow[at] != key.size() || std::memcmp(&shadow[at + 1], key.data(), key.size()) != 0) continue;
      const uint32_t v = at + 2 + uint32_t(key.size());
      if (shadow[v - 1] == value.size() && v + value.size() <= kCap &&
          std::equal(value.begin(), value.end(), shadow.begin() + v))
        return true;
    }
    return false;
  };
  uint64_t ok = 0;
  for (int it = 0; it < 20000; ++it) {
    set_lie(rng.below(3) == 0 ? int(rng.below(uint32_t(Lie::kCount))) : int(Lie::kHonest));
    const std::string key(1 + rng.below(3), char('a' + rng.below(3)));
    if (rng.below(3) == 0) {
      const Reply r = prefetch(*s, key, rng.below(8) == 0 ? rng.below(4) : 255);
      if (r.status == PD3_OK) {
        ++ok;
        if (!holds(key, r.data))
          errs.fail("prefetch of '%s' answered %zu bytes no record holds", key.c_str(), r.data.size());
      } else if (r.status != PD3_E_NOT_FOUND && r.status != PD3_E_DEST_SMALL) {
        errs.fail("prefetch of '%s' answered %s", key.c_str(), pd3_status_name(r.status));
      }
      continue;
    }
    Bytes data;
    while (data.size() < 40) {
      const std::string value(rng.below(6), char('0' + rng.below(10)));
      const Bytes rec = rng.below(5) == 0 ? Bytes(1 + rng.below(6), uint8_t(rng.next())) : tiny_record(key, value);
      data.insert(data.end(), rec.begin(), rec.end());
    }
    data.resize(1 + rng.below(uint32_t(data.size())));
    const uint32_t off = rng.below(kCap - uint32_t(data.size()) + 1);
    if (write(*s, a, off, data) != PD3_OK) errs.fail("write at %u refused", off);
    std::copy(data.begin(), data.end(), shadow.begin() + off);
  }
  set_lie(int(Lie::kHonest));
  CHECK_EQ(errs.n, 0u);
  CHECK(ok > 100);
  CHECK(s->stats().record_parser_rejects > 100);
}

TEST(record_key_defect_checks_bounds_without_overflow) {
  // Against 128-bit arithmetic, on values around the buffer's end and around 2^64.
  const uint64_t len = 100;
  const uint64_t edges[] = {0, 1, 50, 98, 99, 100, 101, UINT64_MAX / 2, UINT64_MAX - 100, UINT64_MAX - 1, UINT64_MAX};
  using u128 = unsigned __int128;
  const auto in = [](u128 off, u128 n, u128 lo, u128 hi) { return off >= lo && off + n <= hi; };
  uint64_t cases = 0, wrong = 0;
  for (uint64_t ro : edges)
    for (uint64_t rl : edges)
      for (uint64_t ko : edges)
        for (uint64_t vo : edges)
          for (uint64_t vl : edges)
            for (uint32_t kl : {0u, 1u, 2u, PD3_MAX_KEY_LEN, PD3_MAX_KEY_LEN + 1}) {
              const pd3_record_key k{ko, vo, vl, kl, 0, ro, rl};
              const bool ok = kl >= 1 && kl <= PD3_MAX_KEY_LEN && in(ro, rl, 0, len) && in(ko, kl, ro, u128(ro) + rl) &&
                              in(vo, vl, ro, u128(ro) + rl);
              wrong += ok != (pd3::record_key_defect(k, len, 0) == nullptr);
              ++cases;
            }
  CHECK(cases > 100000);
  CHECK_EQ(wrong, 0u);
  // Order: a record may start at the previous one's end, not before it.
  const pd3_record_key k{11, 12, 1, 1, 0, 10, 3};
  CHECK(pd3::record_key_defect(k, len, 10) == nullptr);
  CHECK(pd3::record_key_defect(k, len, 11) != nullptr);
}

TEST(memstore_record_parser_restarts_from_a_data_dir) {
  TempDir d("recparser");
  REQUIRE(!d.path.empty());
  const pd3::ParserHandle example = load_plugin("pd3_example_record_parser");
  const Bytes late = example_record("late", "added after the restart");
  uint32_t a = 0;
  {
    auto s = open_store(example, d.path);
    a = allocate(*s, 1 << 16);
    for (int i = 0; i < 300; ++i) {
      const Bytes rec = example_record("key" + std::to_string(i), "value" + std::to_string(i));
      REQUIRE(write(*s, a, uint32_t(i) * 64, rec) == PD3_OK);
    }
    REQUIRE(s->sync() == PD3_OK);
  }
  {
    // Same parser: every key answers from the reloaded index and region.
    auto s = open_store(example, d.path);
    CHECK_EQ(s->stats().index_keys, 300u);
    int found = 0;
    for (int i = 0; i < 300; ++i) found += fetched(*s, "key" + std::to_string(i)) == "PD3_OK:value" + std::to_string(i);
    CHECK_EQ(found, 300);
    REQUIRE(write(*s, a, 300 * 64, late) == PD3_OK);
    REQUIRE(s->sync() == PD3_OK);
  }
  {
    // Another format on the same directory: the index holds addresses only, so its entries verify
    // against the new format and miss (and are dropped); nothing wrong is answered, the bytes stay.
    auto s = open_store(pd3::ParserHandle(), d.path);
    CHECK(fetched(*s, "key5") == "PD3_E_NOT_FOUND:");
    CHECK(fetched(*s, "late") == "PD3_E_NOT_FOUND:");
    const Reply r = run(*s, PD3_OP_READ, a, 300 * 64, uint32_t(late.size()));
    CHECK(r.status == PD3_OK && r.data == late);
  }
}

TEST(memstore_record_parser_rejects_are_logged_at_a_bounded_rate) {
  // Through a real TcpServer: refused answers are logged once as store.record_parser_rejected with
  // the parser and the reason, not once per write, and counted in the server's stats.
  auto store = open_store(load_plugin("pd3_lying_parser"));
  const pd3test::SetLieFn set_lie = lie_switch();
  const uint32_t a = allocate(*store, 4096);
  std::unique_ptr<pd3::TcpServer> server;
  pd3::TcpServerOptions so;
  so.token = "t";
  REQUIRE(pd3::TcpServer::start(so, std::move(store), &server) == PD3_OK);
  int raw_fd = -1;
  REQUIRE(pd3::tcp_connect({"127.0.0.1", server->port()}, 1000, &raw_fd) == PD3_OK);
  const pd3::UniqueFd fd(raw_fd);
  pd3_hello_reply reply;
  REQUIRE(pd3::client_hello(fd.get(), "t", "", 1000, &reply) == PD3_OK);
  set_lie(int(Lie::kNegativeStatus));
  pd3::FrameReader reader;
  std::vector<std::string> logged;
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    Bytes frame;
    pd3::FrameBuilder fb(&frame);
    fb.begin(PD3_FRAME_REQUEST, seq);
    const Bytes rec = tiny_record("k", "v");
    const pd3_request write_hdr = pd3_make_request(pd3_op_id(PD3_OP_WRITE, uint32_t(seq)), a, 0, uint32_t(rec.size()));
    fb.request(write_hdr, rec.data(), uint32_t(rec.size()));
    fb.finish();
    REQUIRE(pd3::send_all(fd.get(), frame.data(), frame.size(), 1000) == PD3_OK);
    pd3_frame hdr;
    const uint8_t* body = nullptr;
    int got = 0;
    for (int polls = 0; got == 0 && polls < 200; ++polls) {
      pollfd p{fd.get(), POLLIN, 0};
      if (::poll(&p, 1, 10) > 0) REQUIRE(reader.fill(fd.get()) >= 0);
      got = reader.next(&hdr, &body);
    }
    REQUIRE(got == 1 && hdr.seq == seq);
  }
  set_lie(int(Lie::kHonest));
  // The loop publishes after the pass that ran the frame; give it a moment.
  for (int polls = 0; polls < 100 && server->stats().store.record_parser_rejects < 3; ++polls) ::usleep(2000);
  CHECK_EQ(server->stats().store.record_parser_rejects, 3u);
  uint64_t dropped = 0;
  for (const pd3::LogEvent& e : server->log().take(&dropped))
    if (e.event == "store.record_parser_rejected") logged.push_back(e.message);
  REQUIRE(logged.size() == 1);
  CHECK(logged[0].find("'lying-records'") != std::string::npos);
  CHECK(logged[0].find("a negative status") != std::string::npos);
  server->stop();
}
