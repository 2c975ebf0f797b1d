// resp_parser_test.cpp — the built-in RESP parser: every command class and its op, SET's options,
// pipelines, requests split at every byte, inline commands, letter case, binary-safe and huge keys,
// wrong arity, unknown commands, the full-output rule, malformed framing and resync.
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "../fuzz/parser_target.hpp"
#include "harness.hpp"
#include "parsers/resp_parser.hpp"
#include "util.hpp"

namespace {

using pd3fuzz::ParsedAccess;
using pd3fuzz::StreamResult;
constexpr uint32_t R = PD3_ACCESS_READ, W = PD3_ACCESS_WRITE, D = PD3_ACCESS_DELETE;

// prefix followed by n in decimal.
std::string numbered(const char* prefix, uint64_t n) {
  std::string s = prefix;
  s += std::to_string(n);
  return s;
}

// One request as a client library sends it: an array of bulk strings.
std::string cmd(std::initializer_list<std::string_view> args) {
  std::string s = numbered("*", args.size()) + "\r\n";
  for (std::string_view a : args) {
    s += numbered("$", a.size()) + "\r\n";
    s.append(a);
    s += "\r\n";
  }
  return s;
}

const uint8_t* bytes(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

StreamResult parse(const std::string& s, uint32_t max = PD3_PARSER_MIN_ACCESSES) {
  return pd3fuzz::parse_stream(pd3::resp_parser(), bytes(s), s.size(), max);
}

// True if `s` parses whole, without error, to exactly `want`; prints what it got otherwise.
bool parses_to(const std::string& s, const std::vector<ParsedAccess>& want) {
  const StreamResult r = parse(s);
  const bool ok = r.status == PD3_OK && r.consumed == s.size() && r.accesses == want;
  if (!ok) {
    std::fprintf(stderr, "  [%.40s...] status %d consumed %zu/%zu, %zu accesses:", s.c_str(), r.status, r.consumed,
                 s.size(), r.accesses.size());
    for (const auto& a : r.accesses) std::fprintf(stderr, " %u:%s", a.op, a.key.c_str());
    std::fputc('\n', stderr);
  }
  return ok;
}

// The status and consumed bytes of one parse_request call.
struct OneCall {
  int status;
  size_t consumed;
  uint32_t n;
};
OneCall call(const std::string& s, uint32_t max = PD3_PARSER_MIN_ACCESSES) {
  std::vector<pd3_access> out(max);
  OneCall c{};
  c.status = pd3::resp_parser()->parse_request(nullptr, bytes(s), s.size(), out.data(), max, &c.n, &c.consumed);
  return c;
}

int64_t resync(const std::string& s) { return pd3::resp_parser()->resync(nullptr, bytes(s), s.size()); }

// A stream with every kind of request, for the split tests.
std::string mixed_stream() {
  std::string s;
  s += cmd({"SET", "user:1", "alice"});
  s += cmd({"GET", "user:1"});
  s += "get inline:key\r\n";
  s += cmd({"MGET", "a", "bb", "ccc", std::string_view("\0\r\n", 3)});
  s += cmd({"MSET", "k1", "v1", "k2", std::string(300, 'v')});
  s += "\r\n";
  s += cmd({"PING"});
  s += cmd({"DEL", "x", "y"});
  s += "SET \"quoted key\" 'v'\n";
  s += cmd({"HSET", "h", "f", "v"});
  s += cmd({"SET", "opt", "v", "EX", "10", "GET"});
  s += "*0\r\n";
  s += cmd({"INCR", "counter"});
  return s;
}

std::vector<ParsedAccess> mixed_accesses() {
  return {{"user:1", W}, {"user:1", R}, {"inline:key", R},           {"a", R},       {"bb", R},
          {"ccc", R},    {std::string("\0\r\n", 3), R},              {"k1", W},      {"k2", W},
          {"x", D},      {"y", D},     {"quoted key", W}, {"h", R}, {"opt", R},     {"counter", R}};
}

}  // namespace

TEST(resp_table_has_the_abi_and_no_flow_state) {
  const pd3_parser* p = pd3::resp_parser();
  CHECK_EQ(p->abi_version, PD3_PARSER_ABI_VERSION);
  CHECK(std::strcmp(p->name, "resp") == 0);
  CHECK(p->flow_open == nullptr && p->flow_close == nullptr);
  CHECK(p->parse_request && p->resync && p->parse_record);
}

TEST(resp_string_reads_writes_and_read_modify_writes) {
  CHECK(parses_to(cmd({"GET", "k"}), {{"k", R}}));
  CHECK(parses_to(cmd({"GETEX", "k", "EX", "5"}), {{"k", R}}));
  CHECK(parses_to(cmd({"GETEX", "k"}), {{"k", R}}));
  CHECK(parses_to(cmd({"GETSET", "k", "v"}), {{"k", R}}));
  CHECK(parses_to(cmd({"GETDEL", "k"}), {{"k", D}}));
  CHECK(parses_to(cmd({"SETNX", "k", "v"}), {{"k", W}}));
  CHECK(parses_to(cmd({"SETEX", "k", "10", "v"}), {{"k", W}}));
  CHECK(parses_to(cmd({"PSETEX", "k", "10", "v"}), {{"k", W}}));
  for (const char* rmw : {"INCR", "DECR", "STRLEN"}) CHECK(parses_to(cmd({rmw, "n"}), {{"n", R}}));
  for (const char* rmw : {"INCRBY", "DECRBY", "INCRBYFLOAT", "APPEND"}) CHECK(parses_to(cmd({rmw, "n", "1"}), {{"n", R}}));
  CHECK(parses_to(cmd({"SETRANGE", "s", "0", "x"}), {{"s", R}}));
  CHECK(parses_to(cmd({"GETRANGE", "s", "0", "-1"}), {{"s", R}}));
}

TEST(resp_set_options_decide_the_op_or_refuse_the_call) {
  CHECK(parses_to(cmd({"SET", "k", "v"}), {{"k", W}}));
  CHECK(parses_to(cmd({"SET", "k", "v", "GET"}), {{"k", R}}));  // returns the old value
  CHECK(parses_to(cmd({"set", "k", "v", "ex", "10", "get"}), {{"k", R}}));
  CHECK(parses_to(cmd({"SET", "k", "v", "NX", "PX", "100"}), {{"k", W}}));
  CHECK(parses_to(cmd({"SET", "k", "v", "XX", "KEEPTTL"}), {{"k", W}}));
  CHECK(parses_to(cmd({"SET", "k", "v", "EXAT", "1", "GET", "NX"}), {{"k", R}}));
  CHECK(parses_to(cmd({"SET", "k", "v", "PXAT", "1"}), {{"k", W}}));
  CHECK(parses_to(cmd({"SET", "k", "v", "EX", "1", "EX", "2"}), {{"k", W}}));  // Redis allows a repeat
  // Refused by the server: no access.
  CHECK(parses_to(cmd({"SET", "k", "v", "NX", "XX"}), {}));
  CHECK(parses_to(cmd({"SET", "k", "v", "EX", "1", "PX", "2"}), {}));
  CHECK(parses_to(cmd({"SET", "k", "v", "KEEPTTL", "EX", "1"}), {}));
  CHECK(parses_to(cmd({"SET", "k", "v", "EX"}), {}));
  CHECK(parses_to(cmd({"SET", "k", "v", "BOGUS"}), {}));
  CHECK(parses_to(cmd({"SET", "k"}), {}));
  CHECK(parses_to("SET k v \"G\\x45T\"\n", {}));  // an escaped option cannot be read without copying
}

TEST(resp_multi_key_commands_give_every_key_in_order) {
  CHECK(parses_to(cmd({"DEL", "a", "b", "c"}), {{"a", D}, {"b", D}, {"c", D}}));
  CHECK(parses_to(cmd({"UNLINK", "a", "b"}), {{"a", D}, {"b", D}}));
  CHECK(parses_to(cmd({"EXISTS", "a", "a"}), {{"a", R}, {"a", R}}));
  CHECK(parses_to(cmd({"MGET", "a", "b"}), {{"a", R}, {"b", R}}));
  CHECK(parses_to(cmd({"MSET", "a", "1", "b", "2"}), {{"a", W}, {"b", W}}));
  CHECK(parses_to(cmd({"MSETNX", "a", "1", "b", "2"}), {{"a", W}, {"b", W}}));
  CHECK(parses_to(cmd({"MSET", "a", "1", "b"}), {}));  // odd pair count: refused
  std::string keys = "*51\r\n$4\r\nMGET\r\n";
  std::vector<ParsedAccess> want;
  for (int i = 0; i < 50; ++i) {
    const std::string k = numbered("key:", uint64_t(i));
    keys += numbered("$", k.size()) + "\r\n" + k + "\r\n";
    want.push_back({k, R});
  }
  CHECK(parses_to(keys, want));
}

TEST(resp_expiry_commands_read_the_key) {
  for (const char* c : {"EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"}) {
    CHECK(parses_to(cmd({c, "k", "100"}), {{"k", R}}));
    CHECK(parses_to(cmd({c, "k", "100", "NX"}), {{"k", R}}));
    CHECK(parses_to(cmd({c, "k"}), {}));
  }
  for (const char* c : {"PERSIST", "TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"}) CHECK(parses_to(cmd({c, "k"}), {{"k", R}}));
}

TEST(resp_hash_commands_read_the_hash_key) {
  for (const char* c : {"HGETALL", "HLEN", "HKEYS", "HVALS"}) CHECK(parses_to(cmd({c, "h"}), {{"h", R}}));
  for (const char* c : {"HGET", "HEXISTS", "HSTRLEN"}) CHECK(parses_to(cmd({c, "h", "f"}), {{"h", R}}));
  CHECK(parses_to(cmd({"HMGET", "h", "f1", "f2"}), {{"h", R}}));
  CHECK(parses_to(cmd({"HDEL", "h", "f1", "f2"}), {{"h", R}}));
  CHECK(parses_to(cmd({"HSET", "h", "f1", "v1", "f2", "v2"}), {{"h", R}}));
  CHECK(parses_to(cmd({"HMSET", "h", "f1", "v1"}), {{"h", R}}));
  CHECK(parses_to(cmd({"HSETNX", "h", "f", "v"}), {{"h", R}}));
  CHECK(parses_to(cmd({"HINCRBY", "h", "f", "1"}), {{"h", R}}));
  CHECK(parses_to(cmd({"HINCRBYFLOAT", "h", "f", "1.5"}), {{"h", R}}));
  CHECK(parses_to(cmd({"HSET", "h", "f"}), {}));
  CHECK(parses_to(cmd({"HSET", "h", "f1", "v1", "f2"}), {}));  // a field without a value
}

TEST(resp_commands_without_keys_and_unknown_commands_are_consumed_without_accesses) {
  std::string s;
  for (const char* c : {"MULTI", "EXEC", "DISCARD", "PING", "INFO", "COMMAND"}) s += cmd({c});
  s += cmd({"SELECT", "1"}) + cmd({"AUTH", "secret"}) + cmd({"HELLO", "3"}) + cmd({"CLIENT", "SETNAME", "x"});
  s += cmd({"LPUSH", "list", "a"}) + cmd({"SADD", "set", "m"}) + cmd({"NOSUCHCOMMAND", "k"});
  s += cmd({"G3T", "k"}) + cmd({std::string(40, 'G'), "k"}) + cmd({"", "k"});
  CHECK(parses_to(s, {}));
}

TEST(resp_wrong_arity_never_guesses_a_key) {
  CHECK(parses_to(cmd({"GET"}), {}));
  CHECK(parses_to(cmd({"GET", "a", "b"}), {}));
  CHECK(parses_to(cmd({"DEL"}), {}));
  CHECK(parses_to(cmd({"MGET"}), {}));
  CHECK(parses_to(cmd({"INCRBY", "n"}), {}));
  CHECK(parses_to(cmd({"GETRANGE", "s", "0"}), {}));
  CHECK(parses_to("GET\n", {}));
  CHECK(parses_to("GET a b\n", {}));
}

TEST(resp_command_names_and_options_are_case_insensitive) {
  CHECK(parses_to(cmd({"get", "k"}) + cmd({"GeT", "k"}) + cmd({"mget", "a", "b"}) + cmd({"dEl", "z"}),
                  {{"k", R}, {"k", R}, {"a", R}, {"b", R}, {"z", D}}));
  CHECK(parses_to(cmd({"set", "k", "v", "Get"}), {{"k", R}}));
  CHECK(parses_to(cmd({"hincrbyfloat", "h", "f", "1"}), {{"h", R}}));
  CHECK(parses_to(cmd({"GET", "Key"}), {{"Key", R}}));  // keys keep their case
}

TEST(resp_inline_commands) {
  CHECK(parses_to("GET foo\r\n", {{"foo", R}}));
  CHECK(parses_to("get foo\n", {{"foo", R}}));
  CHECK(parses_to("  SET \t a   b  \r\n", {{"a", W}}));
  CHECK(parses_to("MGET a b c\nDEL d\r\n", {{"a", R}, {"b", R}, {"c", R}, {"d", D}}));
  CHECK(parses_to("GET \"a b\"\r\n", {{"a b", R}}));
  CHECK(parses_to("GET 'a b'\n", {{"a b", R}}));
  CHECK(parses_to("GET \"\"\n", {{"", R}}));
  CHECK(parses_to("\"GET\" k\n", {{"k", R}}));
  CHECK(parses_to("\r\n\n   \r\n", {}));  // empty lines are skipped, as Redis does
  // Escapes or quotes inside a word make the bytes differ from the key: no access, never a guess.
  CHECK(parses_to("GET \"a\\x41\"\n", {}));
  CHECK(parses_to("GET 'it\\'s'\n", {}));
  CHECK(parses_to("GET a\"b\"\n", {}));
  CHECK(parses_to("MGET x \"y\\n\" z\n", {{"x", R}, {"z", R}}));
  // A NUL byte ends the argument list (Redis splits a C string).
  CHECK(parses_to(std::string("GET a\0 b\n", 9), {{"a", R}}));
  CHECK(parses_to(std::string("GET\0 a\n", 7), {}));
  // Unbalanced quotes: Redis drops the client.
  CHECK_EQ(call("GET \"abc\n").status, PD3_E_PROTOCOL);
  CHECK_EQ(call("GET \"abc\"x\n").status, PD3_E_PROTOCOL);
  CHECK_EQ(call("GET 'abc\n").status, PD3_E_PROTOCOL);
  // No line end yet: incomplete up to 64 KiB, then refused.
  const OneCall waiting = call("GET " + std::string(60000, 'k'));
  CHECK(waiting.status == PD3_OK && waiting.consumed == 0 && waiting.n == 0);
  CHECK_EQ(call("GET " + std::string(70000, 'k')).status, PD3_E_PROTOCOL);
  CHECK_EQ(call("GET " + std::string(70000, 'k') + "\n").status, PD3_E_PROTOCOL);
}

TEST(resp_binary_safe_keys) {
  const std::string odd("a\0b\r\nc*2\r\n$3\r\n", 14);
  CHECK(parses_to(cmd({"SET", odd, std::string("\r\n\r\n", 4)}) + cmd({"GET", odd}), {{odd, W}, {odd, R}}));
  std::string all_bytes;
  for (int b = 0; b < 256; ++b) all_bytes.push_back(char(b));
  CHECK(parses_to(cmd({"DEL", all_bytes, ""}), {{all_bytes, D}, {"", D}}));
}

TEST(resp_huge_key_whole_and_in_packets) {
  const std::string key(1u << 20, 'K');
  const std::string s = cmd({"SET", key, "v"}) + cmd({"GET", key});
  CHECK(parses_to(s, {{key, W}, {key, R}}));
  const StreamResult pieces =
      pd3fuzz::parse_in_pieces(pd3::resp_parser(), nullptr, bytes(s), s.size(), [](size_t) { return 1448; });
  CHECK(pieces == parse(s));
  CHECK_EQ(pieces.accesses.size(), 2u);
}

TEST(resp_pipeline_of_many_requests_in_one_buffer) {
  std::string s;
  std::vector<ParsedAccess> want;
  pd3test::Rng rng(7);
  for (int i = 0; i < 5000; ++i) {
    const std::string k = numbered("k", rng.below(1000));
    switch (rng.below(5)) {
      case 0: s += cmd({"GET", k}), want.push_back({k, R}); break;
      case 1: s += cmd({"SET", k, "value"}), want.push_back({k, W}); break;
      case 2: s += cmd({"DEL", k, k + "x"}), want.push_back({k, D}), want.push_back({k + "x", D}); break;
      case 3: s += "INCR " + k + "\r\n", want.push_back({k, R}); break;
      default: s += cmd({"PING"}); break;
    }
  }
  CHECK(parses_to(s, want));
  // One call stops when the output is full, at a request boundary; the driver goes on from there.
  const OneCall first = call(s);
  CHECK(first.status == PD3_OK && first.n == PD3_PARSER_MIN_ACCESSES && first.consumed > 0 && first.consumed < s.size());
}

TEST(resp_partial_requests_split_at_every_byte_match_the_whole_parse) {
  const std::string s = mixed_stream();
  CHECK(parses_to(s, mixed_accesses()));
  const StreamResult whole = parse(s);
  pd3test::Errors errors{"split"};
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    // The first part alone: complete requests only, never a key of the cut request.
    const StreamResult head = parse(s.substr(0, cut));
    if (head.status != PD3_OK || head.consumed > cut) errors.fail("prefix %zu: status %d", cut, head.status);
    if (head.accesses.size() > whole.accesses.size() ||
        !std::equal(head.accesses.begin(), head.accesses.end(), whole.accesses.begin()))
      errors.fail("prefix %zu: accesses differ from the whole parse", cut);
    // Then the rest arrives.
    const StreamResult two = pd3fuzz::parse_in_pieces(pd3::resp_parser(), nullptr, bytes(s), s.size(),
                                                      [cut](size_t i) { return i == 0 ? cut : ~size_t(0) >> 1; });
    if (!(two == whole)) errors.fail("split at %zu differs from the whole parse", cut);
  }
  const StreamResult bytewise =
      pd3fuzz::parse_in_pieces(pd3::resp_parser(), nullptr, bytes(s), s.size(), [](size_t) { return 1; });
  if (!(bytewise == whole)) errors.fail("byte-by-byte delivery differs from the whole parse");
  CHECK_EQ(errors.n, 0u);
}

