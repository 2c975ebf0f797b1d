// binary_parser_test.cpp — the built-in binary request parser (pd3/binproto.h): ops and keys,
// pipelines, requests split at every byte, every validation rule, the size limit, the full-output
// rule and resync; and parseRecord over pd3/record.h records, shared by every built-in parser.
#include <cstring>
#include <string>
#include <vector>

#include "../fuzz/parser_target.hpp"
#include "harness.hpp"
#include "parsers/binary_parser.hpp"
#include "parsers/resp_parser.hpp"
#include "pd3/binproto.h"
#include "pd3/record.h"
#include "util.hpp"

namespace {

using pd3fuzz::ParsedAccess;
using pd3fuzz::StreamResult;
constexpr uint32_t R = PD3_ACCESS_READ, W = PD3_ACCESS_WRITE, D = PD3_ACCESS_DELETE;

// One key (and for PUT its value) of a request.
struct Entry {
  std::string key;
  std::string value;
};

void put_u16(std::string* s, uint16_t v) { s->append(reinterpret_cast<const char*>(&v), 2); }
void put_u32(std::string* s, uint32_t v) { s->append(reinterpret_cast<const char*>(&v), 4); }

// A request as the example apps send it.
std::string request(uint8_t op, const std::vector<Entry>& entries) {
  std::string body;
  for (const Entry& e : entries) {
    put_u16(&body, uint16_t(e.key.size()));
    body += e.key;
    if (op == PD3_BIN_PUT) {
      put_u32(&body, uint32_t(e.value.size()));
      body += e.value;
    }
  }
  std::string s;
  put_u32(&s, uint32_t(4 + body.size()));
  s.push_back(char(PD3_BIN_MAGIC));
  s.push_back(char(op));
  put_u16(&s, uint16_t(entries.size()));
  return s + body;
}

// prefix followed by n in decimal.
std::string numbered(const char* prefix, uint64_t n) {
  std::string s = prefix;
  s += std::to_string(n);
  return s;
}

const uint8_t* bytes(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

StreamResult parse(const std::string& s) { return pd3fuzz::parse_stream(pd3::binary_parser(), bytes(s), s.size()); }

// Status, bytes consumed and accesses of one parse_request call.
struct OneCall {
  int status;
  size_t consumed;
  uint32_t n;
};
OneCall call(const std::string& s) {
  std::vector<pd3_access> out(PD3_PARSER_MIN_ACCESSES);
  OneCall c{};
  c.status = pd3::binary_parser()->parse_request(nullptr, bytes(s), s.size(), out.data(), PD3_PARSER_MIN_ACCESSES,
                                                 &c.n, &c.consumed);
  return c;
}

int64_t resync(const std::string& s) { return pd3::binary_parser()->resync(nullptr, bytes(s), s.size()); }

}  // namespace

TEST(binary_table_has_the_abi_and_no_flow_state) {
  const pd3_parser* p = pd3::binary_parser();
  CHECK_EQ(p->abi_version, PD3_PARSER_ABI_VERSION);
  CHECK(std::strcmp(p->name, "binary") == 0);
  CHECK(p->flow_open == nullptr && p->flow_close == nullptr && p->parse_record != nullptr);
}

TEST(binary_get_put_del_give_their_keys_in_order) {
  const std::string s = request(PD3_BIN_GET, {{"a", ""}, {"bb", ""}}) + request(PD3_BIN_PUT, {{"k", "value"}, {"k2", ""}}) +
                        request(PD3_BIN_DEL, {{std::string("\0\xff", 2), ""}}) + request(PD3_BIN_GET, {});
  const StreamResult r = parse(s);
  CHECK(r.status == PD3_OK && r.consumed == s.size());
  CHECK((r.accesses ==
         std::vector<ParsedAccess>{{"a", R}, {"bb", R}, {"k", W}, {"k2", W}, {std::string("\0\xff", 2), D}}));
}

TEST(binary_pipeline_and_split_at_every_byte) {
  std::string s;
  std::vector<ParsedAccess> want;
  pd3test::Rng rng(21);
  for (int i = 0; i < 40; ++i) {
    const uint8_t op = uint8_t(1 + rng.below(3));
    std::vector<Entry> entries;
    for (uint32_t k = rng.below(5); k > 0; --k) {
      entries.push_back({numbered("key", rng.below(100000)), std::string(rng.below(40), 'v')});
      want.push_back({entries.back().key, op == PD3_BIN_GET ? R : op == PD3_BIN_PUT ? W : D});
    }
    s += request(op, entries);
  }
  const StreamResult whole = parse(s);
  CHECK(whole.status == PD3_OK && whole.consumed == s.size() && whole.accesses == want);
  uint64_t mismatches = 0;
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    const StreamResult two = pd3fuzz::parse_in_pieces(pd3::binary_parser(), nullptr, bytes(s), s.size(),
                                                      [cut](size_t i) { return i == 0 ? cut : ~size_t(0) >> 1; });
    mismatches += !(two == whole);
  }
  CHECK_EQ(mismatches, 0u);
  CHECK(pd3fuzz::parse_in_pieces(pd3::binary_parser(), nullptr, bytes(s), s.size(), [](size_t) { return 1; }) == whole);
}

