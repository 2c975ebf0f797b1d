// ycsb_test.cpp — the C++ YCSB generator (native/workloads/ycsb.hpp): the same hard digests as
// test/ycsb.test.ts (so both languages produce one op stream), op mixes, latest, keys, values,
// and option errors.
#include "../../native/workloads/ycsb.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "harness.hpp"
#include "pd3/status.h"

namespace {

using pd3::ycsb::Distribution;
using pd3::ycsb::Op;
using pd3::ycsb::OpType;
using pd3::ycsb::Options;
using pd3::ycsb::Workload;

constexpr uint64_t kFnvBasis = 0xCBF29CE484222325ull;

uint64_t fnv(uint64_t h, const uint8_t* bytes, size_t n) {
  for (size_t i = 0; i < n; i++) h = (h ^ bytes[i]) * 0x100000001B3ull;
  return h;
}

uint64_t fnv_le(uint64_t h, uint64_t v, int width) {
  for (int i = 0; i < width; i++) {
    const uint8_t b = uint8_t(v >> (8 * i));
    h = fnv(h, &b, 1);
  }
  return h;
}

std::unique_ptr<Workload> make(const Options& o) {
  std::unique_ptr<Workload> w;
  if (Workload::create(o, &w) != PD3_OK) std::fprintf(stderr, "  create failed: %s\n", pd3::workloads::last_error());
  return w;
}

// opsDigest in ycsb.test.ts: per op, type u8, key u64, scan length u32, version u64 (LE).
uint64_t ops_digest(const Options& o, int count) {
  auto w = make(o);
  if (!w) return 0;
  uint64_t h = kFnvBasis;
  Op op;
  for (int i = 0; i < count && w->next(&op); i++) {
    h = fnv_le(h, uint64_t(op.type), 1);
    h = fnv_le(h, op.key, 8);
    h = fnv_le(h, op.scan_length, 4);
    h = fnv_le(h, op.version, 8);
  }
  return h;
}

Options opts(char workload, uint64_t records, uint64_t seed) {
  Options o;
  o.workload = workload;
  o.record_count = records;
  o.seed = seed;
  return o;
}

}  // namespace

TEST(ycsb_digests_match_ts) {
  // Same constants as ycsb.test.ts: change both, and only when the sequence is meant to change.
  Options a = opts('A', 100000, 42);
  Options b = opts('B', 1000, 7);
  b.distribution = Distribution::kUniform;
  Options c = opts('C', 1000000000, 1);
  Options d = opts('D', 1000, 3);
  d.operation_count = 10000;
  Options e = opts('E', 5000, 5);
  e.operation_count = 10000;
  Options f = opts('F', 777, UINT64_MAX);
  f.theta = 0.5;
  Options tiny = opts('D', 3, 0);
  tiny.distribution = Distribution::kZipfian;
  CHECK_EQ(ops_digest(a, 10000), 0x6e9fc41cace6e41eull);
  CHECK_EQ(ops_digest(b, 10000), 0x3cf5391d8b679482ull);
  CHECK_EQ(ops_digest(c, 10000), 0xd69a12d4d374c569ull);
  CHECK_EQ(ops_digest(d, 10000), 0x55185ae361316b65ull);
  CHECK_EQ(ops_digest(e, 10000), 0x96f6f7a48bdf911cull);
  CHECK_EQ(ops_digest(f, 10000), 0xfa03a183fa60b017ull);
  CHECK_EQ(ops_digest(tiny, 10000), 0xa5abfd68d86a61e7ull);
}

TEST(ycsb_values_match_ts) {
  uint64_t h = kFnvBasis;
  uint8_t buf[37];
  for (uint64_t n = 0; n < 1000; n += 7) {
    for (uint64_t v : {uint64_t(0), uint64_t(1), uint64_t(1) << 40}) {
      pd3::ycsb::value_bytes(n, v, buf, sizeof buf);
      h = fnv(h, buf, sizeof buf);
    }
  }
  CHECK_EQ(h, 0x95f32420ac8f68dcull);
  uint8_t a[64], b[64];
  auto w = make([] {
    Options o = opts('A', 10, 1);
    o.value_size = 64;
    return o;
  }());
  REQUIRE(w);
  w->value_of(3, 5, a);
  w->value_of(3, 6, b);
  CHECK(std::memcmp(a, b, 64) != 0);
  for (uint8_t ch : a) CHECK(std::isalnum(ch) || ch == '-' || ch == '_');
}

TEST(ycsb_op_mixes) {
  // Expected per-mille shares of READ, UPDATE, INSERT, SCAN, RMW.
  const int expected[6][5] = {{500, 500, 0, 0, 0}, {950, 50, 0, 0, 0}, {1000, 0, 0, 0, 0},
                              {950, 0, 50, 0, 0},  {0, 0, 50, 950, 0}, {500, 0, 0, 0, 500}};
  for (int i = 0; i < 6; i++) {
    auto w = make(opts(char('A' + i), 10000, 11));
    REQUIRE(w);
    int counts[5] = {};
    Op op;
    for (int n = 0; n < 100000; n++) {
      REQUIRE(w->next(&op));
      counts[int(op.type)]++;
      if (op.type == OpType::kScan) CHECK(op.scan_length >= 1 && op.scan_length <= 100);
      CHECK(op.key < w->inserted_count());
    }
    for (int t = 0; t < 5; t++) {
      if (expected[i][t] == 0) CHECK_EQ(counts[t], 0);
      CHECK(std::abs(counts[t] / 100.0 - expected[i][t]) < 10);  // within 1%
    }
  }
}