TEST(resp_incomplete_request_emits_nothing) {
  const std::string get = cmd({"GET", "key"});
  for (size_t cut = 0; cut < get.size(); ++cut) {
    const OneCall c = call(get.substr(0, cut));
    CHECK(c.status == PD3_OK && c.consumed == 0 && c.n == 0);
  }
  const OneCall c = call(cmd({"GET", "a"}) + get.substr(0, 10));
  CHECK(c.status == PD3_OK && c.consumed == cmd({"GET", "a"}).size() && c.n == 1);
}

TEST(resp_full_output_defers_a_request_or_cuts_the_first) {
  std::string mget = "*101\r\n$4\r\nMGET\r\n";
  for (int i = 0; i < 100; ++i) mget += "$1\r\n" + std::string(1, char('A' + i % 26)) + "\r\n";
  // First request of the call: cut to what fits, but consumed.
  const OneCall cut = call(mget);
  CHECK(cut.status == PD3_OK && cut.n == PD3_PARSER_MIN_ACCESSES && cut.consumed == mget.size());
  // After a request with keys: left for the next call, which has room.
  const std::string get = cmd({"GET", "a"});
  const OneCall deferred = call(get + mget);
  CHECK(deferred.status == PD3_OK && deferred.n == 1 && deferred.consumed == get.size());
  // After requests without keys: cut at once (the next call would have no more room).
  const std::string ping = cmd({"PING"});
  const OneCall after_ping = call(ping + mget);
  CHECK(after_ping.n == PD3_PARSER_MIN_ACCESSES && after_ping.consumed == ping.size() + mget.size());
  // A tiny output array still makes progress.
  const OneCall one = call(get + get, 1);
  CHECK(one.status == PD3_OK && one.n == 1 && one.consumed == get.size());
  const OneCall none = call(get, 0);
  CHECK(none.status == PD3_OK && none.n == 0 && none.consumed == get.size());
}