TEST(binary_incomplete_request_emits_nothing) {
  const std::string get = request(PD3_BIN_GET, {{"key", ""}});
  for (size_t cut = 0; cut < get.size(); ++cut) {
    const OneCall c = call(get.substr(0, cut));
    CHECK(c.status == PD3_OK && c.consumed == 0 && c.n == 0);
  }
}

TEST(binary_malformed_requests_are_protocol_errors) {
  const std::string good = request(PD3_BIN_GET, {{"key", ""}, {"k2", ""}});
  std::vector<std::string> bad;
  std::string s = good;
  s[4] = 0x00;  // magic
  bad.push_back(s);
  for (const char op : {char(0), char(4), char(0xff)}) {
    s = good;
    s[5] = op;
    bad.push_back(s);
  }
  s = good;  // length below the header's own 4 bytes
  s[0] = 3, s[1] = s[2] = s[3] = 0;
  bad.push_back(s);
  s = good;  // count larger than the entries present: they do not fill... they overrun `length`
  s[6] = 3;
  bad.push_back(s);
  s = good;  // count smaller: bytes left over inside `length`
  s[6] = 1;
  bad.push_back(s);
  s = good;  // empty key
  s[8] = 0;
  bad.push_back(s);
  s = request(PD3_BIN_PUT, {{"k", "vvvv"}});  // value length past the end
  s[8 + 2 + 1] = 9;
  bad.push_back(s);
  s = request(PD3_BIN_GET, {});  // 65535 entries cannot fit in 4 bytes
  s[6] = s[7] = char(0xff);
  bad.push_back(s);
  for (const std::string& b : bad) {
    const OneCall c = call(b);
    CHECK(c.status == PD3_E_PROTOCOL && c.consumed == 0 && c.n == 0);
  }
  // A wrong header field is refused as soon as it arrives, before the rest of the request.
  CHECK_EQ(call(bad[0].substr(0, 5)).status, PD3_E_PROTOCOL);
  CHECK_EQ(call(std::string("\x03\x00\x00\x00", 4)).status, PD3_E_PROTOCOL);
  // Behind a good request the error waits for the next call.
  const StreamResult r = parse(good + bad[0]);
  CHECK(r.status == PD3_E_PROTOCOL && r.consumed == good.size() && r.accesses.size() == 2);
}

TEST(binary_size_limit) {
  std::string over;
  put_u32(&over, PD3_BIN_MAX_REQUEST + 1);
  CHECK_EQ(call(over).status, PD3_E_PROTOCOL);  // from the length field alone
  // The largest request accepted: one PUT whose value fills PD3_BIN_MAX_REQUEST.
  const std::string max = request(PD3_BIN_PUT, {{"big", std::string(PD3_BIN_MAX_REQUEST - 4 - 2 - 3 - 4, 'x')}});
  const OneCall c = call(max);
  CHECK(c.status == PD3_OK && c.consumed == max.size() && c.n == 1);
  const OneCall waiting = call(max.substr(0, max.size() - 1));
  CHECK(waiting.status == PD3_OK && waiting.consumed == 0);
}

