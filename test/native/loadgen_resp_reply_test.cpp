// loadgen_resp_reply_test.cpp — pd3-loadgen's RESP reply parser (bench/loadgen): every reply type,
// nil and empty values, nested arrays, a pipeline split at every byte boundary, framing errors, and
// seeded fuzzing (random bytes, mutated and truncated valid streams) through the property target
// test/fuzz/loadgen_reply_target.hpp. Bounded by PD3_FUZZ_ITERS.
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "../fuzz/loadgen_reply_target.hpp"
#include "harness.hpp"
#include "resp_reply_parser.hpp"

namespace {

using pd3::loadgen::RespReplyParser;
using pd3fuzz::ReplyLog;

uint64_t iterations(uint64_t dflt) {
  const char* env = std::getenv("PD3_FUZZ_ITERS");
  return env ? std::strtoull(env, nullptr, 10) : dflt;
}

const uint8_t* bytes(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

ReplyLog parse_whole(const std::string& s) { return pd3fuzz::feed_in_chunks(bytes(s), s.size(), {}); }

// "depth:type:integer:text" as ReplyLog writes it (type numbers of RespType).
std::string ev(uint32_t depth, pd3::loadgen::RespType t, int64_t integer, const std::string& text = "") {
  return std::to_string(depth) + ":" + std::to_string(int(t)) + ":" + std::to_string(integer) + ":" + text;
}

using T = pd3::loadgen::RespType;

// A pipeline with every kind of reply, including a value containing CR, LF and NUL bytes.
const std::string kPipeline = std::string("+OK\r\n") + "-ERR unknown command 'FOO'\r\n" + ":-42\r\n" + ":0\r\n" +
                              "$5\r\nhello\r\n" + "$0\r\n\r\n" + "$-1\r\n" + "*-1\r\n" + "*0\r\n" +
                              "*3\r\n$1\r\na\r\n$-1\r\n*2\r\n:1\r\n+x\r\n" + std::string("$4\r\n\r\n\0\n\r\n", 10) +
                              "+\r\n";

std::vector<std::string> pipeline_events() {
  return {ev(0, T::kSimple, 0, "OK"),
          "end",
          ev(0, T::kError, 0, "ERR unknown command 'FOO'"),
          "end",
          ev(0, T::kInteger, -42),
          "end",
          ev(0, T::kInteger, 0),
          "end",
          ev(0, T::kBulk, 0, "hello"),
          "end",
          ev(0, T::kBulk, 0, ""),
          "end",
          ev(0, T::kNil, 0),
          "end",
          ev(0, T::kNilArray, 0),
          "end",
          ev(0, T::kArray, 0),
          "end",
          ev(0, T::kArray, 3),
          ev(1, T::kBulk, 0, "a"),
          ev(1, T::kNil, 0),
          ev(1, T::kArray, 2),
          ev(2, T::kInteger, 1),
          ev(2, T::kSimple, 0, "x"),
          "end",
          ev(0, T::kBulk, 0, std::string("\r\n\0\n", 4)),
          "end",
          ev(0, T::kSimple, 0, ""),
          "end"};
}

}  // namespace

TEST(loadgen_resp_reply_every_type) {
  const ReplyLog log = parse_whole(kPipeline);
  CHECK(log.ok);
  CHECK(log.events == pipeline_events());
}

TEST(loadgen_resp_reply_split_at_every_byte_boundary) {
  const std::vector<std::string> want = pipeline_events();
  // Two chunks, cut at every position.
  for (size_t cut = 0; cut <= kPipeline.size(); ++cut) {
    const ReplyLog log = pd3fuzz::feed_in_chunks(bytes(kPipeline), kPipeline.size(), {cut});
    CHECK(log.ok);
    CHECK(log.events == want);
  }
  // One byte at a time.
  const ReplyLog bytewise =
      pd3fuzz::feed_in_chunks(bytes(kPipeline), kPipeline.size(), std::vector<size_t>(kPipeline.size(), 1));
  CHECK(bytewise.ok);
  CHECK(bytewise.events == want);
}

TEST(loadgen_resp_reply_large_bulk_in_pieces) {
  std::string value(200000, 'v');
  for (size_t i = 0; i < value.size(); ++i) value[i] = char('a' + i % 26);
  std::string s(1, '$');
  s.append(std::to_string(value.size())).append("\r\n").append(value).append("\r\n");
  for (size_t piece : {size_t(1000), size_t(65536), size_t(199999)}) {
    std::vector<size_t> sizes(s.size() / piece + 1, piece);
    const ReplyLog log = pd3fuzz::feed_in_chunks(bytes(s), s.size(), sizes);
    CHECK(log.ok);
    REQUIRE(log.events.size() == 2);
    CHECK(log.events[0] == ev(0, T::kBulk, 0, value));
  }
}

TEST(loadgen_resp_reply_framing_errors) {
  const char* bad[] = {
      "?OK\r\n",                  // unknown type byte
      "+OK\n",                    // LF without CR
      "$abc\r\n",                 // bad bulk length
      "$-2\r\n",                  // negative length other than -1
      "$3\r\nabcd\r\n",           // payload longer than said
      "$3\r\nab\r\n\r\n",         // CRLF inside the counted bytes, then no CRLF
      ":12x\r\n",                 // bad integer
      ":\r\n",                    // empty integer
      ":99999999999999999999\r\n",  // integer overflow
      "*-5\r\n",                  // bad array length
      "$600000000\r\n",           // bulk beyond 512 MiB
      "+OK\r\n\r\n",              // a bare CRLF where a reply starts
  };
  for (const char* b : bad) {
    const std::string s = b;
    RespReplyParser p;
    ReplyLog log;
    const bool ok = p.feed(bytes(s), s.size(), log);
    CHECK(!ok);
    CHECK(p.failed());
    CHECK(!p.error().empty());
    // Stays failed.
    CHECK(!p.feed(bytes("+OK\r\n"), 5, log));
  }
  // Arrays nested past the limit.
  std::string deep;
  for (uint32_t i = 0; i <= RespReplyParser::kMaxDepth; ++i) deep += "*1\r\n";
  CHECK(!parse_whole(deep).ok);
  // A line over 64 KiB, with and without its end in the same chunk.
  const std::string long_line = "+" + std::string(RespReplyParser::kMaxLine + 1, 'x') + "\r\n";
  CHECK(!parse_whole(long_line).ok);
  CHECK(!pd3fuzz::feed_in_chunks(bytes(long_line), long_line.size(), std::vector<size_t>(long_line.size(), 7)).ok);
}

TEST(loadgen_resp_reply_partial_reply_is_held) {
  RespReplyParser p;
  ReplyLog log;
  CHECK(p.idle());
  CHECK(p.feed(bytes("*2\r\n$3\r\nab"), 10, log));
  CHECK(!p.idle());
  CHECK(log.events.size() == 1);  // the array header only
  CHECK(p.feed(bytes("c\r\n:7\r\n"), 7, log));
  CHECK(p.idle());
  CHECK(log.events.back() == "end");
}

TEST(loadgen_resp_reply_fuzz_random_bytes) {
  std::mt19937_64 rng(20261124);
  const uint64_t n = iterations(100000);
  const char alphabet[] = "+-:$*\r\n0123456789-abc";
  for (uint64_t i = 0; i < n; ++i) {
    std::string s(size_t(rng() % 96), '\0');
    const bool resp_like = i % 2 == 0;  // half drawn from RESP's own characters, half any byte
    for (char& c : s) c = resp_like ? alphabet[rng() % (sizeof alphabet - 1)] : char(rng());
    pd3fuzz::run_reply_input(bytes(s), s.size());
  }
  CHECK(true);  // the property target aborts on a violation
}

TEST(loadgen_resp_reply_fuzz_mutated_pipelines) {
  std::mt19937_64 rng(7);
  const uint64_t n = iterations(100000);
  for (uint64_t i = 0; i < n; ++i) {
    std::string s = kPipeline;
    const int edits = 1 + int(rng() % 4);
    for (int e = 0; e < edits && !s.empty(); ++e) {
      const size_t at = size_t(rng() % s.size());
      switch (rng() % 4) {
        case 0: s[at] = char(rng()); break;
        case 1: s.erase(at, 1 + rng() % 3); break;
        case 2: s.insert(at, 1, "\r\n$*:+-0"[rng() % 8]); break;
        default: s.resize(at); break;  // truncated
      }
    }
    pd3fuzz::run_reply_input(bytes(s), s.size());
  }
  CHECK(true);
}