TEST(resp_malformed_framing_at_the_start_is_a_protocol_error) {
  const char* bad[] = {
      "*x\r\n",                       // count not a number
      "*\r\n",                        // no count
      "*-1\r\n",                      // negative count
      "*01\r\n$3\r\nGET\r\n",         // leading zero (Redis refuses it)
      "*2000000\r\n",                 // absurd count (> 1M)
      "*1\r\n#3\r\nGET\r\n",          // element not a bulk string
      "*1\r\n$x\r\n",                 // bulk length not a number
      "*1\r\n$-1\r\n",                // null bulk string in a request
      "*1\r\n$600000000\r\n",         // bulk longer than 512 MiB
      "*1\r\n$3\r\nGETX\r\n",         // bulk string missing its \r\n
      "*1\r\n$3\r\nGET\rX",           // \r without \n after the data
      "*1\n$3\r\nGET\r\n",            // header ends without \r
      "*1\r\r",                       // \r not followed by \n
  };
  for (const char* s : bad) {
    const OneCall c = call(s);
    if (c.status != PD3_E_PROTOCOL) std::fprintf(stderr, "  not refused: %s\n", s);
    CHECK(c.status == PD3_E_PROTOCOL && c.n == 0 && c.consumed == 0);
  }
  // Behind good requests the error waits for the next call, which starts at it.
  const std::string good = cmd({"GET", "a"}) + cmd({"DEL", "b"});
  const StreamResult r = parse(good + "*1\r\n$x\r\n" + cmd({"GET", "c"}));
  CHECK(r.status == PD3_E_PROTOCOL && r.consumed == good.size());
  CHECK((r.accesses == std::vector<ParsedAccess>{{"a", R}, {"b", D}}));
}