TEST(ycsb_latest_favours_new_records) {
  auto w = make(opts('D', 1000, 4));
  REQUIRE(w);
  CHECK(w->options().distribution == Distribution::kLatest);
  int reads = 0, newest = 0;
  Op op;
  for (int i = 0; i < 100000; i++) {
    const uint64_t before = w->inserted_count();
    REQUIRE(w->next(&op));
    if (op.type == OpType::kInsert) CHECK_EQ(op.key, before);
    if (op.type != OpType::kRead) continue;
    reads++;
    if (op.key == before - 1) newest++;
  }
  CHECK(newest > reads / 12);  // about 1/zeta(n): 0.10 .. 0.13 for n in 1000 .. 6000
  CHECK(newest < reads / 7);
}

TEST(ycsb_stops_at_operation_count) {
  Options o = opts('A', 10, 1);
  o.operation_count = 3;
  auto w = make(o);
  REQUIRE(w);
  Op op;
  CHECK(w->next(&op) && w->next(&op) && w->next(&op));
  CHECK_EQ(op.seq, 2u);
  CHECK(!w->next(&op));
  CHECK_EQ(w->generated(), 3u);
}

TEST(ycsb_keys) {
  Options o = opts('C', 1000, 1);
  o.key_width = 6;
  o.key_prefix = "k";
  auto w = make(o);
  REQUIRE(w);
  std::string key;
  CHECK_EQ(w->key_of(42, &key), PD3_OK);
  CHECK(key == "k000042");
  CHECK_EQ(w->key_of(1000000, &key), PD3_E_RANGE);
  CHECK(std::strstr(pd3::workloads::last_error(), "does not fit in 6 digits") != nullptr);
  uint8_t bin[8];
  Workload::binary_key_of(0x0102030405ull, bin);
  const uint8_t want[8] = {5, 4, 3, 2, 1, 0, 0, 0};
  CHECK(std::memcmp(bin, want, 8) == 0);
}

TEST(ycsb_zeta_and_math) {
  for (uint64_t n : {1ull, 2ull, 10ull, 1024ull, 1025ull, 5000ull, 200000ull}) {
    for (double theta : {0.2, 0.5, 0.99}) {
      double direct = 0;
      for (uint64_t i = 1; i <= n; i++) direct += std::pow(double(i), -theta);
      CHECK(std::fabs(pd3::ycsb::zeta(n, theta) - direct) / direct < 1e-12);
    }
  }
  for (double x : {1e-300, 1e-5, 0.3, 0.99, 1.0, 1.5, 1e9, 1e300}) {
    CHECK(std::fabs(pd3::ycsb::detail::det_ln(x) - std::log(x)) <= 4e-16 * std::fmax(1, std::fabs(std::log(x))));
  }
  CHECK_EQ(pd3::ycsb::detail::det_exp(-800), 0.0);
}

TEST(ycsb_bad_options) {
  std::unique_ptr<Workload> w;
  auto refused = [&](Options o, const char* needle) {
    const int rc = Workload::create(o, &w);
    const bool ok = rc == PD3_E_INVAL && std::strstr(pd3::workloads::last_error(), needle) != nullptr;
    if (!ok) std::fprintf(stderr, "  expected '%s', got %d '%s'\n", needle, rc, pd3::workloads::last_error());
    return ok;
  };
  CHECK(refused(opts('A', 0, 1), "record_count must be 1 .. 2^37"));
  CHECK(refused(opts('A', (uint64_t(1) << 37) + 1, 1), "record_count"));
  CHECK(refused(opts('G', 10, 1), "unknown workload 'G'"));
  CHECK(refused(opts('a', 10, 1), "unknown workload"));
  for (double theta : {0.0, 1.0, 1.5, -0.1, double(NAN)}) {
    Options o = opts('A', 10, 1);
    o.theta = theta;
    CHECK(refused(o, "theta must be 0 < theta < 1"));
  }
  Options o = opts('A', 10, 1);
  o.distribution = Distribution(9);
  CHECK(refused(o, "unknown distribution"));
  o = opts('A', 11, 1);
  o.key_width = 1;
  CHECK(refused(o, "key_width 1 is too small: record 10 needs 2 digits"));
  o = opts('A', 10, 1);
  o.key_width = 21;
  CHECK(refused(o, "key_width must be 1 .. 20"));
  o = opts('A', 10, 1);
  o.value_size = 0;
  CHECK(refused(o, "value_size"));
  o = opts('A', 10, 1);
  o.operation_count = (uint64_t(1) << 45) + 1;
  CHECK(refused(o, "operation_count"));
  CHECK(!w);
  CHECK_EQ(Workload::create(opts('F', 1, 0), &w), PD3_OK);
}