TEST(binary_full_output_cuts_the_first_request_and_defers_later_ones) {
  std::vector<Entry> many;
  for (int i = 0; i < 100; ++i) many.push_back({numbered("k", uint64_t(i)), ""});
  const std::string big = request(PD3_BIN_GET, many), small = request(PD3_BIN_DEL, {{"x", ""}});
  const OneCall cut = call(big);
  CHECK(cut.status == PD3_OK && cut.n == PD3_PARSER_MIN_ACCESSES && cut.consumed == big.size());
  const OneCall deferred = call(small + big);
  CHECK(deferred.n == 1 && deferred.consumed == small.size());
}

TEST(binary_resync_finds_a_header_that_frames) {
  const std::string req = request(PD3_BIN_GET, {{"key", ""}});
  CHECK_EQ(resync(req), 0);
  CHECK_EQ(resync("junk" + req), 4);
  // A plausible header whose entries do not fill its length is skipped.
  std::string fake = request(PD3_BIN_GET, {{"abc", ""}});
  fake[6] = 2;
  CHECK_EQ(resync(fake + req), int64_t(fake.size()));
  // A header still arriving is where to wait; so are the last bytes, which may start one.
  CHECK_EQ(resync("junk" + req.substr(0, 6)), 4);
  const std::string noise(64, char(0xEE));
  CHECK_EQ(resync(noise), int64_t(noise.size() - 3));
  CHECK_EQ(resync(""), -1);
  // After a gap the parser runs from the offset.
  const std::string stream = std::string("\x01\x02\xD3\x09", 4) + req + request(PD3_BIN_PUT, {{"p", "q"}});
  const int64_t at = resync(stream);
  REQUIRE(at == 4);
  const StreamResult r = pd3fuzz::parse_stream(pd3::binary_parser(), bytes(stream) + at, stream.size() - size_t(at));
  CHECK((r.accesses == std::vector<ParsedAccess>{{"key", R}, {"p", W}}));
}

TEST(parse_record_lists_the_keys_of_pd3_record_h_records) {
  std::string buf;
  const std::vector<Entry> records = {{"user:1", "alice"}, {"k", ""}, {std::string(300, 'K'), std::string(1000, 'v')}};
  for (const Entry& e : records) {
    put_u32(&buf, uint32_t(e.key.size()));
    put_u32(&buf, uint32_t(e.value.size()));
    buf += e.key + e.value;
  }
  const size_t used = buf.size();
  buf.append(16, '\0');  // end marker and zero fill
  put_u32(&buf, 1);       // never reached: after the end marker
  for (const pd3_parser* p : {pd3::resp_parser(), pd3::binary_parser()}) {
    pd3_record_key out[8];
    uint32_t n = 0;
    REQUIRE(p->parse_record(bytes(buf), buf.size(), out, 8, &n) == PD3_OK);
    REQUIRE(n == 3);
    uint64_t at = 0;
    for (uint32_t i = 0; i < n; ++i) {
      CHECK_EQ(out[i].key_off, at + sizeof(pd3_kv_header));
      CHECK_EQ(out[i].key_len, records[i].key.size());
      CHECK(std::memcmp(buf.data() + out[i].key_off, records[i].key.data(), out[i].key_len) == 0);
      CHECK_EQ(out[i].value_off, out[i].key_off + out[i].key_len);
      CHECK_EQ(out[i].value_len, records[i].value.size());
      at = out[i].value_off + out[i].value_len;
    }
    CHECK_EQ(at, used);
    // max bounds the output; truncated and oversized records end the list.
    REQUIRE(p->parse_record(bytes(buf), buf.size(), out, 2, &n) == PD3_OK);
    CHECK_EQ(n, 2u);
    REQUIRE(p->parse_record(bytes(buf), used - 1, out, 8, &n) == PD3_OK);
    CHECK_EQ(n, 2u);
    std::string huge;
    put_u32(&huge, PD3_MAX_KEY_LEN + 1);
    put_u32(&huge, 0);
    huge.append(PD3_MAX_KEY_LEN + 1, 'k');
    REQUIRE(p->parse_record(bytes(huge), huge.size(), out, 8, &n) == PD3_OK);
    CHECK_EQ(n, 0u);
    REQUIRE(p->parse_record(nullptr, 0, out, 8, &n) == PD3_OK);
    CHECK_EQ(n, 0u);
  }
}