TEST(resp_resync_finds_the_next_plausible_array_start) {
  const std::string req = cmd({"GET", "key"});
  CHECK_EQ(resync(req), 0);
  CHECK_EQ(resync("garbage\r\n" + req), 9);
  CHECK_EQ(resync("\n" + req), 1);
  CHECK_EQ(resync("value with * and *3 inside\r\n" + req), 28);  // '*' not at a line start
  CHECK_EQ(resync("xx\r\n*abc\r\n" + req), 10);                     // "*abc" is not an array header
  CHECK_EQ(resync("xx\r\n*0\r\n" + req), 8);                        // empty arrays are too weak a sign
  CHECK_EQ(resync("xx\r\n*2\r\n$3\r\nGET\rX" + req), -1);           // frames wrong, and req is not at a line start
  CHECK_EQ(resync("xx\r\n*2\r\n$3\r\nGET\rX\r\n" + req), 19);
  CHECK_EQ(resync("xx\r\n*2\r\n$0\r\n\r\n"), -1);                   // an empty command name
  CHECK_EQ(resync("no request here"), -1);
  CHECK_EQ(resync(""), -1);
  // A start whose end has not arrived is plausible: the caller keeps the bytes and waits.
  CHECK_EQ(resync("tail of a value\r\n*3\r\n$3\r\nSE"), 17);
  CHECK_EQ(resync("tail\r\n*"), 6);
  // After the gap, parsing from the offset gives the real requests.
  const std::string after_gap = "lue-bytes\r\n" + cmd({"SET", "a", "1"}) + cmd({"GET", "b"});
  const int64_t at = resync(after_gap);
  REQUIRE(at == 11);
  const StreamResult r = pd3fuzz::parse_stream(pd3::resp_parser(), bytes(after_gap) + at, after_gap.size() - size_t(at));
  CHECK((r.accesses == std::vector<ParsedAccess>{{"a", W}, {"b", R}}));
}
