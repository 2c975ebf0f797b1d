// loadgen_model_test.cpp — pd3-loadgen's pieces besides the RESP parser: text keys and values as
// ycsb.hpp makes them, the request encoders (the binary one byte-for-byte as the hash map's own
// client), both reply decoders split at every byte, and the --verify version model with
// overlapping reads and writes.
#include <string>
#include <string_view>
#include <vector>

#include "codec.hpp"
#include "harness.hpp"
#include "key_text.hpp"
#include "protocol.hpp"
#include "value_format.hpp"
#include "version_model.hpp"
#include "ycsb.hpp"

namespace {

using namespace pd3::loadgen;

std::string text(const ByteBuffer& b) { return std::string(reinterpret_cast<const char*>(b.data()), b.size()); }

// Entries and ends as text: "value:<bytes>", "nil", "ok", "error:<msg>", "unexpected:<what>", "end".
struct EntryLog : EntrySink {
  std::vector<std::string> events;
  void on_entry(const ReplyEntry& e) override {
    static const char* names[] = {"value", "nil", "ok", "error", "unexpected"};
    std::string s = names[int(e.kind)];
    if (e.kind != EntryKind::kNil && e.kind != EntryKind::kOk) s.append(1, ':').append(e.bytes);
    if (e.element) s.append(" (element)");
    events.push_back(s);
  }
  void on_reply_end() override { events.push_back("end"); }
};

// Decodes `wire` with a fresh decoder in two pieces cut at `cut`; false on a framing error.
bool decode(Protocol p, const std::string& wire, size_t cut, EntryLog* log) {
  auto d = make_decoder(p);
  const auto* b = reinterpret_cast<const uint8_t*>(wire.data());
  return d->feed(b, cut, *log) && d->feed(b + cut, wire.size() - cut, *log);
}

std::string value_of(uint64_t key, uint64_t version, uint32_t size) {
  std::string v(size, '\0');
  pd3::ycsb::value_bytes(key, version, reinterpret_cast<uint8_t*>(v.data()), size);
  return v;
}

}  // namespace

TEST(loadgen_text_keys_match_ycsb) {
  for (uint64_t n : {uint64_t(0), uint64_t(7), uint64_t(42), uint64_t(123456789), kMaxTextKey}) {
    std::string want;
    REQUIRE(pd3::ycsb::format_key(n, kKeyWidth, kKeyPrefix, &want) == PD3_OK);
    char got[kKeyLength];
    write_text_key(n, got);
    CHECK(std::string(got, kKeyLength) == want);
  }
}

TEST(loadgen_values_are_ycsb_values) {
  ValueFormat f(100);
  const std::string v = value_of(42, 7, 100);
  CHECK(f.matches(42, 7, v));
  CHECK(!f.matches(42, 8, v));
  CHECK(!f.matches(43, 7, v));
  CHECK(!f.matches(42, 7, v.substr(1)));
  CHECK(!f.matches(42, kAbsent, v));
  // The hash map's own load value (protocol.hpp), 8 bytes little-endian.
  ValueFormat eight(8);
  uint8_t loaded[8];
  pd3::hashmap::store_u64(loaded, pd3::hashmap::load_value(99));
  CHECK(eight.matches(99, kHashmapLoad, std::string_view(reinterpret_cast<const char*>(loaded), 8)));
}

TEST(loadgen_resp_requests) {
  auto enc = make_encoder(Protocol::kResp, 5);
  ValueFormat f(5);
  ByteBuffer out;
  enc->read(out, 42);
  CHECK(text(out) == "*2\r\n$3\r\nGET\r\n$16\r\nuser000000000042\r\n");
  out.clear();
  enc->write(out, 3, f, 9);
  CHECK(text(out) == "*3\r\n$3\r\nSET\r\n$16\r\nuser000000000003\r\n$5\r\n" + value_of(3, 9, 5) + "\r\n");
  out.clear();
  enc->read_run(out, 10, 2);
  CHECK(text(out) == "*3\r\n$4\r\nMGET\r\n$16\r\nuser000000000010\r\n$16\r\nuser000000000011\r\n");
}

