// resp_parser.cpp — RESP request framing (arrays of bulk strings, inline lines), pipelines and
// partial requests, resync, and the "resp" parser table. Keys point into the input: no copies and
// no allocation per request.
#include "parsers/resp_parser.hpp"

#include <cstring>

#include "parsers/access_sink.hpp"
#include "parsers/record_keys.hpp"
#include "parsers/resp_keys.hpp"
#include "parsers/resp_tokenizer.hpp"
#include "pd3/status.h"

namespace pd3 {

namespace {

// How far reading one piece of a request got.
enum class Scan { kComplete, kIncomplete, kMalformed };

// Reads "<decimal>\r\n" at p (no sign, no leading zero, at most `cap`) and moves p past it.
// A prefix of a valid line is kIncomplete; anything else wrong is kMalformed at once, so a longer
// buffer never turns a kMalformed verdict into another one.
Scan read_number(const uint8_t*& p, const uint8_t* end, uint64_t cap, uint64_t* value) {
  if (p == end) return Scan::kIncomplete;
  if (*p < '0' || *p > '9') return Scan::kMalformed;
  uint64_t v = 0;
  if (*p == '0') {
    if (++p < end && *p >= '0' && *p <= '9') return Scan::kMalformed;  // as Redis: no leading zero
  } else {
    for (; p < end && *p >= '0' && *p <= '9'; ++p) {
      v = v * 10 + uint64_t(*p - '0');
      if (v > cap) return Scan::kMalformed;
    }
  }
  if (p == end) return Scan::kIncomplete;
  if (*p != '\r') return Scan::kMalformed;
  if (++p == end) return Scan::kIncomplete;
  if (*p != '\n') return Scan::kMalformed;
  ++p;
  *value = v;
  return Scan::kComplete;
}

// Reads "$<len>\r\n<len bytes>\r\n" at p and moves p past it.
Scan read_bulk(const uint8_t*& p, const uint8_t* end, RespArg* out) {
  if (p == end) return Scan::kIncomplete;
  if (*p != '$') return Scan::kMalformed;
  ++p;
  uint64_t len = 0;
  if (const Scan s = read_number(p, end, kRespMaxBulk, &len); s != Scan::kComplete) return s;
  const uint64_t avail = uint64_t(end - p);
  if (avail > len && p[len] != '\r') return Scan::kMalformed;
  if (avail > len + 1 && p[len + 1] != '\n') return Scan::kMalformed;
  if (avail < len + 2) return Scan::kIncomplete;
  *out = RespArg{p, size_t(len), true};
  p += len + 2;
  return Scan::kComplete;
}

// One array request at p ('*'): its arguments go to the picker as they are read.
Scan read_array(const uint8_t*& p, const uint8_t* end, RespKeyPicker& picker, AccessSink& sink) {
  ++p;
  uint64_t argc = 0;
  if (const Scan s = read_number(p, end, kRespMaxArgs, &argc); s != Scan::kComplete) return s;
  for (uint64_t i = 0; i < argc; ++i) {
    RespArg a;
    if (const Scan s = read_bulk(p, end, &a); s != Scan::kComplete) return s;
    if (i == 0) {
      picker.start(a, argc);
    } else {
      picker.arg(i, a, sink);
    }
  }
  if (argc > 0) picker.finish(sink);  // "*0\r\n" is an empty request: Redis skips it
  return Scan::kComplete;
}

// One inline request at p: a line of space-separated arguments ending in "\n" or "\r\n".
Scan read_inline(const uint8_t*& p, const uint8_t* end, RespKeyPicker& picker, AccessSink& sink) {
  const size_t avail = size_t(end - p);
  const size_t window = avail < kRespMaxInline + 1 ? avail : size_t(kRespMaxInline + 1);
  const auto* newline = static_cast<const uint8_t*>(std::memchr(p, '\n', window));
  if (!newline) return avail > kRespMaxInline ? Scan::kMalformed : Scan::kIncomplete;
  const uint8_t* line_end = (newline > p && newline[-1] == '\r') ? newline - 1 : newline;
  uint64_t argc = 0;
  RespArg a;
  RespTokenizer count(p, line_end);
  for (RespTokenizer::Step s; (s = count.next(&a)) != RespTokenizer::Step::kEnd; ++argc)
    if (s == RespTokenizer::Step::kUnbalanced) return Scan::kMalformed;  // Redis drops the client
  if (argc > 0) {
    RespTokenizer args(p, line_end);
    for (uint64_t i = 0; i < argc; ++i) {
      args.next(&a);
      if (i == 0) {
        picker.start(a, argc);
      } else {
        picker.arg(i, a, sink);
      }
    }
    picker.finish(sink);
  }
  p = newline + 1;
  return Scan::kComplete;
}

int parse_request(void*, const uint8_t* buf, size_t len, pd3_access* out, uint32_t max, uint32_t* n,
                  size_t* consumed) {
  AccessSink sink(out, max);
  RespKeyPicker picker;
  const uint8_t* const end = buf + len;
  const uint8_t* done = buf;  // end of the last complete request
  int rc = PD3_OK;
  while (done < end && !sink.full()) {
    sink.begin_request();
    const uint8_t* p = done;
    const Scan s = *p == '*' ? read_array(p, end, picker, sink) : read_inline(p, end, picker, sink);
    if (s != Scan::kComplete || sink.deferred()) {
      sink.drop_request();
      if (s == Scan::kMalformed && done == buf) rc = PD3_E_PROTOCOL;  // later requests: next call
      break;
    }
    done = p;
  }
  *n = sink.count();
  *consumed = size_t(done - buf);
  return rc;
}

// How many elements of a candidate array resync checks before calling it plausible.
constexpr uint64_t kResyncElements = 8;
// Longest command name resync accepts as the first element.
constexpr uint64_t kResyncMaxName = 32;

// Whether an array request plausibly starts at p: its header and first elements frame correctly
// as far as the buffer goes.
bool plausible_array(const uint8_t* p, const uint8_t* end) {
  if (*p != '*') return false;
  ++p;
  uint64_t argc = 0;
  const Scan header = read_number(p, end, kRespMaxArgs, &argc);
  if (header != Scan::kComplete) return header == Scan::kIncomplete;
  if (argc == 0) return false;  // valid, but no client sends it: too weak a sign
  for (uint64_t i = 0; i < argc && i < kResyncElements; ++i) {
    RespArg a;
    const Scan s = read_bulk(p, end, &a);
    if (s != Scan::kComplete) return s == Scan::kIncomplete;
    if (i == 0 && (a.len == 0 || a.len > kResyncMaxName)) return false;
  }
  return true;
}

// Array requests start at the buffer's start or right after a line ending.
int64_t resync(void*, const uint8_t* buf, size_t len) {
  const uint8_t* const end = buf + len;
  for (const uint8_t* p = buf; p < end; ++p) {
    p = static_cast<const uint8_t*>(std::memchr(p, '*', size_t(end - p)));
    if (!p) break;
    const size_t at = size_t(p - buf);
    const bool line_start = at == 0 || (buf[at - 1] == '\n' && (at == 1 || buf[at - 2] == '\r'));
    if (line_start && plausible_array(p, end)) return int64_t(at);
  }
  return -1;
}

constexpr pd3_parser kRespParser = {
    PD3_PARSER_ABI_VERSION, 0, "resp", nullptr, nullptr, parse_request, resync, parse_kv_records,
};

}  // namespace

const pd3_parser* resp_parser() { return &kRespParser; }

}  // namespace pd3
