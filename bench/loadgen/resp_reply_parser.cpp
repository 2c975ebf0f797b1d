// resp_reply_parser.cpp — the RESP2 reply state machine.
#include "resp_reply_parser.hpp"

#include <cstdio>
#include <cstring>

namespace pd3::loadgen {

namespace {

// A signed decimal that fits int64 (RESP lengths, counts and integers), nothing else.
bool parse_int(std::string_view s, int64_t* out) {
  bool negative = false;
  if (!s.empty() && s[0] == '-') {
    negative = true;
    s.remove_prefix(1);
  }
  if (s.empty() || s.size() > 19) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + uint64_t(c - '0');
  }
  if (v > uint64_t(INT64_MAX) + (negative ? 1 : 0)) return false;
  *out = negative ? int64_t(0 - v) : int64_t(v);
  return true;
}

// Up to 40 bytes of s, printable, for an error message.
std::string excerpt(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < 40; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7F) {
      out += char(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  if (s.size() > 40) out += "...";
  return out;
}

}  // namespace

bool RespReplyParser::fail(std::string why) {
  failed_ = true;
  error_ = std::move(why);
  return false;
}

void RespReplyParser::element_done(RespSink& sink) {
  while (!stack_.empty()) {
    if (--stack_.back() > 0) return;
    stack_.pop_back();  // the array is complete: it counts as one element of its parent
  }
  sink.on_reply_end();
}

bool RespReplyParser::on_line(std::string_view line, RespSink& sink) {
  RespValue v;
  switch (type_) {
    case '+':
    case '-':
      v.type = type_ == '+' ? RespType::kSimple : RespType::kError;
      v.text = line;
      sink.on_value(v, depth());
      element_done(sink);
      return true;
    case ':':
      if (!parse_int(line, &v.integer)) return fail("bad integer reply ':" + excerpt(line) + "'");
      v.type = RespType::kInteger;
      sink.on_value(v, depth());
      element_done(sink);
      return true;
    case '$': {
      int64_t len = 0;
      if (!parse_int(line, &len) || len < -1 || len > kMaxBulk) return fail("bad bulk length '$" + excerpt(line) + "'");
      if (len == -1) {
        v.type = RespType::kNil;
        sink.on_value(v, depth());
        element_done(sink);
        return true;
      }
      bulk_len_ = len;
      bulk_.clear();
      state_ = State::kBulk;
      return true;
    }
    default: {  // '*'
      int64_t count = 0;
      if (!parse_int(line, &count) || count < -1) return fail("bad array length '*" + excerpt(line) + "'");
      if (count == -1) {
        v.type = RespType::kNilArray;
        sink.on_value(v, depth());
        element_done(sink);
        return true;
      }
      v.type = RespType::kArray;
      v.integer = count;
      sink.on_value(v, depth());
      if (count == 0) {
        element_done(sink);
        return true;
      }
      if (depth() >= kMaxDepth) return fail("arrays nested deeper than " + std::to_string(kMaxDepth));
      stack_.push_back(count);
      return true;
    }
  }
}

bool RespReplyParser::feed(const uint8_t* p, size_t n, RespSink& sink) {
  if (failed_) return false;
  const uint8_t* const end = p + n;
  while (p < end) {
    switch (state_) {
      case State::kType: {
        const uint8_t t = *p++;
        if (t != '+' && t != '-' && t != ':' && t != '$' && t != '*') {
          char msg[80];
          std::snprintf(msg, sizeof msg, "unexpected byte 0x%02x where a reply starts", t);
          return fail(msg);
        }
        type_ = t;
        line_.clear();
        state_ = State::kLine;
        break;
      }
      case State::kLine: {
        const void* nl = std::memchr(p, '\n', size_t(end - p));
        if (nl == nullptr) {
          if (line_.size() + size_t(end - p) > kMaxLine) return fail("reply line longer than 64 KiB");
          line_.append(reinterpret_cast<const char*>(p), size_t(end - p));
          return true;
        }
        const uint8_t* at = static_cast<const uint8_t*>(nl);
        std::string_view line;
        if (line_.empty()) {
          line = std::string_view(reinterpret_cast<const char*>(p), size_t(at - p));
        } else {
          line_.append(reinterpret_cast<const char*>(p), size_t(at - p));
          line = line_;
        }
        if (line.size() > kMaxLine) return fail("reply line longer than 64 KiB");
        p = at + 1;
        if (line.empty() || line.back() != '\r') return fail("reply line not ended by CRLF");
        line.remove_suffix(1);
        state_ = State::kType;  // on_line may move on to kBulk
        if (!on_line(line, sink)) return false;
        break;
      }
      case State::kBulk: {
        const size_t want = size_t(bulk_len_) + 2;
        const char* payload;
        if (bulk_.empty() && size_t(end - p) >= want) {
          payload = reinterpret_cast<const char*>(p);  // whole in this chunk: no copy
          p += want;
        } else {
          const size_t take = std::min(want - bulk_.size(), size_t(end - p));
          bulk_.append(reinterpret_cast<const char*>(p), take);
          p += take;
          if (bulk_.size() < want) return true;
          payload = bulk_.data();
        }
        if (payload[want - 2] != '\r' || payload[want - 1] != '\n') return fail("bulk string not ended by CRLF");
        RespValue v;
        v.type = RespType::kBulk;
        v.text = std::string_view(payload, size_t(bulk_len_));
        state_ = State::kType;
        sink.on_value(v, depth());
        element_done(sink);
        break;
      }
    }
  }
  return true;
}

}  // namespace pd3::loadgen