TEST(loadgen_binary_requests_match_the_hashmap_client) {
  auto enc = make_encoder(Protocol::kBinary, 8);
  ValueFormat f(8);
  ByteBuffer out;
  enc->write(out, 77, f, 5);
  std::vector<uint8_t> want;
  const std::string v = value_of(77, 5, 8);
  const uint64_t key = 77, value = pd3::hashmap::load_u64(reinterpret_cast<const uint8_t*>(v.data()));
  pd3::hashmap::encode_request(PD3_BIN_PUT, &key, &value, 1, &want);
  CHECK(text(out) == std::string(want.begin(), want.end()));
  out.clear();
  want.clear();
  const uint64_t keys[3] = {4, 5, 6};
  enc->read_run(out, 4, 3);
  pd3::hashmap::encode_request(PD3_BIN_GET, keys, nullptr, 3, &want);
  CHECK(text(out) == std::string(want.begin(), want.end()));
}

TEST(loadgen_resp_entries_split_anywhere) {
  const std::string wire = "+OK\r\n$3\r\nabc\r\n$-1\r\n-ERR nope\r\n*2\r\n$1\r\nx\r\n$-1\r\n:5\r\n*1\r\n*1\r\n:1\r\n";
  const std::vector<std::string> want = {"ok",
                                         "end",
                                         "value:abc",
                                         "end",
                                         "nil",
                                         "end",
                                         "error:ERR nope",
                                         "end",
                                         "value:x (element)",
                                         "nil (element)",
                                         "end",
                                         "unexpected:an integer reply",
                                         "end",
                                         "unexpected:a nested array (element)",
                                         "end"};
  for (size_t cut = 0; cut <= wire.size(); ++cut) {
    EntryLog log;
    CHECK(decode(Protocol::kResp, wire, cut, &log));
    CHECK(log.events == want);
  }
}

TEST(loadgen_binary_entries_split_anywhere) {
  using pd3::hashmap::EntryStatus;
  std::string wire;
  auto response = [&](uint8_t op, uint16_t count, const std::string& body) {
    pd3::hashmap::ResponseHeader h{uint32_t(4 + body.size()), pd3::hashmap::kResponseMagic, op, count};
    wire.append(reinterpret_cast<const char*>(&h), sizeof h);
    wire += body;
  };
  const uint32_t len = 8;
  std::string get_body;
  get_body += char(EntryStatus::kOk);
  get_body.append(reinterpret_cast<const char*>(&len), 4);
  get_body += "ABCDEFGH";
  get_body += char(EntryStatus::kNotFound);
  response(PD3_BIN_GET, 2, get_body);
  response(PD3_BIN_PUT, 1, std::string(1, char(EntryStatus::kOk)));
  response(PD3_BIN_PUT, 1, std::string(1, char(EntryStatus::kFull)));
  const std::vector<std::string> want = {"value:ABCDEFGH", "nil", "end", "ok", "end", "error:status 4 (table full)", "end"};
  for (size_t cut = 0; cut <= wire.size(); ++cut) {
    EntryLog log;
    CHECK(decode(Protocol::kBinary, wire, cut, &log));
    CHECK(log.events == want);
  }
  // Framing errors: a wrong magic, entries running past the response.
  EntryLog log;
  std::string bad = wire;
  bad[4] = char(0xD3);
  CHECK(!decode(Protocol::kBinary, bad, bad.size(), &log));
  std::string shortened;
  pd3::hashmap::ResponseHeader h{4 + 1, pd3::hashmap::kResponseMagic, PD3_BIN_GET, 2};
  shortened.append(reinterpret_cast<const char*>(&h), sizeof h);
  shortened += char(EntryStatus::kNotFound);
  CHECK(!decode(Protocol::kBinary, shortened, shortened.size(), &log));
}

TEST(loadgen_model_sequential_history) {
  VersionModel m;
  ValueFormat f(16);
  m.reset(4, 0);
  const std::string v0 = value_of(1, 0, 16), v5 = value_of(1, 5, 16);
  const std::string_view old = v0, now = v5;
  ReadTicket t = m.begin_read(1);
  CHECK(m.finish_read(1, t, &old, f, nullptr));
  m.begin_write(1, 5);
  m.finish_write(1, 5, true);
  CHECK_EQ(m.active_keys(), 0u);
  t = m.begin_read(1);
  std::vector<uint64_t> possible;
  CHECK(!m.finish_read(1, t, &old, f, &possible));  // the old value after an acknowledged write
  CHECK(possible == std::vector<uint64_t>{5});
  t = m.begin_read(1);
  CHECK(m.finish_read(1, t, &now, f, nullptr));
  t = m.begin_read(1);
  CHECK(!m.finish_read(1, t, nullptr, f, nullptr));  // nil for a key that exists
  CHECK_EQ(m.active_keys(), 0u);
}

TEST(loadgen_model_overlapping_operations) {
  VersionModel m;
  ValueFormat f(16);
  m.reset(2, 0);
  auto val = [](uint64_t v) { return value_of(0, v, 16); };
  auto read_ok = [&](ReadTicket t, uint64_t version) {
    const std::string v = val(version);
    const std::string_view sv = v;
    return m.finish_read(0, t, &sv, f, nullptr);
  };
  // A read overlapping a write may see either version.
  ReadTicket a = m.begin_read(0), b = m.begin_read(0);
  m.begin_write(0, 1);
  CHECK(read_ok(a, 0));
  CHECK(read_ok(b, 1));
  m.finish_write(0, 1, true);
  // Two overlapping writes, acknowledged in the other order: either may be the value after both.
  m.begin_write(0, 2);
  m.begin_write(0, 3);
  m.finish_write(0, 3, true);
  m.finish_write(0, 2, true);
  a = m.begin_read(0);
  b = m.begin_read(0);
  CHECK(read_ok(a, 2));
  CHECK(read_ok(b, 3));
  CHECK(!read_ok(m.begin_read(0), 1));  // 1 was overruled by 2 and 3, both sent after it was acknowledged
  // A write sent after both were acknowledged settles it.
  m.begin_write(0, 4);
  m.finish_write(0, 4, true);
  CHECK(!read_ok(m.begin_read(0), 3));
  CHECK(read_ok(m.begin_read(0), 4));
  // A read sent before a chain of writes may return any of them, or the value before.
  const ReadTicket early = m.begin_read(0);
  m.begin_write(0, 5);
  m.finish_write(0, 5, true);
  m.begin_write(0, 6);
  m.finish_write(0, 6, true);
  const ReadTicket late = m.begin_read(0);
  CHECK(read_ok(early, 4));
  CHECK(!read_ok(late, 5));
  CHECK_EQ(m.active_keys(), 0u);
}

TEST(loadgen_model_error_replies_and_inserts) {
  VersionModel m;
  ValueFormat f(16);
  m.reset(2, 0);
  // A write answered with an error may or may not have happened; it never overrules.
  m.begin_write(1, 7);
  m.finish_write(1, 7, false);
  const std::string v0 = value_of(1, 0, 16), v7 = value_of(1, 7, 16), v8 = value_of(1, 8, 16);
  const std::string_view s0 = v0, s7 = v7, s8 = v8;
  CHECK(m.finish_read(1, m.begin_read(1), &s0, f, nullptr));
  CHECK(m.finish_read(1, m.begin_read(1), &s7, f, nullptr));
  m.begin_write(1, 8);
  m.finish_write(1, 8, true);
  CHECK(!m.finish_read(1, m.begin_read(1), &s7, f, nullptr));
  CHECK(m.finish_read(1, m.begin_read(1), &s8, f, nullptr));
  // An inserted record is absent until its write; a read racing the insert may see either.
  m.add_record(2);
  CHECK_EQ(m.records(), 3u);
  CHECK(m.finish_read(2, m.begin_read(2), nullptr, f, nullptr));
  const ReadTicket racing = m.begin_read(2);
  m.begin_write(2, 9);
  const std::string v9 = value_of(2, 9, 16);
  const std::string_view s9 = v9;
  CHECK(m.finish_read(2, racing, &s9, f, nullptr));
  m.finish_write(2, 9, true);
  CHECK(!m.finish_read(2, m.begin_read(2), nullptr, f, nullptr));
  // An abandoned read releases the key.
  m.abandon_read(2, m.begin_read(2));
  CHECK_EQ(m.active_keys(), 0u);
}
